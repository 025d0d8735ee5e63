"""The disposition in words: the dominant finding, and what must happen next and where.

A reader should learn from the top of a report what the run found about the model and what
to do about it, without reading the rules. Both sentences are built from the reasons the rules
gave (each with its cells) and from measured cell facts; nothing here is a new judgement.
The next step for each rule is data (``NEXT_STEPS``), so a new rule adds one line here.
"""

from __future__ import annotations

from collections import Counter
from operator import attrgetter

from reportgen.judge.disposition import FAILED, Disposition, Reason, Scope, cells_with_status
from reportgen.model.groups import metric_values
from reportgen.model.runmodel import RunModel

_STATUS = attrgetter("status")

# Rule -> what to do next and where. {annotate} and {collect} are filled in per run.
NEXT_STEPS: dict[str, str] = {
    "mismatch": "explain and decide each in annotations.toml next to the log ({annotate} writes a skeleton grouped by cause), then run `reportgen report` again",
    "error": "read each failure (phase and message) under Mismatches and errors; fix the cause and collect again, or explain it in annotations.toml",
    "reference-nonfinite": "fix the reference or its inputs first: a non-finite reference judges nothing",
    "incomplete-run": "collect the missing cells again ({collect})",
    "untested-cells": "collect the untested cells ({collect})",
    "layout-not-achieved": "make the collector feed the planned layout (see Inputs as fed), then collect those cells again",
    "skipped-cells": "remove the cause of the skips or accept them with a reason in annotations.toml",
    "cold-mismatch": "explain why the cold first call differs from the warm result before accepting any timing",
    "tolerances": "declare tolerances for every dtype in the plan, before collecting again",
    "environment": "collect again on a host where the versions and backend family can be read",
    "release-matrix": "install a torch and backend package pair from the release's package matrix (named in the reason), then collect again",
    "wrong-target": "collect on a host of the intended target (`python -m collector --target {intended}`)",
    "precision": "keep the workload on a float64-capable path, or have its owner approve a justified precision change in the plan",
    "cpu-fallback": "replace or avoid the ops that fell back to the CPU (listed under Fallback and compile findings)",
    "graph-breaks": "remove the graph breaks (reasons under Fallback and compile findings) so the compiled path is one graph",
    "recompiles": "find why the same shape compiled again (cache check under Fallback and compile findings)",
    "recompile-limit": "stay within the recompile limit: fewer shapes per process or padding to buckets",
    "layout": "feed contiguous inputs to the compiled path (make the preprocessing produce them), then collect again",
    "compile-fallback": "collect the compiled cells again with the setting the reason names at the value it names",
}


def _failed_by_mode_dtype(scope: Scope) -> Counter[tuple[str, str]]:
    """Failed cells per (mode, dtype), counted from the scope's cells that did not pass (each
    column's statuses, gathered in the scope's one pass over every cell)."""
    counted: Counter[tuple[str, str]] = Counter()
    for group in scope.not_passed:
        statuses = list(map(_STATUS, group.cells))
        n = sum(map(statuses.count, FAILED))
        if n:
            counted[(group.mode, group.dtype)] += n
    return counted


def _cells_phrase(count: int, counted: Counter[tuple[str, str]], what: str) -> str:
    by_group = Counter({f"{mode}/{dtype}": n for (mode, dtype), n in counted.items()})  # each group put in words once
    groups = ", ".join(f"{group}: {n}" for group, n in sorted(by_group.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{count} cell(s) {what} ({groups})"


def finding(run: RunModel, disposition: Disposition) -> str:
    """The dominant measured finding, in words."""
    failed, errored, untested = cells_with_status(run, *FAILED), cells_with_status(run, "error"), cells_with_status(run, "untested")
    parts = []
    if failed:
        text = _cells_phrase(len(failed), _failed_by_mode_dtype(disposition.scope), "differ from the reference beyond tolerance")
        # The cells' compact facts (runmodel), not their events: a long run has thousands of these.
        # Each metric's "passed" read once: a long run has thousands of failed cells.
        judged = [passed for passed in metric_values([m for m in [c.task_metric for c in failed] if m is not None], "passed") if passed is not None]
        if judged:
            met = sum(map(bool, judged))
            text += f"; task metric met in {met} of {len(judged)}" if met < len(judged) else f"; task metric met in all {met}"
        parts.append(text)
    if errored:
        phases = Counter(c.failure_kind.split(": ", 1)[0] for c in errored if c.failure_kind)
        where = ", ".join(f"{phase}: {n}" for phase, n in sorted(phases.items()))
        parts.append(f"{len(errored)} cell(s) failed to run" + (f" (phase {where})" if where else ""))
    if untested:
        parts.append(f"{len(untested)} of {len(run.cells)} planned cell(s) untested")
    changes = [r for r in disposition.reasons if r.outcome == "change" and r.rule not in ("mismatch", "error")]
    parts += [r.message.rstrip(".") for r in changes[:2]]
    passed = run.counts()["pass"]
    if not parts:
        return f"All {passed} planned cell(s) passed against the reference."
    return "; ".join(parts) + f". {passed} of {len(run.cells)} cell(s) passed."


def next_step(run: RunModel, disposition: Disposition, log_name: str = "events.jsonl") -> str:
    """What must happen next and where, from the first reason that stands in the way."""
    standing = [r for r in disposition.reasons if r.outcome == "blocked"] or [r for r in disposition.reasons if r.outcome == "change"]
    if not standing:
        return "Nothing for this scope. To widen it, add shapes, dtypes or modes to the plan and collect again."
    first = _first(standing)
    template = NEXT_STEPS.get(first.rule, "resolve the reason listed first under Disposition")
    planned = run.plan.target if run.plan is not None else run.start.target
    intended = disposition.scope.intended_target or planned
    text = template.format(annotate=f"`reportgen annotate {log_name}`", collect=_collect_hint(run), intended=intended)
    more = len({r.rule for r in standing}) - 1
    return f"Next: {text}." + (f" Then {more} other reason(s) listed below." if more > 0 else "")


def _first(reasons: list[Reason]) -> Reason:
    # A wrong target or a non-finite reference makes every other finding moot: say those first.
    for rule in ("wrong-target", "reference-nonfinite", "tolerances"):
        for reason in reasons:
            if reason.rule == rule:
                return reason
    return reasons[0]


def _collect_hint(run: RunModel) -> str:
    untested = [c.case for c in cells_with_status(run, "untested")]
    if untested and len(untested) <= 3:
        return "`python -m collector ... " + " ".join(f"--only {case}" for case in untested) + "`"
    return "`python -m collector` with the same plan"
