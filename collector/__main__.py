"""python -m collector [run] --workload PLAN.toml --target {auto,cpu,cuda,neuron} --out RUNS_DIR"""

# ruff: noqa: E402 (the signal handlers are installed before the other imports: STARTUP)

from __future__ import annotations

from collector import interrupt

# Ctrl-C while the modules below load (a second on a loaded host) is one line and exit 130, as
# it is once the command runs, not a traceback out of an import; main() keeps these handlers.
STARTUP = interrupt.install_early() if __name__ == "__main__" else None

import argparse
import contextlib
import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Iterator

from collector.arguments import Parser, StdoutFailed, folder_argument, path_argument
from collector.descriptors import DescriptorError, before_torch, descriptors, target_choices
from collector.descriptors import resolve_target as resolve_name
from collector.visible import tell, terminal, visible

BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a command whose reader went away

try:  # the targets are the backend descriptors: a broken one is a usage error
    TARGET_CHOICES = target_choices()
    AUTO_TRIES = [d.name for d in descriptors().values() if d.auto_order is not None]
except DescriptorError as exc:
    print(f"collector: backend descriptor: {terminal(str(exc))}", file=sys.stderr)
    sys.exit(2)

EPILOG = """\
exit codes:
  0    the run completed (cells may still have failed, each with its phase: the report judges them)
  1    the collector itself failed; the log ends with an aborted run_end
  2    usage error, a plan that cannot run or a workload module that cannot serve any cell
       (the message says what to change; no run folder, or, when the run had started, a log
       that ends with an aborted run_end giving the reason)
  3    the target backend is not available on this host, or torch cannot be imported (one line says why)
  4    out of space (a full disk or a file-size limit): the log is valid up to its last line;
       or standard output cannot be written (a full disk: one line says so)
  130  interrupted (SIGINT), 143 terminated (SIGTERM), 129 hung up (SIGHUP: the terminal or
       ssh session closed; ignored under nohup): the log ends with an aborted run_end;
       before the run started (while torch imports): one line, and nothing is written
  141  standard output's reader went away (`--list | head`): stopped quietly; after a run, its
       folder's line was not read, and the run is as its log's run_end says (complete or not)

examples:
  python -m collector --workload collector/workloads/tiny_encoder.toml --target cpu --out runs
  python -m collector inspect --workload plan.toml     # no device: the graph's operators, breaks, wide dtypes
  python -m collector --workload plan.toml --target neuron --out runs --only 'b1-*' --profile
"""


OUT_OF_SPACE = 4  # as the epilog's exit codes say


def _say(line: str) -> None:
    """A line of the collector's result on standard output (the cells --list plans, the run folder)."""
    if sys.stdout is None:  # started with standard output closed (`>&-`): nothing to say it on
        return
    try:
        print(terminal(line))
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StdoutFailed(exc) from None


def _stdout_to_devnull() -> None:
    """What is still buffered for stdout goes to /dev/null, so the flush at exit cannot fail too."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def one_line(error: object) -> str:
    """An error's text on one line: a newline in it (a plan's file name may hold one) shown as
    <U+000A>, so it cannot start a line that reads as the tool's."""
    return visible(str(error), keep="")


def _tell(message: str) -> None:
    """A line on stderr; a plan's or module's text in it cannot drive the terminal (collector.visible)."""
    tell(message)


class _Parser(Parser):
    def error(self, message: str) -> None:  # type: ignore[override]
        """One line instead of the usage block."""
        _tell(f"collector: {self.with_unrecognized(message)} (see python -m collector --help)")
        raise SystemExit(2)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def _positive_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count of at least 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a count of at least 1, got {text!r}")
    return value


