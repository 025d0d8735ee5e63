"""A timed call is fed the inputs its cell was checked with.

With ``timing.scope.preprocessing`` inside the clock, every timed call makes its inputs again
with the workload's ``make_inputs``. A workload that gives other shapes on a later call was then
timed on inputs it was never checked on, and its warm figure would stand beside a check it
never had. The collector now refuses to time such a cell (a WarmTimingFailed warning, no
timing), and validate refuses a log whose timing records other inputs than its cell's result
(logs of earlier collectors). The hand-edited logs are synthetic (tests/logbuilder) and say so.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from collector.__main__ import main as collector_main
from collector.timing import InputsChanged, timed_sample
from reportgen.contract.validation import read_log
from tests.conftest import REPO
from tests.logbuilder import case_key, complete_log
from tests.test_validation_contradictions_r3 import _errors, _line

NOTE = "Synthetic log for the timed-inputs check of validate; not a measurement."
SCOPE = {"preprocessing": True, "host_to_device": False, "output_retrieval": False}


def _tensor(*shape: int, dtype: str = "float32", contiguous: bool = True) -> Any:
    return SimpleNamespace(shape=tuple(shape), dtype=dtype, is_contiguous=lambda: contiguous)


def _sample(made: list[dict[str, Any]]) -> Any:
    checked = {"x": _tensor(1, 8)}
    calls = iter(made)
    sample, region, _ = timed_sample(
        lambda inputs: inputs,
        checked,
        checked,
        lambda: next(calls),
        lambda host: host,
        lambda: None,
        SCOPE,
        True,
    )
    assert region == ["preprocessing", "model_call"]
    return sample


def test_inputs_made_again_with_the_checked_shapes_are_timed() -> None:
    sample = _sample([{"x": _tensor(1, 8)}, {"x": _tensor(1, 8)}])
    assert sample() >= 0 and sample() >= 0


@pytest.mark.parametrize(
    ("made", "words"),
    [
        (
            {"x": _tensor(1, 9)},
            "input 'x' as shape [1, 9] float32 for a timed call, but the cell was checked with shape [1, 8]",
        ),
        ({"x": _tensor(1, 8, dtype="float16")}, "as shape [1, 8] float16"),
        ({"x": _tensor(1, 8, contiguous=False)}, "as shape [1, 8] float32, non-contiguous for a timed call"),
        (
            {"x": _tensor(1, 8), "y": _tensor(1)},
            "gave the inputs ['x', 'y'] for a timed call, but the cell was checked with ['x']",
        ),
    ],
    ids=["shape", "dtype", "layout", "names"],
)
def test_inputs_made_again_otherwise_stop_the_timing(made: dict[str, Any], words: str) -> None:
    sample = _sample([made])
    with pytest.raises(InputsChanged) as raised:
        sample()
    assert words in str(raised.value)


# --- the collector: the cell whose inputs change is not timed; the other is ----------------

WORKLOAD = """
import torch
from torch import nn

MODEL_REVISION = "changing-inputs test model (seed 0)"
ATTENTION_PATH = "none"
TASK_METRIC = "max_abs"
WEIGHTS_ORIGIN = "synthetic"
CALLS = {}


def build_model():
    torch.manual_seed(0)
    return nn.Linear(4, 4)


def make_inputs(batch, length, layout):
    # Batch 2 gives one more position on every call after the first: not a fixed-shape path.
    made = CALLS[batch] = CALLS.get(batch, -1) + 1
    return {"x": torch.ones(batch, length + (made if batch == 2 else 0), 4)}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    return 0.0
"""

PLAN = """
[workload]
name = "changing-inputs"
module = "changing_inputs.py"
description = "A workload whose make_inputs gives batch 2 another length each call."
target = "cpu"

[matrix]
shapes = [[1, 3], [2, 3]]
dtypes = ["float32"]
layouts = ["contiguous"]
modes = ["eager"]

[tolerances.float32]
atol = 1e-5
rtol = 1e-4

