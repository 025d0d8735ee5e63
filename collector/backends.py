"""Device adapters: how to synchronise, compile, track fallback and profile on each target.

Each adapter answers the same questions for cpu, cuda and neuron. Where a question has no
answer on a backend (CPU fallback on the CPU itself) the answer says "not applicable" with a
reason; where it could not be measured it says "unmeasured" with a reason. Never an empty list
standing for "unknown".

Operator tracking is per cell: ``begin_cell`` clears it, and a read without a clear since the
last cell's read is refused ("unmeasured"), so no cell reports another cell's ops.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

import torch
from torch.utils._python_dispatch import TorchDispatchMode

COPY_OPS = frozenset({"aten::_to_copy", "aten::copy_", "aten::to"})


class BackendUnavailable(RuntimeError):
    """The requested target cannot run on this host; the message says why."""


def count_files(path: Path) -> int:
    """Files below ``path`` (0 when it does not exist)."""
    if not path.is_dir():
        return 0
    return sum(1 for p in path.rglob("*") if p.is_file())


CACHE_ROOT = "COLLECTOR_CACHE_ROOT"  # the directory the collector made for this process's caches


def _redirected(path: Path, environ: Mapping[str, str]) -> bool:
    """Whether ``path`` lies in the cache directory the collector made for this process."""
    root = environ.get(CACHE_ROOT)
    return root is not None and Path(path).resolve().is_relative_to(Path(root).resolve())


def list_cache_dirs(dirs: list[tuple[str, Path, bool]]) -> list[dict[str, Any]]:
    return [{"role": role, "path": str(path), "redirected": redirected, "entries_before": count_files(path)} for role, path, redirected in dirs]


def finish_cache_listing(listing: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts after the call, and the totals the compile and cold events carry."""
    for entry in listing:
        entry["entries_after"] = count_files(Path(entry["path"]))
    return {
        "cache_entries_before": sum(e["entries_before"] for e in listing),
        "cache_entries_after": sum(e["entries_after"] for e in listing),
        "cache_dirs": listing,
    }


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
    compile_options: dict[str, Any] | None = None

    def synchronize(self) -> None:
        """Nothing is asynchronous on the CPU."""

    def compile(self, model: Any, options: dict[str, Any]) -> Any:
        """``torch.compile`` with the plan's [compile] options (collector/planschema.py): the one
        place the collector compiles, so every compiled call honours what the plan declared."""
        used = {
            "dynamic": bool(options.get("dynamic", False)),
            "mode": options.get("mode", "default"),
            "fullgraph": bool(options.get("fullgraph", False)),
            "backend_options": dict(options.get("backend_options") or {}),
        }
        compiled = torch.compile(
            model,
            backend=self.compile_backend,
            dynamic=used["dynamic"],
            fullgraph=used["fullgraph"],
            mode=None if used["mode"] == "default" else used["mode"],
            options=used["backend_options"] or None,
        )
        # What the last torch.compile call was given, recorded in each compile event.
        self.compile_options = used
        return compiled

    def cache_env(self, directory: Path) -> dict[str, str]:
        """Variables that point every compile cache at ``directory`` (for a true cold start)."""
        return {"TORCHINDUCTOR_CACHE_DIR": str(directory / "inductor"), CACHE_ROOT: str(directory)}

    def cache_dirs(self, environ: Mapping[str, str] | None = None) -> list[tuple[str, Path, bool]]:
        """(role, path, redirected) of every compile cache this process would use.

        Inductor keeps precompiled headers and its newer cache under its default directory
        (below the temp dir), which TORCHINDUCTOR_CACHE_DIR does not move; they are listed too,
        and count as redirected only when the temp dir itself is the collector's.
        """
        environ = os.environ if environ is None else environ
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir

        dirs: list[tuple[str, Path]] = []
        if "TORCHINDUCTOR_CACHE_DIR" in environ:
            dirs.append(("inductor", Path(environ["TORCHINDUCTOR_CACHE_DIR"])))
        default = Path(default_cache_dir())
        dirs.append(("inductor-precompiled-headers", default / "precompiled_headers"))
        dirs.append(("inductor-default-cache", default / "cache"))
        return [(role, path, _redirected(path, environ)) for role, path in dirs]

    def begin_cell(self) -> None:
        """Reset per-cell bookkeeping before a cell runs."""

    def end_cell(self) -> None:
        """The cell's operator lists have been read."""

    def settings(self) -> list[dict[str, Any]] | None:
        """Variables this adapter sets or relies on (environment.backend_settings)."""
        return None

    def cell_log(self) -> list[str]:
        """Backend log lines (warnings and errors) written since ``begin_cell``."""
        return []

    def collect_log(self, run_dir: Path) -> tuple[Path, list[str]] | None:
        """Copy the backend's log into the run directory; its path there and its warnings."""
        return None

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


