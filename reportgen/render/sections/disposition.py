"""Section 1, Disposition: the reasons, the cells awaiting a verdict and the scope, as the judge gave them."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress, repeat
from operator import eq

from reportgen.judge.disposition import cells_with_status, Disposition, FAILED, failed_cases, Reason, Scope, scope_label, ScopeGroup
from reportgen.judge.timing_stability import SYMBOL as STABILITY_SYMBOL, timed_cells, undecided_cells
from reportgen.model.groups import failure_groups
from reportgen.model.runmodel import CellRecord, RunModel, STATUS_ORDER
from reportgen.render.sections.common import _CASE, list_text, _STATUS, anchor, DETAIL_CAP, Row


@dataclass
class ReasonView:
    outcome: str
    category: str
    message: str
    cases: list[tuple[str, str]]  # the first DETAIL_CAP, with anchors
    total: int


@dataclass
class VerdictGroupView:
    """Cells waiting for the owner's verdict that share a cause."""

    label: str
    facts: list[str]
    cases: list[tuple[str, str]]
    total: int


@dataclass
class ScopeView:
    """The disposition's scope as grouped lines: per dtype · layout · mode, the shapes."""

    facts: list[Row]
    passed: list[Row]
    not_passed: list[Row]
    passed_count: int
    not_passed_count: int


def reason_view(reason: Reason) -> ReasonView:
    shown = [(c, anchor(c)) for c in reason.cases[:DETAIL_CAP]]
    return ReasonView(reason.outcome, reason.category or "", reason.message, shown, len(reason.cases))


def scope_lines(groups: tuple[ScopeGroup, ...], run: RunModel, with_status: bool) -> list[Row]:
    """One line per dtype · layout · mode; failed cells are grouped by their status."""
    rows = []
    for g in groups:
        cells = g.cells  # only the cells a line names are put in words (a group can hold every cell)
        if not with_status:
            rows.append(Row(g.label, list_text(cells, run, scope_label)))
            continue
        statuses = list(map(_STATUS, cells))  # speed: read in C
        present = set(statuses)
        if len(present) == 1:
            by_status = {statuses[0]: cells}
        else:
            # Speed: each status's cells picked in C, in plan order; tests/test_view_shortcuts.py.
            by_status = {status: list(compress(cells, map(eq, statuses, repeat(status)))) for status in present}
        text = "; ".join(f"{status}: {list_text(by_status[status], run, scope_label)}" for status in STATUS_ORDER if status in by_status)
        rows.append(Row(g.label, text))
    return rows


def scope_view(scope: Scope, run: RunModel) -> ScopeView:
    facts = [
        Row("evidence for", scope.evidence),
        Row("intended target (plan) / run's target / ran on", f"{scope.intended_target or 'intended target not recorded'} / {scope.target} / {scope.family}"),
        Row("versions", ", ".join(f"{k} {v}" for k, v in sorted(scope.versions.items())) or "unknown"),
        Row("performance", _performance_scope(run)),
    ]
    facts += _generation_scope(run)
    return ScopeView(
        facts=facts,
        passed=scope_lines(scope.passed, run, with_status=False),
        not_passed=scope_lines(scope.not_passed, run, with_status=True),
        passed_count=scope.passed_count,
        not_passed_count=scope.not_passed_count,
    )


def _performance_scope(run: RunModel) -> str:
    """What the run's timings may decide: the correctness scope above holds either way."""
    timed = timed_cells(run)
    if not timed and run.plan is not None and run.plan.generation is not None:
        return ("generation timings (time to first token, decode latency, tokens/s) are in section 7, per bucket; "
                "their series are not classified for stability, so they decide nothing about speed here")
    if not timed:
        return "no warm timing recorded: performance not measured"
    undecided = undecided_cells(run)
    if not undecided:
        return f"warm timing of all {len(timed)} timed cells is stable by the collector's rules"
    return (f"undecided for {len(undecided)} of {len(timed)} timed cells (warm timing unstable or too short to classify: "
            f"{STABILITY_SYMBOL} in the timing table); the correctness scope above is not affected")


def _generation_scope(run: RunModel) -> list[Row]:
    """A generation run's scope in its own terms: which buckets served which request lengths,
    and how many decode steps on which cache; a shape that passed is that bucket and those steps."""
    g = run.plan.generation if run.plan else None
    if g is None:
        return []
    served = [f"{r.length} → bucket {r.bucket}" + (" (truncated)" if r.outcome == "truncated" else "") for r in run.requests if r.bucket is not None]
    refused = [f"{r.length} tokens refused" for r in run.requests if r.bucket is None]
    return [
        Row("buckets (request length → bucket)", "; ".join(served + refused) or "no request event recorded"),
        Row("decode steps", f"prefill then {g.decode_steps} greedy decode steps per request, static KV cache of {g.max_cache_len} positions; "
            "nothing beyond these buckets and steps is covered"),
    ]


def verdict_group_views(run: RunModel, disposition: Disposition) -> list[VerdictGroupView]:
    """When only the owner's verdicts are missing: the waiting cells grouped by cause."""
    blocking = [r for r in disposition.reasons if r.outcome == "blocked"]
    if not blocking or not all(r.needs_verdict for r in blocking):
        return []
    groups = failure_groups(run, _waiting_cells(run, blocking))
    return [
        VerdictGroupView(g.label, g.measured_facts(), [(c.case, anchor(c.case)) for c in g.cells[:DETAIL_CAP]], len(g.cells))
        for g in groups[:DETAIL_CAP]
    ]


def _waiting_cells(run: RunModel, blocking: list[Reason]) -> list[CellRecord]:
    """The cells these reasons name, in plan order."""
    if len(blocking) == 1 and blocking[0].cases == failed_cases(run):
        # Speed: the one reason names the judge's failed cells, kept in plan order (no pass over
        # every cell); tests/test_view_shortcuts.py.
        return list(cells_with_status(run, *FAILED))
    waiting = {case for r in blocking for case in r.cases}
    return list(compress(run.cells, map(waiting.__contains__, map(_CASE, run.cells))))


def unstable_timing_text(run: RunModel) -> str:
    """'9 of 14 timed cells have an unstable warm timing ...', or '' when every timed cell is stable."""
    undecided = undecided_cells(run)
    if not undecided:
        return ""
    unstable = sum(1 for j in undecided if j.unstable)
    timed = len(timed_cells(run))
    parts = [f"{unstable} of {timed} timed cells have an unstable warm timing ({STABILITY_SYMBOL} in the timing table, with the figures that make it so)"] if unstable else []
    if len(undecided) > unstable:
        parts.append(f"{len(undecided) - unstable} of {timed} have too few warm samples to classify")
    return "; ".join(parts) + ". Their timings decide nothing: no faster or slower verdict, geometric mean, trend point or regression uses them."
