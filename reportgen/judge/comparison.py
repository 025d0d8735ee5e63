"""A baseline run against a candidate run of one workload: the migration question itself.

Plain dataclasses, no HTML. ``compare_runs`` refuses (``CompareRefused``) runs that cannot be
compared at all: different workloads, different model revisions or weights, or no cell whose
saved inputs are the same on both sides. Otherwise every planned cell of either run appears,
either compared side by side or listed as not comparable with the reason.

Timing is compared only where it means something: the cell passed on both sides and neither
side's performance acceptance is stopped (a mismatching cell without a verdict stops it, as in the report).
A cell with CPU fallback, a hit recompile limit or a different timing scope keeps its ratio
but is flagged and left out of the geometric mean, as is every cell when a timing criterion
(timing scope, warm repetitions, re-measure rounds) changed, and a cell whose warm loops ran under
other threads, affinity or governor on the two sides (judge.changes.setting_flags: every cell
where the change is run-wide); so is a cell whose warm series, in any run
of either side, the stability classifier does not call stable (judge.timing_stability).
A generation cell's two warm series (time to first token, decode per token) are compared by
the same rules, each a ratio of its own (``SeriesTiming``), counted and averaged with the rest.

Either side may have replicates: further runs of the same workload on the same target. The
first run of a side speaks for its statuses and criteria; the warm interval is built from every
run of the side whose cell passed, so it includes the variation between runs. With one run a
side, every verdict says it covers sampling within the two runs only.

Before any result the comparison lists every criterion the two runs declared differently
(judge.criteria); a cell judged under a changed correctness criterion says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Iterable, Sequence

from collector.timing import OFF_CLOCK_NOTE
from reportgen.contract import events as ev
from reportgen.judge.backend_docs import evidence_families, load_backend_docs, targets
from reportgen.judge.changes import (
    CODE_SCOPE,
    code_and_data_changes,
    FLAGGING_HOST_KEYS,
    SETTING_LABELS,
    TIMING_HOST_KEYS,
    compare_hosts,
    host_facts,
    host_timing_flag,
    replicate_changes,
    run_code_data,
    run_hashes,
    run_loop_settings,
    run_versions,
    setting_flags,
    side_host,
    uniform_settings,
    version_changes,
)
from reportgen.judge.criteria import (
    CriterionChange,
    changed_for,
    criteria_changes,
    declared_criteria,
    replicate_mismatch,
)
from reportgen.judge.disposition import Disposition, adapter_note, synthetic_weights
from reportgen.judge.judgement import failing_quantity
from reportgen.judge.identity import (
    DECLARED,
    Identity,
    InputsLookup,
    SIDES,
    cell_redefined,
    copied_run,
    inputs_identity,
    inputs_facts,
    planned_fields,
    same_weights,
    ORIGIN_WRONG,
    origin_change_words,
    origins_contradict,
    weights_facts,
)
from reportgen.judge.localization import judge_cell_localization
from reportgen.judge.intervals import (
    GeoMean,
    RatioInterval,
    classify,
    WARM_CALL,
    pooled_mean,
    interval_words,
    replicate_intervals,
    scope_text,
    speed_words,
)
from reportgen.judge.timing_stability import (
    figure_caveats,
    layout_caveat,
    sided_caveats,
    FLAG as STABILITY_FLAG,
    GENERATION_SERIES,
    TOTALS,
    series_words,
    UNCLASSIFIED_FLAG,
    generation_before,
    generation_timing,
    generation_waited,
    generation_warm,
    replicate_flags,
    side_median,
    series_flag,
    undecided_words,
    unsteady_kind,
)
from reportgen.model.annotations import Annotation
from reportgen.model.artifacts import ReferenceDistances, reference_distances
from reportgen.model.runmodel import CellRecord, RunModel, input_key, reference_of, shape_label
from reportgen.storage import is_remote

FAILED = ("mismatch", "nonfinite")
# What a compile met, from its own counters: a miss compiled at least one graph from scratch.
CACHE_MISS, CACHE_HIT, CACHE_UNKNOWN = "cache miss", "cache hit", "cache outcome not recorded"
SCOPE_FIELDS = ("preprocessing", "host_to_device", "output_retrieval", "synchronized")
Timed = tuple[tuple[str, ...], bool, tuple[str, ...]]  # stages, synchronised, how each was done (warm_timed)


class CompareRefused(ValueError):
    """The two runs cannot be compared; the message says why."""


@dataclass(frozen=True)
class Side:
    """One run as the comparison names it."""

    role: str
    run_id: str
    workload: str
    target: str
    family: str
    device: str
    synthetic: bool
    complete: bool
    disposition: str
    versions: dict[str, str]
    perf_stopped: tuple[str, ...]
    synthetic_weights: bool = False  # the workload says its weights are made up (WEIGHTS_ORIGIN)
    weights_unrecorded: bool = False  # its log does not say where its weights come from (before 1.4)
    adapter_note: str = ""  # how far the collector's adapter for this backend has been exercised
    replicates: tuple[str, ...] = ()  # every run of this side, the first being run_id

    @property
    def label(self) -> str:
        return f"{self.target} (ran on {self.family})" if self.family != self.target else self.target

    @property
    def short_name(self) -> str:
        """The side as every figure and sentence names it: its role and where it ran."""
        return f"{self.role} ({self.label})"


@dataclass(frozen=True)
class CellSide:
    """What one run says about one cell."""

    status: str
    max_abs: float | None = None
    max_rel: float | None = None
    mismatched: int | None = None
    total: int | None = None
    task_metric: str | None = None
    task_value: float | None = None
    task_passed: bool | None = None
    warm_median_s: float | None = None
    cold_s: float | None = None
    cold_condition: str | None = None
    cold_fresh: bool | None = None  # the cold first call was in a fresh process (None: not recorded)
    compile_s: float | None = None
    compile_cache: str = CACHE_UNKNOWN  # whether that compile missed or hit the compile cache
    peak_memory_bytes: int | None = None  # peak device memory over the reported warm series (1.3 logs on)
    fallback: tuple[str, ...] = ()
    recompile_limit: bool = False
    layout_missed: tuple[str, ...] = ()  # its timed calls ('warm', 'cold') fed another layout than the cell's
    scope: tuple[bool, ...] | None = None
    timed: Timed | None = None  # what the warm clock covered, and how (warm_timed)
    explained: bool = False
    verdict: str | None = None  # the owner's verdict on an explained failure: "accepted", "change-needed" or None
    failing: str = ""  # what a failed cell failed on, in words (judgement.failing_quantity)
    untested_reason: str | None = None  # e.g. "layout not measured" (see runmodel)
    diverges: str | None = None  # the localisation's first diverging module, as a phrase
    # Why its warm series decides nothing (judge/timing_stability.py); None: stable.
    timing_flag: str | None = None
    # What the threads waited for a CPU over the warm loop, and the loop's time (1.4 logs on).
    waited: tuple[float, float] | None = None


@dataclass(frozen=True)
class ReferenceAgreement:
    """Whether the two runs' references for one set of inputs agree, and how that is known."""

    agree: bool | None
    text: str
    key: str = ""


# The verdict of a ratio qualified by any other flag (a changed host, criterion or timing scope,
# CPU fallback, ...): its figures are shown, but it says neither faster nor slower.
FLAGGED = "flagged, not judged"


def _verdict(warm: RatioInterval, flags: tuple[str, ...]) -> str:
    """The interval's verdict, unless the timing decides nothing (a series unstable, or timing not
    classified: said as which) or another flag qualifies the ratio: then none."""
    return unsteady_kind(flags) or (FLAGGED if flags else warm.verdict)


def _undecided(
    warm: RatioInterval, flags: tuple[str, ...], medians: tuple[float | None, float | None]
) -> RatioInterval:
    """A series that decides nothing (unstable, or too short to classify) gets no interval, as
    `reportgen diff` gives it none: its ratio is of the two warm medians shown beside it (each
    side's geometric mean of its runs' logged medians, as diff's). Any other ratio is returned as it is."""
    base, cand = medians
    if not unsteady_kind(flags) or not base or cand is None:
        return warm
    return replace(warm, ratio=cand / base, low=None, high=None)


class _JudgedRatio:
    """A warm ratio and its flags, judged alike for a cell and for a generation series."""

    warm: RatioInterval
    flags: tuple[str, ...]

    @property
    def verdict(self) -> str:
        return _verdict(self.warm, self.flags)

    @property
    def in_geomean(self) -> bool:
        return not self.flags

    @property
    def no_interval(self) -> str:
        """Why the ratio has no interval, in words ('' when it has one)."""
        if self.warm.low is not None and self.warm.high is not None:
            return ""
        return "none: the timing decides nothing" if unsteady_kind(self.flags) else "too few samples"


@dataclass(frozen=True)
class CellTiming(_JudgedRatio):
    """Timing of one cell that passed on both sides."""

    warm: RatioInterval
    cold_ratio: float | None
    cold_note: str
    compile_ratio: float | None
    flags: tuple[str, ...]
    # Each side's warm median: the geometric mean of its runs' logged medians (a run's own with one run
    # a side), as `reportgen diff` gives it.
    medians: tuple[float, float]
    # Why each side's series decide nothing, its further replicates' included (unsteady_kind);
    # None: every run's series is stable.
    unsteady: tuple[str | None, str | None]


@dataclass(frozen=True)
class SeriesTiming(_JudgedRatio):
    """One warm series of a generation cell that passed on both sides (time to first token,
    decode per token): its ratio, judged as a cell's warm ratio is."""

    series: str  # GenerationTiming's field: "ttft_warm" or "decode_token"
    words: str  # "first token, warm", "decode per token" ("decode step (...)" for a batch: series_words)
    baseline_median_s: float  # each side's geometric mean of its runs' logged medians, as diff's
    candidate_median_s: float
    warm: RatioInterval
    flags: tuple[str, ...]


