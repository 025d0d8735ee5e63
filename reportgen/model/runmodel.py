"""The run as plain data: validated events gathered per planned cell. No HTML, no judgement.

Every planned cell gets a ``CellRecord``; a cell with no ``case_result`` in the log is
``untested``, and so is a cell the run deselected (``plan.selection``) and a cell whose planned
layout the model did not receive (``layout_achieved`` false): ``untested_reason`` says which. A cell keeps the compact facts that the rules and the detail table read for
every cell, plus its logged events (with their line numbers), so every figure shown later can
be traced back to the event and line it came from. A cell's events are built as objects only
when a report shows that cell in full.
"""

from __future__ import annotations

from collections import Counter
from operator import attrgetter
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from functools import wraps
from typing import Any, Callable, Mapping, TypeVar
from weakref import WeakKeyDictionary

from msgspec import UNSET

from collector.stability import quantile
from reportgen.contract import events as ev
from reportgen.contract.consistency import waited_of
from reportgen.contract.validation import EventLines, LoggedEvent, LogReading, fields_of, read_log
from reportgen.storage.local import DEFAULT_MAX_LOG_BYTES

_NONE_OFF: Mapping[str, tuple[int, int]] = MappingProxyType({})
STATUS_ORDER = ("pass", "mismatch", "nonfinite", "error", "skipped", "untested")


def input_key(planned: ev.PlannedCell) -> str:
    """A cell's input shape key ('b1-l16-contiguous'): its reference and its inputs' content
    hashes are keyed so."""
    return f"b{planned.batch}-l{planned.length}-{planned.layout}"


def reference_of(references: Mapping[str, ev.Reference], planned: ev.PlannedCell) -> ev.Reference | None:
    """The reference event of a cell's inputs, from the run's references by shape (keyed by
    input key, or with the dtype too)."""
    key = input_key(planned)
    return references.get(key) or references.get(f"{key}-{planned.dtype}")


def shape_label(batch: int, length: int) -> str:
    return f"({batch}, {length})"


