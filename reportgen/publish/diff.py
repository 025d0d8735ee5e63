"""What changed between two runs of one workload: criteria, cells, timings, versions, disposition.

Either side may be several runs (replicates) of one workload and target: the first of each side
speaks for its statuses, versions and criteria; the timing interval is built from every run of
the side whose cell passed, so it includes the variation between runs (judge.intervals).

Whether timings are compared at all is the judge's answer, the one `reportgen compare` gives
(judge.comparison.timing_stop): a run of either side with mismatching or errored cells awaiting a verdict
stops performance acceptance, and then no ratio is computed, only that reason is said.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Sequence

from collector.visible import visible
from reportgen.judge.backend_docs import backend_name, evidence_families
from reportgen.judge.disposition import ADAPTER_UNTRIED
from reportgen.judge.changes import (
    CODE_SCOPE,
    FLAGGING_HOST_KEYS,
    REFERENCE_OUTPUTS,
    hash_triple,
    SETTING_LABELS,
    code_and_data_changes,
    compare_hosts,
    setting_flags,
    side_host,
    replicate_changes,
    timing_unlike,
    uniform_settings,
    version_changes,
)
from reportgen.judge.comparison import (
    TimingStop,
    no_generation_timing,
    nothing_judged,
    replicate_caveats,
    replicate_timed,
    replicate_statuses,
    timed_flag,
    wait_flag,
    wait_recordable,
    timing_stop,
    untimed_words,
)
from reportgen.judge.identity import (
    DECLARED,
    RECIPE_V1,
    UNRECORDED,
    ORIGIN_WRONG,
    origin_change_words,
    origins_contradict,
    InputsFacts,
    WeightsFacts,
    cell_redefined,
    copied_run,
    inputs_identity,
    weights_identity,
)
from reportgen.judge.criteria import (
    CriterionChange,
    changed_for,
    criteria_changes,
    from_dicts,
    replicate_mismatch,
)
from reportgen.contract.times import utc_time
from reportgen.judge.ratio_words import estimate_text, interval_text, judgeable
from reportgen.judge.intervals import (
    CONFIDENCE,
    ONE_RUN,
    ONE_RUN_CAVEAT,
    GeoMean,
    RatioInterval,
    WARM_CALL,
    interval_words,
    pooled_mean,
    replicate_intervals,
    scope_text,
    speed_words,
)
from reportgen.judge.timing_stability import (
    figure_caveats,
    sided_caveats,
    FLAG as STABILITY_FLAG,
    GENERATION_SERIES,
    TOTALS,
    series_words,
    UNCLASSIFIED_FLAG,
    UNSTEADY,
    replicate_flags,
    side_median,
    series_flag,
    unsteady_kind,
)
from reportgen.model.runmodel import DESELECTED
from reportgen.render.labels import human
from reportgen.render.sections.common import fmt_time
from reportgen.publish.summary import CellSummary, RunSummary

FAILING = ("mismatch", "nonfinite", "error")
NO_SAMPLES = "no verdict: warm samples not kept"
# A ratio qualified by a flag (a changed host, criterion or timing scope, CPU fallback): its
# interval is shown, but it says neither faster nor slower. (A stopped performance acceptance
# leaves no ratio at all: judge.comparison.timing_stop, as in `reportgen compare`.)
FLAGGED = "no verdict: flagged"
TARGETS_DIFFER = "not an upgrade on one target: a change of target is a migration question, see `reportgen compare`"
CHANGED_CRITERION = "passes under a changed criterion"
OTHER_VALUES = "passes with other weights or inputs"
OTHER_REFERENCE = "passes against other reference outputs"
VERDICTS = ("faster", "slower", "no clear difference")
CHANCE_FROM = 10  # judged cells from which the summary says how many read a change by chance
REDEFINED = "cells redefined under the same case key (not compared)"
REPLICATE_STATUSES = "statuses that differ between the runs of a side (each side's first run speaks above)"
REPLICATE_NOT_PASSED = "a replicate did not pass this cell"
# What keeps a cell that passed in each side's first run out of the timing: a run that did not
# pass it, kept no warm samples of it, or kept a sample that is no time (each named per cell).
NOT_TIMED_WORDS = "not passed with positive warm samples in every run"
REPLICATE_NOT_TIMED = f"cells that passed in the first run of each side, {NOT_TIMED_WORDS}, timing not compared"
# Where weights or inputs are known the same only because both plans declare them so.
DECLARED_ONLY = "weights or inputs the same by declaration only, not verified"
# Cells of one status said differently in the two runs, named before the disposition.
RESTATED = (
    "status the same, said differently (an owner's verdict given or taken back in the annotations,"
    " or another check failing)"
)


@dataclass
class TimingChange:
    """Warm medians of one cell that passed in both runs; ``flags`` qualify the ratio.

    ``ratio`` is the point estimate the interval is built around (95%, from the kept warm
    samples of every run of each side, as in `reportgen compare`); ``verdict`` is read from that
    interval, never from a fixed percentage. Without samples on both sides there is no interval
    and no verdict, and ``ratio`` is the ratio of the warm medians. ``before_s`` and ``after_s``
    are the median over each side's runs of their warm medians.

    A generation cell's two warm series (time to first token, decode per token) are each a
    change of their own, named by ``series`` ("" for a cell's warm series), judged alike.
    """

    case: str
    before_s: float
    after_s: float
    flags: list[str] = field(default_factory=list)
    low: float | None = None
    high: float | None = None
    verdict: str = NO_SAMPLES
    ratio: float = math.nan
    scope: str = ""  # what variation the interval covers, e.g. "one run per side: within-run sampling only"
    series: str = ""  # a generation series in words ("decode per token"); "": the cell's warm series

    @property
    def name(self) -> str:
        """The cell, and the generation series when the change is of one."""
        return f"{self.case} ({self.series})" if self.series else self.case

    @property
    def unsteady(self) -> bool:
        """Either side's warm series decides nothing (its flag is among ``flags``)."""
        return any(f.startswith(UNSTEADY) for f in self.flags)

    @property
    def judged(self) -> bool:
        """Whether this ratio may decide anything: no caveat, every series stable."""
        return not self.flags

    @property
    def in_geomean(self) -> bool:
        """Whether the geometric mean is over this ratio: judged, with samples on both sides."""
        return self.judged and self.verdict != NO_SAMPLES

    def ratio_shown(self, unit: str = "x") -> str:
        """The ratio as every text shows it: three decimals and ``unit`` (more significant digits
        where three decimals would read outside its interval), or 'out of range' (never inf or nan)."""
        return estimate_text(self.ratio, self.low, self.high, ".3f", unit)

    def interval_shown(self) -> str:
        """'LOW to HIGH' as every text shows it (an end beyond judging: 'out of range'), or 'not measured'."""
        if self.low is None or self.high is None:
            return "not measured"
        return "{} to {}".format(*interval_text(self.low, self.high))

    def __post_init__(self) -> None:
        if math.isnan(self.ratio):
            self.ratio = self.after_s / self.before_s if self.before_s > 0 else float("inf")


@dataclass(frozen=True)
class CriterionPass:
    """A cell that failed before and passes after, but only under a changed criterion: not fixed."""

    case: str
    before: str
    after: str
    criteria: tuple[str, ...]  # each change that could have decided it, in words

    @property
    def text(self) -> str:
        return f"{CHANGED_CRITERION}: {'; '.join(self.criteria)}"


def _on_sides(runs: dict[str, list[str]]) -> str:
    """'the before side (a1) and the after side (b1, b2)'."""
    return " and ".join(f"the {role} side ({', '.join(ids)})" for role, ids in runs.items())


def _judge_timings(
    changes: list[tuple[TimingChange, list[list[float]], list[list[float]]]],
) -> list[tuple[str, RatioInterval]]:
    """Give every change with samples on both sides its interval and verdict, in one batch;
    the judged ones' intervals, each with its series (WARM_CALL for a cell's warm call)."""
    for change, _, _ in changes:
        if kind := unsteady_kind(change.flags):
            change.verdict = f"no verdict: {kind}"
    # A series that decides nothing (unstable, or too short to classify) gets no interval.
    usable = [
        (t, a, b)
        for t, a, b in changes
        if a and b and min(min(r) for r in a) > 0 and min(min(r) for r in b) > 0 and not t.unsteady
    ]
    intervals = replicate_intervals([(a, b) for _, a, b in usable])
    for (change, _, _), interval in zip(usable, intervals):
        change.low, change.high, change.ratio, change.scope = (
            interval.low,
            interval.high,
            interval.ratio,
            interval.scope,
        )
        change.verdict = interval.verdict if interval.low is not None else "no clear difference (too few samples)"
        if interval.flag:  # a ratio too large or small to judge decides nothing, as an unstable series does
            change.flags.append(interval.flag)
            change.verdict = f"no verdict: {interval.flag}"
        elif change.flags:  # a change named beside the ratio (host, criterion, fallback, ...): not judged
            change.verdict = FLAGGED
    return [
        (change.series or WARM_CALL, interval) for (change, _, _), interval in zip(usable, intervals) if change.judged
    ]


def timing_flags(
    before: RunSummary,
    after: RunSummary,
    old: CellSummary,
    new: CellSummary,
    series: str = "",
    waits: tuple[Sequence[object | None], Sequence[object | None]] | None = None,
    recordable: tuple[Sequence[bool], Sequence[bool]] | None = None,
    labels: tuple[str, str] = ("before", "after"),
) -> list[str]:
    """Why a ratio must not be read as a performance result on its own (``series``: the ratio of
    that generation series, GenerationTiming's field, instead of the cell's warm series).
    ``labels``: how a flag of ``old``'s or ``new``'s own names its run (a side of replicates
    names its first run, as its further runs' flags name theirs)."""
    flags = []
    if where(before) != where(after):  # a planned target, or the backend it ran on, changed
        flags.append(
            f"different targets ({where(before)} -> {where(after)}): not a regression, see `reportgen compare`"
        )
    scopes = (old.generation_scope, new.generation_scope) if series else (old.scope, new.scope)
    if scopes[0] and scopes[1] and scopes[0] != scopes[1]:  # as `reportgen compare` flags it
        flags.append(f"different timing scope (before: {scopes[0]}; after: {scopes[1]})")
    elif not series and (flag := timed_flag(old.timed, new.timed, ("before", "after"))):
        flags.append(flag)
    if waits is None:  # the two runs alone; ``waits``: every run of each side
        waits = ([old.generation_waited], [new.generation_waited]) if series else ([old.warm_waited], [new.warm_waited])
    if recordable is None:  # whether each run's log could record its CPU wait, as ``waits``
        recordable = ([wait_recordable(before.schema_version)], [wait_recordable(after.schema_version)])
    if flag := wait_flag(*waits, ("before", "after"), recordable):
        flags.append(flag)
    # As `reportgen compare` flags them (a hit recompile limit: the compiled cell may have run
    # eager; another layout: the warm figure is of other inputs than the cell's).
    caveats = (
        (
            which,
            figure_caveats(
                cell.cpu_fallback, cell.recompile_limit, ["warm"] if "warm" in cell.layout_missed and not series else ()
            ),
        )
        for which, cell in zip(labels, (old, new))
    )
    flags += [f"{caveat} ({' and '.join(sides)})" for caveat, sides in sided_caveats(caveats)]
    for which, cell in zip(labels, (old, new)):
        flag = (
            series_flag(
                cell.generation.get(series),
                cell.generation_waited,
                _repetitions(cell, series),
                _before(cell, series),
                _before(cell, TOTALS) if series == "decode_token" else None,
            )
            if series
            else series_flag(cell.warm_samples_s, cell.warm_waited, before=cell.warm_before, logged=cell.warm_logged)
        )
        if flag:
            flags.append(f"{flag} ({which})")
    return flags


def _before(cell: CellSummary | None, series: str) -> list[float] | None:
    """The range of the cell's earlier warm series (``series``: of that generation series, or TOTALS)."""
    if cell is None:
        return None
    if series:
        return (cell.generation_before or {}).get(series)
    return cell.warm_before


def _logged(cell: CellSummary | None, series: str) -> list[str] | None:
    """The rules the log's own classification said the cell's warm series failed (not kept for a
    generation series, whose own verdicts are not logged)."""
    return cell.warm_logged if cell is not None and not series else None


def _repetitions(cell: CellSummary | None, series: str) -> int | None:
    """A decode_token series' repetitions (series_flag judges their whole decode times too)."""
    return cell.generation_repetitions if cell is not None and series == "decode_token" else None


def where(summary: RunSummary) -> str:
    """The run's planned target, by its backend's name (a plan's alias "trainium" is "neuron"),
    and the backend it ran on where that is no evidence for the target: 'neuron (ran on cpu)'.
    Two runs with different ``where`` are no upgrade on one target."""
    target, family = backend_name(summary.target), summary.family
    if family in ("", target) or family in evidence_families(target):
        return target
    return f"{target} (ran on {family})"


def _replicates_flags(case: str, more: Sequence[RunSummary], which: str) -> list[str]:
    """What qualifies a ratio in a side's further runs, as ``timing_flags`` does for its first:
    CPU fallback, a hit recompile limit and another layout fed in the cell (judge.comparison.replicate_caveats, as
    `reportgen compare` flags them)."""
    runs = [
        (r.run_id, cell.cpu_fallback, cell.recompile_limit, "warm" in cell.layout_missed)
        for r in more
        if (cell := r.cells.get(case)) is not None
    ]
    return [f"{what} ({which} replicate {', '.join(ids)})" for what, ids in replicate_caveats(runs)]


def _first_label(role: str, side: Sequence[RunSummary]) -> str:
    return f"{role} run {side[0].run_id}" if len(side) > 1 else role


class DiffRefused(ValueError):
    """The two runs are not of one workload: there is nothing to diff (exit 2)."""


@dataclass
class RunDiff:
    before: str
    after: str
    disposition: tuple[str, str]
    targets: tuple[str, str] = ("", "")  # each side's planned target and the backend it ran on (``where``)
    criteria: list[CriterionChange] = field(default_factory=list)  # named before any result
    # The sides ("before", "after") whose log has no plan event (the run ended before it): their
    # criteria are not recorded, so no page says that none changed.
    criteria_unrecorded: list[str] = field(default_factory=list)
    new_failures: list[tuple[str, str, str]] = field(default_factory=list)
    fixed: list[tuple[str, str, str]] = field(default_factory=list)
    changed_criterion: list[CriterionPass] = field(default_factory=list)  # passes only under a changed criterion
    # Failed before, passes after, fed other weights or inputs (or inputs a run did not record):
    # not fixed, the cell was not run on the same values (why: ``changed_values``).
    other_values_pass: list[tuple[str, str, str]] = field(default_factory=list)
    # Failed before, passes after, judged against saved reference outputs that differ by content
    # (why: ``changed_reference``): not fixed, the criterion's reference itself changed.
    other_reference_pass: list[tuple[str, str, str]] = field(default_factory=list)
    other_changes: list[tuple[str, str, str]] = field(default_factory=list)
    # Cells of one status in both runs said differently (case, before, after in words): an
    # owner's verdict the annotations gave or took back, or another check failing. A verdict
    # alone can turn a disposition, so these are named before it.
    restated: list[tuple[str, str, str]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    added_not_run: list[str] = field(default_factory=list)  # those of ``added`` untested or skipped after
    removed: list[str] = field(default_factory=list)
    removed_passed: list[str] = field(default_factory=list)  # those of ``removed`` that passed before
    # A case key whose planned fields (shape, layout, dtype, mode) differ between the runs: not
    # one cell, so neither its status nor its timing is compared, only this is said (case, why:
    # judge.identity.cell_redefined), as `reportgen compare` lists it as not comparable.
    redefined: list[tuple[str, str]] = field(default_factory=list)
    # With replicates: cells whose status is not the same in every run of a side (case, each such
    # side's statuses by run: judge.comparison.replicate_statuses). The first run of each side
    # speaks for the status changes above; these are named beside them.
    replicate_statuses: list[tuple[str, str]] = field(default_factory=list)
    # Cells that passed in the first run of each side, but not passed in every replicate or
    # without warm samples in a run (a first one included): no timing compared (a run's samples
    # would be missing from the interval), in the words `reportgen compare` gives; (case, why).
    replicate_not_timed: list[tuple[str, str]] = field(default_factory=list)
    not_timed_heading: ClassVar[str] = REPLICATE_NOT_TIMED[:1].upper() + REPLICATE_NOT_TIMED[1:]
    timings: list[TimingChange] = field(default_factory=list)
    versions: list[tuple[str, str, str]] = field(default_factory=list)
    # Code and data changes: the collector, its git state, the files it read, weights, inputs.
    code_and_data: list[tuple[str, str, str]] = field(default_factory=list)
    code_scope: ClassVar[str] = CODE_SCOPE  # what those cover
    # The weights are shown to be the same, and the logs give them two origins (identity.origins_contradict).
    origins_contradict: bool = False
    # The host (judge.changes): device, environment variables, other versions, threads, load.
    host: list[tuple[str, str, str]] = field(default_factory=list)
    # Where a run recorded no host facts: that a host change cannot be ruled out (judge.changes.compare_hosts).
    host_unknown: str = ""
    # Cells that passed in both runs whose timing is not compared because the runs fed them other
    # weights or inputs, or a run did not record its inputs: (case, why), as `reportgen compare`
    # lists them as not comparable (judge.identity.inputs_identity, weights_identity).
    values_differ: list[tuple[str, str]] = field(default_factory=list)
    # Every cell of both runs fed other weights or inputs, whatever its status: case -> why. Said
    # beside a status change of the cell, and the history's trend lines do not join across it.
    changed_values: dict[str, str] = field(default_factory=dict)
    # Cells whose saved reference outputs differ by content between the runs: case -> why. Said
    # beside a status change of the cell; a timing is still compared (the reference times nothing).
    changed_reference: dict[str, str] = field(default_factory=dict)
    # Weights or inputs that are the same by declaration only, not verified (logs without
    # content hashes), in words: said before any result, as `reportgen compare`'s headline does.
    declared_only: list[str] = field(default_factory=list)
    # A new failure under a changed correctness criterion that could have decided it: case -> the
    # changes in words, said beside it (the criteria are also named first).
    failure_criteria: dict[str, list[str]] = field(default_factory=dict)
    declared_heading: ClassVar[str] = DECLARED_ONLY[:1].upper() + DECLARED_ONLY[1:]
    restated_heading: ClassVar[str] = RESTATED[:1].upper() + RESTATED[1:]
    before_runs: list[str] = field(default_factory=list)  # every run of each side (replicates)
    after_runs: list[str] = field(default_factory=list)
    geomean: GeoMean | None = None  # of the unflagged cells with an interval
    # Where those ratios are of several quantities (a generation workload's time to first token
    # and decode per token), no geomean, and why, with each series' own (intervals.pooled_mean).
    geomean_unpooled: str = ""
    geomean_series: tuple[GeoMean, ...] = ()  # then each series' own mean, its quantity named
    # The synthetic runs of each side ("before"/"after" -> run ids): named on the first line.
    synthetic: dict[str, list[str]] = field(default_factory=dict)
    # How far the collector's adapters of the runs' backends have met their hardware (a neuron
    # run's: a stand-in only), each note once: named on the first line, as every page names it.
    adapter_notes: list[str] = field(default_factory=list)
    # The runs of each side whose workload says its weights are made up (WEIGHTS_ORIGIN
    # "synthetic"): measured, but of no trained model, named on the first line as every run
    # page's headline names them.
    synthetic_weights: dict[str, list[str]] = field(default_factory=dict)
    # Where the other side's weights are synthetic: the runs whose log does not say where their
    # weights came from (schema before 1.4), by side, so that "synthetic on the after side" is
    # not read as "real on the before side".
    weights_unrecorded: dict[str, list[str]] = field(default_factory=dict)
    # Runs that ended before their run_end (crashed, killed), by side: their unrecorded cells are
    # untested, so a cell "pass -> untested" is no failure and no removal.
    incomplete: dict[str, list[str]] = field(default_factory=dict)
    incomplete_why: dict[str, str] = field(default_factory=dict)  # run id -> why (RunSummary.ended)
    # When a 'before' run started after an 'after' run: every 'fixed', 'new failure', 'faster'
    # and 'slower' below reads the other way round in time (said first, not refused: a user may
    # mean it, as when asking what a rollback changes).
    order_note: str = ""
    # Per cell whose status changed: its status before and after as every page says it
    # ("mismatch in outputs, awaiting verdict"); the lists above keep the statuses themselves.
    words: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Performance acceptance stopped on a side (judge.comparison.timing_stop, the answer
    # `reportgen compare` gives): no timing is compared, and ``not_timed`` names the cells that
    # passed in every run of both sides, whose timing would otherwise have been.
    timing_stop: TimingStop | None = None
    not_timed: list[str] = field(default_factory=list)
    # Why no timing of the after side is like-for-like with the before side's, run-wide
    # (judge.changes.timing_unlike: a changed timing criterion, a host change that flags timing):
    # every ratio carries these flags, and the history's trends do not join the two runs.
    timing_unlike: list[str] = field(default_factory=list)
    # A changed re-measure budget: a flag on the ratios of the cells a side measured again only
    # (one whose first series was stable on both sides never reached the budget).
    remeasure_unlike: list[str] = field(default_factory=list)
    # Why a run of one side is a copy of a run of the other (judge.identity.copied_run), or None.
    copied: str | None = None
    # Cells that passed before and are untested in the later run: case -> why, in words, from the
    # cell's own reason (deselected, its layout not measured, the run stopped before it).
    untested_why: dict[str, str] = field(default_factory=dict)

    def values_note(self, case: str) -> str:
        """' (why)' beside a status change where the cell was fed other weights or inputs in the
        two runs, or fails under a changed criterion; else ''."""
        why = [self.changed_values[case]] if case in self.changed_values else []
        if case in self.changed_reference:
            why.append(self.changed_reference[case])
        if case in self.failure_criteria:
            why.append(f"under a changed criterion: {'; '.join(self.failure_criteria[case])}")
        return f" ({'; '.join(why)})" if why else ""

    def said(self, case: str, before: str, after: str) -> tuple[str, str]:
        """The statuses of a change in words (the statuses in words where none were kept)."""
        return self.words.get(case, (human(before), human(after)))

    @property
    def weights_note(self) -> str:
        """'synthetic weights on the before and after sides (runs ...)' and 'weights origin not
        recorded on ...', or ''."""
        return "; ".join(
            filter(
                None,
                (
                    f"the same weights given two origins: {ORIGIN_WRONG}" if self.origins_contradict else "",
                    f"synthetic weights on {_on_sides(self.synthetic_weights)}" if self.synthetic_weights else "",
                    f"weights origin not recorded on {_on_sides(self.weights_unrecorded)}"
                    if self.weights_unrecorded
                    else "",
                ),
            )
        )

    @property
    def ratio_method(self) -> str:
        """How a warm ratio shown is made: from one run a side, the estimate from both runs'
        samples (not the ratio of the medians shown); with replicates, the ratio of the medians
        shown, each side's the geometric mean of its runs' medians (as compare's method says)."""
        if len(self.before_runs) > 1 or len(self.after_runs) > 1:
            return (
                "with replicates, the ratio of the medians shown, each side's the geometric mean of its runs' warm "
                "medians, its interval from a bootstrap over the runs and their samples"
            )
        return (
            "estimated from both runs' samples where the timing decides, not the ratio of the medians shown; where "
            "it decides nothing, the medians' ratio"
        )

    @property
    def adapter_note(self) -> str:
        """'adapter untried on hardware: the notes', or '' where every run's adapter has met it."""
        return f"{ADAPTER_UNTRIED}: {' '.join(self.adapter_notes)}" if self.adapter_notes else ""

    @property
    def synthetic_note(self) -> str:
        """'synthetic fixture on the after side (run x): evidence of nothing', or '' when every run is a measurement."""
        return (
            f"synthetic fixture on {_on_sides(self.synthetic)}: not a measurement, this diff is evidence of nothing"
            if self.synthetic
            else ""
        )

    @property
    def incomplete_note(self) -> str:
        """'incomplete run on the after side (run x): why; ...', or '' when every run is complete."""
        if not self.incomplete:
            return ""
        runs = [run for ids in self.incomplete.values() for run in ids]
        whys = [self.incomplete_why.get(run) or "it ended before its run_end" for run in runs]
        said = whys[0] if len(runs) == 1 else "; ".join(f"{run}: {why}" for run, why in zip(runs, whys))
        return f"incomplete run on {_on_sides(self.incomplete)}: {said}; its unrecorded cells are untested"

    @property
    def criteria_unrecorded_note(self) -> str:
        """'criteria not recorded on the before and after: their logs have no plan event', or ''."""
        sides = self.criteria_unrecorded
        if not sides:
            return ""
        whose = "their logs have" if len(sides) > 1 else "its log has"
        return f"criteria not recorded on the {' and '.join(sides)}: {whose} no plan event"

    @property
    def changed(self) -> bool:
        """Whether anything besides the results changed: criteria, versions, code and data, host."""
        return bool(
            self.criteria
            or self.criteria_unrecorded
            or self.versions
            or self.code_and_data
            or self.host
            or self.host_unknown
            or self.declared_only
            or self.restated
        )

    @property
    def changed_line(self) -> str:
        """What changed besides the results, counted, for a line that then gives the timing (a
        history row's cell: the changes are named below it)."""
        return self._changed(named=False)

    @property
    def changed_named(self) -> str:
        """The same, with the first changes of each kind named by their short names: for the
        one line on a page's first screen, whose reader learns from it what changed."""
        return self._changed(named=True)

    def _changed(self, named: bool) -> str:
        kinds = (
            (("criterion", "criteria"), [c.label for c in self.criteria]),
            (("version", "versions"), [key for key, _, _ in self.versions]),
            (("code and data",) * 2, [key for key, _, _ in self.code_and_data]),
            (("host",) * 2, [key for key, _, _ in self.host]),
            (("status said differently",) * 2, [case for case, _, _ in self.restated]),
        )
        changed = [self.criteria_unrecorded_note] if self.criteria_unrecorded else []  # not known either way
        for what, names in kinds:
            if not names:
                continue
            counted = f"{len(names)} {what[len(names) != 1]}"
            if named:  # a key's words before its explanation in parentheses
                shown = list(dict.fromkeys(name.split(" (", 1)[0] for name in names))
                more = f" and {len(shown) - NAMED_CHANGES} more" if len(shown) > NAMED_CHANGES else ""
                counted += f": {', '.join(shown[:NAMED_CHANGES])}{more}"
            changed.append(counted)
        if self.host_unknown:  # not a change, and not 'no change' either
            changed.append(self.host_unknown)
        if self.declared_only:  # the same, but only by declaration
            changed.append(DECLARED_ONLY)
        return (
            f"changed first ({('; ' if named else ', ').join(changed)}; named below)"
            if changed
            else "no criteria, versions, code, data or host changed"
        )

    @property
    def lead(self) -> str:
        """What a line that then gives the timing says first: a synthetic side (by its role: the
        line stands beside the runs it names), an incomplete run, synthetic weights, then what
        changed (counted)."""
        return self._lead(self.changed_line)

    @property
    def lead_named(self) -> str:
        """``lead`` with the changes named (changed_named): the first screen's line."""
        return self._lead(self.changed_named)

    def _lead(self, changed: str) -> str:
        def on(roles: dict[str, list[str]]) -> str:
            return f"on the {' and '.join(roles)} side{'s' if len(roles) > 1 else ''}"

        return "; ".join(
            filter(
                None,
                (
                    f"synthetic fixture {on(self.synthetic)}: evidence of nothing" if self.synthetic else "",
                    f"incomplete run {on(self.incomplete)}" if self.incomplete else "",
                    f"synthetic weights {on(self.synthetic_weights)}" if self.synthetic_weights else "",
                    f"weights origin not recorded {on(self.weights_unrecorded)}" if self.weights_unrecorded else "",
                    changed,
                ),
            )
        )

    @property
    def leads(self) -> bool:
        """Whether ``lead`` says anything: a line giving the timing then starts with it."""
        return bool(
            self.changed or self.synthetic or self.incomplete or self.synthetic_weights or self.weights_unrecorded
        )

    @property
    def unstable(self) -> list[str]:
        """Cells compared with a warm timing (or generation series) that is unstable in either run: no verdict, named."""
        return list(dict.fromkeys(t.case for t in self.timings if unsteady_kind(t.flags) == STABILITY_FLAG))

    @property
    def undecided_lines(self) -> list[tuple[str, str, str, list[str]]]:
        """What the pages say of the timings that get no verdict, one entry per kind and extent:
        (title, count, why, names). A cell none of whose ratios decides is named as a cell; a
        generation series whose cell's other series is still judged is named as that series,
        never as its cell with 'no timing verdict'."""
        by_case: dict[str, list[TimingChange]] = {}
        for t in self.timings:
            by_case.setdefault(t.case, []).append(t)
        found = []
        for kind, title, cases in (
            (STABILITY_FLAG, "Unstable timing", self.unstable),
            (UNCLASSIFIED_FLAG, "Timing not classified", self.unclassified),
        ):
            whole = [c for c in cases if all(unsteady_kind(t.flags) for t in by_case[c])]
            series = [t.name for c in cases if c not in whole for t in by_case[c] if unsteady_kind(t.flags) == kind]
            if whole:
                found.append((title, f"{len(whole)} cell(s)", "no timing verdict for them", whole))
            if series:
                found.append(
                    (
                        title,
                        f"{len(series)} generation series",
                        "no timing verdict for them (the other series of each such cell is judged on its own)",
                        series,
                    )
                )
        return found

    @property
    def unclassified(self) -> list[str]:
        """Cells, not among ``unstable``, whose timing was not classified (a warm series too short
        in either run, a ratio beyond range): no verdict, named, and not said to be unstable."""
        unstable = set(self.unstable)
        return list(
            dict.fromkeys(
                t.case for t in self.timings if unsteady_kind(t.flags) == UNCLASSIFIED_FLAG and t.case not in unstable
            )
        )

    @property
    def targets_differ(self) -> bool:
        return self.targets[0] != self.targets[1]

    @property
    def empty(self) -> bool:
        return (
            not (
                self.criteria
                or self.criteria_unrecorded
                or self.new_failures
                or self.fixed
                or self.changed_criterion
                or self.other_values_pass
                or self.other_reference_pass
                or self.other_changes
                or self.restated
                or self.added
                or self.removed
                or self.redefined
                or self.replicate_statuses
                or self.versions
                or self.code_and_data
                or self.host
            )
            and self.disposition[0] == self.disposition[1]
        )

    @property
    def interval_scope(self) -> str:
        return scope_text(len(self.before_runs) or 1, len(self.after_runs) or 1)

    def verdict_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(VERDICTS, 0)
        for t in self.timings:
            if t.verdict in counts and t.judged:
                counts[t.verdict] += 1
        return counts

    @property
    def largest(self) -> TimingChange | None:
        """The unflagged cell with the largest clear change (faster or slower), by its log ratio."""
        clear = [t for t in self.timings if t.verdict in ("faster", "slower") and t.judged and t.ratio > 0]
        return max(clear, key=lambda t: (abs(math.log(t.ratio)), t.case), default=None)

    @property
    def summary(self) -> str:
        """One line: how many cells got faster, slower or neither, and the largest change; or why
        no timing is compared."""
        if self.timing_stop is not None:
            return self.timing_stop.headline
        counts = self.verdict_counts()
        text = ", ".join(f"{n} {word}" for word, n in counts.items())
        kinds = [unsteady_kind(t.flags) for t in self.timings]  # ratios, as the counts before it
        text += f", {kinds.count(STABILITY_FLAG)} unstable"
        if UNCLASSIFIED_FLAG in kinds:
            text += f", {kinds.count(UNCLASSIFIED_FLAG)} not classified"
        flagged = sum(1 for t in self.timings if t.flags and not t.unsteady)
        if flagged:
            text += f", {flagged} flagged (not judged)"
        if self.values_differ:
            text += f", {len(self.values_differ)} not compared (other weights or inputs)"
        if self.replicate_not_timed:
            text += f", {len(self.replicate_not_timed)} not compared ({NOT_TIMED_WORDS})"
        decided = sum(1 for t in self.timings if t.judged and t.verdict in VERDICTS)
        if self.interval_scope == ONE_RUN and decided:
            # One run a side: each interval covers the sampling within its run, not how much a
            # second run on the same host would move (on a shared host, often more than these
            # intervals): no rate of chance verdicts can be stated.
            text += f" ({ONE_RUN_CAVEAT})"
        elif decided >= CHANCE_FROM:
            # Each cell's 95% interval misses a ratio that did not change 1 time in 20: over many
            # cells some read faster or slower with nothing changed, and the line says how many.
            text += f" (about {round(decided * (1 - CONFIDENCE)):,} of {decided:,} judged would read faster or slower by chance with nothing changed)"
        big = self.largest
        if big is not None:
            return f"{text}; largest {speed_words(big.ratio, big.low, big.high)} on {big.name}"
        # 'no clear change' only where a ratio was judged, and of those only: unstable or flagged
        # ones decide nothing, and a regression may hide among them.
        judged = sum(1 for t in self.timings if t.judged and t.verdict in VERDICTS)
        if not judged:
            return f"{text}; {nothing_judged(len(self.timings))}"
        undecided = sum(1 for t in self.timings if not t.judged)
        # No one cell changed clearly, but their mean can: small changes alike in every cell.
        moved = [m for m in self.judged_means if m.verdict in ("faster", "slower")]
        means = "".join(
            f", but the geometric mean{f' of {m.quantity}' if m.quantity else ''} is judged {m.verdict}" for m in moved
        )
        if not undecided:
            return f"{text}; no clear change in any one timing{means}" if means else f"{text}; no clear change"
        return f"{text}; no clear change among the {judged} judged{means}, and {undecided} decide nothing"

    @property
    def judged_means(self) -> tuple[GeoMean, ...]:
        """The geometric mean, or where the ratios are of several quantities, each one's own."""
        return (self.geomean,) if self.geomean is not None else self.geomean_series

    @property
    def geomean_line(self) -> str:
        if self.timing_stop is not None:
            return self.timing_stop.note
        line = self.geomean_unpooled or geomean_text(self.geomean, self.geomean_counts)
        if self.geomean is not None and not self.geomean_unpooled and self.interval_scope == ONE_RUN:
            return f"{line}, within-run sampling only"
        return line

    @property
    def timings_counted(self) -> str:
        """'4 cells', or '4 cells, 12 generation series' where generation cells were compared."""
        series = sum(1 for t in self.timings if t.series)
        cells = len(self.timings) - series
        return f"{cells} cell{'s' if cells != 1 else ''}" + (f", {series} generation series" if series else "")

    @property
    def geomean_has_series(self) -> bool:
        """Whether generation series are among the ratios the geometric mean is over (a judged
        change with an interval)."""
        return any(t.series and t.in_geomean for t in self.timings)

    @property
    def geomean_counts(self) -> str:
        """What the geometric mean is over: '4 cells', or '6 ratios' where generation series are
        among them; '' without one."""
        geo = self.geomean
        if geo is None:
            return ""
        return f"{geo.ratios} {'ratio' if self.geomean_has_series else 'cell'}{'s' if geo.ratios != 1 else ''}" + (
            f" of {geo.quantity} only" if geo.quantity else ""
        )

    def to_dict(self) -> dict:
        data = asdict(self)
        # A ratio too large or small to judge is no figure (null), as the texts say "out of range".
        data["timings"] = [
            {**asdict(t), "ratio": round(t.ratio, 6) if judgeable(t.ratio) else None} for t in self.timings
        ]
        data["changed_criterion"] = [{**asdict(c), "text": c.text} for c in self.changed_criterion]
        if self.geomean is not None:  # the cells its ratios are of (a generation cell gives two ratios)
            data["geomean"]["cells"] = len({t.case for t in self.timings if t.in_geomean})
            data["geomean"]["verdict"] = self.geomean.verdict  # as compare.json gives it
        for mean, raw_mean in zip(self.geomean_series, data["geomean_series"]):
            raw_mean["verdict"] = mean.verdict  # each series' own, where the ratios are not pooled
        data["summary"] = self.summary
        data["synthetic_note"] = self.synthetic_note
        data["weights_note"] = self.weights_note
        data["adapter_note"] = self.adapter_note
        data["code_scope"] = self.code_scope
        data["incomplete_note"] = self.incomplete_note
        data["criteria_unrecorded_note"] = self.criteria_unrecorded_note
        data["order_note"] = self.order_note
        data["interval_scope"] = self.interval_scope
        data["unstable_timing"] = self.unstable
        data["timing_not_classified"] = self.unclassified
        data["timing_stopped"] = self.timing_stop.note if self.timing_stop is not None else ""
        return data


def _side(runs: RunSummary | Sequence[RunSummary], role: str) -> list[RunSummary]:
    found = [runs] if isinstance(runs, RunSummary) else list(runs)
    if not found:
        raise DiffRefused(f"no {role} run")
    first = found[0]
    for other in found[1:]:
        if (other.workload, where(other)) != (first.workload, where(first)):
            raise DiffRefused(
                f"{other.run_id} is a run of {other.workload!r} on {where(other)}, {first.run_id} of {first.workload!r} on {where(first)}: replicates of one side are runs of one workload on one target"
            )
    for other in found[1:]:
        differ = [c.text for c in replicate_mismatch(from_dicts(first.criteria), from_dicts(other.criteria))]
        differ += replicate_changes(
            (first.versions, first.code_data, first.hashes, first.host),
            (other.versions, other.code_data, other.hashes, other.host),
        )
        if differ:
            raise DiffRefused(f"{other.run_id} is no replicate of {first.run_id}: {'; '.join(differ)}")
    _refuse_repeats([r.run_id for r in found], role)
    return found


def _refuse_repeats(ids: Sequence[str], role: str) -> None:
    if len(set(ids)) != len(ids):
        raise DiffRefused(f"a {role} run is given twice: {', '.join(sorted({i for i in ids if ids.count(i) > 1}))}")


def _refuse_overlap(befores: Sequence[str], afters: Sequence[str]) -> None:
    overlap = set(befores) & set(afters)
    if overlap:
        raise DiffRefused(
            f"{', '.join(sorted(overlap))} is on both sides: a run is compared with other runs, not with itself"
        )


def _series_samples(runs: list[RunSummary], case: str, series: str) -> tuple[float | None, list[list[float]]]:
    """As ``_side_samples``, of a generation series: None and [] unless every run's cell passed with it."""
    cells = [
        c
        for r in runs
        if (c := r.cells.get(case)) is not None
        and c.status == "pass"
        and c.generation.get(series)
        and series in c.generation_median_s
    ]
    if len(cells) != len(runs):
        return None, []
    return side_median([c.generation_median_s[series] for c in cells]), [list(c.generation[series]) for c in cells]


def _side_samples(runs: list[RunSummary], case: str) -> tuple[float | None, list[list[float]]]:
    """The geometric mean of the runs' warm medians (side_median), and each run's kept samples,
    over the runs whose cell passed."""
    cells = [r.cells.get(case) for r in runs]
    # As compare takes them: a run whose samples hold a zero (no time) leaves the cell untimed.
    passed = [c for c in cells if c is not None and c.status == "pass" and min(_kept(c), default=0) > 0]
    if len(passed) != len(runs):
        return None, []
    samples = [list(c.warm_samples_s) for c in passed if c.warm_samples_s]
    medians = [m for c in passed if (m := c.warm_median_s) is not None]  # every one: passed holds only timed cells
    return side_median(medians), (samples if len(samples) == len(passed) else [])


def _waits(runs: Sequence[RunSummary], case: str, series: str = "") -> list[list[float] | None]:
    """Each run's CPU wait over its warm loop of a cell (``series``: over its warm generations),
    in run order (CellSummary.warm_waited, generation_waited)."""
    cells = [r.cells.get(case) for r in runs]
    return [(c.generation_waited if series else c.warm_waited) if c is not None else None for c in cells]


def _kept(cell: CellSummary | None) -> list[float]:
    """A run's kept warm samples of a cell (its median alone, where a summary kept no samples)."""
    if cell is None or cell.warm_median_s is None:
        return []
    return list(cell.warm_samples_s or ()) or [cell.warm_median_s]


def diff_runs(before: RunSummary | Sequence[RunSummary], after: RunSummary | Sequence[RunSummary]) -> RunDiff:
    """What changed from ``before`` to ``after`` (a run or replicates of one), one workload (else DiffRefused)."""
    befores, afters = _side(before, "before"), _side(after, "after")
    first, last = befores[0], afters[0]
    if first.workload != last.workload:
        raise DiffRefused(
            f"{first.run_id} is a run of {first.workload!r} and {last.run_id} of {last.workload!r}: "
            "diff compares two runs of one workload"
        )
    _refuse_overlap([r.run_id for r in befores], [r.run_id for r in afters])

    def samples(side: Sequence[RunSummary]) -> list[tuple[str, dict[str, Sequence[float]]]]:
        return [(r.run_id, {case: c.warm_samples_s or () for case, c in r.cells.items()}) for r in side]

    for side in (befores, afters):  # a side's replicates: each a measurement of its own
        copied = copied_run(samples(side))
        if copied is not None:
            raise DiffRefused(copied)
    result = RunDiff(first.run_id, last.run_id, (first.outcome, last.outcome), (where(first), where(last)))
    result.before_runs, result.after_runs = [r.run_id for r in befores], [r.run_id for r in afters]
    result.synthetic = {
        role: ids
        for role, side in (("before", befores), ("after", afters))
        if (ids := [r.run_id for r in side if r.synthetic])
    }
    result.adapter_notes = list(dict.fromkeys(r.adapter_note for r in (*befores, *afters) if r.adapter_note))
    result.synthetic_weights = {
        role: ids
        for role, side in (("before", befores), ("after", afters))
        if (ids := [r.run_id for r in side if r.weights_origin == "synthetic"])
    }
    # Neither trained nor made up, as far as the log says: named beside synthetic weights, and
    # where no run has them (two logs before 1.4 are not two runs of trained weights). A
    # synthetic fixture's side is already evidence of nothing, said first.
    result.weights_unrecorded = {
        role: ids
        for role, side in (("before", befores), ("after", afters))
        if (
            ids := [
                r.run_id for r in side if r.weights_origin is None and (result.synthetic_weights or not r.synthetic)
            ]
        )
    }
    result.incomplete = {
        role: ids
        for role, side in (("before", befores), ("after", afters))
        if (ids := [r.run_id for r in side if not r.complete])
    }
    result.incomplete_why = {r.run_id: r.ended for r in (*befores, *afters) if not r.complete and r.ended}
    result.order_note = _order_note(befores, afters)
    result.criteria = criteria_changes(from_dicts(first.criteria), from_dicts(last.criteria))
    result.criteria_unrecorded = [role for role, r in (("before", first), ("after", last)) if not r.plan_recorded]
    result.timing_stop = timing_stop(
        (role, r.run_id, r.performance_stopped) for role, side in (("before", befores), ("after", afters)) for r in side
    )
    result.host, result.host_unknown = compare_hosts(
        side_host([(r.run_id, r.host) for r in befores]), side_host([(r.run_id, r.host) for r in afters])
    )
    budget = [c for c in result.criteria if c.key == "remeasure_rounds"]
    # The settings every loop of each side ran under alike: a change of one is run-wide; any other
    # setting is compared cell by cell (_Cells._change).
    uniform = [uniform_settings(c.loop_settings for r in side for c in r.cells.values()) for side in (befores, afters)]
    run_wide = frozenset(label for label in SETTING_LABELS if label in uniform[0] and label in uniform[1])
    result.timing_unlike = timing_unlike([c for c in result.criteria if c not in budget], result.host, run_wide)
    result.remeasure_unlike = timing_unlike(budget, [])
    # A later run holding an earlier one's measured warm samples measured nothing anew: none of
    # its timings is compared (`reportgen diff` refuses the pair; a site's history says so beside
    # it). Synthetic runs (test fixtures, evidence of nothing and said to be) are built alike.
    if not any(r.synthetic for r in (*befores, *afters)):
        result.copied = copied_run(samples(befores) + samples(afters), whole_run=False)
    if result.copied is not None:
        result.timing_unlike.append(result.copied)
    facts = WeightsFacts(**first.weights), WeightsFacts(**last.weights)
    weights = weights_identity(*facts, NAMES)
    if origins_contradict(*facts, weights):
        # One weights file cannot be both synthetic and pretrained: the change of origin is a
        # contradiction between the logs, not a change of what was run.
        result.origins_contradict = True
        result.criteria = [
            replace(c, text=origin_change_words(c.text, weights)) if c.key == "weights_origin" else c
            for c in result.criteria
        ]
    revision = next((c for c in result.criteria if c.key == "model_revision"), None)
    # Another model (compare refuses the pair) or other weights: no timing of the pair is
    # compared, no pass is a fix, and a trend does not join across it either.
    other: tuple[str, str] | None = None
    if revision is not None:
        other = ("model_revision", revision.text)
        result.timing_unlike.append(f"another model: {revision.text}")
    elif not weights.same:
        other = ("weights", weights.text)
        # Weights not recorded on a side are not known to be other ones: said as they are.
        result.timing_unlike.append(weights.text if weights.basis == UNRECORDED else f"other weights: {weights.text}")
    elif weights.basis == DECLARED:
        result.declared_only.append(weights.text)
    cells = _Cells(result, befores, afters, other, run_wide)
    for case in sorted(set(first.cells) | set(last.cells)):
        cells.diff(case)
    if cells.declared_inputs:
        result.declared_only.append(
            f"inputs of {cells.declared_inputs} cell{'s' if cells.declared_inputs != 1 else ''} identified by "
            "declaration only, not verified (the files differ in bytes and a log has no content hash)"
        )
    result.geomean, result.geomean_unpooled, result.geomean_series = pooled_mean(_judge_timings(cells.timed))
    result.versions = version_changes(first.versions, last.versions)
    result.code_and_data = code_and_data_changes(first.code_data, first.hashes, last.code_data, last.hashes)
    return result


NAMES = ("before", "after")


def _order_note(befores: list[RunSummary], afters: list[RunSummary]) -> str:
    """Said first when every before run started after every after run (their times read as
    instants: a stamp with an offset is converted): then each change reads back in time.
    Interleaved replicates (A, B, A, B) are good practice and are not the wrong way round; a
    run whose start is no ISO time is not judged."""
    before = [(when, r.run_id) for r in befores if (when := utc_time(r.started_at)) is not None]
    after = [(when, r.run_id) for r in afters if (when := utc_time(r.started_at)) is not None]
    # By the instants alone: two runs that started at the same second are in no order (their
    # ids decided it once).
    if len(before) != len(befores) or len(after) != len(afters) or min(before)[0] <= max(after)[0]:
        return ""
    (first, first_id), (last, last_id) = min(before), max(after)
    which = "every before run" if len(befores) > 1 else "the before run"
    return (
        f"{which} started after every after run ({first_id} at {first:%Y-%m-%dT%H:%M:%SZ}, "
        f"after {last_id} at {last:%Y-%m-%dT%H:%M:%SZ}): each change below reads back in time; "
        "give the earlier runs first to read them forward"
    )


def _run_reference(before: Sequence[str | None], after: Sequence[str | None]) -> str | None:
    """Why the two runs' saved reference outputs (each [content sha256, file sha256, recipe],
    run-wide) are not known to be the same, or None: their content hashes (of one recipe) differ;
    else their file hashes differ (a log without a content hash, or of another recipe: the same
    tensors written another way differ too, so the reference is not verified); or one run
    recorded them and the other did not."""
    (ca, fa, ra), (cb, fb, rb) = hash_triple(before), hash_triple(after)
    if (ra or RECIPE_V1) != (rb or RECIPE_V1):
        ca = cb = None  # hashes by content of two recipes say nothing of each other
    if ca and cb:
        if ca == cb:
            return None
        return (
            f"other reference outputs by content, run-wide: sha256 {ca[:12]}... against {cb[:12]}... "
            "(this input shape's outputs not hashed on their own)"
        )
    if fa and fb:
        if fa == fb:
            return None
        return (
            f"reference outputs not verified the same: their files differ (sha256 {fa[:12]}... against {fb[:12]}...) "
            "and a log holds no content hash"
        )
    if fa or fb:
        lacking = NAMES[0] if not fa else NAMES[1]
        return f"reference outputs not verified the same: the {lacking} run recorded none"
    return None


class _Cells:
    """Sorts each case of a pair into ``result``'s lists, one step a method: a case on one side
    only, a case key naming other cells, other weights or inputs, statuses, then timings. Each
    decision is a judged fact from reportgen/judge; this only files it."""

    def __init__(
        self,
        result: RunDiff,
        befores: list[RunSummary],
        afters: list[RunSummary],
        other: tuple[str, str] | None,
        run_wide: frozenset[str] = frozenset(),
    ):
        # other: (criterion key, words) where every cell was another model's or fed other weights
        self.result, self.befores, self.afters, self.other = result, befores, afters, other
        # The settings whose change, if any, every ratio carries already (result.timing_unlike).
        self.run_wide = run_wide
        # How a flag of a side's first run names it: by the side alone, or by its run id where the
        # side has replicates (their flags name theirs: 'after replicate <id>').
        self.first_labels = (
            _first_label("before", befores),
            _first_label("after", afters),
        )
        self.timed: list[tuple[TimingChange, list[list[float]], list[list[float]]]] = []
        self.declared_inputs = 0  # cells whose inputs are the same by declaration only
        # Why the run-wide saved reference outputs are not known to be the same, or None.
        self.run_reference = _run_reference(
            *(side[0].hashes.get(REFERENCE_OUTPUTS, [None, None]) for side in (befores, afters))
        )
        # The reference outputs' content hashes follow two recipes: no shape's are compared.
        recipes = {
            (hash_triple(side[0].hashes.get(REFERENCE_OUTPUTS, ()))[2] or RECIPE_V1) for side in (befores, afters)
        }
        self.reference_recipes_differ = len(recipes) > 1

    def diff(self, case: str) -> None:
        result = self.result
        old, new = self.befores[0].cells.get(case), self.afters[0].cells.get(case)
        if old is None or new is None:
            (result.added if old is None else result.removed).append(case)
            if old is None and new is not None and new.status in ("untested", "skipped"):
                result.added_not_run.append(case)
            if new is None and old is not None and old.status == "pass":
                result.removed_passed.append(case)
            return
        redefined = cell_redefined(old.planned, new.planned, NAMES)
        if redefined is not None:  # not one cell: nothing of it is compared
            result.redefined.append((case, redefined))
            return
        values = self._other_values(case, old, new)
        if (reference := self._other_reference(old, new)) is not None:
            result.changed_reference[case] = reference
        statuses = self._replicate_statuses(case)
        if old.status != new.status:
            _status_change(result, case, old, new, values)
            if old.status == "pass" and new.status == "untested":
                result.untested_why[case] = _untested_why(new, bool(result.incomplete.get("after")))
        elif old.words and new.words and old.words != new.words:
            result.restated.append((case, old.words, new.words))
        passed = old.status == new.status == "pass"
        # As compare says each of these: no ratio, only the reason.
        if result.timing_stop is not None:
            if passed:
                result.not_timed.append(case)
        elif values is not None:
            if passed:
                result.values_differ.append((case, result.changed_values[case]))
        elif statuses is not None:
            if passed:
                result.replicate_not_timed.append((case, f"{REPLICATE_NOT_PASSED} ({statuses})"))
        else:
            self._time(case, old, new, passed)

    def _other_values(self, case: str, old: CellSummary, new: CellSummary) -> str | None:
        """The criterion key ('model_revision', 'weights' or 'inputs') that changed for this
        cell, recorded in ``changed_values`` with its words; None when all are the same (as
        compare says it, a cell of another model, other weights or inputs is not compared)."""
        if self.other is not None:
            self.result.changed_values[case] = self.other[1]
            return self.other[0]
        inputs = inputs_identity(_inputs(old), _inputs(new), NAMES)
        if not inputs.same:
            self.result.changed_values[case] = inputs.text
            return "inputs"
        self.declared_inputs += inputs.basis == DECLARED
        return None

    def _other_reference(self, old: CellSummary, new: CellSummary) -> str | None:
        """Why the cell was judged against other reference outputs, or None: a generation cell's
        reference tokens differ; its input shape's content hashes differ; or (where a run did not hash that shape on its own) the run-wide
        reference outputs' content hashes differ."""
        if old.reference_tokens and new.reference_tokens and old.reference_tokens != new.reference_tokens:
            # A generation cell judged against other greedy tokens of the reference: other
            # references, whether or not a reference file was hashed.
            return "other reference tokens: the reference model's greedy tokens differ"
        if old.reference and new.reference and not self.reference_recipes_differ:
            if old.reference == new.reference:
                return None
            return f"other reference outputs by content: sha256 {old.reference[:12]}... against {new.reference[:12]}..."
        return self.run_reference

    def _replicate_statuses(self, case: str) -> str | None:
        """The statuses that differ between the runs of a side (recorded), or None."""
        if len(self.befores) + len(self.afters) <= 2:
            return None
        statuses = replicate_statuses(
            (role, [(r.run_id, c.status if (c := r.cells.get(case)) else None) for r in side])
            for role, side in (("before", self.befores), ("after", self.afters))
        )
        if statuses is not None:
            self.result.replicate_statuses.append((case, statuses))
        return statuses

    def _time(self, case: str, old: CellSummary, new: CellSummary, passed: bool) -> None:
        """The cell's warm series, then each generation series: a ratio where every run of both
        sides passed and timed it, else (where both first runs passed) which runs lack it."""
        sides = (("before", self.befores), ("after", self.afters))
        before_s, before_samples = _side_samples(self.befores, case)
        after_s, after_samples = _side_samples(self.afters, case)
        if passed and not (old.generation or new.generation) and not (before_s and after_s):
            kept = [(role, [(r.run_id, _kept(r.cells.get(case))) for r in side]) for role, side in sides]
            self.result.replicate_not_timed.append((case, untimed_words(kept)))
        if before_s and after_s:
            self._change(case, old, new, "", (before_s, before_samples), (after_s, after_samples))
        for series, words in GENERATION_SERIES.items():
            before_s, before_samples = _series_samples(self.befores, case, series)
            after_s, after_samples = _series_samples(self.afters, case, series)
            if old.generation.get(series) and new.generation.get(series) and not (before_s and after_s):
                untimed = [
                    (role, [r.run_id for r in side if not ((c := r.cells.get(case)) and c.generation.get(series))])
                    for role, side in sides
                ]
                self.result.replicate_not_timed.append((f"{case} ({words})", no_generation_timing(untimed)))
            if before_s and after_s:
                self._change(case, old, new, series, (before_s, before_samples), (after_s, after_samples))

    def _change(
        self,
        case: str,
        old: CellSummary,
        new: CellSummary,
        series: str,
        before: tuple[float, list[list[float]]],
        after: tuple[float, list[list[float]]],
    ) -> None:
        """One timing change (``series``: a generation series, "" the cell's warm series) with
        every flag that qualifies it."""
        result = self.result
        waits = (_waits(self.befores, case, series), _waits(self.afters, case, series))
        recordable = tuple([wait_recordable(r.schema_version) for r in side] for side in (self.befores, self.afters))
        flags = (
            timing_flags(
                self.befores[0],
                self.afters[0],
                old,
                new,
                series,
                waits,
                (recordable[0], recordable[1]),
                self.first_labels,
            )
            + result.timing_unlike
        )
        # The settings the cell's loops ran under, every run's: threads changed for this cell alone
        # flag this ratio alone, as a changed timing scope does.
        settings = [_settings(r, case) for r in self.befores], [_settings(r, case) for r in self.afters]
        flags += setting_flags(*settings, FLAGGING_HOST_KEYS, NAMES, self.run_wide)
        measured_again = any(_before(r.cells.get(case), series) for r in (*self.befores, *self.afters))
        flags += result.remeasure_unlike if measured_again else []
        flags += _replicates_flags(case, self.befores[1:], "before") + _replicates_flags(case, self.afters[1:], "after")
        if not series:  # the warm clock of every run of a side against its first run's
            flags += replicate_timed(
                (role, [(r.run_id, cell.timed if (cell := r.cells.get(case)) is not None else None) for r in side])
                for role, side in (("before", self.befores), ("after", self.afters))
            )
        reps = [[_repetitions(r.cells.get(case), series) for r in side] for side in (self.befores, self.afters)]
        earlier = [[_before(r.cells.get(case), series) for r in side] for side in (self.befores, self.afters)]
        whole = TOTALS if series == "decode_token" else ""  # the repetitions' decode times, tokens/s
        totals = [
            [_before(r.cells.get(case), whole) if whole else None for r in side] for side in (self.befores, self.afters)
        ]
        own = [[_logged(r.cells.get(case), series) for r in side] for side in (self.befores, self.afters)]
        flags += replicate_flags(
            "before", result.before_runs, before[1], waits[0], reps[0], earlier[0], totals[0], own[0]
        )
        flags += replicate_flags("after", result.after_runs, after[1], waits[1], reps[1], earlier[1], totals[1], own[1])
        # A site state from before planned fields kept: one sequence.
        batch = old.planned[0] if old.planned and isinstance(old.planned[0], int) else 1
        change = TimingChange(case, before[0], after[0], flags, series=series_words(series, batch) if series else "")
        result.timings.append(change)
        self.timed.append((change, before[1], after[1]))


def _settings(run: RunSummary, case: str) -> dict[str, str | None] | None:
    """The settings a run's loop of the cell ran under (CellSummary.loop_settings)."""
    cell = run.cells.get(case)
    return cell.loop_settings if cell is not None else None


def _untested_why(cell: CellSummary, stopped: bool) -> str:
    """Why the later run's cell is untested, in words: from its own reason ('layout not measured
    in the later run'), else the later run stopped before it (``stopped``: a run of that side is
    incomplete) or recorded no result of it."""
    if cell.untested_reason == DESELECTED:
        return "the later run did not select them"
    if cell.untested_reason:
        return f"{cell.untested_reason} in the later run"
    return "the later run stopped before them" if stopped else "the later run recorded no result for them"


def _inputs(cell: CellSummary) -> InputsFacts | None:
    return None if cell.inputs is None else InputsFacts(*cell.inputs)  # type: ignore[arg-type]


def _status_change(result: RunDiff, case: str, old: CellSummary, new: CellSummary, values: str | None) -> None:
    """``values``: the criterion ('weights' or 'inputs') whose change ``changed_values`` already
    names beside this cell; it is not named again as a changed criterion (values_note)."""
    change = (case, old.status, new.status)
    result.words[case] = (old.words or human(old.status), new.words or human(new.status))
    # Without its dtype (a summary from before dtypes were kept) every correctness change applies.
    relevant = (
        changed_for(result.criteria, new.dtype or "")
        if new.dtype
        else [c for c in result.criteria if c.judges == "correctness"]
    )
    if new.status in FAILING and old.status not in FAILING:
        # Said with the cell's other weights or inputs, and the criteria that could have decided it.
        result.new_failures.append(change)
        if named := [c.text for c in relevant if c.key != values]:
            result.failure_criteria[case] = named
    elif new.status == "pass" and old.status in FAILING and case in result.changed_values:
        result.other_values_pass.append(change)  # not fixed: not the same values
    elif new.status == "pass" and old.status != "pass":
        reference = result.changed_reference.get(case)
        if relevant:  # with the other reference beside the criteria, where it changed too
            texts = tuple(c.text for c in relevant) + ((reference,) if reference else ())
            result.changed_criterion.append(CriterionPass(case, old.status, new.status, texts))
        elif old.status in FAILING and reference:
            result.other_reference_pass.append(change)  # not fixed: judged against another reference
        elif old.status in FAILING:
            result.fixed.append(change)
        else:  # untested or skipped before: it passes now, but nothing that failed was fixed
            result.other_changes.append(change)
    else:
        result.other_changes.append(change)


def largest_changes(diff: RunDiff, count: int) -> list[str]:
    """The ``count`` cells whose timing changed most (by the log of the ratio), judged and unflagged first."""

    def rank(t: TimingChange) -> tuple[int, float, str]:
        judged = t.verdict in ("faster", "slower") and t.judged
        return (0 if judged else 1, -abs(math.log(t.ratio)) if 0 < t.ratio < math.inf else 0.0, t.case)

    # An unstable cell decides nothing, so it leads no chart (the diff below names it); the
    # charts draw warm medians, which a generation series is not.
    return [t.case for t in sorted((t for t in diff.timings if not t.unsteady and not t.series), key=rank)[:count]]


def _interval_text(change: TimingChange) -> str:
    return "" if change.low is None or change.high is None else f", 95% interval {change.interval_shown()}"


def _text(lines: list[str]) -> str:
    """The lines of a terminal text, one line each: a line break or other hidden character a
    log's value brings (a model revision, a version) is shown as <U+XXXX>, so no value can start
    a line that reads as this text's own."""
    return "\n".join(visible(line, keep="\t") for line in lines)


def format_diff(diff: RunDiff) -> str:
    """The comparison as terminal text: what changed first (criteria, versions, code and data, host),
    then the results (status changes, timing), as the site's history orders them."""
    runs = ""
    if len(diff.before_runs) > 1 or len(diff.after_runs) > 1:
        runs = f" (replicates: {', '.join(diff.before_runs)} -> {', '.join(diff.after_runs)})"
    synthetic = f" [{diff.synthetic_note}]" if diff.synthetic else ""
    synthetic += f" [{diff.weights_note}]" if diff.weights_note else ""
    synthetic += f" [{diff.adapter_note}]" if diff.adapter_note else ""
    lines = [f"{diff.before} -> {diff.after}{runs}{synthetic}"]
    if diff.targets_differ:  # before anything else is read as a change on one target
        lines.append(f"targets differ: {diff.targets[0]} -> {diff.targets[1]} ({TARGETS_DIFFER})")
    if diff.order_note:
        lines.append(f"order: {diff.order_note}")
    if diff.incomplete:
        lines.append(diff.incomplete_note)
    if diff.criteria_unrecorded:  # not known, so never a count of none
        recorded = f"; of what was recorded, {len(diff.criteria)} differ" if diff.criteria else ""
        lines.append(f"criteria changes: not known ({diff.criteria_unrecorded_note}{recorded})")
    else:
        lines.append(
            f"criteria changes: {len(diff.criteria)}"
            + (" (read every result below against them)" if diff.criteria else "")
        )
    lines += [f"  {c.text}" for c in diff.criteria]
    lines.append(f"version changes: {len(diff.versions)}")
    lines += [f"  {key}: {a} -> {b}" for key, a, b in diff.versions]
    lines.append(f"code and data changes: {len(diff.code_and_data)} ({diff.code_scope})")
    lines += [f"  {key}: {a} -> {b}" for key, a, b in diff.code_and_data]
    host = f"host changes: {len(diff.host)}"
    if diff.host_unknown:  # what is not known, beside the changes or instead of a count of none
        host = (
            f"{host}; not known: {diff.host_unknown}" if diff.host else f"host changes: not known ({diff.host_unknown})"
        )
    lines.append(host)
    lines += [f"  {key}: {a} -> {b}" for key, a, b in diff.host]
    if diff.declared_only:
        lines.append(f"{DECLARED_ONLY}:")
        lines += [f"  {text}" for text in diff.declared_only]
    for title, count, why, names in diff.undecided_lines:
        lines.append(f"{title.lower()}: {count}, {why.replace(' for them', '')}: {', '.join(names)}")
    if diff.restated:
        lines.append(f"{RESTATED}: {len(diff.restated)}")
        lines += [f"  {case}: {a} -> {b}" for case, a, b in diff.restated]
    lines.append(f"disposition: {diff.disposition[0]} -> {diff.disposition[1]}")
    for title, rows in (("new failures", diff.new_failures), ("fixed", diff.fixed)):
        lines.append(f"{title}: {len(rows)}")
        lines += [
            "  {}: {} -> {}".format(case, *diff.said(case, old, new)) + diff.values_note(case)
            for case, old, new in rows
        ]
    lines.append(f"{CHANGED_CRITERION} (not fixed): {len(diff.changed_criterion)}")
    lines += [
        "  {}: {} -> {}, {}".format(c.case, *diff.said(c.case, c.before, c.after), c.text)
        for c in diff.changed_criterion
    ]
    for label, rows in ((OTHER_VALUES, diff.other_values_pass), (OTHER_REFERENCE, diff.other_reference_pass)):
        if rows:
            lines.append(f"{label} (not fixed): {len(rows)}")
            lines += [
                "  {}: {} -> {}".format(case, *diff.said(case, old, new)) + diff.values_note(case)
                for case, old, new in rows
            ]
    lines.append(f"other status changes: {len(diff.other_changes)}")
    lines += ["  {}: {} -> {}".format(case, *diff.said(case, old, new)) for case, old, new in diff.other_changes]
    not_run = f" ({len(diff.added_not_run)} of them not run: untested or skipped)" if diff.added_not_run else ""
    lines.append(f"cells added: {len(diff.added)}{not_run}")
    lines += [f"  {case}" + (" (not run)" if case in diff.added_not_run else "") for case in diff.added]
    lines.append(f"cells removed: {len(diff.removed)}")
    lines += [f"  {case}" for case in diff.removed]
    if diff.redefined:
        lines.append(f"{REDEFINED}: {len(diff.redefined)}")
        lines += [f"  {case}: {why}" for case, why in diff.redefined]
    if diff.replicate_statuses:
        lines.append(f"{REPLICATE_STATUSES}: {len(diff.replicate_statuses)}")
        lines += [f"  {case}: {why}" for case, why in diff.replicate_statuses]
    if diff.timing_stop is not None:
        stop = diff.timing_stop
        lines.append(f"{stop.headline} ({stop.runs_text})")
        lines.append(f"cells that passed in both runs, timing not compared: {len(diff.not_timed)}")
        lines += [f"  {case}: {stop.note}" for case in diff.not_timed]
        return _text(lines)
    lines.append(f"timing ({diff.interval_scope}): {diff.summary}")
    if diff.values_differ:
        lines.append(
            f"cells that passed in both runs, other weights or inputs, timing not compared: {len(diff.values_differ)}"
        )
        lines += [f"  {case}: not compared: {why}" for case, why in diff.values_differ]
    if diff.replicate_not_timed:
        lines.append(f"{REPLICATE_NOT_TIMED}: {len(diff.replicate_not_timed)}")
        lines += [f"  {case}: not compared: {why}" for case, why in diff.replicate_not_timed]
    if diff.geomean is not None or diff.geomean_unpooled:
        lines.append(f"geometric mean: {diff.geomean_line}")
    lines.append(
        f"warm time ratio (after / before: {diff.ratio_method}), cells that passed in both runs with their timing compared: {diff.timings_counted}"
    )
    lines += [
        f"  {t.name}: {fmt_time(t.before_s)} -> {fmt_time(t.after_s)} ({t.ratio_shown()}{_interval_text(t)}): {t.verdict}"
        + "".join(f" [{flag}]" for flag in t.flags)
        for t in diff.timings
    ]
    return _text(lines)


def _geomean_text(geo: GeoMean, counted: str = "") -> str:
    """``counted``: what it is over, in words ('6 ratios'); '': its cells."""
    cells = counted or f"{geo.ratios} cell{'s' if geo.ratios != 1 else ''}"
    if geo.low is None or geo.high is None:
        return f"{speed_words(geo.ratio)} at the point estimate, over {cells} (no interval: too few samples)"
    interval = interval_words(geo.ratio, geo.low, geo.high, "the before time")
    if geo.verdict == "no clear difference":
        return f"no clear difference ({speed_words(geo.ratio, geo.low, geo.high)} at the point estimate, {interval}) over {cells}"
    return f"{speed_words(geo.ratio, geo.low, geo.high)} ({interval}) over {cells}"


def geomean_text(geo: GeoMean | None, counted: str = "") -> str:
    return "not measured: no unflagged cell with an interval" if geo is None else _geomean_text(geo, counted)


# The run_start line: about 1.5 kB (its provenance names a few files and their hashes).
START_PEEK_BYTES = 64 * 1024


def _start_run_id(log: object, max_bytes: int) -> str | None:
    """The run id on a local log's first line, read alone (at most START_PEEK_BYTES); None when
    that line does not say it plainly (a remote log, a line longer than that, not a run_start):
    the log is then read whole, and the full read reports what is wrong with it."""
    from reportgen.storage.local import NotReadable, open_regular

    if not isinstance(log, Path):
        return None
    try:
        with open_regular(log, max_bytes) as stream:
            head = stream.read(START_PEEK_BYTES)
    except (OSError, NotReadable):
        return None
    line, newline, _ = head.partition(b"\n")
    if not newline:
        return None
    try:
        start = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(start, dict) or start.get("kind") != "run_start":
        return None
    run_id = start.get("run_id")
    return run_id if isinstance(run_id, str) else None


# The changes of each kind a line giving the timing names (the rest are counted, and named below it).
NAMED_CHANGES = 2
# The dispositions from best to worst, for --fail-on worse.
OUTCOME_RANK = {"suitable": 0, "change": 1, "blocked": 2}


def worse_reasons(diff: RunDiff, fail_on: str) -> tuple[list[str], str]:
    """Why ``reportgen diff --fail-on`` refuses the later run (_worse_reasons), and what it left
    ungated; 'undecided' refuses what 'worse' refuses and what it left ungated (a timing that
    decides nothing, or one run a side, read slower). Across a change of target the refusal says first that it gates that change: each
    reason is the target change's (a migration question, see `reportgen compare`), not a
    regression on one target."""
    reasons, ungated = _worse_reasons(diff, "worse" if fail_on == "undecided" else fail_on)
    if fail_on == "undecided":
        reasons += _undecided_reasons(diff)
        ungated = ""
    if reasons and diff.targets_differ:
        reasons.insert(
            0,
            f"this diff gates a change of target ({diff.targets[0]} -> {diff.targets[1]}), not an upgrade on one"
            " target: what follows is the target change's, a migration question (see `reportgen compare`)",
        )
    return reasons, ungated


def _named(items: Sequence[str], most: int = 5) -> str:
    """The first ``most`` of ``items``, and how many more."""
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def _slower_means(diff: RunDiff) -> list[str]:
    """The geometric means judged slower (the pooled one, or each series' own), named."""
    return [
        "the geometric mean" + (f" of {m.quantity}" if m.quantity else "")
        for m in diff.judged_means
        if m.verdict == "slower"
    ]


def _undecided_reasons(diff: RunDiff) -> list[str]:
    """What the strict gate refuses beyond 'worse': what 'worse' leaves ungated (a cell judged
    slower with one run a side; a timing that decides nothing whose later median is higher),
    and cells that passed on both sides whose timing was not compared at all (other weights or
    inputs, acceptance stopped, a replicate without it): no timing of theirs shows they are not
    slower."""
    reasons = []
    if len(diff.before_runs) == 1 and len(diff.after_runs) == 1:
        slower = [t.name for t in diff.timings if t.judged and t.verdict == "slower"]
        if slower:
            reasons.append(
                f"{len(slower)} cell(s) judged slower with one run a side, whose intervals cover sampling within "
                f"the two runs only: {_named(slower)}"
            )
        reasons += [f"{words} judged slower with one run a side" for words in _slower_means(diff)]
    higher = [t for t in diff.timings if not t.judged and t.after_s > t.before_s]
    if higher:
        reasons.append(
            f"{len(higher)} timing(s) whose later median is higher decide nothing (unstable, not classified or "
            f"flagged: see each one's flags): " + _named([f"{t.name} {t.after_s / t.before_s:.3g}x" for t in higher])
        )
    if diff.timing_stop is not None:
        reasons.append(f"no timing compared: {diff.timing_stop.note}")
    uncompared = [case for case, _ in diff.values_differ] + [case for case, _ in diff.replicate_not_timed]
    if uncompared:
        named = _named(uncompared)
        reasons.append(
            f"the timing of {len(uncompared)} cell(s) that passed on both sides not compared (other "
            f"weights or inputs, or a replicate without it): {named}"
        )
    return reasons


def _worse_reasons(diff: RunDiff, fail_on: str) -> tuple[list[str], str]:
    """Why ``reportgen diff --fail-on`` refuses the later run, in words ([]: it does not), and a
    line on what it left ungated ("": nothing). 'new-failures': cells that started failing, or
    that passed and went untested (a later run that stopped before them);
    'worse': those, a disposition further from suitable, or a cell or the geometric mean judged
    slower (a ratio that decides something). With one run on each side a ratio's interval covers
    sampling within the two runs only, not the variation between runs (on the shared host of the
    sample runs, the stable cells of two runs of each workload 5 hours apart, collector 0.8.0 then
    0.9.0, differed by a median 9% and up to 63%), so speed gates only with replicates (more than
    one run on a side: the interval then takes the spread between runs into account, widely with
    few runs): the line names the cells that read slower where speed was not gated, and (with
    any count of runs) the timings that decide nothing whose later median is higher."""
    reasons = [f"{len(diff.new_failures)} cell(s) started failing"] if diff.new_failures else []
    if under := [case for case, _, _ in diff.new_failures if case in diff.failure_criteria]:
        # Said where the gate says it, not only in the text: a tightened criterion, not the code,
        # may have failed them.
        reasons[0] += f" ({len(under)} of them under a changed criterion: see the criteria changes)"
    # A cell that passed before and has no result now is no failure, but no pass either, whether
    # the later run stopped before it, did not select it (--only, --modes) or left it out of its
    # matrix (--max-cells, an edited plan): a gate that let such a run through would pass anything.
    untested = [case for case, old, new in diff.other_changes if old == "pass" and new == "untested"]
    stopped = (
        "the later run stopped before them" if diff.incomplete.get("after") else "the later run did not select them"
    )
    # By each cell's own reason: a later run that ran a cell and could not tell its layout (a log
    # before 1.1) did not leave it out.
    whys = {case: diff.untested_why.get(case, stopped) for case in untested}
    for cases, said in (
        *(
            (([c for c in untested if whys[c] == why]), f"went untested ({why})")
            for why in dict.fromkeys(whys.values())
        ),
        (diff.removed_passed, "are not in the later run's matrix"),
    ):
        if cases:
            named = _named(cases)
            reasons.append(f"{len(cases)} cell(s) that passed before {said}: {named}")
    if fail_on != "worse":
        return reasons, ""
    before, after = (OUTCOME_RANK.get(outcome, 2) for outcome in diff.disposition)
    if after > before:
        reasons.append(f"disposition {diff.disposition[0]} -> {diff.disposition[1]}")
    slower = [t.name for t in diff.timings if t.judged and t.verdict == "slower"]
    speed = [f"{len(slower)} cell(s) judged slower"] if slower else []
    speed += [f"{words} judged slower" for words in _slower_means(diff)]
    # A timing that decides nothing (unstable, not classified, flagged) gates nothing, whichever
    # way it moved: the ones whose later median is higher are named, so that a pass of the gate
    # is not read as "no slower cell".
    higher = [t for t in diff.timings if not t.judged and t.after_s > t.before_s]
    undecided = (
        f"speed not gated for {len(higher)} timing(s) that decide nothing (unstable, not classified or flagged:"
        f" see each one's flags) whose later median is higher: "
        + ", ".join(f"{t.name} {t.after_s / t.before_s:.3g}x" for t in higher[:5])
        + (f" and {len(higher) - 5} more" if len(higher) > 5 else "")
        if higher
        else ""
    )
    if len(diff.before_runs) > 1 or len(diff.after_runs) > 1:
        return reasons + speed, undecided
    if not speed:
        return reasons, undecided
    named = _named(slower)
    one_run = (
        f"speed not gated: {' and '.join(speed)}{f' ({named})' if slower else ''} with one run a side, whose"
        " intervals cover sampling within the two runs only, not the variation between runs; give a side more"
        " runs (--before/--after; 3 or more a side for a useful interval) to gate on speed"
    )
    return reasons, "; ".join(filter(None, (one_run, undecided)))


def diff_command(
    a: Path | str | Sequence[Path | str],
    b: Path | str | Sequence[Path | str],
    fmt: str = "text",
    max_bytes: int | None = None,
    follow_symlinks: bool = False,
    fail_on: str | None = None,
) -> tuple[str, list[str], str]:
    """`reportgen diff A B` (or several runs a side): logs or run directories, local or s3://;
    the text, why ``fail_on`` refuses the later run ([]: it does not, or no fail_on), and what
    the gate left ungated ("": nothing; worse_reasons)."""
    from reportgen.render.report import judge_log
    from reportgen.storage.local import DEFAULT_MAX_LOG_BYTES
    from reportgen.storage.sources import find_one, judged_with
    from reportgen.publish.summary import summarize

    limit = DEFAULT_MAX_LOG_BYTES if max_bytes is None else max_bytes
    entries = [
        [find_one(path, None, follow_symlinks, limit) for path in ([side] if isinstance(side, (str, Path)) else side)]
        for side in (a, b)
    ]
    # A run given twice (the same log, or a copy) is refused from the run ids on the logs' first
    # lines, before either log is read whole; what cannot be told there, the full read tells.
    early = [[_start_run_id(entry.path, limit) for entry in side] for side in entries]
    for role, ids in zip(("before", "after"), early):
        _refuse_repeats([i for i in ids if i is not None], role)
    _refuse_overlap([i for i in early[0] if i is not None], [i for i in early[1] if i is not None])

    def _judged(entry: Any) -> Any:
        notes, beside = judged_with(entry)
        return judge_log(entry.path, notes, max_bytes=limit, beside=beside)

    sides = [
        # diff shows no plan-check: its summaries leave it out (a review of the logged plan per run)
        # Each log with the annotations beside it as report finds them (judged_with): one that
        # cannot be read (a FIFO, a folder) is refused in one line, not left out unsaid.
        [summarize(_judged(e), plan_check=False) for e in side]
        for side in entries
    ]
    diff = diff_runs(*sides)
    if diff.copied is not None:
        raise DiffRefused(diff.copied)
    workload = sides[0][0].workload
    refused, ungated = worse_reasons(diff, fail_on) if fail_on else ([], "")
    if fmt == "json":
        from reportgen.render.templating import json_text

        return json_text(diff.to_dict(), indent=2, sort_keys=True), refused, ungated
    if fmt == "md":
        from reportgen.render.templating import render_md

        text = render_md("diff.md.j2", diff=diff, workload=workload, targets_differ=TARGETS_DIFFER).rstrip("\n")
        return text, refused, ungated
    return format_diff(diff), refused, ungated