@dataclass(frozen=True)
class CellComparison:
    case: str
    shape: str
    layout: str
    dtype: str
    mode: str
    repeat_of: str | None
    baseline: CellSide
    candidate: CellSide
    reference: ReferenceAgreement
    timing: CellTiming | None
    timing_note: str
    changed_criteria: tuple[str, ...] = ()  # correctness criteria of this cell declared differently by the two runs
    generation: tuple[SeriesTiming, ...] = ()  # a generation cell's warm series, each compared
    # With replicates: where the runs of a side did not all give the cell the status of the
    # side's first run (which ``baseline`` and ``candidate`` hold), each such side's statuses by
    # run (replicate_statuses); "" where they agree.
    replicate_statuses: str = ""

    @property
    def correct_on_both(self) -> bool:
        return self.baseline.status == "pass" and self.candidate.status == "pass"

    @property
    def ratios(self) -> list[CellTiming | SeriesTiming]:
        """Every warm ratio of the cell: its warm series', then its generation series'."""
        return ([self.timing] if self.timing is not None else []) + list(self.generation)


@dataclass(frozen=True)
class NotComparable:
    case: str
    reason: str


@dataclass(frozen=True)
class Speedup:
    """Compiled over eager (eager warm median / compiled warm median) for one shape, per side."""

    shape: str
    layout: str
    dtype: str
    baseline: float | None  # None when not measured, or when a timing behind it decides nothing
    candidate: float | None
    # Why a side has no figure although both cells passed: 'unstable timing' when the eager or
    # the compiled warm series is not stable (a ratio of such series decides nothing), 'not
    # compared: performance acceptance is stopped on the <role>' on such a side, 'not compared: the
    # compiled cell hit its recompile limit' or '... CPU fallback' where either cell's timing is
    # flagged so in its ratio; None otherwise.
    baseline_flag: str | None = None
    candidate_flag: str | None = None


@dataclass(frozen=True)
class CompileMedian:
    """Median compile + first-result seconds of the new shapes whose compile met one cache outcome."""

    cache: str  # CACHE_MISS, CACHE_HIT or CACHE_UNKNOWN
    baseline_s: float | None
    candidate_s: float | None
    baseline_shapes: int
    candidate_shapes: int
    # A side with no compile of this outcome whose figure is its cold calls instead: a cache miss
    # measured only as the first call of a fresh process with an empty compile cache.
    baseline_cold: bool = False
    candidate_cold: bool = False


@dataclass(frozen=True)
class CompileCost:
    """Compile + first-result cost per new shape (cache checks excluded), per side, with cache
    misses and hits apart: a median over both would mix a compile from scratch with a lookup."""

    shapes: int  # compiled new shapes correct on both sides
    by_cache: tuple[CompileMedian, ...] = ()  # only the outcomes some side met, misses first


@dataclass
class Comparison:
    baseline: Side
    candidate: Side
    workload: str
    model_revision: str
    cells: list[CellComparison]
    not_comparable: list[NotComparable]
    geomean: GeoMean | None
    # Where the ratios are of several quantities, no geomean, and why (intervals.pooled_mean).
    geomean_unpooled: str
    geomean_series: tuple[GeoMean, ...]  # then each series' own mean, its quantity named
    compile_cost: CompileCost
    speedups: list[Speedup]
    notes: list[str] = field(default_factory=list)
    headline: str = ""
    declared_identity: bool = False  # weights or inputs known the same by declaration only (old logs)
    criteria: list[CriterionChange] = field(default_factory=list)  # named before any result
    # The weights are shown to be the same, and the logs give them two origins (identity.origins_contradict).
    origins_contradict: bool = False
    code_scope: ClassVar[str] = CODE_SCOPE  # what code_and_data covers
    # The pages' own versions (python, torch, each target's packages), then code and data
    # (collector, git state, files read, weights, inputs) and host (device,
    # environment variables, other versions, threads, load) that differ (judge.changes): named
    # before any result, as diff names them.
    versions: list[tuple[str, str, str]] = field(default_factory=list)
    code_and_data: list[tuple[str, str, str]] = field(default_factory=list)
    host: list[tuple[str, str, str]] = field(default_factory=list)
    # Where a run recorded no host facts: that a host change cannot be ruled out (changes.compare_hosts).
    host_unknown: str = ""

    @property
    def timing_stop(self) -> TimingStop | None:
        """Whether performance acceptance is stopped on a side: then no timing of the pair,
        warm, compile or compiled-over-eager, decides anything (``timing_stop``)."""
        return timing_stop((s.role, s.run_id, len(s.perf_stopped)) for s in (self.baseline, self.candidate))

    @property
    def timed(self) -> list[CellComparison]:
        return [c for c in self.cells if c.timing is not None]

    @property
    def hardware_not_run(self) -> tuple[str, ...]:
        """The hardware of each target a reader may assume (a Neuron or Trainium result) that
        neither side ran on: each side is evidence for its own machine only."""
        families = {s.family for s in (self.baseline, self.candidate)}
        return tuple(
            docs.hardware
            for docs in map(load_backend_docs, targets())
            if docs.hardware and not families & set(docs.families)
        )

    @property
    def generation(self) -> list[CellComparison]:
        """Compared generation cells with a ratio of their warm series."""
        return [c for c in self.cells if c.generation]

    @property
    def ratios(self) -> list[CellTiming | SeriesTiming]:
        """Every warm ratio compared, cell by cell: each tallies as one verdict."""
        return [r for c in self.cells for r in c.ratios]

    @property
    def flagged(self) -> list[CellComparison]:
        return [c for c in self.cells if any(r.flags for r in c.ratios)]

    @property
    def unstable(self) -> list[CellComparison]:
        """Compared cells with a ratio whose warm series on either side is unstable."""
        return [c for c in self.cells if any(r.verdict == STABILITY_FLAG for r in c.ratios)]

    @property
    def unclassified(self) -> list[CellComparison]:
        """Compared cells, not unstable, with a ratio whose timing was not classified (a warm
        series too short, a ratio beyond range): it decides nothing, and is not said unstable."""
        return [
            c
            for c in self.cells
            if any(r.verdict == UNCLASSIFIED_FLAG for r in c.ratios)
            and not any(r.verdict == STABILITY_FLAG for r in c.ratios)
        ]

    @property
    def geomean_has_series(self) -> bool:
        """Whether generation series are among the ratios the geometric mean is over."""
        return any(s.in_geomean for c in self.generation for s in c.generation)

    @property
    def geomean_counts(self) -> str:
        """What the geometric mean is over: '4 cells', or '6 ratios' where generation series are in it."""
        geo = self.geomean
        if geo is None:
            return ""
        unit = "ratio" if self.geomean_has_series else "cell"
        return f"{geo.ratios} {unit}{'s' if geo.ratios != 1 else ''}" + (
            f" of {geo.quantity} only" if geo.quantity else ""
        )

    @property
    def geomean_cells(self) -> int:
        """The compared cells with a ratio in the geometric mean (a generation cell may give two)."""
        return sum(1 for c in self.cells if any(r.in_geomean for r in c.ratios))

    @property
    def geomean_coverage(self) -> str:
        """What the geometric mean covers, counted as cells as the pages' 'cells covered' says:
        the compared cells with a ratio in it, of all compared ('3 of 4 compared'), then what is
        left out. Where generation series are among its ratios (a generation cell gives two),
        the ratios are named beside the cells, and what is left out is counted in ratios, since a
        cell with one series left out is still covered by its other ('4 of 6 compared cells (7
        ratios: ...); 1 ratio with unstable timing left out'). '' without a geometric mean."""
        if self.geomean is None:
            return ""
        covered = self.geomean_cells
        if not self.geomean_has_series:
            unsteady = {c.case for c in self.unstable + self.unclassified}
            flagged = len([c for c in self.flagged if c.case not in unsteady])
            undecided = undecided_words(len(self.unstable), len(self.unclassified), cells=False)
            return (
                f"{covered} of {len(self.cells)} compared"
                + (f"; {flagged} flagged cell(s) left out" if flagged else "")
                + (f"; {undecided} left out" if undecided else "")
            )
        out = [r.verdict for r in self.ratios if not r.in_geomean]
        unstable, unclassified = out.count(STABILITY_FLAG), out.count(UNCLASSIFIED_FLAG)
        flagged = len(out) - unstable - unclassified
        undecided = undecided_words(unstable, unclassified, noun=("ratio", "ratios"))
        return (
            f"{covered} of {len(self.cells)} compared cells ({self.geomean_counts}: a generation cell gives two, "
            "first token and decode per token)"
            + (f"; {flagged} flagged ratio{'s' if flagged != 1 else ''} left out" if flagged else "")
            + (f"; {undecided} left out" if undecided else "")
        )

    @property
    def interval_scope(self) -> str:
        """What variation the warm intervals cover: one run a side, or replicates."""
        return scope_text(len(self.baseline.replicates) or 1, len(self.candidate.replicates) or 1)

    def verdict_counts(self) -> dict[str, int]:
        counts = {
            "faster": 0,
            "slower": 0,
            "no clear difference": 0,
            STABILITY_FLAG: 0,
            UNCLASSIFIED_FLAG: 0,
            FLAGGED: 0,
        }
        for ratio in self.ratios:
            counts[ratio.verdict] += 1
        return counts


@dataclass(frozen=True)
class JudgedSide:
    """What the comparison needs of one judged run."""

    run: RunModel
    notes: dict[str, Annotation]
    disposition: Disposition


# --- gathering -----------------------------------------------------------------------------


def _perf_stopped(side: JudgedSide) -> tuple[str, ...]:
    """The disposition's rule: mismatching or errored cells without a verdict stop performance acceptance."""
    return side.disposition.performance_stopped


@dataclass(frozen=True)
class TimingStop:
    """The sides of a pair whose performance acceptance is stopped: a run of theirs holds
    mismatching or errored cells without a verdict (disposition.performance_stopped). Then no timing of the
    pair is compared, by `reportgen compare` or by `reportgen diff`: no ratio, no interval, no
    verdict, only this reason. Either command asks ``timing_stop`` and says what it answers."""

    runs: tuple[tuple[str, str, int], ...]  # (role, run id, its mismatching or errored cells without a verdict)

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(role for role, _, _ in self.runs))

    @property
    def note(self) -> str:
        """Why a cell's timing is not compared, as each cell says it."""
        return f"not compared: performance acceptance is stopped on the {' and '.join(self.roles)}"

    @property
    def reason(self) -> str:
        return f"performance acceptance is stopped on the {' and '.join(self.roles)} until the mismatching or errored cells have a verdict"

    @property
    def headline(self) -> str:
        """What an answer says in place of any timing result."""
        return f"timing not compared: {self.reason}"

    @property
    def runs_text(self) -> str:
        """Which runs stop it: 'after run x: 2 mismatching or errored cell(s) without a verdict; ...'."""
        return "; ".join(
            f"{role} run {run_id}: {count} mismatching or errored cell(s) without a verdict"
            for role, run_id, count in self.runs
        )


