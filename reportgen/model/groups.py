"""Failed cells grouped by cause: mode, dtype and where the log says the mismatches lie.

Both the report (what the owner must decide) and ``reportgen annotate`` (one annotations entry
per group) read these groups. Every fact here is read from the cell's logged events; where the
log does not say something (an older log without per-output statistics), the fact says only
what was measured (e.g. "worst element in X", not "all in X").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from msgspec import UNSET

from reportgen.contract.events import RegionStats
from reportgen.model.runmodel import CellRecord, RunModel

FAILED = ("mismatch", "nonfinite", "error")
NAMES_SHOWN = 6


@dataclass
class FailureGroup:
    mode: str
    dtype: str
    where: str
    cells: list[CellRecord] = field(default_factory=list)

    @property
    def cases(self) -> list[str]:
        return [c.case for c in self.cells]

    @property
    def label(self) -> str:
        return f"{self.mode} · {self.dtype} · {self.where}"

    def facts(self) -> list[str]:
        """Measured facts over the group's cells, each traceable to case_result or train events:
        first the cells themselves, then ``measured_facts``."""
        return [f"{len(self.cells)} cell(s): {', '.join(self.cases)}", *self.measured_facts()]

    def measured_facts(self) -> list[str]:
        """What the log measured over the group's cells (facts without the list of cells)."""
        cells = self.cells
        out: list[str] = []
        # Each fact is read once per cell into a plain list that min, max, set and count go
        # over in C: a group of a long log can hold thousands of cells.
        counted = [c for c in cells if c.mismatched is not None and c.total is not None]
        mismatched, totals = [c.mismatched for c in counted], [c.total for c in counted]
        trained = any([c.trained for c in cells])
        if counted:
            lo, hi = min(mismatched), max(mismatched)  # type: ignore[type-var]
            totals = sorted(set(totals))  # type: ignore[type-var]
            span = f"{lo}" if lo == hi else f"{lo} to {hi}"
            what = "loss value(s) of the steps" if trained else "element(s)"
            # A group over many shapes has as many sizes: past a dozen, their range.
            sizes = (
                ", ".join(map(str, totals))
                if len(totals) <= 12
                else f"{len(totals)} sizes from {totals[0]} to {totals[-1]}"
            )
            out.append(f"{span} {what} outside the tolerance per cell (of {sizes})")
        per_name: dict[str, list[tuple[int, int]]] = {}
        for c in [c for c in cells if c.params_off]:  # training cells only
            for name, figures in c.params_off.items():
                per_name.setdefault(name, []).append(figures)
        if per_name:
            shown = []
            for name, pairs in sorted(per_name.items())[:NAMES_SHOWN]:
                lo, hi, total = min(f[0] for f in pairs), max(f[0] for f in pairs), max(f[1] for f in pairs)
                shown.append(f"{name} {lo if lo == hi else f'{lo} to {hi}'} of {total}")
            more = f" and {len(per_name) - NAMES_SHOWN} more" if len(per_name) > NAMES_SHOWN else ""
            out.append(f"updated parameter elements outside the tolerance: {'; '.join(shown)}{more}")
        worst = [c.max_abs for c in counted if c.max_abs is not None]
        unfinite = len(counted) - len(worst)
        if unfinite:
            # A null max_abs is a difference that was not finite (NaN/Inf), never "small".
            out.append(
                f"|out - ref| not finite in {unfinite} cell(s)"
                + (f"; largest finite one elsewhere {max(worst):.4g}" if worst else "")
            )
        elif worst:
            out.append(f"largest |{'loss' if trained else 'out'} - ref| {max(worst):.4g}")
        metrics = [m for m in [c.task_metric for c in cells] if m]
        values = metric_values(metrics, "value")
        if None in values:
            metrics = [m for m, value in zip(metrics, values) if value is not None]
            values = [value for value in values if value is not None]
        if metrics:
            # The worst value for the criterion's direction: under "<=" the highest (the lowest
            # there is the best cell, and read "met" beside a cell of the group that failed).
            # Without a criterion which way is worse is not known: the range is given.
            criterion = next((m.get("criterion") for m in metrics if m.get("criterion")), None)
            upper = criterion is not None and str(criterion["op"]).startswith("<")
            worst_value = max(values) if upper else min(values)
            low = metrics[values.index(worst_value)]  # the first of them, as max/min(key=) finds it
            if criterion is None:
                span = (
                    f"from {min(values):.12g} to {max(values):.12g}"
                    if min(values) != max(values)
                    else f"= {low['value']:.12g}"
                )
                out.append(f"task metric {low['name']} {span} (no criterion)")
            else:
                crit = ""
                if low.get("criterion"):
                    crit = f" (criterion {low['criterion']['op']} {low['criterion']['threshold']:g}: {'met' if low.get('passed') else 'not met'})"
                out.append(f"{'highest' if upper else 'lowest'} task metric {low['name']} = {low['value']:.12g}{crit}")
        outside = _outside_facts(cells)
        if outside:
            out.append(outside)
        return out


