"""A timing event holds together with the cell's result and with its own cache facts.

The collector times warm repetitions of a passing cell only, so a warm series beside a failed
result was not logged as the collector logs it (a cold call in a fresh process may come before
any result: it is timed first). A cold call's cache condition follows from its own listing and
counters (collector/run/capture.py, ``cold_condition``): "fresh_process_empty_cache" only when
the listed cache folders were empty before the call and no hit came without a miss, and
"restart_populated_cache" only when they were not. The logs are synthetic (tests/logbuilder)
edited by hand, and say so in their run_start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reportgen.contract.validation import read_log

from tests.logbuilder import case_key, complete_log
from tests.test_validation_contradictions_r3 import _errors, _line

NOTE = "Synthetic log for the timing-facts checks of validate; not a measurement."
COMPILED = case_key(1, 16, "compiled")


def _log() -> list[dict[str, Any]]:
    events = complete_log()
    events[0]["origin_note"] = NOTE
    return events


def _event(events: list[dict[str, Any]], kind: str, case: str = COMPILED) -> dict[str, Any]:
    return events[_line(events, kind, case) - 1]


def test_the_unedited_log_is_valid(tmp_path: Path) -> None:
    assert _errors(tmp_path, _log()) == []


def _warnings(tmp_path: Path, events: list[dict[str, Any]]) -> list[str]:
    assert _errors(tmp_path, events) == []  # numbers the lines and writes the log
    reading = read_log(tmp_path / "events.jsonl")
    return [f"{p.line}: {p.message}" for p in reading.problems if p.severity == "warning"]


def _failed(result: dict[str, Any]) -> dict[str, Any]:
    result.update(status="error", failure={"phase": "run", "type": "RuntimeError", "message": "synthetic"})
    result.pop("error_stats"), result.pop("task_metric")
    return result


def test_a_warm_series_beside_a_failed_result_is_warned_about_at_its_line(tmp_path: Path) -> None:
    """Warned about, not refused: no page, comparison or history reads a timing of a cell that
    did not pass (tests/test_measured_scope_history.py); the warning says it decides nothing."""
    events = _log()
    _failed(_event(events, "case_result"))
    assert _warnings(tmp_path, events) == [
        f"{_line(events, 'timing', COMPILED)}: timing {COMPILED!r}: a warm series, but the cell's case_result on "
        f"line {_line(events, 'case_result', COMPILED)} says status error: the collector times a passing cell only; "
        "its timings decide nothing"
    ]


def test_a_failed_result_after_a_warm_series_is_warned_about_at_its_line(tmp_path: Path) -> None:
    events = _log()
    result = _failed(events.pop(_line(events, "case_result", COMPILED) - 1))
    events.insert(_line(events, "timing", COMPILED), result)  # after the timing
    assert _warnings(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: status error, but a warm series of this "
        f"cell is logged on line {_line(events, 'timing', COMPILED)}: the collector times a passing cell only; its "
        "timings decide nothing"
    ]


def test_a_cold_call_alone_before_a_failed_result_is_valid(tmp_path: Path) -> None:
    """As the collector writes it: the cold call in its fresh process, then the cell's check fails."""
    events = _log()
    timing = _event(events, "timing")
    timing.pop("warm")
    result = events.pop(_line(events, "case_result", COMPILED) - 1)
    result.update(
        status="mismatch", error_stats={**result["error_stats"], "mismatched": 3, "max_abs": 0.5, "diff_at_worst": 0.5}
    )
    events.insert(_line(events, "timing", COMPILED), result)
    assert [e for e in _warnings(tmp_path, events) if "times a passing cell only" in e] == []


def _cold(events: list[dict[str, Any]], **facts: Any) -> dict[str, Any]:
    cold = _event(events, "timing")["cold"]
    cold.update(facts)
    return cold


