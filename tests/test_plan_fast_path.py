"""A plan line read through its mirror (the fast path) reads as the careful path reads it.

A long plan's matrix is checked by msgspec against the mirror of ``Plan`` (contract/fast.py),
which runs the definition's one rule (each case once) after decoding, and its keys are counted
against the mirror written again. Each hostile plan below is read twice, as reportgen reads it and with every
fast check off: the same problems at the same lines, the same events, and for a plan that is
accepted, the same plan (every field, and every cell's values).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.contract.events import PlannedCell
from reportgen.contract.validation import LogReading, read_log
from tests.logbuilder import complete_log, dumps
from tests.test_fast_path_agrees import _summary, careful_only
from tests.mutations import mutate


def _plan_lines() -> tuple[list[bytes], int]:
    lines = dumps(complete_log()).encode("utf-8").split(b"\n")
    return lines, next(i for i, line in enumerate(lines) if b'"kind": "plan"' in line)


def _replace(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    def mutate(line: bytes) -> bytes:
        assert old in line, old
        return line.replace(old, new, 1)

    return mutate


def _first_cell_twice(line: bytes) -> bytes:
    plan = json.loads(line)
    plan["matrix"].append(plan["matrix"][0])
    return json.dumps(plan).encode()


def _with(**changes: Any) -> Callable[[bytes], bytes]:
    def mutate(line: bytes) -> bytes:
        return json.dumps({**json.loads(line), **changes}).encode()

    return mutate


def _repeat_of_everywhere(value: Any) -> Callable[[bytes], bytes]:
    def mutate(line: bytes) -> bytes:
        plan = json.loads(line)
        plan["matrix"] = [{**cell, "repeat_of": value} for cell in plan["matrix"]]
        return json.dumps(plan).encode()

    return mutate


HOSTILE_PLANS: dict[str, Callable[[bytes], bytes]] = {
    "repeated top-level key": _replace(b'"target": "cpu"', b'"target": "cuda", "target": "cpu"'),
    "repeated key, a space before its colon": _replace(b'"target": "cpu"', b'"target" : "cuda", "target": "cpu"'),
    "repeated key, spaces around every colon": lambda line: line.replace(b'": ', b'" : ').replace(
        b'"target" : "cpu"', b'"target" : "cuda" , "target" : "cpu"', 1
    ),
    "repeated key in a matrix cell": _replace(b'"batch": 1,', b'"batch": 4, "batch": 1,'),
    "repeated key in a tolerance": _replace(b'"atol": 1e-05', b'"atol": 1.0, "atol": 1e-05'),
    "repeated key in the task criterion": _replace(b'"op": ">="', b'"op": "<=", "op": ">="'),
    "repeated key, a colon-quote inside a string value": _replace(
        b'"target": "cpu"', b'"description": "x\\": y", "target": "cuda", "target": "cpu"'
    ),
    "a key-like colon inside a string value (valid)": _replace(
        b'"description": "', b'"description": "\\"target\\": \\"cuda\\", '
    ),
    "escaped colon (valid)": _replace(b'"description": "', b'"description": "a\\u003a b '),
    "escaped colon and a repeated key": _replace(
        b'"target": "cpu"', b'"description": "a\\u003a", "target": "cuda", "target": "cpu"'
    ),
    "a case listed twice": _first_cell_twice,
    "empty matrix": _with(matrix=[]),
    "unknown field in a cell": _replace(b'"batch": 1,', b'"batch": 1, "bonus": 2,'),
    "unknown top-level field": _with(bonus=1),
    "integer as a string in a cell (refused: the schema says integer)": _replace(b'"batch": 1,', b'"batch": "1",'),
    "batch zero": _replace(b'"batch": 1,', b'"batch": 0,'),
    "unknown layout": _replace(b'"layout": "contiguous"', b'"layout": "strided"'),
    "NaN tolerance": _replace(b'"atol": 1e-05', b'"atol": NaN'),
    "repeat_of written as null in every cell (valid)": _repeat_of_everywhere(None),
    # Valid but for the keys: a key in the collector's form without -repeat says no cache check.
    "repeat_of naming a case in every cell": _repeat_of_everywhere("b1-l16-contiguous-float32-eager"),
    "repeat_of given twice in a cell": _replace(b'"batch": 1,', b'"repeat_of": "x", "repeat_of": null, "batch": 1,'),
    "repeat_of under the name the record stores it by": _replace(
        b'"batch": 1,', b'"logged_repeat_of": "x", "batch": 1,'
    ),
    "newer minor version (valid, with a warning)": _replace(b'"schema_version": "1.0"', b'"schema_version": "1.9"'),
    "another major version": _replace(b'"schema_version": "1.0"', b'"schema_version": "2.0"'),
    "optional fields given (valid)": _with(
        padding={"buckets": [16, 32]},
        compile_options={
            "dynamic": False,
            "mode": "default",
            "fullgraph": False,
            "backend_options": {"a": 1, "b": "x", "c": True, "d": 1.5},
        },
        intended_target="neuron",
    ),
}


def _plan(reading: LogReading) -> Any:
    """The accepted plan: every field but the matrix as plain data, and every cell's values."""
    plans = [r.event for r in reading.records if r.kind == "plan"]
    if not plans:
        return None
    plan = plans[0]
    cells = [(c.case, c.batch, c.length, c.layout, c.dtype, c.mode, c.repeat_of) for c in plan.matrix]
    return {**msgspec.to_builtins(plan), "matrix": None}, cells


