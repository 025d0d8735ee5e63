"""Child process for one cold first call: fresh interpreter, empty compile caches.

Started by ``collector.timing.run_cold``; it loads the saved weights and inputs (the same bytes
the main run used), makes the first call of one cell and prints one result line.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

from collector import training
from collector.backends import select_backend
from collector.plan import load_plan
from collector.timing import COLD_MARKER
from collector.workload import DTYPES, cast_inputs, input_key, load_artifact, load_workload, to_device


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--target", required=True)
    args = parser.parse_args()
    plan = load_plan(args.plan)
    cell = next(c for c in plan.cells if c.case == args.case)
    backend = select_backend(args.target)
    workload = load_workload(plan)
    model = workload.build_model().eval()
    if not hasattr(workload, "weights_file"):  # else build_model loaded the checksummed shipped file
        model.load_state_dict(load_artifact(os.path.join(args.run_dir, "artifacts", "weights.pt")))
    model = model.to(device=backend.device, dtype=DTYPES[cell.dtype])
    inputs = load_artifact(os.path.join(args.run_dir, "artifacts", "inputs.pt"))[input_key(cell.batch, cell.length, cell.layout)]
    inputs = to_device(cast_inputs(inputs, DTYPES[cell.dtype]), backend.device)
    if plan.training:
        first, ready = _first_training_step(workload, model, inputs, cell.mode, backend, plan)
    else:
        call_model = backend.compile(model, plan.compile_options) if cell.mode == "compiled" else model
        backend.synchronize()
        ready = time.time()
        start = time.perf_counter()
        with torch.no_grad():
            workload.run_model(call_model, inputs)
        backend.synchronize()
        first = time.perf_counter() - start
    launched = float(os.environ.get("COLLECTOR_LAUNCH_WALL", ready))
    print(COLD_MARKER + json.dumps({"first_call_s": first, "process_start_s": max(0.0, ready - launched)}), flush=True)


def _first_training_step(workload, model, inputs, mode, backend, plan) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """One full step (forward, backward, optimizer) from the saved weights."""
    model = training.prepare(workload, model)
    call_model = backend.compile(model, plan.compile_options) if mode == "compiled" else model
    backend.synchronize()
    ready = time.time()
    trace, _ = training.train(workload, model, call_model, inputs, 1, plan.training["seed"], backend.synchronize)
    return trace.first_step_s, ready


if __name__ == "__main__":
    main()
