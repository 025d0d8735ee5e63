"""The collector makes a shape's inputs once and gives each cell of that shape (eager or
compiled, any dtype) a copy cast to its dtype, so every result of one batch, length and layout
records inputs of the same names and shapes. A log whose compiled cell records a smaller input
than its eager twin would compare a workload with another one ("compiled 3x faster" at a shape
it never ran): validate refuses it at the line. The logs are synthetic (tests/logbuilder) edited
by hand, and say so in their run_start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.logbuilder import case_key, complete_log
from tests.test_validation_contradictions_r3 import _errors, _line

NOTE = "Synthetic log for the same-inputs check of validate; not a measurement."
EAGER, COMPILED = case_key(1, 16, "eager"), case_key(1, 16, "compiled")


def _inputs(batch: int, length: int, names: tuple[str, ...] = ("input_ids", "attention_mask")) -> list[dict[str, Any]]:
    return [
        {"name": name, "shape": [batch, length], "dtype": "int64", "nonfinite": 0, "contiguous": True} for name in names
    ]


def _log() -> list[dict[str, Any]]:
    """Every result given the inputs of its own batch and length."""
    events = complete_log()
    events[0]["origin_note"] = NOTE
    for event in events:
        if event["kind"] == "case_result":
            batch, length = (int(part[1:]) for part in event["case"].split("-")[:2])
            event["inputs"] = _inputs(batch, length)
    return events


def test_every_cell_of_a_shape_fed_its_inputs_is_valid(tmp_path: Path) -> None:
    assert _errors(tmp_path, _log()) == []


def test_a_cell_fed_a_smaller_input_than_its_twin_is_refused_at_its_line(tmp_path: Path) -> None:
    events = _log()
    line = _line(events, "case_result", COMPILED)
    events[line - 1]["inputs"] = _inputs(1, 8)
    errors = _errors(tmp_path, events)
    assert errors == [
        f"{line}: case_result {COMPILED!r}: input 'input_ids' has shape [1, 8], but {EAGER!r} "
        f"(line {_line(events, 'case_result', EAGER)}), a cell of the same batch, length and layout, has shape "
        "[1, 16]: the collector makes a shape's inputs once; the log contradicts itself"
    ]


def test_a_cell_missing_an_input_its_twin_had_is_refused(tmp_path: Path) -> None:
    events = _log()
    events[_line(events, "case_result", COMPILED) - 1]["inputs"] = _inputs(1, 16, ("input_ids",))
    errors = _errors(tmp_path, events)
    assert len(errors) == 1 and "input 'attention_mask' is not among its inputs, but" in errors[0], errors
    assert "has it with shape [1, 16]" in errors[0]


def test_a_long_shape_is_named_by_its_first_dimensions(tmp_path: Path) -> None:
    events = _log()
    fed = events[_line(events, "case_result", COMPILED) - 1]["inputs"]
    fed[0]["shape"] = [1] * 5000
    errors = _errors(tmp_path, events)
    assert len(errors) == 1 and "has shape [1, 1, 1, 1, 1, 1, 1, 1, ... 5000 in all], but" in errors[0], errors
    assert len(errors[0]) < 500


def test_inputs_in_another_order_or_repeated_are_named(tmp_path: Path) -> None:
    """The names and shapes alike, in another order: the message had named an input ''."""
    events = _log()
    fed = events[_line(events, "case_result", COMPILED) - 1]["inputs"]
    fed.reverse()
    errors = _errors(tmp_path, events)
    assert len(errors) == 1 and "inputs are 'attention_mask', 'input_ids', but" in errors[0], errors
    assert "records 'input_ids', 'attention_mask'" in errors[0]
    fed.reverse()
    fed.append(dict(fed[0]))
    errors = _errors(tmp_path, events)
    assert len(errors) == 1 and "inputs are 'input_ids', 'attention_mask', 'input_ids', but" in errors[0], errors
