"""A test workload whose forward is random (dropout left on): its reference does not repeat
(tests/test_compare_rules.py)."""

import torch
from linear_parts import make_inputs, run_model, task_metric
from torch import nn

__all__ = ["build_model", "make_inputs", "run_model", "task_metric"]

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