@pytest.mark.parametrize(
    ("facts", "words"),
    [
        ({"cache_entries_before": 36}, "but cache_entries_before is 36: a call is labelled so only when"),
        (
            {
                "cache_entries_before": 0,
                "cache_dirs": [
                    {"role": "inductor", "path": "/c", "redirected": True, "entries_before": 5, "entries_after": 5}
                ],
            },
            "but cache_dirs lists 'inductor' with 5 entries before the call",
        ),
        ({"cache_entries_before": 0, "cache_hits": 1, "cache_misses": 0}, "counts 1 cache hit(s) and no miss"),
        # Outside review: accepted, and read as a compile from nothing on every page.
        ({"cache_entries_before": None, "cache_dirs": None}, "but the call lists no cache folder"),
        ({"cache_entries_before": 0, "fresh_process": False}, "but fresh_process is false"),
    ],
    ids=["entries", "a folder", "hits", "no listing", "not fresh"],
)
def test_a_cold_call_labelled_empty_that_met_a_full_cache_is_refused(
    tmp_path: Path, facts: dict[str, Any], words: str
) -> None:
    events = _log()
    for event in events:  # a 1.1 collector lists the cache of every cold call it labels empty
        event["schema_version"] = "1.1"
    _cold(events, **facts)
    errors = _errors(tmp_path, events)
    assert len(errors) == 1 and errors[0].startswith(
        f"{_line(events, 'timing', COMPILED)}: timing {COMPILED!r}: cold.cache_condition is fresh_process_empty_cache"
    ), errors
    assert words in errors[0]


def test_hits_beside_a_miss_on_an_empty_cache_are_entries_the_call_wrote_itself(tmp_path: Path) -> None:
    """Two alike subgraphs: one compiles (a miss) and the other hits what it wrote."""
    events = _log()
    _cold(events, cache_entries_before=0, cache_hits=1, cache_misses=1)
    assert _errors(tmp_path, events) == []


def test_a_restart_labelled_populated_whose_folder_was_empty_is_refused(tmp_path: Path) -> None:
    events = _log()
    timing = dict(_event(events, "timing"))
    restart = {
        **timing["cold"],
        "cache_condition": "restart_populated_cache",
        "cache_entries_before": 0,
        "cache_hits": 0,
        "cache_misses": 1,
    }
    events.insert(_line(events, "timing", COMPILED), {**timing, "cold": restart, "warm": None})
    del events[_line(events, "timing", COMPILED)]["warm"]
    errors = _errors(tmp_path, events)
    assert (
        len(errors) == 1
        and "cold.cache_condition is restart_populated_cache, but cache_entries_before is 0" in errors[0]
    ), errors
    restart["cache_entries_before"] = 12
    assert _errors(tmp_path, events) == []


def test_a_compile_event_labelled_empty_with_entries_before_is_refused(tmp_path: Path) -> None:
    events = _log()
    _event(events, "compile").update(cache_entries_before=7)
    errors = _errors(tmp_path, events)
    assert (
        len(errors) == 1
        and "compile" in errors[0]
        and "cache_condition is fresh_process_empty_cache, but cache_entries_before is 7" in errors[0]
    ), errors


def test_a_run_start_target_other_than_the_one_resolved_or_the_plans_is_refused(tmp_path: Path) -> None:
    """Before: run_start saying cuda on a cpu run (target_choice resolved cpu, the plan cpu)
    validated, and load_cells grouped its CPU timings under cuda."""
    events = _log()
    events[0]["target_choice"] = {"requested": "auto", "resolved": "cpu", "reason": "synthetic"}
    assert _errors(tmp_path, events) == []
    events[0]["target"] = "cuda"
    errors = _errors(tmp_path, events)
    assert errors[:1] == [
        "1: run_start: target is 'cuda', but target_choice.resolved is 'cpu': the collector writes the target it "
        "resolved; the log contradicts itself"
    ], errors
    del events[0]["target_choice"]
    errors = _errors(tmp_path, events)
    assert any(
        e.startswith(f"{_line(events, 'plan')}: plan: target is 'cpu', but run_start (line 1) names 'cuda'")
        for e in errors
    ), errors


SCENARIO = Path(__file__).resolve().parents[1] / "sample_runs" / "scenario-a-text-service-cpu-20261205T124743Z-42589b"


