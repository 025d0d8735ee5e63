"""Section 5, Mismatches and errors: each problem cell, where its error arises, and the owners' explanations."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from markupsafe import Markup

from reportgen.judge.localization import Localized
from reportgen.model.annotations import Annotations
from reportgen.model.runmodel import CellRecord, LAYOUT_NOT_ACHIEVED, LAYOUT_NOT_MEASURED, RunModel
from reportgen.render.sections.common import (
    entry_anchor,
    verdict_text,
    anchor,
    beside,
    clip,
    DETAIL_CAP,
    fmt,
    PROBLEMS_BUDGET,
    Row,
    stat_text,
    SYMBOLS,
)


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
    settled: str = ""  # why no explanation is owed (the judge's), shown in place of "none yet"


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
    alike: list[tuple[str, str, str]] = field(
        default_factory=list
    )  # (anchor, label, where) of entries saying the same but for their figures


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


def problem_views(
    cells: tuple[CellRecord, ...],
    notes: Annotations,
    localized: dict[str, Localized],
    failing: dict[str, str] | None = None,
    unlocalized: dict[str, str] | None = None,
    settled: dict[str, str] | None = None,
) -> list[ProblemView]:
    """The first DETAIL_CAP problem cells, as many as fit the section's budget (at least one)."""
    views: list[ProblemView] = []
    spent = 0
    for cell in cells[:DETAIL_CAP]:
        view = _problem(cell, notes, localized.get(cell.case), (unlocalized or {}).get(cell.case))
        if failing and cell.case in failing:  # the quantity the status stands for, named first
            view.stats.insert(0, Row("failed on", failing[cell.case]))
        view.settled = (settled or {}).get(cell.case, "")
        spent += _size(view)
        if views and spent > PROBLEMS_BUDGET:
            break
        views.append(view)
    return views


def _size(view: ProblemView) -> int:
    """Roughly the characters a problem shows, markup included."""
    text = len(view.failure) + sum(map(len, view.warnings)) + sum(len(r.label) + len(r.value) for r in view.stats)
    if view.where is not None:
        text += (
            len(view.where.sentence)
            + sum(map(len, view.where.notes))
            + sum(len(r.name) + len(r.operators) + 120 for r in view.where.rows)
        )
    return text + 3 * len(view.case) + sum(len(a) + len(b) for a, b in view.explained_by) + len(view.verdict) + 400