@dataclass(slots=True)
class CellRecord:
    """Everything the log says about one planned cell."""

    # The plan's cell as its event holds it.
    planned: ev.PlannedCell
    case: str  # planned.case, kept at hand: every rule and view reads it for every cell
    # Where the cell's events are made when asked for (given by position: a long log makes
    # tens of thousands of records, and a keyword costs a tenth of the call).
    source: EventLines | None = field(default=None, repr=False, compare=False)
    status: str = "untested"
    untested_reason: str | None = None  # None: no result in the log
    measured_status: str | None = None  # the case_result's own status, kept when it is overruled
    result_line: int | None = None
    lines: list[int] = field(default_factory=list)  # the lines of the cell's events
    # Lists most cells never fill are tuples, shared while empty: a long log has many cells.
    warnings: tuple[str, ...] = ()
    # Compact facts read for every cell (by the rules and the detail table).
    mismatched: int | None = None
    total: int | None = None
    max_abs: float | None = None
    output_nonfinite: int = 0  # NaN/Inf elements over the cell's outputs (case_result.outputs)
    recompiled: bool | None = None
    fallback_status: str | None = None
    fallback_items: tuple[str, ...] = ()
    executed_status: str | None = None  # operators.executed: measured, unmeasured, not_applicable
    executed_items: tuple[str, ...] = ()  # shared between cells with the same op list
    graph_break_reasons: tuple[str, ...] = ()
    recompiles_seen: bool = False
    recompile_limit_hit: bool = False
    # Whether the cell logged a compile event, and its first one's compile-and-first-result time
    # (the inference or forward graph's: training adds a backward one), read for every cell by
    # the site's summaries and cell index.
    compiled: bool = False
    compile_s: float | None = None
    # That compile's cache counters and condition as logged (misses, hits, condition); None without one.
    compile_cache: tuple[int | None, int | None, str] | None = None
    # Whether its compile events ran a compiled graph: True where one compiled a graph or counted
    # a cache hit or miss, False where every one logged graphs 0 and no hit or miss (TorchDynamo
    # traced nothing: disabled, or the model ran eager), None where none logged its counters.
    ran_graph: bool | None = None
    # The scope of the last warm series (of the first timing event, where none holds one): the
    # warm ratios compared between runs are of that series, whatever a cold call's event says.
    scope: ev.TimingScope | None = None
    cold_s: float | None = None
    cold_condition: str | None = None  # the cache condition of the cold call ``cold_s`` is of
    # The restart with a populated cache (logs from 1.2 on): kept beside the cold call, not over it.
    restart_s: float | None = None
    cold_timed_out_after_s: float | None = None
    warm_median_s: float | None = None
    warm_iqr_s: float | None = None
    # The last warm series' samples, the line it is on, and how many warm series the cell has:
    # the judge classifies every timed cell, and reading each line again cost most of a report.
    warm_samples: tuple[float, ...] = ()
    warm_line: int = 0
    warm_series: int = 0
    # (fastest sample, highest third quartile) of the cell's earlier warm series, where the
    # collector measured it again (None with one series): a stable last series faster than any of
    # their samples, or slower than the middle half of each, did not measure the speed the cell
    # ran at before (judge.timing_stability.attempts_apart). Not their slowest sample: the few
    # slow outliers that made a series unstable would admit any slower speed.
    warm_before: tuple[float, float] | None = None
    # The most the threads waited for a CPU per second of loop over those earlier series (where
    # recorded): why they were measured again, which the reported series alone does not show.
    warm_before_wait: float | None = None
    # The log's own verdict on the reported series where it was not stable (1.2 logs on; None:
    # stable, or not said): ('unstable', the rules it failed...) or ('unclassified', its note).
    # Such a series decides nothing even where this reportgen's rules call its samples stable
    # (judge.timing_stability.logged_unstable, logged_unclassified).
    warm_logged: tuple[str, ...] | None = None
    # The last warm series' peak device memory in bytes (1.3 logs on); None where not measured:
    # no record, or the target has no device allocator (the reason stays in the log).
    peak_device_bytes: int | None = None
    # The host facts read around that series' warm loop (1.2 logs on): (key, value) of each one
    # with a value, by key; () where none was recorded. Every timed cell's, since a fresh
    # process per cell may run under other threads, and a load or a clock reading is its own.
    host: tuple[tuple[str, str], ...] = ()
    # (seconds the process's threads waited for a CPU over that loop, seconds the loop took) (1.4
    # logs on; validate refuses figures that are no plain number); None where not recorded.
    warm_waited: tuple[float, float] | None = None
    warm_wait_unread: bool = False  # the host has the figures' keys but no readable figure
    eager_after_recompile_limit: bool = False
    # Of the latest cold call: its outputs did not match the reference; cache folders not empty before it.
    cold_check_failed: bool = False
    cold_full_caches: tuple[str, ...] = ()
    # Where a failed cell's mismatches lie, as far as the log says (read by the failure groups).
    worst_output: str | None = None
    per_output: list[ev.OutputStats] | None = None  # error_stats.per_output as logged, when logged
    failure_kind: str | None = None  # "phase: type" of a failure
    failure_text: str | None = None  # "phase: type: message", in full
    skip_reason: str | None = None
    output_dtypes: tuple[str, ...] = ()  # of the outputs the case_result lists
    # The inputs as make_inputs built them (case_result.inputs): names and dtypes, in one order.
    input_names: tuple[str, ...] = ()
    input_dtypes: tuple[str, ...] = ()
    task_metric: ev.TaskMetric | None = None
    loss_off: bool = False
    grads_off: frozenset[str] = frozenset()
    # name -> (mismatched, total); shared while empty
    params_off: Mapping[str, tuple[int, int]] = field(default_factory=lambda: _NONE_OFF)
    trained: bool = False
    localized: bool = False  # the log holds a localization event for it
    layout_achieved: bool | None = None  # None: not measured (1.0 logs)
    layout_fed: str | None = None
    timing_layout_missed: tuple[str, ...] = ()  # 'warm', 'cold' calls fed another layout
    # (call 'warm' or 'cold', stages inside the clock or None when not recorded, notes, synchronised)
    timed: tuple[tuple[str, tuple[str, ...] | None, tuple[str, ...], bool], ...] = ()

    @property
    def logged(self) -> list[LoggedEvent]:
        """The cell's events in line order (each made on first use, see EventLines)."""
        if not self.lines:
            return []
        at = self.source.at  # type: ignore[union-attr]
        return [at(line) for line in self.lines]

    @property
    def shape_label(self) -> str:
        return shape_label(self.planned.batch, self.planned.length)

    def _events(self, kind: str) -> list[Any]:
        return [record.event for record in self.logged if record.kind == kind]

    def _last(self, kind: str) -> Any:
        found = self._events(kind)
        return found[-1] if found else None

    @property
    def result(self) -> ev.CaseResult | None:
        return self._last("case_result")

    @property
    def operators(self) -> ev.Operators | None:
        return self._last("operators")

    @property
    def compiles(self) -> list[ev.Compile]:
        return self._events("compile")

    @property
    def compile(self) -> ev.Compile | None:
        """The inference or forward graph's compile facts (training adds a backward one)."""
        compiles = self.compiles
        return compiles[0] if compiles else None

    @property
    def generation(self) -> ev.GenerationResult | None:
        """A generation cell's tokens against the reference's, and its timings when it passed."""
        return self._last("generation")

    @property
    def train_steps(self) -> list[ev.TrainStep]:
        return self._events("train_step")

    @property
    def train_result(self) -> ev.TrainResult | None:
        return self._last("train_result")

    @property
    def profiles(self) -> list[ev.Profile]:
        return self._events("profile")

    @property
    def localization(self) -> ev.Localization | None:
        """Where the cell's error arises, per submodule (1.2 logs; None: not localised)."""
        return self._last("localization")

    def _latest_cold(self, restart: bool) -> ev.Cold | None:
        timings = reversed(self._events("timing"))
        return next((t.cold for t in timings if t.cold and (t.cold.cache_condition == RESTART) == restart), None)

    @property
    def cold(self) -> ev.Cold | None:
        """The latest timing event's cold measurement that has one (a restart's is apart)."""
        return self._latest_cold(restart=False)

    @property
    def restart(self) -> ev.Cold | None:
        """The latest restart with a populated cache: a fresh process given the cache its cold compile left."""
        return self._latest_cold(restart=True)

    @property
    def warm(self) -> ev.Warm | None:
        return next((t.warm for t in reversed(self._events("timing")) if t.warm), None)


