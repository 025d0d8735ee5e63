"""`reportgen plan-check`: the seed's scenarios and the shipped workloads classify as the seed reasons."""

from __future__ import annotations

import re

import json
import os
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import tomli_w
from click.testing import CliRunner

from collector.plan import PlanError, load_plan
from reportgen.cli import main
from reportgen.judge.plancheck import (
    plan_toml,
    LISTED,
    _map_lengths,
    bucket_for,
    listed,
    review_plan,
    stated_task_metric,
    write_revised,
)
from tests.conftest import REPO

PLANS = REPO / "tests" / "plans"
WORKLOADS = REPO / "collector" / "workloads"


def test_bucket_ladder() -> None:
    assert [bucket_for(n) for n in (96, 240, 480, 128, 513)] == [128, 256, 512, 128, 1024]


def test_scenario_a_needs_a_revised_plan() -> None:
    review = review_plan(PLANS / "scenario_a.toml", "neuron")
    assert review.classification == "revise"
    titles = " | ".join(f.title for f in review.findings)
    for expected in (
        "not padded to a fixed set of buckets",
        "above the largest bucket",
        "expects 1 compilation(s) for 3 shapes",
        "without FP32 first",
        "BF16 tolerance and task criterion",
        "layout the real preprocessing produces is not declared",
        "no cache check",
    ):
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


@pytest.mark.parametrize(
    "name,expected",
    [("tiny_encoder.toml", "compatible"), ("minilm.toml", "compatible"), ("heat_solver.toml", "blocked")],
)
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


def test_writing_a_revised_plan_names_what_it_left_for_the_owner(tmp_path: Path) -> None:
    """A float16 cell without criteria: the revised plan proposes no float16 tolerance (no value
    stands behind one), and was written as if complete; plan-check of it said the same finding
    again (careless user review, finding 5). Writing it now names what it did not revise."""
    plan = tmp_path / "plan.toml"
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    text = text.replace('module = "tiny_encoder.py"', f'module = "{WORKLOADS / "tiny_encoder.py"}"')
    text = text.replace('dtypes = ["float32"]', 'dtypes = ["float32", "float16"]')
    assert '"float16"' in text
    plan.write_text(text, encoding="utf-8")
    out = tmp_path / "revised.toml"
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "cpu", "--write-revised", str(out)])
    assert result.exit_code == 3, result.output
    assert f"wrote {out}" in result.stderr
    assert (
        "not revised, for the owner to write: every float16 cell would be skipped (tolerances.float16)" in result.stderr
    )


def test_a_revised_plan_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "no-such-folder" / "revised.toml"
    args = ["plan-check", str(PLANS / "scenario_a.toml"), "--target", "neuron", "--write-revised", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and not isinstance(result.exception, OSError), result.output
    # Said before the review (before, after it was printed whole: 'cannot write ...: No such file').
    assert result.stderr.splitlines() == [
        f"reportgen plan-check: --write-revised {out}: its folder {out.parent} does not exist: "
        "make it first, or name a file in another"
    ]
    assert result.stdout == "" and not out.parent.exists()


def test_a_revised_plan_replaces_no_file_of_the_owners(tmp_path: Path) -> None:
    """A review: `--write-revised tiny_encoder.py` replaced the plan's own workload module with
    TOML (the review then said the module defines nothing), and `--write-revised insp.jsonl` the
    inspection log it read. A file that exists is replaced only where plan-check revised it."""
    module = tmp_path / "tiny_encoder.py"
    module.write_bytes((WORKLOADS / "tiny_encoder.py").read_bytes())
    plan = tmp_path / "plan.toml"
    text = (PLANS / "scenario_a.toml").read_text(encoding="utf-8")
    plan.write_text(re.sub(r'module = "[^"]*"', 'module = "tiny_encoder.py"', text), encoding="utf-8")
    before = module.read_bytes()
    args = ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(module)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr.splitlines() == [
        f"reportgen plan-check: --write-revised {module} exists and is not a plan that plan-check revised "
        "(it would be replaced): name a new file, or move it away first"
    ]
    assert module.read_bytes() == before
    # A plan it revised before is replaced by the new revision, as before; so is an empty file
    # (one mktemp made: nothing to lose, a review of the first version).
    out = tmp_path / "revised.toml"
    out.touch()
    for _ in range(2):
        result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(out)])
        assert result.exit_code == 3 and f"wrote {out}" in result.stderr, result.output


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


