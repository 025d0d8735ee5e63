"""Every cell of the matrix: correctness against the reference, compile facts, operators."""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import Any, Callable

import torch

from collector import interrupt
from collector.backends import OpRecorder
from collector.compare import judged_nonfinite, compare, describe, describe_input
from collector.localize import localize, wanted as localize_wanted
from collector.plan import Cell
from collector.run import children
from collector.run.capture import (
    CompileWatch,
    captured_warnings,
    compile_facts,
    failure,
    failure_phase,
    fed_facts,
    kept_warnings,
    write_failed,
    write_operators,
)
from collector.run.state import CellOutcome, Run
from collector.timing import InputsChanged
from collector.run.timings import (
    add_cold_facts,
    cold_not_measured,
    remeasure,
    scoped_sample,
    time_warm_cell,
)
from collector.planschema import served_bucket
from collector.run.generation_cells import run_generation_cell
from collector.run.training_cells import run_training_cell
from collector.workload import DTYPES, FedInputs, TaskMetricError, cast_inputs, input_key, task_metric, to_device


def run_cells(run: Run) -> None:
    groups: dict[tuple[str, str], list[tuple[int, Cell]]] = {}
    for index, cell in enumerate(run.cells, start=1):
        groups.setdefault((cell.dtype, cell.layout), []).append((index, cell))
    graph = _served_by(run)
    for (dtype, _), members in groups.items():
        group = [c for _, c in members]
        idle = {index: why for index, cell in members if (why := idle_repeat(cell, group, graph)) is not None}
        for index, cell in members:
            if index in idle:
                _skip(run, cell, index, idle[index])
        members = [(i, c) for i, c in members if i not in idle]
        elsewhere: set[str] = set()
        if children.wanted(run, dtype):
            elsewhere = children.run_compiled(run, members)
        run_group(run, dtype, [(i, c) for i, c in members if c.case not in elsewhere], elsewhere)


def _served_by(run: Run) -> Callable[[Cell], Any]:
    """The graph a compiled cell compiles: its shape; in a generation plan, the bucket its request
    is routed to, None for a request the plan's policy refuses (nothing is compiled for it)."""
    padding = run.plan.padding or {}
    if not run.plan.generation:
        return lambda c: (c.batch, c.length)
    buckets, policy = padding.get("buckets", []), padding.get("above_largest")

    def bucket(cell: Cell) -> Any:
        served = served_bucket(cell.length, buckets, policy)
        return None if served is None else (cell.batch, served)

    return bucket


def idle_repeat(
    cell: Cell, group: list[Cell], graph: Callable[[Cell], Any] = lambda c: (c.batch, c.length)
) -> str | None:
    """Why a cache-check repeat among the chosen cells of its (dtype, layout) group, in their run
    order, would test nothing, or None: it repeats its shape after the group's other compiled
    shapes, so it needs its own shape compiled before it and another graph compiled between
    (--only may leave out either, and a plan whose cache check is its last shape has none;
    ``graph``: what a cell compiles, a generation request's bucket, None for a refused one).
    Without its own it is the shape's first compile; right after it, any cache holds it."""
    if not cell.repeat_of:
        return None
    chosen = {c.case for c in group}
    if cell.repeat_of not in chosen:
        return f"the cell it repeats, {cell.repeat_of}, is not among the chosen cells (--only): the repeat would be its shape's first compile"
    cases = [c.case for c in group]
    after = group[cases.index(cell.repeat_of) + 1 : cases.index(cell.case)]
    own = graph(cell)
    if not any(c.mode == "compiled" and not c.repeat_of and graph(c) not in (None, own) for c in after):
        return (
            "no other shape of its group is compiled between its own and it (the chosen cells, or the plan's "
            "order; in a generation plan, no other bucket a request is padded to): a repeat straight after its "
            "own graph tests no cache"
        )
    return None


