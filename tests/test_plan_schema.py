"""The plan schema: strict keys, the declared target, and the plan event the collector writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from collector.plan import PlanError, load_plan


def _plan(tmp_path: Path, body: str, head: str = "") -> Path:
    (tmp_path / "w.py").write_text("", encoding="utf-8")
    path = tmp_path / "plan.toml"
    path.write_text(head + '[workload]\nname = "w"\nmodule = "w.py"\n' + body, encoding="utf-8")
    return path


MATRIX = "[matrix]\nshapes = [[1, 8]]\n"


def test_plan_declares_the_target_it_certifies(tmp_path: Path) -> None:
    plan = load_plan(_plan(tmp_path, 'target = "neuron"\n' + MATRIX))
    assert plan.intended_target == "neuron"
    assert load_plan(_plan(tmp_path, MATRIX)).intended_target is None, "optional: older plans load unchanged"


def test_unknown_target_is_a_plan_error(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="workload.target"):
        load_plan(_plan(tmp_path, 'target = "trainium"\n' + MATRIX))


def test_plan_event_records_the_intended_target() -> None:
    from reportgen.contract.events import Plan

    event = {
        "schema_version": "1.1", "seq": 2, "time": "2026-01-01T00:00:00Z", "kind": "plan", "workload": "w",
        "model_revision": "r", "target": "cpu", "reference": "cpu eager float32", "tolerances": {}, "warm_repetitions": 1,
        "matrix": [{"case": "b1-l8-contiguous-float32-eager", "batch": 1, "length": 8, "layout": "contiguous", "dtype": "float32", "mode": "eager"}],
        "timing_scope": {"preprocessing": False, "host_to_device": False, "output_retrieval": False, "synchronized": True},
    }
    assert Plan.model_validate({**event, "intended_target": "neuron"}).intended_target == "neuron"
    assert Plan.model_validate(event).intended_target is None, "absent in older logs"
