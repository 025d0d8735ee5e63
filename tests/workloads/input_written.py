"""A test workload whose model writes into its input (tests/test_compare_rules.py)."""

import torch
from linear_parts import make_inputs, run_model, task_metric
from torch import nn

__all__ = ["build_model", "make_inputs", "run_model", "task_metric"]

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