_CACHES: list[WeakKeyDictionary[Any, dict[Any, Any]]] = []
T = TypeVar("T")


def per_run(compute: Callable[..., T]) -> Callable[..., T]:
    """``compute(run, *args)`` worked out once per run and arguments: a consumer's own cache,
    kept beside the run (the run model holds no consumer's figures) and gone with it. Cells
    do not change once a run is built; a test that changes them calls ``forget``."""
    cache: WeakKeyDictionary[Any, dict[Any, Any]] = WeakKeyDictionary()
    _CACHES.append(cache)

    @wraps(compute)
    def cached(run: RunModel, *args: Any) -> T:
        found = cache.setdefault(run, {})
        if args not in found:
            found[args] = compute(run, *args)
        return found[args]

    return cached


def forget(run: RunModel) -> None:
    """Drop what every per_run cache holds for ``run`` (after its cells were changed)."""
    for cache in _CACHES:
        cache.pop(run, None)


@dataclass(eq=False)  # one run is one object: consumers key their caches by it (per_run)
class RunModel:
    path: str
    start: ev.RunStart
    environment: ev.Environment | None
    plan: ev.Plan | None
    plan_line: int | None
    first_result_line: int | None
    cells: list[CellRecord]
    references: list[ev.Reference]
    artifacts: list[ev.Artifact]
    warnings: list[ev.WarningEvent]
    end: ev.RunEnd | None
    truncated: bool
    log_problems: list[str]
    kind_counts: dict[str, int] = field(default_factory=dict)
    # Generation plans (1.2): how the plan's padding policy served each request length.
    requests: list[ev.Request] = field(default_factory=list)
    # What the workload read and ran on beyond run_start's files (1.6); None: not recorded.
    workload_reads: ev.WorkloadReads | None = None
    # Artifact paths whose file lies beside the log but was not checked against its hashes
    # (LogReading.unchecked_files).
    unchecked_files: tuple[str, ...] = ()

    def cells_with(self, kind: str) -> list[CellRecord]:
        """The cells that logged at least one event of a per-cell kind."""
        if not self.kind_counts.get(kind) or not self.cells:
            return []
        return list(_cells_with(self, kind))

    @property
    def complete(self) -> bool:
        return self.end is not None and self.end.status == "complete" and not self.truncated

    @property
    def synthetic(self) -> bool:
        return self.start.origin == "synthetic"

    def counts(self) -> dict[str, int]:
        return dict(_counts(self))

    @per_run
    def with_status(self, *statuses: str) -> tuple[CellRecord, ...]:
        """The cells of these statuses, in plan order (worked out once per run: the rules and
        views ask for the same few sets). Cells do not change once the run is built."""
        return tuple(c for c in self.cells if c.status in statuses)

    def version(self, name: str) -> str | None:
        if self.environment is None or name not in self.environment.versions:
            return None
        return self.environment.versions[name].value


