"""A module that changes its input in place is fed a fresh copy of the reference module's
inputs for each call the collector makes of it alone.

The collector calls a module alone twice (once to record its operators, once for its local
figure). Where the candidate's dtype and device are the reference's, ``Tensor.to`` hands back the
captured tensor itself, so a module ending in ``x.mul_(gamma)`` (timm's LayerScale with
``inplace=True``) was fed its own output on the second call: a cell whose every figure matched
the reference exactly read "First diverging module: blocks.0.scale, local error 9.43e+03 x".
The workload is synthetic (a tiny MLP, seeded weights).
"""

from __future__ import annotations

import copy
from pathlib import Path

from tests import test_localization_paths as paths
from tests.test_localization import localized_fields

# The workload's classes; its functions, plan and test settings are the two-path workload's.
CLASSES = """
import torch
from torch import nn

TASK_METRIC = "max_abs_to_reference"
MODEL_REVISION = "in-place scale (synthetic test workload, width 8, seed 0)"


class InplaceScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((8,), 2.0))

    def forward(self, x):
        return x.mul_(self.gamma)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.scale = InplaceScale()

    def forward(self, x):
        return x + self.scale(torch.tanh(self.fc(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


"""
MODULE = CLASSES + paths.MODULE[paths.MODULE.index("def build_model") :].replace("TwoPaths()", "Net()")
PLAN = (
    paths.PLAN.replace('name = "two-paths"', 'name = "inplace-scale"')
    .replace('module = "two_paths.py"', 'module = "inplace_scale.py"')
    .replace('dtypes = ["bfloat16"]', 'dtypes = ["float32"]')
    .replace("[tolerances.bfloat16]\natol = 5e-2\nrtol = 5e-2", "[tolerances.float32]\natol = 1e-5\nrtol = 1e-5")
    .replace("max_depth = 1", "max_depth = 3")
    .replace(
        "the bfloat16 candidate calls a module the float32 reference never does",
        "blocks that end in an in-place scale, run as the reference runs",
    )
)


def test_a_module_that_scales_its_input_in_place_is_measured_on_the_reference_inputs(tmp_path: Path) -> None:
    from collector.plan import load_plan

    (tmp_path / "inplace_scale.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "inplace_scale.toml").write_text(PLAN, encoding="utf-8")
    plan = load_plan(tmp_path / "inplace_scale.toml")
    (cell,) = plan.cells
    tolerance = plan.tolerance_for("float32")
    assert cell.dtype == "float32" and (tolerance["atol"], tolerance["rtol"]) == (1e-5, 1e-5)
    fields = localized_fields(plan, cell, lambda model: copy.deepcopy(model), "plan")
    assert not fields.get("failure")
    modules = {m["name"]: m for m in fields["modules"]}  # type: ignore[union-attr, index]
    assert {"blocks.0.scale", "blocks.1.scale", "head"} <= set(modules)
    for name, m in modules.items():
        assert m["local"] is not None and m["local"]["mismatched"] == 0, name
        assert m["local"]["max_abs"] == 0.0, name  # the same module on the same inputs, on the same device
        assert m["accumulated"]["mismatched"] == 0, name
        assert "aten::mul_" in m["operators"] or not name.endswith("scale"), name


MASKED = (
    CLASSES.split("class InplaceScale")[0]
    + """
class Scores(nn.Module):
    def forward(self, x):
        scores = x @ x.transpose(-1, -2)
        future = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1)
        return scores.masked_fill(future, float("-inf"))  # a causal mask, alike on both sides


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scores = Scores()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.softmax(self.scores(x), dim=-1) @ x)


"""
    + paths.MODULE[paths.MODULE.index("def build_model") :].replace("TwoPaths()", "Net()")
)


def test_a_module_whose_reference_output_is_infinite_at_its_worst_element_gets_no_figure_and_the_rest_are_measured(
    tmp_path: Path,
) -> None:
    """A review: compare gives an infinite allowance as null, and the collector's test of it
    (math.isfinite(None)) raised TypeError, so every module of the cell went unmeasured and the
    report read "Localisation failed" for a cell that matched."""
    from collector.plan import load_plan

    (tmp_path / "inplace_scale.py").write_text(MASKED, encoding="utf-8")
    (tmp_path / "inplace_scale.toml").write_text(PLAN, encoding="utf-8")
    plan = load_plan(tmp_path / "inplace_scale.toml")
    (cell,) = plan.cells
    fields = localized_fields(plan, cell, lambda model: copy.deepcopy(model), "plan")
    assert not fields.get("failure"), fields.get("failure")
    modules = {m["name"]: m for m in fields["modules"]}  # type: ignore[union-attr, index]
    scores = modules["scores"]
    assert scores.get("local") is None and scores.get("accumulated") is None
    assert "the reference module's output is not finite at its worst element: not judged" in scores["note"]
    assert modules["head"]["local"]["mismatched"] == 0 and modules["head"]["accumulated"]["mismatched"] == 0
