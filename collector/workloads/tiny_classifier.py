"""Training workload: the tiny encoder with a classification head, a few AdamW steps.

Token ids and masks are the tiny encoder's; each sequence gets a label in {0, 1, 2}. The head
has dropout, which cannot draw the same random numbers on another backend as on the CPU
reference, so every run uses the deterministic variant (dropout off), as the plan declares.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import torch
from torch import nn
from torch.nn import functional as F


def _load_encoder_module() -> ModuleType:
    # Loaded by path like every workload; registered so torch.compile can trace its code.
    name = "collector_workload_tiny_encoder"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).with_name("tiny_encoder.py")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


encoder = _load_encoder_module()

MODEL_REVISION = (
    "tiny-classifier v1 (tiny-encoder v1 + mean-pool + dropout 0.1 + linear head to 3 classes, init seed 0)"
)
ATTENTION_PATH = encoder.ATTENTION_PATH
WEIGHTS_ORIGIN = "synthetic"  # seeded initialisation; the plan trains a few steps from it
OPTIMIZER = "AdamW(lr=1e-3, weight_decay=0.01)"
CLASSES = 3


class TinyClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = encoder.TinyEncoder()
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(encoder.DIM, CLASSES)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids, attention_mask)
        keep = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * keep).sum(1) / keep.sum(1).clamp_min(1.0)
        return self.head(self.dropout(pooled))


def build_model() -> nn.Module:
    torch.manual_seed(0)
    return TinyClassifier().eval()


def make_inputs(batch: int, length: int, layout: str) -> dict[str, torch.Tensor]:
    inputs = encoder.make_inputs(batch, length, layout)
    inputs["labels"] = torch.arange(batch, dtype=torch.int64) % CLASSES
    return inputs


def run_model(model: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"logits": model(inputs["input_ids"], inputs["attention_mask"])}


def loss_fn(outputs: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.cross_entropy(outputs["logits"].float(), inputs["labels"])


def make_optimizer(params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)


def make_deterministic(model: nn.Module) -> None:
    """Dropout off everywhere: the declared deterministic variant."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
