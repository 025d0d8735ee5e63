"""What several phases record around a call: warnings, compile counters, failures."""

from __future__ import annotations

import contextlib
import logging
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

from collector import interrupt
from collector.eventlog import OutOfSpace, message_of, space_words
from collector.backends import Backend, OpRecorder, finish_cache_listing, list_cache_dirs, not_measured
from collector.plan import Cell
from collector.run.state import Run
from collector.workload import FedInputs, layout_of


class _LogCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


# A cell's warnings, kept: a model that warns on every call (or a backend log full of them)
# made one case_result line longer than a log line may be, which ended the whole run.
MAX_CELL_WARNINGS = 200
MAX_WARNING_CHARS = 2000


def kept_warnings(lines: list[str]) -> list[str]:
    """The first MAX_CELL_WARNINGS warnings, each cut at MAX_WARNING_CHARS, and how many more
    there were in one last line."""
    kept = [
        line if len(line) <= MAX_WARNING_CHARS else line[:MAX_WARNING_CHARS] + " (cut)"
        for line in lines[:MAX_CELL_WARNINGS]
    ]
    if len(lines) > MAX_CELL_WARNINGS:
        kept.append(f"... and {len(lines) - MAX_CELL_WARNINGS:,} more warnings in this cell, not kept")
    return kept


class Captured:
    """The warnings a block raised so far, Python's then torch's logged ones, each in order:
    read while the block still runs too (a cell that fails writes its result inside it, and the
    warnings before its failure are its)."""

    def __init__(self, caught: list[warnings.WarningMessage], handler: _LogCollector) -> None:
        self.caught, self.handler = caught, handler

    def lines(self) -> list[str]:
        """Every warning so far (kept_warnings bounds what a cell's line holds)."""
        return [f"{w.category.__name__}: {w.message}" for w in self.caught] + self.handler.messages


@contextlib.contextmanager
def captured_warnings() -> Iterator[Captured]:
    """Python warnings and torch's logged warnings raised inside the block (Captured)."""
    handler = _LogCollector()
    torch_logger = logging.getLogger("torch")
    torch_logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield Captured(caught, handler)
    finally:
        torch_logger.removeHandler(handler)


def failure_phase(exc: BaseException, compiling: bool) -> str:
    module = type(exc).__module__ or ""
    if compiling and (module.startswith(("torch._dynamo", "torch._inductor")) or "ompil" in type(exc).__name__):
        return "compile"
    return "run"


def failure(phase: str, exc: BaseException) -> dict[str, str]:
    """A cell's failure as its case_result records it; OutOfSpace when the cell failed for lack
    of space or a file-size limit (a compiler that could not write its files): that is the
    host's failure, not the backend's, and it ends the run (exit 4) as a full log would."""
    if space_words(exc) is not None:
        raise OutOfSpace(Path(f"a file of the {phase} phase"), exc) from exc
    return {"phase": phase, "type": type(exc).__name__, "message": message_of(exc)}


