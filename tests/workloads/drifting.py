"""Four residual blocks and a head; the third block adds a small offset only when compiled.

The offset sits under ``torch.compiler.is_compiling()``, so eager cells match the reference and
compiled cells do not: the localisation tests expect ``blocks.2`` named as the first diverging
module, and ``blocks.3`` and ``head`` as only inheriting its error.
"""

from __future__ import annotations

import torch
from torch import nn

MODEL_REVISION = "drifting v1 (synthetic test workload, 4 blocks of width 8, seed 0)"
TASK_METRIC = "max_abs_to_reference"
WIDTH, BLOCKS, DRIFTING, OFFSET = 8, 4, 2, 1e-2


class Block(nn.Module):
    def __init__(self, drifts: bool) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)
        self.drifts = drifts

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(self.lin(x))
        if self.drifts and torch.compiler.is_compiling():
            y = y + OFFSET
        return x + y


class Drifting(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(i == DRIFTING) for i in range(BLOCKS))
        self.head = nn.Linear(WIDTH, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def build_model() -> nn.Module:
    torch.manual_seed(0)
    return Drifting().eval()


def make_inputs(batch: int, length: int, layout: str) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(batch * 100 + length)
    return {"x": torch.randn(batch, length, WIDTH, generator=gen)}


def run_model(model: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"out": model(inputs["x"])}


def task_metric(
    outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]
) -> float:
    return float((outputs["out"].double() - reference["out"].double()).abs().max().item())
