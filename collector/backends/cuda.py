"""The CUDA adapter: inductor-compiled (Triton kernels) and eager on an NVIDIA GPU."""

from __future__ import annotations

import subprocess
from typing import Any

import torch

from collector.backends.base import Backend, BackendUnavailable, OpRecorder, not_measured
from collector.facts import Fact, known, unknown


class CudaBackend(Backend):
    """Its name, variables, versions and caches are in cuda.toml beside this file."""

    def __init__(self) -> None:
        if not torch.cuda.is_available():
            raise BackendUnavailable("target cuda: torch.cuda.is_available() is False on this host")
        self.device = torch.device("cuda")

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def reset_peak_memory(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.device)

    def peak_memory(self) -> dict[str, Any]:
        self.synchronize()  # queued work counts: read after it has run
        return {
            "status": "measured",
            "peak_allocated_bytes": int(torch.cuda.max_memory_allocated(self.device)),
            "source": "torch.cuda.max_memory_allocated",
        }

    def fallback(self) -> dict[str, Any]:
        return not_measured("not_applicable", "CUDA has no automatic CPU fallback: an unsupported op raises")

    def transfers(self, recorder: OpRecorder | None) -> dict[str, Any]:
        if recorder is None:
            return {"status": "unmeasured", "reason": "copies inside compiled graphs are not dispatched ops"}
        return {"status": "measured", "count": recorder.copies, "bytes": recorder.copy_bytes}

    def profiler_activities(self) -> list[Any]:
        return [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]

    @staticmethod
    def probe(torch_module: Any) -> dict[str, Any]:
        return {"cuda_available": bool(torch_module.cuda.is_available())}

    @staticmethod
    def decide_family(probes: dict[str, Any]) -> tuple[str, str]:
        if probes.get("cuda_available"):
            return "cuda", "target cuda and torch.cuda.is_available() is True"
        return "unknown", "target cuda but torch.cuda.is_available() is False"

    @staticmethod
    def device_facts(torch_module: Any) -> dict[str, Fact] | None:
        return {
            "device_name": known(torch_module.cuda.get_device_name(0), "torch.cuda.get_device_name(0)"),
            "device_count": known(torch_module.cuda.device_count(), "torch.cuda.device_count()"),
        }

    def accelerator_condition(self) -> dict[str, Fact]:
        """SM and memory clocks and temperature of the GPU the cells run on: from nvidia-smi,
        else (SM clock and temperature) from NVML through torch.cuda, else why neither answered."""
        index = torch.cuda.current_device()
        # nvidia-smi is asked around every warm loop; once it has failed (missing, or past its
        # timeout) it is not asked again, so a hung tool costs one timeout, not one per loop.
        failed = getattr(self, "_smi_failed", None)
        read = failed if failed is not None else nvidia_smi(gpu_selector(index))
        if isinstance(read, str):  # nvidia-smi did not answer: try NVML through torch
            self._smi_failed = read
            return {
                "gpu_sm_clock_mhz": _nvml(lambda: torch.cuda.clock_rate(index), "torch.cuda.clock_rate()", read),
                "gpu_memory_clock_mhz": unknown(f"nvidia-smi: {read}; NVML through torch has no memory clock"),
                "gpu_temperature_c": _nvml(lambda: torch.cuda.temperature(index), "torch.cuda.temperature()", read),
            }
        return read


SMI_FIELDS = {
    "clocks.sm": "gpu_sm_clock_mhz",
    "clocks.mem": "gpu_memory_clock_mhz",
    "temperature.gpu": "gpu_temperature_c",
}


def gpu_selector(index: int) -> str:
    """What nvidia-smi -i takes for torch's device ``index``: its UUID (nvidia-smi numbers GPUs
    without CUDA_VISIBLE_DEVICES, torch within it), else the index itself."""
    try:
        uuid = str(torch.cuda.get_device_properties(index).uuid)
    except Exception:  # older torch, or a driver that does not report it
        return str(index)
    return uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"


def nvidia_smi(selector: str, run: Any = None) -> dict[str, Fact] | str:
    """The GPU's clocks and temperature as facts, or why nvidia-smi gave none."""
    argv = ["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits", "-i", selector]
    run = run or (lambda: subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False))
    try:
        done = run()
    except FileNotFoundError:
        return "nvidia-smi not found"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi failed: {exc}"
    lines = (done.stdout or "").strip().splitlines()
    values = [v.strip() for v in lines[0].split(",")] if done.returncode == 0 and lines else []
    if len(values) != len(SMI_FIELDS):
        return (
            f"nvidia-smi exited {done.returncode}: {((done.stderr or done.stdout or '').strip() or 'no output')[:200]}"
        )
    source = " ".join(argv)
    return {
        name: known(value, source)
        if value and "N/A" not in value and "Not Supported" not in value
        else unknown(f"nvidia-smi reports {value or 'nothing'} for {field}")
        for (field, name), value in zip(SMI_FIELDS.items(), values)
    }


def _nvml(read: Any, source: str, smi_reason: str) -> Fact:
    try:
        return known(read(), f"{source} (NVML)")
    except Exception as exc:  # pynvml missing, or NVML refusing the query
        return unknown(f"nvidia-smi: {smi_reason}; {source}: {type(exc).__name__}: {str(exc)[:200]}")
