"""An eager cell that ran on the reference's own device, in its dtype, repeats the reference's
computation: its pass shows that the computation repeats, and a report says so rather than
letting it stand as evidence that the backend computes the model correctly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reportgen.judge.judgement import judge
from reportgen.model.runmodel import read_run
from tests import logbuilder


def _judged(tmp_path: Path, events: list[dict[str, Any]]) -> list[Any]:
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    reading, builder = read_run(path)
    assert reading.valid, [p.format() for p in reading.problems]
    return [r for r in judge(builder.build(reading)).disposition.reasons if r.rule == "reference-repeats"]


def _eager(events: list[dict[str, Any]]) -> set[str]:
    return {e["case"] for e in events if e["kind"] == "case_result" and e["case"].endswith("-eager")}


def test_a_cpu_runs_eager_cells_in_the_reference_dtype_are_named_as_repeats(tmp_path: Path) -> None:
    events = logbuilder.complete_log()
    (note,) = _judged(tmp_path, events)
    assert note.outcome == "note" and set(note.cases) == _eager(events)
    assert "shows that the computation repeats, not that it is right" in note.message
    assert "show that those paths agree with this cpu eager computation, which is the reference" in note.message
    assert "correctly" not in note.message


def test_a_cpu_run_with_only_such_cells_says_nothing_else_shows_correctness(tmp_path: Path) -> None:
    events = [e for e in logbuilder.complete_log() if not str(e.get("case", "")).endswith("-compiled")]
    plan = next(e for e in events if e["kind"] == "plan")
    plan["matrix"] = [c for c in plan["matrix"] if c["mode"] == "eager"]
    end = next(e for e in events if e["kind"] == "run_end")
    end["cells_planned"] = end["cells_recorded"] = len(plan["matrix"])
    (note,) = _judged(tmp_path, logbuilder.with_envelope(events))
    assert note.message.endswith("no other cell passed.")


def test_another_device_or_dtype_than_the_reference_is_no_repeat(tmp_path: Path) -> None:
    on_gpu = logbuilder.with_envelope(logbuilder.finish(logbuilder.base_events(target="cuda", family="cuda")))
    assert _judged(tmp_path, on_gpu) == []
    in_float64 = logbuilder.complete_log()
    for event in in_float64:
        if event["kind"] == "reference":
            event["dtype"] = "float64"
    assert _judged(tmp_path, in_float64) == []