def _both_ways(lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LogReading, LogReading]:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines))
    return read_log(path), careful_only(monkeypatch, path)


@pytest.mark.parametrize("name", sorted(HOSTILE_PLANS))
def test_a_hostile_plan_reads_as_the_careful_path_reads_it(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines, at = _plan_lines()
    lines[at] = HOSTILE_PLANS[name](lines[at])
    fast, careful = _both_ways(lines, tmp_path, monkeypatch)
    assert _summary(fast) == _summary(careful)
    assert _plan(fast) == _plan(careful)
    if "(valid" in name:
        assert fast.valid and _plan(fast) is not None, fast.problems[:3]
    else:
        assert any(p.line == at + 1 for p in fast.errors), fast.problems[:5]


def test_an_untouched_plan_takes_the_fast_path_and_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines, _ = _plan_lines()
    fast, careful = _both_ways(lines, tmp_path, monkeypatch)
    # The mirror read it: its event is not built yet (the careful path keeps the one it built).
    assert next(r for r in fast.records if r.kind == "plan").parsed is None
    assert next(r for r in careful.records if r.kind == "plan").parsed is not None
    assert fast.valid and _summary(fast) == _summary(careful) and _plan(fast) == _plan(careful)


@st.composite
def mutated_plans(draw: st.DrawFn, line: bytes) -> bytes:
    """The plan line with one change somewhere in its fields (tests/mutations.py)."""
    return mutate(draw, json.loads(line)).encode("utf-8", "surrogatepass")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_change_to_the_plan_reads_as_the_careful_path_reads_it(
    data: st.DataObject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines, at = _plan_lines()
    lines[at] = data.draw(mutated_plans(lines[at]))
    fast, careful = _both_ways(lines, tmp_path, monkeypatch)
    assert _summary(fast) == _summary(careful)
    assert _plan(fast) == _plan(careful)


def test_a_planned_cell_is_frozen_and_hashable_on_both_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's PlannedCell is frozen: the cells the fast path keeps are too (their defaults
    are filled in once, before anything reads them)."""
    lines, _ = _plan_lines()
    fast, careful = _both_ways(lines, tmp_path, monkeypatch)
    for reading in (fast, careful):
        plan = next(r.event for r in reading.records if r.kind == "plan")
        cell = plan.matrix[0]
        assert hash(cell) == hash(cell) and cell.repeat_of is None
        with pytest.raises((AttributeError, TypeError, ValueError)):
            cell.dtype = "float16"
    assert type(next(r.event for r in fast.records if r.kind == "plan").matrix[0]) is PlannedCell


def test_a_plan_read_on_the_fast_path_is_written_out_as_the_careful_path_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Either path gives the plan as the definition's Struct, cells and all: written out, the same bytes."""
    lines, _ = _plan_lines()
    fast, careful = _both_ways(lines, tmp_path, monkeypatch)
    plans = [next(r.event for r in reading.records if r.kind == "plan") for reading in (fast, careful)]
    assert msgspec.json.encode(plans[0]) == msgspec.json.encode(plans[1])
    assert plans[0] == plans[1]
