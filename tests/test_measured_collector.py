"""The collector records what it measured about the target and the reference: how --target was
resolved, and a reference whose own outputs are NaN (deterministically) without calling it noisy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.contract.validation import read_log
from reportgen.render.report import judge_log
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # each test starts the collector in a new process

WORKLOAD = """
import torch
from torch import nn

MODEL_REVISION = "nan-head test model (seed 0)"
ATTENTION_PATH = "none"
TASK_METRIC = "max_abs"


class NanHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        # The last feature is 0 * inf: NaN on every run, in every mode.
        return torch.cat([y[..., :-1], y[..., -1:] * 0.0 * float("inf")], dim=-1)


def build_model():
    torch.manual_seed(0)
    return NanHead()


def make_inputs(batch, length, layout):
    torch.manual_seed(1)
    return {"x": torch.randn(batch, length, 4)}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    return 0.0
"""

PLAN = """
[workload]
name = "nan-head"
module = "nan_head.py"
description = "A model whose reference output is NaN by construction."
target = "{target}"

[matrix]
shapes = [[1, 3]]
dtypes = ["float32"]
layouts = ["contiguous"]
modes = ["eager"]

[tolerances.float32]
atol = 1e-5
rtol = 1e-4

[timing]
warm_repetitions = 2
warmup = 1

[reference]
dtype = "float32"
float64_golden = true
"""


def _plan(tmp_path: Path, target: str) -> Path:
    (tmp_path / "nan_head.py").write_text(WORKLOAD, encoding="utf-8")
    plan = tmp_path / f"nan_head_{target}.toml"
    plan.write_text(PLAN.format(target=target), encoding="utf-8")
    return plan


def _collector(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["CUDA_VISIBLE_DEVICES"] = ""  # this test is about the host CPU, wherever it runs
    return subprocess.run(
        [sys.executable, "-m", "collector", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_nan_reference_is_recorded_deterministic_and_judged_first(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    done = _collector(["--workload", str(_plan(tmp_path, "cpu")), "--out", str(out), "--cold", "off"])
    assert done.returncode == 0, done.stderr[-3000:]
    log = next(out.iterdir()) / "events.jsonl"
    reading = read_log(log)
    assert reading.problems == [], [p.format() for p in reading.problems]
    start = reading.events[0]
    assert start.target_choice is not None
    assert (start.target_choice.requested, start.target_choice.resolved) == ("auto", "cpu")
    assert "the plan's target cpu" in start.target_choice.reason
    ref = next(e for e in reading.events if e.kind == "reference")
    assert ref.nonfinite == 3 and ref.golden_nonfinite == 3
    assert ref.deterministic is True and ref.noise_max_abs == 0.0, "NaN facing NaN is not noise"
    judged = judge_log(log)
    assert judged.disposition.reasons[0].rule == "reference-nonfinite"
    assert judged.disposition.outcome == "blocked"
    assert "(on cpu: evidence for cpu; weights origin not recorded)" in judged.disposition.headline


def test_auto_refuses_to_run_a_neuron_plan_on_this_host(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    done = _collector(["--workload", str(_plan(tmp_path, "neuron")), "--out", str(out), "--cold", "off"])
    assert done.returncode == 3, done.stderr[-3000:]
    assert "the plan's target is neuron, which is not available here" in done.stderr
    assert not out.exists() or not any(out.iterdir()), "nothing ran, nothing was written"
