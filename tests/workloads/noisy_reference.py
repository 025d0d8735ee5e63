"""A test workload whose forward is random (dropout left on): its reference does not repeat
(tests/test_compare_rules.py)."""

import torch
from torch import nn

MODEL_REVISION = "noisy reference v1"
ATTENTION_PATH = "none"
TASK_METRIC = "min_cosine_to_reference"


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)

    def forward(self, x):
        return nn.functional.dropout(self.a(x), p=0.5, training=True)


def build_model():
    torch.manual_seed(0)
    return Noisy().eval()


def make_inputs(batch, length, layout):
    return {"x": torch.randn(batch, length, 8, generator=torch.Generator().manual_seed(length))}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    o, r = outputs["y"].double().flatten(0, -2), reference["y"].double().flatten(0, -2)
    return float(torch.nn.functional.cosine_similarity(o, r, dim=-1).min())
