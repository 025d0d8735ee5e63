"""plan-check says what the collector and the report will do with a plan: cells the collector
skips for want of criteria, criteria a wrong output passes, a float64 requirement with no
float64 cell, an inspection of another workload, and a revised plan that keeps its module."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from click.testing import CliRunner

from collector.plan import load_plan
from reportgen.cli import main
from reportgen.judge.plancheck import review_plan
from tests.conftest import REPO

WORKLOADS = REPO / "collector" / "workloads"


def _plan(tmp_path: Path, name: str, edit: Any, source: str = "tiny_encoder.toml") -> Path:
    """A shipped plan with one edit, written beside a copy of nothing else (the module path made absolute)."""
    data = tomllib.loads((WORKLOADS / source).read_text(encoding="utf-8"))
    data["workload"]["module"] = str((WORKLOADS / data["workload"]["module"]).resolve())
    edit(data)
    path = tmp_path / f"{name}.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path


def _ids(review: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for f in review.findings:
        found.setdefault(f.id, []).append(f)
    return found


def _float16_untoleranced(data: dict[str, Any]) -> None:
    data["matrix"]["dtypes"] = ["float32", "float16"]


def _float16_without_task(data: dict[str, Any]) -> None:
    data["matrix"]["dtypes"] = ["float32", "float16"]
    data["tolerances"]["float16"] = {"atol": 1e-3, "rtol": 1e-3}


def _training_without_loss_and_grad(data: dict[str, Any]) -> None:
    for part in ("loss", "grad"):
        data["tolerances"]["float32"].pop(part)


@pytest.mark.parametrize(
    ("edit", "source", "dtype", "words"),
    [
        (_float16_untoleranced, "tiny_encoder.toml", "float16", "no tolerance for float16"),
        (_float16_without_task, "tiny_encoder.toml", "float16", "no task criterion for float16"),
        (_training_without_loss_and_grad, "tiny_classifier.toml", "float32", "loss and grad tolerances"),
    ],
    ids=["float16-no-tolerance", "float16-no-task", "training-no-loss-grad"],
)
def test_cells_the_collector_would_skip_need_a_revised_plan(
    tmp_path: Path, edit: Any, source: str, dtype: str, words: str
) -> None:
    path = _plan(tmp_path, "plan", edit, source)
    plan = load_plan(path, require_module=False)
    assert words in (plan.missing_tolerance(dtype) or ""), "the collector would skip these cells"
    for target in ("neuron", "cuda", "cpu"):
        review = review_plan(path, target)
        (finding,) = _ids(review)["criteria-missing"]
        assert review.classification != "compatible" and finding.severity == "revise"
        assert dtype in finding.title and words in finding.detail


def test_a_float64_requirement_without_a_float64_cell_is_revised_on_every_target(tmp_path: Path) -> None:
    def require(data: dict[str, Any]) -> None:
        data["workload"]["requirements"] = ["requires_float64"]
        data["matrix"]["dtypes"] = ["float32"]

    path = _plan(tmp_path, "f64", require, "heat_solver.toml")
    for target in ("cuda", "cpu"):
        review = review_plan(path, target)
        assert review.classification == "revise", review.findings
        assert "float64-required" in _ids(review)
        assert review.revised is not None and "float64" in review.revised["matrix"]["dtypes"]
    assert review_plan(path, "neuron").classification == "blocked", "there float64 runs as float32"


def _without_task(data: dict[str, Any]) -> None:
    data["tolerances"]["float32"].pop("task", None)


@pytest.mark.parametrize(
    ("tolerance", "drop_task", "words"),
    [
        ({"rtol": 1.0}, True, "tolerances.float32.rtol = 1 passes an output of zeros"),
        # Before: an atol past float32's range passed every output and plan-check said nothing.
        ({"atol": 1e300}, True, "tolerances.float32.atol = 1e+300 passes every finite output"),
        (
            {"rtol": 2.0, "task": {"metric": "min_cosine_to_reference", "op": ">=", "threshold": -1.0}},
            False,
            "tolerances.float32.task: min_cosine_to_reference >= -1 holds for any output",
        ),
        (
            {"rtol": 1.0, "task": {"metric": "cosine_similarity", "op": "<=", "threshold": 1.0}},
            False,
            "cosine_similarity <= 1 holds for any output",
        ),
    ],
    ids=[
        "rtol-1-alone",
        "atol-past-float32-range",
        "rtol-2-and-cosine-at-least-minus-one",
        "rtol-1-and-cosine-at-most-one",
    ],
)
def test_criteria_no_part_of_which_can_fail_need_a_revised_plan(
    tmp_path: Path, tolerance: dict[str, Any], drop_task: bool, words: str
) -> None:
    def edit(data: dict[str, Any]) -> None:
        if drop_task:
            _without_task(data)
        data["tolerances"]["float32"].update(tolerance)

    review = review_plan(_plan(tmp_path, "vacuous", edit), "cpu")
    (finding,) = _ids(review)["criterion-cannot-fail"]
    assert review.classification == "revise" and finding.severity == "revise" and words in finding.detail


@pytest.mark.parametrize(
    "tolerance",
    [
        {"rtol": 1.0},  # the task criterion (min_cosine_to_reference >= 0.9999) still fails a wrong output
        {
            "task": {"metric": "min_cosine_to_reference", "op": ">=", "threshold": -1.0}
        },  # the elementwise rule still can
        {"task": {"metric": "max_cosine_distance", "op": "<=", "threshold": 0.001}},  # a distance: <= is right
        # Loose or not depends on the outputs' magnitudes, which a plan does not declare.
        {"atol": 1e30, "task": {"metric": "min_cosine_to_reference", "op": ">=", "threshold": -1.0}},
    ],
    ids=[
        "rtol-1-beside-a-task-criterion",
        "vacuous-task-beside-a-sound-tolerance",
        "a-cosine-distance",
        "atol-within-float32-range",
    ],
)
def test_criteria_one_part_of_which_can_fail_are_not_called_vacuous(tmp_path: Path, tolerance: dict[str, Any]) -> None:
    # Before: each part was judged alone, and a name holding "cosine" was read as a similarity.
    path = _plan(tmp_path, "sound", lambda data: data["tolerances"]["float32"].update(tolerance))
    found = _ids(review_plan(path, "cpu"))
    assert "criterion-cannot-fail" not in found and "criterion-backwards" not in found, found


def test_a_task_criterion_that_holds_for_any_output_beside_a_sound_tolerance_is_noted(tmp_path: Path) -> None:
    # Not vacuous as a whole (the elementwise rule still fails a wrong output), but the task
    # criterion judges nothing: a note, not a revise.
    task = {"metric": "min_cosine_to_reference", "op": "<=", "threshold": 1.0}
    path = _plan(tmp_path, "idle", lambda data: data["tolerances"]["float32"].update(task=task))
    found = _ids(review_plan(path, "cpu"))
    (finding,) = found["criterion-idle"]
    assert finding.severity == "note" and "holds for any output" in finding.detail
    assert "criterion-cannot-fail" not in found


def test_a_similarity_compared_with_at_most_is_backwards(tmp_path: Path) -> None:
    task = {"metric": "min_cosine_to_reference", "op": "<=", "threshold": 0.5}
    path = _plan(tmp_path, "backwards", lambda data: data["tolerances"]["float32"].update(task=task))
    (finding,) = _ids(review_plan(path, "cpu"))["criterion-backwards"]
    assert finding.severity == "revise" and "fails closer ones" in finding.detail


def test_sound_criteria_and_a_float64_error_bound_raise_nothing(tmp_path: Path) -> None:
    for source in ("tiny_encoder.toml", "minilm.toml", "heat_solver.toml", "decoder_lm.toml", "tiny_classifier.toml"):
        review = review_plan(WORKLOADS / source, "cpu")
        assert not {"criterion-cannot-fail", "criteria-missing"} & set(_ids(review)), (source, review.findings)


def test_a_zero_tolerance_is_a_note(tmp_path: Path) -> None:
    path = _plan(tmp_path, "exact", lambda data: data["tolerances"]["float32"].update(atol=0.0, rtol=0.0))
    review = review_plan(path, "cpu")
    assert [f.severity for f in _ids(review)["criterion-bit-exact"]] == ["note"]


def test_an_eager_only_plan_says_the_compiled_path_is_untested(tmp_path: Path) -> None:
    path = _plan(tmp_path, "eager", lambda data: data["matrix"].update(modes=["eager"]))
    (finding,) = _ids(review_plan(path, "neuron"))["no-compiled"]
    assert finding.severity == "note" and "torch.compile on neuron" in finding.detail
    assert "no-compiled" not in _ids(review_plan(WORKLOADS / "tiny_encoder.toml", "neuron"))


def test_an_inspection_of_another_workload_is_refused() -> None:
    result = CliRunner().invoke(
        main,
        [
            "plan-check",
            str(WORKLOADS / "heat_solver.toml"),
            "--inspection",
            str(REPO / "sample_inspections" / "tiny-encoder.inspection.jsonl"),
            "--target",
            "cpu",
        ],
    )
    assert result.exit_code == 1
    assert "inspects the workload 'tiny-encoder', not this plan's 'heat-solver'" in result.output
    assert "Compatible" not in result.output


def test_a_revised_plan_in_the_same_tree_names_its_module_relatively(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "plans").mkdir(parents=True)
    (tree / "models").mkdir()
    (tree / "models" / "m.py").write_text("# the workload\n", encoding="utf-8")

    def move(data: dict[str, Any]) -> None:
        data["workload"]["module"] = "../models/m.py"
        data["matrix"]["cache_checks"] = []

    plan = _plan(tree / "plans", "p", lambda data: None, "tiny_encoder.toml")
    data = tomllib.loads(plan.read_text(encoding="utf-8"))
    move(data)
    data["matrix"]["dtypes"] = ["bfloat16"]  # something to revise
    plan.write_text(tomli_w.dumps(data), encoding="utf-8")
    out = tree / "revised" / "deeper" / "p.toml"
    out.parent.mkdir(parents=True)
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(out)])
    assert result.exit_code == 3, result.output
    text = out.read_text(encoding="utf-8")
    assert tomllib.loads(text)["workload"]["module"] == "../../models/m.py"
    assert "are not carried over" in text


def test_each_finding_names_the_plan_key_and_its_line() -> None:
    # Before: a finding said what was wrong but not where: no key, no line, in no format.
    plan = REPO / "tests" / "plans" / "scenario_a.toml"
    review = review_plan(plan, "neuron")
    lines = plan.read_text(encoding="utf-8").splitlines()
    by_title = {f.title: f for f in review.findings}
    expected = by_title["expects 1 compilation(s) for 3 shapes once padded to the buckets"]
    assert expected.key == "workload.expected_compilations" and expected.line is not None
    assert lines[expected.line - 1].startswith("expected_compilations")
    assert all(f.key for f in review.findings), [f.title for f in review.findings if not f.key]
    text = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron"]).output
    assert f"      where: workload.expected_compilations (line {expected.line})" in text
    md = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--format", "md"]).output
    assert f"Where: `workload.expected_compilations` (line {expected.line})." in md


def test_a_training_plan_without_float32_criteria_is_told_the_cells_would_be_skipped(tmp_path: Path) -> None:
    # Before: a NOTE said the collector would use the seed's FP32 criterion, beside nothing (or,
    # once that was found, a REVISE saying every cell would be skipped): the default has no
    # loss and grad rules, so the collector skips a training cell under it.
    path = _plan(tmp_path, "train", lambda data: data["tolerances"].pop("float32"), "tiny_classifier.toml")
    found = _ids(review_plan(path, "cpu"))
    (missing,) = found["criteria-missing"]
    assert "loss and grad tolerances" in missing.detail
    assert not [f for f in found.get("bf16-own-criteria", []) if "FP32 tolerance not declared" in f.title]


def test_a_task_criterion_no_output_can_meet_needs_a_revised_plan(tmp_path: Path) -> None:
    # Before: a cosine asked to reach 2 read "Compatible": every cell of the run would be a
    # mismatch, whatever the backend computed. (Too many greedy steps the schema refuses.)
    cosine = {"metric": "min_cosine_to_reference", "op": ">=", "threshold": 1.5}
    review = review_plan(
        _plan(tmp_path, "cosine", lambda data: data["tolerances"]["float32"].update(task=cosine)), "cpu"
    )
    (finding,) = _ids(review)["criterion-cannot-pass"]
    assert finding.severity == "revise" and "a cosine similarity lies between -1 and 1" in finding.detail

    for source in ("tiny_encoder.toml", "minilm.toml", "heat_solver.toml", "scenario_a.toml", "tiny_classifier.toml"):
        assert "criterion-cannot-pass" not in _ids(review_plan(WORKLOADS / source, "cpu")), source


def test_an_fp32_plan_without_a_task_criterion_gets_a_note_and_its_report_says_so(tmp_path: Path) -> None:
    """A review: an inference plan whose float32 criteria are elementwise only was "Compatible as
    specified ... no findings", and its run "Suitable", with "no task criterion" only inside the
    criteria table. The seed compares task-relevant results before latency: plan-check notes it
    (the verdict stays compatible) and the report's notes name the cells that rest on it."""
    from reportgen.judge.disposition import rule_tolerances
    from reportgen.render.report import judge_log
    from tests.logbuilder import dumps, edited_sample

    path = _plan(tmp_path, "plan", lambda data: data["tolerances"]["float32"].pop("task"))
    review = review_plan(path, "neuron")
    (finding,) = _ids(review)["task-criterion"]
    assert review.classification == "compatible" and finding.severity == "note" and finding.key == "tolerances.float32"
    assert "task-criterion" not in _ids(review_plan(_plan(tmp_path, "declared", lambda data: None), "neuron"))
    events = edited_sample("tiny-encoder-cpu-20261206T150111Z-1dd183", "encoder-no-task", "task criterion removed")
    for event in events:
        if event["kind"] == "plan":
            event["tolerances"]["float32"].pop("task")
        if event["kind"] == "case_result":
            event.pop("task_metric", None)
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(events), encoding="utf-8")
    judged = judge_log(log)
    notes = [r for r in judged.disposition.reasons if r.message.startswith("No float32 task criterion was declared")]
    assert len(notes) == 1 and notes[0].outcome == "note"
    assert set(notes[0].cases) == {c.case for c in judged.run.cells if c.status == "pass"} and notes[0].cases
    # The shipped run declares one: nothing said.
    shipped = judge_log(REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl")
    assert not [r for r in rule_tolerances(shipped.run, {}) if "task criterion" in r.message]


@pytest.mark.parametrize(("source", "kind"), [("decoder_lm.toml", "generation"), ("tiny_classifier.toml", "training")])
def test_a_localize_table_the_collector_never_uses_is_noted(tmp_path: Path, source: str, kind: str) -> None:
    """A review: a generation plan with [localize] always = true got no word from plan-check,
    though the collector localises no generation (or training) cell."""
    path = _plan(tmp_path, "plan", lambda data: data.update(localize={"always": True}), source)
    (finding,) = _ids(review_plan(path, "cpu"))["localize-ignored"]
    assert finding.severity == "note" and finding.title == f"[localize] does nothing in a {kind} plan"
    plain = _plan(tmp_path, "inference", lambda data: data.update(localize={"always": True}))
    assert "localize-ignored" not in _ids(review_plan(plain, "cpu"))


def test_a_reduced_precision_rtol_below_its_rounding_is_noted(tmp_path: Path) -> None:
    """A review: bf16 atol and rtol 1e-4 were "Compatible as specified"; the run then mismatched
    in every bf16 cell, rounding alone being up to 2^-8 of each value."""

    def tight(data: dict[str, Any]) -> None:
        data["matrix"]["dtypes"] = ["float32", "bfloat16"]
        data["tolerances"]["bfloat16"] = {
            "atol": 1e-4,
            "rtol": 1e-4,
            "task": {"metric": "min_cosine_to_reference", "op": ">=", "threshold": 0.99},
        }

    review = review_plan(_plan(tmp_path, "tight", tight), "cpu")
    (finding,) = _ids(review)["tolerance-below-resolution"]
    assert (
        finding.severity == "note"
        and finding.title == "bfloat16 rtol 0.0001 is below the dtype's rounding (0.00390625)"
    )
    assert review.classification == "compatible"

    def sound(data: dict[str, Any]) -> None:
        tight(data)
        data["tolerances"]["bfloat16"]["rtol"] = 2e-2

    assert "tolerance-below-resolution" not in _ids(review_plan(_plan(tmp_path, "sound", sound), "cpu"))
