"""Run one workload plan on one target and write the run directory.

Order of a run, each step an event in ``events.jsonl`` and a module in ``collector/run/``:

1. ``run_start``, ``environment``, then the ``plan`` with tolerances, before any result
   (``run.setup``);
2. ``artifact``: weights, inputs and reference outputs saved with sha256, so every mode is fed
   the same values (``run.setup``, ``run.reference``);
3. ``reference`` per shape: CPU eager run twice (its noise floor), optionally a float64 golden
   (``run.reference``);
4. per cell: ``compile`` (compiled cells), ``case_result``, ``operators``, and for a cell whose
   correctness passed, ``timing`` with the warm repetitions (``run.cells``,
   ``run.training_cells``, ``run.timings``);
5. ``timing`` with the cold first call of each passing cell, in a fresh process with new
   compile-cache directories, listed before and after the call, its outputs checked against
   the reference (``run.timings``); ``profile`` per shape when asked (``run.profiles``);
6. the backend's log channel copied into the run (neuron: ``logs/neuron.log``), then
   ``run_end``. SIGINT or SIGTERM writes an aborted ``run_end`` instead.

A failing cell never stops the matrix.
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path
from types import FrameType
from typing import Any

from collector.backends import Backend
from collector.eventlog import utc_now
from collector.plan import WorkloadPlan
from collector.run import cells, profiles, reference, setup, timings
from collector.run.state import Options, Run

__all__ = ["EXIT_ABORTED", "Aborted", "Options", "Run", "execute"]

EXIT_ABORTED = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Aborted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def finish(run: Run, status: str, reason: str | None = None) -> None:
    if run.log is not None:
        try:
            setup.write_backend_log(run)
        except OSError as exc:  # the log copy is evidence, but never worth losing run_end over
            run.log.write("warning", message=f"backend log not copied: {exc}", category="BackendLog")
        run.log.write(
            "run_end",
            finished_at=utc_now(),
            status=status,
            reason=reason,
            cells_planned=len(run.plan.cells),
            cells_recorded=run.recorded,
        )
        run.log.close()
    shutil.rmtree(run.cache_dir, ignore_errors=True)


def _install_signal_handlers() -> dict[int, Any]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Aborted(signum)

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, handler)
    return previous


def execute(plan: WorkloadPlan, backend: Backend, options: Options) -> tuple[Path, int]:
    """Run every step; returns the run directory and the process exit code."""
    run = Run(plan, backend, options)
    previous = _install_signal_handlers()
    try:
        setup.start(run)
        run.progress.say(f"run {run.run_id} -> {run.dir}")
        setup.write_plan(run)
        reference.write_references(run)
        cells.run_cells(run)
        timings.time_cold(run)
        profiles.write_profiles(run)
        finish(run, "complete")
        run.progress.say(f"done: {run.recorded} of {len(run.cells)} cells recorded, log {run.dir / 'events.jsonl'}")
        return run.dir, 0
    except Aborted as exc:
        finish(run, "aborted", f"received {exc}")
        run.progress.say(f"aborted by {exc}; the log up to here is intact")
        return run.dir, EXIT_ABORTED[exc.signum]
    except Exception as exc:
        finish(run, "aborted", f"collector error: {type(exc).__name__}: {exc}")
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
