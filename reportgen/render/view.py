"""The report's view model: what each section shows, as plain data both templates render.

This layer decides content and order; it knows no HTML. The only markup produced here is
annotation Markdown, rendered by ``reportgen.render.markdown``.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import Counter
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import compress, islice, repeat
from operator import attrgetter, eq, itemgetter
from typing import Any, Callable, Collection, Iterable

from markupsafe import Markup

from reportgen.model.times import utc_time
from reportgen.model.annotations import Annotations
from reportgen.model.groups import failure_groups
from reportgen.render.labels import human
from reportgen.render.charts import Figure, correctness_figures, timing_figures
from reportgen.render.markdown import render_markdown
from reportgen.judge.nextstep import finding, next_step
from reportgen.judge.localization import judge_localization, ratio_text, where_sentence
from reportgen.judge.disposition import FAILED, Disposition, adapter_note, Reason, Scope, ScopeGroup, cells_with_status, failed_cases, flagged, scope_label
from reportgen.judge.backend_docs import docs_file_sha256, run_backend
from reportgen.model.provenance import code_and_data
from reportgen.model.runmodel import COLUMN, LAYOUT_NOT_ACHIEVED, LAYOUT_NOT_MEASURED, STATUS_ORDER, CellRecord, RunModel, per_run, shape_label
from reportgen.judge.timing_stability import SYMBOL as STABILITY_SYMBOL, cell_stability, flag_text, timed_cells, undecided_cells

_CASE, _RESULT_LINE, _STATUS = attrgetter("case"), attrgetter("result_line"), attrgetter("status")
SYMBOLS = {"pass": "✔", "mismatch": "✘", "nonfinite": "∞", "error": "✖", "skipped": "⊘", "untested": "…"}
DETAIL_CAP = 300
DETAILS_NAME = "details.csv"
# Bytes, not rows: a page stays under 1 MB for any log. A failure or warning text longer than
# TEXT_CHARS is cut on the page (the full text is in details.csv), and the problems and
# warnings sections stop adding cells at their budget (in characters of text shown).
TEXT_CHARS = 500
PROBLEMS_BUDGET = 250_000
WARNINGS_BUDGET = 120_000
# The report's sections: (element id in HTML, heading, the anchor GitHub gives the Markdown heading).
SECTIONS = (
    ("disposition", "1. Disposition", "1-disposition"),
    ("record", "2. Compatibility record", "2-compatibility-record"),
    ("matrix", "3. Matrix", "3-matrix"),
    ("criteria", "4. Numerical criteria", "4-numerical-criteria"),
    ("problems", "5. Mismatches and errors", "5-mismatches-and-errors"),
    ("fallback-compile", "6. Fallback and compile findings", "6-fallback-and-compile-findings"),
    ("timings", "7. Timings", "7-timings"),
    ("evidence", "8. Profiles, artifacts and provenance", "8-profiles-artifacts-and-provenance"),
)


# A case key that is safe as an element id and URL fragment is its own anchor, so a link like
# report.html#b4-l512-contiguous-float32-compiled reads as the cell it points to. Anything
# else (log text is untrusted) gets a hashed id. Keys must contain a digit, which keeps them
# apart from the page's own section ids and the generated "fig-"/"case-"/"entry-" ids.
_READABLE_ANCHOR = re.compile(r"[a-z][a-z0-9_.-]{0,95}", re.IGNORECASE | re.ASCII)  # the whole key (fullmatch)
_ASCII_DIGIT = re.compile(r"[0-9]")
_RESERVED_PREFIXES = ("fig-", "case-", "entry-", "target-")


def anchor(case: str) -> str:
    """A stable element id from a case key: the key itself when safe, else a hash of it."""
    if _READABLE_ANCHOR.fullmatch(case) and _ASCII_DIGIT.search(case) and not case.startswith(_RESERVED_PREFIXES):
        return case
    return "case-" + hashlib.sha256(case.encode("utf-8")).hexdigest()[:12]


def fmt(value: float | None, unit: str = "", digits: int = 4) -> str:
    """One float format for the whole report; 'not measured' is never shown as zero."""
    if value is None:
        return "not measured"
    return f"{value:.{digits}g}{unit}"


def fmt_ms(seconds: float | None) -> str:
    return "not measured" if seconds is None else f"{seconds * 1e3:.4g} ms"


@dataclass
class Row:
    """A labelled value with where it came from in the log."""

    label: str
    value: str
    source: str = ""
    detail: str = ""  # the full text behind a shortened value (a tooltip in HTML, a footnote in Markdown)


@dataclass
class StatusCell:
    case: str
    status: str
    symbol: str
    anchor: str
    note: str = ""  # why an untested cell is untested, when the log says


@dataclass
class MatrixView:
    columns: list[str]
    rows: list[tuple[str, list[StatusCell | None]]]
    counts: list[tuple[str, str, int]]  # status counts (the group table's columns)
    by_group: list[dict[str, Any]]
    truncated: int = 0
    # The header: status counts, except that non-finite counts every cell whose outputs hold a
    # NaN or Inf (whatever its status), labelled so.
    header: list[tuple[str, str, str, int]] = field(default_factory=list)


@dataclass
class ReasonView:
    outcome: str
    category: str
    message: str
    cases: list[tuple[str, str]]  # the first DETAIL_CAP, with anchors
    total: int


@dataclass
class ProblemView:
    case: str
    anchor: str
    status: str
    symbol: str
    line: int | None
    stats: list[Row]
    failure: str
    warnings: list[str]
    explained_by: list[tuple[str, str]]  # (entry label, anchor of the explanation shown once)
    verdict: str
    note: str = ""
    where: LocalizationView | None = None


@dataclass
class ModuleRow:
    name: str
    type: str
    accumulated: str
    local: str
    role: str
    operators: str
    bad_local: bool
    bad_accumulated: bool


@dataclass
class LocalizationView:
    """Where a problem cell's error arises, per submodule in execution order."""

    sentence: str
    line: int | None
    rows: list[ModuleRow]
    notes: list[str]
    chart: Figure | None = None


@dataclass
class ExplanationView:
    """One annotations entry, shown once, with every cell it covers."""

    anchor: str
    label: str
    where: str
    selector: str
    text: str  # the Markdown as written (the Markdown report escapes it)
    html: Markup  # rendered with raw HTML off and links restricted
    verdict: str
    cells: list[tuple[str, str, str, str]]  # (case, anchor, status, symbol), the first DETAIL_CAP
    total: int
    failed: int


@dataclass
class VerdictGroupView:
    """Cells waiting for the owner's verdict that share a cause."""

    label: str
    facts: list[str]
    cases: list[tuple[str, str]]
    total: int


@dataclass
class TimingView:
    case: str
    anchor: str
    cold: str
    cache_condition: str
    fresh_process: str
    process_start: str
    warm_median: str
    warm_min: str
    warm_p90: str
    warm_iqr: str
    samples: int
    flagged: str
    cold_check: str = ""
    restart: str = ""  # the restart with a populated cache: seconds, cache counts, outputs


@dataclass
class GradRow:
    name: str
    worst_ratio: str
    max_abs: str
    max_rel: str
    mismatched: str
    norm_ratio: str
    updated: str
    bad: bool
    rule: str = "elementwise (no rule declared)"


@dataclass
class RegionRow:
    """One output of one cell judged on a declared region, with the elements left out beside it."""

    case: str
    anchor: str
    status: str
    symbol: str
    output: str
    region: str
    judged: str
    outside: str


@dataclass
class TrainingView:
    case: str
    anchor: str
    status: str
    symbol: str
    losses: list[tuple[int, str, str, str]]
    grads: list[GradRow]
    hidden: int


@dataclass
class GenerationRow:
    """One generation cell (schema 1.2), grouped by its bucket: compiles, timings, tokens."""

    bucket: str
    request: str
    case: str
    anchor: str
    status: str
    symbol: str
    compiles: str
    ttft_cold: str
    ttft_warm: str
    decode: str
    tokens_per_s: str
    agreement: str
    divergent: str
    top_k: str


@dataclass
class InputView:
    """One cell's inputs: dtype, shape and layout facts, and which event they come from."""

    case: str
    anchor: str
    text: str
    source: str


@dataclass
class WarningView:
    """One warning message and the cells (with their status) that raised it."""

    message: str
    cells: list[tuple[str, str, str]]  # (case, status, anchor); empty: raised outside any cell
    total: int
    source: str


@dataclass
class ScopeView:
    """The disposition's scope as grouped lines: per dtype · layout · mode, the shapes."""

    facts: list[Row]
    passed: list[Row]
    not_passed: list[Row]
    passed_count: int
    not_passed_count: int


@dataclass
class ReportView:
    title: str
    run_id: str
    generated_at: str
    synthetic: bool
    origin_note: str
    incomplete: str
    disposition: Disposition
    headline: str
    finding: str  # the dominant measured finding, in words
    next_step: str  # what must happen next, and where
    outcome: str
    reasons: list[ReasonView]
    verdict_groups: list[VerdictGroupView]
    annotate_command: str
    scope: ScopeView
    record: list[Row]
    versions: list[Row]
    matrix: MatrixView
    criteria: list[Row]
    criteria_declared: str
    problems: list[ProblemView]
    problems_total: int
    # Cells localised though they did not fail (the plan's [localize] always): (case, anchor, view).
    localized_passing: list[tuple[str, str, LocalizationView]]
    explanations: list[ExplanationView]
    regions: list[RegionRow]
    fallback: list[Row]
    compile_rows: list[dict[str, str]]
    perf_stopped: list[tuple[str, str]]
    perf_stopped_total: int
    timings: list[TimingView]
    timing_scope: str
    backend_note: str
    training: list[TrainingView]
    training_note: str
    correctness_figures: list[Figure]
    timing_figures: list[Figure]
    profiles: list[dict[str, Any]]
    artifacts: list[dict[str, Any]]
    provenance: list[Row]
    log_problems: list[str]
    # Recorded facts shown in both formats (each from the event named in its source).
    reference_findings: list[str] = field(default_factory=list)  # non-finite references: shown first
    references: list[dict[str, str]] = field(default_factory=list)
    inputs: list[InputView] = field(default_factory=list)
    inputs_total: int = 0
    warnings: list[WarningView] = field(default_factory=list)
    operators: list[Row] = field(default_factory=list)
    details: str = ""  # the per-cell CSV beside the page, when the run is too big to show whole
    # Generation plans (schema 1.2): per bucket, and how each request length was served.
    generation: list[GenerationRow] = field(default_factory=list)
    generation_requests: list[Row] = field(default_factory=list)
    generation_note: str = ""
    root: str = ""
    # With an inspection (reportgen report --inspection): predicted fallback against observed.
    predicted: list[Row] = field(default_factory=list)
    unstable_timing: str = ""  # how many timed cells' warm timing decides nothing (first lines of the page)


