"""Section 4, Numerical criteria: the tolerances and rules the plan declared before the first result."""

from __future__ import annotations

from typing import Any

from reportgen.model.runmodel import RunModel
from reportgen.render.sections.common import Row


def _asked_scope_text(scope: Any) -> str:
    """The plan's request, labelled as such (the report's scope comes from the timing events)."""
    inside = [
        name
        for name, on in (
            ("preprocessing", scope.preprocessing),
            ("host-to-device copies", scope.host_to_device),
            ("output retrieval", scope.output_retrieval),
        )
        if on
    ]
    text = ", ".join(inside) if inside else "the model call only"
    return text + (f" ({scope.note})" if scope.note else "")


def criteria_rows(run: RunModel) -> tuple[list[Row], str]:
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
        rows.append(
            Row(
                "padding",
                f"buckets {pad.buckets}; above the largest: {pad.above_largest or 'not stated'}; masks padded: {pad.mask_padded}",
                "plan",
            )
        )
    options = run.plan.compile_options
    if options is None:
        rows.append(Row("compile options", "not measured: this log does not record them", "plan.compile_options"))
    else:
        extra = (
            "; backend options " + ", ".join(f"{k}={v}" for k, v in sorted(options.backend_options.items()))
            if options.backend_options
            else ""
        )
        rows.append(
            Row(
                "compile options",
                f"dynamic={options.dynamic}, mode={options.mode}, fullgraph={options.fullgraph}{extra}",
                "plan.compile_options (each compile event records what its call was given)",
            )
        )
    if run.plan.declared_inputs:
        declared = []
        for name, spec in sorted(run.plan.declared_inputs.items()):
            layout = f"{spec.layout} ({spec.how})" if spec.how else spec.layout
            values = f", values {spec.value_range[0]}..{spec.value_range[1]}" if spec.value_range else ""
            declared.append(f"{name}: {spec.dtype}, {layout}{values}")
        rows.append(
            Row(
                "inputs as the plan declares them",
                "; ".join(declared),
                "plan.declared_inputs (declared, not measured; what was fed is in each cell's inputs)",
            )
        )
    rules = run.plan.compare
    if run.plan.generation is not None:
        gen = run.plan.generation
        rows.append(
            Row(
                "what a generation cell judges",
                "the prefill's logits at the real (unpadded) positions, elementwise by the dtype's tolerance (padded "
                "positions are not judged); the greedy tokens by the task criterion (leading decode steps that agree); "
                f"each decode step's logits by their top-{gen.top_k} overlap with the reference's (at least "
                f"{gen.min_top_k_overlap:g}), up to the first step where the tokens differ",
                "the collector's generation comparison (collector/generation.py)",
            )
        )
    elif rules is None:
        rows.append(
            Row(
                "judged regions and parameter rules",
                "none declared: every element of every output and parameter is judged elementwise",
                "plan.compare",
            )
        )
    else:
        for o in rules.outputs:
            rows.append(
                Row(
                    f"judged region of {o.output}",
                    f"only elements where {o.description} are judged; the others are compared and shown apart, outside the judged region",
                    "plan.compare.outputs",
                )
            )
        for g in rules.params:
            rows.append(Row(f"parameter group {g.group} ({', '.join(g.match)})", g.description, "plan.compare.params"))
    first = f"line {run.first_result_line}" if run.first_result_line else "no result yet"
    when = f"declared at {run.plan.time} (log line {run.plan_line}), before the first result ({first})"
    return rows, when
