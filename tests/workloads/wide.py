"""A tiny model with a float64 buffer and int64 ids above the int32 range, for the inspection tests.

The ids are hashed feature keys (values near 2**40), reduced modulo the table size inside the
model; the scale buffer is float64 and the model computes one product in float64.
"""

from __future__ import annotations

import torch
from torch import nn

MODEL_REVISION = "wide v1 (synthetic test workload)"
TASK_METRIC = "max_abs_to_reference"
TABLE, WIDTH, HASH_BASE = 97, 8, 2**40


class Wide(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Embedding(TABLE, WIDTH)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, WIDTH, dtype=torch.float64))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.table(ids % TABLE)
        return (x.double() * self.scale).float()


def build_model() -> nn.Module:
    torch.manual_seed(0)
    return Wide().eval()


def make_inputs(batch: int, length: int, layout: str) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(batch * 100 + length)
    return {"ids": HASH_BASE + torch.randint(0, 1000, (batch, length), generator=gen)}


def run_model(model: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"out": model(inputs["ids"])}


def task_metric(
    outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]
) -> float:
    return float((outputs["out"].double() - reference["out"].double()).abs().max().item())