@per_run
def _counts(run: RunModel) -> dict[str, int]:
    """Cells per status, every status of STATUS_ORDER first (a status outside it counted too)."""
    counts = dict.fromkeys(STATUS_ORDER, 0)
    counts.update(Counter(c.status for c in run.cells))
    return counts


@per_run
def _cells_with(run: RunModel, kind: str) -> list[CellRecord]:
    # A cell's events are those of the CELL_FACTS kinds naming its case (the builder attaches
    # each to its cell): looked up by case in the log's records, no event built.
    source = run.cells[0].source
    cases = source.cases_with(kind) if kind in CELL_FACTS and source is not None else set()
    return [c for c in run.cells if c.case in cases]


class NotARun(ValueError):
    """The log has no run_start: there is nothing to report on."""


class RunBuilder:
    """Gathers a run from accepted events, one at a time: a sink for ``read_log``."""

    def __init__(self, events: EventLines | None = None) -> None:
        # Where the events read are kept (a cell's events are looked up there by line).
        self.events = EventLines() if events is None else events
        self.first: dict[str, LoggedEvent] = {}
        self.cells: dict[str, CellRecord] = {}
        self.references: list[ev.Reference] = []
        self.artifacts: list[ev.Artifact] = []
        self.warnings: list[ev.WarningEvent] = []
        self.requests: list[ev.Request] = []

    def add(self, record: LoggedEvent, data: Any) -> None:
        """Attach one event; ``data`` is its fields as the reader's mirror Struct (contract.fast).
        Every event added is one of ``events`` (the reader keeps each before it is added)."""
        kind = record.kind
        attach = CELL_FACTS.get(kind)
        if attach is not None:
            cell = self.cells.get(record.case)  # type: ignore[arg-type]
            if cell is not None:
                line = record.line
                cell.lines.append(line)
                attach(cell, data, line)
            return
        self.first.setdefault(kind, record)
        event = record.event
        if isinstance(event, ev.Plan) and not self.cells:
            events = self.events
            self.cells = {c.case: CellRecord(c, c.case, events) for c in event.matrix}
            if event.selection is not None:
                chosen = set(event.selection.cases)
                for case, cell in self.cells.items():
                    if case not in chosen:
                        cell.untested_reason = DESELECTED
        elif isinstance(event, ev.Reference):
            self.references.append(event)
        elif isinstance(event, ev.Artifact):
            self.artifacts.append(event)
        elif isinstance(event, ev.Request):
            self.requests.append(event)
        elif isinstance(event, ev.WarningEvent):
            self.warnings.append(event)
            if event.case in self.cells:
                self.cells[event.case].warnings += (event.message,)

    def _first(self, kind: str) -> Any:
        record = self.first.get(kind)
        return record.event if record is not None else None

    def build(self, reading: LogReading) -> RunModel:
        start = self._first("run_start")
        if start is None:
            raise NotARun(f"{reading.path}: no valid run_start event; nothing to report")
        plan = self.first.get("plan")
        # Worked out from the events kept, not as each is added: a long log adds hundreds of
        # thousands; the first result is near the top.
        events = self.events
        first_result_line = next((r.line for r in events if r.kind in _FIRST_RESULT_KINDS), None)
        run = RunModel(
            path=reading.path,
            start=start,
            environment=self._first("environment"),
            plan=self._first("plan"),
            plan_line=plan.line if plan is not None else None,
            first_result_line=first_result_line,
            cells=list(self.cells.values()),
            references=self.references,
            artifacts=self.artifacts,
            warnings=self.warnings,
            end=reading.run_end,
            truncated=reading.truncated,
            log_problems=[p.format() for p in reading.problems],
            unchecked_files=tuple(reading.unchecked_files),
            kind_counts=dict(Counter(map(_KIND, events))),  # per kind, first seen first
            requests=self.requests,
            workload_reads=self._first("workload_reads"),
        )
        mark_unmeasured_layouts(run)
        return run


