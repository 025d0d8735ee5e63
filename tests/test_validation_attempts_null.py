"""Two holes in log validation: a line holding the JSON value null, and re-measurement records the
collector cannot have written (an attempt past the plan's bound, a number left out, a series
measured again after a stable one). Every log built here is a synthetic fixture
(tests/logbuilder.py, origin "synthetic"); the shipped sample runs are read as they are."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from collector.stability import classify
from reportgen.contract.validation import read_log, validate_files
from tests.logbuilder import _warm, complete_log, dumps, timing_log, with_envelope

SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"
CELL = "b1-l16-contiguous-float32-compiled"
CONTRADICTS = "the log contradicts itself"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _series(verdict: str, seed: int) -> list[float]:
    """30 warm samples the classifier calls ``verdict``: steady ones, or one call in three 25 times slower."""
    rng = random.Random(seed)
    steady = [0.001 * (1 + 0.005 * rng.gauss(0.0, 1.0)) for _ in range(30)]
    samples = steady if verdict == "stable" else [s * (25 if i % 3 == 0 else 1) for i, s in enumerate(steady)]
    assert classify(samples).verdict == verdict
    return samples


def _remeasured(attempts: list[tuple[int, str]], rounds: int = 2, cold_apart: bool = False) -> list[dict[str, Any]]:
    """timing_log's run with CELL's warm series replaced by one timing event per (attempt,
    verdict), each with its stability as the collector records it, under a plan of ``rounds``
    remeasure_rounds; ``cold_apart``: the cold call in an event of its own before them (as a
    fresh process logs it)."""
    events = [
        {k: v for k, v in e.items() if k not in ("schema_version", "seq", "time")}
        for e in timing_log("synthetic-attempts")
    ]
    next(e for e in events if e["kind"] == "plan").update(warm_repetitions=30, remeasure_rounds=rounds)
    at = next(i for i, e in enumerate(events) if e["kind"] == "timing" and e["case"] == CELL)
    template = events.pop(at)
    series = []
    if cold_apart:
        series.append({k: v for k, v in template.items() if k != "warm"})
        template = {k: v for k, v in template.items() if k != "cold"}
    for attempt, verdict in attempts:
        event = copy.deepcopy(template)
        event["warm"] = _warm(_series(verdict, seed=attempt))
        event["attempt"] = attempt
        event["stability"] = {
            "verdict": verdict,
            "samples": 30,
            "reasons": [] if verdict == "stable" else ["bimodality"],
            "checks": {},
            "attempt": attempt,
            "attempts_allowed": 1 + rounds,
        }
        series.append(event)
    events[at:at] = series
    return with_envelope(events)


def _line_of(events: list[dict[str, Any]], attempt: int) -> int:
    return 1 + next(
        i for i, e in enumerate(events) if e["kind"] == "timing" and e["case"] == CELL and e.get("attempt") == attempt
    )


def _errors(tmp_path: Path, events: list[dict[str, Any]]) -> list[tuple[int, str]]:
    reading = read_log(_write(tmp_path / "events.jsonl", dumps(events)))
    return [(p.line, p.message) for p in reading.errors]


def test_a_line_holding_null_is_an_error_at_its_line_not_dropped(tmp_path: Path) -> None:
    """Before: two null lines in a complete log read "valid, ... 0 errors", exit 0, as if absent."""
    lines = dumps(complete_log()).splitlines(keepends=True)
    path = _write(tmp_path / "events.jsonl", "".join([*lines[:3], "null\n", "null\n", *lines[3:]]))
    ((text, valid),) = validate_files([str(path)], as_json=False, max_problems=0)
    assert not valid, text
    assert f"{path}:4: error: expected a JSON object, got null" in text
    assert f"{path}:5: error: expected a JSON object, got null" in text
    assert f"INVALID, complete, {len(lines)} events, 2 errors" in text
    # As the first line and as an unterminated last one, as a number or an array is there.
    first = read_log(_write(tmp_path / "first.jsonl", "null\n" + "".join(lines)))
    assert [(p.line, p.message) for p in first.errors] == [(1, "expected a JSON object, got null")]
    last = read_log(_write(tmp_path / "last.jsonl", "".join(lines) + "null"))
    assert [(p.line, p.message) for p in last.errors] == [(len(lines) + 1, "expected a JSON object, got null")]


def test_the_collectors_own_re_measurements_validate(tmp_path: Path) -> None:
    for attempts in (
        [(1, "unstable"), (2, "unstable"), (3, "stable")],
        [(1, "unstable"), (2, "unstable"), (3, "unstable")],  # the last allowed, still unstable
        [(1, "stable")],
    ):
        for cold_apart in (False, True):
            assert _errors(tmp_path, _remeasured(attempts, cold_apart=cold_apart)) == [], (attempts, cold_apart)
    assert _errors(tmp_path, _remeasured([(1, "unstable")], rounds=0)) == []


def test_an_attempt_left_out_is_an_error_at_its_line(tmp_path: Path) -> None:
    """Before: attempt 7 right after attempt 1 validated."""
    events = _remeasured([(1, "unstable"), (7, "unstable")], rounds=10)
    line = _line_of(events, 7)
    ((at, message),) = _errors(tmp_path, events)
    assert at == line
    assert f"attempt 7 follows attempt 1 (line {_line_of(events, 1)})" in message and CONTRADICTS in message
    # A cell's first series is attempt 1; a number past 1 is not taken twice.
    ((at, message),) = _errors(tmp_path, _remeasured([(2, "unstable")]))
    assert "attempt is 2, but no earlier warm series of this cell is logged" in message
    ((at, message),) = _errors(tmp_path, _remeasured([(1, "unstable"), (2, "unstable"), (2, "unstable")]))
    assert "attempt 2 follows attempt 2" in message
    # Attempt 1 again starts the count again: the collector measures a cell from the start when
    # its fresh process ended before the cell's result reached it (tests/test_collector_one_compile.py).
    assert _errors(tmp_path, _remeasured([(1, "unstable"), (1, "unstable")])) == []


@pytest.mark.parametrize("where", ["both", "stability"])
def test_an_attempt_past_the_plans_remeasure_rounds_is_an_error(tmp_path: Path, where: str) -> None:
    """Before: a fourth series under remeasure_rounds 2 (three allowed) validated, whether its
    attempt was written at the top of the event or only in its stability."""
    events = _remeasured([(1, "unstable"), (2, "unstable"), (3, "unstable"), (4, "unstable")])
    line = _line_of(events, 4)
    if where == "stability":
        for event in events:
            event.pop("attempt", None)
    ((at, message),) = _errors(tmp_path, events)
    assert at == line
    assert "attempt is 4, but the plan's remeasure_rounds 2 allows 3 warm series" in message and CONTRADICTS in message
    # remeasure_rounds 0: never measured again.
    events = _remeasured([(1, "unstable"), (2, "stable")], rounds=0)
    ((at, message),) = _errors(tmp_path, events)
    assert at == _line_of(events, 2) and "remeasure_rounds 0 allows 1 warm series" in message


def test_a_series_measured_again_after_a_stable_one_is_an_error(tmp_path: Path) -> None:
    """Before: a stable first series followed by a second validated; the collector ends a cell's
    rounds at its first stable series, so the log contradicts itself."""
    events = _remeasured([(1, "stable"), (2, "stable")], cold_apart=True)
    ((at, message),) = _errors(tmp_path, events)
    assert at == _line_of(events, 2)
    assert f"attempt 2 follows attempt 1 (line {_line_of(events, 1)}), which the log classifies stable" in message
    assert CONTRADICTS in message


def test_attempt_and_stability_disagreeing_is_an_error(tmp_path: Path) -> None:
    events = _remeasured([(1, "unstable"), (2, "stable")])
    line = _line_of(events, 2)
    events[line - 1]["stability"]["attempt"] = 3
    ((at, message),) = _errors(tmp_path, events)
    assert at == line and "attempt is 2, but stability.attempt is 3" in message
    events = _remeasured([(1, "stable")])
    events[_line_of(events, 1) - 1]["stability"]["attempts_allowed"] = 5
    ((_, message),) = _errors(tmp_path, events)
    assert "stability.attempts_allowed is 5, but the plan's remeasure_rounds 2 allows 3" in message


def test_an_old_log_s_second_unnumbered_series_starts_the_count_again(tmp_path: Path) -> None:
    """A log before 1.2 records no attempt: a second series of a cell is the cell measured from
    the start again (its fresh process ended first), not a re-measurement to number."""
    events = timing_log("synthetic-old")
    assert _errors(tmp_path, events) == []
    at = next(i for i, e in enumerate(events) if e["kind"] == "timing" and e["case"] == CELL)
    again = json.loads(json.dumps(events[at]))
    again.pop("cold")
    events.insert(at + 1, again)
    events = with_envelope([{k: v for k, v in e.items() if k not in ("schema_version", "seq", "time")} for e in events])
    assert _errors(tmp_path, events) == []


def test_every_shipped_sample_run_still_validates() -> None:
    """Logs of every schema version, with re-measured, training and generation cells, and cold calls
    in timing events of their own."""
    logs = sorted(SAMPLES.glob("*/events.jsonl"))
    assert len(logs) > 20
    for log in logs:
        assert read_log(log).errors == [], log
