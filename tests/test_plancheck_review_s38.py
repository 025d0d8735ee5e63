"""Held-out plans, a second outside review of plan-check: dynamic shapes on a target that takes
them were asked for a ladder and a compilation per shape; unpadded masks on padded lengths drew
no finding; a revised plan whose criteria were still missing (or could not fail) ran, its added
cells skipped; a reject policy was read as truncation, and a generation plan's revision was said
to test a length it keeps."""

from __future__ import annotations

import tomllib
from pathlib import Path

from click.testing import CliRunner

from collector.plan import PlanError, load_plan
from reportgen.cli import main
from tests.conftest import REPO

WORKLOADS = REPO / "collector" / "workloads"


def _plan(tmp_path: Path, name: str, edit=lambda text: text) -> Path:
    text = (WORKLOADS / f"{name}.toml").read_text(encoding="utf-8")
    text = text.replace(f'module = "{name}.py"', f'module = "{WORKLOADS / (name + ".py")}"')
    plan = tmp_path / f"{name}.toml"
    plan.write_text(edit(text), encoding="utf-8")
    return plan


def _check(plan: Path, target: str, revised: Path | None = None) -> tuple[int, str]:
    args = ["plan-check", str(plan), "--target", target] + (["--write-revised", str(revised)] if revised else [])
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def _refused_by_the_collector(revised: Path) -> str:
    try:
        load_plan(revised)
    except PlanError as exc:
        return str(exc)
    return ""


def test_dynamic_shapes_on_a_target_that_takes_them_ask_no_ladder_nor_a_compilation_per_shape(tmp_path: Path) -> None:
    """Varying lengths compiled with dynamic = true on cuda: one graph may serve several lengths
    (torch specialises batch 1: 2 frames over these 4 shapes), as the owner's 2 said; plan-check
    asked a ladder and 4 compilations, citing the dynamic=False rule."""

    def edit(text: str) -> str:
        padding = text[text.index("[padding]") : text.index("[reference]")]
        text = text.replace(padding, "").replace(
            "shapes = [[1, 16], [1, 32], [2, 16]]", "shapes = [[1, 37], [1, 200], [4, 37], [4, 480]]"
        )
        text = text.replace("cache_checks = [[1, 16]]", "cache_checks = [[1, 37]]")
        text = text.replace(
            "requirements = []", "requirements = []\nvariable_lengths = true\nexpected_compilations = 2"
        )
        return text + "\n[compile]\ndynamic = true\nfullgraph = true\n"

    plan = _plan(tmp_path, "tiny_encoder", edit)
    code, output = _check(plan, "cuda")
    assert code == 0, output
    assert "not padded" not in output and "compilation(s) for 4 shapes" not in output
    code, output = _check(plan, "neuron")  # no dynamic shapes there: the ladder is asked, as before
    assert code == 3 and "[REVISE] request lengths are not padded to a fixed set of buckets" in output


def test_padded_lengths_with_unpadded_masks_are_revised(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "tiny_encoder", lambda t: t.replace("mask_padded = true", "mask_padded = false"))
    revised = tmp_path / "revised.toml"
    code, output = _check(plan, "neuron", revised)
    assert code == 3 and "[REVISE] padded lengths with the attention masks not padded (mask_padded = false)" in output
    assert "where: padding.mask_padded" in output
    padding = tomllib.loads(revised.read_text(encoding="utf-8"))["padding"]
    assert padding["mask_padded"] is True and padding["proposed"] is True
    assert "padding.proposed" in _refused_by_the_collector(revised)
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    code, output = _check(_plan(shipped, "tiny_encoder"), "neuron")
    assert "mask_padded" not in output


