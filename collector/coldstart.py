"""Child process for one cold first call: fresh interpreter, empty compile caches (or, for the
restart with a populated cache, the cache folder the cell's empty-cache compile filled).

Started by ``collector.supervise.run_cold``; it loads the saved weights and inputs (the same bytes
the main run used), lists every compile-cache directory, makes the first call of one cell (what
the clock covers follows the plan's timing.scope), lists the directories again, compares the
outputs with the saved reference and prints one result line.
"""

from __future__ import annotations

# First, before torch is imported (seconds): end with the collector that started this process.
from collector.lifeline import watch_parent

watch_parent()

import argparse
import json
import os
import time
from types import ModuleType
from typing import Any

import torch

from collector import training
from collector.backends import Backend, finish_cache_listing, list_cache_dirs, select_backend
from collector.compare import compare, describe, judged_nonfinite
from collector.plan import WorkloadPlan
from collector.run.state import add_source_args, load_unchanged_plan
from collector.supervise import COLD_MARKER, marker_stream
from collector.timing import timed_sample
from collector.workload import (
    DTYPES,
    FedInputs,
    cast_inputs,
    input_key,
    layout_of,
    load_artifact,
    load_workload,
    saved_model,
    to_device,
)


def main() -> None:
    markers = marker_stream()
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    add_source_args(parser)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--target", required=True)
    args = parser.parse_args()
    plan = load_unchanged_plan(args)
    cell = next(c for c in plan.cells if c.case == args.case)
    backend = select_backend(args.target)
    workload = load_workload(plan, args.imports_sha256, args.module_sha256)
    model = saved_model(workload, args.run_dir, args.weights_content).to(
        device=backend.device, dtype=DTYPES[cell.dtype]
    )
    key = input_key(cell.batch, cell.length, cell.layout)
    saved = load_artifact(os.path.join(args.run_dir, "artifacts", "inputs.pt"))[key]
    host = cast_inputs(saved, DTYPES[cell.dtype])
    inputs = to_device(host, backend.device)
    reference = load_artifact(os.path.join(args.run_dir, "artifacts", "reference.pt"))[key]
    tol = plan.tolerance_for(cell.dtype) or {}
    listing = list_cache_dirs(backend.cache_dirs())
    counters = backend.compile_counters() if cell.mode == "compiled" else None
    if plan.training:
        first, ready, check, fed = _first_training_step(
            workload, model, inputs, cell.mode, backend, plan, reference, tol
        )
        region: list[str] = ["training_step"]
        notes: list[str] = []
    else:
        call_model = backend.compile(model, plan.compile_options) if cell.mode == "compiled" else model
        fed = FedInputs(call_model)
        fed.arm(1)
        kept: dict[str, Any] = {}

        def call_with(feed: dict[str, torch.Tensor]) -> Any:
            with torch.no_grad():
                kept["outputs"] = workload.run_model(call_model, feed)
            return kept["outputs"]

        def prepare() -> dict[str, torch.Tensor]:
            return cast_inputs(workload.make_inputs(cell.batch, cell.length, cell.layout), DTYPES[cell.dtype])

        sample, region, notes = timed_sample(
            call_with,
            inputs,
            host,
            prepare,
            lambda h: to_device(h, backend.device),
            backend.synchronize,
            plan.timing_scope,
            backend.device.type == "cpu",
        )
        backend.synchronize()
        ready = time.time()
        first = sample()
        check = _check(kept["outputs"], reference, tol, plan.compare["outputs"], saved)
    fed.remove()
    result: dict[str, Any] = {
        "first_call_s": first,
        "timed_region": region,
        "timed_notes": notes,
        "output_check": check,
    }
    launched = float(os.environ.get("COLLECTOR_LAUNCH_WALL", ready))
    result["process_start_s"] = max(0.0, ready - launched)
    result.update(finish_cache_listing(listing))
    if counters is not None:
        after = backend.compile_counters()
        result["cache_hits"] = max(0, after.get("cache_hits", 0) - counters.get("cache_hits", 0))
        result["cache_misses"] = max(0, after.get("cache_misses", 0) - counters.get("cache_misses", 0))
    if fed.calls:
        result["inputs_fed"] = fed.calls[0]
        result["layout_achieved"] = all(layout_of(c) == cell.layout for c in fed.calls)
    print(COLD_MARKER + json.dumps(result), file=markers, flush=True)


def _check(
    outputs: dict[str, torch.Tensor],
    reference: dict[str, torch.Tensor],
    tol: dict[str, Any],
    rules: list[dict[str, Any]],
    inputs: dict[str, torch.Tensor],
) -> dict[str, Any]:
    """The cold outputs against the reference by the cell's own rule: the elementwise tolerance
    over the judged regions the plan declared (as the cell's check does), and no new non-finite
    value there."""
    try:
        stats = compare(outputs, reference, tol.get("atol", 0.0), tol.get("rtol", 0.0), rules, inputs)
        if rules:
            got, want = judged_nonfinite(outputs, reference, rules, inputs)
            new_nonfinite = got > want
        else:
            new_nonfinite = sum(describe(k, v)["nonfinite"] for k, v in outputs.items()) > sum(
                describe(k, v)["nonfinite"] for k, v in reference.items()
            )
    except ValueError:
        total = sum(v.numel() for v in reference.values())
        return {"mismatched": total, "total": total, "max_abs": None, "passed": False}
    return {
        "mismatched": stats["mismatched"],
        "total": stats["total"],
        "max_abs": stats["max_abs"],
        "passed": stats["mismatched"] == 0 and not new_nonfinite,
    }


def _first_training_step(
    workload: ModuleType,
    model: torch.nn.Module,
    inputs: dict[str, torch.Tensor],
    mode: str,
    backend: Backend,
    plan: WorkloadPlan,
    reference: dict[str, Any],
    tol: dict[str, Any],
) -> tuple[float | None, float, dict[str, Any], FedInputs]:
    """One full step (forward, backward, optimizer) from the saved weights; its loss checked."""
    model = training.prepare(workload, model)
    call_model = backend.compile(model, plan.compile_options) if mode == "compiled" else model
    fed = FedInputs(call_model)
    fed.arm(1)
    backend.synchronize()
    ready = time.time()
    trace, _ = training.train(workload, model, call_model, inputs, 1, plan.training_table["seed"], backend.synchronize)
    check = training.first_step_check(trace.losses[0], float(reference["loss"][0]), tol)
    return trace.first_step_s, ready, check, fed


if __name__ == "__main__":
    main()