def run_group(
    run: Run, dtype: str, members: list[tuple[int, Cell]], elsewhere: frozenset[str] | set[str] = frozenset()
) -> None:
    """The cells of one (dtype, layout) group in this process, in order; ``elsewhere``: the
    group's cells a fresh child already recorded."""
    if not members:
        return
    # A fresh Dynamo state per group keeps one group's compiled shapes from counting
    # against another's recompile limit; within a group, shapes accumulate as they
    # would in a serving process, which is what the cache-check repeat tests.
    torch._dynamo.reset()
    reason = run.plan.missing_tolerance(dtype)
    model = None if reason else _device_model(run, dtype)
    compiled, compile_error = None, None
    # Training cells compile their own fresh model each (training changes the weights).
    if model is not None and not run.plan.training and any(c.mode == "compiled" for _, c in members):
        try:
            compiled = run.backend.compile(model, run.plan.compile_options)
        except Exception as exc:  # e.g. the backend is not registered
            compile_error = failure("compile", exc)
    for index, cell in members:
        interrupt.check()
        _one_cell(run, index, cell, model, compiled, reason, compile_error, elsewhere)
        if run.cell_done is not None:
            run.cell_done(cell)
    # Unstable warm series are measured again while this group's compiled graphs are current.
    remeasure(run, [cell.case for _, cell in members])
    # After the group's cells (their checks and timings) so the extra compiles change none of them.
    for cell, why in run.localize_pending:
        interrupt.check()
        if model is not None:  # a mismatch to localise came from this model's outputs
            localize(run, cell, model, why)
    run.localize_pending.clear()


def _one_cell(
    run: Run,
    index: int,
    cell: Cell,
    model: torch.nn.Module | None,
    compiled: Any,
    skip: str | None,
    compile_failure: dict[str, str] | None,
    elsewhere: frozenset[str] | set[str],
) -> None:
    """One cell, recorded. ``skip``: why the group cannot run at all; ``compile_failure``: the
    group's compile failed (its compiled cells record it, its eager cells still run)."""
    if skip is not None or model is None:
        _skip(run, cell, index, skip if skip is not None else "the model could not be moved to the device")
        return
    if cell.repeat_of in elsewhere:
        _skip(
            run,
            cell,
            index,
            "the shape it repeats was compiled in a fresh process that ended before this cache check; a repeat in another process would test nothing",
        )
        return
    refused = run.refused.get(input_key(cell.batch, cell.length, cell.layout))
    if refused is not None:
        _skip(run, cell, index, f"request refused by the plan's policy above the largest bucket: {refused}")
        return
    shape_failure = run.shape_failures.get(input_key(cell.batch, cell.length, cell.layout))
    if shape_failure is not None:
        why = f"this shape's {shape_failure['phase']} failed before any call of this cell: nothing ran, so nothing was tracked"
        write_failed(run, cell, {}, shape_failure, None, ran=False, why=why)
        run.recorded += 1
        return
    if cell.mode == "compiled" and compile_failure is not None:
        write_failed(run, cell, {}, compile_failure, None, ran=False)
        run.recorded += 1
        return
    run.progress.say(f"{cell.case}: {'compiling and ' if cell.mode == 'compiled' else ''}checking", index)
    if run.plan.training:
        outcome = run_training_cell(run, cell, model)
    elif run.plan.generation:
        # Timed within the cell (time to first token, per-token decode), not by the warm loop below.
        run_generation_cell(run, cell, model if cell.mode == "eager" else compiled)
        run.recorded += 1
        return
    else:
        outcome = _run_cell(run, cell, model if cell.mode == "eager" else compiled)
    run.recorded += 1
    if outcome.status == "pass" and outcome.call is not None and time_warm_cell(run, cell, outcome):
        run.passed[cell.case] = outcome


def _device_model(run: Run, dtype: str) -> torch.nn.Module | None:
    try:
        return copy.deepcopy(run.model).to(device=run.backend.device, dtype=DTYPES[dtype])
    except Exception as exc:  # recorded per cell as a skip with the reason
        run.progress.say(f"model could not be moved to {run.backend.device} as {dtype}: {exc}")
        return None


def _skip(run: Run, cell: Cell, index: int, reason: str) -> None:
    run.progress.say(f"{cell.case}: skipped: {reason}", index, ran=False)
    run.log.write("case_result", case=cell.case, status="skipped", skip_reason=reason)
    run.recorded += 1


