"""A cache-check repeat that --only left with nothing to test is skipped with the reason (careless
user review, finding 1): `--only 'b1-l8-*'` ran the repeat straight after its own shape, and the
report listed it among the passed cells with its compile "reused", though no other shape had
been compiled between (any cache holds the one graph it just built); without its own shape it
would be the shape's first compile."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from collector.plan import load_plan
from collector.run.cells import idle_repeat
from collector.runner import Options, execute
from tests.conftest import REPO
from tests.test_collector_robust import PlainBackend, _validates

FAULTY = REPO / "tests" / "workloads" / "faulty.toml"
REPEAT = "b1-l4-contiguous-float32-compiled-repeat"


def _plan(tmp_path: Path) -> Path:
    """The faulty workload with a cache check of its smaller shape."""
    shutil.copy(FAULTY.with_suffix(".py"), tmp_path / "faulty.py")
    text = FAULTY.read_text(encoding="utf-8").replace(
        "shapes = [[1, 4], [2, 4]]\n", "shapes = [[1, 4], [2, 4]]\ncache_checks = [[1, 4]]\n"
    )
    assert "cache_checks" in text
    (tmp_path / "plan.toml").write_text(text, encoding="utf-8")
    return tmp_path / "plan.toml"


@pytest.mark.parametrize(
    ("only", "why"),
    [
        (["b1-*"], "no other shape of its group is compiled between its own and it"),
        (["*-repeat", "b2-*"], "the cell it repeats, b1-l4-contiguous-float32-compiled, is not among the chosen cells"),
        (["b1-*", "b2-*-compiled"], None),
        ([], None),
    ],
)
def test_which_selections_leave_the_repeat_nothing_to_test(tmp_path: Path, only: list[str], why: str | None) -> None:
    plan = load_plan(_plan(tmp_path))
    (repeat,) = [c for c in plan.cells if c.repeat_of]
    from collector.plan import select_cells

    said = idle_repeat(repeat, select_cells(plan.cells, only, []))
    assert (said is None) if why is None else (said is not None and said.startswith(why)), said


def _results(log: Path) -> dict[str, dict[str, Any]]:
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return {e["case"]: e for e in lines if e["kind"] == "case_result"}


def test_the_run_records_an_idle_repeat_skipped_and_runs_a_useful_one(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    options = {"target": "cpu", "cold": "off", "warm_repetitions": 2}
    run_dir, code = execute(load_plan(plan), PlainBackend(), Options(out_dir=tmp_path / "a", only=["b1-*"], **options))
    assert code == 0 and run_dir is not None
    results = _results(run_dir / "events.jsonl")
    assert results[REPEAT]["status"] == "skipped", results[REPEAT]
    assert "a repeat straight after its own graph tests no cache" in results[REPEAT]["skip_reason"]
    assert results["b1-l4-contiguous-float32-compiled"]["status"] == "pass"
    _validates(run_dir / "events.jsonl")
    run_dir, code = execute(
        load_plan(plan), PlainBackend(), Options(out_dir=tmp_path / "b", only=["b1-*", "b2-*-compiled"], **options)
    )
    assert run_dir is not None and _results(run_dir / "events.jsonl")[REPEAT]["status"] == "pass"


def test_a_cache_check_of_the_plans_last_shape_has_nothing_compiled_between(tmp_path: Path) -> None:
    """Only whether some other shape was chosen was asked, not whether it ran between: a cache
    check of the last shape (or --only of a shape compiled before it) ran straight after its own
    shape and read 'reused' (second review of this round, finding 9)."""
    text = _plan(tmp_path).read_text(encoding="utf-8").replace("cache_checks = [[1, 4]]", "cache_checks = [[2, 4]]")
    (tmp_path / "plan.toml").write_text(text, encoding="utf-8")
    plan = load_plan(tmp_path / "plan.toml")
    (repeat,) = [c for c in plan.cells if c.repeat_of]
    said = idle_repeat(repeat, plan.cells)
    assert said is not None and said.startswith("no other shape of its group is compiled between its own and it")


@pytest.mark.parametrize(
    ("only", "idle"),
    [
        (["b1-l6-*", "b1-l20-*"], True),  # 20 tokens are refused above the largest bucket 16: nothing compiled
        (["b1-l6-*", "b1-l12-*"], False),  # 12 tokens pad to the 16 bucket: another graph between
        ([], False),
    ],
)
def test_a_generation_repeat_needs_another_bucket_compiled_between(only: list[str], idle: bool) -> None:
    """A review: in a generation plan a compiled cell whose request the policy refuses compiles
    nothing, yet it counted as "another shape compiled between", and the repeat ran and read
    "reused" beside the passing cells."""
    from types import SimpleNamespace

    from collector.plan import select_cells
    from collector.run.cells import _served_by

    plan = load_plan(REPO / "collector" / "workloads" / "decoder_lm.toml")
    chosen = select_cells(plan.cells, only, [])
    repeats = [c for c in chosen if c.repeat_of and c.dtype == "float32" and c.layout == "contiguous"]
    assert repeats
    group = [c for c in chosen if c.dtype == repeats[0].dtype and c.layout == repeats[0].layout]
    said = idle_repeat(repeats[0], group, _served_by(SimpleNamespace(plan=plan)))  # type: ignore[arg-type]
    assert (said is not None) == idle, said
