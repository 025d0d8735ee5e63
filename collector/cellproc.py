"""Child process that runs compiled cells from a fresh interpreter.

Started by ``collector.run.children`` (see there for which cells share a child). It loads the
saved weights, inputs and reference outputs (the files the main run saved), checks that the
weights it built hash as the plan event logged (``workload.saved_model``; else it runs nothing),
then runs its cells with the same code the main process uses (``collector.run.cells``).
With empty compile caches, the first compiled call is the cold first call and the cell's check
at once; with ``--cold-taken`` the caches it was given hold what the cells' cold compiles left,
and its compile events record the cache they met. Events go to the
parent as marker lines on stdout (the child's own output goes to stderr), one a line, and a
flush line after every cell, carrying that cell's cold call when it had one and passed. It
writes nothing else into the run folder but profile traces.
"""

from __future__ import annotations

# First, before torch is imported (seconds): end with the collector that started this process.
from collector.lifeline import watch_parent

watch_parent()

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from collector import training
from collector.backends import select_backend
from collector.eventlog import EXIT_OUT_OF_SPACE, OUT_OF_SPACE_LINE, OutOfSpace
from collector.plan import Cell
from collector.run import cells, profiles
from collector.run.children import EVENT, FLUSH
from collector.run.state import Options, Run, add_source_args, load_unchanged_plan
from collector.supervise import marker_stream
from collector.workload import load_artifact, load_workload, saved_model


class Relay:
    """The run's log in a child: each event is a marker line for the main process to write."""

    def __init__(self, markers: Any) -> None:
        self.markers = markers

    def write(self, kind: str, **fields: Any) -> None:
        fields = {k: v for k, v in fields.items() if v is not None}
        print(EVENT + json.dumps({"kind": kind, "fields": fields}, allow_nan=False), file=self.markers, flush=True)

    def close(self) -> None:
        pass


class Quiet:
    """Progress in a child: the main process tells the user what happens."""

    def say(self, message: str, index: int | None = None) -> None:
        pass

    def heartbeat(self, what: str, after: float = 5.0, every: float = 15.0) -> Any:
        import contextlib

        return contextlib.nullcontext()


def flush(markers: Any, case: str | None, passed: bool = False, cold: dict[str, Any] | None = None) -> None:
    print(FLUSH + json.dumps({"case": case, "passed": passed, "cold": cold}, allow_nan=False), file=markers, flush=True)


def main() -> None:
    markers = marker_stream()
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    add_source_args(parser)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--cases", required=True, help="comma-separated, in the order they run")
    parser.add_argument("--warm", type=int)
    parser.add_argument("--profile")
    parser.add_argument("--train-refs", help="the training reference traces the main process handed over")
    parser.add_argument(
        "--cold-taken",
        action="store_true",
        help="the cold calls were taken already; the caches given hold their compiles",
    )
    args = parser.parse_args()
    plan = load_unchanged_plan(args)  # else its cells are checked in the main process instead
    run = Run(
        plan, select_backend(args.target), Options(target=args.target, warm_repetitions=args.warm, profile=args.profile)
    )
    if os.environ.get("COLLECTOR_CACHE_DIR"):  # the empty folders the parent made for this child
        shutil.rmtree(run.cache_dir, ignore_errors=True)
        run.cache_dir = Path(os.environ["COLLECTOR_CACHE_DIR"])
    by_case = {c.case: c for c in plan.cells}
    run.cells = [by_case[case] for case in args.cases.split(",")]
    run.dir = Path(args.run_dir)
    run.log = Relay(markers)  # type: ignore[assignment]
    run.progress = Quiet()  # type: ignore[assignment]
    run.workload = load_workload(plan, args.imports_sha256, args.module_sha256)
    run.model = model = saved_model(run.workload, args.run_dir, args.weights_content)
    if plan.compare["params"]:  # as the main process resolved them for its plan event
        plan.compare["params"] = training.resolve_param_rules(plan.compare["params"], run.workload, model)
    run.inputs = load_artifact(os.path.join(args.run_dir, "artifacts", "inputs.pt"))
    run.references = load_artifact(os.path.join(args.run_dir, "artifacts", "reference.pt"))
    if args.train_refs:
        run.train_refs = {key: training.TrainTrace(**fields) for key, fields in load_artifact(args.train_refs).items()}
    run.cold_next = not args.cold_taken
    run.caches_given = args.cold_taken

    def cell_done(cell: Cell) -> None:
        outcome = run.passed.get(cell.case)
        cold = None
        if outcome is not None and outcome.cold is not None:
            cold = {k: v for k, v in outcome.cold.items() if k not in ("seconds", "ready_wall")}
            cold["first_call_s"] = outcome.cold["seconds"]
            ready = outcome.cold["ready_wall"]  # the wall clock just before the cold call
            cold["process_start_s"] = max(0.0, ready - float(os.environ.get("COLLECTOR_LAUNCH_WALL", ready)))
        flush(markers, cell.case, outcome is not None, cold)

    run.cell_done = cell_done
    cells.run_group(run, run.cells[0].dtype, list(enumerate(run.cells, start=1)))
    profiles.write_profiles(run)
    flush(markers, None)


if __name__ == "__main__":
    try:
        main()
    except OutOfSpace as exc:  # the host's failure, as in the collector's own process: one line, exit 4
        print(f"{OUT_OF_SPACE_LINE}: {exc}", file=sys.stderr, flush=True)
        sys.exit(EXIT_OUT_OF_SPACE)