[timing]
warm_repetitions = 3
warmup = 1
scope = { preprocessing = true, host_to_device = false, output_retrieval = false, note = "make_inputs and the call" }
"""


def test_the_collector_does_not_time_a_cell_on_other_inputs_than_it_checked(tmp_path: Path) -> None:
    (tmp_path / "changing_inputs.py").write_text(WORKLOAD, encoding="utf-8")
    plan = tmp_path / "changing.toml"
    plan.write_text(PLAN, encoding="utf-8")
    out = tmp_path / "runs"
    assert collector_main(["--workload", str(plan), "--target", "cpu", "--out", str(out), "--cold", "off"]) == 0
    log = next(out.glob("*/events.jsonl"))
    reading = read_log(log)
    assert reading.errors == [], [p.format() for p in reading.errors]
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    steady, changing = case_key(1, 3, "eager"), case_key(2, 3, "eager")
    warm = {e["case"] for e in lines if e["kind"] == "timing" and e.get("warm")}
    assert steady in warm, "the control: a cell whose inputs stay the same is timed"
    assert changing not in warm
    failed = [e for e in lines if e["kind"] == "warning" and e.get("case") == changing]
    assert [e["category"] for e in failed] == ["WarmTimingFailed"]
    assert "make_inputs gave input 'x' as shape [2, 4, 4] float32 for a timed call" in failed[0]["message"]
    assert "checked with shape [2, 3, 4] float32" in failed[0]["message"]


# --- validate: a timing that records other inputs than its cell's result --------------------

CASE = case_key(1, 16, "eager")


def _fed(length: int, dtype: str = "int64") -> list[dict[str, Any]]:
    return [{"name": "input_ids", "shape": [1, length], "dtype": dtype, "nonfinite": 0, "contiguous": True}]


def _log(timed_length: int, call: str = "warm", dtype: str = "int64") -> list[dict[str, Any]]:
    events = complete_log()
    events[0]["origin_note"] = NOTE
    events[_line(events, "case_result", CASE) - 1]["inputs_fed"] = _fed(16)
    timing = events[_line(events, "timing", CASE) - 1]
    if call == "warm":
        timing["inputs_fed"] = _fed(timed_length, dtype)
    else:
        timing["cold"]["inputs_fed"] = _fed(timed_length, dtype)
    return events


def test_a_timing_fed_the_checked_inputs_is_valid(tmp_path: Path) -> None:
    assert _errors(tmp_path, _log(16)) == []
    assert _errors(tmp_path, _log(16, "cold")) == []


@pytest.mark.parametrize("call", ["warm", "cold"])
@pytest.mark.parametrize(
    ("length", "dtype", "fed", "recorded"),
    [
        (8, "int64", "of shape [1, 8]", "with shape [1, 16]"),
        # Another dtype of the checked shape (int32 ids where the cell was checked with int64) was
        # valid, and diff read its figure as the cell's speed.
        (16, "int32", "as int32", "as int64"),
    ],
    ids=["shape", "dtype"],
)
def test_a_timing_fed_other_inputs_than_its_cell_checked_is_refused_at_its_line(
    tmp_path: Path, call: str, length: int, dtype: str, fed: str, recorded: str
) -> None:
    events = _log(length, call, dtype=dtype)
    prefix = "cold." if call == "cold" else ""
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'timing', CASE)}: timing {CASE!r}: {prefix}inputs_fed: the {call} timed call was fed input "
        f"'input_ids' {fed}, but the cell's case_result (line {_line(events, 'case_result', CASE)}) records "
        f"it {recorded} at the checked call: the timing is not of the inputs the cell was checked with; "
        "the log contradicts itself"
    ]


CHILD_WORKLOAD = WORKLOAD.replace(
    """    made = CALLS[batch] = CALLS.get(batch, -1) + 1
    return {"x": torch.ones(batch, length + (made if batch == 2 else 0), 4)}""",
    """    # In a fresh process the collector starts, one more position: any difference between processes.
    import os

    return {"x": torch.ones(batch, length + ("COLLECTOR_LAUNCH_WALL" in os.environ), 4)}""",
)


@pytest.mark.slow  # a compiled cell in a fresh process
def test_a_fresh_process_given_other_inputs_checks_the_cell_and_times_no_cold_call(tmp_path: Path) -> None:
    """Before: make_inputs giving the fresh process other inputs than the checked ones failed the
    cell ('phase run: InputsChanged') and blocked the report; only its timing is stopped."""
    assert CHILD_WORKLOAD != WORKLOAD
    (tmp_path / "changing_inputs.py").write_text(CHILD_WORKLOAD, encoding="utf-8")
    plan = tmp_path / "changing.toml"
    plan.write_text(
        PLAN.replace("shapes = [[1, 3], [2, 3]]", "shapes = [[1, 3]]").replace(
            'modes = ["eager"]', 'modes = ["compiled"]'
        ),
        encoding="utf-8",
    )
    out = tmp_path / "runs"
    assert collector_main(["--workload", str(plan), "--target", "cpu", "--out", str(out)]) == 0
    log = next(out.glob("*/events.jsonl"))
    assert read_log(log).errors == []
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    case = case_key(1, 3, "compiled")
    (result,) = [e for e in lines if e["kind"] == "case_result" and e["case"] == case]
    assert result["status"] == "pass", result.get("failure")
    assert not [
        e
        for e in lines
        if e["kind"] == "timing"
        and e["case"] == case
        and e.get("cold", {}).get("fresh_process")
        and "seconds" in e["cold"]
        and e["cold"].get("cache_condition") == "fresh_process_empty_cache"
    ]
    warned = [e["message"] for e in lines if e["kind"] == "warning" and e.get("case") == case]
    assert any(
        m.startswith("cold first call not measured: InputsChanged: make_inputs gave input 'x'") for m in warned
    ), warned


def test_a_cold_call_taken_before_its_cells_check_is_held_to_the_inputs_the_check_records(tmp_path: Path) -> None:
    """A cold call in a fresh process is logged before its cell's result, so its inputs_fed were
    never compared with the checked ones: another dtype or shape there was valid (second review
    of this round, finding 7). It is judged when the result comes, naming the timing's line."""
    sample = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl"
    events = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
    case = "b1-l16-contiguous-float32-compiled"
    timing = next(i for i, e in enumerate(events) if e["kind"] == "timing" and e.get("case") == case and e.get("cold"))
    result = next(i for i, e in enumerate(events) if e["kind"] == "case_result" and e.get("case") == case)
    assert timing < result, "the sample's cold call comes before its cell's result"
    events[timing]["cold"]["inputs_fed"][0]["dtype"] = "int32"
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    errors = [(p.line, p.message) for p in read_log(path).errors]
    assert len(errors) == 1 and errors[0][0] == result + 1, errors
    assert errors[0][1].startswith(
        f"case_result {case!r}: the cold timed call of line {timing + 1} was fed input 'input_ids' as int32, but this result records it as int64"
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"contiguous": False, "strides": [32, 2]},
            "layout_achieved is true, but the tensors inputs_fed records are noncontiguous",
        ),
        ({"device": "meta"}, "none of the tensors inputs_fed records is on a cpu device"),
    ],
    ids=["layout", "device"],
)
def test_a_warm_loops_inputs_fed_are_held_to_its_layout_and_device(
    tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    """A warm loop's inputs_fed marked non-contiguous beside layout_achieved true, or on the meta
    device, validated, and diff read the loop as the cell's (second review of this round,
    finding 7): the checks a result's inputs_fed get hold for a warm loop's too."""
    sample = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl"
    events = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
    case = "b1-l16-contiguous-float32-eager"
    warm = next(i for i, e in enumerate(events) if e["kind"] == "timing" and e.get("case") == case and e.get("warm"))
    assert events[warm]["layout_achieved"] is True
    for tensor in events[warm]["inputs_fed"]:
        tensor.update(change)
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    errors = [(p.line, p.message) for p in read_log(path).errors]
    assert len(errors) == 1 and errors[0][0] == warm + 1 and said in errors[0][1], errors