def generated_at(run: RunModel) -> str:
    """From SOURCE_DATE_EPOCH when set, else from the log: never the wall clock."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return to_the_second(run.end.finished_at if run.end is not None else run.start.started_at)


def to_the_second(stamp: str) -> str:
    """An ISO time from the log shown to the second in UTC ('2026-11-29 23:05:30 UTC'); text
    that is not an ISO time is shown as it is."""
    when = utc_time(stamp)
    return stamp if when is None else when.strftime("%Y-%m-%d %H:%M:%S UTC")


def _reason_view(reason: Reason) -> ReasonView:
    shown = [(c, anchor(c)) for c in reason.cases[:DETAIL_CAP]]
    return ReasonView(reason.outcome, reason.category or "", reason.message, shown, len(reason.cases))


def _fact_rows(facts: dict[str, Any]) -> list[Row]:
    rows = []
    for name, fact in sorted(facts.items()):
        if fact.value is not None:
            rows.append(Row(name, fact.value, fact.source or ""))
        else:
            reason = fact.unknown_reason or "no reason recorded"
            rows.append(Row(name, f"unknown: {short_reason(reason)}", "", reason))
    return rows


_SHORT_REASONS = (
    ("not installed", "not installed"),
    ("no packages found", "not installed"),
    ("no module named", "not installed"),
    ("no such file", "not found on this host"),
    ("without cuda", "torch build without CUDA"),
    ("permission denied", "not readable (permission denied)"),
    ("timed out", "probe timed out"),
)


def short_reason(reason: str) -> str:
    """A probe's failure in a few words; the full text stays beside it."""
    lowered = reason.lower()
    for needle, words in _SHORT_REASONS:
        if needle in lowered:
            return words
    first = reason.split(":")[0].strip()
    return first if len(first) <= 60 else first[:59] + "…"


def _record(run: RunModel, timing_scope: str) -> list[Row]:
    plan, env = run.plan, run.environment
    counts = run.counts()
    fell, fallback_states = _fallback_summary(run)
    tally = _tally(run)
    dtypes, layouts, modes = ({column[i] for column in tally.columns} for i in range(3))
    rows = _distinct_rows(run)
    # The shapes are the rows' (batch, length): the rows themselves when none is a cache check
    # (they sort alike, and no shape is listed twice).
    shapes = rows if not any(map(_IS_REPEAT, rows)) else {key[:2] for key in rows}
    return [
        Row("Workload", f"{run.start.workload}" + (f": {plan.description}" if plan and plan.description else ""), "run_start, plan"),
        Row("Model revision", (plan.model_revision if plan else "no plan") + _weights_text(plan), "plan"),
        Row("Target and backend family", f"intended {_intended_text(run)}; run's target {plan.target if plan else run.start.target} ({_choice_text(run)}); ran on {env.backend_family if env else 'unknown'} ({env.backend_family_reason if env else 'no environment event'})", "plan.intended_target, run_start.target_choice, environment"),
        Row("Instance / device", _device_text(run), "environment.device"),
        Row("Execution modes", ", ".join(sorted(modes)) or "none", "plan.matrix"),
        Row("Input shapes (batch, length)", _list_text(shapes, run, lambda shape: shape_label(shape[0], shape[1]), ordered=True), "plan.matrix"),
        Row("dtypes and layouts", ", ".join(sorted(dtypes)) + "; " + ", ".join(sorted(layouts)), "plan.matrix"),
        Row("Attention path (the workload's claim)", plan.attention_path or "not stated" if plan else "not stated", "plan.attention_path"),
        Row("Attention kernel that ran (measured)", attention_text(run), "operators.executed"),
        Row("CPU fallback", ", ".join(fell) if fell else ("none recorded" if fallback_states == ["measured"] else "; ".join(human(s) for s in fallback_states) or "no operator events"), "operators"),
        Row("Correctness", ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s]) or "no cells", "case_result"),
        Row("Reference", plan.reference if plan else "not stated", "plan, reference"),
        Row("Requirements", ", ".join(human(r) for r in plan.requirements) if plan and plan.requirements else "none declared", "plan"),
        Row("Cells run", _selection_text(run), "plan.selection"),
        Row("Layouts as fed", _layout_fed_text(run), "case_result.layout_achieved"),
        Row("Timing scope (as timed)", timing_scope, "timing.timed_region"),
    ] + _settings_rows(run)


def _weights_text(plan: Any) -> str:
    """The plan's weights hashes (plan: ev.Plan or None)."""
    if plan is None or not (plan.weights_sha256 or plan.weights_content_sha256):
        return ""
    content = f"content sha256 {plan.weights_content_sha256}" if plan.weights_content_sha256 else "content not hashed"
    return f" (weights {content}; file sha256 {plan.weights_sha256 or 'not recorded'})"


def _selection_text(run: RunModel) -> str:
    selection = run.plan.selection if run.plan else None
    capped = run.plan.matrix_cells if run.plan and run.plan.matrix_cells and run.plan.matrix_cells > len(run.plan.matrix) else None
    if capped:  # the matrix's other cells are not in this log: they are no cells of this report
        head = f"the plan's matrix has {capped:,} cells; this run planned the first {len(run.plan.matrix):,} (a cap), the others are not in this log"  # type: ignore[union-attr]
        return head if selection is None else f"{head}; {_chosen_text(run, selection)}"
    if selection is None:
        return f"every planned cell ({len(run.cells)})"
    return _chosen_text(run, selection)


def _chosen_text(run: RunModel, selection: Any) -> str:
    asked = "; ".join(filter(None, [f"--only {' '.join(selection.only)}" if selection.only else "", f"--modes {','.join(selection.modes)}" if selection.modes else ""]))
    return f"{len(selection.cases)} of {len(run.cells)} planned cells ({asked}); the rest were not run (deselected) and are untested"


def _layout_fed_text(run: RunModel) -> str:
    tally = _tally(run)
    if not tally.layout_checked:
        unmeasured = sum(c.untested_reason == LAYOUT_NOT_MEASURED for c in run.cells)
        counted = f"; {unmeasured} planned non-contiguous cell(s) are untested for that layout (layout not measured)" if unmeasured else ""
        return "not measured (the log does not record what the model received)" + counted
    text = f"checked at the model's call boundary for {tally.layout_checked} of {tally.ran} cells that ran; "
    missed = tally.layout_missed
    text += f"{missed} did not receive their planned layout (layout not achieved)" if missed else "every one received its planned layout"
    if tally.timing_layout_missed:
        text += f"; {tally.timing_layout_missed} cell(s) had timed calls fed another layout"
    return text


def _settings_rows(run: RunModel) -> list[Row]:
    env = run.environment
    if env is None or env.backend_settings is None:
        return []
    value = "; ".join(f"{s.name}={s.value if s.value is not None else 'unset'} (set by {s.set_by}{': ' + s.note if s.note else ''})" for s in env.backend_settings)
    return [Row("Backend settings", value or "none", "environment.backend_settings")]


STAGE_WORDS = {
    "preprocessing": "preprocessing (the workload's make_inputs and dtype cast, each sample)",
    "host_to_device": "copying the inputs to the device",
    "model_call": "the model call",
    "output_retrieval": "copying the outputs back to the host",
    "training_step": "one full training step",
}


def _region_text(region: tuple[str, ...], notes: tuple[str, ...], synchronized: bool) -> str:
    if region == ("model_call",):
        text = "the model call only (inputs already on the device, outputs left there)"
    elif region == ("training_step",):
        text = "one full training step (forward, backward, optimizer step; inputs already on the device)"
    else:
        text = ", then ".join(STAGE_WORDS.get(stage, stage) for stage in region)
    text += "; device synchronised at every boundary" if synchronized else "; NOT synchronised"
    return text + "".join(f"; {n}" for n in notes)


def timed_scope_text(run: RunModel) -> str:
    """What the timing code recorded it timed, per call kind; never the plan's wish."""
    seen: dict[str, list[str]] = {}
    unrecorded = 0
    # The timing facts are shared tuples: each distinct one is put in words once, in first-seen order.
    for (call, region, notes, synchronized), n in _tally(run).timed.items():
        if region is None:
            unrecorded += n
            continue
        text = _region_text(region, notes, synchronized)
        if call not in seen.setdefault(text, []):
            seen[text].append(call)
    if not seen:
        generated = _generation_scopes(run)
        if generated:  # a generation run times inside its generation events
            return "generation cells: " + " | ".join(generated)
        return "not measured (this log does not record what its timing code put in the timed region)" if unrecorded else "no timing recorded"
    if len(seen) == 1:
        text = next(iter(seen))
    else:
        text = " | ".join(f"{' and '.join(calls)} calls: {t}" for t, calls in seen.items())
    if unrecorded:
        text += f" ({unrecorded} timing event(s) do not record their region: not measured)"
    return text


