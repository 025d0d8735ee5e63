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


def compare_tensors(cell: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], atol: float, rtol: float) -> list[dict[str, Any]]:
    """Per-parameter statistics, worst first (by |diff| relative to its allowance)."""
    rows = []
    for name, expected in ref.items():
        got = cell.get(name)
        if got is None:
            rows.append({"name": name, "max_abs": None, "max_rel": None, "mismatched": expected.numel(), "total": expected.numel(), "norm_ratio": None, "worst_ratio": None})
            continue
        a, e = got.to(torch.float64), expected.to(torch.float64)
        diff = (a - e).abs()
        allowed = atol + rtol * e.abs()
        ratio = allowance_ratio(diff, allowed)
        ref_norm = float(e.norm().item())
        rows.append({
            "name": name,
            "max_abs": finite_or_none(float(diff.max().item())) if diff.numel() else 0.0,
            "max_rel": finite_or_none(max_relative(diff, e.abs())) if diff.numel() else 0.0,
            "mismatched": int((~(diff <= allowed)).sum().item()),
            "total": int(diff.numel()),
            "norm_ratio": finite_or_none(float(a.norm().item()) / ref_norm) if ref_norm > 0 else None,
            "worst_ratio": finite_or_none(float(ratio.max().item())) if diff.numel() else 0.0,
        })
    return sorted(rows, key=lambda r: -(r["worst_ratio"] if r["worst_ratio"] is not None else float("inf")))


def loss_within(loss: float, ref: float, atol: float, rtol: float) -> bool:
    return abs(loss - ref) <= atol + rtol * abs(ref)
