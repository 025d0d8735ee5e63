"""The headline says the finding, the target and the next step; a 'suitable' says its scope."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.render.report import build_report, judge_log
from tests.conftest import FIXTURES, REPO


def test_a_suitable_headline_carries_its_scope_in_the_same_sentence() -> None:
    judged = judge_log(FIXTURES / "synthetic_complete.jsonl")
    assert judged.disposition.outcome == "suitable"
    passed = sum(1 for c in judged.run.cells if c.status == "pass")
    assert f"Suitable for the tested fixed-shape path: {passed} cell(s) in float32" in judged.disposition.headline
    assert "(on cpu" in judged.disposition.headline


def test_mismatches_are_said_in_words_with_the_next_step_and_its_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(FIXTURES.parent)  # the command names the log from where it runs
    judged = judge_log(FIXTURES / "synthetic_mismatch.jsonl")
    failed = [c for c in judged.run.cells if c.status == "mismatch"]
    assert judged.view.finding.startswith(
        f"{len(failed)} cell(s) differ from the reference beyond tolerance (compiled/float32: {len(failed)})"
    )
    assert (
        f"reportgen annotate {FIXTURES.name}/synthetic_mismatch.jsonl",
        True,
    ) in judged.view.next_step.parts and "annotations.toml" in str(judged.view.next_step)
    build_report(FIXTURES / "synthetic_mismatch.jsonl", tmp_path)
    for name in ("report.html", "report.md"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        head = text[: text.index("Blocking")]
        assert "differ from the reference beyond tolerance" in head and "Next:" in head, name


def test_wrong_target_comes_first_in_the_next_step() -> None:
    judged = judge_log(FIXTURES / "synthetic_wrong_target.jsonl")
    step = judged.view.next_step
    # A command that runs as pasted: the plan with the intended target (it had no --workload).
    command = "python -m collector --workload PLAN.toml --target neuron"
    assert str(step).startswith(f"Next: collect on a host of the intended target ({command})")
    assert (command, True) in step.parts


@pytest.mark.parametrize("log", sorted((REPO / "sample_runs").glob("*/events.jsonl")), ids=lambda p: p.parent.name)
def test_every_sample_names_a_next_step(log: Path) -> None:
    judged = judge_log(log)
    assert str(judged.view.next_step).startswith(("Next: ", "Nothing for this scope"))
    assert judged.view.finding.endswith("passed.") or judged.view.finding.startswith("All ")


def test_the_printed_disposition_of_a_synthetic_run_says_first_that_it_is_synthetic(tmp_path: Path) -> None:
    """`reportgen report` prints the headline alone: a synthetic fixture's says first what it is,
    as the report's banner does above it; a measured run's is the headline as it stands."""
    from click.testing import CliRunner

    from reportgen.cli import main
    from tests import logbuilder as lb

    events = lb.complete_log()
    fixture = tmp_path / "synthetic.jsonl"
    fixture.write_text(lb.dumps(events), encoding="utf-8")
    events[0].update(origin="measured", origin_note=None)
    measured = tmp_path / "measured.jsonl"
    measured.write_text(lb.dumps(events), encoding="utf-8")
    printed = {}
    for log in (fixture, measured):
        result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / log.stem)])
        assert result.exit_code == 0, result.output
        printed[log.stem] = result.output.splitlines()[0]
    synthetic = judge_log(fixture).disposition
    assert synthetic.headline.startswith("Suitable for the tested fixed-shape path")
    assert printed["synthetic"] == f"Synthetic fixture, not a measurement (evidence of nothing): {synthetic.headline}"
    assert printed["measured"] == judge_log(measured).disposition.headline
    assert "synthetic" not in printed["measured"].lower()


def test_a_run_on_an_adapter_that_has_not_met_its_hardware_says_so_in_its_headline(tmp_path: Path) -> None:
    """A review: a neuron run read "Suitable ... (on neuron; ...; synthetic weights)" on stdout and
    atop its page, its fallback and compile readings from an adapter that has met a stand-in only,
    said in the fifth note; a CI job or a pull request that shows the headline alone presented it
    as evidence of Trainium. The headline names it, as the site's tag does; a cpu run's does not."""
    from tests.logbuilder import write_synthetic_neuron

    neuron = judge_log(write_synthetic_neuron(tmp_path / "neuron"))
    assert "; adapter untried on hardware" in neuron.disposition.headline, neuron.disposition.headline
    cpu = judge_log(REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl")
    assert "adapter untried" not in cpu.disposition.headline


def test_a_suitable_run_whose_timings_decide_nothing_says_how_to_decide_them(tmp_path: Path) -> None:
    """A review: every timing was unstable (threads waited for a CPU) and the next step read
    "Nothing for this scope. To widen it, ..." with no word on getting a timing that decides."""
    from tests.logbuilder import _warm, dumps, timing_log

    events = timing_log("synthetic-all-unstable")
    for event in events:  # every warm series bimodal: every other sample three times as long
        if event["kind"] == "timing" and event.get("warm"):
            event["warm"] = _warm([x * (3 if i % 2 else 1) for i, x in enumerate(event["warm"]["samples_s"])])
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(events), encoding="utf-8")
    judged = judge_log(log)
    assert judged.disposition.outcome == "suitable" and judged.disposition.timing_undecided
    step = str(judged.view.next_step)
    assert "timing(s) decide no performance" in step and "collect again as that reason asks" in step, step
    # These series are bimodal, with no wait recorded: the step names no cause as this run's
    # (it said "a host whose threads waited for a CPU, a loop too short, series that drifted").
    assert "section 7 gives each one's reason" in step and "series that drifted" not in step, step