def _generation_scopes(run: RunModel) -> list[str]:
    """The scopes the generation events recorded for their timings, each once (1.2 logs)."""
    found: list[str] = []
    for c in run.cells_with("generation")[:DETAIL_CAP]:
        g = c.generation
        if g is not None and g.timing is not None and g.timing.scope not in found:
            found.append(g.timing.scope)
    return found


def _intended_text(run: RunModel) -> str:
    intended = run.plan.intended_target if run.plan else None
    return intended if intended is not None else "target not recorded"


def _choice_text(run: RunModel) -> str:
    choice = run.start.target_choice
    if choice is None:
        return f"--target {run.start.target}; how it was chosen is not recorded"
    return f"--target {choice.requested} resolved to {choice.resolved}: {choice.reason}"


LISTED = 40


def _list_text(items: Collection[Any], run: RunModel, label: Callable[[Any], str] = str, ordered: bool = False) -> str:
    """A readable list: a run too big to show every cell names the first few and counts the rest
    (``label`` puts an item in words: only the items shown are). ``ordered``: the items sorted."""
    if not items:
        return "none"
    if len(items) <= LISTED or not needs_details(run):
        return ", ".join(map(label, sorted(items) if ordered else items))
    # Speed: only the items named are sorted (a long run can have a shape per cell), or copied.
    shown = heapq.nsmallest(LISTED, items) if ordered else list(islice(items, LISTED))
    return f"{', '.join(map(label, shown))} and {len(items) - LISTED} more ({len(items)} in all; every cell is in {DETAILS_NAME})"


def scope_lines(groups: tuple[ScopeGroup, ...], run: RunModel, with_status: bool) -> list[Row]:
    """One line per dtype · layout · mode; failed cells are grouped by their status."""
    rows = []
    for g in groups:
        cells = g.cells  # only the cells a line names are put in words (a group can hold every cell)
        if not with_status:
            rows.append(Row(g.label, _list_text(cells, run, scope_label)))
            continue
        statuses = list(map(_STATUS, cells))  # speed: read in C
        present = set(statuses)
        if len(present) == 1:
            by_status = {statuses[0]: cells}
        else:
            # Speed: each status's cells picked in C, in plan order; tests/test_view_shortcuts.py.
            by_status = {status: list(compress(cells, map(eq, statuses, repeat(status)))) for status in present}
        text = "; ".join(f"{status}: {_list_text(by_status[status], run, scope_label)}" for status in STATUS_ORDER if status in by_status)
        rows.append(Row(g.label, text))
    return rows


def scope_view(scope: Scope, run: RunModel) -> ScopeView:
    facts = [
        Row("evidence for", scope.evidence),
        Row("intended target (plan) / run's target / ran on", f"{scope.intended_target or 'intended target not recorded'} / {scope.target} / {scope.family}"),
        Row("versions", ", ".join(f"{k} {v}" for k, v in sorted(scope.versions.items())) or "unknown"),
        Row("performance", _performance_scope(run)),
    ]
    facts += _generation_scope(run)
    return ScopeView(
        facts=facts,
        passed=scope_lines(scope.passed, run, with_status=False),
        not_passed=scope_lines(scope.not_passed, run, with_status=True),
        passed_count=scope.passed_count,
        not_passed_count=scope.not_passed_count,
    )


def _performance_scope(run: RunModel) -> str:
    """What the run's timings may decide: the correctness scope above holds either way."""
    timed = timed_cells(run)
    if not timed and run.plan is not None and run.plan.generation is not None:
        return ("generation timings (time to first token, decode latency, tokens/s) are in section 7, per bucket; "
                "their series are not classified for stability, so they decide nothing about speed here")
    if not timed:
        return "no warm timing recorded: performance not measured"
    undecided = undecided_cells(run)
    if not undecided:
        return f"warm timing of all {len(timed)} timed cells is stable by the collector's rules"
    return (f"undecided for {len(undecided)} of {len(timed)} timed cells (warm timing unstable or too short to classify: "
            f"{STABILITY_SYMBOL} in the timing table); the correctness scope above is not affected")


def _generation_scope(run: RunModel) -> list[Row]:
    """A generation run's scope in its own terms: which buckets served which request lengths,
    and how many decode steps on which cache; a shape that passed is that bucket and those steps."""
    g = run.plan.generation if run.plan else None
    if g is None:
        return []
    served = [f"{r.length} → bucket {r.bucket}" + (" (truncated)" if r.outcome == "truncated" else "") for r in run.requests if r.bucket is not None]
    refused = [f"{r.length} tokens refused" for r in run.requests if r.bucket is None]
    return [
        Row("buckets (request length → bucket)", "; ".join(served + refused) or "no request event recorded"),
        Row("decode steps", f"prefill then {g.decode_steps} greedy decode steps per request, static KV cache of {g.max_cache_len} positions; "
            "nothing beyond these buckets and steps is covered"),
    ]


def _fallback_summary(run: RunModel) -> tuple[list[str], list[str]]:
    """The ops that fell back anywhere, and every fallback status recorded."""
    tally = _tally(run)
    return sorted(tally.fallback_ops), sorted(tally.fallback_states)


def _device_text(run: RunModel) -> str:
    if run.environment is None:
        return "unknown"
    dev = run.environment.device
    parts = []
    for key in ("instance_type", "device_name", "device_count", "hostname"):
        if key in dev:
            parts.append(f"{key}: {dev[key].value if dev[key].value is not None else 'unknown'}")
    return "; ".join(parts)


def _asked_scope_text(scope: Any) -> str:
    """The plan's request, labelled as such (the report's scope comes from the timing events)."""
    inside = [name for name, on in (("preprocessing", scope.preprocessing), ("host-to-device copies", scope.host_to_device), ("output retrieval", scope.output_retrieval)) if on]
    text = ", ".join(inside) if inside else "the model call only"
    return text + (f" ({scope.note})" if scope.note else "")


TimedFact = tuple[str, tuple[str, ...] | None, tuple[str, ...], bool]  # see CellRecord.timed


@dataclass
class CellTally:
    """Figures over every cell that the record and the matrix show, gathered in one pass
    (a long log has tens of thousands of cells: one loop costs less than a pass per figure)."""

    columns: dict[tuple[str, str, str, str], int] = field(default_factory=dict)  # cells per (dtype, layout, mode, status): columns first seen first, each column's statuses first seen first
    row_keys: list[tuple[int, int, bool]] = field(default_factory=list)  # each cell's matrix row: (batch, length, is a repeat)
    fallback_states: set[str] = field(default_factory=set)
    fallback_ops: set[str] = field(default_factory=set)
    ran: int = 0  # cells with a result that is not a skip
    layout_checked: int = 0  # of those, cells whose layout at the model call was measured
    layout_missed: int = 0  # of those, cells that did not receive their planned layout
    timing_layout_missed: int = 0  # cells whose timed calls were fed another layout
    timed: dict[TimedFact, int] = field(default_factory=dict)  # timing facts (shared tuples), first seen first
    nonfinite: int = 0  # cells with a NaN or Inf output element
    measured: list[CellRecord] = field(default_factory=list)  # cells whose executed ops were measured
    unmeasured: list[CellRecord] = field(default_factory=list)  # cells that could not list them (not applicable, unmeasured)
    measured_modes: set[str] = field(default_factory=set)  # the modes of the measured cells
    op_lists: dict[tuple[str, ...], int] = field(default_factory=dict)  # measured cells per executed op list (shared tuples), first seen first
    with_result: int = 0  # cells with a case_result
    warned: list[CellRecord] = field(default_factory=list)  # cells with warnings


@per_run
def _tally(run: RunModel) -> CellTally:
    """The run's CellTally, worked out once per run."""
    return _count_cells(run.cells)


def _count_cells(cells: list[CellRecord]) -> CellTally:
    tally = CellTally()
    row_keys, timed, op_lists = tally.row_keys, tally.timed, tally.op_lists
    measured, unmeasured, warned = tally.measured, tally.unmeasured, tally.warned
    add_state, add_ops, add_mode = tally.fallback_states.add, tally.fallback_ops.update, tally.measured_modes.add
    ran = layout_checked = layout_missed = timing_layout_missed = nonfinite = with_result = 0
    # Speed (tests/test_view_tally.py holds each figure to one counted on its own, for plans
    # whose columns follow each other and for plans that alternate them): a column's statuses
    # are counted in its own small dict, looked up only when the column changes from the
    # previous cell's; a run of cells with the same timing facts or op list (shared tuples) is
    # counted by one number, added when the run ends (the counts stay first seen first).
    per_column: dict[tuple[str, str, str], dict[str, int]] = {}
    statuses: dict[str, int] = {}
    dtype = layout = mode = state = facts = ops = None
    same_facts = same_ops = 0
    for c in cells:
        p = c.planned
        if p.dtype != dtype or p.layout != layout or p.mode != mode:
            dtype, layout, mode = p.dtype, p.layout, p.mode
            statuses = per_column.setdefault((dtype, layout, mode), {})
        status = c.status
        statuses[status] = statuses.get(status, 0) + 1
        row_keys.append((p.batch, p.length, bool(p.repeat_of)))
        if c.fallback_status is not state:
            state = c.fallback_status
            if state is not None:
                add_state(state)
        if c.fallback_items:
            add_ops(c.fallback_items)
        if c.result_line is not None:
            with_result += 1
            if c.measured_status not in (None, "skipped"):
                ran += 1
                if c.layout_achieved is not None:
                    layout_checked += 1
                    if c.layout_achieved is False:
                        layout_missed += 1
        if c.warnings:
            warned.append(c)
        if c.timing_layout_missed:
            timing_layout_missed += 1
        if c.timed:
            if c.timed is facts:
                same_facts += 1
            else:
                for fact in facts or ():
                    timed[fact] = timed.get(fact, 0) + same_facts
                facts, same_facts = c.timed, 1
        if c.output_nonfinite:
            nonfinite += 1
        executed = c.executed_status
        if executed == "measured":
            measured.append(c)
            add_mode(mode)
            if c.executed_items is ops:
                same_ops += 1
            else:
                if same_ops:
                    op_lists[ops] = op_lists.get(ops, 0) + same_ops  # type: ignore[index]
                ops, same_ops = c.executed_items, 1
        elif executed is not None:
            unmeasured.append(c)
    for fact in facts or ():
        timed[fact] = timed.get(fact, 0) + same_facts
    if same_ops:
        op_lists[ops] = op_lists.get(ops, 0) + same_ops  # type: ignore[index]
    tally.columns = {(*column, status): n for column, counted in per_column.items() for status, n in counted.items()}
    tally.ran, tally.layout_checked, tally.layout_missed = ran, layout_checked, layout_missed
    tally.timing_layout_missed, tally.nonfinite, tally.with_result = timing_layout_missed, nonfinite, with_result
    return tally


