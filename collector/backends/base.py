"""The CPU adapter, the base every target's adapter refines, and what they share.

Each adapter (this module for cpu; ``cuda.py``, ``neuron.py``) answers the same questions:
how to synchronise, compile, track fallback and profile, and what ``environment.py`` reads for
its target (distributions, variables, the backend family, versions, the device). Where a question has no
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

from collector import lifeline
from collector.descriptors import Descriptor, VersionProbe
from collector.facts import Fact, dist_version, known, read_text_file, run_command, unknown

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
    """Whether ``path`` lies in the cache directory the collector made for this process, or in
    the temp dir it made for this process (lifeline.process_temp)."""
    roots = [Path(root) for root in (environ.get(CACHE_ROOT),) if root is not None] + lifeline.made_temp()
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(root.resolve()) for root in roots)


def list_cache_dirs(dirs: list[tuple[str, Path, bool]]) -> list[dict[str, Any]]:
    return [
        {"role": role, "path": str(path), "redirected": redirected, "entries_before": count_files(path)}
        for role, path, redirected in dirs
    ]


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
    # The target's descriptor (collector/descriptors.py), set with ``name`` and
    # ``compile_backend`` when collector.backends loads the adapter: what environment.py records
    # for the target (distributions, variables, versions) and its compile caches are data there.
    descriptor: Descriptor

    @staticmethod
    def probe(torch_module: Any) -> dict[str, Any]:
        """Plain facts ``decide_family`` needs (read on every run, for every target)."""
        return {}

    @staticmethod
    def decide_family(probes: dict[str, Any]) -> tuple[str, str]:
        """The backend family cells of this target run on, and how that was decided."""
        return "cpu", "target cpu: cells run on the host CPU"

    @classmethod
    def versions(cls, torch_module: Any) -> dict[str, Fact]:
        """Versions of this target's own packages and drivers (recorded on every run), read as
        the descriptor's ``[[version]]`` probes say."""
        return {probe.key: read_version(probe) for probe in cls.descriptor.versions}

    @staticmethod
    def device_facts(torch_module: Any) -> dict[str, Fact] | None:
        """Name and count of this target's devices; None: the host's (processor, cpu count)."""
        return None

    def synchronize(self) -> None:
        """Nothing is asynchronous on the CPU."""

    def accelerator_condition(self) -> dict[str, Fact]:
        """The accelerator's clocks and temperature now, read around each warm loop
        (collector/hostcondition.py); the CPU target has none beyond the host's own facts."""
        return {"accelerator": unknown("target cpu: no accelerator; the host's load and governor are the condition")}

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
        """Variables that point every compile cache at ``directory`` (for a true cold start):
        inductor's and each of the descriptor's ``[[cache]]`` folders."""
        env = {"TORCHINDUCTOR_CACHE_DIR": str(directory / "inductor"), CACHE_ROOT: str(directory)}
        env.update({cache.variable: str(directory / cache.role) for cache in self.descriptor.caches})
        return env

    def cache_dirs(self, environ: Mapping[str, str] | None = None) -> list[tuple[str, Path, bool]]:
        """(role, path, redirected) of every compile cache this process would use.

        Inductor keeps precompiled headers and its newer cache under its default directory
        (below the temp dir), which TORCHINDUCTOR_CACHE_DIR does not move; they are listed too,
        and count as redirected only when the temp dir itself is the collector's.
        """
        environ = os.environ if environ is None else environ
        dirs: list[tuple[str, Path]] = []
        if self.descriptor.compile_backend == "inductor":  # another compiler fills no inductor cache
            from torch._inductor.runtime.cache_dir_utils import default_cache_dir

            if "TORCHINDUCTOR_CACHE_DIR" in environ:
                dirs.append(("inductor", Path(environ["TORCHINDUCTOR_CACHE_DIR"])))
            default = Path(default_cache_dir())
            dirs.append(("inductor-precompiled-headers", default / "precompiled_headers"))
            dirs.append(("inductor-default-cache", default / "cache"))
        for cache in self.descriptor.caches:
            dirs.append((cache.role, Path(environ.get(cache.variable) or os.path.expanduser(cache.default))))
        return [(role, path, _redirected(path, environ)) for role, path in dirs]

    def begin_cell(self) -> None:
        """Reset per-cell bookkeeping before a cell runs."""

    def reset_peak_memory(self) -> None:
        """Start a new peak of device memory (before each warm series)."""

    def peak_memory(self) -> dict[str, Any]:
        """The timing event's device_memory: the peak since ``reset_peak_memory``, or why not."""
        return {
            "status": "not_measured",
            "reason": "the cpu target has no device allocator; host memory is not recorded per cell",
        }

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
        """Each reason Dynamo ended a graph for, with its count. torch 2.13 counts a break from
        data-dependent branching (``if tensor.sum() > 0:``) as 'unimplemented' only, not as a
        'graph_break': read alone, that counter called such a model one graph with no break."""
        from torch._dynamo.utils import counters

        breaks = dict(counters["graph_break"])
        for reason, count in counters["unimplemented"].items():
            breaks[reason] = max(breaks.get(reason, 0), count)  # one break counted in both: once
        return breaks

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


def read_version(probe: VersionProbe) -> Fact:
    """One version as a descriptor's probe says to read it: a distribution's metadata, a
    module's attribute, a file's text or a command's output; unknown with the reason otherwise."""
    if probe.distribution:
        return dist_version(probe.distribution)
    if probe.file:
        return read_text_file(probe.file, probe.what or probe.key)
    if probe.command:
        return run_command(list(probe.command))
    source = f"{probe.module}.{probe.attribute}"
    try:
        value = getattr(importlib.import_module(probe.module), probe.attribute, None)
    except Exception as exc:  # a probe that cannot import its module is a fact, not a crash
        return unknown(f"{probe.module} cannot be imported: {type(exc).__name__}: {str(exc)[:200]}")
    return known(str(value), source) if value else unknown(probe.what or f"{source} is not set")


def top_ops(prof: Any, limit: int = 10) -> list[dict[str, Any]]:
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)[:limit]
    return [{"name": r.key, "self_time_us": float(r.self_cpu_time_total), "calls": int(r.count)} for r in rows]
