"""Options of a run and the state its phases share."""

from __future__ import annotations

import argparse
import contextlib
import threading
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import torch

from collector import lifeline, training
from collector.backends import Backend
from collector.eventlog import EventLog
from collector.localimports import imports_digest, workload_imports
from collector.plan import Cell, WorkloadPlan, file_stem, load_plan, select_cells
from collector.visible import tell
from collector.workload import sha256_file


@dataclass
class Options:
    target: str = "auto"
    out_dir: Path = Path("runs")
    only: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    cold: str = "fresh-process"
    warm_repetitions: int | None = None
    profile: str | None = None
    cold_timeout: float = 1800.0
    command: list[str] = field(default_factory=list)
    # How --target was resolved (requested, resolved, reason): run_start.target_choice.
    target_choice: dict[str, str] | None = None


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """One line per step on stderr: cell i of N, elapsed time, what is happening."""

    ESTIMATE_EVERY_S = 60.0

    def __init__(self, total: int) -> None:
        self.total = total
        self.start = time.monotonic()
        self.cells_began: float | None = None  # when the first cell was announced
        self.announced: set[int] = set()  # the cells announced so far (they run out of plan order)
        self.estimated: float | None = None  # when the time left was last said
        self.skipped: set[int] = set()  # cells said skipped: none of the rate's

    def say(self, message: str, index: int | None = None, ran: bool = True) -> None:
        """One line of progress; ``index``: the cell's number. A cell that did not run (skipped)
        is counted as done but takes no part in the rate the time left is estimated at."""
        where = f"[{index}/{self.total}] " if index is not None else ""
        tell(f"collector {time.monotonic() - self.start:7.1f}s {where}{message}")
        if index is not None and not ran:
            self.skipped.add(index)
        elif index is not None:
            self._estimate(index)

    def _estimate(self, index: int) -> None:
        """Once cells are done, the time left at the rate so far (at most once a minute): a
        long matrix is hours, and the reader decides whether to let it run."""
        now = time.monotonic()
        if self.cells_began is None:
            self.cells_began = now
        if index in self.announced:
            return
        self.announced.add(index)
        # Cells are announced out of plan order (compiled cells run first, in fresh processes):
        # the cells announced before this one are done, whatever their numbers.
        done = min(len(self.announced), self.total + 1) - 1
        if done < 1 or (self.estimated is not None and now - self.estimated < self.ESTIMATE_EVERY_S):
            return
        self.estimated = now
        rate = (now - self.cells_began) / done
        left = self.total - done - len(self.skipped - self.announced)
        tell(
            f"collector {now - self.start:7.1f}s estimate: about {_duration(rate * left)} left for {left:,} cell(s) at "
            f"{rate:.3g} s a cell so far (compiled cells and larger shapes take longer than eager and small ones; "
            "the restarts and re-measurements after the cells are not counted)"
        )

    @contextlib.contextmanager
    def heartbeat(self, what: str, after: float = 5.0, every: float = 15.0) -> Iterator[None]:
        """While a step runs longer than ``after`` seconds, say so every ``every`` seconds.

        A compile can take many minutes on a device host; a silent terminal looks like a hang.
        The beat runs on a daemon thread that only prints; it never touches the run's state.
        """
        done = threading.Event()
        began = time.monotonic()

        def beat() -> None:
            wait = after
            while not done.wait(wait):
                self.say(f"{what}: still working after {time.monotonic() - began:.0f} s")
                wait = every

        thread = threading.Thread(target=beat, name="collector-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join(timeout=1.0)


@dataclass
class CellOutcome:
    status: str
    first_call_s: float | None = None
    call: Callable[[], Any] | None = None
    # For timing what the plan's timing.scope asks: the module called (its inputs are watched
    # at the call boundary), one call on given inputs, and the inputs on the host and device.
    module: Any = None
    call_with: Callable[[dict[str, Any]], Any] | None = None
    host_inputs: dict[str, Any] | None = None
    device_inputs: dict[str, Any] | None = None
    first_check: dict[str, Any] | None = None  # the first call's outputs against the reference
    # In a fresh child (``collector.cellproc``), the first cell's first call is its cold call:
    # what it timed (stages per the plan's timing.scope) and the cache listing around it.
    cold: dict[str, Any] | None = None


def add_source_args(parser: argparse.ArgumentParser) -> None:
    """A fresh child's options for ``Run.source_args``."""
    parser.add_argument("--plan", required=True)
    parser.add_argument("--plan-sha256", required=True, help="the plan text the main process read")
    parser.add_argument("--module-sha256", required=True, help="the workload module the main process loaded")
    parser.add_argument(
        "--imports-sha256", required=True, help="the local files it imports, as run_start hashed them (one digest)"
    )
    parser.add_argument(
        "--weights-content",
        required=True,
        help="the content sha256 of the model the run built, weights and non-persistent buffers ('' if unknown)",
    )


def load_unchanged_plan(args: argparse.Namespace) -> WorkloadPlan:
    """The plan a fresh child runs, refused (exit with the reason) when the plan, its workload
    module or a local file the module imports changed on disk since the run began: the child
    would run other code or criteria than the reference and the run's other cells."""
    plan = load_plan(args.plan)
    if plan.text_sha256 != args.plan_sha256:
        raise SystemExit(f"{args.plan} changed since the run began; this process does not run its cells")
    try:
        module = sha256_file(plan.module_path)
    except OSError as exc:
        raise SystemExit(f"workload module {plan.module_path}: cannot be read: {exc.strerror or exc}") from None
    if module != args.module_sha256:
        raise SystemExit(
            f"workload module {plan.module_path} changed since the run began; this process does not run its cells"
        )
    now = workload_imports(plan.module_path)
    if imports_digest(now) != args.imports_sha256:
        raise SystemExit(
            f"a local file workload module {plan.module_path} imports was changed, added or removed since the run "
            f"began ({len(now)} found now); this process does not run its cells"
        )
    return plan


class Run:
    """State shared by the steps of one run."""

    def __init__(self, plan: WorkloadPlan, backend: Backend, options: Options) -> None:
        self.plan = plan
        self.backend = backend
        self.options = options
        self.cells = select_cells(plan.cells, options.only, options.modes)
        self.run_id = f"{file_stem(plan.name)}-{backend.name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"
        self.dir = options.out_dir / self.run_id
        self.progress = Progress(len(self.cells))
        # Set by setup before any step uses them (see the properties below).
        self._workload: ModuleType | None = None
        self._model: torch.nn.Module | None = None
        self.inputs: dict[str, dict[str, torch.Tensor]] = {}
        self.references: dict[str, dict[str, torch.Tensor]] = {}
        self.train_refs: dict[str, training.TrainTrace] = {}
        # Generation plans: the reference generation per request, how each request was routed
        # (its bucket), and the requests the plan's policy refused, with the reason.
        self.gen_refs: dict[str, Any] = {}
        self.routes: dict[str, dict[str, Any]] = {}
        self.refused: dict[str, str] = {}
        # Shapes whose inputs or reference failed: their cells are recorded as errors with it.
        self.shape_failures: dict[str, dict[str, str]] = {}
        self.passed: dict[str, CellOutcome] = {}
        # A fresh child process sets this: its next compiled first call is a cold call.
        self.cold_next = False
        # A fresh child given the caches earlier cold compiles filled: its compiles meet them.
        self.caches_given = False
        # Cells whose cold first call a child already took (or tried), and shapes it profiled.
        self.cold_done: set[str] = set()
        # Cells that passed (warm timing included) in a fresh child: they have no callable here.
        self.passed_elsewhere: set[str] = set()
        self.profiled_shapes: set[str] = set()
        # Cells whose last warm series was unstable and may be measured again (timings.remeasure).
        self.unsteady: dict[str, Cell] = {}
        # Called after each cell is recorded (a fresh child reports the cell back to the run).
        self.cell_done: Callable[[Cell], None] | None = None
        self.recorded = 0
        # Cells of the group in progress to localise once its cells are done, with the reason.
        self.localize_pending: list[tuple[Cell, str]] = []
        self.cache_dir = Path(tempfile.mkdtemp(prefix="collector-cache-"))
        lifeline.mark_in_use(self.cache_dir)
        # The environment variables setup pointed at the run's folders, with the values they had
        # before, and the temp dir Python had then.
        self.environ_before: dict[str, str | None] = {}
        self.tempdir_before: str | None = None
        # Per compiled cell, the cache folder its one compile from an empty cache filled (kept
        # below cache_dir): later compiles of the shape and the restart measurement use it.
        self.cache_folders: dict[str, Path] = {}
        self._log: EventLog | None = None
        # The workload module's sha256 and one digest of the local files it imports, both as
        # run_start hashed them: the module loads only with those bytes, here and in each fresh
        # child.
        self.module_sha256 = ""
        self.imports_sha256 = ""
        self.weights_content = (
            ""  # the built model's content sha256, its non-persistent buffers too (content.model_tensors)
        )
        self.hashed_files: list[Path] = []  # the files run_start hashed

    def source_args(self) -> list[str]:
        """The plan a fresh child loads, with the hashes of the plan and module this run read."""
        return [
            "--plan",
            str(self.plan.path),
            "--plan-sha256",
            self.plan.text_sha256,
            "--module-sha256",
            self.module_sha256,
            "--imports-sha256",
            self.imports_sha256,
            "--weights-content",
            self.weights_content,
        ]

    # The log, workload and model exist from setup on; a step that reaches for one earlier is a
    # bug in the order of the steps, said as such rather than as an AttributeError on None.
    @property
    def log(self) -> EventLog:
        if self._log is None:
            raise RuntimeError("the run's log is used before setup opened it")
        return self._log

    @log.setter
    def log(self, log: EventLog) -> None:
        self._log = log

    @property
    def has_log(self) -> bool:
        """Whether the log holds its first line, run_start (a run stopped earlier has nothing to
        keep: a run_end alone, or an empty file, is no log reportgen accepts)."""
        return self._log is not None and bool(self._log.kinds_written)

    def close_log(self) -> None:
        if self._log is not None:
            self._log.close()

    @property
    def workload(self) -> ModuleType:
        if self._workload is None:
            raise RuntimeError("the run's workload is used before setup loaded it")
        return self._workload

    @workload.setter
    def workload(self, workload: ModuleType) -> None:
        self._workload = workload

    @property
    def model(self) -> torch.nn.Module:
        if self._model is None:
            raise RuntimeError("the run's model is used before setup built it")
        return self._model

    @model.setter
    def model(self, model: torch.nn.Module) -> None:
        self._model = model

    @property
    def warm_repetitions(self) -> int:
        return self.options.warm_repetitions or self.plan.warm_repetitions
