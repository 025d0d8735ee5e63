"""Inputs and the trusted CPU reference per input shape, saved as artifacts."""

from __future__ import annotations

import copy

import torch

from collector import interrupt, training
from collector.compare import beyond_tolerances, max_abs_between, nonfinite_count, written_inputs
from collector.eventlog import OutOfSpace
from collector.plan import PlanError
from collector.run.capture import failure, write_reference
from collector.run.setup import content_fields
from collector.run.generation_cells import reference_generation, route_requests
from collector.run.state import Run
from collector.workload import (
    DTYPES,
    WorkloadError,
    cast_inputs,
    check_inputs,
    check_outputs,
    input_key,
    save_artifact,
)


def write_references(run: Run) -> None:
    ref_dtype = DTYPES[run.plan.reference_dtype]
    ref_model = copy.deepcopy(run.model).to("cpu", ref_dtype)
    golden = (
        copy.deepcopy(run.model).to("cpu", torch.float64) if run.plan.float64_golden and not run.plan.training else None
    )
    for cell in run.cells:
        key = input_key(cell.batch, cell.length, cell.layout)
        if key in run.inputs or key in run.shape_failures:
            continue
        # A failure at one shape is recorded on that shape's cells; the other shapes go on.
        if key in run.refused:
            continue
        try:
            raw = check_inputs(run.workload, run.workload.make_inputs(cell.batch, cell.length, cell.layout))
            if run.plan.generation:
                rows = int(raw["input_ids"].shape[0]) if "input_ids" in raw and raw["input_ids"].dim() else None
                if rows != cell.batch:
                    # A generation's tokens are a row a sequence: another batch would be judged
                    # and timed as this cell's (reportgen refuses such a log, after the device time).
                    raise ValueError(
                        f"make_inputs({cell.batch}, {cell.length}, {cell.layout!r}) returned input_ids of "
                        f"{'shape ' + str(list(raw['input_ids'].shape)) if 'input_ids' in raw else 'no such input'}: "
                        f"a generation cell of batch {cell.batch} needs {cell.batch} row(s)"
                    )
                padded = route_requests(run, key, run.cells, raw)
                if padded is None:
                    continue
                raw = padded
            run.inputs[key] = raw
        except interrupt.ENDS_RUN:
            raise
        except BaseException as exc:
            _shape_failed(run, key, failure("inputs", exc))
            continue
        try:
            run.references[key] = _reference_outputs(run, key, ref_model, ref_dtype, golden)
        except (WorkloadError, OutOfSpace, PlanError):  # the run's, not the shape's
            raise
        except interrupt.ENDS_RUN:
            raise
        except BaseException as exc:
            _shape_failed(run, key, failure("reference", exc))
    for role, obj, name in (("inputs", run.inputs, "inputs.pt"), ("reference_output", run.references, "reference.pt")):
        size, digest = save_artifact(obj, run.dir / "artifacts" / name)
        run.log.write(
            "artifact",
            role=role,
            path=f"artifacts/{name}",
            bytes=size,
            sha256=digest,
            **content_fields(obj, by_key=True),
        )


def _shape_failed(run: Run, key: str, fail: dict[str, str]) -> None:
    interrupt.check()  # an interrupt that a library caught and wrapped is not a failure
    run.shape_failures[key] = fail
    run.progress.say(
        f"{key}: {fail['phase']} failed: {fail['type']}: {fail['message'][:200]}; its cells are recorded as errors"
    )


def _reference_outputs(
    run: Run, key: str, model: torch.nn.Module, dtype: torch.dtype, golden: torch.nn.Module | None
) -> dict[str, torch.Tensor]:
    if run.plan.training:
        return _reference_training(run, key, model, dtype)
    if run.plan.generation:
        return reference_generation(run, key, model, dtype)
    inputs = cast_inputs(run.inputs[key], dtype)
    with torch.no_grad():
        first = check_outputs(run.workload, run.workload.run_model(model, inputs))
        written = written_inputs(inputs, cast_inputs(run.inputs[key], dtype))
        if written:
            run.log.write(
                "warning",
                category="InputWritten",
                message=(
                    f"{key}: the model writes into its input(s) {', '.join(written)}: after the reference's first "
                    "call they no longer hold the values it was fed. The reference's calls and each cell's judged "
                    "first call are fed their own copy, so they and the saved inputs have the values made; a cell's "
                    "later calls (its warm loop) reuse its copy, so a warm loop that wrote into it keeps no timing, "
                    "and a caller that uses an input again after the call would see it changed"
                ),
            )
        second = check_outputs(run.workload, run.workload.run_model(model, cast_inputs(run.inputs[key], dtype)))
        noise = max_abs_between(first, second)
        beyond = beyond_tolerances(first, second, run.plan.tolerances, run.plan.compare["outputs"], run.inputs[key])
        gold, gold_nonfinite = None, None
        if golden is not None:
            gold_outputs = check_outputs(
                run.workload, run.workload.run_model(golden, cast_inputs(run.inputs[key], torch.float64))
            )
            gold_nonfinite = nonfinite_count(gold_outputs)
            gold = max_abs_between(first, gold_outputs)
    write_reference(
        run,
        key,
        dtype,
        noise,
        nonfinite_count(first),
        float64_max_abs=gold,
        golden_nonfinite=gold_nonfinite,
        noise_beyond_tolerance=beyond,
    )
    return {k: v.detach() for k, v in first.items()}


def _reference_training(run: Run, key: str, model: torch.nn.Module, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    steps, seed = run.plan.training_table["steps"], run.plan.training_table["seed"]
    runs = []
    for _ in range(2):
        copy_ = training.prepare(run.workload, model)
        inputs = cast_inputs(run.inputs[key], dtype)
        trace, _step = training.train(run.workload, copy_, copy_, inputs, steps, seed, lambda: None)
        runs.append(trace)
    first, second = runs
    # Losses, every gradient and the updated parameters of the two runs; a NaN facing a NaN
    # is agreement, so a deterministic reference is not called noisy.
    noise = max_abs_between(_trace_tensors(first), _trace_tensors(second))
    own = nonfinite_count(_trace_tensors(first))
    write_reference(run, key, dtype, noise, own)
    run.train_refs[key] = first
    return {"loss": torch.tensor(first.losses, dtype=torch.float64)}


def _trace_tensors(trace: training.TrainTrace) -> dict[str, torch.Tensor]:
    tensors = {f"grad{i}.{n}": g for i, gs in enumerate(trace.grads) for n, g in gs.items()}
    tensors.update({f"param.{n}": p for n, p in trace.params.items()})
    tensors["loss"] = torch.tensor(trace.losses, dtype=torch.float64)
    return tensors