def _matrix(run: RunModel) -> MatrixView:
    """Shape rows by dtype/layout/mode columns; the first DETAIL_CAP rows, counts over all."""
    tally = _tally(run)
    # The tally's counts are grouped by column, columns first seen first: so are these.
    columns = list(dict.fromkeys(combo[:3] for combo in tally.columns))
    keys = tally.row_keys
    row_keys = _distinct_rows(run)
    grid: dict[tuple[int, int, bool], dict[tuple[str, str, str], StatusCell]] = {}
    for c, key in _shown_cells(run.cells, keys, row_keys):
        grid.setdefault(key, {})[COLUMN(c)] = StatusCell(c.case, c.status, SYMBOLS[c.status], anchor(c.case), c.untested_reason or "")
    counts = run.counts()
    return MatrixView(
        columns=[" · ".join(column) for column in columns],
        rows=[(_row_name(key), [grid[key].get(column) for column in columns]) for key in row_keys[:DETAIL_CAP]],
        counts=[(s, SYMBOLS[s], counts[s]) for s in STATUS_ORDER],
        header=[
            (s, SYMBOLS[s], "cells with non-finite outputs", tally.nonfinite) if s == "nonfinite" else (s, SYMBOLS[s], s, counts[s])
            for s in STATUS_ORDER
        ],
        by_group=_status_by_group(run),
        truncated=len(row_keys) - min(len(row_keys), DETAIL_CAP),  # the rows are distinct
    )


@per_run
def _distinct_rows(run: RunModel) -> list[tuple[int, int, bool]]:
    """The matrix's row keys, each once, first seen first (worked out once per run)."""
    return list(dict.fromkeys(_tally(run).row_keys))


_IS_REPEAT = itemgetter(2)


def _shown_cells(cells: list[CellRecord], keys: list[Any], row_keys: list[Any]) -> Iterable[tuple[CellRecord, Any]]:
    """(cell, row key) of the cells in the first DETAIL_CAP rows (``row_keys``: the distinct
    ``keys``, first seen first), in plan order."""
    if len(row_keys) == len(keys):
        # Speed: every cell has a row of its own, so the rows shown hold the first cells and no
        # other (no pass over every cell's key); tests/test_view_shortcuts.py.
        return zip(cells[:DETAIL_CAP], keys)
    shown = set(row_keys[:DETAIL_CAP])
    return compress(zip(cells, keys), map(shown.__contains__, keys))


def _row_name(key: tuple[int, int, bool]) -> str:
    return shape_label(key[0], key[1]) + (" repeat (cache check)" if key[2] else "")


def _status_by_group(run: RunModel) -> list[dict[str, Any]]:
    """Status counts per dtype and mode, over every cell."""
    groups: dict[tuple[str, str], Counter[str]] = {}
    for (dtype, _, mode, status), n in _tally(run).columns.items():
        groups.setdefault((dtype, mode), Counter())[status] += n
    return [
        {"group": f"{dtype} · {mode}", "counts": [(s, SYMBOLS[s], counts[s]) for s in STATUS_ORDER]}
        for (dtype, mode), counts in sorted(groups.items())
    ]


def _criteria(run: RunModel) -> tuple[list[Row], str]:
    if run.plan is None:
        return [], "no plan recorded"
    rows = []
    for dtype, tol in sorted(run.plan.tolerances.items()):
        task = f"; task: {tol.task.metric} {tol.task.op} {tol.task.threshold:g}" if tol.task else "; no task criterion"
        rows.append(Row(dtype, f"|out − ref| ≤ {tol.atol:g} + {tol.rtol:g}·|ref|{task}", tol.source))
    rows.append(Row("warm repetitions", str(run.plan.warm_repetitions), "plan"))
    asked = "one full training step" if run.plan.training else _asked_scope_text(run.plan.timing_scope)
    rows.append(Row("timing scope asked", asked, "plan.timing_scope (what was timed: section 7)"))
    if run.plan.padding:
        pad = run.plan.padding
        rows.append(Row("padding", f"buckets {pad.buckets}; above the largest: {pad.above_largest or 'not stated'}; masks padded: {pad.mask_padded}", "plan"))
    options = run.plan.compile_options
    if options is None:
        rows.append(Row("compile options", "not measured: this log does not record them", "plan.compile_options"))
    else:
        extra = "; backend options " + ", ".join(f"{k}={v}" for k, v in sorted(options.backend_options.items())) if options.backend_options else ""
        rows.append(Row("compile options", f"dynamic={options.dynamic}, mode={options.mode}, fullgraph={options.fullgraph}{extra}", "plan.compile_options (each compile event records what its call was given)"))
    if run.plan.declared_inputs:
        declared = []
        for name, spec in sorted(run.plan.declared_inputs.items()):
            layout = f"{spec.layout} ({spec.how})" if spec.how else spec.layout
            values = f", values {spec.value_range[0]}..{spec.value_range[1]}" if spec.value_range else ""
            declared.append(f"{name}: {spec.dtype}, {layout}{values}")
        rows.append(Row("inputs as the plan declares them", "; ".join(declared), "plan.declared_inputs (declared, not measured; what was fed is in each cell's inputs)"))
    rules = run.plan.compare
    if rules is None:
        rows.append(Row("judged regions and parameter rules", "none declared: every element of every output and parameter is judged elementwise", "plan.compare"))
    else:
        for o in rules.outputs:
            rows.append(Row(f"judged region of {o.output}", f"only elements where {o.description} are judged; the others are compared and shown apart, outside the judged region", "plan.compare.outputs"))
        for g in rules.params:
            rows.append(Row(f"parameter group {g.group} ({', '.join(g.match)})", g.description, "plan.compare.params"))
    first = f"line {run.first_result_line}" if run.first_result_line else "no result yet"
    when = f"declared at {run.plan.time} (log line {run.plan_line}), before the first result ({first})"
    return rows, when


def clip(text: str, limit: int = TEXT_CHARS) -> str:
    """A text as the page shows it: cut after ``limit`` characters, saying where the rest is."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (cut here: {len(text)} characters in all; the full text is in {DETAILS_NAME})"


def _problems(cells: list[CellRecord], notes: Annotations) -> list[ProblemView]:
    """The first DETAIL_CAP problem cells, as many as fit the section's budget (at least one)."""
    views, spent = [], 0
    for cell in cells[:DETAIL_CAP]:
        view = _problem(cell, notes)
        spent += _size(view)
        if views and spent > PROBLEMS_BUDGET:
            break
        views.append(view)
    return views


def _size(view: ProblemView) -> int:
    """Roughly the characters a problem shows, markup included."""
    text = len(view.failure) + sum(map(len, view.warnings)) + sum(len(r.label) + len(r.value) for r in view.stats)
    if view.where is not None:
        text += len(view.where.sentence) + sum(map(len, view.where.notes)) + sum(len(r.name) + len(r.operators) + 120 for r in view.where.rows)
    return text + 3 * len(view.case) + sum(len(a) + len(b) for a, b in view.explained_by) + len(view.verdict) + 400


