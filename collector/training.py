"""Training cells: fixed steps from identical weights, inputs and seeds, compared step by step.

A training workload adds to the module interface:

* ``loss_fn(outputs, inputs) -> Tensor``: the scalar loss;
* ``make_optimizer(params) -> torch.optim.Optimizer`` and ``OPTIMIZER`` (its description);
* ``make_deterministic(model)`` (optional): the deterministic variant used when the backend's
  random stream cannot match the reference's (e.g. dropout off). The plan's
  ``[training] randomness`` says which variant was used.

For every step the loss and each parameter's gradient are recorded against the reference run;
after the steps the updated parameters are compared the same way.
"""

from __future__ import annotations

import copy
import time
from fnmatch import fnmatchcase
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

import torch

from collector.compare import allowance_ratio, max_relative
from collector.eventlog import finite_or_none


@dataclass
class TrainTrace:
    losses: list[float] = field(default_factory=list)
    grads: list[dict[str, torch.Tensor]] = field(default_factory=list)
    params: dict[str, torch.Tensor] = field(default_factory=dict)
    first_forward_s: float | None = None
    first_backward_s: float | None = None
    first_step_s: float | None = None


def prepare(workload: ModuleType, model: torch.nn.Module) -> torch.nn.Module:
    """A train-mode copy, made deterministic where the workload says how."""
    model = copy.deepcopy(model).train()
    if hasattr(workload, "make_deterministic"):
        workload.make_deterministic(model)
    return model


def train(
    workload: ModuleType,
    model: torch.nn.Module,
    call_model: torch.nn.Module,
    inputs: dict[str, torch.Tensor],
    steps: int,
    seed: int,
    synchronize: Callable[[], None],
) -> tuple[TrainTrace, Callable[[], Any]]:
    """Run ``steps`` steps; ``call_model`` is ``model`` or its compiled wrapper.

    Returns the trace (copied to the CPU) and a closure that runs one more full step, for timing.
    """
    torch.manual_seed(seed)
    optimizer = workload.make_optimizer(model.parameters())
    trace = TrainTrace()
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]

    def step(record: bool, first: bool = False) -> None:
        optimizer.zero_grad(set_to_none=True)
        start = time.perf_counter()
        loss = workload.loss_fn(workload.run_model(call_model, inputs), inputs)
        synchronize()
        after_forward = time.perf_counter()
        loss.backward()
        synchronize()
        after_backward = time.perf_counter()
        if record:
            trace.losses.append(float(loss.detach().to("cpu", torch.float64).item()))
            trace.grads.append({n: p.grad.detach().to("cpu").clone() for n, p in named if p.grad is not None})
        optimizer.step()
        synchronize()
        if first:
            trace.first_forward_s = after_forward - start
            trace.first_backward_s = after_backward - after_forward
            trace.first_step_s = time.perf_counter() - start

    for index in range(steps):
        step(record=True, first=index == 0)
    trace.params = {n: p.detach().to("cpu").clone() for n, p in named}
    return trace, lambda: step(record=False)


def compare_tensors(
    cell: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], atol: float, rtol: float
) -> list[dict[str, Any]]:
    """Per-parameter statistics, worst first (by |diff| relative to its allowance)."""
    rows: list[dict[str, Any]] = []
    for name, expected in ref.items():
        got = cell.get(name)
        if got is None:
            rows.append(
                {
                    "name": name,
                    "max_abs": None,
                    "max_rel": None,
                    "mismatched": expected.numel(),
                    "total": expected.numel(),
                    "norm_ratio": None,
                    "worst_ratio": None,
                }
            )
            continue
        a, e = got.to(torch.float64), expected.to(torch.float64)
        diff = (a - e).abs()
        allowed = atol + rtol * e.abs()
        ratio = allowance_ratio(diff, allowed)
        ref_norm = float(e.norm().item())
        rows.append(
            {
                "name": name,
                "max_abs": finite_or_none(float(diff.max().item())) if diff.numel() else 0.0,
                "max_rel": finite_or_none(max_relative(diff, e.abs())) if diff.numel() else 0.0,
                "mismatched": int((~(diff <= allowed)).sum().item()),
                "total": int(diff.numel()),
                "norm_ratio": finite_or_none(float(a.norm().item()) / ref_norm) if ref_norm > 0 else None,
                "worst_ratio": finite_or_none(float(ratio.max().item())) if diff.numel() else 0.0,
            }
        )
    return sorted(rows, key=lambda r: -(r["worst_ratio"] if r["worst_ratio"] is not None else float("inf")))


def loss_within(loss: float, ref: float, atol: float, rtol: float) -> bool:
    return abs(loss - ref) <= atol + rtol * abs(ref)


def first_step_check(loss: float, ref: float, tol: dict[str, Any]) -> dict[str, Any]:
    """A cold training step's own check, as its timing records it (``output_check``): its loss
    against the reference's under the plan's loss tolerance."""
    loss_tol = tol.get("loss", {"atol": 0.0, "rtol": 0.0})
    within = loss_within(loss, ref, loss_tol["atol"], loss_tol["rtol"])
    return {"mismatched": 0 if within else 1, "total": 1, "max_abs": finite_or_none(abs(loss - ref)), "passed": within}


# --- declared rules for parameter groups (plan [compare.params.<group>]) --------------------------

RULES = ("elementwise", "lr-bound", "zero-grad")


