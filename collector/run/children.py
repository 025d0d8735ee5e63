"""Compiled cells in fresh processes: each graph is compiled from an empty cache once.

With ``--cold fresh-process`` (the default), every compiled shape is first compiled in a new
interpreter with empty compile-cache folders of its own. That compile is the shape's cold
first call (timed over the stages the plan's timing.scope names, its outputs checked against
the reference), and it fills the folder, which the run keeps (below its cache dir) for the
later processes of that shape: they reuse its cache instead of compiling from scratch again.

Which processes a (dtype, layout) group gets:

* a group without cache-check repeats, within Dynamo's recompile limit: one child per compiled
  cell (``collector.cellproc``) whose first call is the cold call and the cell's check at once;
  the warm repetitions (and the profile, when asked) follow in that process;
* a group with a cache-check repeat (or more shapes than the recompile limit): the repeat only
  tests something when the group's shapes were compiled one after another in one process, as a
  serving process would. So each shape's cold call is taken first by a cold-only child
  (``collector.coldstart``) with an empty folder of its own; then one child runs the whole
  group, given a folder holding what those compiles left: its compiles are logged with the
  cache they met (``persistent_cache``, hits and misses counted), not as cold calls.

Afterwards ``collector.run.timings.time_restarts`` starts one more fresh process per compiled
cell against the folder its cold compile filled: the restart with a populated cache.

The child's events come back on its stdout, a cell at a time, and are written to the run's log
when the cell is complete. A training cell runs its steps in the child the same way: its first
compiled step is the cold one. The reference's losses, gradients and parameters (held in
memory by this process) are handed to the child in a file under the run's temporary folder,
never in the run folder.

A child that ends without a cell's result (it crashed, or went ``--cold-timeout`` seconds
without finishing a cell) leaves that cell's cold call recorded as not measured; the cells it
did not finish run in this process as they always did, so their check is never lost.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import shutil
from pathlib import Path
from typing import Any

import torch

from collector.eventlog import EXIT_OUT_OF_SPACE, OUT_OF_SPACE_LINE, OutOfSpace
from collector.plan import Cell
from collector.run.state import Run
from collector.run.timings import cold_from_result, cold_not_measured, write_cold
from collector.supervise import ChildEnd, run_child, run_cold
from collector.workload import input_key, save_artifact

EVENT = "COLLECTOR_EVENT "  # one event of the cell in progress: {"kind": ..., "fields": {...}}
FLUSH = (
    "COLLECTOR_FLUSH "  # the events so far are complete: {"case": ... or null, "passed": bool, "cold": {...} or null}
)
# Kinds only the main process writes (a run's frame); a child's cell events are every other kind.
MAIN_ONLY = frozenset({"run_start", "environment", "plan", "artifact", "reference", "run_end"})


def wanted(run: Run, dtype: str) -> bool:
    """Whether this run's compiled cells of ``dtype`` go to fresh children."""
    # A generation cell times its own first token in this process (collector.run.generation_cells).
    return run.options.cold == "fresh-process" and not run.plan.missing_tolerance(dtype) and not run.plan.generation


def recompile_limit() -> int:
    config = torch._dynamo.config
    # recompile_limit in newer torch, cache_size_limit before; torch's default when neither is set.
    limit = getattr(config, "recompile_limit", None) or getattr(config, "cache_size_limit", None)
    return int(limit) if limit is not None else 8


def batches(members: list[tuple[int, Cell]], shape_failures: dict[str, Any]) -> list[list[tuple[int, Cell]]]:
    """The group's compiled cells, split into the children that run them (see the module doc)."""
    compiled = [(i, c) for i, c in members if c.mode == "compiled" and _shape(c) not in shape_failures]
    if not compiled:
        return []
    if any(c.repeat_of for _, c in compiled) or len(compiled) > recompile_limit():
        return [compiled]
    return [[m] for m in compiled]


def run_compiled(run: Run, members: list[tuple[int, Cell]]) -> set[str]:
    """The group's compiled cells in fresh children (see the module doc); the cases recorded."""
    done: set[str] = set()
    for batch in batches(members, run.shape_failures):
        if len(batch) == 1:
            done |= run_batch(run, batch, _empty_folder(run, batch[0][0]))
            continue
        for index, cell in batch:
            if not cell.repeat_of:
                _cold_only(run, index, cell)
        done |= run_batch(run, batch, _merged_folder(run, batch), cold_taken=True)
    return done