class CompileWatch:
    """Counter deltas around a compiled cell's first call, its repeat, and recompile-limit logs."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.handler = _LogCollector()
        self.start: dict[str, int] = {}
        self.first: dict[str, int] = {}
        self.breaks_start: dict[str, int] = {}
        self.repeat_frames = 0
        self.limit_hit = False
        self.listing: list[dict[str, Any]] | None = None
        self.cache_counts: dict[str, Any] = {}

    def before(self) -> None:
        logging.getLogger("torch._dynamo").addHandler(self.handler)
        self.listing = list_cache_dirs(self.backend.cache_dirs())
        self.start = self.backend.compile_counters()
        self.breaks_start = self.backend.graph_breaks()

    def after_first(self) -> None:
        self.first = self.backend.compile_counters()
        if self.listing is not None:
            self.cache_counts = finish_cache_listing(self.listing)
        logging.getLogger("torch._dynamo").removeHandler(self.handler)
        self.limit_hit = any("recompile_limit" in m or "cache_size_limit" in m for m in self.handler.messages)

    def check_repeat(self, call: Callable[[], Any], synchronize: Callable[[], None]) -> None:
        """Call again with the same inputs: on a fixed-shape path nothing compiles."""
        call()
        synchronize()
        self.repeat_frames = self.backend.compile_counters()["frames"] - self.first["frames"]

    @property
    def frames_first(self) -> int:
        return self.first.get("frames", 0) - self.start.get("frames", 0)

    @property
    def graphs_first(self) -> int:
        return self.first.get("graphs", 0) - self.start.get("graphs", 0)

    def event(self, first_call_s: float | None, cache_dir: Path) -> dict[str, Any]:
        now = self.first or self.backend.compile_counters()
        breaks = self.backend.graph_breaks()
        return {
            "compile_first_result_s": first_call_s,
            "graphs": now.get("graphs", 0) - self.start.get("graphs", 0),
            "graph_breaks": [
                {"reason": reason, "count": count - self.breaks_start.get(reason, 0)}
                for reason, count in sorted(breaks.items())
                if count > self.breaks_start.get(reason, 0)
            ],
            "recompiles": self.repeat_frames,
            "cache_hits": now.get("cache_hits", 0) - self.start.get("cache_hits", 0),
            "cache_misses": now.get("cache_misses", 0) - self.start.get("cache_misses", 0),
            "recompile_limit_hit": self.limit_hit,
            "cache_condition": "compiled_in_process",
            "cache_dir": str(cache_dir),
            "compile_options": self.backend.compile_options,
            **self.cache_counts,
        }


def cold_condition(mode: str, result: dict[str, Any], restart: bool = False) -> str:
    """The condition the cold call really had, from the child's own listing and counters.

    A restart (a fresh process pointed at the cache folder an earlier compile filled) is
    labelled so only when that folder was not empty before its call."""
    if mode != "compiled":
        return "eager_no_compile"
    # Listed folders empty before the call: an empty cache, also when the call then hit entries
    # it had just written itself (a graph of identical blocks, or two subgraphs alike, compiles
    # one and hits it for the other: hits beside at least one miss). Hits with no miss came from
    # a cache the listing did not see.
    if result.get("cache_entries_before", 1) == 0 and (not result.get("cache_hits") or result.get("cache_misses")):
        return "fresh_process_empty_cache"
    return "restart_populated_cache" if restart else "persistent_cache"


def compile_condition(compile_event: dict[str, Any]) -> str:
    """A compile that was not a cold call: in a process whose cache folders were not empty
    (a fresh child given the caches the cold compiles left), it met a persistent cache; its
    hits and misses say how much of it was reused."""
    return "persistent_cache" if compile_event.get("cache_entries_before") else "compiled_in_process"


def compile_facts(run: Run, cell: Cell, watch: CompileWatch, first_call_s: float | None, cold: bool) -> dict[str, Any]:
    """A compile event's fields with the condition the compile had: ``cold``, the cell's first
    call in a fresh process (its listing and counters decide), or a compile in a process given
    the caches the cold compiles left, or one in this process. A compile that raised had it too."""
    event = watch.event(first_call_s, run.cache_dir)
    if cold:
        event["cache_condition"] = cold_condition(cell.mode, event)
    elif run.caches_given:
        event["cache_condition"] = compile_condition(event)
    return event


def write_failed(
    run: Run,
    cell: Cell,
    result: dict[str, Any],
    fail: dict[str, str],
    watch: CompileWatch | None,
    ran: bool = True,
    why: str | None = None,
    cold: bool = False,
) -> None:
    """A cell that errored; ``ran=False`` when nothing of it ran (torch.compile itself raised,
    or ``why`` says what else stopped it first); ``cold``: its compile was the cell's first call
    in a fresh process."""
    # A signal that a library caught and wrapped (Dynamo turns it into BackendCompilerFailed)
    # ends the run here: the interrupted cell stays untested, it did not fail.
    interrupt.check()
    if watch is not None and fail["phase"] == "compile":
        run.log.write("compile", case=cell.case, **compile_facts(run, cell, watch, None, cold))
    run.progress.say(f"{cell.case}: error in {fail['phase']}: {fail['type']}: {fail['message'][:200]}")
    result = {**result, "warnings": kept_warnings(list(result.get("warnings", [])) + run.backend.cell_log())}
    run.log.write("case_result", case=cell.case, status="error", failure=fail, **result)
    write_operators(run, cell, None, ran, why)


def write_operators(
    run: Run, cell: Cell, recorder: OpRecorder | None, ran: bool = True, why: str | None = None
) -> None:
    """Read the cell's operator lists once, then mark them read (the next cell clears first)."""
    if ran:
        executed, fallback, transfers = (
            run.backend.executed(recorder),
            run.backend.fallback(),
            run.backend.transfers(recorder),
        )
    else:
        why = why or "torch.compile raised before any call of this cell: nothing ran, so nothing was tracked"
        executed, fallback = not_measured("unmeasured", why), not_measured("unmeasured", why)
        transfers = {"status": "unmeasured", "reason": why}
    run.backend.end_cell()
    run.log.write("operators", case=cell.case, executed=executed, fallback=fallback, transfers=transfers)


def fed_facts(fed: FedInputs, planned: str) -> dict[str, Any]:
    """inputs_fed, layout_fed and layout_achieved from the calls the hook saw (none: not measured)."""
    calls = fed.calls
    fed.calls = []
    if not calls:
        return {}
    layouts = {layout_of(c) for c in calls}
    return {
        "inputs_fed": calls[0],
        "layout_fed": layout_of(calls[0]),
        "layout_achieved": layouts == {planned},
    }


def write_reference(run: Any, key: str, dtype: Any, noise: Any, nonfinite: int, **more: Any) -> None:
    """The reference event of one shape: two runs on the CPU, their disagreement and non-finite count."""
    run.log.write(
        "reference",
        shape=key,
        device="cpu",
        dtype=str(dtype).removeprefix("torch."),
        runs=2,
        noise_max_abs=noise,
        deterministic=noise == 0.0,
        nonfinite=nonfinite,
        **more,
    )
