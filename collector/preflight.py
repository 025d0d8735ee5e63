"""Check a plan's comparison rules against the model before anything runs.

A judged region names an output and an input mask (or index slices); a parameter group names
parameters by pattern. Whether they fit is only known with the model at hand, so before any
run directory exists the collector builds the model on the CPU, makes the inputs of every
planned shape, runs one CPU forward per shape and checks every rule. A rule that does not fit is
a plan error (exit 2), never a failed cell found hours later.
"""

from __future__ import annotations

import torch

from collector import interrupt, training
from collector.compare import judged_mask
from collector.plan import PlanError, RegionError, WorkloadPlan
from collector.workload import build_model, cast_inputs, check_outputs, load_workload


def check_rules(plan: WorkloadPlan) -> None:
    """Raises PlanError when a declared output region or parameter group does not fit the model."""
    outputs, params = plan.compare["outputs"], plan.compare["params"]
    if not outputs and not params:
        return
    if outputs and plan.training:
        raise PlanError(
            "compare.outputs: a training plan compares the loss, gradients and parameters; declare rules under compare.params"
        )
    workload = load_workload(plan)
    model = build_model(workload)
    if params:
        try:
            training.resolve_param_rules(params, workload, model)
        except ValueError as exc:
            raise PlanError(str(exc)) from None
    shapes = sorted({(c.batch, c.length) for c in plan.cells})
    for batch, length in shapes if outputs else []:
        try:
            inputs = cast_inputs(workload.make_inputs(batch, length, "contiguous"), torch.float32)
            with torch.no_grad():
                produced = check_outputs(workload, workload.run_model(model.to("cpu", torch.float32), inputs))
        except interrupt.ENDS_RUN:
            raise
        except BaseException:  # the shape's own failure: the run records it on its cells, as without rules
            continue
        for rule in outputs:
            if rule["output"] not in produced:
                raise PlanError(
                    f"compare.outputs.{rule['output']}: the model has no such output (outputs: {', '.join(sorted(produced))})"
                )
            try:
                judged_mask(rule, inputs, produced[rule["output"]])
            except RegionError as exc:
                raise PlanError(f"{exc} (at shape [{batch}, {length}])") from None
