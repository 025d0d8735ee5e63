"""Where a run's weights come from: the workload states it, the collector logs it (schema 1.4),
and a report calls synthetic weights synthetic in its headline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from collector.eventlog import SCHEMA_VERSION
from collector.plan import load_plan
from collector.runner import Options, execute
from reportgen.contract.validation import read_log
from reportgen.judge.judgement import judge
from reportgen.model.runmodel import read_run
from reportgen.render.sections.record import record_rows
from tests import logbuilder
from tests.conftest import REPO
from tests.test_collector_robust import PlainBackend

FAULTY = REPO / "tests" / "workloads" / "faulty.toml"


def _run_with(tmp_path: Path, origin_line: str) -> Any:
    """The faulty workload, its module ending with ``origin_line``, run eager at one shape."""
    folder = tmp_path / "wl"
    folder.mkdir()
    source = (FAULTY.parent / "faulty.py").read_text(encoding="utf-8")
    (folder / "faulty.py").write_text(source + origin_line, encoding="utf-8")
    (folder / "faulty.toml").write_text(FAULTY.read_text(encoding="utf-8"), encoding="utf-8")
    options = Options(
        target="cpu", out_dir=tmp_path / "runs", cold="off", warm_repetitions=2, only=["b1-*"], modes=["eager"]
    )
    run_dir, code = execute(load_plan(folder / "faulty.toml"), PlainBackend(), options)
    assert code == 0 and run_dir is not None
    reading = read_log(run_dir / "events.jsonl")
    assert reading.valid, [p.format() for p in reading.problems]
    return next(e for e in reading.events if e.kind == "plan")


@pytest.mark.parametrize(
    ("line", "logged"),
    [('WEIGHTS_ORIGIN = "synthetic"\n', "synthetic"), ('WEIGHTS_ORIGIN = "pretrained"\n', "pretrained"), ("", None)],
    ids=["synthetic", "pretrained", "not-stated"],
)
def test_the_collector_logs_the_origin_the_workload_states(tmp_path: Path, line: str, logged: str | None) -> None:
    plan = _run_with(tmp_path, line)
    assert plan.schema_version == SCHEMA_VERSION  # the field from 1.4
    assert plan.weights_origin == logged


def test_both_halves_write_and_read_one_schema() -> None:
    from collector.eventlog import SCHEMA_VERSION as WRITTEN
    from reportgen.contract.events import SCHEMA_VERSION

    assert WRITTEN == SCHEMA_VERSION == "1.7"


def test_every_shipped_workload_states_its_weights_origin() -> None:
    found = {}
    for module in sorted((REPO / "collector" / "workloads").glob("*.py")):
        if module.name == "__init__.py":
            continue
        lines = [
            line for line in module.read_text(encoding="utf-8").splitlines() if line.startswith("WEIGHTS_ORIGIN =")
        ]
        assert len(lines) == 1, module.name
        found[module.stem] = lines[0].split("=", 1)[1].split("#")[0].strip().strip('"')
    assert found == {
        "decoder_lm": "synthetic",
        "heat_solver": "none",
        "minilm": "pretrained",
        "tiny_classifier": "synthetic",
        "tiny_encoder": "synthetic",
    }


def _log(tmp_path: Path, origin: str | None, version: str = "1.4") -> Path:
    events = logbuilder.complete_log()
    events[0]["run_id"] = f"synthetic-{origin}-{version}"
    for event in events:
        event["schema_version"] = version
        if event["kind"] == "plan" and origin is not None:
            event["weights_origin"] = origin
        if event["kind"] == "timing" and event.get("warm") and version == "1.4":  # a 1.4 loop records its host
            event["host"] = {
                key: {"value": value, "source": "synthetic fixture"}
                for key, value in (("cpu_run_s", "0.900000"), ("cpu_wait_s", "0.001000"), ("loop_wall_s", "1.000000"))
            }
    path = tmp_path / f"{origin}-{version}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def _judged(path: Path) -> tuple[str, list[str], str]:
    reading, builder = read_run(path)
    assert reading.valid, [p.format() for p in reading.problems]
    run = builder.build(reading)
    judgement = judge(run)
    notes = [r.message for r in judgement.disposition.reasons if r.rule == "weights"]
    origin_row = next(row.value for row in record_rows(run, "") if row.label == "Weights origin")
    return judgement.disposition.headline, notes, origin_row


def test_synthetic_weights_are_named_in_the_headline_with_a_note(tmp_path: Path) -> None:
    headline, notes, row = _judged(_log(tmp_path, "synthetic"))
    assert headline.endswith("; synthetic weights)"), headline
    assert len(notes) == 1 and notes[0].startswith("The weights are synthetic")
    assert row.startswith("synthetic: made up")


def test_pretrained_weights_add_nothing_to_the_headline(tmp_path: Path) -> None:
    headline, notes, row = _judged(_log(tmp_path, "pretrained"))
    assert "synthetic" not in headline.split("(on ", 1)[1] and notes == []
    assert row.startswith("pretrained: trained weights")


def test_a_plan_that_could_state_the_origin_and_does_not_is_a_note(tmp_path: Path) -> None:
    headline, notes, row = _judged(_log(tmp_path, None))
    assert "synthetic weights" not in headline and headline.endswith("; weights origin not recorded)"), headline
    assert row == "not stated by the workload (its module has no WEIGHTS_ORIGIN)"
    assert len(notes) == 1 and "cannot tell trained weights from made-up ones" in notes[0]


def test_an_older_log_names_the_unrecorded_origin_in_its_headline_and_a_note(tmp_path: Path) -> None:
    """A log before schema 1.4 cannot say whether its weights were trained or made up: its
    headline said neither (the origin was named only in its table row); it now says it is not
    recorded, in the headline beside the evidence, and a note says why that matters."""
    headline, notes, row = _judged(_log(tmp_path, None, version="1.3"))
    assert row == "not recorded (a log written before schema 1.4)"
    assert "synthetic weights" not in headline and headline.endswith("; weights origin not recorded)"), headline
    assert len(notes) == 1 and notes[0].startswith("Where the weights come from is not recorded (a log written before")


def test_diff_names_a_changed_weights_origin_among_the_criteria(tmp_path: Path) -> None:
    from reportgen.publish.diff import diff_runs
    from reportgen.publish.summary import summarize
    from reportgen.render.report import judge_log

    before, after = _log(tmp_path, "synthetic"), _log(tmp_path, "pretrained")
    diff = diff_runs(summarize(judge_log(before)), summarize(judge_log(after)))
    changed = {c.key: c for c in diff.criteria}
    assert "weights_origin" in changed, list(changed)
    assert "synthetic" in str(changed["weights_origin"]) and "pretrained" in str(changed["weights_origin"])


def test_diff_and_compare_name_an_unrecorded_origin_where_no_side_is_synthetic(tmp_path: Path) -> None:
    """Two logs before 1.4: each run's headline said 'weights origin not recorded', but diff's
    first line and compare's headline named it only beside synthetic weights (second review of
    this round, finding 10)."""
    from click.testing import CliRunner

    from reportgen.cli import main

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    before = _log(tmp_path / "a", None, version="1.3")
    after = _log(tmp_path / "b", None, version="1.3")
    for path, run_id, factor in ((before, "earlier", 1.0), (after, "later", 0.9)):
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        # Marked as measurements here (a synthetic fixture's side is evidence of nothing, said
        # first instead), each its own run with its own samples.
        events[0].update(run_id=run_id, origin="measured")
        events[0].pop("origin_note", None)
        # With the weights artifact a collector of 1.2 on writes right after the plan.
        plan = next(e for e in events if e["kind"] == "plan")
        weights = {"kind": "artifact", "role": "weights", "path": "artifacts/weights.pt", "bytes": 2048}
        weights.update(sha256=plan["weights_sha256"], schema_version=plan["schema_version"], time=plan["time"])
        if plan.get("weights_content_sha256"):
            weights.update(content_sha256=plan["weights_content_sha256"], content_recipe="tensor-content-v1")
        events.insert(events.index(plan) + 1, weights)
        for seq, event in enumerate(events):
            event["seq"] = seq
        for event in events:
            if event["kind"] == "timing" and event.get("warm"):
                event["warm"] = logbuilder.scaled_warm(event["warm"], factor)
        path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    first = CliRunner().invoke(main, ["diff", str(before), str(after)]).output.splitlines()[0]
    assert "weights origin not recorded on the before side" in first and "and the after side" in first, first
    md = CliRunner().invoke(main, ["diff", str(before), str(after), "--format", "md"]).output.splitlines()[0]
    assert "(weights origin not recorded on the before side" in md, md
    out = tmp_path / "cmp"
    done = CliRunner().invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "md"])
    assert done.exit_code == 0, done.output
    answer = (out / "compare.md").read_text(encoding="utf-8").split("## 1. Answer", 1)[1]
    headline = answer.lstrip().splitlines()[0]
    assert "Weights origin not recorded on the candidate and baseline" in headline, headline


def test_an_unrecorded_origin_quotes_the_model_revision_the_plan_wrote() -> None:
    """A review: a 1.3 Scenario A run's note said a reader 'cannot tell trained weights from
    made-up ones' beside a model revision that reads 'weights synthetic': the note now quotes
    that free text, as the log's own words and not a field the report reads."""
    from reportgen.render.report import judge_log

    judged = judge_log(REPO / "sample_runs" / "scenario-a-text-service-cpu-20261202T023819Z-d4d489" / "events.jsonl")
    (note,) = [r.message for r in judged.disposition.reasons if r.rule == "weights"]
    assert "the report cannot tell trained weights from made-up ones" in note
    assert "The plan's model revision, free text this report does not read as a field, says: " in note
    assert "weights synthetic" in note
