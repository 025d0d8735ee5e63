"""A 'compiled' cell whose compile traced no graph and met no cache ran eager: its pass is not
evidence of the compiled path. A cache check (repeat_of) and a generation cell reusing its
process's decode graph log graphs 0 by design and are not flagged. All logs here are synthetic
(tests/logbuilder.py: each says so in its run_start)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from collector.backends import ADAPTERS
from collector.environment import relevant_env_vars
from reportgen.contract.validation import read_log
from reportgen.judge import disposition as d
from reportgen.judge.nextstep import next_step
from reportgen.model.runmodel import RunModel, build_run, read_run
from tests.logbuilder import base_events, case_key, dumps, finish, generation_log, with_envelope

Events = list[dict[str, Any]]
COMPILED = case_key(1, 16, "compiled")
REPEAT = f"{COMPILED}-repeat"


def _write(tmp_path: Path, lines: Events) -> Path:
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(lines), encoding="utf-8")
    return path


def _runs(tmp_path: Path, lines: Events) -> list[RunModel]:
    """The run as both readers build it (the full validation and the fast path)."""
    path = _write(tmp_path, lines)
    reading = read_log(path)
    assert reading.valid, [p.format() for p in reading.problems]
    fast, builder = read_run(path)
    assert fast.valid, [p.format() for p in fast.problems]
    return [build_run(reading), builder.build(fast)]


def _compile(events: Events, case: str) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == "compile" and e["case"] == case)


def _no_graph(events: Events, case: str = COMPILED) -> None:
    """What the collector logs with TorchDynamo disabled: nothing traced, no cache met."""
    _compile(events, case).update(graphs=0, cache_hits=0, cache_misses=0, compile_first_result_s=0.001)


def _with_repeat(events: Events) -> None:
    """A cache check of the compiled b1-l16 cell: the same shape called again in its process,
    which compiles nothing (graphs 0, no hit, no miss) by design."""
    plan = next(e for e in events if e["kind"] == "plan")
    first = next(m for m in plan["matrix"] if m["case"] == COMPILED)
    plan["matrix"].append({**first, "case": REPEAT, "repeat_of": COMPILED})
    cell = [copy.deepcopy(e) for e in events if e.get("case") == COMPILED and e["kind"] != "profile"]
    for event in cell:
        event["case"] = REPEAT
        if event["kind"] == "case_result":
            event["recompiled"] = False
    events.extend(cell)
    _compile(events, REPEAT).update(graphs=0, cache_hits=0, cache_misses=0, cache_condition="persistent_cache")


def _reasons(run: RunModel) -> list[d.Reason]:
    return [r for r in d.decide(run, {}).reasons if r.rule == "no-compiled-graph"]


def test_the_unedited_fixture_is_suitable(tmp_path: Path) -> None:
    for run in _runs(tmp_path, with_envelope(finish(base_events()))):
        assert d.decide(run, {}).outcome == "suitable"
        assert _reasons(run) == []


def test_a_compiled_cell_that_compiled_no_graph_blocks_the_disposition(tmp_path: Path) -> None:
    events = base_events()
    _no_graph(events)
    for run in _runs(tmp_path, with_envelope(finish(events))):
        verdict = d.decide(run, {})
        assert verdict.outcome == "blocked"
        assert not verdict.headline.startswith("Suitable")
        (reason,) = _reasons(run)
        assert reason.outcome == "blocked"
        assert reason.cases == (COMPILED,)
        assert "ran no compiled graph (graphs 0" in reason.message
        assert "TorchDynamo disabled or the model fell back to eager" in reason.message
        assert "not evidence of the compiled path" in reason.message
        # The next step says how to get the compiled path back, not the generic fallback.
        step = str(next_step(run, verdict))
        assert "TORCHDYNAMO_DISABLE" in step


def test_the_recorded_dynamo_switch_is_named(tmp_path: Path) -> None:
    events = base_events()
    _no_graph(events)
    next(e for e in events if e["kind"] == "environment")["env_vars"] = {"TORCHDYNAMO_DISABLE": "1"}
    for run in _runs(tmp_path, with_envelope(finish(events))):
        (reason,) = _reasons(run)
        assert "TORCHDYNAMO_DISABLE was '1'" in reason.message


def test_a_cache_check_repeat_with_graphs_0_is_not_flagged(tmp_path: Path) -> None:
    events = base_events()
    _with_repeat(events)
    for run in _runs(tmp_path, with_envelope(finish(events))):
        repeat = next(c for c in run.cells if c.case == REPEAT)
        assert repeat.status == "pass" and repeat.ran_graph is False  # it did compile nothing
        assert _reasons(run) == []
        assert d.decide(run, {}).outcome == "suitable"


def test_the_repeat_is_not_flagged_beside_a_flagged_cell(tmp_path: Path) -> None:
    events = base_events()
    _with_repeat(events)
    _no_graph(events)
    for run in _runs(tmp_path, with_envelope(finish(events))):
        (reason,) = _reasons(run)
        assert reason.cases == (COMPILED,)


def test_a_generation_cell_reusing_its_decode_graph_is_not_flagged(tmp_path: Path) -> None:
    lines = generation_log(divergent=None)
    decode = [e for e in lines if e["kind"] == "compile" and e.get("generation_graph") == "decode"]
    assert any(e["graphs"] == 0 for e in decode)  # the fixture reuses the decode graph
    for run in _runs(tmp_path, lines):
        assert _reasons(run) == []


def test_a_generation_cell_that_compiled_neither_graph_is_flagged(tmp_path: Path) -> None:
    lines = generation_log(divergent=None)
    case = next(e["case"] for e in lines if e["kind"] == "compile" and e["graphs"] == 0)
    for event in lines:
        if event["kind"] == "compile" and event["case"] == case:
            event.update(graphs=0, cache_hits=0, cache_misses=0)
    for run in _runs(tmp_path, lines):
        (reason,) = _reasons(run)
        assert reason.cases == (case,)


def test_unrecorded_counters_are_not_read_as_no_graph(tmp_path: Path) -> None:
    events = base_events()
    _compile(events, COMPILED).update(graphs=None, cache_hits=None, cache_misses=None)
    for run in _runs(tmp_path, with_envelope(finish(events))):
        assert _reasons(run) == []


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_every_backend_records_the_switches_of_the_compiled_path(name: str) -> None:
    prefixes = ADAPTERS[name].descriptor.env_prefixes
    assert "TORCHDYNAMO_" in prefixes and "TORCH_COMPILE_" in prefixes
    if name == "cpu":
        assert "ATEN_CPU_CAPABILITY" in prefixes


def test_the_collector_records_the_dynamo_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHDYNAMO_DISABLE", "1")
    monkeypatch.setenv("TORCH_COMPILE_DEBUG", "1")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    recorded = relevant_env_vars()
    assert recorded["TORCHDYNAMO_DISABLE"] == "1"
    assert recorded["TORCH_COMPILE_DEBUG"] == "1"
    assert recorded["ATEN_CPU_CAPABILITY"] == "avx2"