NOT_PLANNED = "not planned"


def timing_stop(runs: Iterable[tuple[str, str, int]]) -> TimingStop | None:
    """Whether the pair's timings may be compared: ``runs`` holds every run of both sides, each
    as (role, run id, how many mismatching cells it holds without a verdict). None: they may."""
    stopped = tuple((role, run_id, count) for role, run_id, count in runs if count)
    return TimingStop(stopped) if stopped else None


def nothing_judged(ratios: int) -> str:
    """What a comparison says where no ratio was judged (each decides nothing: unstable, flagged)
    or none was compared at all: never a verdict such as 'no clear change'."""
    return "no unflagged, stable timing to summarise" if ratios else "no timing comparable"


def _side(role: str, side: JudgedSide) -> Side:
    run = side.run
    env = run.environment
    device = "unknown"
    if env is not None:
        fact = env.device.get("device_name") or env.device.get("instance_type")
        device = fact.value if fact is not None and fact.value else "unknown"
    versions = {k: v.value for k, v in env.versions.items() if v.value} if env else {}
    return Side(
        role=role,
        run_id=run.start.run_id,
        workload=run.start.workload,
        target=run.plan.target if run.plan else run.start.target,
        family=env.backend_family if env else "unknown",
        device=device,
        synthetic=run.synthetic,
        synthetic_weights=synthetic_weights(run),
        weights_unrecorded=run.plan is not None and run.plan.weights_origin is None,
        complete=run.complete,
        disposition=side.disposition.headline,
        versions=versions,
        perf_stopped=_perf_stopped(side),
        adapter_note=adapter_note(run),
    )


def _scope(cell: CellRecord, run: RunModel) -> tuple[bool, ...] | None:
    scope = cell.scope or (run.plan.timing_scope if run.plan else None)
    return tuple(getattr(scope, name) for name in SCOPE_FIELDS) if scope is not None else None


def warm_timed(cell: CellRecord) -> Timed | None:
    """What the clock of the cell's last warm series covered, as the collector recorded it: the
    stages timed, whether each sample ended on a device synchronisation, and how the stages were
    done (timed_notes, e.g. 'the output is copied to the host inside the timed region'); None
    when the log did not record them (before schema 1.1) or the cell has no warm series. Two runs
    whose warm clocks covered different stages, did them otherwise, or one not synchronised,
    time different things, whatever their declared scope says."""
    for call, region, notes, synchronized in reversed(cell.timed):
        if call == "warm":
            # Work done off the clock (inputs copied to a device between samples) is no part of
            # what the clock covered: two clocks that differ only there time the same stages.
            inside = tuple(note for note in notes if note != OFF_CLOCK_NOTE)
            return None if region is None else (region, synchronized, inside)
    return None


def timed_words(timed: Timed | None) -> str | None:
    """warm_timed in words: 'host_to_device + model_call, not synchronised' and, where the log
    says how stages were done, '(NOTE; NOTE)' (None: not recorded)."""
    if timed is None:
        return None
    notes = f" ({'; '.join(note[:200] for note in timed[2][:8])})" if timed[2] else ""
    return f"{' + '.join(timed[0]) or 'nothing'}" + ("" if timed[1] else ", not synchronised") + notes


def timed_flag(before: str | None, after: str | None, roles: tuple[str, str]) -> str | None:
    """The flag on a ratio of two warm series whose clocks covered different stages (or one not
    synchronised): they time different things. When one log recorded what its clock covered and
    the other did not (a collector before schema 1.1), that it is the same cannot be told either;
    when neither did, the two come from collectors that time alike and nothing is flagged."""
    if before == after:
        return None
    if before is None or after is None:
        unrecorded = roles[0] if before is None else roles[1]
        return f"timed region not recorded on the {unrecorded}: what its clock covered cannot be compared"
    return f"different timed region ({roles[0]}: {before}; {roles[1]}: {after})"


# The schema version from which a warm loop's (and warm generations') host records what the
# threads waited for a CPU (cpu_wait_s, loop_wall_s): a log before it cannot say.
CPU_WAIT_FROM = (1, 4)


def wait_recordable(schema_version: str) -> bool:
    """Whether a log of this schema records the CPU wait of its warm loops (1.4 on): where one
    did not (a figure its host could not read), it could have, and contention was not judged."""
    return ev.schema_tuple(schema_version) >= CPU_WAIT_FROM


def wait_flag(
    before: Sequence[object | None],
    after: Sequence[object | None],
    roles: tuple[str, str],
    recordable: tuple[Sequence[bool], Sequence[bool]] = ((), ()),
) -> str | None:
    """The flag on a ratio of warm series when a run (each side's, replicates included) did not
    record what its threads waited for a CPU, so contention was not judged there: some runs
    recorded it and others did not (a collector before schema 1.4, or a figure it could not
    read), or none did though a log could have (``recordable``: per run of each side, in order,
    whether its schema records it, wait_recordable). None when every run recorded it, or when
    none did and no log could (every one before 1.4: the figure did not exist)."""
    runs = [
        (wait, could)
        for side, coulds in zip((before, after), recordable)
        for wait, could in zip(side, [*coulds, *[False] * len(side)])
    ]
    recorded = [w is not None for w, _ in runs]
    if all(recorded) or not any(recorded) and not any(could for _, could in runs):
        return None
    lacking = [role for role, side in zip(roles, (before, after)) if any(w is None for w in side)]
    return f"CPU wait not recorded on the {' and '.join(lacking)}: contention not judged there"


def _cell_side(cell: CellRecord, run: RunModel, notes: dict[str, Annotation]) -> CellSide:
    result = cell.result if cell.result_line is not None else None
    metric = result.task_metric if result is not None else None
    stats = result.error_stats if result is not None else None
    cold = cell.cold if cell.cold_s is not None else None
    compile_event = cell.compile if cell.planned.mode == "compiled" else None
    return CellSide(
        status=cell.status,
        max_abs=stats.max_abs if stats else None,
        max_rel=stats.max_rel if stats else None,
        mismatched=stats.mismatched if stats else None,
        total=stats.total if stats else None,
        task_metric=metric.name if metric else None,
        task_value=metric.value if metric else None,
        task_passed=metric.passed if metric else None,
        warm_median_s=cell.warm_median_s,
        cold_s=cell.cold_s,
        cold_condition=cold.cache_condition if cold else None,
        cold_fresh=cold.fresh_process if cold else None,
        compile_s=compile_event.compile_first_result_s if compile_event else None,
        compile_cache=cache_outcome(compile_event),
        peak_memory_bytes=cell.peak_device_bytes,
        fallback=tuple(cell.fallback_items),
        recompile_limit=cell.recompile_limit_hit or cell.eager_after_recompile_limit,
        layout_missed=cell.timing_layout_missed,
        scope=_scope(cell, run),
        timed=warm_timed(cell),
        explained=cell.case in notes,
        verdict=notes[cell.case].verdict if cell.case in notes else None,
        failing=failing_quantity(cell) if cell.status in FAILED else "",
        untested_reason=cell.untested_reason if cell.status == "untested" else None,
        diverges=_diverges(cell),
        waited=cell.warm_waited,
        timing_flag=series_flag(cell.warm_samples, cell.warm_waited, before=cell.warm_before, logged=cell.warm_logged)
        if cell.warm_median_s is not None and cell.warm_samples
        else None,
    )


def cache_outcome(compile_event: Any) -> str:
    """A compile with any miss compiled from scratch; one with hits and no miss reused a cache;
    without counters only an empty cache folder before a cold call tells."""
    if compile_event is None:
        return CACHE_UNKNOWN
    return cache_outcome_of(compile_event.cache_misses, compile_event.cache_hits, compile_event.cache_condition)


def cache_outcome_of(misses: int | None, hits: int | None, condition: str) -> str:
    """cache_outcome from a compile's counters and condition as the reader kept them."""
    if misses or condition == "fresh_process_empty_cache":
        return CACHE_MISS
    if hits:
        return CACHE_HIT
    return CACHE_UNKNOWN


def _diverges(cell: CellRecord) -> str | None:
    """Where a localised cell's error arises (the judge's phrase for it), or None when not localised."""
    found = judge_cell_localization(cell) if cell.localized else None
    return None if found is None else found.brief


def reference_contents(run: RunModel) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The reference outputs' content hash per input shape: run-wide, and per cell."""
    shared: dict[str, str] = {}
    per_case: dict[str, dict[str, str]] = {}
    for artifact in run.artifacts:
        if artifact.role == "reference_output" and artifact.content_by_key:
            if artifact.case is None:
                shared = artifact.content_by_key
            else:
                per_case[artifact.case] = artifact.content_by_key
    return shared, per_case


def _reference_outputs(run: RunModel) -> tuple[str | None, dict[str, str]]:
    shared, per_case = None, {}
    for artifact in run.artifacts:
        if artifact.role == "reference_output":
            if artifact.case is None:
                shared = artifact.sha256
            else:
                per_case[artifact.case] = artifact.sha256
    return shared, per_case


def _references(run: RunModel) -> dict[str, ev.Reference]:
    return {r.shape: r for r in run.references}


class _Context:
    """Per-run lookups made once."""

    def __init__(self, side: JudgedSide) -> None:
        run = side.run
        self.side = side
        self.cells = {c.case: c for c in run.cells}
        self.inputs = InputsLookup(run)
        self.reference_outputs = _reference_outputs(run)
        self.reference_contents = reference_contents(run)
        self.references = _references(run)
        self.generation = {c.case for c in run.cells_with("generation")}  # their series are read from their events
        # The settings each cell's warm loop ran under (threads, affinity, CPU count, governor).
        self.settings = dict(run_loop_settings(run))

    def reference_for(self, planned: ev.PlannedCell) -> ev.Reference | None:
        """The reference event of the cell's inputs (keyed by input key, or with the dtype too)."""
        return reference_of(self.references, planned)

    def reference_content(self, case: str, key: str) -> str | None:
        shared, per_case = self.reference_contents
        return per_case.get(case, shared).get(key)

    def reference_sha(self, case: str) -> str | None:
        shared, per_case = self.reference_outputs
        return per_case.get(case, shared)


