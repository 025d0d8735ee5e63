"""plan-check against held-out plans, as a fifth review wrote them: a lower precision's task
criterion that cannot fail, and what an inspection predicts for a plan's own dtypes."""

from __future__ import annotations

from pathlib import Path

from tests.test_plancheck_review_s38 import _check, _plan

BF16 = """
[tolerances.bfloat16]
atol = 5e-2
rtol = 5e-2
task = { metric = "min_cosine_to_reference", op = ">=", threshold = THRESHOLD }
"""


def _bf16_plan(tmp_path: Path, threshold: str) -> Path:
    def edit(text: str) -> str:
        text = text.replace('dtypes = ["float32"]', 'dtypes = ["float32", "bfloat16"]')
        head, tail = text.split("[timing]", 1)
        return head + BF16.replace("THRESHOLD", threshold) + "\n[timing]" + tail

    return _plan(tmp_path, "tiny_encoder", edit)


def test_a_lower_precisions_task_criterion_that_cannot_fail_is_revised_as_a_missing_one(tmp_path: Path) -> None:
    """A cosine of at least -1 holds for any output: it read 'compatible' (exit 0, a note) while
    leaving the criterion out, as the note advised, read exit 3. BF16 needs a task criterion of
    its own (the seed): one that cannot fail is none."""
    code, output = _check(_bf16_plan(tmp_path, "-1"), "neuron")
    assert code == 3 and "[REVISE] the bfloat16 task criterion judges nothing" in output, output
    assert "or leave the criterion out" not in output
    sound = tmp_path / "sound"
    sound.mkdir()
    code, output = _check(_bf16_plan(sound, "0.99"), "neuron")
    assert "bfloat16 task criterion" not in output, output


def test_a_bf16_training_plan_that_declares_its_loss_tolerance_is_told_only_the_gradient_is_missing(
    tmp_path: Path,
) -> None:
    """The title said "no declared BF16 loss and gradient tolerances" where the plan declared the
    loss tolerance (the revision kept it)."""

    def edit(text: str) -> str:
        text = text.replace('dtypes = ["float32"]', 'dtypes = ["float32", "bfloat16"]')
        head, tail = text.split("[timing]", 1)
        return (
            head
            + "[tolerances.bfloat16]\natol = 5e-2\nrtol = 5e-2\nloss = { atol = 1e-2, rtol = 1e-2 }\n\n[timing]"
            + tail
        )

    code, output = _check(_plan(tmp_path, "tiny_classifier", edit), "neuron")
    assert "[REVISE] no declared BF16 gradient tolerance" in output, output
    assert "loss and gradient tolerances" not in output.split("\n", 2)[1]


def test_a_compilation_count_over_proposed_buckets_says_so(tmp_path: Path) -> None:
    """'expects 1 compilation(s) for 2 shapes' beside a plan of three: the count was of the shapes
    the proposed ladder pads them to."""

    def edit(text: str) -> str:
        text = text.replace("shapes = [[1, 16], [1, 32], [2, 16]]", "shapes = [[1, 16], [1, 20], [1, 30]]")
        return text.replace("[matrix]", "[matrix]", 1).replace(
            "requirements = []", "requirements = []\nexpected_compilations = 1", 1
        )

    code, output = _check(_plan(tmp_path, "tiny_encoder", edit), "neuron")
    assert "expects 1 compilation(s) for 2 shapes once padded to the buckets" in output, output


def test_a_declared_bucket_no_cell_tests_is_named_and_the_largest_added(tmp_path: Path) -> None:
    """A review: buckets [16, 32, 64] with every shape at 16 read 'compatible, no findings'; the
    largest bucket, the real maximum request shape the service compiles, was never tested."""
    import tomllib

    def edit(text: str) -> str:
        text = text.replace("shapes = [[1, 16], [1, 32], [2, 16]]", "shapes = [[1, 16], [4, 16]]")
        return text.replace("buckets = [16, 32]", "buckets = [16, 32, 64]").replace(
            "longer than 32 tokens", "longer than 64 tokens"
        )

    plan = _plan(tmp_path, "tiny_encoder", edit)
    assert "buckets = [16, 32, 64]" in plan.read_text(encoding="utf-8")
    revised = tmp_path / "revised.toml"
    code, output = _check(plan, "neuron", revised)
    assert code == 3 and "[REVISE] the largest declared bucket (64) is never tested" in output, output
    assert "(nor to [32])" in output
    assert [1, 64] in tomllib.loads(revised.read_text(encoding="utf-8"))["matrix"]["shapes"]
    # Every bucket tested: no such finding.
    whole = tmp_path / "whole"
    whole.mkdir()
    assert "never tested" not in _check(_plan(whole, "tiny_encoder"), "neuron")[1]
