"""Training workloads: loss and gradients compared step by step, and reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from collector.plan import PlanError, load_plan
from reportgen.render.report import build_report
from reportgen.contract.validation import read_log
from tests.conftest import FIXTURES, REPO

CLASSIFIER = REPO / "collector" / "workloads" / "tiny_classifier.toml"


def test_training_plan_declares_steps_randomness_and_tolerances(tmp_path: Path) -> None:
    plan = load_plan(CLASSIFIER)
    assert plan.training == {"steps": 4, "seed": 0, "randomness": plan.training["randomness"]}
    assert "dropout off" in plan.training["randomness"]
    assert plan.missing_tolerance("float32") is None
    (tmp_path / "w.py").write_text("", encoding="utf-8")
    bare = tmp_path / "plan.toml"
    bare.write_text(
        '[workload]\nname = "w"\nmodule = "w.py"\n[training]\nsteps = 2\nrandomness = "none"\n[matrix]\nshapes = [[1, 4]]\n',
        encoding="utf-8",
    )
    assert "loss and grad tolerances" in load_plan(bare).missing_tolerance("float32")
    bare.write_text(
        '[workload]\nname = "w"\nmodule = "w.py"\n[training]\nsteps = 2\n[matrix]\nshapes = [[1, 4]]\n',
        encoding="utf-8",
    )
    with pytest.raises(PlanError, match="training: missing 'randomness'"):
        load_plan(bare)


def test_training_fixture_report_has_curves_and_gradient_tables(tmp_path: Path) -> None:
    result = build_report(FIXTURES / "synthetic_training.jsonl", tmp_path)
    assert result.disposition.outcome == "suitable"
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert 'id="fig-loss-curves"' in html
    for text in (html, md):
        assert "Training: loss and gradients against the reference" in text
        assert "dropout off" in text
    # Largest first: the fixture's largest gradient error is the embedding's.
    table = md.split("| parameter | largest diff / allowance", 1)[1]
    assert table.index("encoder.embed.weight") < table.index("head.bias")
    assert "(forward)" in html and "(backward)" in html


@pytest.mark.slow
def test_training_run_on_cpu_eager_and_compiled(tmp_path: Path) -> None:
    from collector.backends import Backend
    from collector.runner import Options, execute

    options = Options(target="cpu", out_dir=tmp_path, only=["b2-l16-*"], cold="fresh-process", warm_repetitions=3)
    run_dir, code = execute(load_plan(CLASSIFIER), Backend(), options)
    assert code == 0
    reading = read_log(run_dir / "events.jsonl")
    assert reading.problems == [], [p.format() for p in reading.problems]
    events = reading.events
    steps = [e for e in events if e.kind == "train_step"]
    assert {(e.case, e.step) for e in steps} == {
        (c, s) for c in ("b2-l16-contiguous-float32-eager", "b2-l16-contiguous-float32-compiled") for s in range(4)
    }
    eager_steps = [e for e in steps if e.case.endswith("eager")]
    assert all(e.loss_within and all(g.mismatched == 0 for g in e.grads) for e in eager_steps), (
        "eager CPU equals the CPU reference"
    )
    graphs = {e.graph for e in events if e.kind == "compile"}
    assert graphs == {"forward", "backward"}
    timings = [e for e in events if e.kind == "timing" and e.case.endswith("eager")]
    assert any(t.warm for t in timings)
    assert any(t.cold and not t.cold.fresh_process and t.cold.cache_condition == "eager_no_compile" for t in timings), (
        "eager: first call in-process"
    )
    compiled_cold = [e.cold for e in events if e.kind == "timing" and e.case.endswith("compiled") and e.cold]
    assert compiled_cold and all(c.fresh_process for c in compiled_cold), "compiled: a fresh process"
    assert "training step" in timings[0].scope.note and all(t.timed_region == ["training_step"] for t in timings)
    result = build_report(run_dir / "events.jsonl", tmp_path / "report")
    results = {e.case: e.status for e in events if e.kind == "case_result"}
    blocking = {r.rule for r in result.disposition.reasons if r.outcome == "blocked"}
    # --only ran 2 of the planned cells: the others are untested (deselected), so never 'suitable'.
    assert result.disposition.outcome == "blocked" and "untested-cells" in blocking
    if "mismatch" in results.values():
        assert "mismatch" in blocking
    else:
        assert blocking == {"untested-cells"}


@pytest.mark.parametrize("edit", ["dropped", "twice", "beyond"])
def test_a_training_cell_s_steps_are_the_plan_s_each_once(tmp_path: Path, edit: str) -> None:
    """A review: a measured training log with step 3 of a cell deleted validated and read
    'Suitable ... 4 training steps as the plan ran them' beside a loss table of three steps; a
    step logged twice, or a step 99 under a plan of 4, validated too. Each is an error at its line."""
    from reportgen.contract.validation import read_log
    from tests.logbuilder import dumps, edited_sample

    events = edited_sample(
        "tiny-classifier-training-cpu-20261206T150841Z-651786",
        f"synthetic-steps-{edit}",
        f"A sample training log with one train_step {edit}; not a measurement.",
    )
    case = "b2-l16-contiguous-float32-eager"
    steps = [e for e in events if e["kind"] == "train_step" and e["case"] == case]
    at = events.index(steps[-1])
    if edit == "dropped":
        events.remove(steps[-1])
    elif edit == "twice":
        events.insert(at + 1, dict(steps[-1]))
    else:
        events.insert(at + 1, {**steps[-1], "step": 99})
    for seq, event in enumerate(events):
        event["seq"] = seq
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(events), encoding="utf-8")
    reading = read_log(log)
    said = {
        "dropped": "3 of the plan's 4 train_step(s) are logged before it (missing: 3)",
        "twice": "a second train_step 3 of this cell",
        "beyond": "step 99, past the plan's 4 step(s) (0 to 3)",
    }[edit]
    assert not reading.valid and any(said in p.message for p in reading.problems), [
        p.format() for p in reading.problems
    ]


def test_a_second_generation_event_or_train_result_of_a_cell_is_an_error(tmp_path: Path) -> None:
    """A review: a second generation event of a cell, every series three times slower, validated,
    and diff timed the cell by it (the last one won)."""
    from reportgen.contract.validation import read_log
    from tests.logbuilder import dumps, edited_sample

    for run, kind in (
        ("scenario-a-text-service-cpu-20261206T152740Z-a6ae00", "generation"),
        ("tiny-classifier-training-cpu-20261206T150841Z-651786", "train_result"),
    ):
        events = edited_sample(run, f"synthetic-second-{kind}", f"A sample log with a {kind} event repeated.")
        first = next(e for e in events if e["kind"] == kind)
        events.insert(events.index(first) + 1, dict(first))
        for seq, event in enumerate(events):
            event["seq"] = seq
        log = tmp_path / kind / "events.jsonl"
        log.parent.mkdir()
        log.write_text(dumps(events), encoding="utf-8")
        reading = read_log(log)
        assert not reading.valid and any(f"a second {kind}" in p.message for p in reading.problems), kind
