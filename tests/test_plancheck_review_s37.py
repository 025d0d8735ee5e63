"""Held-out plans (an outside review of plan-check): a bf16 training plan could not be run at all
(the collector and plan-check asked it for a task criterion, which the schema refuses in a
training plan), and plan-check's revision of one dropped its loss and gradient tolerances for
a task criterion; an FP16-only plan was not asked for FP32 first; a generation plan's proposed
task threshold was a cosine's, 0.99 steps."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from collector.plan import missing_criteria
from reportgen.cli import main
from tests.conftest import REPO

WORKLOADS = REPO / "collector" / "workloads"
LOSS_GRAD = {"loss": {"atol": 1e-2, "rtol": 1e-2}, "grad": {"atol": 1e-2, "rtol": 5e-2}}


def test_a_training_dtype_with_loss_and_grad_has_its_criteria() -> None:
    bf16 = {"atol": 1e-2, "rtol": 1.6e-2, **LOSS_GRAD}
    assert missing_criteria({"bfloat16": bf16}, "bfloat16", training=True, generation=False) is None
    assert missing_criteria({"float16": bf16}, "float16", training=True, generation=False) is None
    lacking = missing_criteria({"bfloat16": {"atol": 1e-2, "rtol": 1e-2}}, "bfloat16", training=True, generation=False)
    assert lacking is not None and "loss and grad" in lacking


def _training_plan(tmp_path: Path, bf16: str) -> Path:
    text = (WORKLOADS / "tiny_classifier.toml").read_text(encoding="utf-8")
    text = text.replace('module = "tiny_classifier.py"', f'module = "{WORKLOADS / "tiny_classifier.py"}"')
    text = text.replace('dtypes = ["float32"]', 'dtypes = ["float32", "bfloat16"]')
    text = text.replace("[timing]", f"{bf16}\n[timing]")
    plan = tmp_path / "train.toml"
    plan.write_text(text, encoding="utf-8")
    return plan


def test_a_bf16_training_plan_with_loss_and_grad_is_compatible(tmp_path: Path) -> None:
    bf16 = "[tolerances.bfloat16]\natol = 1e-2\nrtol = 1.6e-2\nloss = { atol = 1e-2, rtol = 1e-2 }\ngrad = { atol = 1e-2, rtol = 5e-2 }\n"
    result = CliRunner().invoke(main, ["plan-check", str(_training_plan(tmp_path, bf16)), "--target", "neuron"])
    assert result.exit_code in (0, 3), result.output  # (the neuron target asks a training plan for a cache check)
    assert "would be skipped" not in result.output and "BF16" not in result.output, result.output


def test_a_bf16_training_plan_is_revised_with_loss_and_grad_not_a_task(tmp_path: Path) -> None:
    bf16 = "[tolerances.bfloat16]\natol = 2e-2\nrtol = 2e-2\n"
    out = tmp_path / "revised.toml"
    plan = _training_plan(tmp_path, bf16)
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(out)])
    assert result.exit_code == 3, result.output
    assert "no declared BF16 loss and gradient tolerances" in result.output
    revised = tomllib.loads(out.read_text(encoding="utf-8"))["tolerances"]["bfloat16"]
    assert revised["atol"] == 2e-2 and revised["rtol"] == 2e-2  # the owner's, kept
    assert "task" not in revised and set(revised) >= {"loss", "grad"} and revised["proposed"] is True
    again = CliRunner().invoke(main, ["plan-check", str(out), "--target", "neuron"])
    assert again.exit_code == 3, again.output  # only the proposal is left to agree
    assert "proposed value(s) not yet agreed" in again.output and "declare loss and grad instead" not in again.output


def test_an_fp16_only_plan_is_asked_for_fp32_first(tmp_path: Path) -> None:
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    text = text.replace('module = "tiny_encoder.py"', f'module = "{WORKLOADS / "tiny_encoder.py"}"')
    text = text.replace('dtypes = ["float32"]', 'dtypes = ["float16"]')
    text = text.replace("[tolerances.float32]", "[tolerances.float16]")
    plan = tmp_path / "fp16.toml"
    plan.write_text(text, encoding="utf-8")
    out = tmp_path / "revised.toml"
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(out)])
    assert "[REVISE] FP16 is planned without FP32 first" in result.output, result.output
    assert tomllib.loads(out.read_text(encoding="utf-8"))["matrix"]["dtypes"] == ["float32", "float16"]


def test_a_generation_plans_proposed_task_asks_every_step_to_agree(tmp_path: Path) -> None:
    text = (WORKLOADS / "scenario_a.toml").read_text(encoding="utf-8")
    steps = tomllib.loads(text)["generation"]["decode_steps"]
    text = text.replace('module = "decoder_lm.py"', f'module = "{WORKLOADS / "decoder_lm.py"}"')
    task = 'task = { metric = "greedy_steps_agreeing", op = ">=", threshold = 8 }\n'
    assert text.count(task) == 1  # bfloat16's (float32's threshold differs)
    text = text[: text.rindex(task)] + text[text.rindex(task) + len(task) :]
    plan = tmp_path / "gen.toml"
    plan.write_text(text, encoding="utf-8")
    out = tmp_path / "revised.toml"
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(out)])
    assert "no declared BF16 task criterion" in result.output, result.output
    task = tomllib.loads(out.read_text(encoding="utf-8"))["tolerances"]["bfloat16"]["task"]
    assert task == {"metric": "greedy_steps_agreeing", "op": ">=", "threshold": steps + 1}


def _scenario_a(tmp_path: Path, extra: str) -> Path:
    text = (WORKLOADS / "scenario_a.toml").read_text(encoding="utf-8")
    text = text.replace('module = "decoder_lm.py"', f'module = "{WORKLOADS / "decoder_lm.py"}"') + extra
    plan = tmp_path / "scenario_a.toml"
    plan.write_text(text, encoding="utf-8")
    return plan


def test_a_generation_plans_revision_keeps_its_request_lengths(tmp_path: Path) -> None:
    """Revising Scenario A for another reason (compile.dynamic) replaced its requests 96, 240, 480
    and 600 by the buckets 128, 256 and 512, unsaid: the revised run would test no padding and no
    refused request, and plan-check then called it compatible. The collector routes each request
    to its bucket itself: the lengths stay as written."""
    plan = _scenario_a(tmp_path, "\n[compile]\ndynamic = true\nfullgraph = true\n")
    out = tmp_path / "revised.toml"
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(out)])
    assert "compile.dynamic = true is not supported on neuron" in result.output, result.output
    original, revised = (tomllib.loads(p.read_text(encoding="utf-8"))["matrix"] for p in (plan, out))
    assert revised["shapes"] == original["shapes"] == [[1, 96], [1, 240], [1, 480], [1, 600]]
    assert revised["cache_checks"] == original["cache_checks"]


def test_a_generation_plans_compilations_count_its_decode_graph(tmp_path: Path) -> None:
    """Its expected compilations were revised to one per bucket (3), where the plan-check's own
    note counts one prefill graph per bucket and one decode graph (4)."""
    text = (WORKLOADS / "scenario_a.toml").read_text(encoding="utf-8")
    assert "expected_compilations" not in text
    plan = _scenario_a(tmp_path, "")
    plan.write_text(
        plan.read_text(encoding="utf-8").replace("[workload]\n", "[workload]\nexpected_compilations = 2\n", 1)
    )
    out = tmp_path / "revised.toml"
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(out)])
    assert "expects 2 compilation(s) for 3 prefill bucket(s) and one decode graph" in result.output, result.output
    assert tomllib.loads(out.read_text(encoding="utf-8"))["workload"]["expected_compilations"] == 4


def test_a_revised_plan_the_schema_refuses_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The revision of a bf16 training plan (since fixed) was refused by the plan schema when read
    back, and the command said only 'wrote r.toml': the check of the written file swallowed it."""
    from collector.plan import PlanError
    from reportgen.judge import plancheck

    real = plancheck.review_plan
    calls: list[Path] = []

    def review(path: Path, *args: object, **kwargs: object) -> object:
        calls.append(Path(path))
        if len(calls) == 2:  # the written revision, read back
            raise PlanError(f"{path}:12: tolerances.bfloat16.task: a training plan compares loss and gradients")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(plancheck, "review_plan", review)
    plan = _scenario_a(tmp_path, "\n[compile]\ndynamic = true\n")
    out = tmp_path / "revised.toml"
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(out)])
    assert len(calls) == 2 and out.is_file(), result.output
    assert (
        f"  the revised plan does not pass the plan schema, revise it by hand: {out}:12: "
        "tolerances.bfloat16.task: a training plan compares loss and gradients"
    ) in result.stderr.splitlines()


