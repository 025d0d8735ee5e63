"""A tiny linear model whose calls sleep, for the collector's stability tests.

Every third call of a cell's model sleeps ``SLOW_S``, a thousand times what the call itself
takes, which makes a warm series bimodal. Batch 1 keeps doing so on every call: its series stay unstable however often
they are measured. Batch 2 does so only on its first ``SETTLES_AFTER`` calls (its check and its
first warm series): measured again, it is steady. The reference (float64) never sleeps.
"""

from __future__ import annotations

import time

import torch
from torch import nn

MODEL_REVISION = "sleepy v1 (synthetic test workload)"
TASK_METRIC = "max_abs_to_reference"

SLOW_S = 0.030
SETTLES_AFTER = 13

_calls: dict[int, int] = {}


def build_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Linear(8, 4).eval()


def make_inputs(batch: int, length: int, layout: str) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(batch * 1000 + length)
    return {"x": torch.randn(batch, length, 8, generator=generator)}


def run_model(model: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    batch = int(inputs["x"].shape[0])
    if next(model.parameters()).dtype != torch.float64:
        _calls[batch] = count = _calls.get(batch, 0) + 1
        slow = count % 3 == 0 and (batch == 1 or count <= SETTLES_AFTER)
        if slow:
            time.sleep(SLOW_S)
    return {"y": model(inputs["x"])}


def task_metric(
    outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]
) -> float:
    return float((outputs["y"].double() - reference["y"].double()).abs().max())
