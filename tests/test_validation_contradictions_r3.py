"""`reportgen validate` on logs whose results contradict what the same log records beside them:
a training cell judged without its steps, a judged cell without the figures it was judged
from, tensors fed on another device than the environment names, a pass with more non-finite
outputs than the collector lets pass, run_end counts that are not the log's, a layout that its
own tensors do not have, and a cache check said to reuse a graph that its compile event says
was built. Each log is a synthetic one (tests/logbuilder) edited by hand, and says so in its
run_start; each rule is one the collector can never break (the docstrings of
reportgen/contract/consistency.py name the collector code each follows)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from reportgen.contract.validation import read_log
from tests.logbuilder import base_events, case_key, complete_log, dumps, finish, noted, training_log, with_envelope

Lines = list[dict[str, Any]]
COMPILED = case_key(1, 16, "compiled")
REPEAT = f"{COMPILED}-repeat"
NOTE = "Synthetic log for the result contradiction checks of validate; not a measurement."


def _marked(events: Lines) -> Lines:
    return noted(events, NOTE)


def _errors(tmp_path: Path, events: Lines) -> list[str]:
    """The log's errors as "line: message" (seq numbers made increasing again first)."""
    for seq, event in enumerate(events):
        event["seq"] = seq
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(events), encoding="utf-8")
    return [f"{p.line}: {p.message}" for p in read_log(path).errors]


def _line(events: Lines, kind: str, case: str | None = None) -> int:
    return next(i for i, e in enumerate(events) if e["kind"] == kind and e.get("case", case) == case) + 1


def _result(events: Lines, case: str = COMPILED) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == "case_result" and e["case"] == case)


def _one(kind: str, events: Lines) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == kind)


def _fed(device: str, contiguous: bool = True) -> dict[str, Any]:
    return {
        "name": "input_ids",
        "shape": [1, 16],
        "dtype": "int64",
        "nonfinite": 0,
        "contiguous": contiguous,
        "strides": [16, 1] if contiguous else [32, 2],
        "device": device,
    }


def _with_fed(events: Lines, device: str) -> Lines:
    """Every result with the tensors its first call was fed, as a 1.1 collector records them."""
    for event in events:
        if event["kind"] == "case_result":
            event.update(inputs_fed=[_fed(device)], layout_fed="contiguous", layout_achieved=True)
    return events


def test_a_training_cell_judged_without_its_steps_or_train_result_is_an_error(tmp_path: Path) -> None:
    """Before: a training log with every train_step and train_result removed validated and the
    report called the cells suitable, 'training steps as the plan ran them'. The collector
    writes a cell's steps (at least one) and its train_result before its result."""
    events = _marked(training_log())
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    no_steps = [e for e in events if not (e["kind"] == "train_step" and e["case"] == COMPILED)]
    assert _errors(tmp_path, no_steps) == [
        f"{_line(no_steps, 'case_result', COMPILED)}: case_result {COMPILED!r}: status pass, but no train_step of "
        "this training cell is logged before it: the collector writes them before the result; the log contradicts itself"
    ]
    no_result = [e for e in events if not (e["kind"] == "train_result" and e["case"] == COMPILED)]
    assert _errors(tmp_path, no_result) == [
        f"{_line(no_result, 'case_result', COMPILED)}: case_result {COMPILED!r}: status pass, but no train_result of "
        "this training cell is logged before it: the collector writes them before the result; the log contradicts itself"
    ]
    # A skipped cell ran no step and was not timed: nothing is missing.
    no_steps = [e for e in no_steps if not (e["kind"] == "timing" and e["case"] == COMPILED)]
    skipped = _result(no_steps)
    for figure in ("outputs", "error_stats", "task_metric"):
        del skipped[figure]
    skipped.update(status="skipped", skip_reason="synthetic: not run")
    assert _errors(tmp_path, no_steps) == []


