"""Training cells: fixed steps from the same weights, inputs and seed as the reference run."""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any

import torch

from collector import interrupt, training
from collector.backends import OpRecorder
from collector.compare import compare, describe, describe_input
from collector.eventlog import finite_or_none
from collector.plan import Cell
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
from collector.run.timings import add_cold_facts
from collector.workload import DTYPES, FedInputs, cast_inputs, input_key, to_device


def run_training_cell(run: Run, cell: Cell, device_model: torch.nn.Module) -> CellOutcome:
    key = input_key(cell.batch, cell.length, cell.layout)
    cpu_inputs = cast_inputs(run.inputs[key], DTYPES[cell.dtype])
    run.backend.begin_cell()
    result: dict[str, Any] = {"inputs": [describe_input(k, v) for k, v in cpu_inputs.items()]}
    tol = run.plan.tolerance(cell.dtype)
    settings = run.plan.training_table
    ref = run.train_refs[key]
    compiling = cell.mode == "compiled"
    fed: FedInputs | None = None
    with captured_warnings() as warns:
        try:
            inputs = to_device(cpu_inputs, run.backend.device)
            model = training.prepare(run.workload, device_model)
            call_model = run.backend.compile(model, run.plan.compile_options) if compiling else model
            fed = FedInputs(call_model)
            fed.arm(settings["steps"])
            watch = CompileWatch(run.backend) if compiling else None
            # The first compiled step in a fresh child is the cold one (collector.run.children).
            cold: dict[str, Any] | None = (
                {"timed_region": ["training_step"], "timed_notes": []} if compiling and run.cold_next else None
            )
            run.cold_next = run.cold_next and cold is None
            if watch is not None:
                watch.before()
            if cold is not None:
                run.backend.synchronize()
                cold["ready_wall"] = time.time()
            recorder = OpRecorder() if not compiling else None
            with recorder if recorder is not None else contextlib.nullcontext():
                trace, step = training.train(
                    run.workload,
                    model,
                    call_model,
                    inputs,
                    settings["steps"],
                    settings["seed"],
                    run.backend.synchronize,
                )
            if watch is not None:
                watch.after_first()
        except interrupt.ENDS_RUN:
            raise
        except BaseException as exc:
            result["warnings"] = warns.lines()  # bounded as write_failed writes them
            if fed is not None:
                result.update(fed_facts(fed, cell.layout))
                fed.remove()
            write_failed(
                run, cell, result, failure(failure_phase(exc, compiling), exc), None, ran=fed is not None
            )  # no fed: it failed before the model existed on the device or compiled
            return CellOutcome("error")
    fed.remove()
    result["warnings"] = kept_warnings(warns.lines() + run.backend.cell_log())
    result.update(fed_facts(fed, cell.layout))
    if watch is not None:
        base = compile_facts(run, cell, watch, trace.first_forward_s, cold is not None)
        run.log.write("compile", case=cell.case, graph="forward", **base)
        run.log.write(
            "compile",
            case=cell.case,
            graph="backward",
            **{
                **base,
                "compile_first_result_s": trace.first_backward_s,
                "graphs": None,
                "graph_breaks": [],
                "cache_hits": None,
                "cache_misses": None,
            },
        )
    status = _judge_training(run, cell, trace, ref, tol, result)
    run.log.write("case_result", case=cell.case, status=status, **result)
    write_operators(run, cell, recorder)
    if cold is not None and trace.first_step_s is not None:
        # The cold step's own check, as a cold-only child makes it: its loss against the reference's.
        cold["seconds"] = trace.first_step_s
        cold["output_check"] = training.first_step_check(trace.losses[0], ref.losses[0], tol)
        add_cold_facts(cold, base, result)
    else:
        cold = None
    return CellOutcome(status, trace.first_step_s, step, module=call_model, cold=cold)


def _judge_training(
    run: Run,
    cell: Cell,
    trace: training.TrainTrace,
    ref: training.TrainTrace,
    tol: dict[str, Any],
    result: dict[str, Any],
) -> str:
    loss_tol, grad_tol = tol["loss"], tol["grad"]
    rules = run.plan.compare["params"]  # resolved (learning rates read) when the plan event was written
    all_within = True
    grads_ok = True
    for index, (loss, ref_loss) in enumerate(zip(trace.losses, ref.losses)):
        within = training.loss_within(loss, ref_loss, loss_tol["atol"], loss_tol["rtol"])
        rows = training.compare_grads(trace.grads[index], ref.grads[index], grad_tol["atol"], grad_tol["rtol"], rules)
        all_within &= within
        grads_ok &= all(r["mismatched"] == 0 for r in rows)
        run.log.write(
            "train_step",
            case=cell.case,
            step=index,
            loss=finite_or_none(loss),
            reference_loss=finite_or_none(ref_loss),
            loss_within=within,
            grads=rows,
        )
    params = training.compare_params(trace.params, ref.params, grad_tol["atol"], grad_tol["rtol"], rules, ref.grads)
    run.log.write("train_result", case=cell.case, params=params)
    final = torch.tensor(trace.losses, dtype=torch.float64)
    result["outputs"] = [describe("loss_per_step", final)]
    result["error_stats"] = compare(
        {"loss_per_step": final},
        {"loss_per_step": torch.tensor(ref.losses, dtype=torch.float64)},
        loss_tol["atol"],
        loss_tol["rtol"],
    )
    worst = max((abs(a - b) / abs(b) if b else abs(a - b)) for a, b in zip(trace.losses, ref.losses))
    result["task_metric"] = {
        "name": "max_loss_rel_diff",
        "value": finite_or_none(worst),
        "criterion": None,
        "passed": all_within,
    }
    if any(not math.isfinite(x) for x in trace.losses):
        return "nonfinite"
    params_ok = all(r["mismatched"] == 0 for r in params)
    return "pass" if all_within and grads_ok and params_ok else "mismatch"
