"""The CUDA adapter: inductor-compiled (Triton kernels) and eager on an NVIDIA GPU."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import torch

from collector.backends.base import Backend, BackendUnavailable, OpRecorder, _redirected, not_measured
from collector.facts import Fact, known, unknown


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self) -> None:
        if not torch.cuda.is_available():
            raise BackendUnavailable("target cuda: torch.cuda.is_available() is False on this host")
        self.device = torch.device("cuda")

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def cache_env(self, directory: Path) -> dict[str, str]:
        env = super().cache_env(directory)
        env["TRITON_CACHE_DIR"] = str(directory / "triton")
        return env

    def cache_dirs(self, environ: Mapping[str, str] | None = None) -> list[tuple[str, Path, bool]]:
        environ = os.environ if environ is None else environ
        dirs = super().cache_dirs(environ)
        triton = Path(environ["TRITON_CACHE_DIR"]) if "TRITON_CACHE_DIR" in environ else Path.home() / ".triton" / "cache"
        dirs.append(("triton", triton, _redirected(triton, environ)))
        return dirs

    def fallback(self) -> dict[str, Any]:
        return not_measured("not_applicable", "CUDA has no automatic CPU fallback: an unsupported op raises")

    def transfers(self, recorder: OpRecorder | None) -> dict[str, Any]:
        if recorder is None:
            return {"status": "unmeasured", "reason": "copies inside compiled graphs are not dispatched ops"}
        return {"status": "measured", "count": recorder.copies, "bytes": recorder.copy_bytes}

    def profiler_activities(self) -> list[Any]:
        return [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]

    distributions = ("triton",)
    env_prefixes = ("CUDA_",)

    @staticmethod
    def probe(torch_module: Any) -> dict[str, Any]:
        return {"cuda_available": bool(torch_module.cuda.is_available())}

    @staticmethod
    def decide_family(probes: dict[str, Any]) -> tuple[str, str]:
        if probes.get("cuda_available"):
            return "cuda", "target cuda and torch.cuda.is_available() is True"
        return "unknown", "target cuda but torch.cuda.is_available() is False"

    @staticmethod
    def versions(torch_module: Any) -> dict[str, Fact]:
        cuda = getattr(torch_module.version, "cuda", None)
        return {"cuda": known(cuda, "torch.version.cuda") if cuda else unknown("torch build without CUDA")}

    @staticmethod
    def device_facts(torch_module: Any, backend_module: Any) -> dict[str, Fact] | None:
        return {
            "device_name": known(torch_module.cuda.get_device_name(0), "torch.cuda.get_device_name(0)"),
            "device_count": known(torch_module.cuda.device_count(), "torch.cuda.device_count()"),
        }