def mark_unmeasured_layouts(run: RunModel) -> None:
    """A log written before layouts were measured is judged by what it did record.

    A planned non-contiguous cell whose result does not say what the model received
    (``layout_achieved`` absent) is untested for its layout when the log shows the layout
    cannot have reached the model: every host input it recorded is contiguous, or the cells ran
    on a device, where the copy to the device may have made the tensors contiguous and the log
    does not say. On the CPU, a non-contiguous host tensor is the one the model was called with.
    """
    on_host = run.environment is not None and run.environment.device_type == "cpu"
    for cell in run.cells:
        if cell.planned.layout != "noncontiguous" or cell.result_line is None or cell.layout_achieved is not None:
            continue
        if cell.status == "skipped":
            continue
        result = cell.result
        host_contiguous = result is not None and bool(result.inputs) and all(i.contiguous for i in result.inputs)
        if host_contiguous or not on_host:
            cell.status, cell.untested_reason = "untested", LAYOUT_NOT_MEASURED
            cell.layout_fed = "contiguous" if host_contiguous else None


def build_run(reading: LogReading) -> RunModel:
    """Gather an already read log into a RunModel (the reading may be incomplete)."""
    builder = RunBuilder(reading.records)
    for record in reading.records:
        builder.add(record, fields_of(record))
    return builder.build(reading)