def test_training_criteria_that_cannot_fail_are_said_whatever_atol_and_rtol_say() -> None:
    """Loss and grad tolerances of rtol 1 pass any output, but a tight atol/rtol beside them (which
    no training cell is judged by) made the criteria 'able to fail': plan-check said compatible
    and the report passed the cell."""
    from reportgen.judge.criterion_power import cannot_fail

    loose = {"atol": 1e-5, "rtol": 1e-4, "loss": {"atol": 0, "rtol": 1}, "grad": {"atol": 0, "rtol": 1}}
    assert [why.split(" passes")[0] for why in cannot_fail("float32", loose)] == [
        "tolerances.float32.loss.rtol = 1",
        "tolerances.float32.grad.rtol = 1",
    ]
    tight_loss = {**loose, "loss": {"atol": 1e-6, "rtol": 1e-5}}
    assert cannot_fail("float32", tight_loss) == []
    inference = {"atol": 0, "rtol": 1}  # no loss and grad: atol and rtol are the criterion
    assert cannot_fail("float32", inference) != []


def test_a_reference_less_precise_than_a_cell_is_revised(tmp_path: Path) -> None:
    """A float64 plan (requires_float64) whose reference ran in float16 was 'Compatible, no
    findings': every float64 cell would have been judged against float16 values."""
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    text = text.replace('module = "tiny_encoder.py"', f'module = "{WORKLOADS / "tiny_encoder.py"}"')
    text = text.replace('dtypes = ["float32"]', 'dtypes = ["float32", "bfloat16"]')
    assert '[reference]\ndtype = "float32"\n' in text
    text = text.replace('[reference]\ndtype = "float32"\n', '[reference]\ndtype = "bfloat16"\n', 1)
    text = text.replace(
        "[timing]",
        '[tolerances.bfloat16]\natol = 1e-2\nrtol = 1.6e-2\ntask = { metric = "min_cosine_to_reference", op = ">=", threshold = 0.99 }\n\n[timing]',
    )
    plan = tmp_path / "plan.toml"
    plan.write_text(text, encoding="utf-8")
    out = tmp_path / "revised.toml"
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "cpu", "--write-revised", str(out)])
    assert "[REVISE] the reference computes in bfloat16, less precise than the planned float32 cells" in result.output
    assert tomllib.loads(out.read_text(encoding="utf-8"))["reference"]["dtype"] == "float32"


