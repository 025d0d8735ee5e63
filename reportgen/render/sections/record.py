"""Section 2, Compatibility record: what ran where, what was timed, and the recorded inputs, references, warnings and operators."""

from __future__ import annotations

import re

import msgspec
from dataclasses import dataclass, field
from itertools import compress, islice
from typing import Any

from reportgen.model.provenance import weights_origin_words
from reportgen.model.runmodel import CellRecord, LAYOUT_NOT_MEASURED, RunModel, shape_label, STATUS_ORDER
from reportgen.render.labels import human
from reportgen.render.sections.common import (
    list_text,
    _RESULT_LINE,
    anchor,
    clip,
    DETAIL_CAP,
    fmt,
    Row,
    WARNINGS_BUDGET,
)
from reportgen.render.sections.tally import distinct_rows, fallback_summary, _IS_REPEAT, op_cells, cell_tally


@dataclass
class InputView:
    """One cell's inputs: dtype, shape and layout facts, and which event they come from; the
    other cells fed exactly the same are listed beside it (one row, not one each)."""

    case: str
    anchor: str
    text: str
    source: str
    same: list[tuple[str, str]] = field(default_factory=list)  # (case, anchor) of the other cells fed the same

    @property
    def count(self) -> int:
        return 1 + len(self.same)


@dataclass
class WarningView:
    """One warning message and the cells (with their status) that raised it."""

    message: str
    cells: list[tuple[str, str, str]]  # (case, status, anchor); empty: raised outside any cell
    total: int
    source: str


def record_rows(run: RunModel, timing_scope: str) -> list[Row]:
    plan, env = run.plan, run.environment
    counts = run.counts()
    fell, fallback_states = fallback_summary(run)
    tally = cell_tally(run)
    dtypes, layouts, modes = ({column[i] for column in tally.columns} for i in range(3))
    rows = distinct_rows(run)
    # The shapes are the rows' (batch, length): the rows themselves when none is a cache check
    # (they sort alike, and no shape is listed twice).
    shapes = rows if not any(map(_IS_REPEAT, rows)) else {key[:2] for key in rows}
    return [
        Row(
            "Workload",
            f"{run.start.workload}" + (f": {plan.description}" if plan and plan.description else ""),
            "run_start, plan",
        ),
        Row("Model revision", (plan.model_revision if plan else "no plan") + _weights_text(plan), "plan"),
        Row("Weights origin", weights_origin_words(run), "plan.weights_origin"),
        Row(
            "Target and backend family",
            f"intended {_intended_text(run)}; run's target {plan.target if plan else run.start.target} ({_choice_text(run)}); ran on {env.backend_family if env else 'unknown'} ({env.backend_family_reason if env else 'no environment event'})",
            "plan.intended_target, run_start.target_choice, environment",
        ),
        Row("Instance / device", _device_text(run), "environment.device"),
        Row("Execution modes", ", ".join(sorted(modes)) or "none", "plan.matrix"),
        Row(
            "Input shapes (batch, length)",
            list_text(shapes, run, lambda shape: shape_label(shape[0], shape[1]), ordered=True),
            "plan.matrix",
        ),
        Row("dtypes and layouts", ", ".join(sorted(dtypes)) + "; " + ", ".join(sorted(layouts)), "plan.matrix"),
        Row(
            "Attention path (the workload's claim)",
            plan.attention_path or "not stated" if plan else "not stated",
            "plan.attention_path",
        ),
        Row("Attention kernel that ran (measured)", attention_text(run), "operators.executed"),
        Row(
            "CPU fallback",
            ", ".join(fell)
            if fell
            else (
                "none recorded"
                if fallback_states == ["measured"]
                else "; ".join(human(s) for s in fallback_states) or "no operator events"
            ),
            "operators",
        ),
        Row(
            "Correctness", ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s]) or "no cells", "case_result"
        ),
        Row("Reference", plan.reference if plan else "not stated", "plan, reference"),
        Row(
            "Requirements",
            ", ".join(human(r) for r in plan.requirements) if plan and plan.requirements else "none declared",
            "plan",
        ),
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
    plan = run.plan
    selection = plan.selection if plan else None
    capped = plan.matrix_cells if plan and plan.matrix_cells and plan.matrix_cells > len(plan.matrix) else None
    if plan and capped:  # the matrix's other cells are not in this log: they are no cells of this report
        head = f"the plan's matrix has {capped:,} cells; this run planned the first {len(plan.matrix):,} (a cap), the others are not in this log"
        return head if selection is None else f"{head}; {_chosen_text(run, selection)}"
    if selection is None:
        return f"every planned cell ({len(run.cells)})"
    return _chosen_text(run, selection)


