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

import types
from pathlib import Path

from tests.test_localization import _Log, _NoCompile, _Quiet

MODULE = """
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


def build_model():
    torch.manual_seed(0)
    return Net().eval()


def make_inputs(batch, length, layout):
    return {"x": torch.randn(batch, length, 8, generator=torch.Generator().manual_seed(0))}


def run_model(model, inputs):
    return {"out": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    return float((outputs["out"].double() - reference["out"].double()).abs().max().item())
"""

PLAN = """
[workload]
name = "inplace-scale"
module = "inplace_scale.py"
description = "Synthetic test workload: blocks that end in an in-place scale, run as the reference runs."
requirements = []

[matrix]
shapes = [[1, 4]]
dtypes = ["float32"]
layouts = ["contiguous"]
modes = ["eager"]

[tolerances.float32]
atol = 1e-5
rtol = 1e-5

[timing]
warm_repetitions = 2
warmup = 1
scope = { preprocessing = false, host_to_device = false, output_retrieval = false, note = "model call only" }

[reference]
dtype = "float32"
float64_golden = false

[localize]
always = true
max_depth = 3
"""


def test_a_module_that_scales_its_input_in_place_is_measured_on_the_reference_inputs(tmp_path: Path) -> None:
    from collector import localize
    from collector.plan import load_plan
    from collector.workload import build_model, input_key, load_workload

    (tmp_path / "inplace_scale.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "inplace_scale.toml").write_text(PLAN, encoding="utf-8")
    plan = load_plan(tmp_path / "inplace_scale.toml")
    workload = load_workload(plan)
    (cell,) = plan.cells
    model = build_model(workload)
    key = input_key(cell.batch, cell.length, cell.layout)
    log = _Log()
    run = types.SimpleNamespace(
        plan=plan,
        model=model,
        workload=workload,
        backend=_NoCompile(),
        log=log,
        progress=_Quiet(),
        inputs={key: workload.make_inputs(cell.batch, cell.length, cell.layout)},
    )
    localize.localize(run, cell, build_model(workload), "plan")  # type: ignore[arg-type]
    ((kind, fields),) = log.events
    assert kind == "localization" and not fields.get("failure")
    modules = {m["name"]: m for m in fields["modules"]}  # type: ignore[union-attr, index]
    assert {"blocks.0.scale", "blocks.1.scale", "head"} <= set(modules)
    for name, m in modules.items():
        assert m["local"] is not None and m["local"]["mismatched"] == 0, name
        assert m["local"]["max_abs"] == 0.0, name  # the same module on the same inputs, on the same device
        assert m["accumulated"]["mismatched"] == 0, name
        assert "aten::mul_" in m["operators"] or not name.endswith("scale"), name
