"""The report's view model: what each section shows, as plain data both templates render.

This layer decides content and order; it knows no HTML. Each section of the report is a small
module in ``reportgen.render.sections`` that puts one part of the judgement in words; this
module gathers them into one ``ReportView``. The only markup produced is annotation Markdown,
rendered by ``reportgen.render.markdown``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reportgen.judge.disposition import Disposition
from reportgen.judge.judgement import Judgement
from reportgen.judge.nextstep import Words
from reportgen.model.annotations import Annotations
from reportgen.model.runmodel import RunModel
from reportgen.render.charts import correctness_figures, Figure, timing_figures
from reportgen.render.sections.common import (
    DETAIL_CAP,
    DETAILS_NAME,
    SYMBOLS,
    Row,
    anchor,
    capped_facts,
    clip,
    collapse_rows,
    fact_rows,
    fmt,
    fmt_ms,
    short_reason,
)
from reportgen.render.sections.criteria import criteria_rows
from reportgen.render.sections.disposition import (
    reason_view,
    verdict_group_views,
    ReasonView,
    scope_view,
    ScopeView,
    unstable_timing_text,
    VerdictGroupView,
)
from reportgen.render.sections.evidence import DETAIL_COLUMNS, detail_row, detail_rows, generated_at, provenance_rows
from reportgen.render.sections.fallback_compile import compile_rows, fallback_rows
from reportgen.render.sections.matrix import mark_targets, matrix_view, MatrixView
from reportgen.render.sections.problems import (
    explanation_views,
    localized_passing,
    problem_views,
    region_views,
    ExplanationView,
    LocalizationView,
    ProblemView,
    RegionRow,
)
from reportgen.render.sections.record import (
    record_rows,
    input_rows,
    InputView,
    operator_rows,
    reference_rows,
    timed_scope_text,
    warning_views,
    WarningView,
)
from reportgen.render.sections.timings import (
    generation_rows,
    generation_note,
    generation_requests,
    timing_views,
    training_views,
    training_note,
    GenerationRow,
    TimingView,
    TrainingView,
)

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
    next_step: Words  # what must happen next, and where (commands and files marked as code)
    outcome: str
    reasons: list[ReasonView]
    verdict_groups: list[VerdictGroupView]
    only_verdicts_block: bool
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
    # The host around the warm loops, one phrase ('' when none was recorded): judged facts, formatted.
    timing_host: str
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
    inputs_note: str = ""  # the facts no input's record measures, said once
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
    unstable_timing_title: str = ""  # "Unstable timing", or "Timing not classified" when none is unstable


HARDWARE_CHARS = 60  # a device name as the title shows it (the record has the whole of it)


def _hardware(run: RunModel) -> str:
    """' (NVIDIA H200)': the device the cells ran on, as the log recorded its name, for the first
    screen; '' when it was not read. Not the host's instance type: a CPU run on a Trainium
    instance ran on its CPU (the site's device column reads the same fact)."""
    device = run.environment.device if run.environment is not None else {}
    fact = device.get("device_name")
    value = " ".join(fact.value.split()) if fact is not None and fact.value else ""
    return f" ({value[:HARDWARE_CHARS]}{'…' if len(value) > HARDWARE_CHARS else ''})" if value else ""


def build_view(run: RunModel, judgement: Judgement, annotations: Annotations | None = None) -> ReportView:
    disposition = judgement.disposition
    notes = annotations if annotations is not None else Annotations("", [], {}, {})
    problem_cells = judgement.problems
    stopped = disposition.performance_stopped
    verdict_groups = verdict_group_views(judgement)
    criteria, declared = criteria_rows(run)
    scope = disposition.scope
    references, reference_findings = reference_rows(run)
    inputs, inputs_total, inputs_note = input_rows(run)
    timing_scope = timed_scope_text(run)
    banner_title, banner = unstable_timing_text(judgement)
    view = ReportView(
        title=f"Migration report: {run.start.workload} on {scope.family}{_hardware(run)}"
        + (f" for {scope.intended_target}" if scope.intended_target else ""),
        run_id=run.start.run_id,
        generated_at=generated_at(run),
        synthetic=run.synthetic,
        origin_note=run.start.origin_note or "",
        incomplete=judgement.incomplete,
        unstable_timing=banner,
        unstable_timing_title=banner_title,
        disposition=disposition,
        headline=disposition.headline,
        finding=judgement.finding,
        next_step=judgement.next_step,
        outcome=disposition.outcome,
        reasons=[reason_view(r) for r in disposition.reasons],
        verdict_groups=verdict_groups,
        only_verdicts_block=judgement.only_verdicts_block,
        annotate_command=judgement.annotate_command if verdict_groups and not judgement.annotations_file else "",
        scope=scope_view(scope, run, judgement),
        record=record_rows(run, timing_scope),
        versions=capped_facts(fact_rows(run.environment.versions), "versions", run) if run.environment else [],
        matrix=matrix_view(run, judgement.failing),
        criteria=criteria,
        criteria_declared=declared,
        problems=problem_views(
            problem_cells, notes, judgement.localized, judgement.failing, judgement.unlocalized, judgement.settled
        ),
        problems_total=len(problem_cells),
        localized_passing=localized_passing(judgement.localized_others, judgement.localized),
        explanations=explanation_views(run, notes, judgement.entry_groups),
        regions=region_views(run.cells),
        fallback=fallback_rows(run),
        compile_rows=compile_rows(run),
        perf_stopped=[(case, anchor(case)) for case in stopped[:DETAIL_CAP]],
        perf_stopped_total=len(stopped),
        timings=timing_views(run, judgement.timing_flags, judgement.timing_caveats, judgement.restart_unread),
        timing_scope=timing_scope,
        timing_host="; ".join(
            f"{label.removesuffix(' around the warm loops')} {value}" for label, value in judgement.loop_host
        ),
        backend_note=judgement.adapter_note,
        training=training_views(run),
        training_note=training_note(run),
        generation=generation_rows(run, judgement.generation_flags, judgement.throughput_flags),
        generation_requests=generation_requests(run),
        generation_note=generation_note(run),
        correctness_figures=correctness_figures(run.cells[:DETAIL_CAP], judgement.allowance),
        timing_figures=timing_figures(run.cells[:DETAIL_CAP], judgement.figure_flags),
        profiles=[
            {
                "case": p.case,
                "anchor": anchor(p.case),
                "profiler": p.profiler,
                "traces": p.traces,
                "top_ops": p.top_ops[:10],
            }
            for c in run.cells_with("profile")[:DETAIL_CAP]
            for p in c.profiles
        ],
        artifacts=[{"role": a.role, "path": a.path, "bytes": a.bytes, "sha256": a.sha256} for a in run.artifacts],
        provenance=provenance_rows(run, judgement.judged_with),
        log_problems=[clip(p) for p in run.log_problems[:50]],
        reference_findings=reference_findings,
        references=references,
        inputs=inputs,
        inputs_total=inputs_total,
        inputs_note=inputs_note,
        warnings=warning_views(run),
        operators=operator_rows(run),
        details=DETAILS_NAME,
    )
    # The elements other sections give a cell (report.html.j2): a problem's entry, a timing row,
    # a passing generation row; the matrix holds the rest.
    mark_targets(
        view.matrix,
        {p.anchor for p in view.problems}
        | {t.anchor for t in view.timings}
        | {g.anchor for g in view.generation if g.status == "pass"},
    )
    return view


__all__ = [
    # What other modules read from the view, wherever its section defines it.
    "DETAIL_CAP",
    "DETAIL_COLUMNS",
    "SECTIONS",
    "SYMBOLS",
    "ReportView",
    "Row",
    "anchor",
    "build_view",
    "collapse_rows",
    "detail_row",
    "detail_rows",
    "fmt",
    "fmt_ms",
    "short_reason",
    "timed_scope_text",
]