def _empty_folder(run: Run, index: int) -> Path:
    """A new, empty cache folder for the cell at ``index``, kept until the run ends."""
    folder = run.cache_dir / "caches" / f"cell-{index:05d}"
    folder.mkdir(parents=True)
    return folder


def _cold_only(run: Run, index: int, cell: Cell) -> None:
    """The cell's cold first call, its one compile from an empty cache, in a process of its own."""
    folder = _empty_folder(run, index)
    argv = [*run.source_args(), "--run-dir", str(run.dir), "--case", cell.case, "--target", run.backend.name]
    run.progress.say(f"{cell.case}: cold first call in a fresh process with empty caches", index)
    with run.progress.heartbeat(f"{cell.case}: cold first call in a fresh process"):
        result = run_cold(argv, run.backend.cache_env, run.options.cold_timeout, folder)
    if "timed_out_after_s" in result or "error" in result:
        run.cold_done.add(cell.case)
        cold_not_measured(run, cell, result.get("timed_out_after_s"), result.get("error", ""))
        return
    _write_cold(run, cell, result)
    run.cache_folders[cell.case] = folder


def _merged_folder(run: Run, batch: list[tuple[int, Cell]]) -> Path | None:
    """One folder holding what the batch's cold compiles left, for the child that runs them
    all; None (the child starts with empty caches, and its compiles say so) when it cannot be
    made."""
    folder = run.cache_dir / "caches" / f"group-{batch[0][0]:05d}"
    try:
        folder.mkdir(parents=True)
        for _, cell in batch:
            if cell.case in run.cache_folders:
                shutil.copytree(run.cache_folders[cell.case], folder, symlinks=True, dirs_exist_ok=True)
    except OSError as exc:
        run.log.write(
            "warning",
            message=f"the caches of the cold compiles could not be gathered for the group's process ({exc}); it compiles from empty caches",
            category="CacheCopyFailed",
            case=batch[0][1].case,
        )
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return folder


def _shape(cell: Cell) -> str:
    return input_key(cell.batch, cell.length, cell.layout)