def _chosen_text(run: RunModel, selection: Any) -> str:
    asked = "; ".join(
        filter(
            None,
            [
                f"--only {' '.join(selection.only)}" if selection.only else "",
                f"--modes {','.join(selection.modes)}" if selection.modes else "",
            ],
        )
    )
    return f"{len(selection.cases)} of {len(run.cells)} planned cells ({asked}); the rest were not run (deselected) and are untested"


def _layout_fed_text(run: RunModel) -> str:
    tally = cell_tally(run)
    if not tally.layout_checked:
        unmeasured = sum(c.untested_reason == LAYOUT_NOT_MEASURED for c in run.cells)
        counted = (
            f"; {unmeasured} planned non-contiguous cell(s) are untested for that layout (layout not measured)"
            if unmeasured
            else ""
        )
        return "not measured (the log does not record what the model received)" + counted
    text = f"checked at the model's call boundary for {tally.layout_checked} of {tally.ran} cells that ran; "
    missed = tally.layout_missed
    text += (
        f"{missed} did not receive their planned layout (layout not achieved)"
        if missed
        else "every one received its planned layout"
    )
    if tally.timing_layout_missed:
        text += f"; {tally.timing_layout_missed} cell(s) had timed calls fed another layout"
    return text


def _settings_rows(run: RunModel) -> list[Row]:
    env = run.environment
    if env is None or env.backend_settings is None:
        return []
    value = "; ".join(
        f"{s.name}={s.value if s.value is not None else 'unset'} (set by {s.set_by}{': ' + s.note if s.note else ''})"
        for s in env.backend_settings
    )
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
    for (call, region, notes, synchronized), n in cell_tally(run).timed.items():
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
        return (
            "not measured (this log does not record what its timing code put in the timed region)"
            if unrecorded
            else "no timing recorded"
        )
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


def _device_text(run: RunModel) -> str:
    if run.environment is None:
        return "unknown"
    dev = run.environment.device
    parts = []
    for key in ("instance_type", "device_name", "device_count", "hostname"):
        if key in dev:
            parts.append(f"{key}: {dev[key].value if dev[key].value is not None else 'unknown'}")
    return "; ".join(parts)


ATTENTION = re.compile(r"attention", re.IGNORECASE)
OPS_LISTED = 60


def attention_text(run: RunModel) -> str:
    """Which attention ops really executed, from the operators events (not the plan's claim)."""
    per_op, measured, unmeasured = op_cells(run)
    if not measured:
        return "not measured: no cell recorded its executed ops" + (
            f" ({len(unmeasured)} cell(s) could not list them)" if unmeasured else ""
        )
    kernels = sorted((op for op in per_op if ATTENTION.search(op)), key=lambda op: (-per_op[op], op))
    where = f"in the {len(measured)} cell(s) whose ops were measured" + (
        f"; not measured in {len(unmeasured)} cell(s)" if unmeasured else ""
    )
    if not kernels:
        return f"no attention op executed {where}"
    return "; ".join(f"{op} ({per_op[op]} cell(s))" for op in kernels) + f", {where}"


def operator_rows(run: RunModel) -> list[Row]:
    """A compact summary of the executed ops: how many cells measured them, and which ran."""
    per_op, measured, unmeasured = op_cells(run)
    rows = [
        Row(
            "cells whose executed ops were measured",
            f"{len(measured)} of {len(run.cells)}"
            + (f" ({', '.join(sorted(cell_tally(run).measured_modes))})" if measured else ""),
            "operators.executed",
        )
    ]
    if unmeasured:
        reasons: dict[str, int] = {}
        for c in unmeasured:
            ops = c.operators.executed if c.operators is not None and len(unmeasured) <= DETAIL_CAP else None
            why = (
                f"{human(c.executed_status or '')}: {ops.reason}" if ops is not None else human(c.executed_status or "")
            )
            reasons[why] = reasons.get(why, 0) + 1
        rows.append(
            Row(
                "cells whose executed ops were not measured",
                "; ".join(f"{n} cell(s) {why}" for why, n in reasons.items()),
                "operators.executed",
            )
        )
    if per_op:
        ordered = sorted(per_op, key=lambda op: (-per_op[op], op))
        shown = ", ".join(f"{op} ({per_op[op]})" for op in ordered[:OPS_LISTED])
        more = f" and {len(ordered) - OPS_LISTED} more" if len(ordered) > OPS_LISTED else ""
        rows.append(
            Row(f"ops executed ({len(ordered)} distinct; cells that ran each)", shown + more, "operators.executed")
        )
    rows.append(Row("attention kernel that ran", attention_text(run), "operators.executed"))
    return rows