def test_a_judged_cell_without_its_figures_is_an_error(tmp_path: Path) -> None:
    """Before: results with status pass and neither error_stats nor task_metric validated, and
    the report called every cell suitable on no figure at all. Every collector since schema 1.0
    writes both beside a pass or a mismatch; a task_metric is required where the plan gives
    the dtype a task criterion."""
    events = _marked(complete_log())
    del _result(events)["error_stats"]
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: status pass, but no error_stats: the "
        "comparison its status rests on is not recorded; the log contradicts itself"
    ]
    events = _marked(complete_log())
    del _result(events)["task_metric"]
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: status pass, but no task_metric, though "
        "the plan gives a task criterion for this cell's dtype; the log contradicts itself"
    ]
    del _one("plan", events)["tolerances"]["float32"]["task"]
    for event in events:
        if event["kind"] == "case_result":
            event.get("task_metric", {})["criterion"] = None
    assert _errors(tmp_path, events) == []


def test_tensors_fed_on_another_device_than_the_environment_names_are_an_error(tmp_path: Path) -> None:
    """Before: a CPU run relabelled cuda (environment, plan and run_start) validated and was
    reported as evidence for cuda, though every tensor its cells were fed says "cpu". The cpu
    and cuda adapters feed every input on their own device: a judged cell none of whose tensors
    is there contradicts the environment, either way round."""
    events = _with_fed(_marked(complete_log()), "cuda:0")
    _one("environment", events).update(backend_family="cuda", device_type="cuda")
    assert _errors(tmp_path, events) == []
    # One input kept on the CPU by the workload (lengths, say) beside one on the device: not judged.
    _result(events)["inputs_fed"].append(dict(_fed("cpu"), name="lengths"))
    assert _errors(tmp_path, events) == []
    _result(events)["inputs_fed"] = [_fed("cpu")]
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: none of the tensors inputs_fed records "
        "is on a cuda device ('cpu'), but environment.device_type is 'cuda'; the log contradicts itself"
    ]
    events = _with_fed(_marked(complete_log()), "cpu")
    assert _errors(tmp_path, events) == []
    _result(events)["inputs_fed"] = [_fed("cuda:0")]
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: none of the tensors inputs_fed records "
        "is on a cpu device ('cuda:0'), but environment.device_type is 'cpu'; the log contradicts itself"
    ]
    # The neuron descriptor says so too (collector 0.21.0): a neuron log fed on the CPU, as the
    # tests' stand-in feeds it, contradicts itself.
    events = _with_fed(_marked(complete_log()), "cpu")
    _one("environment", events).update(backend_family="unknown", device_type="neuron")
    assert (
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: none of the tensors inputs_fed records "
        "is on a neuron device ('cpu'), but environment.device_type is 'neuron'; the log contradicts itself"
        in _errors(tmp_path, events)
    )
    # A target whose descriptor does not say where its adapter feeds (none here knows 'rocm'): not judged.
    _one("environment", events).update(device_type="rocm")
    assert not [e for e in _errors(tmp_path, events) if "inputs_fed" in e]


def _collector_references(events: Lines, nonfinite: int) -> None:
    """References keyed by shape as the collector keys them (b1-l16-contiguous), with their count."""
    for event in events:
        if event["kind"] == "reference":
            event.update(shape=event["shape"].removesuffix("-float32"), nonfinite=nonfinite)


def test_a_pass_with_more_non_finite_outputs_than_the_collector_lets_pass_is_an_error(tmp_path: Path) -> None:
    """Before: a pass whose output counted 100 non-finite elements, against a reference with
    none, validated as suitable. The collector calls a cell whose outputs hold more non-finite
    elements than its shape's reference nonfinite (without judged regions, which leave some
    out), and a training cell with a non-finite loss likewise."""
    events = _marked(complete_log())
    _collector_references(events, 0)
    assert _errors(tmp_path, events) == []
    _result(events)["outputs"][0]["nonfinite"] = 5
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: status pass, but outputs count 5 "
        "non-finite element(s), more than the 0 of this shape's reference: the collector calls such a cell "
        "nonfinite; the log contradicts itself"
    ]
    _collector_references(events, 5)  # as many as the reference: a pass
    assert _errors(tmp_path, events) == []
    _collector_references(events, 0)
    rule = {"output": "hidden", "mask": "attention_mask", "description": "attention_mask != 0"}
    _one("plan", events)["compare"] = {"outputs": [rule], "params": []}  # judged regions: not judged here
    assert _errors(tmp_path, events) == []

    events = _marked(training_log())
    _result(events)["outputs"][0]["nonfinite"] = 1
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: status pass, but outputs count 1 "
        "non-finite loss value(s): the collector calls such a training cell nonfinite; the log contradicts itself"
    ]