def _run_cell(run: Run, cell: Cell, model: torch.nn.Module) -> CellOutcome:
    key = input_key(cell.batch, cell.length, cell.layout)
    run.backend.begin_cell()
    result: dict[str, Any] = {}
    try:
        cpu_inputs = cast_inputs(run.inputs[key], DTYPES[cell.dtype])
        result["inputs"] = [describe_input(k, v) for k, v in cpu_inputs.items()]
    except Exception as exc:
        write_failed(run, cell, result, failure("inputs", exc), None)
        return CellOutcome("error")
    try:
        inputs = to_device(cpu_inputs, run.backend.device)
    except Exception as exc:
        write_failed(run, cell, result, failure("transfer", exc), None)
        return CellOutcome("error")

    def call_with(feed: dict[str, torch.Tensor]) -> Any:
        if not torch.is_grad_enabled():  # the warm loop turned autograd off once for all samples
            return run.workload.run_model(model, feed)
        with torch.no_grad():
            return run.workload.run_model(model, feed)

    def call() -> Any:
        return call_with(inputs)

    first = _plain_first(call, run.backend.synchronize)
    cold: dict[str, Any] | None = None
    if run.cold_next and cell.mode == "compiled" and not cell.repeat_of:  # a repeat is never timed cold
        # The first compiled call in a fresh child: one compile serves the cold timing (the
        # stages the plan's timing.scope names) and this cell's check.
        run.cold_next = False
        first, cold = _cold_first(run, cell, call_with, inputs, cpu_inputs)

    recorder = OpRecorder() if cell.mode == "eager" else None
    watch = CompileWatch(run.backend) if cell.mode == "compiled" else None
    # Every call of this cell (first call, the eager op-recording call, the compiled repeat)
    # is watched where the model receives its arguments.
    fed = FedInputs(model)
    fed.arm(8)
    with captured_warnings() as warns:
        try:
            outputs, first_s = _first_call(run, first, call, recorder, watch)
            if watch is not None:
                watch.check_repeat(call, run.backend.synchronize)
        except interrupt.ENDS_RUN:
            raise
        except BaseException as exc:
            phase = failure_phase(exc, watch is not None)
            result["warnings"] = warns.lines()  # bounded as write_failed writes them
            result.update(fed_facts(fed, cell.layout))
            write_failed(run, cell, result, failure(phase, exc), watch, cold=cold is not None)
            return CellOutcome("error")
        finally:
            fed.remove()
    result["warnings"] = kept_warnings(warns.lines() + run.backend.cell_log())
    result.update(fed_facts(fed, cell.layout))
    compile_event: dict[str, Any] = {}
    if watch is not None:
        compile_event = compile_facts(run, cell, watch, first_s, cold is not None)
        run.log.write("compile", case=cell.case, **compile_event)
        if cell.repeat_of:
            result["recompiled"] = watch.graphs_first > 0 or watch.frames_first > 0
    if cold is not None and "not_timed" in cold:
        cold_not_measured(run, cell, None, cold["not_timed"])
        cold = None
    try:
        status = _judge(run, cell, key, outputs, result)
    except interrupt.ENDS_RUN:
        raise
    except BaseException as exc:  # outputs that cannot be compared, a task metric that raised
        for partial in ("outputs", "error_stats", "task_metric"):
            result.pop(partial, None)
        fail = failure("compare", exc)
        if isinstance(exc, TaskMetricError):
            fail["type"] = exc.kind
        write_failed(run, cell, result, fail, None)
        return CellOutcome("error")
    run.log.write("case_result", case=cell.case, status=status, **result)
    write_operators(run, cell, recorder)
    why = localize_wanted(run, cell, status)
    if why is not None:
        run.localize_pending.append((cell, why))
    stats = result.get("error_stats") or {}
    first_check = {
        "mismatched": stats.get("mismatched", 0),
        "total": stats.get("total", 0),
        "max_abs": stats.get("max_abs"),
        "passed": status == "pass",
    }
    if cold is not None:
        add_cold_facts(cold, compile_event, result)
        cold["output_check"] = first_check
    return CellOutcome(
        status,
        first_s,
        call,
        module=model,
        call_with=call_with,
        host_inputs=cpu_inputs,
        device_inputs=inputs,
        first_check=first_check,
        cold=cold,
    )


def _plain_first(call: Callable[[], Any], synchronize: Callable[[], None]) -> Callable[[], tuple[Any, float]]:
    """The first call on the clock (the model call only): its outputs and seconds."""

    def first() -> tuple[Any, float]:
        start = time.perf_counter()
        outputs = call()
        synchronize()
        return outputs, time.perf_counter() - start

    return first