def run_batch(
    run: Run, batch: list[tuple[int, Cell]], folder: Path | None = None, cold_taken: bool = False
) -> set[str]:
    """Run ``batch`` in one fresh child with its caches in ``folder`` (empty, unless
    ``cold_taken``: the cells' cold calls were taken and the folder holds their compiles); the
    cases it recorded (their events are in the log)."""
    cells = {c.case: (i, c) for i, c in batch}
    first = batch[0][1]
    pending: list[tuple[str, dict[str, Any]]] = []
    done: set[str] = set()
    finished = False  # the child's last flush (after its profiles) came

    def on_line(line: str) -> bool:
        nonlocal finished
        marker = EVENT if line.startswith(EVENT) else FLUSH if line.startswith(FLUSH) else None
        try:  # anything else a workload prints, or a marker line that is not ours, is ignored
            message = json.loads(line[len(marker) :]) if marker else None
        except ValueError:
            message = None
        if not isinstance(message, dict):
            return False
        if marker == EVENT:
            if (
                isinstance(message.get("kind"), str)
                and message["kind"] not in MAIN_ONLY
                and isinstance(message.get("fields"), dict)
            ):
                pending.append((message["kind"], message["fields"]))
            return False
        flush = message
        case = flush.get("case")
        if case is not None and (not isinstance(case, str) or case not in cells):
            return False  # not a flush of this batch
        for kind, fields in pending:
            run.log.write(kind, **fields)
            if kind == "profile" and fields.get("case") in cells:
                run.profiled_shapes.add(cells[fields["case"]][1].shape_key)
        statuses = [f.get("status") for k, f in pending if k == "case_result"]
        pending.clear()
        finished = finished or case is None
        if case in cells and statuses:  # a cell without its result is checked again here
            done.add(case)
            if flush.get("passed"):
                run.passed_elsewhere.add(case)
            run.recorded += len(statuses)
            if flush.get("cold") and not cold_taken:
                _write_cold(run, cells[case][1], flush["cold"])
                if folder is not None:
                    run.cache_folders[case] = folder
            elif case == first.case:
                run.cold_done.add(case)  # not passing: no cold call to take
            index, _ = cells[case]
            run.progress.say(
                f"{case}: {statuses[0]} (compiled and checked in a fresh process{'; its first call was the cold one' if flush.get('cold') and not cold_taken else ''})",
                index,
            )
        return True

    argv = [
        *run.source_args(),
        "--run-dir",
        str(run.dir),
        "--target",
        run.backend.name,
        "--cases",
        ",".join(cells),
    ]
    if run.options.warm_repetitions:
        argv += ["--warm", str(run.options.warm_repetitions)]
    if run.options.profile:
        argv += ["--profile", run.options.profile]
    if run.plan.training:
        argv += ["--train-refs", str(_hand_over_train_refs(run, [c for _, c in batch]))]
    if cold_taken:
        argv += ["--cold-taken"]
    names = first.case if len(batch) == 1 else f"{len(batch)} compiled cells from {first.case}"
    caches = "the caches their cold compiles left" if cold_taken else "empty caches"
    run.progress.say(f"{names}: compiling, checking and timing in a fresh process with {caches}", batch[0][0])
    with run.progress.heartbeat(f"{names}: fresh process"):
        ended = run_child("collector.cellproc", argv, run.backend.cache_env, run.options.cold_timeout, on_line, folder)
    # The host ran out of space (the fresh process says so, exit 4): the run ends as in this process.
    said = [line for line in ended.tail if OUT_OF_SPACE_LINE in line]
    if ended.returncode == EXIT_OUT_OF_SPACE and said:
        # Its own words after the line's opening ("collector: out of space in a fresh process: "),
        # which the run's message would otherwise say a second time.
        words = said[-1].split(OUT_OF_SPACE_LINE, 1)[1].lstrip(": ") or "no space left"
        raise OutOfSpace(Path("a fresh process's files"), OSError(errno.ENOSPC, words[:300]))
    if first.case not in done and not cold_taken:
        _cold_not_measured(run, first, ended)
    left = [c.case for _, c in batch if c.case not in done]
    if run.options.profile and not left and not finished:
        why = f"went {run.options.cold_timeout:g} s without finishing" if ended.timed_out else ended.exited()
        run.log.write(
            "warning",
            message=f"profile not recorded: the fresh process for {', '.join(cells)} {why} after its cells, while profiling",
            category="ProfileFailed",
            case=first.case,
        )
    if left:
        why = f"went {run.options.cold_timeout:g} s without finishing a cell" if ended.timed_out else ended.exited()
        run.progress.say(
            f"the fresh process ended before {len(left)} cell(s) finished ({why}); they run in this process"
        )
        run.log.write(
            "warning",
            message=f"the fresh process for {', '.join(left)} {why}; the collector's own process checks those cells next (their events follow this one)",
            category="CellProcessEnded",
            case=left[0],
        )
    return done


def _hand_over_train_refs(run: Run, cells: list[Cell]) -> Path:
    """The reference traces of these cells' shapes, as plain tensors and lists, for a child."""
    traces = {_shape(c): run.train_refs[_shape(c)] for c in cells if _shape(c) in run.train_refs}
    path = run.cache_dir / f"train-refs-{cells[0].case}.pt"
    save_artifact({key: dataclasses.asdict(trace) for key, trace in traces.items()}, path)  # a full disk: OutOfSpace
    return path


def _write_cold(run: Run, cell: Cell, result: dict[str, Any]) -> None:
    run.cold_done.add(cell.case)
    write_cold(run, cell, *cold_from_result(cell, result))


def _cold_not_measured(run: Run, cell: Cell, ended: ChildEnd) -> None:
    """The child ended before its first cell's result: that cell's cold call is not measured
    (it is checked again in this process, but a second first call there is not cold)."""
    run.cold_done.add(cell.case)
    cold_not_measured(run, cell, run.options.cold_timeout if ended.timed_out else None, ended.error())