def test_a_revised_plan_whose_added_cells_lack_criteria_is_refused_until_they_are_agreed(tmp_path: Path) -> None:
    """A BF16-only training plan: the revision added float32 first but no float32 loss and grad
    tolerances, and the collector ran it, skipping every float32 cell. Now they are proposed
    (the seed's FP32 criterion for each part), marked, and the collector refuses the plan."""

    def bf16_only(text: str) -> str:
        text = text.replace('dtypes = ["float32"]', 'dtypes = ["bfloat16"]')
        start = text.index("[tolerances.float32]")
        end = text.index("\n[", start + 1)
        return (
            text[:start]
            + "[tolerances.bfloat16]\natol = 2e-2\nrtol = 2e-2\nloss = { atol = 1e-2, rtol = 1e-2 }\ngrad = { atol = 5e-2, rtol = 5e-2 }\n"
            + text[end:]
        )

    plan = _plan(tmp_path, "tiny_classifier", bf16_only)
    revised = tmp_path / "revised.toml"
    code, output = _check(plan, "neuron", revised)
    assert code == 3 and "every float32 cell would be skipped" in output
    assert "the revised plan proposes values to review, marked proposed = true" in output
    fp32 = tomllib.loads(revised.read_text(encoding="utf-8"))["tolerances"]["float32"]
    assert fp32["proposed"] is True and fp32["loss"] == {"atol": 1e-5, "rtol": 1e-4} and "grad" in fp32
    assert "tolerances.float32.proposed" in _refused_by_the_collector(revised)
    again, text = _check(revised, "neuron")
    assert again == 3 and "every float32 cell would be skipped" not in text


def test_criteria_that_cannot_fail_are_marked_in_the_revised_plan(tmp_path: Path) -> None:
    def loose(text: str) -> str:
        return text.replace("atol = 1e-5\nrtol = 1e-4", "atol = 1e9\nrtol = 10").replace(
            "threshold = 0.99999", "threshold = -1"
        )

    plan = _plan(tmp_path, "tiny_encoder", loose)
    revised = tmp_path / "revised.toml"
    code, output = _check(plan, "cpu", revised)
    assert code == 3 and "the float32 criteria cannot fail" in output
    fp32 = tomllib.loads(revised.read_text(encoding="utf-8"))["tolerances"]["float32"]
    assert fp32["atol"] == 1e9 and fp32["proposed"] is True, "kept as declared, marked"
    assert "tolerances.float32.proposed" in _refused_by_the_collector(revised)


def test_a_reject_policy_tests_no_length_in_place_of_a_rejected_one(tmp_path: Path) -> None:
    """Under 'reject', a length above the largest bucket reaches no model: the finding said the
    largest bucket was the shape that reaches it, and the revision tested 32 in place of 40."""
    plan = _plan(
        tmp_path,
        "tiny_encoder",
        lambda t: t.replace("shapes = [[1, 16], [1, 32], [2, 16]]", "shapes = [[1, 16], [1, 32], [2, 16], [1, 40]]"),
    )
    revised = tmp_path / "revised.toml"
    code, output = _check(plan, "neuron", revised)
    assert code == 3 and "refuses such a request: no shape of it reaches the model" in output
    assert "is the shape that reaches the model" not in output
    shapes = tomllib.loads(revised.read_text(encoding="utf-8"))["matrix"]["shapes"]
    assert [1, 40] not in shapes and sorted(map(tuple, shapes)) == [(1, 16), (1, 32), (2, 16)]


def test_a_generation_plan_s_missing_policy_does_not_promise_a_length_it_keeps(tmp_path: Path) -> None:
    def edit(text: str) -> str:
        lines = [line for line in text.splitlines() if not line.startswith("above_largest")]
        return "\n".join(lines) + "\n"

    plan = _plan(tmp_path, "decoder_lm", edit)
    revised = tmp_path / "revised.toml"
    code, output = _check(plan, "neuron", revised)
    assert "[REVISE] no policy for requests above the largest bucket" in output, output
    assert "tests 16 in their place" not in output
    assert "requests of [20] tokens are above it: with no policy the collector refuses them, untested" in output
    assert [1, 20] in tomllib.loads(revised.read_text(encoding="utf-8"))["matrix"]["shapes"]


def test_a_cache_check_of_the_last_shape_alone_is_revised_as_a_missing_one(tmp_path: Path) -> None:
    """A fifth review: a plan whose only cache check tests nothing read compatible (exit 0, a
    note), while one without a check needed revising (exit 3): the run holds no cache check
    either way, the collector skipping the idle repeat."""
    plan = _plan(tmp_path, "tiny_encoder", lambda t: t.replace("cache_checks = [[1, 16]]", "cache_checks = [[2, 16]]"))
    revised = tmp_path / "revised.toml"
    code, output = _check(plan, "cpu", revised)
    assert code == 3 and "[REVISE] the cache check of [2, 16] tests no cache" in output, output
    assert "Repeat [1, 16] instead" in output
    assert tomllib.loads(revised.read_text(encoding="utf-8"))["matrix"]["cache_checks"] == [[1, 16]]
    assert "tests no cache" not in _check(revised, "cpu")[1]
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    assert "tests no cache" not in _check(_plan(shipped, "tiny_encoder"), "cpu")[1]
    # What matters is the order the collector runs them in: a repeat of the first shape after the
    # last one tests that the first graph survived (a third review: the largest shape was blamed).
    first = tmp_path / "first"
    first.mkdir()
    reordered = _plan(
        first,
        "tiny_encoder",
        lambda t: t.replace("shapes = [[1, 16], [1, 32], [2, 16]]", "shapes = [[2, 16], [1, 16]]").replace(
            "cache_checks = [[1, 16]]", "cache_checks = [[2, 16]]"
        ),
    )
    assert "tests no cache" not in _check(reordered, "cpu")[1]


