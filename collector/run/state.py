"""Options of a run and the state its phases share."""

from __future__ import annotations

import fnmatch
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

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


@dataclass
class CellOutcome:
    status: str
    first_call_s: float | None = None
    call: Callable[[], Any] | None = None


class Run:
    """State shared by the steps of one run."""

    def __init__(self, plan: WorkloadPlan, backend: Backend, options: Options) -> None:
        self.plan = plan
        self.backend = backend
        self.options = options
        self.cells = [c for c in plan.cells if self._selected(c)]
        self.run_id = f"{plan.name}-{backend.name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"
        self.dir = options.out_dir / self.run_id
        self.progress = Progress(len(self.cells))
        self.workload: ModuleType | None = None
        self.model: torch.nn.Module | None = None
        self.inputs: dict[str, dict[str, torch.Tensor]] = {}
        self.references: dict[str, dict[str, torch.Tensor]] = {}
        self.train_refs: dict[str, training.TrainTrace] = {}
        self.passed: dict[str, CellOutcome] = {}
        self.recorded = 0
        self.cache_dir = Path(tempfile.mkdtemp(prefix="collector-cache-"))
        self.log: EventLog | None = None

    def _selected(self, cell: Cell) -> bool:
        """Cells chosen by --only globs and --modes (all of them when neither is given)."""
        by_glob = not self.options.only or any(fnmatch.fnmatch(cell.case, p) for p in self.options.only)
        return by_glob and (not self.options.modes or cell.mode in self.options.modes)

    @property
    def warm_repetitions(self) -> int:
        return self.options.warm_repetitions or self.plan.warm_repetitions