# --- issue 16: plan-check decisions follow what the plan declares ----------------------------------

TINY_MODULE = str(WORKLOADS / "tiny_encoder.py")


def _write(tmp_path: Path, body: str, name: str = "plan.toml") -> Path:
    path = tmp_path / name
    path.write_text(f'[workload]\nname = "w"\nmodule = "{TINY_MODULE}"\n' + body, encoding="utf-8")
    return path


FIXED = '[matrix]\nshapes = [[1, 128]]\nmodes = ["eager", "compiled"]\n'
IDS = '[inputs.input_ids]\ndtype = "int64"\nlayout = "{layout}"\n{extra}value_range = [0, {top}]\n'


def _ids(layout: str = "contiguous", top: int = 30521, how: str | None = None) -> str:
    return IDS.format(layout=layout, top=top, extra=f'how = "{how}"\n' if how else "")


def _cli(path: Path, target: str = "neuron") -> int:
    return CliRunner().invoke(main, ["plan-check", str(path), "--target", target]).exit_code


def test_fixed_shape_contiguous_compiled_plan_is_compatible(tmp_path: Path) -> None:
    path = _write(tmp_path, FIXED + _ids())
    review = review_plan(path, "neuron")
    assert review.classification == "compatible", [f.title for f in review.findings]
    assert not [f for f in review.findings if f.id == "noncontiguous-copy"], (
        "no layout case demanded of contiguous preprocessing"
    )
    assert _cli(path) == 0


def test_a_plan_whose_module_is_not_beside_it_is_said_so_before_any_hardware_time(tmp_path: Path) -> None:
    """plan-check read such a plan as 'Compatible as specified' (exit 0); the collector then
    refused it on the device host ('workload.module: ... does not exist', exit 2). Then a note
    kept it 'Compatible' (exit 0); now it needs a revised plan (exit 3)."""
    path = tmp_path / "plan.toml"
    path.write_text('[workload]\nname = "w"\nmodule = "missing.py"\n' + FIXED + _ids(), encoding="utf-8")
    review = review_plan(path, "neuron")
    (found,) = [f for f in review.findings if f.id == "module-missing"]
    assert (
        found.severity == "revise"
        and found.line == 3
        and f"{tmp_path / 'missing.py'} does not exist here" in found.title
    )
    assert review.classification == "revise" and _cli(path) == 3
    assert not [f for f in review_plan(_write(tmp_path, FIXED + _ids()), "neuron").findings if f.id == "module-missing"]


def test_undeclared_preprocessing_layout_asks_to_declare_it(tmp_path: Path) -> None:
    review = review_plan(_write(tmp_path, FIXED), "neuron")
    found = next(f for f in review.findings if f.id == "noncontiguous-copy")
    assert found.severity == "revise" and "Declare it" in found.first and "[inputs.NAME]" in found.first


def test_noncontiguous_preprocessing_demands_its_layout_case(tmp_path: Path) -> None:
    review = review_plan(_write(tmp_path, FIXED + _ids("noncontiguous", how="slice")), "neuron")
    found = next(f for f in review.findings if f.id == "noncontiguous-copy")
    assert found.severity == "revise" and "input_ids (slice)" in found.detail
    assert review.revised["matrix"]["layouts"] == ["contiguous", "noncontiguous"]
    with_case = review_plan(
        _write(
            tmp_path,
            FIXED.replace("modes", 'layouts = ["contiguous", "noncontiguous"]\nmodes')
            + _ids("noncontiguous", how="slice"),
        ),
        "neuron",
    )
    assert with_case.classification == "compatible"