def test_no_task_criterion_is_proposed_on_a_metric_whose_direction_is_not_known(tmp_path: Path) -> None:
    """A third review: the float64 cells scenario B's revision added were proposed
    'max_rel_error_to_float64_reference >= 0.99999', a threshold that fails a right output and
    passes a wrong one (the metric is an error: lower is better)."""
    revised = tmp_path / "revised.toml"
    code, output = _check(REPO / "tests" / "plans" / "scenario_b.toml", "cpu", revised)
    tolerances = tomllib.loads(revised.read_text(encoding="utf-8"))["tolerances"]
    for dtype, table in tolerances.items():
        task = table.get("task")
        if task and "error" in task["metric"]:
            assert task["op"] == "<=", (dtype, task)


def test_a_reject_policy_over_every_length_leaves_the_matrix_to_the_owner(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        "tiny_encoder",
        lambda t: t.replace("shapes = [[1, 16], [1, 32], [2, 16]]", "shapes = [[1, 40], [2, 48]]").replace(
            "cache_checks = [[1, 16]]", "cache_checks = [[1, 40]]"
        ),
    )
    revised = tmp_path / "revised.toml"
    code, output = _check(plan, "neuron", revised)
    assert "does not pass the plan schema" not in output
    assert tomllib.loads(revised.read_text(encoding="utf-8"))["matrix"]["shapes"] == [[1, 40], [2, 48]]


def test_a_plan_s_line_numbers_count_lines_as_toml_does(tmp_path: Path) -> None:
    """A U+2028 in a string ended a line for str.splitlines: every later key's line was one on."""
    plan = _plan(
        tmp_path,
        "tiny_encoder",
        lambda t: t.replace("Two-layer", "Two\u2028layer", 1).replace('dtypes = ["float32"]', 'dtypes = ["float33"]'),
    )
    line = next(n for n, text in enumerate(plan.read_text(encoding="utf-8").split("\n"), 1) if "float33" in text)
    code, output = _check(plan, "cpu")
    assert code == 1 and f"{plan.name}:{line}: matrix.dtypes" in output, output


def test_a_dynamic_plan_s_missing_cache_check_cites_no_static_shape_rule(tmp_path: Path) -> None:
    def edit(text: str) -> str:
        padding = text[text.index("[padding]") : text.index("[reference]")]
        text = text.replace(padding, "").replace("cache_checks = [[1, 16]]\n", "")
        return text + "\n[compile]\ndynamic = true\nfullgraph = true\n"

    code, output = _check(_plan(tmp_path, "tiny_encoder", edit), "cuda")
    assert "[REVISE] no cache check" in output and "dynamic=False" not in output, output


def test_a_generation_plan_s_cache_check_is_judged_by_the_buckets_it_compiles(tmp_path: Path) -> None:
    """A fourth review: the note compared shapes, so a repeat the collector skips (a refused
    request after it, or one padded to the same bucket) drew none, and its advice named a
    refused request."""
    for shapes, idle in (("[[1, 6], [1, 20]]", True), ("[[1, 6], [1, 7]]", True), ("[[1, 6], [1, 12]]", False)):
        folder = tmp_path / shapes.replace(" ", "").replace(",", "_").strip("[]")
        folder.mkdir()
        plan = _plan(
            folder,
            "decoder_lm",
            lambda t, shapes=shapes: t.replace("shapes = [[1, 6], [1, 12], [1, 20]]", f"shapes = {shapes}"),
        )
        output = _check(plan, "neuron")[1]
        assert ("the cache check of [1, 6] tests no cache" in output) == idle, (shapes, output)
        assert "e.g. [1, 20]" not in output


