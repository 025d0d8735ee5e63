"""The tiny decoder with a divergence planted at one decode step, for the generation tests.

The plan runs its reference in float64 and its cells in float32; in float32 only, the decode
call number ``PLANTED_STEP`` (environment, default 2) has its top-scored token knocked out, so
the greedy token there is the runner-up: the cell's tokens agree with the reference's up to
that step and differ from it on. Everything else is the shipped workload (collector/workloads/decoder_lm.py).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import torch

_spec = importlib.util.spec_from_file_location(
    "planted_decoder_base", Path(__file__).resolve().parents[2] / "collector" / "workloads" / "decoder_lm.py"
)
assert _spec is not None and _spec.loader is not None
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

TASK_METRIC = _base.TASK_METRIC
ATTENTION_PATH = _base.ATTENTION_PATH
MODEL_REVISION = "tiny decoder with a planted divergence (synthetic test workload)"
configure, build_model, make_inputs, pad_id, new_cache, run_model, task_metric = (
    _base.configure,
    _base.build_model,
    _base.make_inputs,
    _base.pad_id,
    _base.new_cache,
    _base.run_model,
    _base.task_metric,
)
_decode = {"index": 0}


def step(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    position_ids: torch.Tensor,
    cache: Any,
    cache_position: torch.Tensor,
) -> torch.Tensor:
    logits = _base.step(model, input_ids, attention_mask, position_ids, cache, cache_position)
    if input_ids.shape[1] > 1:  # a prefill starts a new generation
        _decode["index"] = 0
        return logits
    _decode["index"] += 1
    if logits.dtype == torch.float32 and _decode["index"] == int(os.environ.get("PLANTED_STEP", "2")):
        logits = logits.clone()
        top = logits[:, -1, :].argmax(-1)
        logits[torch.arange(logits.shape[0]), -1, top] = logits.min() - 10.0
    return logits