def _reference_distances(base: _Context, cand: _Context) -> ReferenceDistances | None:
    """Distances between the two saved reference files, when both runs saved one and they differ."""
    found = []
    for context in (base, cand):
        run = context.side.run
        artifact = next((a for a in run.artifacts if a.role == "reference_output" and a.case is None), None)
        found.append((Path(run.path).parent, artifact))
    (dir_a, art_a), (dir_b, art_b) = found
    if art_a is None or art_b is None or art_a.sha256 == art_b.sha256:
        return None
    if any(is_remote(c.side.run.path) for c in (base, cand)):
        return ReferenceDistances(reason="saved tensors of a log in object storage are not fetched")
    return reference_distances(dir_a, art_a, dir_b, art_b)


def _reference_agreement(
    cell: CellRecord, base: _Context, cand: _Context, distances: ReferenceDistances | None
) -> ReferenceAgreement:
    key = input_key(cell.planned)
    a, b = (context.reference_for(cell.planned) for context in (base, cand))
    if a is None or b is None:
        missing = " and ".join(role for role, ref in (("baseline", a), ("candidate", b)) if ref is None)
        return ReferenceAgreement(None, f"not measured: no reference event for {key} on the {missing}", key)
    if (a.device, a.dtype) != (b.device, b.dtype):
        return ReferenceAgreement(
            False, f"different references: {a.device} {a.dtype} against {b.device} {b.dtype}", key
        )
    same = f"same reference ({a.device} {a.dtype})"
    content_a, content_b = base.reference_content(cell.case, key), cand.reference_content(cell.case, key)
    if content_a is not None and content_a == content_b:
        return ReferenceAgreement(True, f"{same}; saved reference outputs for {key} identical by content (sha256)", key)
    sha_a, sha_b = base.reference_sha(cell.case), cand.reference_sha(cell.case)
    if sha_a is not None and sha_a == sha_b:
        return ReferenceAgreement(True, f"{same}; saved reference outputs identical (sha256)", key)
    if sha_a is not None and sha_b is not None:
        if distances is None or distances.reason:
            why = distances.reason if distances is not None else "no run-wide reference file"
            # Bytes that differ with no distance measured prove nothing either way: agreement unknown.
            return ReferenceAgreement(
                None,
                f"{same}; saved reference outputs differ in bytes, distance between them not measured ({why})",
                key,
            )
        if key not in distances.by_key:
            return ReferenceAgreement(
                None,
                f"{same}; saved reference outputs differ in bytes, distance for {key} not measured (not in both files)",
                key,
            )
        distance = distances.by_key[key]
        if distance is None:
            return ReferenceAgreement(
                False, f"{same}; saved reference outputs for {key} differ in shape or in non-finite values", key
            )
        # Two references that differ by more than a cell's atol can turn its verdict on their own:
        # they do not agree, however small the difference reads (the rtol part, relative to each
        # element, is not taken: the bound errs toward naming a difference).
        atol = min(
            (
                t.atol
                for c in (base, cand)
                if c.side.run.plan and (t := c.side.run.plan.tolerances.get(cell.planned.dtype))
            ),
            default=None,
        )
        if atol is not None and distance > atol:
            return ReferenceAgreement(
                False,
                f"{same}; saved reference outputs for {key} differ by up to {distance:.3g} (max abs), beyond the atol "
                f"{atol:g} that {cell.planned.dtype} cells are judged by",
                key,
            )
        return ReferenceAgreement(
            True, f"{same}; saved reference outputs differ by at most {distance:.3g} (max abs, {key})", key
        )
    # A side that saved no reference outputs leaves nothing to compare: the same device and dtype
    # say how each reference was computed, not that the two computed the same values.
    unsaved = " and ".join(role for role, sha in (("baseline", sha_a), ("candidate", sha_b)) if sha is None)
    return ReferenceAgreement(None, f"{same}; not measured: no saved reference outputs on the {unsaved}", key)


def _model_identity(run: RunModel) -> tuple[str, str | None]:
    if run.plan is None:
        raise CompareRefused(f"{run.start.run_id}: no plan recorded, so its cells and model revision are unknown")
    return run.plan.model_revision, run.plan.weights_sha256


def _check_same_model(base: RunModel, cand: RunModel, names: tuple[str, str] = SIDES) -> Identity:
    """The weights' identity (how it is known); refuses different workloads, revisions or
    weights. ``names``: what the refusal calls the two runs (the sides, or a side's replicates)."""
    first, second = names
    if base.start.workload != cand.start.workload:
        raise CompareRefused(
            f"different workloads: {first} {base.start.workload!r}, {second} {cand.start.workload!r}; nothing is compared across workloads"
        )
    rev_a, rev_b = _model_identity(base)[0], _model_identity(cand)[0]
    if rev_a != rev_b:
        raise CompareRefused(f"different model revisions: {first} {rev_a!r}, {second} {rev_b!r}")
    weights = same_weights(base, cand, names)
    if not weights.same:
        raise CompareRefused(weights.text)
    return weights


def _unchecked(sides: Sequence[tuple[str, RunModel]]) -> str:
    """Which side's weights or inputs files lie beside its log unchecked against the hashes the
    identity rests on, in words ('' when none): the hashes are that log's word only."""
    said = []
    for role, run in sides:
        paths = {a.path for a in run.artifacts if a.role in ("weights", "inputs")} & set(run.unchecked_files)
        if paths:
            said.append(f"the {role}'s {', '.join(sorted(paths))[:200]}")
    return (
        f" The files beside the logs were not checked against these hashes ({'; '.join(said)}: see the log warnings): "
        "the sameness rests on the logs' word there."
        if said
        else ""
    )


def _identity_notes(weights: Identity, inputs: list[Identity], unchecked: str = "") -> list[str]:
    """How the weights and inputs are known to be the same: said first, above any timing."""
    notes = [weights.text[:1].upper() + weights.text[1:] + "." + unchecked]
    declared = [i for i in inputs if i.basis == DECLARED]
    if declared:
        notes.append(f"{len(declared)} of {len(inputs)} compared cell(s): {declared[0].text}.")
    bases = sorted({i.basis for i in inputs if i.basis != DECLARED})
    if bases:
        notes.append(
            f"Inputs of {len(inputs) - len(declared)} compared cell(s): the same by {' or '.join('content sha256' if b == 'content' else 'file sha256' for b in bases)}."
        )
    return notes


def _timing_flags(
    base: CellSide,
    cand: CellSide,
    scopes: tuple[object, object] | None = None,
    unsteady: tuple[str | None, str | None] | None = None,
    waits: tuple[Sequence[object | None], Sequence[object | None]] | None = None,
    recordable: tuple[Sequence[bool], Sequence[bool]] = ((), ()),
) -> tuple[str, ...]:
    """What qualifies a ratio of the two sides' cells: fallback, a hit recompile limit, a warm
    loop fed another layout than the cell's, a different timing scope, a series that decides nothing. ``scopes`` and ``unsteady`` stand for
    the warm series' scope and stability flag when the ratio is of another series (generation);
    ``waits`` each run's CPU wait by side, ``recordable`` whether each run's log could record it."""
    explicit = scopes  # another series' scopes: the warm clock's region is not that series'
    scopes = (base.scope, cand.scope) if scopes is None else scopes
    unsteady = (base.timing_flag, cand.timing_flag) if unsteady is None else unsteady
    flags = []
    caveats = (
        (
            role,
            figure_caveats(
                bool(s.fallback), s.recompile_limit, ["warm"] if explicit is None and "warm" in s.layout_missed else ()
            ),
        )
        for role, s in (("baseline", base), ("candidate", cand))
    )
    flags += [f"{caveat} on the {' and '.join(sides)}" for caveat, sides in sided_caveats(caveats)]
    if scopes[0] != scopes[1]:
        flags.append("different timing scope")
    elif explicit is None and (flag := timed_flag(timed_words(base.timed), timed_words(cand.timed), SIDES)):
        flags.append(flag)
    if flag := wait_flag(*(waits if waits is not None else ([base.waited], [cand.waited])), SIDES, recordable):
        flags.append(flag)
    for role, flag in zip(SIDES, unsteady):
        if flag:  # 'unstable timing: ...' or 'timing not classified: ...'
            flags.append(f"{flag} on the {role}")
    return tuple(flags)


def _ratio(a: float | None, b: float | None) -> float | None:
    return b / a if a and b is not None and a > 0 else None


def _not_compared(base: CellSide, cand: CellSide, stop: TimingStop | None) -> str | None:
    """Why none of a cell's timings is compared (untested, failed, acceptance stopped), or None."""
    untested = [
        f"untested on the {role} ({side.untested_reason})"
        for role, side in (("baseline", base), ("candidate", cand))
        if side.untested_reason
    ]
    if untested:
        return f"not compared: {' and '.join(untested)}"
    if base.status != "pass" or cand.status != "pass":
        return f"not compared: passed on {'neither side' if base.status != 'pass' and cand.status != 'pass' else ('the candidate only' if base.status != 'pass' else 'the baseline only')}"
    if stop is not None:
        return stop.note
    return None