def test_int64_values_beyond_int32_are_flagged_where_int64_runs_as_int32(tmp_path: Path) -> None:
    wide = _write(tmp_path, FIXED + _ids(top=2**31))
    review = review_plan(wide, "neuron")
    found = next(f for f in review.findings if f.id == "int64-as-int32")
    assert found.severity == "block" and "input_ids" in found.title and found.source == "SRC"
    assert _cli(wide) == 4
    assert review_plan(wide, "cpu").classification == "compatible", "the CPU computes int64 natively"
    fits = review_plan(_write(tmp_path, FIXED + _ids(top=2**31 - 1)), "neuron")
    assert not [f for f in fits.findings if f.id == "int64-as-int32"]


@pytest.mark.parametrize(
    "compile_table,key,allowed",
    [("dynamic = true", "compile.dynamic", False), ('mode = "max-autotune"', "compile.mode", "default")],
)
def test_compile_options_rejected_by_the_target_are_revised(
    tmp_path: Path, compile_table: str, key: str, allowed: object
) -> None:
    path = _write(tmp_path, FIXED + _ids() + f"[compile]\n{compile_table}\n")
    review = review_plan(path, "neuron")
    found = next(f for f in review.findings if key in f.title)
    assert found.severity == "revise" and found.source, "names the constraint's source"
    table, name = key.split(".")
    assert review.revised[table][name] == allowed
    assert _cli(path) == 3
    assert review_plan(path, "cpu").classification == "compatible", "inductor on the CPU takes these options"


def test_declared_bucket_ladder_is_used_as_declared(tmp_path: Path) -> None:
    body = (
        '[matrix]\nshapes = [[1, 100], [1, 300], [1, 700]]\nmodes = ["eager", "compiled"]\ncache_checks = [[1, 100]]\n'
    )
    body += '[padding]\nbuckets = [128, 384, 768]\nabove_largest = "reject requests longer than 768 tokens"\n' + _ids()
    review = review_plan(_write(tmp_path, body), "neuron")
    assert review.revised["padding"]["buckets"] == [128, 384, 768], "never replaced by powers of two"
    assert review.revised["matrix"]["shapes"] == [[1, 128], [1, 384], [1, 768]]
    assert review.revised["matrix"]["cache_checks"] == [[1, 128]]
    assert "proposed" not in review.revised["padding"]
    found = next(f for f in review.findings if "declared buckets" in f.title)
    assert "100 -> 128, 300 -> 384, 700 -> 768" in found.detail


def test_length_above_the_largest_bucket_needs_the_declared_policy(tmp_path: Path) -> None:
    body = (
        '[matrix]\nshapes = [[1, 128], [1, 1000]]\nmodes = ["eager", "compiled"]\ncache_checks = [[1, 128]]\n[padding]\nbuckets = [128, 384, 768]\n'
        + _ids()
    )
    review = review_plan(_write(tmp_path, body), "neuron")
    found = next(f for f in review.findings if f.title == "no policy for requests above the largest bucket")
    assert "[1000]" in found.detail and review.revised["padding"]["above_largest"].startswith("UNDECIDED")
    assert review.revised["matrix"]["shapes"] == [[1, 128], [1, 768]]
    decided = review_plan(
        _write(
            tmp_path,
            body.replace(
                "buckets = [128, 384, 768]\n", 'buckets = [128, 384, 768]\nabove_largest = "truncate to 768 tokens"\n'
            ),
            "decided.toml",
        ),
        "neuron",
    )
    note = next(f for f in decided.findings if "above the largest bucket (768)" in f.title)
    assert "truncate to 768 tokens" in note.detail and decided.revised["matrix"]["shapes"] == [[1, 128], [1, 768]]


def test_variable_lengths_without_a_ladder_get_a_proposed_one(tmp_path: Path) -> None:
    body = (
        '[matrix]\nshapes = [[1, 128], [1, 512]]\nmodes = ["eager", "compiled"]\ncache_checks = [[1, 128]]\n' + _ids()
    )
    path = _write(tmp_path, body)
    path.write_text(
        path.read_text(encoding="utf-8").replace('name = "w"\n', 'name = "w"\nvariable_lengths = true\n'),
        encoding="utf-8",
    )
    review = review_plan(path, "neuron")
    found = next(f for f in review.findings if "no ladder declared" in f.title)
    assert "This is a proposal, not a decision" in found.detail
    assert review.revised["padding"] == {
        "buckets": [128, 512],
        "mask_padded": True,
        "proposed": True,
        "above_largest": review.revised["padding"]["above_largest"],
    }
    fixed = review_plan(_write(tmp_path, body, "fixed.toml"), "neuron")
    assert fixed.classification == "compatible", "fixed problem sizes need no ladder"