def test_a_missing_cache_check_is_proposed_on_a_shape_with_another_graph_after_it(tmp_path: Path) -> None:
    """A fourth review: with the smallest shape last, the proposal repeated the last shape, which
    plan-check then noted and the collector skipped."""
    plan = _plan(
        tmp_path,
        "tiny_encoder",
        lambda t: t.replace("shapes = [[1, 16], [1, 32], [2, 16]]", "shapes = [[2, 16], [1, 32], [1, 16]]").replace(
            "cache_checks = [[1, 16]]\n", ""
        ),
    )
    revised = tmp_path / "revised.toml"
    code, output = _check(plan, "cpu", revised)
    assert "[REVISE] no cache check" in output
    checks = tomllib.loads(revised.read_text(encoding="utf-8"))["matrix"]["cache_checks"]
    assert checks and checks[0] != [1, 16], checks
    assert "tests no cache" not in _check(revised, "cpu")[1]


def test_an_idle_check_beside_one_that_tests_the_cache_is_to_be_dropped(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path, "tiny_encoder", lambda t: t.replace("cache_checks = [[1, 16]]", "cache_checks = [[1, 16], [2, 16]]")
    )
    output = _check(plan, "cpu")[1]
    assert "[NOTE] the cache check of [2, 16] tests no cache" in output
    assert "Drop it: the cache check of [1, 16] tests the cache." in output


def _encoder_with_metric(folder: Path, metric: str, bf16: str) -> Path:
    module = (WORKLOADS / "tiny_encoder.py").read_text(encoding="utf-8")
    module = module.replace('TASK_METRIC = "min_cosine_to_reference"', f'TASK_METRIC = "{metric}"')
    assert f'TASK_METRIC = "{metric}"' in module
    (folder / "enc.py").write_text(module, encoding="utf-8")
    text = (
        (WORKLOADS / "tiny_encoder.toml")
        .read_text(encoding="utf-8")
        .replace('module = "tiny_encoder.py"', 'module = "enc.py"')
    )
    start = text.index("[tolerances.float32]")
    end = text.index("\n[", start + 1)
    text = text[:start] + "[tolerances.float32]\natol = 1e-5\nrtol = 1e-4\n" + bf16 + text[end:]
    text = text.replace('dtypes = ["float32"]', 'dtypes = ["float32", "bfloat16"]')
    plan = folder / "plan.toml"
    plan.write_text(text, encoding="utf-8")
    return plan


def test_a_task_criterion_is_proposed_only_on_a_metric_named_as_a_similarity(tmp_path: Path) -> None:
    """A fourth review: 'max_cosine_distance >= 0.99' was proposed (a distance read as a cosine by
    a substring); a cosine similarity still gets its proposal, and the finding says which."""
    for metric, proposed in (("max_cosine_distance", False), ("min_cosine_to_reference", True)):
        folder = tmp_path / metric
        folder.mkdir()
        plan = _encoder_with_metric(folder, metric, "\n[tolerances.bfloat16]\natol = 1e-2\nrtol = 1e-2\n")
        revised = folder / "revised.toml"
        code, output = _check(plan, "cpu", revised)
        bf16 = tomllib.loads(revised.read_text(encoding="utf-8"))["tolerances"]["bfloat16"]
        assert ("task" in bf16) == proposed, (metric, bf16)
        if proposed:
            assert bf16["task"] == {"metric": metric, "op": ">=", "threshold": 0.99}
        else:
            assert "the task criterion is the owner's to write" in output
            assert "proposes values to review" not in output.split("no declared BF16")[1].split("[")[0]


def test_a_revision_that_maps_the_cache_check_onto_the_last_bucket_proposes_one_that_tests(tmp_path: Path) -> None:
    """A fifth review: the bucket ladder mapped [[2, 20], [1, 30]] to [[1, 32], [2, 32]] and the
    check of [2, 20] to [2, 32], the last shape: a check that tests nothing, which the revised
    plan then held as compatible."""
    plan = _plan(
        tmp_path,
        "tiny_encoder",
        lambda t: t.replace("shapes = [[1, 16], [1, 32], [2, 16]]", "shapes = [[2, 20], [1, 30]]").replace(
            "cache_checks = [[1, 16]]", "cache_checks = [[2, 20]]"
        ),
    )
    revised = tmp_path / "revised.toml"
    _check(plan, "neuron", revised)
    matrix = tomllib.loads(revised.read_text(encoding="utf-8"))["matrix"]
    assert matrix["cache_checks"] and matrix["cache_checks"][0] != matrix["shapes"][-1], matrix
    assert "tests no cache" not in _check(revised, "neuron")[1]