def _check_replicates(role: str, first: JudgedSide, more: list[JudgedSide], seen: set[str]) -> None:
    """Replicates of a side are further runs of its workload, model and target, each given once."""
    for other in [first, *more]:
        run_id = other.run.start.run_id
        if run_id in seen:
            raise CompareRefused(f"{run_id} is given twice: a run is one replicate of one side")
        seen.add(run_id)
    for other in more:
        _check_same_model(first.run, other.run, (f"the {role}'s first run", f"its replicate {other.run.start.run_id}"))
        target = lambda run: run.plan.target if run.plan else run.start.target  # noqa: E731
        if target(other.run) != target(first.run):
            raise CompareRefused(
                f"{other.run.start.run_id} ran for {target(other.run)}, the {role}'s first run for {target(first.run)}: a {role}'s replicates are runs on one target"
            )
        family = lambda run: run.environment.backend_family if run.environment else "unknown"  # noqa: E731
        if family(other.run) != family(first.run):
            raise CompareRefused(
                f"{other.run.start.run_id} ran on {family(other.run)}, the {role}'s first run on {family(first.run)}: a {role}'s replicates are runs on one backend"
            )
        differ = [c.text for c in replicate_mismatch(declared_criteria(first.run), declared_criteria(other.run))]
        differ += replicate_changes(_replicate_facts(first.run), _replicate_facts(other.run))
        if differ:
            raise CompareRefused(
                f"{other.run.start.run_id} is no replicate of {first.run.start.run_id}: {'; '.join(differ)}"
            )


def _replicate_facts(run: RunModel) -> tuple[Any, ...]:
    return run_versions(run), run_code_data(run), run_hashes(run), host_facts(run)


def compare_runs(
    baseline: JudgedSide,
    candidate: JudgedSide,
    baseline_replicates: tuple[JudgedSide, ...] = (),
    candidate_replicates: tuple[JudgedSide, ...] = (),
) -> Comparison:
    """The comparison of two judged runs (each with optional replicates); raises CompareRefused when none is possible."""
    weights = _check_same_model(baseline.run, candidate.run)
    seen: set[str] = set()
    _check_replicates("baseline", baseline, list(baseline_replicates), seen)
    _check_replicates("candidate", candidate, list(candidate_replicates), seen)
    sides_runs = ([baseline, *baseline_replicates], [candidate, *candidate_replicates])
    # Each run a measurement of its own: within a side (a replicate) and across the two (a
    # candidate that is the baseline's copy measured nothing on its target; synthetic runs, test
    # fixtures that are evidence of nothing and say so, are built alike).
    measured = not any(r.run.synthetic for runs in sides_runs for r in runs)
    for n, checked in enumerate((*sides_runs, *([sides_runs[0] + sides_runs[1]] if measured else []))):
        copied = copied_run(
            [(r.run.start.run_id, {c.case: c.warm_samples for c in r.run.cells}) for r in checked],
            whole_run=n < 2,  # across the sides: distinct samples alike only (copied_run)
        )
        if copied is not None:
            raise CompareRefused(copied)
    base, cand = _Context(baseline), _Context(candidate)
    inputs: list[Identity] = []
    extra = ([_Context(r) for r in baseline_replicates], [_Context(r) for r in candidate_replicates])

    def side_of(role: str, first: JudgedSide, more: tuple[JudgedSide, ...]) -> Side:
        runs = [r.run for r in (first, *more)]
        return replace(
            _side(role, first),
            # A side is a synthetic fixture, or of synthetic weights, or incomplete, where any of
            # its runs is: a fixture given as a second replicate went unsaid, its samples in the
            # side's interval.
            synthetic=any(run.synthetic for run in runs),
            synthetic_weights=any(synthetic_weights(run) for run in runs),
            complete=all(run.complete for run in runs),
            replicates=tuple(r.run.start.run_id for r in (first, *more)),
            # Any run of a side with mismatching cells awaiting a verdict stops its performance
            # acceptance: its timings are in the side's interval.
            perf_stopped=tuple(dict.fromkeys(c for r in (first, *more) for c in _perf_stopped(r))),
        )

    sides = (side_of("baseline", baseline, baseline_replicates), side_of("candidate", candidate, candidate_replicates))
    criteria = criteria_changes(declared_criteria(baseline.run), declared_criteria(candidate.run))
    contradict = origins_contradict(weights_facts(baseline.run), weights_facts(candidate.run), weights)
    if contradict:  # one weights file cannot be both synthetic and pretrained: a contradiction, not a change
        criteria = [
            replace(c, text=origin_change_words(c.text, weights)) if c.key == "weights_origin" else c for c in criteria
        ]
    stop = timing_stop(
        (role, r.run.start.run_id, len(_perf_stopped(r)))
        for role, runs in (
            ("baseline", (baseline, *baseline_replicates)),
            ("candidate", (candidate, *candidate_replicates)),
        )
        for r in runs
    )
    pending: list[tuple[CellRecord, CellSide, CellSide, ReferenceAgreement, str | None, bool]] = []
    not_comparable: list[NotComparable] = []
    distances = _reference_distances(base, cand)
    order = list(base.cells) + [c for c in cand.cells if c not in base.cells]
    for case in order:
        a, b = base.cells.get(case), cand.cells.get(case)
        if a is None or b is None:
            not_comparable.append(
                NotComparable(case, f"planned on the {'baseline' if b is None else 'candidate'} only")
            )
            continue
        redefined = cell_redefined(planned_fields(a.planned), planned_fields(b.planned))
        if redefined is not None:  # as `reportgen diff` asks it of the same two cells
            not_comparable.append(NotComparable(case, redefined))
            continue
        key = input_key(a.planned)
        facts = inputs_facts(base.inputs.for_case(case), key), inputs_facts(cand.inputs.for_case(case), key)
        same = inputs_identity(*facts)  # as `reportgen diff` asks it of the same two cells
        if not same.same:
            not_comparable.append(NotComparable(case, same.text))
            continue
        inputs.append(same)
        side_a, side_b = _cell_side(a, baseline.run, baseline.notes), _cell_side(b, candidate.run, candidate.notes)
        # Why none of its timings is compared; a run without warm samples is said by _with_timings.
        gate = _not_compared(side_a, side_b, stop)
        pending.append((a, side_a, side_b, _reference_agreement(a, base, cand, distances), gate, gate is None))
    if not pending:
        reasons = sorted({n.reason.split(":")[0] for n in not_comparable})
        raise CompareRefused(
            f"no cell shares its inputs on both sides ({'; '.join(reasons) or 'no cells'}); nothing to compare"
        )
    host, host_unknown = compare_hosts(
        side_host([(r.run.start.run_id, host_facts(r.run)) for r in (baseline, *baseline_replicates)]),
        side_host([(r.run.start.run_id, host_facts(r.run)) for r in (candidate, *candidate_replicates)]),
        SIDES,
    )
    # A changed timing criterion (timing scope, warm repetitions, re-measure rounds) qualifies
    # every ratio, as in `reportgen diff`: the two sides were not timed alike. Two runs on one
    # backend are also flagged where the machine was recorded differently, as diff flags them;
    # two backends are other machines by design, named but not flagged.
    flags = [f"changed criterion: {c.text}" for c in criteria if c.judges == "timing"]
    same_backend = sides[0].family == sides[1].family and sides[0].target == sides[1].target
    keys = FLAGGING_HOST_KEYS if same_backend else TIMING_HOST_KEYS
    # A setting every loop of each side ran under alike flags every ratio where it changed; any
    # other is compared cell by cell (threads changed for one cell flag that cell's ratios only).
    uniform = [
        uniform_settings(s for c in contexts for s in c.settings.values())
        for contexts in ([base, *extra[0]], [cand, *extra[1]])
    ]
    run_wide = frozenset(label for label in SETTING_LABELS if label in uniform[0] and label in uniform[1])
    flags += [flag] if (flag := host_timing_flag(host, keys, run_wide)) else []
    cells = _with_timings(pending, base, cand, extra, tuple(flags), (keys, run_wide))
    runs = ([base, *extra[0]], [cand, *extra[1]])
    cells = [
        replace(
            c,
            changed_criteria=tuple(x.text for x in changed_for(criteria, c.dtype)),
            replicate_statuses=_statuses(c.case, runs) or "",
        )
        for c in cells
    ]
    geomean, unpooled, series_means = pooled_mean(
        [(_series_name(r), r.warm) for c in cells for r in c.ratios if r.in_geomean]
    )
    comparison = Comparison(
        baseline=sides[0],
        candidate=sides[1],
        workload=baseline.run.start.workload,
        model_revision=_model_identity(baseline.run)[0],
        cells=cells,
        not_comparable=not_comparable,
        geomean=geomean,
        geomean_unpooled=unpooled,
        geomean_series=series_means,
        compile_cost=_compile_cost(cells),
        speedups=_speedups(cells, stop, runs),
        notes=_identity_notes(weights, inputs, _unchecked((("baseline", baseline.run), ("candidate", candidate.run))))
        + _notes(baseline.run, candidate.run, sides),
        declared_identity=weights.basis == DECLARED or any(i.basis == DECLARED for i in inputs),
        criteria=criteria,
        origins_contradict=contradict,
        versions=version_changes(run_versions(baseline.run), run_versions(candidate.run)),
        code_and_data=code_and_data_changes(
            run_code_data(baseline.run),
            run_hashes(baseline.run),
            run_code_data(candidate.run),
            run_hashes(candidate.run),
            ("baseline", "candidate"),
        ),
        host=host,
        host_unknown=host_unknown,
    )
    comparison.headline = headline(comparison)
    return comparison


def _side_median(case: str, contexts: list[_Context], series: str = "") -> float:
    """A side's warm median of a cell (``series``: of that generation series): the geometric
    mean of its runs' logged medians (side_median), as `reportgen diff` takes it. Only where ``_runs_samples`` found
    every run's series."""
    warms = [
        generation_warm(c.cells[case], series) if series else c.cells[case].warm
        for c in contexts  # every run passed the cell with its series (``_runs_samples``)
    ]
    return side_median([w.median_s for w in warms if w is not None])


def _runs_samples(case: str, contexts: list[_Context], series: str = "") -> list[list[float]] | None:
    """Each run's kept warm samples of a cell (``series``: of that generation series instead),
    or None when a run did not pass it, has no such series, or holds a time that is not positive."""
    found = []
    for context in contexts:
        cell = context.cells.get(case)
        if cell is None or cell.status != "pass":
            warm = None
        elif series:
            warm = generation_warm(cell, series) if case in context.generation else None
        else:
            warm = cell.warm
        if warm is None or not warm.samples_s or min(warm.samples_s) <= 0:
            return None
        found.append(list(warm.samples_s))
    return found


