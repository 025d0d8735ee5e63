"""Implicit time stepping of the 1-D heat equation: a scientific workload that needs float64.

Each step solves (I + dt * kappa * L) u_next = u with L the second-difference operator on
``length`` grid points (Dirichlet boundaries), by a dense ``torch.linalg.solve``. The batch is
a set of independent initial conditions. The acceptance requirement is float64 computation:
the task metric is the largest relative error of the final state against the float64
reference, and it must stay below 1e-10, which float32 arithmetic cannot reach.
"""

from __future__ import annotations

import math

import torch
from torch import nn

MODEL_REVISION = "heat-solver v1 (backward Euler, 8 steps, dt 1e-3, kappa 1.0)"
WEIGHTS_ORIGIN = "none"  # a solver: its one parameter is the physical constant kappa
ATTENTION_PATH = "none (dense linear solves: torch.linalg.solve)"
TASK_METRIC = "max_rel_error_to_float64_reference"
STEPS = 8


class HeatSolver(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.kappa = nn.Parameter(torch.tensor(1.0), requires_grad=False)
        self.dt = 1e-3

    def forward(self, u0: torch.Tensor) -> torch.Tensor:
        n = u0.shape[-1]
        h = 1.0 / (n + 1)
        eye = torch.eye(n, dtype=u0.dtype, device=u0.device)
        lap = (
            2 * eye
            - torch.diag(torch.ones(n - 1, dtype=u0.dtype, device=u0.device), 1)
            - torch.diag(torch.ones(n - 1, dtype=u0.dtype, device=u0.device), -1)
        ) / (h * h)
        system = eye + self.dt * self.kappa.to(u0.dtype) * lap
        u = u0.transpose(0, 1)
        for _ in range(STEPS):
            u = torch.linalg.solve(system, u)
        return u.transpose(0, 1)


def build_model() -> nn.Module:
    return HeatSolver().eval()


def make_inputs(batch: int, length: int, layout: str) -> dict[str, torch.Tensor]:
    """Smooth initial conditions: sums of a few sine modes with seeded amplitudes."""
    gen = torch.Generator().manual_seed(7 * batch + length)
    x = torch.linspace(0, 1, length + 2, dtype=torch.float64)[1:-1]
    modes = torch.arange(1, 6, dtype=torch.float64)
    amplitudes = torch.rand(batch, 5, generator=gen, dtype=torch.float64)
    u0 = amplitudes @ torch.sin(math.pi * modes[:, None] * x[None, :])
    if layout == "noncontiguous":
        # Solver state kept grid-major with a padded leading dimension, as a column-major code
        # hands it over (LDA = batch + 1): strides (1, batch + 1). Without the padding a batch
        # of one would be contiguous (a size-1 dimension's stride does not count).
        padded = torch.zeros(length, batch + 1, dtype=u0.dtype)
        padded[:, :batch] = u0.t()
        u0 = padded.t()[:batch]
    return {"u0": u0}


def run_model(model: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"u": model(inputs["u0"])}


def task_metric(
    outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]
) -> float:
    out = outputs["u"].detach().to("cpu", torch.float64)
    ref = reference["u"].detach().to("cpu", torch.float64)
    return float(((out - ref).abs().max() / ref.abs().max()).item())