def _problem(cell: CellRecord, notes: Annotations) -> ProblemView:
    result = cell.result
    stats: list[Row] = []
    if result and result.error_stats:
        s = result.error_stats
        bad = sum(o.nonfinite for o in result.outputs)
        # An element is called "worst" only when elements are outside the tolerance.
        where = "worst element (largest |diff| / allowance)" if s.mismatched else "largest |diff| / allowance (within tolerance)"
        stats = [
            Row("mismatched", f"{s.mismatched} of {s.total}"),
            Row("max abs / max rel", f"{stat_text(s.max_abs, bad)} / {stat_text(s.max_rel, bad)}"),
            Row(where, f"{s.worst_output}{list(s.worst_index)}: |diff| {stat_text(s.diff_at_worst, 0)}, allowed {stat_text(s.allowed_at_worst, 0)}"),
        ]
        stats += region_rows(s)
    if result and result.task_metric:
        tm = result.task_metric
        crit = f" ({tm.criterion.op} {tm.criterion.threshold:g})" if tm.criterion else ""
        stats.append(Row("task metric", f"{tm.name} = {fmt(tm.value, digits=6)}{crit}: {'met' if tm.passed else 'not met' if tm.passed is False else 'no criterion'}"))
    generated = cell.generation  # problem cells are few: their events are looked through
    if generated is not None:
        stats.append(Row("greedy tokens", f"{generated.steps_agreeing} of {generated.decode_steps + 1} steps agree with the reference; first divergent step: "
                         + (str(generated.first_divergent_step) if generated.first_divergent_step is not None else "none")))
    # Only a cell with training events (``trained``) has steps or a training result to look up.
    train_steps, train_result = (cell.train_steps, cell.train_result) if cell.trained else ([], None)
    if train_steps:
        bad_steps = [s.step for s in train_steps if not s.loss_within or any(g.mismatched for g in s.grads)]
        stats.append(Row("training steps with loss or gradients outside tolerance", ", ".join(map(str, bad_steps)) or "none"))
    if train_result:
        bad = [p for p in train_result.params if p.mismatched]
        stats.append(Row("updated parameters outside tolerance", "; ".join(f"{p.name}: {p.mismatched} of {p.total}" for p in bad) or "none"))
    if result and result.outputs:
        stats.append(Row("outputs", "; ".join(f"{o.name} {o.dtype}{o.shape} non-finite {o.nonfinite}" for o in result.outputs)))
    if cell.untested_reason == LAYOUT_NOT_ACHIEVED and result is not None:
        fed = "; ".join(f"{i.name} {i.dtype}{i.shape} strides {i.strides} {'contiguous' if i.contiguous else 'non-contiguous'}" for i in result.inputs_fed or [])
        stats.insert(0, Row("layout", f"planned {cell.planned.layout}; the model received {cell.layout_fed or 'another layout'}: {fed or 'not recorded'}"))
        stats.insert(1, Row("correctness as measured", f"{cell.measured_status} (for the layout fed, not the planned one)"))
    if cell.untested_reason == LAYOUT_NOT_MEASURED and result is not None:
        host = "; ".join(f"{i.name} {i.dtype}{i.shape} {'contiguous' if i.contiguous else 'non-contiguous'}" for i in result.inputs)
        stats.insert(0, Row("layout", f"planned {cell.planned.layout}; not measured at the model (a log from before layouts were measured); host inputs as recorded: {host or 'not recorded'}"))
        stats.insert(1, Row("correctness as measured", f"{cell.measured_status} (for whatever layout reached the model, not shown to be the planned one)"))
    fail = f"{result.failure.phase}: {result.failure.type}: {result.failure.message}" if result and result.failure else ""
    note = notes.by_case.get(cell.case)
    verdict = _verdict_text(note.verdict, note.reason, note.change) if note is not None else ""
    return ProblemView(
        case=cell.case,
        anchor=anchor(cell.case),
        status=cell.status,
        note=cell.untested_reason or "",
        symbol=SYMBOLS[cell.status],
        line=cell.result_line,
        stats=stats,
        failure=clip(fail),
        warnings=[clip(w) for w in cell.warnings],
        explained_by=[(notes.entries[i].label, _entry_anchor(i)) for i in note.entries] if note else [],
        verdict=verdict or "not explained",
        where=localization_view(cell),
    )


MODULE_ROWS = 60  # per cell on the page; every module is in the log's localization event


def localization_view(cell: CellRecord) -> LocalizationView | None:
    event = cell.localization
    if event is None:
        return None
    found = judge_localization(event)
    line = next((r.line for r in cell.logged if r.kind == "localization"), None)
    rows = [
        ModuleRow(
            name=v.name,
            type=v.type,
            accumulated=ratio_text(v.accumulated),
            local=ratio_text(v.local) + ("" if v.local is None or not found.mode == "compiled" else " (compiled alone)" if v.local_compiled else " (eager)"),
            role={"diverges": "first diverging module", "own error": "own error", "inherited": "inherited error", "within": "within tolerance", "not measured": "not measured locally"}[v.role],
            operators=", ".join(v.operators) if v.operators else ("not recorded" if v.operators is None else "none"),
            bad_local=v.local is not None and v.role in ("diverges", "own error"),
            bad_accumulated=v.accumulated is not None and v.accumulated > 1,
        )
        for v in found.modules[:MODULE_ROWS]
    ]
    notes = [f"Judged with the cell's tolerance (atol {fmt(found.atol)}, rtol {fmt(found.rtol)}); figures are worst |diff| / allowance, above 1 is beyond it. Accumulated: each side end to end; local: the {'compiled ' if found.mode == 'compiled' else ''}candidate module fed the reference module's inputs."]
    why = {"plan": "the plan asks for every cell ([localize] always)", "mismatch": "the cell mismatched", "nonfinite": "the cell produced non-finite values"}[found.reason]
    notes.append(f"Localised because {why}; bounds: {found.bounds}.")
    if len(found.modules) > MODULE_ROWS:
        notes.append(f"{len(found.modules) - MODULE_ROWS} more module(s) are in the localization event (log line {line}).")
    if found.skipped or found.skipped_more:
        listed = "; ".join(f"{name} ({why})" for name, why in found.skipped[:12])
        more = len(found.skipped) - 12 + found.skipped_more
        notes.append(f"Skipped by the bounds: {listed}" + (f" and {more} more" if more > 0 else "") + ".")
    for extra in (found.accumulated_note, f"Operators per module: {found.operators_from}." if found.operators_from else None):
        if extra:
            notes.append(clip(extra))
    notes += [clip(f"{v.name}: {v.note}") for v in found.modules[:MODULE_ROWS] if v.note]
    return LocalizationView(sentence=clip(where_sentence(found)), line=line, rows=rows, notes=notes)


def region_rows(stats: Any) -> list[Row]:
    """Per output: the judged figures, and beside them the excluded region's, when a region was declared."""
    rows = []
    for o in stats.per_output or []:
        judged = f"{o.mismatched} of {o.total} judged element(s) outside the tolerance; max abs {stat_text(o.max_abs, 0)}, max rel {stat_text(o.max_rel, 0)}"
        rows.append(Row(f"{o.name}" + (f" (judged region: {o.region})" if o.region else ""), judged))
        if o.outside is not None:
            x = o.outside
            beyond = "not measured" if x.beyond_tolerance is None else str(x.beyond_tolerance)
            rows.append(Row(f"{o.name}: outside the judged region", f"{x.count} element(s), not judged; beyond the tolerance {beyond}; max abs {stat_text(x.max_abs, x.nonfinite)}, max rel {stat_text(x.max_rel, x.nonfinite)}; non-finite {x.nonfinite}"))
    return rows


def _verdict_text(verdict: str | None, reason: str | None, change: str | None) -> str:
    return {"accepted": f"accepted: {reason}", "change-needed": f"change needed: {change}"}.get(verdict or "", "explained, no verdict")


def _entry_anchor(index: int) -> str:
    return f"explanation-{index + 1}"


def _explanations(run: RunModel, notes: Annotations) -> list[ExplanationView]:
    if not notes.entries:
        return []
    cells = {c.case: c for c in run.cells}
    views = []
    for entry in notes.entries:
        covered = [cells[case] for case in notes.covered.get(entry.index, [])]
        views.append(ExplanationView(
            anchor=_entry_anchor(entry.index),
            label=entry.label,
            where=f"{os.path.basename(notes.path)}" + (f" line {entry.line}" if entry.line is not None else ""),
            selector=entry.selector_text,
            text=entry.explanation,
            html=render_markdown(entry.explanation),
            verdict=_verdict_text(entry.verdict, entry.reason, entry.change),
            cells=[(c.case, anchor(c.case), c.status, SYMBOLS[c.status]) for c in covered[:DETAIL_CAP]],
            total=len(covered),
            failed=sum(1 for c in covered if c.status not in ("pass", "untested")),
        ))
    return views


def _verdict_groups(run: RunModel, disposition: Disposition) -> list[VerdictGroupView]:
    """When only the owner's verdicts are missing: the waiting cells grouped by cause."""
    blocking = [r for r in disposition.reasons if r.outcome == "blocked"]
    if not blocking or not all(r.needs_verdict for r in blocking):
        return []
    groups = failure_groups(run, _waiting_cells(run, blocking))
    return [
        VerdictGroupView(g.label, g.measured_facts(), [(c.case, anchor(c.case)) for c in g.cells[:DETAIL_CAP]], len(g.cells))
        for g in groups[:DETAIL_CAP]
    ]


def _waiting_cells(run: RunModel, blocking: list[Reason]) -> list[CellRecord]:
    """The cells these reasons name, in plan order."""
    if len(blocking) == 1 and blocking[0].cases == failed_cases(run):
        # Speed: the one reason names the judge's failed cells, kept in plan order (no pass over
        # every cell); tests/test_view_shortcuts.py.
        return list(cells_with_status(run, *FAILED))
    waiting = {case for r in blocking for case in r.cases}
    return list(compress(run.cells, map(waiting.__contains__, map(_CASE, run.cells))))


ATTENTION = re.compile(r"attention", re.IGNORECASE)
OPS_LISTED = 60


@per_run
def _op_cells(run: RunModel) -> tuple[dict[str, int], list[CellRecord], list[CellRecord]]:
    """Per executed op the number of cells that ran it; the cells measured and not (worked out once per run)."""
    tally = _tally(run)
    per_op: dict[str, int] = {}
    # Cells share their op list (runmodel keeps each distinct list once): the tally counts
    # the lists, and here their ops.
    for items, n in tally.op_lists.items():
        for op in items:
            per_op[op] = per_op.get(op, 0) + n
    return per_op, tally.measured, tally.unmeasured


def attention_text(run: RunModel) -> str:
    """Which attention ops really executed, from the operators events (not the plan's claim)."""
    per_op, measured, unmeasured = _op_cells(run)
    if not measured:
        return "not measured: no cell recorded its executed ops" + (f" ({len(unmeasured)} cell(s) could not list them)" if unmeasured else "")
    kernels = sorted((op for op in per_op if ATTENTION.search(op)), key=lambda op: (-per_op[op], op))
    where = f"in the {len(measured)} cell(s) whose ops were measured" + (f"; not measured in {len(unmeasured)} cell(s)" if unmeasured else "")
    if not kernels:
        return f"no attention op executed {where}"
    return "; ".join(f"{op} ({per_op[op]} cell(s))" for op in kernels) + f", {where}"