def _with_timings(
    pending: list[Any],
    base: _Context,
    cand: _Context,
    extra: tuple[list[_Context], list[_Context]] = ([], []),
    side_flags: tuple[str, ...] = (),
    settings: tuple[tuple[str, ...], frozenset[str]] = (FLAGGING_HOST_KEYS, frozenset()),
) -> list[CellComparison]:
    """``settings``: the host settings that flag a ratio, and those whose change ``side_flags``
    carries already (run-wide): each cell's loops are compared on the others (_setting_flags)."""
    sides = ([base, *extra[0]], [cand, *extra[1]])
    checked = []
    samples: dict[str, tuple[list[list[float]], list[list[float]]]] = {}
    for cell, a, b, reference, note, compared in pending:
        if note is None:
            found = _runs_samples(cell.case, sides[0]), _runs_samples(cell.case, sides[1])
            if found[0] is None or found[1] is None:
                statuses = _statuses(cell.case, sides)
                note = (  # as `reportgen diff` says each
                    f"not compared: a replicate did not pass this cell ({statuses})"
                    if statuses
                    else f"not compared: {untimed_words(_kept_samples(cell.case, sides))}"
                )
            else:
                samples[cell.case] = found  # type: ignore[assignment]
        checked.append((cell, a, b, reference, note, compared))
    pending = checked
    timed = [cell for cell, _, _, _, note, _ in pending if note is None]
    intervals = dict(zip((cell.case for cell in timed), replicate_intervals([samples[cell.case] for cell in timed])))
    generation = _generation_timings(
        [(cell, a, b) for cell, a, b, _, _, compared in pending if compared], sides, extra, side_flags, settings
    )
    out = []
    for cell, a, b, reference, note, compared in pending:
        timing = None
        lacking = _lacking_generation(cell.case, sides) if compared and not generation.get(cell.case) else []
        if any(ids for _, ids in lacking):  # as `reportgen diff` says it, rather than 'no warm samples' alone
            note = f"not compared: {no_generation_timing(lacking)}"
        if note is None:
            cold_ratio, cold_note = None, "not measured"
            if a.cold_s is not None and b.cold_s is not None:
                fed = [r for r, s in (("baseline", a), ("candidate", b)) if "cold" in s.layout_missed]
                if fed:  # a first call of other inputs than the cell's is not the cell's first call
                    cold_note = (
                        f"not compared: the cold call fed another layout than the cell's on the {' and '.join(fed)}"
                    )
                elif a.cold_condition != b.cold_condition:
                    cold_note = f"not compared: cache condition {a.cold_condition} against {b.cold_condition}"
                elif a.cold_fresh != b.cold_fresh:  # an eager call in a running process against a fresh one
                    where = {True: "a fresh process", False: "a process already running", None: "not recorded"}
                    cold_note = f"not compared: the baseline's first call in {where[a.cold_fresh]}, the candidate's in {where[b.cold_fresh]}"
                else:
                    cold_ratio, cold_note = _ratio(a.cold_s, b.cold_s), a.cold_condition or ""
            # Each run's CPU wait over its warm loop, by side (every run passed this cell).
            waits = tuple([c.cells[cell.case].warm_waited for c in side] for side in sides)
            recordable = _wait_recordable(sides)
            earlier = tuple([c.cells[cell.case].warm_before for c in side] for side in sides)
            said = tuple([c.cells[cell.case].warm_logged for c in side] for side in sides)
            base_replicas, cand_replicas = (
                replicate_flags(
                    role,
                    [c.side.run.start.run_id for c in side],
                    runs,
                    side_waits,
                    before=side_before,
                    logged=side_said,
                )
                for role, side, runs, side_waits, side_before, side_said in zip(
                    ("baseline", "candidate"), sides, samples[cell.case], waits, earlier, said
                )
            )
            replicas = base_replicas + cand_replicas + _replicate_fallback(cell.case, extra)
            replicas += replicate_timed(
                (role, [(c.side.run.start.run_id, timed_words(warm_timed(c.cells[cell.case]))) for c in side])
                for role, side in zip(SIDES, sides)
            )
            warm = intervals[cell.case]
            # A ratio too large or small to judge decides nothing, as an unstable series does.
            beyond = (warm.flag,) if warm.flag else ()
            flags = (
                _timing_flags(a, b, waits=(waits[0], waits[1]), recordable=recordable)
                + tuple(replicas)
                + beyond
                + side_flags
                + _setting_flags(cell.case, sides, settings)
            )
            medians = (_side_median(cell.case, sides[0]), _side_median(cell.case, sides[1]))
            timing = CellTiming(
                _undecided(warm, flags, medians),
                cold_ratio,
                cold_note,
                # A compile that hit a cache against one that compiled from scratch is no ratio.
                _ratio(a.compile_s, b.compile_s) if a.compile_cache == b.compile_cache else None,
                flags,
                medians,
                (
                    unsteady_kind((a.timing_flag, *base_replicas)),
                    unsteady_kind((b.timing_flag, *cand_replicas)),
                ),
            )
        p = cell.planned
        out.append(
            CellComparison(
                cell.case,
                shape_label(p.batch, p.length),
                p.layout,
                p.dtype,
                p.mode,
                p.repeat_of,
                a,
                b,
                reference,
                timing,
                note or "",
                generation=generation.get(cell.case, ()),
            )
        )
    return out


def _setting_flags(
    case: str, sides: tuple[list[_Context], list[_Context]], settings: tuple[tuple[str, ...], frozenset[str]]
) -> tuple[str, ...]:
    """What the settings of the cell's warm loops (every run of both sides) flag, as `reportgen
    diff` flags them (changes.setting_flags): ``settings`` holds the keys that flag and those
    flagged run-wide already."""
    keys, run_wide = settings
    before, after = ([c.settings.get(case) for c in side] for side in sides)
    return tuple(setting_flags(before, after, keys, SIDES, run_wide))


def no_generation_timing(sides: Iterable[tuple[str, Sequence[str]]]) -> str:
    """Why a generation cell's series are not compared where a run of a side kept no timing of
    them (``sides``: (role, the ids of those runs)): one wording for `reportgen compare` (the
    cell, after 'not compared: ') and `reportgen diff` (each series)."""
    return f"no generation timing kept ({_by_side(sides)})"


def _wait_recordable(sides: tuple[list[_Context], list[_Context]]) -> tuple[list[bool], list[bool]]:
    """Whether each run's log could record its CPU wait (wait_recordable), by side, in run order."""
    before, after = ([wait_recordable(c.side.run.start.schema_version) for c in side] for side in sides)
    return before, after


def _lacking_generation(case: str, sides: tuple[list[_Context], list[_Context]]) -> list[tuple[str, list[str]]]:
    """Where the first run of each side timed a generation cell's series and a further run did
    not: the runs without them, by side (no_generation_timing's ``sides``); [] otherwise."""
    if not all(case in side[0].generation and _runs_samples(case, side[:1], "ttft_warm") for side in sides):
        return []
    return [
        (
            role,
            [
                x.side.run.start.run_id
                for x in side
                if any(_runs_samples(case, [x], series) is None for series in GENERATION_SERIES)
            ],
        )
        for role, side in zip(SIDES, sides)
    ]


def _repetitions(context: _Context, case: str, series: str) -> int | None:
    """A run's repetitions of a generation cell's decode_token series (series_flag), else None."""
    timing = generation_timing(context.cells[case]) if series == "decode_token" else None
    return timing.repetitions if timing is not None else None


def _generation_timings(
    compared: list[tuple[CellRecord, CellSide, CellSide]],
    sides: tuple[list[_Context], list[_Context]],
    extra: tuple[list[_Context], list[_Context]],
    side_flags: tuple[str, ...],
    settings: tuple[tuple[str, ...], frozenset[str]] = (FLAGGING_HOST_KEYS, frozenset()),
) -> dict[str, tuple[SeriesTiming, ...]]:
    """Each generation series' ratio of the cells whose timing may be compared and that have it
    in every run of both sides, flagged as a cell's warm ratio is: CPU fallback, a hit recompile
    limit, a different timing scope, a series (in any run) that decides nothing, a changed
    timing criterion or host (``side_flags``), a ratio too large or small to judge."""
    Samples = tuple[list[list[float]], list[list[float]]]
    found: list[tuple[str, CellSide, CellSide, str, tuple[ev.GenerationTiming, ev.GenerationTiming], Samples]] = []
    for cell, a, b in compared:
        if cell.case not in sides[0][0].generation or cell.case not in sides[1][0].generation:
            continue
        base_timing = generation_timing(sides[0][0].cells[cell.case])
        cand_timing = generation_timing(sides[1][0].cells[cell.case])
        if base_timing is None or cand_timing is None:
            continue
        for series in GENERATION_SERIES:
            base_samples = _runs_samples(cell.case, sides[0], series)
            cand_samples = _runs_samples(cell.case, sides[1], series)
            if base_samples is not None and cand_samples is not None:
                found.append((cell.case, a, b, series, (base_timing, cand_timing), (base_samples, cand_samples)))
    out: dict[str, tuple[SeriesTiming, ...]] = {}
    for (case, a, b, series, timings, (base_samples, cand_samples)), interval in zip(
        found, replicate_intervals([pair for *_, pair in found])
    ):
        # Each run's CPU wait over its warm generations, by side; the first run's is ``timings``'.
        base_waits, cand_waits = ([generation_waited(generation_timing(c.cells[case])) for c in side] for side in sides)
        # A decode series' repetitions, each run's: their whole decode times are judged too.
        base_reps, cand_reps = ([_repetitions(c, case, series) for c in side] for side in sides)
        # Each run's earlier series of warm generations (1.7 logs on), which its reported one is judged against.
        base_before, cand_before = (
            [generation_before(generation_timing(c.cells[case]), series) for c in side] for side in sides
        )
        # ... and of their repetitions' whole decode times, which tokens/s is read from.
        whole = TOTALS if series == "decode_token" else ""
        base_totals, cand_totals = (
            [generation_before(generation_timing(c.cells[case]), whole) if whole else None for c in side]
            for side in sides
        )
        flags = _timing_flags(
            a,
            b,
            scopes=(timings[0].scope, timings[1].scope),
            unsteady=(
                series_flag(base_samples[0], base_waits[0], base_reps[0], base_before[0], base_totals[0]),
                series_flag(cand_samples[0], cand_waits[0], cand_reps[0], cand_before[0], cand_totals[0]),
            ),
            waits=(base_waits, cand_waits),
            recordable=_wait_recordable(sides),
        )
        flags += tuple(
            replicate_flags(
                "baseline",
                [c.side.run.start.run_id for c in sides[0]],
                base_samples,
                base_waits,
                base_reps,
                base_before,
                base_totals,
            )
            + replicate_flags(
                "candidate",
                [c.side.run.start.run_id for c in sides[1]],
                cand_samples,
                cand_waits,
                cand_reps,
                cand_before,
                cand_totals,
            )
            + _replicate_fallback(case, extra)
        )
        flags += ((interval.flag,) if interval.flag else ()) + side_flags + _setting_flags(case, sides, settings)
        base_median, cand_median = (_side_median(case, side, series) for side in sides)
        out[case] = out.get(case, ()) + (
            SeriesTiming(
                series,
                series_words(series, sides[0][0].cells[case].planned.batch),
                base_median,
                cand_median,
                _undecided(interval, flags, (base_median, cand_median)),
                flags,
            ),
        )
    return out