def test_dynamic_shapes_on_a_target_without_them_ask_for_a_ladder(tmp_path: Path) -> None:
    """compile.dynamic = true says the owner expects lengths to vary; on neuron the revision set
    it false and then called the plan compatible with three unpadded lengths, each a compile of
    its own, with no ladder proposed. Where the target takes dynamic shapes (cuda), none is asked."""
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    text = text.replace('module = "tiny_encoder.py"', f'module = "{WORKLOADS / "tiny_encoder.py"}"')
    padding = text[text.index("[padding]") : text.index("[reference]")]
    text = text.replace(padding, "").replace(
        "shapes = [[1, 16], [1, 32], [2, 16]]", "shapes = [[1, 10], [1, 30], [2, 10]]"
    )
    text = (
        text.replace("cache_checks = [[1, 16]]", "cache_checks = [[1, 10]]")
        + "\n[compile]\ndynamic = true\nfullgraph = true\n"
    )
    plan = tmp_path / "plan.toml"
    plan.write_text(text, encoding="utf-8")
    neuron = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron"])
    assert "[REVISE] request lengths are not padded to a fixed set of buckets" in neuron.output, neuron.output
    cuda = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "cuda"])
    assert "not padded" not in cuda.output, cuda.output


def test_a_value_range_the_dtype_cannot_hold_is_a_plan_error(tmp_path: Path) -> None:
    """An int32 input declared [-5000000000, 10] and an int8 one [0, 1000] drew no finding: the
    range contradicts the dtype, so the plan's own facts cannot both be true."""
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    text = text.replace('module = "tiny_encoder.py"', f'module = "{WORKLOADS / "tiny_encoder.py"}"')
    text += '\n[inputs.offsets]\ndtype = "int8"\nlayout = "contiguous"\nvalue_range = [0, 1000]\n'
    plan = tmp_path / "plan.toml"
    plan.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "cpu"])
    assert result.exit_code == 1, result.output
    line = len(text.splitlines())
    assert f"{plan}:{line}: inputs.offsets.value_range: [0, 1000] does not fit int8 (-128 to 127)" in result.output


def test_a_compile_option_finding_points_at_its_own_key(tmp_path: Path) -> None:
    """compile.dynamic and compile.mode findings both said 'where: compile (line N)', the table's
    line, not their own keys'."""
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    text = text.replace('module = "tiny_encoder.py"', f'module = "{WORKLOADS / "tiny_encoder.py"}"')
    text += '\n[compile]\nfullgraph = true\nmode = "max-autotune"\ndynamic = true\n'
    plan = tmp_path / "plan.toml"
    plan.write_text(text, encoding="utf-8")
    lines = text.splitlines()
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron"])
    for key, line in (("compile.mode", 'mode = "max-autotune"'), ("compile.dynamic", "dynamic = true")):
        assert f"where: {key} (line {lines.index(line) + 1})" in result.output, result.output