def operator_rows(run: RunModel) -> list[Row]:
    """A compact summary of the executed ops: how many cells measured them, and which ran."""
    per_op, measured, unmeasured = _op_cells(run)
    rows = [Row("cells whose executed ops were measured", f"{len(measured)} of {len(run.cells)}" + (f" ({', '.join(sorted(_tally(run).measured_modes))})" if measured else ""), "operators.executed")]
    if unmeasured:
        reasons: dict[str, int] = {}
        for c in unmeasured:
            ops = c.operators.executed if c.operators is not None and len(unmeasured) <= DETAIL_CAP else None
            why = f"{c.executed_status}: {ops.reason}" if ops is not None else c.executed_status or ""
            reasons[why] = reasons.get(why, 0) + 1
        rows.append(Row("cells whose executed ops were not measured", "; ".join(f"{n} cell(s) {why}" for why, n in reasons.items()), "operators.executed"))
    if per_op:
        ordered = sorted(per_op, key=lambda op: (-per_op[op], op))
        shown = ", ".join(f"{op} ({per_op[op]})" for op in ordered[:OPS_LISTED])
        more = f" and {len(ordered) - OPS_LISTED} more" if len(ordered) > OPS_LISTED else ""
        rows.append(Row(f"ops executed ({len(ordered)} distinct; cells that ran each)", shown + more, "operators.executed"))
    rows.append(Row("attention kernel that ran", attention_text(run), "operators.executed"))
    return rows


def input_text(info: Any) -> str:
    """One input as the log describes it as fed: dtype, shape and every layout fact recorded."""
    data = info.model_dump()
    parts = [f"{data.pop('name')} {data.pop('dtype')}{data.pop('shape')}"]
    data.pop("nonfinite", None)
    for key, value in data.items():
        if isinstance(value, bool):
            value = "yes" if value else "no"
        parts.append(f"{key.replace('_', ' ')} {value if value is not None else 'not measured'}")
    return ", ".join(parts)


def input_rows(run: RunModel) -> tuple[list[InputView], int]:
    """Per cell: what the model received (measured at its call), else what the host prepared."""
    rows = []
    for c in islice(compress(run.cells, map(_RESULT_LINE, run.cells)), DETAIL_CAP):  # speed: picked in C, up to the last shown (line numbers start at 1)
        result = c.result
        fed = result.inputs_fed if result is not None else None
        prepared = result.inputs if result is not None else []
        if fed:
            text = "; ".join(input_text(i) for i in fed)
            if result is not None and result.layout_fed is not None:
                text += f"; layout fed: {result.layout_fed}" + ("" if result.layout_achieved is None else f" (planned {c.planned.layout}: {'achieved' if result.layout_achieved else 'NOT achieved'})")
            rows.append(InputView(c.case, anchor(c.case), text, "case_result.inputs_fed (at the model call)"))
        elif prepared:
            text = "; ".join(input_text(i) for i in prepared) + "; what the model received: not measured"
            rows.append(InputView(c.case, anchor(c.case), text, "case_result.inputs (as prepared on the host)"))
        else:
            rows.append(InputView(c.case, anchor(c.case), "not measured (the case_result lists no inputs)", "case_result"))
    return rows, _tally(run).with_result


def warning_views(run: RunModel) -> list[WarningView]:
    """Every warning, passing cells included, grouped by message; run-level ones too."""
    by_message: dict[str, list[CellRecord]] = {}
    for c in _tally(run).warned:  # only the cells with warnings
        for message in dict.fromkeys(c.warnings):
            by_message.setdefault(message, []).append(c)
    views, spent = [], 0
    for message, cells in by_message.items():
        shown = clip(message)
        spent += len(shown) + 100
        listed = []
        for c in cells[:DETAIL_CAP]:
            spent += 2 * len(c.case) + 80
            if listed and spent > WARNINGS_BUDGET:
                break
            listed.append((c.case, c.status, anchor(c.case)))
        if views and spent > WARNINGS_BUDGET:
            break
        views.append(WarningView(shown, listed, len(cells), "case_result.warnings, warning"))
    outside = dict.fromkeys(clip(w.message) for w in run.warnings if w.case is None)
    views += [WarningView(message, [], 0, "warning (outside any cell)") for message in outside]
    return views[:DETAIL_CAP]


def reference_rows(run: RunModel) -> tuple[list[dict[str, str]], list[str]]:
    """The reference per input: its noise floor, float64 distance and own non-finite values."""
    rows, findings = [], []
    for r in run.references:
        if r.noise_max_abs is not None:
            noise = fmt(r.noise_max_abs)
        elif r.deterministic is False:
            noise = "not finite (a NaN or Inf differed between the two runs)"
        else:
            noise = "not measured"
        if r.float64_max_abs is not None:
            golden = fmt(r.float64_max_abs)
        elif r.golden_nonfinite:
            golden = f"not finite: the golden output has {r.golden_nonfinite} NaN/Inf element(s)"
        else:
            golden = "not measured"
        own = "not measured" if r.nonfinite is None else str(r.nonfinite)
        rows.append({
            "input": r.shape, "computed": f"{r.device} {r.dtype}", "runs": str(r.runs), "noise": noise,
            "deterministic": {True: "yes (bitwise equal)", False: "no"}.get(r.deterministic, "not measured"),  # type: ignore[arg-type]
            "golden": golden, "nonfinite": own,
        })
        if r.nonfinite:
            findings.append(f"The reference output for input {r.shape} is itself non-finite: {r.nonfinite} NaN/Inf element(s). Every cell compared against it is not evidence of correctness.")
        if r.golden_nonfinite:
            findings.append(f"The float64 golden output for input {r.shape} is itself non-finite: {r.golden_nonfinite} NaN/Inf element(s).")
    return rows, findings


def stat_text(value: float | None, nonfinite: int) -> str:
    """A comparison statistic: null in error_stats means a difference was not finite."""
    if value is None:
        return f"not finite ({nonfinite} NaN/Inf output element(s))" if nonfinite else "not finite (a NaN or Inf in the output or the reference)"
    if nonfinite:
        return f"{fmt(value)} over finite elements only; {nonfinite} NaN/Inf output element(s) not included"
    return fmt(value)


def _first_cells(run: RunModel, keep: Callable[[CellRecord], Any]) -> list[CellRecord]:
    """The first DETAIL_CAP cells that ``keep`` accepts: the ones a table shows on the page."""
    return list(islice((c for c in run.cells if keep(c)), DETAIL_CAP))


def _compile_rows(run: RunModel) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    if not run.kind_counts.get("compile"):  # no compile event: no cell's events need looking through
        return rows
    for c in _first_cells(run, lambda c: c.compiles):
        result = c.result
        for k in c.compiles:
            rows.append({
                "case": c.case + (f" ({k.generation_graph}, bucket {k.bucket})" if k.generation_graph else "" if k.graph == "inference" else f" ({k.graph})"),
                "anchor": anchor(c.case),
                "first": fmt(k.compile_first_result_s, " s"),
                "graphs": fmt(k.graphs),
                "breaks": "; ".join(f"{b.reason} ×{b.count}" for b in k.graph_breaks) or "none",
                "recompiles": fmt(k.recompiles),
                "cache": f"{fmt(k.cache_hits)} hits / {fmt(k.cache_misses)} misses",
                "condition": human(k.cache_condition) + (f"; cache entries {k.cache_entries_before} → {fmt(k.cache_entries_after)}" if k.cache_entries_before is not None else "; cache entries not listed"),
                "limit": "HIT: later calls ran eager" if k.recompile_limit_hit else "not hit",
                "repeat": {True: "compiled again", False: "reused"}.get(result.recompiled, "") if result else "",
            })
    return rows[:DETAIL_CAP]


def _fallback_rows(run: RunModel) -> list[Row]:
    rows = []
    for c in _first_cells(run, lambda c: c.fallback_status is not None):
        ops = c.operators
        fb, tr = ops.fallback, ops.transfers  # type: ignore[union-attr]
        fb_text = ", ".join(fb.items) if fb.status == "measured" and fb.items else ("none" if fb.status == "measured" else f"{human(fb.status)}: {fb.reason}")
        tr_text = f"{tr.count} copies, {tr.bytes} bytes" if tr.status == "measured" else f"{human(tr.status)}: {tr.reason}"
        rows.append(Row(c.case, f"fallback: {fb_text}; transfers: {tr_text}", anchor(c.case)))
    return collapse_rows(rows)


def collapse_rows(rows: list[Row], at_least: int = 3) -> list[Row]:
    """Rows of cells that say the same thing become one row with a count, in first-seen order.

    "not applicable on cpu" for 36 cells is one row "all 36 cells"; a value shared by fewer
    than ``at_least`` cells keeps its own rows (and their links).
    """
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.value, type(row).__name__), []).append(row)
    out: list[Row] = []
    for (value, _), members in groups.items():
        if len(members) < at_least:
            out.extend(members)
        else:
            who = f"all {len(members)} cells" if len(members) == len(rows) else f"{len(members)} cells"
            out.append(Row(who, value, ""))
    return out


def _cold_not_measured(cell: CellRecord) -> str:
    if cell.cold_timed_out_after_s is not None:
        return f"not measured: timed out after {fmt(cell.cold_timed_out_after_s, ' s')}"
    return "not measured"


