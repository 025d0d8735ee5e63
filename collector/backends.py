"""Device adapters: how to synchronise, compile, track fallback and profile on each target.

Each adapter answers the same questions for cpu, cuda and neuron. Where a question has no
answer on a backend (CPU fallback on the CPU itself) the answer says "not applicable" with a
reason; where it could not be measured it says "unmeasured" with a reason. Never an empty list
standing for "unknown".
"""

from __future__ import annotations

import contextlib
import importlib
from pathlib import Path
from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

COPY_OPS = frozenset({"aten::_to_copy", "aten::copy_", "aten::to"})


class BackendUnavailable(RuntimeError):
    """The requested target cannot run on this host; the message says why."""


def measured(items: list[str]) -> dict[str, Any]:
    return {"status": "measured", "items": sorted(set(items))}


def not_measured(status: str, reason: str) -> dict[str, Any]:
    return {"status": status, "reason": reason}


class OpRecorder(TorchDispatchMode):
    """Records the aten ops an eager call dispatches and the copies that cross devices."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()
        self.copies = 0
        self.copy_bytes = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = func._schema.name
        self.ops.add(name)
        out = func(*args, **(kwargs or {}))
        if name in COPY_OPS:
            self._count_copy(args, out)
        return out

    def _count_copy(self, args: Any, out: Any) -> None:
        source = args[1] if len(args) > 1 and isinstance(args[1], torch.Tensor) else args[0]
        if isinstance(source, torch.Tensor) and isinstance(out, torch.Tensor) and source.device != out.device:
            self.copies += 1
            self.copy_bytes += out.numel() * out.element_size()


class Backend:
    """The CPU target; the base the other targets refine."""

    name = "cpu"
    compile_backend = "inductor"
    device = torch.device("cpu")
    module: Any = None

    def synchronize(self) -> None:
        """Nothing is asynchronous on the CPU."""

    def cache_env(self, directory: Path) -> dict[str, str]:
        """Variables that point every compile cache at ``directory`` (for a true cold start)."""
        return {"TORCHINDUCTOR_CACHE_DIR": str(directory / "inductor")}

    def begin_cell(self) -> None:
        """Reset per-cell bookkeeping before a cell runs."""

    def fallback(self) -> dict[str, Any]:
        return not_measured("not_applicable", "the cpu target is the host: there is no CPU fallback")

    def executed(self, recorder: OpRecorder | None) -> dict[str, Any]:
        if recorder is None:
            return not_measured(
                "unmeasured",
                "compiled graphs run as generated kernels, not one dispatched aten op at a time; "
                "the eager cell of the same shape lists the ops",
            )
        return measured(list(recorder.ops))

    def transfers(self, recorder: OpRecorder | None) -> dict[str, Any]:
        return {"status": "not_applicable", "reason": "inputs and outputs stay on the host"}

    def compile_counters(self) -> dict[str, int]:
        from torch._dynamo.utils import counters

        return {
            "frames": counters["frames"].get("total", 0),
            "graphs": counters["stats"].get("unique_graphs", 0),
            "cache_hits": counters["inductor"].get("fxgraph_cache_hit", 0),
            "cache_misses": counters["inductor"].get("fxgraph_cache_miss", 0),
        }

    def graph_breaks(self) -> dict[str, int]:
        from torch._dynamo.utils import counters

        return dict(counters["graph_break"])

    def profiler_activities(self) -> list[Any]:
        return [torch.profiler.ProfilerActivity.CPU]

    @contextlib.contextmanager
    def profile(self, trace_dir: Path, name: str) -> Iterator[dict[str, Any]]:
        """Profile the block; yields a dict filled with trace paths and top ops afterwards."""
        result: dict[str, Any] = {"profiler": "torch.profiler", "traces": [], "top_ops": []}
        with torch.profiler.profile(activities=self.profiler_activities(), record_shapes=True) as prof:
            yield result
        path = trace_dir / f"{name}.json"
        prof.export_chrome_trace(str(path))
        result["traces"].append((path, "chrome_trace"))
        result["top_ops"] = top_ops(prof)


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

    def fallback(self) -> dict[str, Any]:
        return not_measured("not_applicable", "CUDA has no automatic CPU fallback: an unsupported op raises")

    def transfers(self, recorder: OpRecorder | None) -> dict[str, Any]:
        if recorder is None:
            return {"status": "unmeasured", "reason": "copies inside compiled graphs are not dispatched ops"}
        return {"status": "measured", "count": recorder.copies, "bytes": recorder.copy_bytes}

    def profiler_activities(self) -> list[Any]:
        return [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]


class NeuronBackend(Backend):
    """Native TorchNeuron (device 'neuron', torch.compile backend 'neuron')."""

    name = "neuron"
    compile_backend = "neuron"

    def __init__(self, module: Any = None, device: torch.device | None = None) -> None:
        try:
            self.module = module or importlib.import_module("torch_neuronx")
        except ImportError as exc:
            raise BackendUnavailable(f"target neuron: torch_neuronx cannot be imported ({exc})") from None
        if getattr(torch, "neuron", None) is None:
            raise BackendUnavailable("target neuron: torch.neuron is missing; this is not the native TorchNeuron backend")
        self.device = device or torch.device("neuron")
        self.metrics = self._enable_metrics()

    def _enable_metrics(self) -> Any:
        metrics = getattr(self.module, "metrics", None)
        try:
            metrics = metrics or importlib.import_module("torch_neuronx.metrics")
            metrics.set_enabled(True)
            return metrics
        except (ImportError, AttributeError):
            return None

    def synchronize(self) -> None:
        torch.neuron.synchronize()

    def cache_env(self, directory: Path) -> dict[str, str]:
        env = super().cache_env(directory)
        env["TORCH_NEURONX_NEFF_CACHE_DIR"] = str(directory / "neff")
        env["TORCH_NEURONX_NEFF_LOCAL_CACHE_DIR"] = str(directory / "neff-local")
        return env

    def begin_cell(self) -> None:
        self.module.clear_op_tracking()

    def fallback(self) -> dict[str, Any]:
        return measured(list(self.module.get_fallback_ops()))

    def executed(self, recorder: OpRecorder | None) -> dict[str, Any]:
        return measured(list(self.module.get_executed_ops()))

    def transfers(self, recorder: OpRecorder | None) -> dict[str, Any]:
        fallbacks = list(self.module.get_fallback_ops())
        if recorder is not None and not fallbacks:
            return {"status": "measured", "count": recorder.copies, "bytes": recorder.copy_bytes}
        return {
            "status": "unmeasured",
            "reason": "copies made by CPU fallback happen inside the runtime and are not counted"
            if fallbacks
            else "copies inside compiled graphs are not dispatched ops",
        }

    def compile_counters(self) -> dict[str, int]:
        counts = super().compile_counters()
        if self.metrics is not None:
            read = self.metrics.get_counter_value
            counts["cache_hits"] = int(read("CompilationCache.InMemoryHits") or 0) + int(read("CompilationCache.PersistentHits") or 0)
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


def top_ops(prof: Any, limit: int = 10) -> list[dict[str, Any]]:
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)[:limit]
    return [{"name": r.key, "self_time_us": float(r.self_cpu_time_total), "calls": int(r.count)} for r in rows]


def resolve_target(requested: str, intended: str | None) -> tuple[Backend, dict[str, str]]:
    """The adapter to run on and how it was chosen (the run_start ``target_choice``).

    ``auto`` with a plan that names its target runs there or nowhere: it never falls back to
    another device silently. Without a plan target, ``auto`` probes neuron, then cuda, then cpu
    and records what it found. A target named on the command line is used as asked; when it
    differs from the plan's target the reason says so, and the report judges the run as
    evidence for the device it ran on only.
    """
    if requested == "auto" and intended is not None:
        try:
            backend = select_backend(intended)
        except BackendUnavailable as exc:
            raise BackendUnavailable(
                f"the plan's target is {intended}, which is not available here ({exc}); "
                f"--target auto never runs a {intended} plan elsewhere. Name another target with --target "
                f"to run it anyway: its report will say it is not evidence for {intended}"
            ) from None
        return backend, _choice(requested, backend, f"auto: the plan's target {intended} is available")
    if requested == "auto":
        found = []
        for candidate in ("neuron", "cuda"):
            try:
                backend = select_backend(candidate)
            except BackendUnavailable as exc:
                found.append(f"{candidate} not available ({exc})")
                continue
            return backend, _choice(requested, backend, "auto, the plan names no target: " + "; ".join(found + [f"{candidate} available"]))
        return Backend(), _choice(requested, Backend(), "auto, the plan names no target: " + "; ".join(found + ["cpu used"]))
    backend = select_backend(requested)
    if intended is not None and intended != backend.name:
        why = f"named on the command line, overriding the plan's target {intended}: this run is not evidence for {intended}"
    else:
        why = "named on the command line" + (f", the plan's target" if intended else "; the plan names no target")
    return backend, _choice(requested, backend, why)


def _choice(requested: str, backend: Backend, reason: str) -> dict[str, str]:
    return {"requested": requested, "resolved": backend.name, "reason": reason}


def select_backend(target: str) -> Backend:
    """The adapter for ``target``; ``auto`` picks neuron, then cuda, then cpu."""
    if target == "auto":
        for candidate in ("neuron", "cuda"):
            try:
                return select_backend(candidate)
            except BackendUnavailable:
                continue
        return Backend()
    if target == "cpu":
        return Backend()
    if target == "cuda":
        return CudaBackend()
    if target == "neuron":
        return NeuronBackend()
    raise BackendUnavailable(f"unknown target {target!r}; choose auto, cpu, cuda or neuron")