def read_run(path: str | Path, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> tuple[LogReading, RunBuilder]:
    """Read a log and gather its run in the same pass; build the run only if it is valid."""
    builder = RunBuilder()
    return read_log(path, sink=builder.add, max_bytes=max_bytes, records=builder.events), builder


# A cell's matrix column (dtype, layout, mode), read in C.
COLUMN = attrgetter("planned.dtype", "planned.layout", "planned.mode")


_FIRST_RESULT_KINDS = frozenset({"case_result", "reference", "compile", "timing"})
_KIND = attrgetter("kind")


def _opt(value: Any, default: Any = None) -> Any:
    return default if value is UNSET else value


DESELECTED = "not run (deselected)"
LAYOUT_NOT_ACHIEVED = "layout not achieved"
LAYOUT_NOT_MEASURED = "layout not measured"


def _result_facts(cell: CellRecord, data: Any, line: int) -> None:
    # Once per cell of a long log: a field the line left out (UNSET, which is false) is read as
    # None inline, and the outputs' figures are gathered in C.
    cell.status = cell.measured_status = data.status
    cell.result_line = line
    cell.untested_reason = None
    cell.layout_achieved = None if (achieved := data.layout_achieved) is UNSET else achieved
    cell.layout_fed = None if (fed := data.layout_fed) is UNSET else fed
    if cell.layout_achieved is False:
        # The planned layout never reached the model: its result is not one for this layout.
        cell.status, cell.untested_reason = "untested", LAYOUT_NOT_ACHIEVED
    if data.warnings:
        cell.warnings += tuple(data.warnings)
    cell.recompiled = None if (recompiled := data.recompiled) is UNSET else recompiled
    outputs = data.outputs
    if outputs:
        cell.output_nonfinite = sum(map(_NONFINITE, outputs))
        cell.output_dtypes = _shared(tuple(map(_DTYPE, outputs)))
    else:
        cell.output_nonfinite, cell.output_dtypes = 0, ()
    inputs = data.inputs
    if inputs:
        cell.input_names, cell.input_dtypes = _shared(tuple(map(_NAME, inputs))), _shared(tuple(map(_DTYPE, inputs)))
    cell.skip_reason = None if (skip := data.skip_reason) is UNSET else skip
    stats = data.error_stats
    if stats:
        cell.mismatched, cell.total, cell.max_abs = stats.mismatched, stats.total, stats.max_abs
        cell.worst_output = stats.worst_output or None
        cell.per_output = None if (per_output := stats.per_output) is UNSET else per_output
    fail = data.failure
    cell.failure_kind = f"{fail.phase}: {fail.type}" if fail else None
    cell.failure_text = f"{fail.phase}: {fail.type}: {fail.message}" if fail else None
    cell.task_metric = None if (metric := data.task_metric) is UNSET else metric


_NONFINITE = attrgetter("nonfinite")
_DTYPE = attrgetter("dtype")
_NAME = attrgetter("name")


def _operator_facts(cell: CellRecord, data: Any, line: int) -> None:
    fallback = data.fallback
    cell.fallback_status = fallback.status
    cell.fallback_items = tuple(fallback.items) if fallback.items else ()
    executed = data.executed
    cell.executed_status = executed.status
    cell.executed_items = _shared(tuple(executed.items) if executed.items else ())


# Identical op lists (every eager cell of a run has much the same) are kept once.
_OP_LISTS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _shared(items: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple for each distinct list of short names (output dtypes, op lists)."""
    return _OP_LISTS.setdefault(items, items)


def _compile_facts(cell: CellRecord, data: Any, line: int) -> None:
    if not cell.compiled:
        cell.compiled, cell.compile_s = True, _opt(data.compile_first_result_s)
        cell.compile_cache = (_opt(data.cache_misses), _opt(data.cache_hits), data.cache_condition)
    graphs = _opt(data.graphs)
    if graphs or _opt(data.cache_hits) or _opt(data.cache_misses):
        cell.ran_graph = True
    elif graphs == 0 and cell.ran_graph is None:
        cell.ran_graph = False
    if data.graph_breaks:
        cell.graph_break_reasons += tuple(b.reason for b in data.graph_breaks)
    if data.recompiles:
        cell.recompiles_seen = True
    if data.recompile_limit_hit is True:
        cell.recompile_limit_hit = True


def _cold_facts(cell: CellRecord, cold: Any) -> None:
    check = _opt(cold.output_check)
    cell.cold_check_failed = check is not None and not check.passed
    cell.cold_full_caches = (
        tuple(f"{d.role} ({d.path})" for d in cold.cache_dirs if d.entries_before) if cold.cache_dirs else ()
    )


RESTART = "restart_populated_cache"


def _restart_facts(cell: CellRecord, cold: Any) -> None:
    """A restart's caches are full by design; its outputs are judged as a cold call's are."""
    cell.restart_s = cold.seconds
    check = _opt(cold.output_check)
    cell.cold_check_failed = cell.cold_check_failed or (check is not None and not check.passed)


_TIMED: dict[Any, tuple[str, tuple[str, ...] | None, tuple[str, ...], bool]] = {}


def _timed(
    cold: bool, region: Any, notes: Any, synchronized: bool
) -> tuple[str, tuple[str, ...] | None, tuple[str, ...], bool]:
    """(call, stages timed or None when not recorded, notes, synchronised), kept once per distinct value."""
    region = tuple(region) if region else (None if region is UNSET or region is None else ())
    fact = ("cold" if cold else "warm", region, tuple(notes) if notes else (), synchronized)
    return _TIMED.setdefault(fact, fact)


def _timing_facts(cell: CellRecord, data: Any, line: int) -> None:
    cold, warm = _opt(data.cold), _opt(data.warm)  # None where the line left them out
    if warm is not None or cell.scope is None:  # the warm series' scope: a cold call after it is not it
        cell.scope = data.scope
    if cold is not None and cold.cache_condition == RESTART:
        _restart_facts(cell, cold)
    elif cold is not None:
        cell.cold_s, cell.cold_condition = cold.seconds, cold.cache_condition
        _cold_facts(cell, cold)
    if (timed_out := _opt(data.cold_timed_out_after_s)) is not None:
        cell.cold_timed_out_after_s = timed_out
    if warm is not None:
        if cell.warm_samples:  # an earlier series: its fastest sample and its third quartile
            cell.warm_before = before_window([cell.warm_samples], cell.warm_before)
            if cell.warm_waited is not None and cell.warm_waited[1] > 0:
                rate = cell.warm_waited[0] / cell.warm_waited[1]
                cell.warm_before_wait = rate if cell.warm_before_wait is None else max(rate, cell.warm_before_wait)
        cell.warm_median_s, cell.warm_iqr_s = warm.median_s, warm.iqr_s
        cell.warm_samples, cell.warm_line = tuple(warm.samples_s), line
        cell.warm_series += 1
        stability = _opt(data.stability)
        # The log's verdict first, then the rules it failed or why it is unclassified: a rule's
        # name, which a log may write as it likes, is never read as the verdict.
        cell.warm_logged = (
            ("unstable", *(str(r)[:80] for r in stability.reasons[:8]))
            if stability is not None and stability.verdict == "unstable"
            else ("unclassified", str(stability.note or "")[:200])
            if stability is not None and stability.verdict == "unclassified"
            else None
        )
        host = _opt(data.host)
        cell.host = (
            tuple(sorted((k, v) for k, f in host.items() if isinstance(v := _opt(f.value), str) and v)) if host else ()
        )
        cell.warm_waited = waited_of(dict(cell.host)) if host else None
        cell.warm_wait_unread = cell.warm_waited is None and host is not None and "cpu_wait_s" in host
        memory = _opt(data.device_memory)
        peak = memory.peak_allocated_bytes if memory is not None and memory.status == "measured" else None
        cell.peak_device_bytes = peak if isinstance(peak, int) else None
    if data.eager_after_recompile_limit is True:
        cell.eager_after_recompile_limit = True
    # What each call's clock covered (a timed-out cold call timed nothing); one event may hold
    # a cold call and a warm series alike.
    for call in (cold, warm):
        if call is not None:
            cell.timed += (_timed(call is cold, data.timed_region, data.timed_notes, data.synchronized),)
    # The event's layout_achieved is of its warm calls (of its one call, where it has no warm
    # series); a cold call's own is in cold.
    if data.layout_achieved is False:
        cell.timing_layout_missed += ("warm" if warm is not None else "cold",)
    if cold is not None and cold.layout_achieved is False and "cold" not in cell.timing_layout_missed:
        cell.timing_layout_missed += ("cold",)


def before_window(series: Any, window: tuple[float, float] | None = None) -> tuple[float, float] | None:
    """The fastest sample and the highest third quartile of a cell's earlier warm series (each a
    list of seconds), widened from ``window``: what a later series of the cell is judged against
    (judge.timing_stability.attempts_apart); ``window`` itself when there are none."""
    for samples in series:
        if not samples:
            continue
        ordered = sorted(samples)
        low, high = ordered[0], quantile(ordered, 3, 4) if len(ordered) > 1 else ordered[0]
        window = (low, high) if window is None else (min(low, window[0]), max(high, window[1]))
    return window


def _step_facts(cell: CellRecord, data: Any, line: int) -> None:
    cell.trained = True
    cell.loss_off |= not data.loss_within
    cell.grads_off |= {g.name for g in data.grads if g.mismatched}


def _train_result_facts(cell: CellRecord, data: Any, line: int) -> None:
    cell.trained = True
    cell.params_off = {p.name: (p.mismatched, p.total) for p in data.params if p.mismatched}


def _no_facts(cell: CellRecord, data: Any, line: int) -> None:
    """Profiles and localisations are read from the events of the cells shown."""


def _localization_facts(cell: CellRecord, data: Any, line: int) -> None:
    cell.localized = True


# One entry per kind that names a cell (events.CASE_KINDS).
CELL_FACTS: dict[str, Callable[[CellRecord, Any, int], None]] = {
    "case_result": _result_facts,
    "operators": _operator_facts,
    "compile": _compile_facts,
    "timing": _timing_facts,
    "train_step": _step_facts,
    "train_result": _train_result_facts,
    "profile": _no_facts,
    "localization": _localization_facts,
    "generation": _no_facts,
}