def _problem(
    cell: CellRecord, notes: Annotations, localized: Localized | None, unlocalized: str | None = None
) -> ProblemView:
    result = cell.result
    stats: list[Row] = []
    if result and result.error_stats:
        s = result.error_stats
        bad = sum(o.nonfinite for o in result.outputs)
        # An element is called "worst" only when elements are outside the tolerance.
        where = (
            "worst element (largest |diff| / allowance)"
            if s.mismatched
            else "largest |diff| / allowance (within tolerance)"
        )
        diff, allowed = stat_text(s.diff_at_worst, 0), stat_text(s.allowed_at_worst, 0)
        if s.diff_at_worst is not None and s.allowed_at_worst is not None:
            diff, allowed = beside(s.diff_at_worst, s.allowed_at_worst)
        stats = [
            Row("mismatched", f"{s.mismatched} of {s.total}"),
            Row("max abs / max rel", f"{stat_text(s.max_abs, bad)} / {stat_text(s.max_rel, bad)}"),
            Row(where, f"{s.worst_output}{list(s.worst_index)}: |diff| {diff}, allowed {allowed}"),
        ]
        stats += region_rows(s)
    if result and result.task_metric:
        tm = result.task_metric
        value, crit = fmt(tm.value, digits=6), ""
        if tm.criterion:
            threshold = f"{tm.criterion.threshold:g}"
            if tm.value is not None:
                value, threshold = beside(tm.value, tm.criterion.threshold, 6)
            crit = f" ({tm.criterion.op} {threshold})"
        verdict = "met" if tm.passed else "not met" if tm.passed is False else "no criterion"
        stats.append(Row("task metric", f"{tm.name} = {value}{crit}: {verdict}"))
    generated = cell.generation  # problem cells are few: their events are looked through
    if generated is not None:
        stats.append(
            Row(
                "greedy tokens",
                f"{generated.steps_agreeing} of {generated.decode_steps + 1} steps agree with the reference; first divergent step: "
                + (str(generated.first_divergent_step) if generated.first_divergent_step is not None else "none"),
            )
        )
    if unlocalized is not None:
        stats.append(Row("where it diverges", unlocalized))
    # Only a cell with training events (``trained``) has steps or a training result to look up.
    train_steps, train_result = (cell.train_steps, cell.train_result) if cell.trained else ([], None)
    if train_steps:
        bad_steps = [s.step for s in train_steps if not s.loss_within or any(g.mismatched for g in s.grads)]
        stats.append(
            Row("training steps with loss or gradients outside tolerance", ", ".join(map(str, bad_steps)) or "none")
        )
    if train_result:
        bad_params = [p for p in train_result.params if p.mismatched]
        stats.append(
            Row(
                "updated parameters outside tolerance",
                "; ".join(f"{p.name}: {p.mismatched} of {p.total}" for p in bad_params) or "none",
            )
        )
    if result and result.outputs:
        stats.append(
            Row("outputs", "; ".join(f"{o.name} {o.dtype}{o.shape} non-finite {o.nonfinite}" for o in result.outputs))
        )
    if cell.untested_reason == LAYOUT_NOT_ACHIEVED and result is not None:
        fed = "; ".join(
            f"{i.name} {i.dtype}{i.shape} strides {i.strides} {'contiguous' if i.contiguous else 'non-contiguous'}"
            for i in result.inputs_fed or []
        )
        stats.insert(
            0,
            Row(
                "layout",
                f"planned {cell.planned.layout}; the model received {cell.layout_fed or 'another layout'}: {fed or 'not recorded'}",
            ),
        )
        stats.insert(
            1, Row("correctness as measured", f"{cell.measured_status} (for the layout fed, not the planned one)")
        )
    if cell.untested_reason == LAYOUT_NOT_MEASURED and result is not None:
        host = "; ".join(
            f"{i.name} {i.dtype}{i.shape} {'contiguous' if i.contiguous else 'non-contiguous'}" for i in result.inputs
        )
        stats.insert(
            0,
            Row(
                "layout",
                f"planned {cell.planned.layout}; not measured at the model (a log from before layouts were measured); host inputs as recorded: {host or 'not recorded'}",
            ),
        )
        stats.insert(
            1,
            Row(
                "correctness as measured",
                f"{cell.measured_status} (for whatever layout reached the model, not shown to be the planned one)",
            ),
        )
    fail = (
        f"{result.failure.phase}: {result.failure.type}: {result.failure.message}" if result and result.failure else ""
    )
    note = notes.by_case.get(cell.case)
    verdict = verdict_text(note.verdict, note.reason, note.change) if note is not None else ""
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
        explained_by=[(notes.entries[i].label, entry_anchor(i)) for i in note.entries] if note else [],
        verdict=verdict or "not explained",
        where=localization_view(cell, localized) if localized is not None else None,
    )


MODULE_ROWS = 60  # per cell on the page; every module is in the log's localization event


def localization_view(cell: CellRecord, found: Localized) -> LocalizationView:
    """The judge's localisation of one cell, as a table of its modules and notes."""
    line = next((r.line for r in cell.logged if r.kind == "localization"), None)
    rows = [
        ModuleRow(
            name=v.name,
            type=v.type,
            accumulated=v.accumulated_text,
            local=v.local_text
            + (
                ""
                if v.local is None or not found.mode == "compiled"
                else " (compiled alone)"
                if v.local_compiled
                else " (eager)"
            ),
            role={
                "diverges": "first diverging module",
                "own error": "own error",
                "inherited": "inherited error",
                "arises before": "error arises before it, in "
                + ("a later call of an earlier module or in " if found.repeated else "")
                + "code no localised module covers",
                "within": "within tolerance",
                "not measured": "not measured locally",
            }[v.role],
            operators=", ".join(v.operators) if v.operators else ("not recorded" if v.operators is None else "none"),
            bad_local=v.local is not None and v.role in ("diverges", "own error"),
            bad_accumulated=v.accumulated is not None and v.accumulated > 1,
        )
        for v in found.modules[:MODULE_ROWS]
    ]
    notes = [
        f"Judged with the cell's tolerance (atol {fmt(found.atol)}, rtol {fmt(found.rtol)}); figures are worst |diff| / allowance, above 1 is beyond it. Accumulated: each side end to end; local: the {'compiled ' if found.mode == 'compiled' else ''}candidate module fed the reference module's inputs."
    ]
    why = {
        "plan": "the plan asks for every cell ([localize] always)",
        "mismatch": "the cell mismatched",
        "nonfinite": "the cell produced non-finite values",
    }[found.reason]
    notes.append(f"Localised because {why}; bounds: {found.bounds}.")
    if len(found.modules) > MODULE_ROWS:
        notes.append(
            f"{len(found.modules) - MODULE_ROWS} more module(s) are in the localization event (log line {line})."
        )
    notes += found.skipped_words
    for extra in (
        found.accumulated_note,
        f"Operators per module: {found.operators_from}." if found.operators_from else None,
    ):
        if extra:
            notes.append(clip(extra))
    notes += [clip(f"{v.name}: {v.note}") for v in found.modules[:MODULE_ROWS] if v.note]
    return LocalizationView(sentence=clip(found.sentence), line=line, rows=rows, notes=notes)


