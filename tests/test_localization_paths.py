"""A module only the candidate calls: the two took different code paths there. Before, the
collector hooked the candidate on the reference's modules only, and the page listed such a
module as one 'this input does not reach' and placed the error elsewhere."""

from __future__ import annotations

from pathlib import Path

import msgspec

from reportgen.contract.events import Localization
from reportgen.judge.localization import CANDIDATE_ONLY, judge_localization, where_sentence
from tests.test_localization import localized_fields

MODULE = """
import torch
from torch import nn

TASK_METRIC = "max_abs_to_reference"
MODEL_REVISION = "two paths (synthetic test workload, width 8, seed 0)"


class TwoPaths(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.alt = nn.Linear(8, 8)
        self.unused = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = self.a(x)
        if x.dtype != torch.float32:  # a path only the candidate's dtype takes
            x = self.alt(x)
        return self.head(x)


def build_model():
    torch.manual_seed(0)
    return TwoPaths().eval()


def make_inputs(batch, length, layout):
    return {"x": torch.randn(batch, length, 8, generator=torch.Generator().manual_seed(0))}


def run_model(model, inputs):
    return {"out": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    return float((outputs["out"].double() - reference["out"].double()).abs().max().item())
"""

PLAN = """
[workload]
name = "two-paths"
module = "two_paths.py"
description = "Synthetic test workload: the bfloat16 candidate calls a module the float32 reference never does."
requirements = []

[matrix]
shapes = [[1, 4]]
dtypes = ["bfloat16"]
layouts = ["contiguous"]
modes = ["eager"]

[tolerances.bfloat16]
atol = 5e-2
rtol = 5e-2

[timing]
warm_repetitions = 2
warmup = 1
scope = { preprocessing = false, host_to_device = false, output_retrieval = false, note = "model call only" }

[reference]
dtype = "float32"
float64_golden = false

[localize]
always = true
max_depth = 1
"""


def test_a_module_only_the_candidate_calls_is_named_as_another_code_path(tmp_path: Path) -> None:
    from collector import localize
    from collector.plan import load_plan

    (tmp_path / "two_paths.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "two_paths.toml").write_text(PLAN, encoding="utf-8")
    plan = load_plan(tmp_path / "two_paths.toml")
    (cell,) = plan.cells
    fields = localized_fields(plan, cell, lambda model: model.to(__import__("torch").bfloat16))
    kind = "localization"
    reasons = {s["name"]: s["reason"] for s in fields["skipped"]}  # type: ignore[attr-defined, union-attr]
    assert reasons["alt"] == CANDIDATE_ONLY == localize.CANDIDATE_ONLY
    assert reasons["unused"] == "not called by the reference", "a module neither side calls stays as it was"
    event = msgspec.convert(
        {"schema_version": "1.6", "seq": 0, "time": "2026-01-01T00:00:00Z", "kind": kind, **fields},
        Localization,
    )
    found = judge_localization(event)
    sentence = where_sentence(found)
    assert "The candidate called alt, which the reference never called: the two took different code paths" in sentence
    assert "builds up" not in sentence, "a jump at a module not measured is no build-up"
    notes = " ".join(found.skipped_words) if found.skipped_words else ""
    assert "alt" not in notes.split("not measured (a container")[-1], "not listed as a module this input does not reach"


def _stats(max_abs: float, mismatched: int, allowed: float) -> dict[str, object]:
    return {
        "max_abs": max_abs,
        "max_rel": max_abs / allowed if allowed else 0.0,
        "mismatched": mismatched,
        "total": 128,
        "worst_index": [0, 0, 0],
        "worst_output": "out",
        "allowed_at_worst": allowed,
        "diff_at_worst": max_abs,
    }


def test_an_error_past_a_module_only_the_candidate_called_is_not_said_to_build_up() -> None:
    """Before: 'the error builds up across modules' beside accumulated figures that jump from 0
    to 2,000x the allowance after a module only the candidate called (a synthetic event shaped
    as a real compiled cell's: lin1 exact, slow not measured end to end, shared and lin2 far out)."""
    within, out = _stats(0.0, 0, 5e-5), _stats(0.03, 128, 1.3e-5)
    event = {
        "schema_version": "1.6",
        "seq": 0,
        "time": "2026-01-01T00:00:00Z",
        "kind": "localization",
        "case": "b1-l8-contiguous-float32-compiled",
        "reason": "mismatch",
        "mode": "compiled",
        "atol": 1e-5,
        "rtol": 1e-4,
        "max_depth": 1,
        "max_modules": 64,
        "max_bytes": 1 << 28,
        "modules": [
            {
                "name": "lin1",
                "type": "Linear",
                "depth": 1,
                "order": 0,
                "calls": 1,
                "accumulated": within,
                "local": within,
            },
            {
                "name": "slow",
                "type": "Linear",
                "depth": 1,
                "order": 1,
                "calls": 1,
                "accumulated": None,
                "local": within,
            },
            {
                "name": "shared",
                "type": "Linear",
                "depth": 1,
                "order": 2,
                "calls": 2,
                "accumulated": out,
                "local": within,
            },
            {
                "name": "lin2",
                "type": "Linear",
                "depth": 1,
                "order": 3,
                "calls": 1,
                "accumulated": _stats(0.012, 123, 2e-5),
                "local": within,
            },
        ],
        "skipped": [{"name": "fast", "reason": CANDIDATE_ONLY}],
    }
    found = judge_localization(msgspec.convert(event, Localization))
    sentence = where_sentence(found)
    assert sentence.startswith("The candidate called fast, which the reference never called"), sentence
    assert "builds up" not in sentence