def chosen_cells(plan: Any, args: argparse.Namespace) -> tuple[list[Any] | None, str]:
    """The cells a run with these options runs of a loaded plan (capped at --max-cells), or None
    and why the collector refuses them, in one line without its "collector: " prefix: the
    plan's size, the options on their own, --warm against the plan's decode steps, an --only or
    --modes that matches no cell, chosen cells with no criteria to be judged by. The target's
    own refusal of the plan is the caller's. A campaign asks this of every workload too."""
    from collector.plan import select_cells
    from collector.planschema import decode_samples_problem

    plan.cap(args.max_cells)
    if problem := plan.size_problem():
        return None, f"plan error: {problem}"
    if (why := option_problem(args)) is not None:
        return None, why
    if args.warm is not None and plan.generation:
        too_many = decode_samples_problem(args.warm, plan.generation["decode_steps"], plan.remeasure_rounds)
        if too_many:
            return None, f"--warm {args.warm}: {too_many}"
    modes = [m.strip() for m in args.modes.split(",")] if args.modes else []
    chosen = select_cells(plan.cells, list(args.only), modes)
    if (args.only or modes) and not chosen:
        asked = " ".join([*(f"--only {g!r}" for g in args.only), *([f"--modes {args.modes}"] if modes else [])])
        # The cells --list shows are those --max-cells leaves, as --only chooses among them.
        listing = f"python -m collector --workload {shlex.quote(str(args.workload))} --list"
        listing += f" --max-cells {args.max_cells}" if args.max_cells is not None else ""
        return None, f"{asked} matches none of the {len(plan.cells)} planned cells ({listing} shows them)"
    profile = getattr(args, "profile", None)
    profiled = [c for c in chosen if not c.repeat_of]  # a cache-check repeat is never profiled
    if profile is not None and not select_cells(profiled, [profile], []):
        # A typo here would cost a device run its traces, unsaid.
        return (
            None,
            f"--profile {profile!r} matches none of the {len(profiled)} chosen cells that are profiled (cache-check repeats are not)",
        )
    # A cell whose dtype has no declared criteria is skipped (recorded as such); a run in which
    # every cell would be is refused, as plan-check refuses it, before any setup time.
    dtypes = dict.fromkeys(c.dtype for c in chosen)
    unjudged = [why for dtype in dtypes if (why := plan.missing_tolerance(dtype))]
    if dtypes and len(unjudged) == len(dtypes):
        return None, f"plan error: no chosen cell has criteria to be judged by: {'; '.join(unjudged)}"
    return chosen, ""


def option_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the run's options on their own, before any plan is read (--modes,
    --warm), in words; None when nothing. A campaign checks its workloads' args with it too."""
    from collector.planschema import MAX_WARM_REPETITIONS

    modes = [m.strip() for m in args.modes.split(",")] if args.modes is not None else []
    unknown = next((m for m in modes if m not in ("eager", "compiled")), None)
    if unknown is not None:
        return f"--modes takes eager and/or compiled, not {unknown[:40]!r}"
    if args.warm is not None and not 1 <= args.warm <= MAX_WARM_REPETITIONS:
        return f"--warm takes a count from 1 to {MAX_WARM_REPETITIONS}, got {args.warm}"
    out = getattr(args, "out", None)
    if out is not None and inside_collector(out):
        # Its runs would be hashed as the collector's own files (and make a git checkout dirty):
        # two runs of the same code would read as two collectors.
        return f"--out {out} is inside the collector's own folder ({Path(__file__).resolve().parent}); choose a folder outside it"
    return None