LAYOUT_MISSED = layout_caveat("warm")


def replicate_caveats(runs: Iterable[tuple[str, bool, bool, bool]]) -> list[tuple[str, list[str]]]:
    """What qualifies a ratio in a side's further runs, each with the runs it is in: CPU fallback,
    a hit recompile limit (the compiled cell may have run eager), a warm loop fed another layout
    than the cell's. ``runs``: (run id, fell back, hit the limit, layout missed) of the cell in
    each further run. Their samples are in the side's interval, so each qualifies the ratio as
    in the side's first run; `reportgen compare` and `reportgen diff` both ask this."""
    found = list(runs)
    return sided_caveats(
        (run, figure_caveats(fell, limit, ["warm"] if missed else ())) for run, fell, limit, missed in found
    )


def replicate_statuses(sides: Iterable[tuple[str, Sequence[tuple[str, str | None]]]]) -> str | None:
    """Where the runs of a side did not all give a cell the status of the side's first run (the
    one its status changes are read from): each such side's statuses by run, in words ('after:
    pass in a1, error in a2'); None where every side agrees. ``sides``: (role, [(run id, status,
    None where the run has no such cell)]), first run first. No timing of such a cell is
    compared (a replicate's samples are missing from the interval), and the words say why."""
    found = []
    for role, runs in sides:
        if len({status for _, status in runs}) > 1:
            found.append(f"{role}: {', '.join(f'{status or NOT_PLANNED} in {run}' for run, status in runs)}")
    return "; ".join(found) or None


def untimed_words(sides: Iterable[tuple[str, Sequence[tuple[str, Sequence[float]]]]]) -> str:
    """Why the warm timing of a cell that passed in every run of both sides is not compared:
    the runs that kept no warm samples of it, and those holding a sample that is zero or
    negative, which is no time, by side ('no warm samples kept (candidate: a2)'). ``sides``:
    (role, [(run id, that run's kept warm samples of the cell)]). One wording for `reportgen
    compare` (after 'not compared: ') and `reportgen diff`, replicated or not."""
    sides = list(sides)
    found = []
    for words, lacks in (
        ("no warm samples kept", lambda samples: not samples),
        ("a warm sample is zero or negative, which is no time", lambda samples: bool(samples) and min(samples) <= 0),
    ):
        runs = _by_side((role, [run for run, s in kept if lacks(s)]) for role, kept in sides)
        if runs:
            found.append(f"{words} ({runs})")
    return "; ".join(found)


def _by_side(sides: Iterable[tuple[str, Sequence[str]]]) -> str:
    """Run ids by side, sides without any left out: 'before: b2; after: a1, a2'."""
    return "; ".join(f"{role}: {', '.join(ids)}" for role, ids in sides if ids)


def _kept_samples(
    case: str, sides: tuple[list[_Context], list[_Context]]
) -> list[tuple[str, list[tuple[str, Sequence[float]]]]]:
    """Each run's kept warm samples of a cell, by side (untimed_words' ``sides``)."""
    return [
        (role, [(x.side.run.start.run_id, c.warm_samples if (c := x.cells.get(case)) else ()) for x in side])
        for role, side in zip(SIDES, sides)
    ]


def _statuses(case: str, sides: tuple[list[_Context], list[_Context]]) -> str | None:
    """replicate_statuses of one cell over the runs of both sides."""
    return replicate_statuses(
        (role, [(x.side.run.start.run_id, c.status if (c := x.cells.get(case)) else None) for x in side])
        for role, side in zip(SIDES, sides)
    )


def replicate_timed(sides: Iterable[tuple[str, Sequence[tuple[str, str | None]]]]) -> list[str]:
    """A side's further runs whose warm clock covered other stages, or did them otherwise, than
    its first run's (timed_words): their samples are pooled in one interval with the first's,
    so the ratio is of two things timed differently. ``sides``: (role, [(run id, timed words)]),
    first run first. `reportgen compare` and `reportgen diff` both ask this."""
    flags = []
    for role, runs in sides:
        first = runs[0][1] if runs else None
        other = [run for run, timed in runs[1:] if timed != first]
        if other:
            flags.append(f"different timed region on the {role} replicate {', '.join(other)} than its first run")
    return flags


def _replicate_fallback(case: str, extra: tuple[list[_Context], list[_Context]]) -> list[str]:
    """CPU fallback, a hit recompile limit or a warm loop fed another layout in a cell of a side's
    further runs (replicate_caveats)."""
    flags = []
    for role, contexts in zip(SIDES, extra):
        runs = [
            (
                x.side.run.start.run_id,
                bool(c.fallback_items),
                c.recompile_limit_hit or c.eager_after_recompile_limit,
                "warm" in c.timing_layout_missed,
            )
            for x in contexts
            if (c := x.cells.get(case)) is not None
        ]
        flags += [f"{what} on the {role} replicate {', '.join(ids)}" for what, ids in replicate_caveats(runs)]
    return flags


def _compile_cost(cells: list[CellComparison]) -> CompileCost:
    new_shapes = [c for c in cells if c.mode == "compiled" and c.repeat_of is None and c.correct_on_both]
    groups = []
    for cache in (CACHE_MISS, CACHE_HIT, CACHE_UNKNOWN):
        base = [
            c.baseline.compile_s
            for c in new_shapes
            if c.baseline.compile_s is not None and c.baseline.compile_cache == cache
        ]
        cand = [
            c.candidate.compile_s
            for c in new_shapes
            if c.candidate.compile_s is not None and c.candidate.compile_cache == cache
        ]
        # A side whose compiles all hit a cache may have compiled from nothing in its cold call
        # alone (a fresh process, an empty cache): that is its cache-miss figure, said so.
        base_cold = cache == CACHE_MISS and not base
        cand_cold = cache == CACHE_MISS and not cand
        base = _empty_cache_colds(new_shapes, "baseline") if base_cold else base
        cand = _empty_cache_colds(new_shapes, "candidate") if cand_cold else cand
        base_cold, cand_cold = base_cold and bool(base), cand_cold and bool(cand)
        # Like with like: where one side's miss is its cold call in a fresh process, the other
        # side's cold calls of that condition stand for its miss too, where it has them (a compile
        # in a process already running was set against a fresh process's whole first call).
        if base_cold and not cand_cold and (cold := _empty_cache_colds(new_shapes, "candidate")):
            cand, cand_cold = cold, True
        elif cand_cold and not base_cold and (cold := _empty_cache_colds(new_shapes, "baseline")):
            base, base_cold = cold, True
        if base or cand:
            groups.append(
                CompileMedian(
                    cache,
                    statistics.median(base) if base else None,
                    statistics.median(cand) if cand else None,
                    len(base),
                    len(cand),
                    base_cold,
                    cand_cold,
                )
            )
    return CompileCost(len(new_shapes), tuple(groups))


def _empty_cache_colds(cells: list[CellComparison], role: str) -> list[float]:
    """A side's cold calls that compiled in a fresh process from an empty compile cache (not one
    fed another layout than its cell's: that first call was of other inputs)."""
    sides = [getattr(c, role) for c in cells]
    return [
        x.cold_s
        for x in sides
        if x.cold_s is not None and x.cold_condition == "fresh_process_empty_cache" and "cold" not in x.layout_missed
    ]


COLD_AS_MISS = "; its cold call in a fresh process, empty compile cache"


def compile_cost_text(cost: CompileCost, baseline: Side, candidate: Side) -> list[str]:
    """One phrase per cache outcome, each naming both sides: a figure never stands without its side."""
    phrases = []
    for group in cost.by_cache:
        where = f"on a {group.cache}" if group.cache != CACHE_UNKNOWN else "where the cache outcome was not recorded"
        # One side's figure a fresh process's cold call, the other's a compile: each says which.
        mixed = group.baseline_cold != group.candidate_cold
        phrases.append(
            f"{where}: {candidate.short_name} {_seconds(group.candidate_s)}"
            f"{_of(group.candidate_shapes, group.candidate_cold, mixed)} "
            f"against {baseline.short_name} {_seconds(group.baseline_s)}"
            f"{_of(group.baseline_shapes, group.baseline_cold, mixed)}"
        )
    return phrases


IN_PROCESS_COMPILE = "its compile events, in a process already running"


def _of(shapes: int, cold: bool = False, mixed: bool = False) -> str:
    how = [COLD_AS_MISS[2:]] if cold else [IN_PROCESS_COMPILE] if mixed else []
    parts = ([f"median of {shapes} shapes"] if shapes > 1 else []) + how
    return f" ({'; '.join(parts)})" if parts else ""


