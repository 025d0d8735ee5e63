"""The native TorchNeuron adapter (device 'neuron', torch.compile backend 'neuron').

Exercised only against a stand-in module (tests/test_collector_neuron_standin.py) until a real
Trainium log exists.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import torch

from collector.backends.base import Backend, BackendUnavailable, OpRecorder, measured, not_measured, top_ops
from collector.facts import Fact, dist_version, known, unknown, version_tuple

# torch-neuronx versions of the native backend's 2.33 release (the package matrix's rows).
NATIVE_NEURONX_FAMILIES = ("2.13.3.", "2.14.3.")


def _torch_neuron() -> Any:
    """torch.neuron, looked up when used: torch_neuronx registers it when imported, so torch's
    own type information does not list it."""
    return getattr(torch, "neuron", None)


class NeuronBackend(Backend):
    """Native TorchNeuron (device 'neuron', torch.compile backend 'neuron').

    Exercised only against a stand-in module (tests/test_collector_neuron_standin.py) until a
    real Trainium log exists: every statement below follows the TorchNeuron 2.33 documentation
    and an unofficial source copy, not a run on hardware.

    * ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=1`` is pinned (a compile failure raises rather
      than running eager and passing as compiled) and ``NEURON_LAUNCH_BLOCKING`` is set to 0
      unless the user chose; both are set before torch is imported (``neuronenv.py``, the descriptor's ``before_torch``)
      and logged with who set them.
    * Operator tracking is cleared before every cell and read once after it; a read without a
      clear in between answers "unmeasured".
    * The ``[Neuron]`` log channel goes to ``TORCH_NEURONX_LOG_FILE``; each cell gets the warning
      lines written while it ran, and the file is copied to ``logs/neuron.log`` in the run.
    """

    # Its name, variables, versions and caches are in neuron.toml beside this file. Native
    # TorchNeuron and the older XLA-based product share the pip name torch-neuronx, so the
    # family is decided here from versions and module probes, never from the name
    # (shared/reference/torchneuron-2.33-notes.md section 1).

    @staticmethod
    def probe(torch_module: Any) -> dict[str, Any]:
        import importlib.util

        neuronx = dist_version("torch-neuronx")["value"]
        xla = any(importlib.util.find_spec(m) is not None for m in ("torch_xla", "libneuronxla"))
        if neuronx and not xla:
            try:
                xla = importlib.util.find_spec("torch_neuronx.xla_impl") is not None
            except (ImportError, ValueError):
                xla = False
        try:
            privateuse1 = torch_module._C._get_privateuse1_backend_name()
        except AttributeError:
            privateuse1 = None
        return {"neuronx_version": neuronx, "privateuse1": privateuse1, "xla_present": xla}

    @staticmethod
    def decide_family(probes: dict[str, Any]) -> tuple[str, str]:
        neuronx = probes.get("neuronx_version")
        torch_version = probes.get("torch_version") or ""
        if not neuronx:
            return "unknown", "target neuron but the torch-neuronx distribution is not installed"
        xla = "XLA modules present (torch_xla, libneuronxla or torch_neuronx.xla_impl)"
        # The notes' rule (section 1): the XLA product is torch-neuronx 2.9.* (torch below 2.10).
        if neuronx.startswith("2.9.") or version_tuple(torch_version) < (2, 10):
            why = [f"torch-neuronx {neuronx}", f"torch {torch_version}"]
            if probes.get("xla_present"):
                why.append(xla)
            return "neuron-xla", "XLA-based PyTorch NeuronX: " + ", ".join(why)
        if probes.get("privateuse1") != "neuron":
            return "unknown", (
                f"torch-neuronx {neuronx} is installed but the 'neuron' device is not registered "
                f"(privateuse1 backend is {probes.get('privateuse1')!r})"
                + (f"; {xla}" if probes.get("xla_present") else "")
            )
        family_note = (
            "a 2.33 release family" if neuronx.startswith(NATIVE_NEURONX_FAMILIES) else "not a 2.33 release family"
        )
        # XLA modules installed beside a native build are left over, not what the cells run on:
        # those run on the 'neuron' device, which only the native build registers.
        beside = f"; {xla} as well, unused by device 'neuron'" if probes.get("xla_present") else ", no XLA modules"
        return "neuron-native", (
            f"torch-neuronx {neuronx} ({family_note}) with torch {torch_version} >= 2.10, "
            f"privateuse1 backend 'neuron' registered{beside}"
        )

    @staticmethod
    def device_facts(torch_module: Any) -> dict[str, Fact] | None:
        backend_module = getattr(torch_module, "neuron", None)
        if backend_module is None:
            return None
        facts = {
            "device_name": _asked(lambda: backend_module.get_device_name(0), "torch.neuron.get_device_name(0)"),
            "device_count": _asked(
                lambda: backend_module.device_count(), "torch.neuron.device_count() (logical NeuronCores)"
            ),
            "neuron_cores_used": _asked(
                lambda: _cores_used(backend_module), "torch.neuron.current_device() and device_count()"
            ),
        }
        header = neuron_ls_header()
        facts["logical_nc_config"] = _logical_nc_config(header)
        if isinstance(header, dict) and "instance-type" in header:
            facts["instance_type_neuron_ls"] = known(header["instance-type"], "neuron-ls header instance-type")
        return facts

    def accelerator_condition(self) -> dict[str, Fact]:
        """Not measured: no Neuron tool answers a one-shot query of clocks or temperature
        (neuron-monitor streams reports as a daemon, neuron-ls lists devices only)."""
        return {
            "accelerator": unknown(
                "not measured: no Neuron tool gives the NeuronCores' clocks or temperature in one query; neuron-monitor is not run beside the warm loop"
            )
        }

    def __init__(self, module: Any = None, device: torch.device | None = None) -> None:
        from collector.descriptors import hook_module

        neuronenv = hook_module(self.descriptor)  # neuronenv.py, this descriptor's before_torch hook
        try:
            self.module = module or importlib.import_module("torch_neuronx")
        except ImportError as exc:
            raise BackendUnavailable(f"target neuron: torch_neuronx cannot be imported ({exc})") from None
        if _torch_neuron() is None:
            raise BackendUnavailable(
                "target neuron: torch.neuron is missing; this is not the native TorchNeuron backend"
            )
        # torch_neuronx registers the device and torch.neuron on a host without a NeuronCore too
        # (notes section 1: torch.neuron.is_available() is the runtime check).
        available = getattr(_torch_neuron(), "is_available", None)
        if not callable(available):
            raise BackendUnavailable("target neuron: torch.neuron has no is_available(); no device can be confirmed")
        try:
            present = bool(available())
        except Exception as exc:  # the runtime's own failure, said in one line
            raise BackendUnavailable(
                f"target neuron: torch.neuron.is_available() raised {type(exc).__name__}: {str(exc)[:200]}"
            ) from None
        if not present:
            raise BackendUnavailable(
                "target neuron: torch.neuron.is_available() is False: no NeuronCore is visible here"
            )
        # python -m collector applies these before torch is imported; here they are read back
        # (or, for an adapter built another way, set now and noted as set late).
        self._settings = neuronenv.apply()
        self.log_file = Path(os.environ[neuronenv.LOG_FILE])
        self.device = device or torch.device("neuron")
        self.metrics = self._enable_metrics()
        self._cleared = False
        self._log_offset = self._log_size()
        # Where this run's part of the log begins: a log file the user named (and an earlier run
        # wrote) holds lines that are not this run's.
        self._log_start = self._log_offset

    def _enable_metrics(self) -> Any:
        metrics = getattr(self.module, "metrics", None)
        try:
            metrics = metrics or importlib.import_module("torch_neuronx.metrics")
            metrics.set_enabled(True)
            return metrics
        except (ImportError, AttributeError):
            return None

    def settings(self) -> list[dict[str, Any]] | None:
        return [dict(s) for s in self._settings]

    def synchronize(self) -> None:
        _torch_neuron().synchronize()

    def peak_memory(self) -> dict[str, Any]:
        # The torch-neuronx memory profiling guide documents memory_stats and memory_allocated,
        # read after torch.neuron.synchronize(); a per-series peak with a documented reset was not
        # found there, so no figure is recorded rather than one whose window is unknown.
        return {
            "status": "not_measured",
            "reason": "no documented per-cell peak reset on the neuron backend; peak device memory not recorded",
        }

    def begin_cell(self) -> None:
        self.module.clear_op_tracking()
        self._cleared = True
        self._log_offset = self._log_size()

    def end_cell(self) -> None:
        self._cleared = False

    def _stale(self) -> dict[str, Any] | None:
        if self._cleared:
            return None
        return not_measured(
            "unmeasured", "op tracking was not cleared before this read, so the list could hold another cell's ops"
        )

    def fallback(self) -> dict[str, Any]:
        return self._stale() or measured(list(self.module.get_fallback_ops()))

    def executed(self, recorder: OpRecorder | None) -> dict[str, Any]:
        return self._stale() or measured(list(self.module.get_executed_ops()))

    def transfers(self, recorder: OpRecorder | None) -> dict[str, Any]:
        stale = self._stale()
        if stale is not None:
            return {"status": "unmeasured", "reason": stale["reason"]}
        fallbacks = list(self.module.get_fallback_ops())
        if recorder is not None and not fallbacks:
            return {"status": "measured", "count": recorder.copies, "bytes": recorder.copy_bytes}
        return {
            "status": "unmeasured",
            "reason": "copies made by CPU fallback happen inside the runtime and are not counted"
            if fallbacks
            else "copies inside compiled graphs are not dispatched ops",
        }

    def _log_size(self) -> int:
        try:
            return self.log_file.stat().st_size
        except OSError:
            return 0

    def cell_log(self) -> list[str]:
        try:
            with open(self.log_file, "rb") as handle:
                handle.seek(self._log_offset)
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            return []
        return neuron_warnings(text)

    def collect_log(self, run_dir: Path) -> tuple[Path, list[str]] | None:
        if not self.log_file.is_file():
            return None
        target = run_dir / "logs" / "neuron.log"
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "rb") as handle:
            # (From the start where the file is shorter now: the runtime began it again.)
            handle.seek(self._log_start if os.fstat(handle.fileno()).st_size >= self._log_start else 0)
            data = handle.read()
        target.write_bytes(data)
        return target, neuron_warnings(data.decode("utf-8", "replace"))

    def compile_counters(self) -> dict[str, int]:
        counts = super().compile_counters()
        if self.metrics is not None:
            read = self.metrics.get_counter_value
            counts["cache_hits"] = int(read("CompilationCache.InMemoryHits") or 0) + int(
                read("CompilationCache.PersistentHits") or 0
            )
            counts["cache_misses"] = int(read("CompilationCache.PersistentMisses") or 0)
        return counts

    def profiler_activities(self) -> list[Any]:
        return [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]

    @contextlib.contextmanager
    def profile(self, trace_dir: Path, name: str) -> Iterator[dict[str, Any]]:
        profiling = importlib.import_module("torch_neuronx.profiling")
        out_dir = trace_dir / name
        out_dir.mkdir(parents=True, exist_ok=True)
        config = profiling.NeuronConfig(profile_output_dir=str(out_dir))
        result: dict[str, Any] = {"profiler": "torch.profiler + NeuronProfiler", "traces": [], "top_ops": []}
        with torch.profiler.profile(
            activities=self.profiler_activities(),
            experimental_config=config,
            on_trace_ready=profiling.NeuronProfiler(config).export_trace,
        ) as prof:
            yield result
        result["traces"] = [(p, p.suffix.lstrip(".") or "file") for p in sorted(out_dir.rglob("*")) if p.is_file()]
        result["top_ops"] = top_ops(prof)


def _asked(read: Any, source: str) -> Fact:
    """One device fact; a query that raises is recorded with the reason, the others still read."""
    try:
        return known(read(), source)
    except Exception as exc:
        return unknown(f"{source} failed: {type(exc).__name__}: {str(exc)[:200]}")


def _cores_used(backend_module: Any) -> str:
    """The cells run on torch.device('neuron'): one logical NeuronCore, the current device."""
    return f"1 logical NeuronCore (neuron:{backend_module.current_device()}) of {backend_module.device_count()} visible"


NEURON_LS_TIMEOUT_S = 15
_HEADER = re.compile(r"^\s*(instance-type|instance-id|logical-neuroncore-config)\s*:\s*(\S+)", re.MULTILINE)


def neuron_ls_header(argv: tuple[str, ...] = ("neuron-ls",)) -> dict[str, str] | str:
    """The header neuron-ls prints (instance-type, instance-id, logical-neuroncore-config), or
    why it could not be read. Plain text, since its JSON flag changed name in 2.34."""
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=NEURON_LS_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return f"{argv[0]} not found"
    except subprocess.TimeoutExpired:
        return f"{argv[0]} timed out after {NEURON_LS_TIMEOUT_S} s"
    except OSError as exc:
        return f"{argv[0]} could not be run: {exc.strerror or exc}"
    found = dict(_HEADER.findall(done.stdout or ""))
    if done.returncode != 0 or not found:
        return f"{argv[0]} exited {done.returncode} without a header: {(done.stderr or done.stdout).strip()[:200]}"
    return found


def _logical_nc_config(header: dict[str, str] | str) -> Fact:
    if isinstance(header, dict) and "logical-neuroncore-config" in header:
        return known(header["logical-neuroncore-config"], "neuron-ls header logical-neuroncore-config")
    set_here = os.environ.get("NEURON_LOGICAL_NC_CONFIG")
    if set_here:
        return known(set_here, "NEURON_LOGICAL_NC_CONFIG (as set for the run; neuron-ls did not say)")
    return unknown(
        f"neuron-ls: {header}" if isinstance(header, str) else "neuron-ls printed no logical-neuroncore-config"
    )


def neuron_warnings(text: str) -> list[str]:
    """The warning and error lines of the [Neuron] log channel ('[Neuron] [WARNING] ...')."""
    return [
        line.strip() for line in text.splitlines() if "[Neuron]" in line and ("[WARNING]" in line or "[ERROR]" in line)
    ]