def inside_collector(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (its links followed) lies in the collector's own folder; False where it
    cannot be resolved (a link loop, a name too long: the checks of the folder say why)."""
    try:
        return Path(os.path.abspath(path)).resolve().is_relative_to(Path(__file__).resolve().parent)
    except (OSError, RuntimeError):
        return False


def parse_args(argv: list[str]) -> argparse.Namespace:
    from collector.planschema import MAX_WARM_REPETITIONS
    from collector.stability import MIN_SAMPLES

    parser = _Parser(
        prog="python -m collector [run]",
        allow_abbrev=False,  # an option is written whole: a log's command reads as typed, and a new option never changes an old abbreviation's meaning
        description="Run a workload plan on one target and write RUNS_DIR/<run-id>/events.jsonl "
        "with artifacts/ and traces/ beside it. Progress goes to stderr.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from collector import __version__

    parser.add_argument("--version", action="version", version=f"collector {__version__}")
    parser.add_argument("--workload", required=True, type=path_argument, help="the workload plan (TOML)")
    parser.add_argument(
        "--target",
        default="auto",
        choices=["auto", *TARGET_CHOICES],
        help=f"device to run on, by name or alias (default: auto = the plan's target, which must be available; for a plan without one: the first available of {', '.join(AUTO_TRIES)}, else the cpu). A target other than the plan's runs, but its report says it is not evidence for the plan's target",
    )
    parser.add_argument(
        "--out",
        default=Path("runs"),
        type=folder_argument,
        help="directory that receives the run directory (default: runs)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help="run only cells whose case key matches (repeatable), e.g. 'b1-*-eager'; the plan event keeps every planned cell and the report marks the others 'not run (deselected)'; matching nothing is a usage error (exit 2)",
    )
    parser.add_argument(
        "--modes", help="comma-separated subset of eager,compiled (cells of other modes: not run (deselected))"
    )
    parser.add_argument(
        "--warm",
        type=int,
        metavar="N",
        help=f"warm repetitions, 1 to {MAX_WARM_REPETITIONS} (default: the plan's, else 30); below {MIN_SAMPLES} a warm "
        "series is too short to classify as stable, so its timing decides nothing",
    )
    parser.add_argument(
        "--cold",
        default="fresh-process",
        choices=["fresh-process", "in-process", "off"],
        help="how the cold first call is measured (default fresh-process: compiled cells run in a new interpreter "
        "with empty cache dirs, where one compile serves the cell's check and its cold call; a group with a "
        "cache-check repeat runs in one such process and its other shapes' cold calls get a process each; "
        "an eager cell's first call is taken in this process, recorded as 'eager, no compile'; a generation plan's "
        "compiled cells run in this process whatever this says, their cold call recorded as 'compiled in process')",
    )
    parser.add_argument(
        "--cold-timeout",
        type=_positive_seconds,
        default=1800.0,
        metavar="S",
        help="limit in seconds for a fresh process to finish its cell, above 0 (default 1800); a process past it "
        "is ended with its children, the cell's cold timing is recorded as timed out, and cells it did not "
        "finish are checked in the collector's own process",
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="*",
        metavar="GLOB",
        help="write a profiler trace under traces/ for each shape, layout and dtype that passed (its compiled "
        "cell, else its eager one); with GLOB, only for the passing cells it matches",
    )
    parser.add_argument(
        "--max-cells",
        type=_positive_count,
        metavar="N",
        help="plan at most the first N cells of the matrix (in plan order; lowers [matrix] max_cells, never raises it); "
        "a matrix above 20,000 cells needs a cap: one run log holds no more (the cells cut are not in the log)",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the planned cells (those --only and --modes choose, when given) and exit",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    # torch's import can take half a minute on a loaded host; as a module run, the handlers to
    # put back are those from before this module's imports (STARTUP).
    previous = interrupt.install_early()
    previous = STARTUP if STARTUP is not None else previous
    try:
        return _answered(sys.argv[1:] if argv is None else argv)
    finally:
        interrupt.restore(previous)


def _answered(argv: list[str]) -> int:
    """The command's exit code, where standard output that cannot be written ends it alike
    wherever it fails, --help's text included (argparse prints it and exits; its flush at exit
    failed with Python's own message and exit 120)."""
    try:
        try:
            return _main(argv)
        except SystemExit:  # argparse's --help or usage: what it printed is flushed here
            if sys.stdout is not None:
                try:
                    sys.stdout.flush()
                except BrokenPipeError:
                    raise
                except OSError as exc:
                    raise StdoutFailed(exc) from None
            raise
    except DescriptorError as exc:  # a plugin backend's adapter, loaded with the adapter table
        _tell(f"collector: backend descriptor: {exc}")
        return 2
    except BrokenPipeError:
        # The reader went away (`--list | head`): stop quietly.
        _stdout_to_devnull()
        return BROKEN_PIPE
    except StdoutFailed as exc:  # a full disk: one line, never a traceback
        _stdout_to_devnull()
        _tell(f"collector: cannot write to standard output: {exc}")
        return OUT_OF_SPACE


def _main(argv: list[str]) -> int:
    if argv[:1] == ["inspect"]:  # python -m collector inspect: the graph before any hardware
        from collector.inspect import main as inspect_main

        return inspect_main(argv[1:])
    # `run` names the default command (`run --help` printed its help, and then `run --workload
    # ...` was refused as an unrecognised argument).
    argv = argv[1:] if argv[:1] == ["run"] else argv
    if argv[:1] and not argv[0].startswith("-"):  # argparse named the missing --workload, not this word
        word = visible(argv[0], keep="")[:200]  # a line break or escape in it stays on this one line
        hint = f"; did you mean --workload {word}?" if argv[0].endswith(".toml") else ""
        _tell(
            f"collector: '{word}' is no command or option (the commands: run, the default, and inspect){hint} "
            "(see python -m collector --help)"
        )
        return 2
    args = parse_args(argv)
    from collector.plan import PlanError, load_plan

    try:
        plan = load_plan(args.workload)
    except PlanError as exc:
        _tell(f"collector: plan error: {one_line(exc)}")
        return 2
    from collector.plan import refused_on  # here, not under the branch: --target auto asks it below

    if args.target != "auto":  # refused before the backend is even probed
        refusal = refused_on(plan, resolve_name(args.target))
        if refusal:
            _tell(f"collector: plan error: {one_line(refusal)}")
            return 2
    chosen, why = chosen_cells(plan, args)
    if chosen is None:
        _tell(f"collector: {why}")
        return 2
    modes = [m.strip() for m in args.modes.split(",")] if args.modes else []
    if args.list:
        for cell in chosen:
            _say(cell.case)
        return 0
    problem = _out_problem(args.out)
    if problem:
        _tell(f"collector: --out {args.out}: {problem}")
        return 2
    # Before torch is imported (collector.workload imports it): torch autoloads a backend's module
    # (torch_neuronx), which may read the variables a backend's before_torch hook sets then
    # (collector/descriptors.py). Until collector 0.21.0 they were set after that import.
    before_torch(args.target, plan.intended_target)
    from collector.first_import import torch_import_problem

    problem = torch_import_problem()
    if problem:
        _tell(f"collector: {one_line(problem)}")
        return 3
    from collector.workload import WorkloadError, check_source

    try:
        check_source(plan.module_path)
    except WorkloadError as exc:
        _tell(f"collector: {exc}")
        return 2
    from collector.timing import scope_problem

    problem = scope_problem(plan.timing_scope, bool(plan.training))
    if problem:
        _tell(f"collector: plan error: {one_line(problem)}")
        return 2
    from collector import workload_reads
    from collector.preflight import check_rules

    # A plan with comparison rules loads the workload here first: what it reads now is the run's
    # too (the run reuses the module loaded here), so the watch the run ends starts here.
    workload_reads.start()
    try:
        with _stdout_to_stderr():  # the module may print when it loads
            check_rules(plan)
    except (PlanError, WorkloadError) as exc:
        _tell(f"collector: plan error: {one_line(exc)}")
        return 2
    finally:
        workload_reads.pause()
    from collector.backends import BackendUnavailable, resolve_target
    from collector.runner import Options, execute

    try:
        backend, choice = resolve_target(args.target, plan.intended_target)
    except BackendUnavailable as exc:
        _tell(f"collector: {exc}")
        return 3
    refusal = refused_on(plan, backend.name)
    if refusal:
        _tell(f"collector: plan error: {one_line(refusal)}")
        return 2
    _tell(f"collector: target {choice['resolved']}: {choice['reason']}")
    _tell(f"collector plan: {_cell_count(plan, args)}")
    options = Options(
        target=args.target,
        # Absolute: a workload that changes the working directory moves no file of the run.
        out_dir=Path(os.path.abspath(args.out)),
        only=list(args.only),
        modes=modes,
        cold=args.cold,
        warm_repetitions=args.warm,
        profile=args.profile,
        cold_timeout=args.cold_timeout,
        command=[sys.executable, "-m", "collector", *argv],
        target_choice=choice,
    )
    with _stdout_to_stderr():
        run_dir, code = execute(plan, backend, options)
    if run_dir is not None:
        _say(str(run_dir))
    return code


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While the run goes on, what is written to standard output (a workload's prints, a
    library's native writes) goes to standard error: the collector's standard output holds the
    run folder alone, for `RUN=$(python -m collector ...)`. With standard output closed (a job
    started with `>&-`) there is nothing to keep apart: nothing is changed."""
    try:
        os.fstat(1)
    except OSError:
        yield
        return
    if sys.stdout is not None:
        sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        try:
            if sys.stdout is not None:
                sys.stdout.flush()
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def _cell_count(plan: Any, args: argparse.Namespace) -> str:
    """How many cells this run plans and runs, said before it starts (a long matrix is hours)."""
    from collector.plan import select_cells

    chosen = len(
        select_cells(plan.cells, list(args.only), [m.strip() for m in args.modes.split(",")] if args.modes else [])
    )
    planned = f"{len(plan.cells):,} planned cells"
    if plan.matrix_cells > len(plan.cells):
        cap = "--max-cells" if args.max_cells == len(plan.cells) else "[matrix] max_cells"
        planned += f" (the first of the matrix's {plan.matrix_cells:,}: {cap} {len(plan.cells)})"
    run = "all of them" if chosen == len(plan.cells) else f"{chosen:,} of them"
    return f"{planned}; this run runs {run} (an estimate of the time left follows the first cells)"


def _out_problem(out: Path) -> str | None:
    """Why the run folder cannot be made under ``out`` (None: it can)."""
    try:
        return _folder_problem(out)
    except OSError as exc:  # a name longer than the file system allows (Path.exists raises on 3.11)
        return f"{exc.filename or out}: {exc.strerror or exc}"


def _folder_problem(out: Path) -> str | None:
    existing = out
    while not existing.exists():
        if existing.is_symlink():
            return f"{existing} is a dangling link; expected a writable folder"
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder; expected a writable folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable; expected a writable folder"
    return None


def end_process(code: int) -> int:
    """The exit code, once threads left running cannot hold the process open: Python waits for
    every non-daemon thread before it exits (a thread pool's worker busy with a task included),
    so one thread of a workload (a heartbeat, a prefetcher) kept a finished run's collector
    waiting for ever. Such threads are named on stderr (torch's idle compile pool among them,
    after a compile in this process), the exit handlers run (the run's cache folders are
    removed), and the process ends with ``code``."""
    import atexit
    import threading

    left = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    if not left:
        return code
    names = ", ".join(repr(t.name) for t in left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    print(
        f"collector: {len(left)} thread(s) still running after the run ({names}: the workload's, or a library's "
        "such as torch's compile pool); the collector ends without waiting for them",
        file=sys.stderr,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(end_process(main()))
