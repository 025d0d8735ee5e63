"""The run as plain data: validated events gathered per planned cell. No HTML, no judgement.

Every planned cell gets a ``CellRecord``; a cell with no ``case_result`` in the log is
``untested``. Events are kept as they were validated, so every figure shown later can be traced
back to the event (and its line) it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reportgen import events as ev
from reportgen.validation import LogReading

STATUS_ORDER = ("pass", "mismatch", "nonfinite", "error", "skipped", "untested")


@dataclass
class CellRecord:
    """Everything the log says about one planned cell."""

    planned: ev.PlannedCell
    status: str = "untested"
    result: ev.CaseResult | None = None
    result_line: int | None = None
    operators: ev.Operators | None = None
    compiles: list[ev.Compile] = field(default_factory=list)
    train_steps: list[ev.TrainStep] = field(default_factory=list)
    train_result: ev.TrainResult | None = None
    cold: ev.Cold | None = None
    warm: ev.Warm | None = None
    timing_scope: ev.TimingScope | None = None
    eager_after_recompile_limit: bool = False
    profiles: list[ev.Profile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def case(self) -> str:
        return self.planned.case

    @property
    def compile(self) -> ev.Compile | None:
        """The inference or forward graph's compile facts (training adds a backward one)."""
        return self.compiles[0] if self.compiles else None

    @property
    def shape_label(self) -> str:
        return f"({self.planned.batch}, {self.planned.length})"


@dataclass
class RunModel:
    path: str
    start: ev.RunStart
    environment: ev.Environment | None
    plan: ev.Plan | None
    plan_line: int | None
    first_result_line: int | None
    cells: list[CellRecord]
    references: list[ev.Reference]
    artifacts: list[ev.Artifact]
    warnings: list[ev.WarningEvent]
    end: ev.RunEnd | None
    truncated: bool
    log_problems: list[str]

    @property
    def complete(self) -> bool:
        return self.end is not None and self.end.status == "complete" and not self.truncated

    @property
    def synthetic(self) -> bool:
        return self.start.origin == "synthetic"

    def cell(self, case: str) -> CellRecord | None:
        return next((c for c in self.cells if c.case == case), None)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUS_ORDER, 0)
        for cell in self.cells:
            counts[cell.status] += 1
        return counts

    def version(self, name: str) -> str | None:
        if self.environment is None or name not in self.environment.versions:
            return None
        return self.environment.versions[name].value


class NotARun(ValueError):
    """The log has no run_start: there is nothing to report on."""


def build_run(reading: LogReading) -> RunModel:
    """Gather a validated reading into a RunModel (the reading may be incomplete)."""
    start = next((e for e in reading.events if isinstance(e, ev.RunStart)), None)
    if start is None:
        raise NotARun(f"{reading.path}: no valid run_start event; nothing to report")
    plan = next((e for e in reading.events if isinstance(e, ev.Plan)), None)
    cells = {c.case: CellRecord(planned=c) for c in plan.matrix} if plan else {}
    model = RunModel(
        path=reading.path,
        start=start,
        environment=next((e for e in reading.events if isinstance(e, ev.Environment)), None),
        plan=plan,
        plan_line=None,
        first_result_line=None,
        cells=list(cells.values()),
        references=[],
        artifacts=[],
        warnings=[],
        end=reading.run_end,
        truncated=reading.truncated,
        log_problems=[p.format() for p in reading.problems],
    )
    for event, line in zip(reading.events, reading.lines):
        _attach(model, cells, event, line)
    return model


def _attach(model: RunModel, cells: dict[str, CellRecord], event: Any, line: int) -> None:
    if isinstance(event, ev.Plan):
        model.plan_line = line
    elif event.kind in ("case_result", "reference", "compile", "timing") and model.first_result_line is None:
        model.first_result_line = line
    if isinstance(event, ev.Reference):
        model.references.append(event)
    elif isinstance(event, ev.Artifact):
        model.artifacts.append(event)
    elif isinstance(event, ev.WarningEvent):
        model.warnings.append(event)
        if event.case in cells:
            cells[event.case].warnings.append(event.message)
    cell = cells.get(getattr(event, "case", None) or "")
    if cell is None:
        return
    if isinstance(event, ev.CaseResult):
        cell.result, cell.result_line, cell.status = event, line, event.status
        cell.warnings.extend(event.warnings)
    elif isinstance(event, ev.Operators):
        cell.operators = event
    elif isinstance(event, ev.Compile):
        cell.compiles.append(event)
    elif isinstance(event, ev.TrainStep):
        cell.train_steps.append(event)
    elif isinstance(event, ev.TrainResult):
        cell.train_result = event
    elif isinstance(event, ev.Timing):
        cell.cold = event.cold or cell.cold
        cell.warm = event.warm or cell.warm
        cell.timing_scope = event.scope
        cell.eager_after_recompile_limit |= event.eager_after_recompile_limit
    elif isinstance(event, ev.Profile):
        cell.profiles.append(event)