class NeuronBackend(Backend):
    """Native TorchNeuron (device 'neuron', torch.compile backend 'neuron').

    Exercised only against a stand-in module (tests/test_collector_neuron_standin.py) until a
    real Trainium log exists: every statement below follows the TorchNeuron 2.33 documentation
    and an unofficial source copy, not a run on hardware.

    * ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=1`` is pinned (a compile failure raises rather
      than running eager and passing as compiled) and ``NEURON_LAUNCH_BLOCKING`` is set to 0
      unless the user chose; both are set before torch is imported (``collector.neuronenv``)
      and logged with who set them.
    * Operator tracking is cleared before every cell and read once after it; a read without a
      clear in between answers "unmeasured".
    * The ``[Neuron]`` log channel goes to ``TORCH_NEURONX_LOG_FILE``; each cell gets the warning
      lines written while it ran, and the file is copied to ``logs/neuron.log`` in the run.
    """

    name = "neuron"
    compile_backend = "neuron"

    def __init__(self, module: Any = None, device: torch.device | None = None) -> None:
        from collector import neuronenv

        try:
            self.module = module or importlib.import_module("torch_neuronx")
        except ImportError as exc:
            raise BackendUnavailable(f"target neuron: torch_neuronx cannot be imported ({exc})") from None
        if getattr(torch, "neuron", None) is None:
            raise BackendUnavailable("target neuron: torch.neuron is missing; this is not the native TorchNeuron backend")
        # python -m collector applies these before torch is imported; here they are read back
        # (or, for an adapter built another way, set now and noted as set late).
        self._settings = neuronenv.apply()
        self.log_file = Path(os.environ[neuronenv.LOG_FILE])
        self.device = device or torch.device("neuron")
        self.metrics = self._enable_metrics()
        self._cleared = False
        self._log_offset = self._log_size()

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
        torch.neuron.synchronize()

    def cache_env(self, directory: Path) -> dict[str, str]:
        env = super().cache_env(directory)
        env["TORCH_NEURONX_NEFF_CACHE_DIR"] = str(directory / "neff")
        env["TORCH_NEURONX_NEFF_LOCAL_CACHE_DIR"] = str(directory / "neff-local")
        return env

    def cache_dirs(self, environ: Mapping[str, str] | None = None) -> list[tuple[str, Path, bool]]:
        environ = os.environ if environ is None else environ
        dirs = []
        for role, name, default in (("neff", "TORCH_NEURONX_NEFF_CACHE_DIR", "/tmp/neff_cache"), ("neff-local", "TORCH_NEURONX_NEFF_LOCAL_CACHE_DIR", "/tmp/local_cache")):
            path = Path(environ.get(name, default))
            dirs.append((role, path, _redirected(path, environ)))
        return dirs

    def begin_cell(self) -> None:
        self.module.clear_op_tracking()
        self._cleared = True
        self._log_offset = self._log_size()

    def end_cell(self) -> None:
        self._cleared = False

    def _stale(self) -> dict[str, Any] | None:
        if self._cleared:
            return None
        return not_measured("unmeasured", "op tracking was not cleared before this read, so the list could hold another cell's ops")

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
        data = self.log_file.read_bytes()
        target.write_bytes(data)
        return target, neuron_warnings(data.decode("utf-8", "replace"))

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


def neuron_warnings(text: str) -> list[str]:
    """The warning and error lines of the [Neuron] log channel ('[Neuron] [WARNING] ...')."""
    return [line.strip() for line in text.splitlines() if "[Neuron]" in line and ("[WARNING]" in line or "[ERROR]" in line)]


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