def test_plan_check_defaults_to_the_plans_own_target(tmp_path: Path) -> None:
    path = _write(tmp_path, FIXED + _ids() + "[compile]\ndynamic = true\n")
    path.write_text(
        path.read_text(encoding="utf-8").replace('name = "w"\n', 'name = "w"\ntarget = "cpu"\n'), encoding="utf-8"
    )
    review = review_plan(path)
    assert review.target == "cpu" and review.classification == "compatible"
    assert _cli(path, "cpu") == 0 and CliRunner().invoke(main, ["plan-check", str(path)]).exit_code == 0
    elsewhere = review_plan(path, "neuron")
    assert any(f.id == "intended-target" and "meant for cpu" in f.title for f in elsewhere.findings)
    assert review_plan(_write(tmp_path, FIXED, "untargeted.toml")).target == "neuron"


class _Counted(int):
    """A length that counts its comparisons: plans may list thousands of shapes."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _Counted.compared += 1
        return int(self) == other

    __hash__ = int.__hash__


class _Ladder(list):  # type: ignore[type-arg]
    """A declared ladder that refuses to be walked or copied: one lookup is a binary search."""

    def __iter__(self) -> Any:
        raise AssertionError("the ladder was walked for one length")


def test_mapping_lengths_to_buckets_is_not_quadratic_in_shapes() -> None:
    shapes = [[1, _Counted(n)] for n in range(1, 301)]
    ctx = SimpleNamespace(revised={"matrix": {"shapes": shapes, "cache_checks": [[1, 300]]}})
    _Counted.compared = 0
    _map_lengths(ctx, {300: 512})  # type: ignore[arg-type]
    assert ctx.revised["matrix"]["shapes"] == [[1, n] for n in range(1, 300)] + [[1, 512]]
    assert ctx.revised["matrix"]["cache_checks"] == [[1, 512]]
    # Sorting costs n log n comparisons (about 4,500 here); a list scan per shape costs n² / 2 (45,000) more.
    assert _Counted.compared < 30 * len(shapes), _Counted.compared


def test_a_declared_ladder_is_searched_not_walked() -> None:
    ladder = _Ladder(range(8, 80_008, 8))
    assert [bucket_for(n, ladder) for n in (1, 8, 9, 80_000, 80_001)] == [8, 8, 16, 80_000, None]


def test_a_finding_lists_at_most_the_first_few_items_with_their_count(tmp_path: Path) -> None:
    """A plan of a megabyte plans 100,000 lengths: the bucket-ladder finding once listed every one
    of them (784 KB of text for one finding). Each list in a finding is cut, with its count."""
    shapes = ", ".join(f"[1, {n}]" for n in range(1, 3001))
    ladder = ", ".join(str(b) for b in range(2, 2001, 2))
    body = f'[matrix]\nshapes = [{shapes}]\nmodes = ["eager", "compiled"]\n[padding]\nbuckets = [{ladder}]\n'
    review = review_plan(_write(tmp_path, body), "neuron")
    texts = {f.title: f"{f.title} {f.detail} {f.first}" for f in review.findings}
    padded = next(t for title, t in texts.items() if "not padded to the declared buckets" in title)
    assert (
        f"(1 -> 2, 3 -> 4, 5 -> 6, 7 -> 8, 9 -> 10, 11 -> 12, 13 -> 14, 15 -> 16, 17 -> 18, 19 -> 20, 21 -> 22, 23 -> 24, … (first {LISTED} of 1,000))"
        in padded
    ), padded
    assert f"ladder [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, … (first {LISTED} of 1,000)]" in padded, padded
    above = next(t for title, t in texts.items() if "above the largest bucket" in title)
    assert f"2011, 2012, … (first {LISTED} of 1,000)]" in above, above
    assert all(len(t) < 2_000 for t in texts.values()), {k: len(t) for k, t in texts.items()}
    assert listed(range(LISTED)) == ", ".join(map(str, range(LISTED))), "a short list is listed whole"


def test_a_proposed_task_criterion_names_the_metric_the_module_states(tmp_path: Path) -> None:
    """A proposed BF16 criterion named 'task_metric' beside a module whose TASK_METRIC is
    another name, which the collector now refuses: the revised plan could not run."""
    review = review_plan(PLANS / "scenario_a.toml", "neuron")
    assert review.revised is not None
    assert review.revised["tolerances"]["bfloat16"]["task"]["metric"] == "min_cosine_to_reference"
    (tmp_path / "m.py").write_text("import os\nTASK_METRIC = os.environ['X']\n", encoding="utf-8")
    assert stated_task_metric(tmp_path / "m.py") is None and stated_task_metric(tmp_path) is None
    (tmp_path / "typed.py").write_text('TASK_METRIC = "early"\nTASK_METRIC: str = "late"\n', encoding="utf-8")
    assert stated_task_metric(tmp_path / "typed.py") == "late", "the annotated form, and the last assignment"
    (tmp_path / "deep.py").write_text("y = " + "-" * 5000 + "1\n", encoding="utf-8")
    assert stated_task_metric(tmp_path / "deep.py") is None, "a source too deep to parse is no traceback"
    os.mkfifo(tmp_path / "fifo.py")
    assert stated_task_metric(tmp_path / "fifo.py") is None, "a FIFO is never opened"


@pytest.mark.parametrize("reps, noted", [(3, True), (9, True), (10, False), (30, False)])
def test_a_warm_series_too_short_for_the_stability_checks_is_noted_at_its_line(
    tmp_path: Path, reps: int, noted: bool
) -> None:
    """A plan of 3 warm repetitions read "Compatible as specified" with no word that its series
    could not be judged stable (5 samples), checked for two speeds (10) or cut into batches (9)."""
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    assert "warm_repetitions = 30" in text
    plan = tmp_path / "tiny_encoder.toml"
    plan.write_text(text.replace("warm_repetitions = 30", f"warm_repetitions = {reps}"), encoding="utf-8")
    (tmp_path / "tiny_encoder.py").write_text((WORKLOADS / "tiny_encoder.py").read_text(encoding="utf-8"))
    review = review_plan(plan, "neuron")
    found = [f for f in review.findings if f.id == "few-warm-samples"]
    assert bool(found) == noted
    if noted:
        line = next(i for i, row in enumerate(plan.read_text().splitlines(), 1) if row.startswith("warm_repetitions"))
        assert found[0].severity == "note" and found[0].line == line and found[0].key == "timing.warm_repetitions"
        assert f"{reps} sample(s)" in found[0].detail and "at least 10" in found[0].first


def test_a_revised_plan_reads_as_a_person_writes_one(tmp_path: Path) -> None:
    """Before: every array one item a line (tomli_w's way): the 16-line Scenario A draft came back
    as 69 lines, `shapes` alone 13. Short arrays are on one line; the data is the same."""
    out = tmp_path / "revised.toml"
    args = ["plan-check", str(PLANS / "scenario_a.toml"), "--target", "neuron", "--write-revised", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 3
    text = out.read_text(encoding="utf-8")
    assert "shapes = [[1, 128], [1, 256], [1, 512]]\n" in text and "buckets = [128, 256, 512]\n" in text
    assert len(text.splitlines()) < 45
    assert all(len(line) <= 100 or line.startswith("#") or line.endswith('"') for line in text.splitlines())


def test_plan_toml_writes_long_arrays_one_item_a_line_and_keeps_the_data() -> None:
    data: dict[str, Any] = {
        "a": {"long": [f"item number {i}" for i in range(20)], "odd": ["]", "[", "a,\nb", ", ]"], "n": [[1, 2], [3]]}
    }
    text = plan_toml(data)
    assert tomllib.loads(text) == data
    assert 'long = [\n    "item number 0",\n' in text and "n = [[1, 2], [3]]" in text
