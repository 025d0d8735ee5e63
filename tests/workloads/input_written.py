"""A test workload whose model writes into its input (tests/test_collector_run.py)."""

import torch
from torch import nn

MODEL_REVISION = "inplace v1"
ATTENTION_PATH = "none"
TASK_METRIC = "min_cosine_to_reference"


class Doubling(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)

    def forward(self, x):
        x.mul_(2.0)
        return self.a(x)


def build_model():
    torch.manual_seed(0)
    return Doubling().eval()


def make_inputs(batch, length, layout):
    return {"x": torch.randn(batch, length, 8, generator=torch.Generator().manual_seed(length))}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    o, r = outputs["y"].double().flatten(0, -2), reference["y"].double().flatten(0, -2)
    return float(torch.nn.functional.cosine_similarity(o, r, dim=-1).min())