def unstable_timing_text(run: RunModel) -> str:
    """'9 of 14 timed cells have an unstable warm timing ...', or '' when every timed cell is stable."""
    undecided = undecided_cells(run)
    if not undecided:
        return ""
    unstable = sum(1 for j in undecided if j.unstable)
    timed = len(timed_cells(run))
    parts = [f"{unstable} of {timed} timed cells have an unstable warm timing ({STABILITY_SYMBOL} in the timing table, with the figures that make it so)"] if unstable else []
    if len(undecided) > unstable:
        parts.append(f"{len(undecided) - unstable} of {timed} have too few warm samples to classify")
    return "; ".join(parts) + ". Their timings decide nothing: no faster or slower verdict, geometric mean, trend point or regression uses them."


def _stability_flag(cell: CellRecord) -> list[str]:
    judged = cell_stability(cell) if cell.warm_median_s is not None else None
    text = flag_text(judged) if judged is not None else ""
    return [text] if text else []


def _timings(run: RunModel) -> list[TimingView]:
    rows = []
    for c in _first_cells(run, lambda c: c.status == "pass" and (c.cold_s is not None or c.warm_median_s is not None)):
        cold, w = c.cold, c.warm
        flags = _stability_flag(c)
        flags += ["really eager: recompile limit hit"] if c.eager_after_recompile_limit else []
        flags += [f"{call} call: layout not achieved" for call in c.timing_layout_missed]
        rows.append(TimingView(
            case=c.case,
            anchor=anchor(c.case),
            cold=fmt(cold.seconds, " s") if cold else _cold_not_measured(c),
            cache_condition=_cold_condition(cold) if cold else "",
            fresh_process="yes" if cold and cold.fresh_process else "no" if cold else "",
            process_start=fmt(cold.process_start_s, " s") if cold else "not measured",
            warm_median=fmt_ms(w.median_s if w else None),
            warm_min=fmt_ms(w.min_s if w else None),
            warm_p90=fmt_ms(w.p90_s if w else None),
            warm_iqr=fmt_ms(w.iqr_s if w else None),
            samples=len(w.samples_s) if w else 0,
            flagged="; ".join(flags + (["includes CPU fallback"] if c.fallback_items else [])),
            cold_check=_cold_check(cold),
            restart=_restart(c),
        ))
    return rows


def _restart(cell: CellRecord) -> str:
    """The third cold condition beside the others: a fresh process given the cache the cell's
    empty-cache compile left."""
    restart = cell.restart
    if restart is None:
        return "not measured" if cell.planned.mode == "compiled" else ""
    text = f"{fmt(restart.seconds, ' s')}; entries {fmt(restart.cache_entries_before)} → {fmt(restart.cache_entries_after)}"
    if restart.cache_hits is not None:
        text += f"; {restart.cache_hits} hits / {fmt(restart.cache_misses)} misses"
    return f"{text}; {_cold_check(restart)}"


def _cold_condition(cold: Any) -> str:
    if cold.cache_entries_before is None:
        return f"{human(cold.cache_condition)} (cache not checked: as constructed)"
    full = [f"{d.role} {d.entries_before}" for d in cold.cache_dirs or [] if d.entries_before]
    text = f"{human(cold.cache_condition)}; entries {cold.cache_entries_before} → {fmt(cold.cache_entries_after)}"
    text += f" (not empty before: {', '.join(full)})" if full else ""
    if cold.cache_hits is not None:
        text += f"; {cold.cache_hits} hits / {fmt(cold.cache_misses)} misses"
    return text


def _cold_check(cold: Any) -> str:
    if cold is None:
        return ""
    check = cold.output_check
    if check is None:
        return "not compared"
    if check.passed:
        return f"matches the reference (max abs {fmt(check.max_abs)})"
    return f"MISMATCH: {check.mismatched} of {check.total} outside tolerance (max abs {fmt(check.max_abs)})"


GRAD_ROWS = 20


def _grad_rows(cell: CellRecord) -> list[GradRow]:
    """Per parameter, the worst over all steps, worst first; updated values beside them."""
    worst: dict[str, dict[str, Any]] = {}
    for step in cell.train_steps:
        for g in step.grads:
            row = worst.setdefault(g.name, {"ratio": 0.0, "abs": 0.0, "rel": 0.0, "mism": 0, "total": g.total, "norms": []})
            row["ratio"] = max(row["ratio"], g.worst_ratio if g.worst_ratio is not None else float("inf"))
            row["abs"] = max(row["abs"], g.max_abs if g.max_abs is not None else float("inf"))
            row["rel"] = max(row["rel"], g.max_rel if g.max_rel is not None else float("inf"))
            row["mism"] = max(row["mism"], g.mismatched)
            if g.norm_ratio is not None:
                row["norms"].append(g.norm_ratio)
    updated = {p.name: p for p in cell.train_result.params} if cell.train_result else {}
    rows = []
    for name, r in sorted(worst.items(), key=lambda kv: -kv[1]["ratio"]):
        u = updated.get(name)
        norms = f"{min(r['norms']):.6g} to {max(r['norms']):.6g}" if r["norms"] else "not measured"
        upd = _updated_text(u) if u else "not recorded"
        rows.append(GradRow(name, fmt(r["ratio"]), fmt(r["abs"]), fmt(r["rel"]), f"{r['mism']} of {r['total']}", norms, upd, r["mism"] > 0 or bool(u and u.mismatched), _rule_text(u)))
    for name, u in updated.items():
        if name not in worst:
            rows.append(GradRow(name, "no gradient", "", "", "", "", _updated_text(u), u.mismatched > 0, _rule_text(u)))
    return sorted(rows, key=lambda r: not r.bad)


def _rule_text(u: Any) -> str:
    if u is None or u.rule is None:
        return "elementwise (no rule declared)"
    return u.rule


def _updated_text(u: Any) -> str:
    text = f"{u.mismatched} of {u.total} outside; largest {fmt(u.worst_ratio)}× allowance"
    if u.bound_elements is not None:
        text += f"; {u.bound_elements} element(s) with zero reference gradient judged by the bound {fmt(u.bound)}, largest |diff| there {fmt(u.bound_max_abs)}"
    return text


def _regions(run: RunModel) -> list[RegionRow]:
    """Every cell's outputs judged on a declared region: judged figures and the left-out elements' figures."""
    rows = []
    # Speed: a cell with per-output statistics is among the judge's few flagged cells (kept for
    # the run, in plan order), so only those are looked through, not every cell.
    for c in [c for c in flagged(run) if c.per_output]:
        for o in c.per_output or []:
            x = o.get("outside")
            if x is None:
                continue
            beyond = "not measured" if x.get("beyond_tolerance") is None else str(x["beyond_tolerance"])
            rows.append(RegionRow(
                case=c.case, anchor=anchor(c.case), status=c.status, symbol=SYMBOLS[c.status], output=o["name"], region=o.get("region") or "",
                judged=f"{o['mismatched']} of {o['total']} outside the tolerance; max abs {fmt(o['max_abs'])}",
                outside=f"{x['count']} element(s); {beyond} beyond the tolerance; max abs {fmt(x['max_abs'])}; max rel {fmt(x['max_rel'])}; non-finite {x['nonfinite']}" if x["count"] else "none: every element is in the judged region",
            ))
            if len(rows) >= DETAIL_CAP:
                return rows
    return rows


def _graph_text(compiles: list[Any]) -> str:
    """A generation cell's compile events in words: per graph, how many compiled and in how long."""
    parts = []
    for k in compiles:
        graph = k.generation_graph or k.graph
        if k.graphs == 0:
            parts.append(f"{graph}: 0 graphs (compiled earlier in the process)")
        else:
            parts.append(f"{graph}: {fmt(k.graphs)} graph{'s' if k.graphs != 1 else ''}, first call {fmt(k.compile_first_result_s, ' s')}")
        if k.recompiles:
            parts[-1] += f", {k.recompiles} compiled again"
    return "; ".join(parts) or "eager: nothing compiled"


def _generation(run: RunModel) -> list[GenerationRow]:
    rows = []
    for c in run.cells_with("generation")[:DETAIL_CAP]:
        g = c.generation
        if g is None:
            continue
        t = g.timing
        overlaps = [o for o in g.top_k_overlap if o is not None]
        crit = c.result.task_metric.criterion if c.result and c.result.task_metric else None
        needed = f" (criterion {crit.op} {crit.threshold:g})" if crit else ""
        rows.append(GenerationRow(
            bucket=str(g.bucket),
            request=f"{g.request_length} tokens" + (" (truncated)" if g.truncated else ""),
            case=c.case,
            anchor=anchor(c.case),
            status=c.status,
            symbol=SYMBOLS[c.status],
            compiles=_graph_text(c.compiles),
            ttft_cold=(fmt(t.ttft_cold_s, " s") if t.ttft_cold_s >= 1 else fmt_ms(t.ttft_cold_s)) if t else "not timed",
            ttft_warm=f"{fmt_ms(t.ttft_warm.median_s)} median, {fmt_ms(t.ttft_warm.p90_s)} p90" if t else "not timed",
            decode=f"{fmt_ms(t.decode_token.median_s)} median, {fmt_ms(t.decode_token.p90_s)} p90 per token" if t else "not timed",
            tokens_per_s=fmt(t.tokens_per_s, "/s", digits=4) if t else "not timed",
            agreement=f"{g.steps_agreeing} of {g.decode_steps + 1} steps agree{needed}",
            divergent=f"step {g.first_divergent_step}" if g.first_divergent_step is not None else "none",
            top_k=f"min {min(overlaps):.2f} of top-{g.top_k}" if overlaps else "not measured",
        ))
    rows.sort(key=lambda r: int(r.bucket))
    return rows


def _generation_requests(run: RunModel) -> list[Row]:
    return [Row(f"{r.length} tokens (batch {r.batch})", f"{r.outcome}: {r.reason}", "request") for r in run.requests]


