"""What each run declared before any result, and which of those declarations changed between runs.

A comparison of two runs is read against the criteria each was judged by: a cell that passes
after its tolerance was widened, or after part of an output stopped being judged, was not
fixed. ``declared_criteria`` lists a run's declarations as plain text per criterion (so a site
can keep them in its state file), ``criteria_changes`` names every difference, and
``changed_for`` says which changes could have turned one cell's result, so a cell that passes
only under a changed criterion is never counted as fixed.

Criteria named (each from the plan, the run's first line or its artifacts; a log that does not
record one reads "not recorded"): tolerances and task criteria per dtype, judged regions per
output, update rules per parameter group, the reference, the planned matrix, the timing scope,
the warm repetition count, the weights' and inputs' sha256, the collector and schema versions.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any, Literal, Mapping

from reportgen.model.runmodel import RunModel

NOT_RECORDED = "not recorded"
EVERY_ELEMENT = "every element"
# What a criterion can decide: a cell's correctness, its timing, or only what the record says.
Judges = Literal["correctness", "timing", "record"]


@dataclass(frozen=True)
class Declared:
    """One declared criterion of one run."""

    key: str  # stable identity across runs, e.g. "region:last_hidden_state"
    label: str  # in words, e.g. "judged region of last_hidden_state"
    value: str
    judges: Judges
    dtype: str | None = None  # applies only to cells of this dtype; None: to every cell

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CriterionChange:
    """A criterion declared differently by the earlier and the later run (a judged fact)."""

    key: str
    label: str
    before: str
    after: str
    judges: Judges
    dtype: str | None
    text: str  # the change in one phrase, e.g. "last_hidden_state now judged only where attention_mask != 0"


def _tolerance(tol: Any) -> str:
    text = f"atol {tol.atol:g}, rtol {tol.rtol:g}"
    for name in ("loss", "grad"):
        rule = getattr(tol, name, None)
        if rule is not None:
            text += f"; {name} atol {rule.atol:g}, rtol {rule.rtol:g}"
    return text


def _region(rule: Any) -> str:
    if rule.mask is None and rule.region is None:
        return EVERY_ELEMENT
    return f"only where {rule.description}"


def _inputs_sha(run: RunModel) -> str:
    """The inputs by content where the log hashed them (the same tensors written another way
    keep their hash), else by file bytes."""
    shas = sorted({(a.case or "", a.content_sha256 or a.sha256) for a in run.artifacts if a.role == "inputs"})
    if not shas:
        return NOT_RECORDED
    if len(shas) == 1:
        return shas[0][1]
    return f"per cell ({len(shas)} files), digest {hashlib.sha256(repr(shas).encode()).hexdigest()[:12]}..."


def _weights_sha(run: RunModel) -> str:
    if run.plan is not None and run.plan.weights_content_sha256:
        return run.plan.weights_content_sha256
    if run.plan is not None and run.plan.weights_sha256:
        return run.plan.weights_sha256
    shas = sorted({a.sha256 for a in run.artifacts if a.role == "weights"})
    return ", ".join(shas) if shas else NOT_RECORDED


def _plan_criteria(plan: Any) -> list[Declared]:
    out = [Declared("reference", "reference", plan.reference, "correctness")]
    for dtype, tol in sorted(plan.tolerances.items()):
        out.append(Declared(f"tolerance:{dtype}", f"{dtype} tolerance", _tolerance(tol), "correctness", dtype))
        task = f"{tol.task.metric} {tol.task.op} {tol.task.threshold:g}" if tol.task is not None else "none"
        out.append(Declared(f"task:{dtype}", f"{dtype} task criterion", task, "correctness", dtype))
    rules = plan.compare
    for rule in rules.outputs if rules is not None else []:
        out.append(Declared(f"region:{rule.output}", f"judged region of {rule.output}", _region(rule), "correctness"))
    for group in rules.params if rules is not None else []:
        out.append(
            Declared(
                f"update:{group.group}",
                f"update rule of {group.group}",
                f"{group.rule}: {group.description}",
                "correctness",
            )
        )
    cases = sorted(cell.case for cell in plan.matrix)
    digest = hashlib.sha256("\n".join(cases).encode()).hexdigest()[:12]
    out.append(Declared("matrix", "planned matrix", f"{len(cases)} cells (case list sha256 {digest}...)", "record"))
    scope = plan.timing_scope
    parts = [
        f"{name.replace('_', ' ')} {'timed' if getattr(scope, name) else 'not timed'}"
        for name in ("preprocessing", "host_to_device", "output_retrieval")
    ]
    parts.append("synchronized" if scope.synchronized else "not synchronized")
    out.append(Declared("timing_scope", "timing scope", ", ".join(parts), "timing"))
    out.append(Declared("warm_repetitions", "warm repetitions", str(plan.warm_repetitions), "timing"))
    return out


def declared_criteria(run: RunModel) -> dict[str, Declared]:
    """Every criterion the run declared, by key."""
    found = _plan_criteria(run.plan) if run.plan is not None else []
    found += [
        Declared("weights", _hash_label(run, "weights"), _weights_sha(run), "correctness"),
        Declared("inputs", _hash_label(run, "inputs"), _inputs_sha(run), "correctness"),
        Declared("collector", "collector version", run.start.collector, "record"),
        Declared("schema", "schema version", run.start.schema_version, "record"),
    ]
    return {d.key: d for d in found}


def _hash_label(run: RunModel, role: str) -> str:
    by_content = (
        run.plan is not None and run.plan.weights_content_sha256
        if role == "weights"
        else any(a.content_sha256 for a in run.artifacts if a.role == role)
    )
    return (
        f"{role} sha256 (by content)"
        if by_content
        else f"{role} sha256 (file bytes: the same tensors saved another way differ)"
    )


def _short(value: str) -> str:
    """A sha256 shortened to 12 hex digits, as the pages show them; other values as declared."""
    return f"{value[:12]}..." if len(value) == 64 and all(ch in "0123456789abcdef" for ch in value) else value


def _phrase(key: str, label: str, before: str, after: str) -> str:
    if key.startswith("region:"):
        output = key.partition(":")[2]
        if after == EVERY_ELEMENT:
            return f"{output} now judged at every element (was {before})"
        was = "" if before == EVERY_ELEMENT else f" (was {before})"
        return f"{output} now judged {after}{was}"
    return f"{label} now {_short(after)} (was {_short(before)})"


def criteria_changes(before: Mapping[str, Declared], after: Mapping[str, Declared]) -> list[CriterionChange]:
    """Every criterion whose declaration differs, correctness first, then timing, then the record."""
    order = {"correctness": 0, "timing": 1, "record": 2}
    changes = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        first = a or b
        assert first is not None
        old = a.value if a is not None else (EVERY_ELEMENT if key.startswith("region:") else NOT_RECORDED)
        new = b.value if b is not None else (EVERY_ELEMENT if key.startswith("region:") else NOT_RECORDED)
        if old != new:
            changes.append(
                CriterionChange(
                    key, first.label, old, new, first.judges, first.dtype, _phrase(key, first.label, old, new)
                )
            )
    return sorted(changes, key=lambda c: (order[c.judges], c.key))


def changed_for(changes: list[CriterionChange], dtype: str, judges: Judges = "correctness") -> list[CriterionChange]:
    """The changes that apply to a cell of ``dtype`` and could have decided what ``judges`` names."""
    return [c for c in changes if c.judges == judges and (c.dtype is None or c.dtype == dtype)]


def from_dicts(data: Mapping[str, Mapping[str, Any]]) -> dict[str, Declared]:
    return {key: Declared(**value) for key, value in data.items()}


def replicate_mismatch(first: Mapping[str, Declared], other: Mapping[str, Declared]) -> list[CriterionChange]:
    """What makes ``other`` no replicate of ``first``: a correctness or timing criterion declared
    differently (a collector or schema version alone does not)."""
    return [c for c in criteria_changes(first, other) if c.judges != "record"]