def test_run_end_counts_that_are_not_the_log_s_are_an_error(tmp_path: Path) -> None:
    """Before: run_end saying 99 cells planned and 3 recorded, of a plan of 4 cells with 4
    results, validated. The collector writes the plan's cell count and counts each cell once its
    result is written: a complete run counts every result, an aborted one at most as many."""
    events = _marked(complete_log())
    end = events[-1]
    end["cells_planned"] = 5
    assert _errors(tmp_path, events) == [
        f"{len(events)}: run_end: cells_planned is 5, but the plan's matrix lists 4 cell(s); the log contradicts itself"
    ]
    end["cells_planned"] = 4
    end["cells_recorded"] = 5
    message = "cells_recorded is {}, but the log holds 4 case_result line(s): the collector counts a cell once its result is written"
    assert _errors(tmp_path, events) == [f"{len(events)}: run_end: {message.format(5)}; the log contradicts itself"]
    end["cells_recorded"] = 3
    assert _errors(tmp_path, events) == [f"{len(events)}: run_end: {message.format(3)}; the log contradicts itself"]
    # An interrupt between a cell's result line and its count: an aborted run counts one fewer.
    end.update(status="aborted", reason="received SIGINT")
    assert _errors(tmp_path, events) == []


def test_a_layout_its_own_tensors_do_not_have_is_an_error(tmp_path: Path) -> None:
    """Before: a non-contiguous cell whose recorded tensors were all contiguous kept
    layout_fed noncontiguous and layout_achieved true, and validated as tested for that layout.
    The collector derives layout_fed from inputs_fed (non-contiguous when any tensor is) and
    layout_achieved from every watched call, inputs_fed's among them."""
    events = _with_fed(_marked(complete_log()), "cpu")
    result = _result(events)
    result["layout_fed"] = "noncontiguous"
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: layout_fed is noncontiguous, but the "
        "tensors inputs_fed records for that call are contiguous; the log contradicts itself"
    ]
    result["inputs_fed"] = [_fed("cpu", contiguous=False)]
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: layout_achieved is true, but the "
        "tensors inputs_fed records are noncontiguous, not the planned contiguous layout; the log contradicts itself"
    ]
    result["layout_achieved"] = False  # what the collector records when the model got another layout
    assert _errors(tmp_path, events) == []


def _repeat_log(graphs: int, recompiled: bool) -> Lines:
    """The complete log with a cache check of the b1-l16 compiled cell after it."""
    events = _marked(base_events())
    _one("plan", events)["matrix"].append(
        {
            "case": REPEAT,
            "batch": 1,
            "length": 16,
            "layout": "contiguous",
            "dtype": "float32",
            "mode": "compiled",
            "repeat_of": COMPILED,
        }
    )
    compile_event = dict(
        next(e for e in events if e["kind"] == "compile" and e["case"] == COMPILED),
        case=REPEAT,
        graphs=graphs,
        cache_misses=graphs,
        cache_condition="compiled_in_process",
    )
    result = dict(copy.deepcopy(_result(events)), case=REPEAT, recompiled=recompiled)
    return with_envelope(finish(events + [compile_event, result]))


def test_a_cache_check_said_to_reuse_a_graph_its_compile_event_built_is_an_error(tmp_path: Path) -> None:
    """Before: a cache check whose compile event counted a graph built kept recompiled false
    and validated as a fixed-shape path that reuses its graph. The collector sets recompiled
    when the check's first call built a graph or compiled a frame, the graphs its compile event
    counts."""
    assert _errors(tmp_path, _repeat_log(graphs=0, recompiled=False)) == []
    assert _errors(tmp_path, _repeat_log(graphs=1, recompiled=True)) == []
    events = _repeat_log(graphs=1, recompiled=False)
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', REPEAT)}: case_result {REPEAT!r}: recompiled is false, but the compile event "
        f"of this cache check on line {_line(events, 'compile', REPEAT)} counts 1 graph(s) built; the log contradicts itself"
    ]