def input_text(info: Any, said_once: frozenset[str] = frozenset()) -> str:
    """One input as the log describes it as fed: dtype, shape and every layout fact recorded
    (a fact in ``said_once``, not measured for any input, is said once above the table)."""
    data = msgspec.structs.asdict(info)
    parts = [f"{data.pop('name')} {data.pop('dtype')}{data.pop('shape')}"]
    data.pop("nonfinite", None)
    for key, value in data.items():
        if key in said_once:
            continue
        if isinstance(value, bool):
            value = "yes" if value else "no"
        parts.append(f"{key.replace('_', ' ')} {value if value is not None else 'not measured'}")
    return ", ".join(parts)


def input_rows(run: RunModel) -> tuple[list[InputView], int, str]:
    """Per cell: what the model received (measured at its call), else what the host prepared;
    cells fed the same in one row. Also the facts no input's record measures, said once."""
    shown = list(
        islice(compress(run.cells, map(_RESULT_LINE, run.cells)), DETAIL_CAP)
    )  # speed: picked in C, up to the last shown (line numbers start at 1)
    inputs = [(c, c.result.inputs_fed or c.result.inputs if c.result is not None else []) for c in shown]
    dumped = [msgspec.structs.asdict(i) for _, infos in inputs for i in infos]
    keys = [k for k in dict.fromkeys(k for d in dumped for k in d) if k not in ("name", "dtype", "shape", "nonfinite")]
    said_once = frozenset(k for k in keys if dumped and all(d.get(k, None) is None for d in dumped))
    rows: dict[tuple[str, str], InputView] = {}
    for c in shown:
        result = c.result
        fed = result.inputs_fed if result is not None else None
        prepared = result.inputs if result is not None else []
        if fed:
            text = "; ".join(input_text(i, said_once) for i in fed)
            if result is not None and result.layout_fed is not None:
                text += f"; layout fed: {result.layout_fed}" + (
                    ""
                    if result.layout_achieved is None
                    else f" (planned {c.planned.layout}: {'achieved' if result.layout_achieved else 'NOT achieved'})"
                )
            source = "case_result.inputs_fed (at the model call)"
        elif prepared:
            text = "; ".join(input_text(i, said_once) for i in prepared) + (
                "" if said_once else "; what the model received: not measured"
            )
            source = "case_result.inputs (as prepared on the host)"
        else:
            text, source = "not measured (the case_result lists no inputs)", "case_result"
        row = rows.get((text, source))
        if row is None:
            rows[(text, source)] = InputView(c.case, anchor(c.case), text, source)
        else:
            row.same.append((c.case, anchor(c.case)))
    note = ""
    if said_once:
        note = (
            f"Not measured for any input listed here: {', '.join(k.replace('_', ' ') for k in keys if k in said_once)}"
        )
        if any(not (c.result is not None and c.result.inputs_fed) for c in shown):
            note += "; for the cells listed from case_result.inputs, what the model received at its call is not measured either"
        note += "."
    return list(rows.values()), cell_tally(run).with_result, note


def warning_views(run: RunModel) -> list[WarningView]:
    """Every warning, passing cells included, grouped by message; run-level ones too."""
    by_message: dict[str, list[CellRecord]] = {}
    for c in cell_tally(run).warned:  # only the cells with warnings
        for message in dict.fromkeys(c.warnings):
            by_message.setdefault(message, []).append(c)
    views: list[WarningView] = []
    spent = 0
    for message, cells in by_message.items():
        shown = clip(message)
        spent += len(shown) + 100
        listed: list[tuple[str, str, str]] = []
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
        rows.append(
            {
                "input": r.shape,
                "computed": f"{r.device} {r.dtype}",
                "runs": str(r.runs),
                "noise": noise,
                "deterministic": "yes (bitwise equal)"
                if r.deterministic
                else "not measured"
                if r.deterministic is None
                else "no",
                "golden": golden,
                "nonfinite": own,
            }
        )
        if r.nonfinite:
            findings.append(
                f"The reference output for input {r.shape} is itself non-finite: {r.nonfinite} NaN/Inf element(s). Every cell compared against it is not evidence of correctness."
            )
        if r.golden_nonfinite:
            findings.append(
                f"The float64 golden output for input {r.shape} is itself non-finite: {r.golden_nonfinite} NaN/Inf element(s)."
            )
    return rows, findings