def _cold_first(
    run: Run, cell: Cell, call_with: Callable[[dict[str, Any]], Any], inputs: dict[str, Any], cpu_inputs: dict[str, Any]
) -> tuple[Callable[[], tuple[Any, float]], dict[str, Any]]:
    """The cold first call, timed as the plan's timing.scope asks; the cell checks its outputs.

    Returns the first call (outputs and the model call's own seconds, which the compile event
    records) and the cold facts it fills in: every stage's seconds, the wall clock at the start.
    """
    kept: dict[str, Any] = {}
    stages: dict[str, float] = {}

    def keep(feed: dict[str, Any]) -> Any:
        kept["outputs"] = call_with(feed)
        return kept["outputs"]

    sample, region, notes = scoped_sample(run, cell, keep, inputs, cpu_inputs, stages)
    cold: dict[str, Any] = {"timed_region": region, "timed_notes": notes}

    def first() -> tuple[Any, float]:
        run.backend.synchronize()
        cold["ready_wall"] = time.time()
        try:
            cold["seconds"] = sample()
        except InputsChanged as exc:
            # make_inputs gave this process other inputs than the checked ones (before the model
            # was called): the cell is checked on its own inputs, and its cold call is not timed.
            cold["not_timed"] = f"InputsChanged: {exc}"
            start = time.perf_counter()
            keep(inputs)
            run.backend.synchronize()
            return kept["outputs"], time.perf_counter() - start
        return kept["outputs"], stages["model_call"]

    return first, cold


def _first_call(
    run: Run,
    first: Callable[[], tuple[Any, float]],
    call: Callable[[], Any],
    recorder: OpRecorder | None,
    watch: CompileWatch | None,
) -> tuple[dict[str, torch.Tensor], float]:
    if watch is not None:
        watch.before()
    try:
        with run.progress.heartbeat("compiling and running the first call" if watch is not None else "first call"):
            outputs, elapsed = first()
        # The judged outputs as the first call left them: the calls after it (the ops' recording,
        # a compiled repeat, the warm loop) reuse the cell's inputs, and an output that is its
        # input written in place (x.mul_(2); return x) would change under them.
        if isinstance(outputs, Mapping):
            outputs = {k: v.detach().clone() if isinstance(v, torch.Tensor) else v for k, v in outputs.items()}
    finally:  # a compile that raised: its counters and cache listing are read as they stand
        if watch is not None:
            watch.after_first()
    if recorder is not None:
        # A second eager call records the ops, so dispatch overhead stays out of the timing.
        with recorder:
            call()
    return outputs, elapsed


def _judge(run: Run, cell: Cell, key: str, outputs: dict[str, torch.Tensor], result: dict[str, Any]) -> str:
    reference = run.references[key]
    tol = run.plan.tolerance(cell.dtype)
    result["outputs"] = [describe(k, v) for k, v in outputs.items()]
    try:
        rules = run.plan.compare["outputs"]
        stats = compare(outputs, reference, tol["atol"], tol["rtol"], rules, run.inputs[key])
        nonfinite = judged_nonfinite(outputs, reference, rules, run.inputs[key]) if rules else None
    except ValueError as exc:
        result["failure"] = failure("compare", exc)
        return "error"
    result["error_stats"] = stats
    metric = task_metric(run.workload, run.plan, outputs, reference, run.inputs[key])
    criterion = tol.get("task")
    passed = None
    if criterion and metric is not None:
        passed = metric >= criterion["threshold"] if criterion["op"] == ">=" else metric <= criterion["threshold"]
    elif criterion:
        passed = False
    result["task_metric"] = {
        "name": getattr(run.workload, "TASK_METRIC", "task_metric"),
        "value": metric,
        "criterion": criterion,
        "passed": passed,
    }
    if nonfinite is not None:
        # Judged regions declared: non-finite values outside them are recorded (per_output.outside), not judged.
        if nonfinite[0] > nonfinite[1]:
            return "nonfinite"
    elif sum(o["nonfinite"] for o in result["outputs"]) > sum(
        describe(k, v)["nonfinite"] for k, v in reference.items()
    ):
        return "nonfinite"
    if stats["mismatched"] or passed is False:
        return "mismatch"
    return "pass"