def region_rows(stats: Any) -> list[Row]:
    """Per output: the judged figures, and beside them the excluded region's, when a region was declared."""
    rows = []
    for o in stats.per_output or []:
        judged = f"{o.mismatched} of {o.total} judged element(s) outside the tolerance; max abs {stat_text(o.max_abs, 0)}, max rel {stat_text(o.max_rel, 0)}"
        rows.append(Row(f"{o.name}" + (f" (judged region: {o.region})" if o.region else ""), judged))
        if o.outside is not None:
            x = o.outside
            beyond = "not measured" if x.beyond_tolerance is None else str(x.beyond_tolerance)
            rows.append(
                Row(
                    f"{o.name}: outside the judged region",
                    f"{x.count} element(s), not judged; beyond the tolerance {beyond}; max abs {stat_text(x.max_abs, x.nonfinite)}, max rel {stat_text(x.max_rel, x.nonfinite)}; non-finite {x.nonfinite}",
                )
            )
    return rows


def explanation_views(run: RunModel, notes: Annotations, groups: tuple[tuple[int, ...], ...]) -> list[ExplanationView]:
    """One card per group of entries that say the same but for their figures (the judge's
    ``entry_groups``): the first entry's text, every entry named (each keeps its anchor), the
    cells of all of them."""
    if not notes.entries:
        return []
    # The Markdown parser is imported only for a report with explanations to render.
    from reportgen.render.markdown import render_markdown

    cells = {c.case: c for c in run.cells}
    file = os.path.basename(notes.path)
    views = []
    for group in groups or tuple((e.index,) for e in notes.entries):
        entry = notes.entries[group[0]]
        covered = [
            cells[case] for case in dict.fromkeys(case for index in group for case in notes.covered.get(index, []))
        ]
        views.append(
            ExplanationView(
                anchor=entry_anchor(entry.index),
                label=entry.label,
                where=file + (f" line {entry.line}" if entry.line is not None else ""),
                selector=entry.selector_text,
                text=entry.explanation,
                html=render_markdown(entry.explanation),
                verdict=verdict_text(entry.verdict, entry.reason, entry.change),
                cells=[(c.case, anchor(c.case), c.status, SYMBOLS[c.status]) for c in covered[:DETAIL_CAP]],
                total=len(covered),
                failed=sum(1 for c in covered if c.status not in ("pass", "untested")),
                alike=[
                    (
                        entry_anchor(i),
                        notes.entries[i].label,
                        file + (f" line {notes.entries[i].line}" if notes.entries[i].line is not None else ""),
                    )
                    for i in group[1:]
                ],
            )
        )
    return views


def region_views(cells: Sequence[CellRecord]) -> list[RegionRow]:
    """Every cell's outputs judged on a declared region: judged figures and the left-out elements' figures."""
    rows = []
    for c in cells:
        for o in c.per_output or []:
            x = o.get("outside")
            if x is None:
                continue
            beyond = "not measured" if x.get("beyond_tolerance") is None else str(x["beyond_tolerance"])
            rows.append(
                RegionRow(
                    case=c.case,
                    anchor=anchor(c.case),
                    status=c.status,
                    symbol=SYMBOLS[c.status],
                    output=o["name"],
                    region=o.get("region") or "",
                    judged=f"{o['mismatched']} of {o['total']} outside the tolerance; max abs {fmt(o['max_abs'])}",
                    outside=f"{x['count']} element(s); {beyond} beyond the tolerance; max abs {fmt(x['max_abs'])}; max rel {fmt(x['max_rel'])}; non-finite {x['nonfinite']}"
                    if x["count"]
                    else "none: every element is in the judged region",
                )
            )
            if len(rows) >= DETAIL_CAP:
                return rows
    return rows


def localized_passing(
    cells: tuple[CellRecord, ...], localized: dict[str, Localized]
) -> list[tuple[str, str, LocalizationView]]:
    """Localisations of cells section 5 does not list as problems (the judge's first few, in plan order)."""
    return [
        (cell.case, anchor(cell.case), localization_view(cell, localized[cell.case]))
        for cell in cells
        if cell.case in localized
    ]