def test_a_compiled_first_token_faster_than_the_warm_ones_after_a_compile_is_refused(tmp_path: Path) -> None:
    """Before: a shipped generation run edited so that a compiled cell's cold first token took
    half its fastest warm one validated, beside 'prefill: 1 graph, first call 21.58 s'."""
    import json

    events = [json.loads(line) for line in (SCENARIO / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    events[0].update(origin="synthetic", origin_note="An edited copy of a shipped run (synthetic); not a measurement.")
    case = "b1-l96-contiguous-float32-compiled"
    assert _errors(tmp_path, events) == []
    timing = next(e for e in events if e["kind"] == "generation" and e["case"] == case)["timing"]
    timing["ttft_cold_s"] = timing["ttft_warm"]["min_s"] / 2
    errors = _errors(tmp_path, events)
    assert len(errors) == 1, errors
    assert "timing.ttft_cold_s" in errors[0] and "is less than the fastest warm first token" in errors[0]
    assert f"first compile event (line {_line(events, 'compile', case)}) built a graph from nothing" in errors[0]
    # A cell whose prefill graph an earlier cell built (no graph, no miss) may be as fast as warm.
    repeat = "b1-l96-contiguous-float32-compiled-repeat"
    events = [json.loads(line) for line in (SCENARIO / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    events[0].update(origin="synthetic", origin_note="An edited copy of a shipped run (synthetic); not a measurement.")
    timing = next(e for e in events if e["kind"] == "generation" and e["case"] == repeat)["timing"]
    timing["ttft_cold_s"] = timing["ttft_warm"]["min_s"] / 2
    assert _errors(tmp_path, events) == []


TINY = Path(__file__).resolve().parents[1] / "sample_runs" / "tiny-encoder-cpu-20261205T124447Z-43ef64"


def test_a_timed_region_of_other_stages_than_the_plans_scope_is_refused(tmp_path: Path) -> None:
    """Before: one warm series timed over the copies as well as the call validated, and its median
    sat unflagged in one column with medians of the model call alone."""
    import json

    events = [json.loads(line) for line in (TINY / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    events[0].update(origin="synthetic", origin_note="An edited copy of a shipped run (synthetic); not a measurement.")
    assert _errors(tmp_path, events) == []
    case = "b2-l16-contiguous-float32-eager"
    timing = next(e for e in events if e["kind"] == "timing" and e["case"] == case and e.get("warm"))
    timing["scope"].update(host_to_device=True)
    timing["timed_region"] = ["host_to_device", "model_call"]
    errors = _errors(tmp_path, events)
    assert len(errors) == 1, errors
    assert (
        "timed_region holds host_to_device, but the plan's timing_scope.host_to_device is false: the collector "
        "times the stages the plan's scope names" in errors[0]
    )


def test_a_cold_call_in_the_collectors_process_times_the_call_alone_whatever_the_scope(tmp_path: Path) -> None:
    """As the collector writes it: a plan with preprocessing in scope times its warm series over
    it, and a cold call in its own process (an eager cell's) over the model call alone. Before,
    validate refused every such honest log."""
    import json

    events = [json.loads(line) for line in (TINY / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    events[0].update(origin="synthetic", origin_note="An edited copy of a shipped run (synthetic); not a measurement.")
    next(e for e in events if e["kind"] == "plan")["timing_scope"]["preprocessing"] = True
    in_process = 0
    for event in (e for e in events if e["kind"] == "timing" and e.get("timed_region")):
        if event.get("warm"):
            event["scope"]["preprocessing"] = True
            event["timed_region"] = ["preprocessing", *event["timed_region"]]
        elif not event["cold"].get("fresh_process"):
            in_process += 1
    assert in_process, "the sample has cold calls timed in the collector's process"
    assert _errors(tmp_path, events) == []


def test_a_compile_labelled_empty_whose_cache_was_not_listed_is_refused(tmp_path: Path) -> None:
    """Outside review: the cold call's rule did not cover its compile event, which read 'fresh
    process, empty compile cache' on a compile whose cache no listing showed."""
    events = _log()
    for event in events:
        event["schema_version"] = "1.1"
    compile_event = _event(events, "compile")
    assert compile_event["cache_condition"] == "fresh_process_empty_cache"
    del compile_event["cache_entries_before"]
    errors = _errors(tmp_path, events)
    assert len(errors) == 1 and errors[0].startswith(
        f"{_line(events, 'compile', COMPILED)}: compile {COMPILED!r}: cache_condition is fresh_process_empty_cache, "
        "but the call lists no cache folder"
    ), errors
    compile_event["cache_entries_before"] = 0
    assert _errors(tmp_path, events) == []