def _speedups(
    cells: list[CellComparison],
    stop: TimingStop | None = None,
    runs: tuple[list[_Context], list[_Context]] = ([], []),
) -> list[Speedup]:
    """Compiled over eager per shape and side; none on a side whose performance acceptance is
    stopped (its timings decide nothing), as none where a series is unstable, where a run of the
    side (``runs``: each side's runs) did not record what the two loops' threads waited for a CPU
    though its log could, or ran the two loops under other settings (threads, affinity, CPUs)."""
    stopped = stop.roles if stop is not None else ()
    by_shape: dict[tuple[str, str, str], dict[str, CellComparison]] = {}
    for cell in cells:
        if cell.repeat_of is None:
            by_shape.setdefault((cell.shape, cell.layout, cell.dtype), {})[cell.mode] = cell
    out = []
    for (shape, layout, dtype), modes in by_shape.items():
        eager, compiled = modes.get("eager"), modes.get("compiled")
        if eager is None or compiled is None:
            continue

        def speedup(role: str) -> tuple[float | None, str | None]:
            e, c = getattr(eager, role), getattr(compiled, role)
            if e.status != "pass" or c.status != "pass" or not e.warm_median_s or not c.warm_median_s:
                return None, None
            if role in stopped:
                return None, f"not compared: performance acceptance is stopped on the {role}"
            # As a warm ratio is flagged: a compiled cell that hit its recompile limit may have
            # run eager, and a CPU fallback times the CPU, so neither speedup is the compiled path's.
            caught = [
                what
                for what, hit in (
                    ("the compiled cell hit its recompile limit", c.recompile_limit),
                    ("CPU fallback", bool(e.fallback or c.fallback)),
                    (
                        LAYOUT_MISSED,
                        "warm" in e.layout_missed
                        or "warm" in c.layout_missed
                        or any(  # in a further replicate of this side
                            f.startswith(f"{LAYOUT_MISSED} on the {role} replicate")
                            for m in (eager, compiled)
                            if m.timing
                            for f in m.timing.flags
                        ),
                    ),
                )
                if hit
            ]
            index = 0 if role == "baseline" else 1
            side = runs[index]
            if any(
                wait_recordable(x.side.run.start.schema_version)
                and x.cells[m.case].warm_waited is None
                and x.cells[m.case].warm_median_s is not None
                for x in side
                for m in (eager, compiled)
            ):
                caught.append("CPU wait not recorded: contention not judged")
            differ = sorted(
                {
                    label
                    for x in side
                    for label, value in (x.settings.get(eager.case) or {}).items()
                    if label in TIMING_HOST_KEYS and (x.settings.get(compiled.case) or {}).get(label, value) != value
                }
            )
            if differ:
                caught.append(f"the eager and compiled loops ran under other {' and '.join(differ)}")
            if caught:
                return None, f"not compared: {' and '.join(caught)}"
            # Either series decides nothing, in the side's first run or in a further replicate.
            replicas = [m.timing.unsteady[index] for m in (eager, compiled) if m.timing]
            if kind := unsteady_kind((e.timing_flag, c.timing_flag, *replicas)):
                return None, kind
            # Each side's warm medians as the timing table shows them (with replicates, the
            # geometric mean of the runs' medians), where the cell was timed on both sides.
            eager_s, compiled_s = (
                m.timing.medians[index] if m.timing else getattr(m, role).warm_median_s for m in (eager, compiled)
            )
            return (eager_s / compiled_s if eager_s and compiled_s else None), None

        (base, base_flag), (cand, cand_flag) = speedup("baseline"), speedup("candidate")
        out.append(Speedup(shape, layout, dtype, base, cand, base_flag, cand_flag))
    return out


def evidence_for_target(side: Side) -> bool:
    """Whether the side's run is evidence for the target it ran with (the plan's resolved target,
    not the one its plan is meant to certify): its backend family is one the target's constraint
    file lists as evidence (neuron-native for neuron), as the site's evidence_target says. A target
    no file names is evidenced by its own family name only."""
    families = evidence_families(side.target)
    return side.family in families if families else side.family == side.target


def _notes(base: RunModel, cand: RunModel, sides: tuple[Side, Side]) -> list[str]:
    notes = []
    for side in sides:
        if side.synthetic:
            notes.append(
                f"The {side.role} log is a synthetic fixture, not a measurement: this comparison is evidence of nothing."
            )
        if not side.complete:
            notes.append(f"The {side.role} run is incomplete: its unrecorded cells are untested.")
        if side.perf_stopped:
            notes.append(
                f"Performance acceptance is stopped on the {side.role}: {len(side.perf_stopped)} mismatching or errored cell(s) without a verdict; no timing is compared until they have a verdict."
            )
        if not evidence_for_target(side):
            notes.append(
                f"The {side.role} ran with target {side.target} (as its collector resolved it) but on {side.family}: "
                f"it is not evidence for {side.target}."
            )
    if sides[0].family == sides[1].family and sides[0].target == sides[1].target:
        notes.append(
            "Both runs are on the same target: for an upgrade on one target, `reportgen diff` says what changed."
        )
    return notes


# --- the headline ------------------------------------------------------------------------------


def left_out_words(comparison: Comparison) -> list[str]:
    """What the headline says of the timings that decide nothing: the cells none of whose
    ratios decides ('1 cell with unstable timing left out of every verdict'), and apart from
    them each generation series left out of a cell whose other series is judged on its own
    (a cell with one series unstable is not left out of every verdict)."""
    unsteady = (STABILITY_FLAG, UNCLASSIFIED_FLAG)
    unstable = {c.case for c in comparison.unstable}
    whole = {
        c.case: c.case in unstable
        for c in comparison.unstable + comparison.unclassified
        if all(r.verdict in unsteady for r in c.ratios)
    }
    series = [r.verdict for c in comparison.cells if c.case not in whole for r in c.generation if r.verdict in unsteady]
    words = []
    cells = undecided_words(sum(whole.values()), len(whole) - sum(whole.values()))
    if cells:
        words.append(f"{cells} left out of every verdict")
    if series:
        counted = undecided_words(
            series.count(STABILITY_FLAG), series.count(UNCLASSIFIED_FLAG), noun=("generation series",) * 2
        )
        whose = "its cell" if len(series) == 1 else "each of their cells"
        words.append(f"{counted} left out of every verdict (the other series of {whose} is judged on its own)")
    return words


def _seconds(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.3g} s"


def _series_name(ratio: CellTiming | SeriesTiming) -> str:
    """The quantity a ratio is of, named as diff names it: a cell's warm call, or a generation series."""
    return ratio.words if isinstance(ratio, SeriesTiming) else WARM_CALL


def headline(comparison: Comparison) -> str:
    """The answer in one sentence, or what stops it."""
    b, c = comparison.baseline, comparison.candidate
    total = len(comparison.cells) + len(comparison.not_comparable)
    parts = [
        f"Candidate {c.label} (run {c.run_id}) vs baseline {b.label} (run {b.run_id}): {len(comparison.cells)} of {total} cells comparable"
    ]
    if comparison.declared_identity:
        parts[0] += " (weights or inputs the same by declaration only, not verified: see the notes)"
    changed = [
        f"{n} {what} change{'s' if n != 1 else ''}"
        for what, n in (
            ("version", len(comparison.versions)),
            ("code and data", len(comparison.code_and_data)),
            ("host", len(comparison.host)),
        )
        if n
    ]
    if changed:
        parts.insert(0, f"{', '.join(changed)} (listed first)")
    if comparison.host_unknown:  # not a change, and not 'no change' either
        parts.insert(0, f"{comparison.host_unknown} (listed first)")
    if comparison.criteria:
        n = len(comparison.criteria)
        parts.insert(0, f"{n} {'criterion' if n == 1 else 'criteria'} declared differently (listed first)")
    made_up = [s.role for s in (c, b) if s.synthetic_weights]
    # Not to be read as trained ones (a synthetic fixture's side is evidence of nothing, said first).
    unrecorded = [s.role for s in (c, b) if s.weights_unrecorded and (made_up or not s.synthetic)]
    if made_up:  # a measurement, of a model no one trained: said before the answer, as each run's headline says it
        also = f"; weights origin not recorded on the {' and '.join(unrecorded)}" if unrecorded else ""
        parts.insert(0, f"Synthetic weights on the {' and '.join(made_up)}{also}")
    elif unrecorded:  # neither side says its weights were trained: not to be read as if they were
        parts.insert(0, f"Weights origin not recorded on the {' and '.join(unrecorded)}")
    if comparison.origins_contradict:  # before either side's origin: neither is to be read alone
        parts.insert(0, f"The same weights given two origins: {ORIGIN_WRONG}")
    synthetic = [s.role for s in (c, b) if s.synthetic]
    if synthetic:  # said first: whatever follows is evidence of nothing
        parts.insert(0, f"Synthetic fixture on the {' and '.join(synthetic)}, not a measurement: evidence of nothing")
    correct = sum(1 for cell in comparison.cells if cell.correct_on_both)
    differ = sum(1 for cell in comparison.cells if cell.replicate_statuses)
    if differ:  # the first run of each side speaks for the statuses: the others are not all alike
        parts.append(
            f"{correct} correct on both in each side's first run; {differ} cell{'s' if differ != 1 else ''} "
            "with another status in another run of a side (see the cells)"
        )
    else:
        parts.append(
            f"all {correct} correct on both" if correct == len(comparison.cells) else f"{correct} correct on both"
        )
    parts += left_out_words(comparison)
    stop = comparison.timing_stop
    geo = comparison.geomean
    if stop is not None:
        parts.append(stop.headline)
    elif geo is None:
        parts.append(
            f"geometric mean {comparison.geomean_unpooled}"
            if comparison.geomean_unpooled
            else nothing_judged(len(comparison.ratios))
        )
    else:
        if geo.low is None or geo.high is None:
            interval = "interval not available: too few warm samples"
        else:
            interval = interval_words(geo.ratio, geo.low, geo.high)
        word = speed_words(geo.ratio, geo.low, geo.high)
        verdict = classify(geo.low, geo.high)
        if verdict == "no clear difference":
            word = f"no clear difference ({word} at the point estimate)"
        parts.append(f"{word} (geomean of {comparison.geomean_counts}, {interval}; {comparison.interval_scope})")
    cost = comparison.compile_cost
    if cost.shapes and stop is None:  # a compile time is a timing: under a stop it decides nothing either
        parts.append("compile + first result per new shape " + ", ".join(compile_cost_text(cost, b, c)))
    return "; ".join(parts)
