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
   ``run.training_cells``, ``run.timings``). With ``--cold fresh-process`` compiled cells run in
   a fresh process with new, empty compile-cache directories (``run.children``,
   ``collector.cellproc``): one compile serves the cell's check and its cold first call, whose
   ``timing`` event follows the cell's;
5. ``timing`` with the cold first call of each other passing cell: an eager cell's first call
   in this process ("eager, no compile"), a compiled cell's in a fresh process of its own
   (``collector.coldstart``), the cache directories listed before and after the call and its
   outputs checked against the reference (``run.timings``); ``profile`` per shape when asked
   (``run.profiles``);
6. the backend's log channel copied into the run (neuron: ``logs/neuron.log``), then
   ``run_end``. SIGINT or SIGTERM writes an aborted ``run_end`` instead.

A failing cell never stops the matrix.
"""

from __future__ import annotations

import shutil
import signal
import traceback
from pathlib import Path

from collector import interrupt, lifeline, workload_reads
from collector.backends import Backend
from collector.eventlog import EXIT_OUT_OF_SPACE, OutOfSpace, utc_now
from collector.interrupt import EXIT_ABORTED, Aborted
from collector.plan import PlanError, WorkloadPlan
from collector.run import cells, profiles, reference, setup, timings
from collector.run.capture import message_of
from collector.run.state import Options, Run
from collector.visible import tell
from collector.workload import WorkloadError

__all__ = ["EXIT_ABORTED", "EXIT_OUT_OF_SPACE", "Aborted", "Options", "Run", "execute"]

EXIT_INTERNAL = 1
EXIT_USAGE = 2


def say(message: str) -> None:
    """The one line that tells why a run stopped."""
    tell(f"collector: {message}")


def finish(run: Run, status: str, reason: str | None = None) -> bool:
    """The closing run_end; signals from here on are noted, not raised, so it is written once.

    False when there was no room for it: the log then keeps its whole lines and reads as
    incomplete."""
    interrupt.closing()
    try:
        if run.has_log:
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
    except (OSError, OutOfSpace):
        return False
    finally:
        run.close_log()
        shutil.rmtree(run.cache_dir, ignore_errors=True)
    return True


def written_bytes(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file():
                total += path.stat().st_size
        except OSError:
            pass
    return total


def _size(n: int) -> str:
    """A size in words, never rounded to nothing (12 kB read '0.0 MB')."""
    if n < 10_000:
        return f"{n} bytes"
    return f"{n / 1e3:.0f} kB" if n < 1_000_000 else f"{n / 1e6:.1f} MB"


def execute(plan: WorkloadPlan, backend: Backend, options: Options) -> tuple[Path | None, int]:
    """Run every step; returns the run directory (None when none was made) and the exit code.

    Never raises: a failure at one cell is recorded on that cell; what ends the run is told
    in one line on stderr and in the aborted run_end's reason.
    """
    # What this process has started before the run (nothing, from the command line): any other
    # child left at the end is the workload's, and is ended.
    before = lifeline.children()
    lifeline.adopt_orphans()  # until the run ends: what the workload leaves in the background is ours to end
    # Held until the handlers that close a run are in place, so none lands between the two.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, set(EXIT_ABORTED))
    run = Run(plan, backend, options)
    previous = interrupt.install()
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        try:
            setup.start(run)
        except OSError as exc:
            shutil.rmtree(run.cache_dir, ignore_errors=True)
            if not run.has_log:
                run.close_log()
                shutil.rmtree(run.dir, ignore_errors=True)
                say(
                    f"cannot write the run folder under --out {options.out_dir}: {exc.strerror or exc}; expected a writable folder"
                )
                return None, EXIT_USAGE
            raise
        run.progress.say(f"run {run.run_id} -> {run.dir}")
        left = lifeline.sweep_left_behind(run.cache_dir.parent)  # where its own folder was made
        folders = [p.name for p in left if not lifeline.BACKEND_LOG.fullmatch(p.name)]
        logs = [p.name for p in left if lifeline.BACKEND_LOG.fullmatch(p.name)]
        if folders:
            run.progress.say(
                f"removed {len(folders)} compile-cache folder(s) a killed collector was writing (never reused): {', '.join(folders)}"
            )
        if logs:
            run.progress.say(f"removed {len(logs)} backend log file(s) of collectors that are gone: {', '.join(logs)}")
        setup.write_plan(run)
        reference.write_references(run)
        setup.write_workload_reads(run)
        cells.run_cells(run)
        timings.time_cold(run)
        timings.time_restarts(run)
        profiles.write_profiles(run)
        interrupt.check()  # a signal whose Aborted Python dropped after the last line: not complete
        finish(run, "complete")
        run.progress.say(f"done: {run.recorded} of {len(run.cells)} cells recorded, log {run.dir / 'events.jsonl'}")
        return run.dir, 0
    except (Aborted, KeyboardInterrupt) as exc:
        # KeyboardInterrupt: a library put Python's own SIGINT handler back, or workload code
        # raised it; either way the run ends as an interrupt would, with its run_end.
        signum = exc.signum if isinstance(exc, Aborted) else signal.SIGINT
        what = str(exc) if isinstance(exc, Aborted) else "KeyboardInterrupt"
        if not run.has_log:  # no log yet: nothing to keep
            finish(run, "aborted")
            shutil.rmtree(run.dir, ignore_errors=True)
            say(f"interrupted before the run started ({what}); nothing was written")
            return None, EXIT_ABORTED[signum]
        finish(run, "aborted", f"received {what}")
        say(f"aborted by {what}; the log up to here is intact, the cells without a result are untested")
        return run.dir, EXIT_ABORTED[signum]
    except WorkloadError as exc:
        finish(run, "aborted", f"workload error: {exc}")
        say(f"{exc} (run aborted, log {run.dir / 'events.jsonl'})")
        return run.dir, EXIT_USAGE
    except PlanError as exc:  # a plan error only the model shows (generation_cells.reference_generation)
        finish(run, "aborted", f"plan error: {exc}")
        say(f"plan error: {exc} (run aborted before any cell ran, log {run.dir / 'events.jsonl'})")
        return run.dir, EXIT_USAGE
    except OutOfSpace as exc:
        if not run.has_log:  # not even run_start fitted: no run folder, as for any other setup failure
            finish(run, "aborted")
            shutil.rmtree(run.dir, ignore_errors=True)
            say(f"out of space: {exc}; no run folder was kept (its first log line did not fit)")
            return None, EXIT_OUT_OF_SPACE
        written = written_bytes(run.dir)
        reason = f"out of space: {exc}; the run had written {_size(written)} so far"
        ended = finish(run, "aborted", reason)
        say(
            f"{reason}; the log is valid up to its last line and incomplete{'' if ended else ' (no room left for run_end)'}"
        )
        return run.dir, EXIT_OUT_OF_SPACE
    except SystemExit as exc:
        finish(run, "aborted", f"workload code called sys.exit({exc.code!r})")
        say(f"workload code called sys.exit({exc.code!r}) during the run; a workload must not exit (run aborted)")
        return run.dir, EXIT_USAGE
    except BaseException as exc:  # a workload's own BaseException outside any cell too (the signals' come first)
        where = run.dir / "collector-error.txt"
        try:
            where.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
            saved = f"; traceback in {where}"
        except OSError:
            saved = ""
        message = message_of(exc)
        finish(run, "aborted", f"collector error: {type(exc).__name__}: {message}")
        say(f"internal error: {type(exc).__name__}: {message[:300]}{saved} (run aborted)")
        return run.dir, EXIT_INTERNAL
    finally:
        setup.restore_environment(run)
        workload_reads.discard()  # a run that ended before its workload_reads event leaves no watch
        stray = lifeline.end_left_children(before)
        lifeline.adopt_orphans(False)
        if stray:
            more = f" and {len(stray) - 5} more" if len(stray) > 5 else ""
            say(f"ended {len(stray)} process(es) the workload started and left running: {', '.join(stray[:5])}{more}")
        interrupt.restore(previous)
