"""A test workload: a linear layer and a graph break, so a compile with fullgraph = true raises
(tests/test_collector_one_compile.py)."""

import torch
from linear_parts import make_inputs, run_model, task_metric
from torch import nn

__all__ = ["build_model", "make_inputs", "run_model", "task_metric"]

MODEL_REVISION = "graph break v1"
ATTENTION_PATH = "none"
TASK_METRIC = "min_cosine_to_reference"


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)

    def forward(self, x):
        y = self.a(x)
        torch._dynamo.graph_break()
        return y * 2


def build_model():
    torch.manual_seed(0)
    return Broken().eval()
