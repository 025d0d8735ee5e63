"""Load a workload module and prepare identical inputs and weights for every mode.

A workload module (named by the plan) provides:

* ``MODEL_REVISION``, ``ATTENTION_PATH``, ``TASK_METRIC``: strings recorded in the plan event;
* ``build_model() -> nn.Module``: the model in float32 with its real weights (seeded or loaded);
* ``make_inputs(batch, length, layout) -> dict[str, Tensor]``: the real preprocessing, on the CPU;
* ``run_model(model, inputs) -> dict[str, Tensor]``: one call, outputs named;
* ``task_metric(outputs, reference, inputs) -> float``: the task-relevant comparison
  (inference plans; training plans compare the loss per step instead, see training.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from collector.plan import WorkloadPlan

REQUIRED = ("build_model", "make_inputs", "run_model")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}


class WorkloadError(RuntimeError):
    """The workload module is missing or incomplete."""


def load_workload(plan: WorkloadPlan) -> ModuleType:
    path = plan.module_path
    name = f"collector_workload_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkloadError(f"cannot load workload module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    needed = REQUIRED + (("loss_fn", "make_optimizer") if plan.training else ("task_metric",))
    missing = [attr for attr in needed if not hasattr(module, attr)]
    if missing:
        raise WorkloadError(f"workload module {path} lacks {', '.join(missing)}")
    return module


def cast_inputs(inputs: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Floating inputs take the cell dtype; integer ids and boolean masks keep theirs.

    ``Tensor.to`` keeps the strides of a dense tensor, so a non-contiguous input stays so.
    """
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}


def to_device(inputs: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in inputs.items()}


def input_key(batch: int, length: int, layout: str) -> str:
    return f"b{batch}-l{length}-{layout}"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_artifact(obj: Any, path: Path) -> tuple[int, str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(obj, path)
    return path.stat().st_size, sha256_file(path)


def load_artifact(path: Path) -> Any:
    return torch.load(path, map_location="cpu", weights_only=True)