def _generation_note(run: RunModel) -> str:
    g = run.plan.generation if run.plan else None
    if g is None:
        return ""
    return (f"Each request is padded ({g.padding_side}) to its bucket, then one prefill call and {g.decode_steps} greedy decode calls "
            f"against a static KV cache of {g.max_cache_len} positions (one decode shape for every bucket). Step 0 is the token the "
            f"prefill chose, step k that of the k-th decode call; top-k overlap (k = {g.top_k}, at least {g.min_top_k_overlap:g} "
            "declared) is judged up to the first divergent step, after which the contexts differ. Time to first token: the prefill "
            "call and its token; cold is the cell's first prefill in the collector's process, not a fresh process (compiled: with "
            "the compile of its bucket's graph when no earlier cell compiled it). Timings only for cells that passed.")


def _training(run: RunModel) -> list[TrainingView]:
    views = []
    for c in run.cells_with("train_step")[:DETAIL_CAP]:
        rows = _grad_rows(c)
        losses = [(s.step, fmt(s.loss, digits=8), fmt(s.reference_loss, digits=8), "within" if s.loss_within else "OUTSIDE tolerance") for s in c.train_steps]
        views.append(TrainingView(c.case, anchor(c.case), c.status, SYMBOLS[c.status], losses, rows[:GRAD_ROWS], max(0, len(rows) - GRAD_ROWS)))
    return views


def _training_note(run: RunModel) -> str:
    t = run.plan.training if run.plan else None
    if t is None:
        return ""
    tol = next(iter(run.plan.tolerances.values()), None)
    rules = ""
    if tol and tol.loss and tol.grad:
        rules = f" Loss: |diff| ≤ {tol.loss.atol:g} + {tol.loss.rtol:g}·|ref|; gradients and updated parameters: |diff| ≤ {tol.grad.atol:g} + {tol.grad.rtol:g}·|ref|."
    return f"{t.steps} steps of {t.optimizer} from identical weights, inputs and seed {t.seed}; randomness: {t.randomness}.{rules}"


def _provenance(run: RunModel) -> list[Row]:
    rows = [
        Row("run id", run.start.run_id, "run_start"),
        Row("written by", run.start.collector, "run_start"),
        Row("origin", run.start.origin + (f": {run.start.origin_note}" if run.start.origin_note else ""), "run_start"),
        Row("command", " ".join(run.start.command), "run_start"),
        Row("started / finished", f"{run.start.started_at} / {run.end.finished_at if run.end else 'no run_end'}", "run_start, run_end"),
        Row("log file", os.path.basename(run.path), ""),
    ]
    rows += [Row(item.key, item.value, item.where) for item in code_and_data(run)]
    judged_by = run_backend(run.plan.target if run.plan else run.start.target, run.environment.backend_family if run.environment else "unknown")
    if judged_by is not None:
        rows.append(Row("judged with", f"reportgen/judge/constraints/{judged_by.file} (sha256 {docs_file_sha256(judged_by.target)})", "this report"))
    task = run.start.scheduled
    if task is not None:
        where = ", ".join(part for part in (
            f"environment {task.environment}" if task.environment else "",
            f"task {task.task_index}" if task.task_index is not None else "",
            f"attempt {task.attempt}" if task.attempt else "",
            f"{task.scheduler} job {task.job_id}" if task.scheduler or task.job_id else "",
            f"node {task.node}" if task.node else "",
        ) if part)
        rows.append(Row("campaign task", f"{task.campaign} ({task.campaign_id})" + (f": {where}" if where else ""), "run_start.scheduled"))
    if run.environment:
        rows += [Row(f"device {r.label}", r.value, r.source) for r in _fact_rows(run.environment.device)]
        rows += [Row(f"env {k}", v, "environment.env_vars") for k, v in sorted(run.environment.env_vars.items())]
        rows += [Row(f"installed {a.name}", f"{a.version} via {a.installer or 'unknown installer'}; tags {', '.join(a.wheel_tags) or 'none'}" + (f"; from {a.source_url}" if a.source_url else ""), "environment.artifacts") for a in run.environment.artifacts]
    return rows


PROBLEM_STATUSES = ("mismatch", "nonfinite", "error", "skipped")


def _problem_cells(run: RunModel) -> list[CellRecord]:
    """The cells section 5 lists, in plan order: failed, errored, skipped, and untested because
    their planned layout was not achieved."""
    counts = run.counts()
    if not (counts["untested"] or counts["error"] or counts["skipped"]):
        # Speed: only mismatching and non-finite cells can be listed, and the judge has them
        # already (a layout not achieved makes a cell untested); tests/test_view_shortcuts.py.
        return list(cells_with_status(run, *FAILED))
    return [c for c in run.cells if c.status in PROBLEM_STATUSES or c.untested_reason in (LAYOUT_NOT_ACHIEVED, LAYOUT_NOT_MEASURED)]


LOCALIZED_PASSING_CAP = 12


def _localized_passing(run: RunModel, problem_cells: list[CellRecord]) -> list[tuple[str, str, LocalizationView]]:
    """Localisations of cells section 5 does not list as problems, the first few in plan order."""
    if not run.kind_counts.get("localization"):
        return []
    listed = {c.case for c in problem_cells}
    found = []
    for cell in run.cells:
        if cell.localized and cell.case not in listed:
            view = localization_view(cell)
            if view is not None:
                found.append((cell.case, anchor(cell.case), view))
            if len(found) == LOCALIZED_PASSING_CAP:
                break
    return found


def build_view(run: RunModel, disposition: Disposition, annotations: Annotations | None = None) -> ReportView:
    notes = annotations if annotations is not None else Annotations("", [], {}, {})
    problem_cells = _problem_cells(run)
    stopped = disposition.performance_stopped
    verdict_groups = _verdict_groups(run, disposition)
    criteria, declared = _criteria(run)
    incomplete = ""
    if not run.complete:
        incomplete = next((r.message for r in disposition.reasons if r.rule == "incomplete-run"), "Incomplete run.")
    scope = disposition.scope
    references, reference_findings = reference_rows(run)
    inputs, inputs_total = input_rows(run)
    timing_scope = timed_scope_text(run)
    return ReportView(
        title=f"Migration report: {run.start.workload} on {scope.family}" + (f" for {scope.intended_target}" if scope.intended_target else ""),
        run_id=run.start.run_id,
        generated_at=generated_at(run),
        synthetic=run.synthetic,
        origin_note=run.start.origin_note or "",
        incomplete=incomplete,
        unstable_timing=unstable_timing_text(run),
        disposition=disposition,
        headline=disposition.headline,
        finding=finding(run, disposition),
        next_step=next_step(run, disposition, os.path.basename(run.path) or "events.jsonl"),
        outcome=disposition.outcome,
        reasons=[_reason_view(r) for r in disposition.reasons],
        verdict_groups=verdict_groups,
        annotate_command=f"reportgen annotate {os.path.basename(run.path)}" if verdict_groups else "",
        scope=scope_view(scope, run),
        record=_record(run, timing_scope),
        versions=_fact_rows(run.environment.versions) if run.environment else [],
        matrix=_matrix(run),
        criteria=criteria,
        criteria_declared=declared,
        problems=_problems(problem_cells, notes),
        problems_total=len(problem_cells),
        localized_passing=_localized_passing(run, problem_cells),
        explanations=_explanations(run, notes),
        regions=_regions(run),
        fallback=_fallback_rows(run),
        compile_rows=_compile_rows(run),
        perf_stopped=[(case, anchor(case)) for case in stopped[:DETAIL_CAP]],
        perf_stopped_total=len(stopped),
        timings=_timings(run),
        timing_scope=timing_scope,
        backend_note=adapter_note(run),
        training=_training(run),
        training_note=_training_note(run),
        generation=_generation(run),
        generation_requests=_generation_requests(run),
        generation_note=_generation_note(run),
        correctness_figures=correctness_figures(run.cells[:DETAIL_CAP]),
        timing_figures=timing_figures(run.cells[:DETAIL_CAP]),
        profiles=[{"case": p.case, "anchor": anchor(p.case), "profiler": p.profiler, "traces": p.traces, "top_ops": p.top_ops[:10]} for c in run.cells_with("profile")[:DETAIL_CAP] for p in c.profiles],
        artifacts=[{"role": a.role, "path": a.path, "bytes": a.bytes, "sha256": a.sha256} for a in run.artifacts],
        provenance=_provenance(run),
        log_problems=[clip(p) for p in run.log_problems[:50]],
        reference_findings=reference_findings,
        references=references,
        inputs=inputs,
        inputs_total=inputs_total,
        warnings=warning_views(run),
        operators=operator_rows(run),
        details=DETAILS_NAME,
    )


def needs_details(run: RunModel) -> bool:
    return len(run.cells) > DETAIL_CAP


DETAIL_COLUMNS = (
    "case", "batch", "length", "layout", "dtype", "mode", "status",
    "mismatched", "total", "max_abs", "cold_s", "warm_median_s", "log_line",
    "failure", "warnings",
)


def detail_rows(run: RunModel) -> list[tuple[Any, ...]]:
    """One flat row per planned cell (DETAIL_COLUMNS): the full table behind a capped report.

    ``log_line`` is the line of the cell's case_result (empty for an untested cell), which
    holds the mismatch figures; the times come from the cell's timing event. ``failure`` and
    ``warnings`` (one a line) are the full texts that the page cuts (``clip``).
    """
    return list(map(detail_row, run.cells))


def detail_row(c: CellRecord) -> tuple[Any, ...]:
    """One cell's row of DETAIL_COLUMNS (see ``detail_rows``)."""
    p = c.planned
    return (
        p.case, p.batch, p.length, p.layout, p.dtype, p.mode, c.status,
        c.mismatched, c.total, c.max_abs, c.cold_s, c.warm_median_s, c.result_line,
        c.failure_text or "", "\n".join(c.warnings) if c.warnings else "",
    )
