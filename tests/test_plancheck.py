"""`reportgen plan-check`: the seed's scenarios and the shipped workloads classify as the seed reasons."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import tomli_w
from click.testing import CliRunner

from collector.plan import PlanError, load_plan
from reportgen.cli import main
from reportgen.judge.plancheck import bucket_for, review_plan, write_revised
from tests.conftest import REPO

PLANS = REPO / "tests" / "plans"
WORKLOADS = REPO / "collector" / "workloads"


def test_bucket_ladder() -> None:
    assert [bucket_for(n) for n in (96, 240, 480, 128, 513)] == [128, 256, 512, 128, 1024]


def test_scenario_a_needs_a_revised_plan() -> None:
    review = review_plan(PLANS / "scenario_a.toml", "neuron")
    assert review.classification == "revise"
    titles = " | ".join(f.title for f in review.findings)
    for expected in ("not padded to a fixed set of buckets", "above the largest bucket", "expects 1 compilation(s) for 3 shapes", "without FP32 first", "BF16 tolerance and task criterion", "layout the real preprocessing produces is not declared", "no cache check"):
        assert expected in titles
    assert all(f.source for f in review.findings if f.severity != "note"), "each finding names its source"
    revised = review.revised
    assert revised["matrix"]["shapes"] == [[1, 128], [1, 256], [1, 512]]
    assert revised["padding"]["buckets"] == [128, 256, 512] and revised["padding"]["mask_padded"] is True
    assert revised["padding"]["proposed"] is True, "a ladder plan-check invents is marked as a proposal"
    assert revised["padding"]["above_largest"].startswith("UNDECIDED") and "512" in revised["padding"]["above_largest"]
    assert revised["matrix"]["cache_checks"] == [[1, 128]]
    assert revised["matrix"]["dtypes"] == ["float32", "bfloat16"]
    assert "noncontiguous" in revised["matrix"]["layouts"]
    assert set(revised["tolerances"]["bfloat16"]) >= {"atol", "rtol", "task"}
    assert revised["tolerances"]["bfloat16"]["proposed"] is True


def test_scenario_b_is_blocked_by_precision() -> None:
    review = review_plan(PLANS / "scenario_b.toml", "neuron")
    assert review.classification == "blocked"
    first = review.findings[0]
    assert first.severity == "block" and first.id == "float64-as-float32"
    assert "float64" in first.title and first.source
    assert review.revised is None


def test_scenario_b_is_fine_on_cpu() -> None:
    assert review_plan(PLANS / "scenario_b.toml", "cpu").classification != "blocked"


@pytest.mark.parametrize("name,expected", [("tiny_encoder.toml", "compatible"), ("minilm.toml", "compatible"), ("heat_solver.toml", "blocked")])
def test_shipped_workloads_on_neuron(name: str, expected: str) -> None:
    assert review_plan(WORKLOADS / name, "neuron").classification == expected


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_cli_formats_and_exit_codes(fmt: str) -> None:
    runner = CliRunner()
    a = runner.invoke(main, ["plan-check", str(PLANS / "scenario_a.toml"), "--target", "neuron", "--format", fmt])
    b = runner.invoke(main, ["plan-check", str(PLANS / "scenario_b.toml"), "--format", fmt])
    ok = runner.invoke(main, ["plan-check", str(WORKLOADS / "tiny_encoder.toml"), "--format", fmt])
    assert (a.exit_code, b.exit_code, ok.exit_code) == (3, 4, 0)
    if fmt == "json":
        assert json.loads(a.output)["classification"] == "revise"
    if fmt == "md":
        assert b.output.startswith("### Plan check: Blocked by a precision requirement")
    assert "Traceback" not in a.output + b.output


def test_unreadable_plan_is_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "plan.toml"
    bad.write_text("[workload\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["plan-check", str(bad)])
    assert result.exit_code == 1 and "unreadable plan" in result.output and "not valid TOML" in result.output


def agree(path: Path, policy: str = "reject requests longer than 512 tokens") -> None:
    """What the owner does with a revised plan: keep (here) the proposed values, write the
    undecided policy, and remove the proposal marks."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))

    def strip(table: dict) -> None:
        table.pop("proposed", None)
        for value in table.values():
            if isinstance(value, dict):
                strip(value)

    strip(data)
    data["padding"]["above_largest"] = policy
    path.write_text(tomli_w.dumps(data), encoding="utf-8")


def test_revised_plan_is_not_an_approval(tmp_path: Path) -> None:
    review = review_plan(PLANS / "scenario_a.toml", "neuron")
    out = tmp_path / "revised.toml"
    write_revised(review, PLANS / "scenario_a.toml", out)
    again = review_plan(out, "neuron")
    assert again.classification == "revise", "proposals still stand: not compatible yet"
    pending = next(f for f in again.findings if f.id == "proposals-pending")
    assert "padding.above_largest" in pending.detail and "tolerances.bfloat16.proposed" in pending.detail
    with pytest.raises(PlanError, match=r"revised.toml:\d+: .*holds a value no one agreed yet.*padding.above_largest"):
        load_plan(out)
    result = CliRunner().invoke(main, ["plan-check", str(out), "--target", "neuron"])
    assert result.exit_code == 3


def test_revised_plan_passes_once_its_proposals_are_replaced(tmp_path: Path) -> None:
    out = tmp_path / "revised.toml"
    write_revised(review_plan(PLANS / "scenario_a.toml", "neuron"), PLANS / "scenario_a.toml", out)
    agree(out)
    plan = load_plan(out)
    assert plan.missing_tolerance("bfloat16") is None and plan.missing_tolerance("float32") is None
    assert review_plan(out, "neuron").classification == "compatible"
    assert tomllib.loads(out.read_text(encoding="utf-8"))["matrix"]["shapes"] == [[1, 128], [1, 256], [1, 512]]
    assert CliRunner().invoke(main, ["plan-check", str(out), "--target", "neuron"]).exit_code == 0


@pytest.mark.slow
def test_revised_plan_runs_through_the_collector_unchanged(tmp_path: Path) -> None:
    from collector.backends import Backend
    from collector.runner import Options, execute
    from reportgen.contract.validation import read_log

    out = tmp_path / "revised.toml"
    write_revised(review_plan(PLANS / "scenario_a.toml", "neuron"), PLANS / "scenario_a.toml", out)
    agree(out)
    options = Options(target="cpu", out_dir=tmp_path / "runs", only=["b1-l128-*"], cold="off", warm_repetitions=2)
    run_dir, code = execute(load_plan(out), Backend(), options)
    reading = read_log(run_dir / "events.jsonl")
    assert code == 0 and reading.valid and reading.complete
    statuses = {e.case: e.status for e in reading.events if e.kind == "case_result"}
    assert statuses["b1-l128-contiguous-bfloat16-compiled"] != "skipped", "the BF16 criteria were declared"
    assert len(statuses) == 12  # 2 dtypes x 2 layouts x (eager, compiled, cache-check repeat)