def rule_for(name: str, rules: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The group rule whose name patterns match a parameter (the plan check keeps them disjoint)."""
    return next((r for r in rules if any(fnmatchcase(name, pattern) for pattern in r["match"])), None)


def describe_rule(rule: dict[str, Any] | None) -> str:
    if rule is None or rule["rule"] == "elementwise":
        return "elementwise" + (f" (group {rule['group']})" if rule else "")
    if rule["rule"] == "zero-grad":
        return f"gradient exactly zero in both (group {rule['group']})"
    zero = "exactly 0" if not rule.get("zero_below") else f"|grad| <= {rule['zero_below']:g}"
    return (
        f"lr-bound (group {rule['group']}): where the reference gradient is zero ({zero} at every step), "
        f"|updated - reference| <= {rule['k']:g} * lr = {rule['k'] * rule['lr']:g}; elsewhere elementwise"
    )


def resolve_param_rules(
    rules: list[dict[str, Any]], workload: ModuleType, model: torch.nn.Module
) -> list[dict[str, Any]]:
    """Check each group against the model's parameters and fill in the learning rate of lr-bound groups.

    Raises ValueError (a plan error) for a group that matches no parameter, a parameter two
    groups claim, or an lr-bound group whose parameters have no single learning rate.
    """
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    claimed: dict[str, str] = {}
    for rule in rules:
        matched = [n for n in names if any(fnmatchcase(n, pattern) for pattern in rule["match"])]
        if not matched:
            raise ValueError(
                f"compare.params.{rule['group']}.match: {rule['match']} matches no trainable parameter of the model (e.g. {', '.join(names[:4])})"
            )
        for n in matched:
            if n in claimed:
                raise ValueError(
                    f"compare.params: parameter {n!r} is matched by groups {claimed[n]!r} and {rule['group']!r}; a parameter takes one rule"
                )
            claimed[n] = rule["group"]
    resolved = []
    lrs: dict[int, float] | None = None
    for rule in rules:
        rule = dict(rule)
        if rule["rule"] == "lr-bound":
            if lrs is None:
                optimizer = workload.make_optimizer(model.parameters())
                lrs = {id(p): float(group["lr"]) for group in optimizer.param_groups for p in group["params"]}
            params = dict(model.named_parameters())
            found = {lrs.get(id(params[n])) for n in names if claimed.get(n) == rule["group"]}
            if len(found) != 1 or None in found:
                raise ValueError(
                    f"compare.params.{rule['group']}: its parameters do not share one learning rate ({sorted(map(str, found))})"
                )
            rule["lr"] = found.pop()
        rule["description"] = describe_rule(rule)
        resolved.append(rule)
    return resolved


def compare_grads(
    cell: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], atol: float, rtol: float, rules: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One step's gradients: elementwise, except zero-grad groups, which must be exactly zero in both."""
    rows = compare_tensors(cell, ref, atol, rtol)
    if not rules:
        return rows
    for row in rows:
        rule = rule_for(row["name"], rules)
        row["rule"] = describe_rule(rule)
        if rule is not None and rule["rule"] == "zero-grad":
            got, want = cell.get(row["name"]), ref[row["name"]]
            nonzero = want.to(torch.float64) != 0
            if got is not None:
                nonzero |= got.to(torch.float64) != 0
            row["mismatched"] = int(nonzero.sum().item())
            row["worst_ratio"] = (
                None if row["mismatched"] else 0.0
            )  # null: infinitely far (a nonzero where zero was required)
    return rows


def compare_params(
    cell: dict[str, torch.Tensor],
    ref: dict[str, torch.Tensor],
    atol: float,
    rtol: float,
    rules: list[dict[str, Any]],
    ref_grads: list[dict[str, torch.Tensor]],
) -> list[dict[str, Any]]:
    """Updated parameters: elementwise, except where an lr-bound group's reference gradient is zero."""
    rows = compare_tensors(cell, ref, atol, rtol)
    if not rules:
        return rows
    for row in rows:
        name = row["name"]
        rule = rule_for(name, rules)
        row["rule"] = describe_rule(rule)
        got = cell.get(name)
        if rule is None or rule["rule"] != "lr-bound" or got is None:
            continue
        expected = ref[name].to(torch.float64)
        zero = torch.ones_like(expected, dtype=torch.bool)
        for step in ref_grads:
            grad = step.get(name)
            if grad is not None:
                zero &= grad.to(torch.float64).abs() <= rule.get("zero_below", 0.0)
        diff = (got.to(torch.float64) - expected).abs()
        allowed = atol + rtol * expected.abs()
        bound = rule["k"] * rule["lr"]
        elementwise_bad = ~(diff <= allowed) & ~zero
        bound_bad = ~(diff <= bound) & zero
        ratio = torch.where(
            zero,
            diff / bound if bound > 0 else torch.where(diff > 0, float("inf"), 0.0),
            allowance_ratio(diff, allowed),
        )
        row["mismatched"] = int((elementwise_bad | bound_bad).sum().item())
        row["worst_ratio"] = (
            finite_or_none(float(torch.nan_to_num(ratio, nan=float("inf")).max().item())) if ratio.numel() else 0.0
        )
        row["bound"] = bound
        row["bound_elements"] = int(zero.sum().item())
        row["bound_max_abs"] = finite_or_none(float(diff[zero].max().item())) if bool(zero.any()) else None
    return sorted(rows, key=lambda r: -(r["worst_ratio"] if r["worst_ratio"] is not None else float("inf")))
