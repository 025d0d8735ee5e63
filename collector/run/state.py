"""Options of a run and the state its phases share."""

from __future__ import annotations

import contextlib
import fnmatch
import sys
import threading
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import torch

from collector import training
from collector.backends import Backend
from collector.eventlog import EventLog
from collector.plan import Cell, WorkloadPlan


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


class Progress:
    """One line per step on stderr: cell i of N, elapsed time, what is happening."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.start = time.monotonic()

    def say(self, message: str, index: int | None = None) -> None:
        where = f"[{index}/{self.total}] " if index is not None else ""
        print(f"collector {time.monotonic() - self.start:7.1f}s {where}{message}", file=sys.stderr, flush=True)

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


def select_cells(cells: list[Cell], only: list[str], modes: list[str]) -> list[Cell]:
    """Cells chosen by --only globs and --modes (all of them when neither is given)."""
    return [
        c for c in cells
        if (not only or any(fnmatch.fnmatch(c.case, p) for p in only)) and (not modes or c.mode in modes)
    ]


class Run:
    """State shared by the steps of one run."""

    def __init__(self, plan: WorkloadPlan, backend: Backend, options: Options) -> None:
        self.plan = plan
        self.backend = backend
        self.options = options
        self.cells = select_cells(plan.cells, options.only, options.modes)
        self.run_id = f"{plan.name}-{backend.name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"
        self.dir = options.out_dir / self.run_id
        self.progress = Progress(len(self.cells))
        self.workload: ModuleType | None = None
        self.model: torch.nn.Module | None = None
        self.inputs: dict[str, dict[str, torch.Tensor]] = {}
        self.references: dict[str, dict[str, torch.Tensor]] = {}
        self.train_refs: dict[str, training.TrainTrace] = {}
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
        # Called after each cell is recorded (a fresh child reports the cell back to the run).
        self.cell_done: Callable[[Cell], None] | None = None
        self.recorded = 0
        self.cache_dir = Path(tempfile.mkdtemp(prefix="collector-cache-"))
        # Per compiled cell, the cache folder its one compile from an empty cache filled (kept
        # below cache_dir): later compiles of the shape and the restart measurement use it.
        self.cache_folders: dict[str, Path] = {}
        self.log: EventLog | None = None

    @property
    def warm_repetitions(self) -> int:
        return self.options.warm_repetitions or self.plan.warm_repetitions