def metric_values(metrics: list[Any], name: str) -> list[Any]:
    """``m.get(name)`` of each task metric. The fast path's metrics are Structs, read here as
    attributes in C (a long log has thousands; an absent field reads UNSET); the careful
    path's are dicts."""
    try:
        values = list(map(attrgetter(name), metrics))
    except AttributeError:  # a dict, or a Struct without that field
        return [m.get(name) for m in metrics]
    return [None if value is UNSET else value for value in values] if UNSET in values else values


def where_text(cell: CellRecord) -> str:
    """Where the cell's mismatches lie, as far as the log says (compact facts only)."""
    if cell.status == "error":
        return f"error in {cell.failure_kind}" if cell.failure_kind else "error"
    if cell.trained:
        return _training_where(cell)
    prefix = "non-finite values; " if cell.status == "nonfinite" else ""
    if cell.status == "mismatch" and cell.mismatched == 0 and cell.task_metric and cell.task_metric.passed is False:
        return "task criterion not met; no element outside the tolerance"
    if cell.per_output:
        bad = [o for o in cell.per_output if o.mismatched]
        regions = sorted({region for o in bad if (region := o.get("region"))})
        names = _names([o.name for o in bad]) if bad else "no output"
        text = f"only in {names}" if len(bad) < len(cell.per_output) else f"in {names}"
        if regions:
            text += f", inside the judged region ({'; '.join(regions)})"
        return prefix + text
    if cell.worst_output:
        # "Worst" only when some element is outside the tolerance (a task-metric failure can
        # leave every element inside it).
        if cell.mismatched == 0:
            return prefix + f"every element within tolerance; largest |diff| / allowance in {cell.worst_output}"
        return prefix + f"worst element in {cell.worst_output}"
    return "non-finite output" if cell.status == "nonfinite" else "no statistics"


def _training_where(cell: CellRecord) -> str:
    parts = []
    if cell.loss_off:
        parts.append("loss")
    if cell.grads_off:
        parts.append(f"gradients of {_names(sorted(cell.grads_off))}")
    if cell.params_off:
        parts.append(f"updated {_names(sorted(cell.params_off))}")
    if not parts:
        return "training: no step or parameter outside tolerance recorded"
    only = "only in " if len(parts) == 1 else "in "
    return only + " and ".join(parts)


def _names(names: list[str]) -> str:
    shown = names[:NAMES_SHOWN]
    more = f" and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
    return ", ".join(shown) + more


def _outside_facts(cells: list[CellRecord]) -> str:
    """The excluded regions' statistics, when the plan declared judged regions."""
    outs: list[RegionStats] = [x for c in cells if c.per_output for o in c.per_output if (x := o.get("outside"))]
    if not outs:
        return ""
    beyond: list[int] = [n for o in outs if (n := o.get("beyond_tolerance")) is not None]
    worst = [o.max_abs for o in outs if o.max_abs is not None]
    text = f"outside the judged region: {sum(o.count for o in outs)} element(s) not judged"
    if beyond:
        text += f", {sum(beyond)} of them beyond the tolerance"
    if worst:
        text += f", largest |out - ref| there {max(worst):.4g}"
    return text


def failure_groups(run: RunModel, cells: list[CellRecord] | None = None) -> list[FailureGroup]:
    """Failed cells (or the given ones) by (mode, dtype, where), in plan order."""
    chosen = cells if cells is not None else [c for c in run.cells if c.status in FAILED]
    groups: dict[tuple[str, str, str], FailureGroup] = {}
    # A long log has thousands of failed cells and few groups. where_text reads only these
    # facts of a cell without per-output statistics, training or a zero count (the other
    # cells' text is worked out for each): the group is looked up by them.
    by_facts: dict[tuple[str, str, str, str | None, str | None], FailureGroup] = {}
    for cell in chosen:
        planned = cell.planned
        if cell.per_output or cell.trained or cell.mismatched == 0:
            facts = None
            group = None
        else:
            facts = (planned.mode, planned.dtype, cell.status, cell.failure_kind, cell.worst_output)
            group = by_facts.get(facts)
        if group is None:
            key = (planned.mode, planned.dtype, where_text(cell))
            group = groups.get(key)
            if group is None:
                group = groups[key] = FailureGroup(*key)
            if facts is not None:
                by_facts[facts] = group
        group.cells.append(cell)
    return list(groups.values())
