"""Where a cell's error arises, judged from its ``localization`` event.

Each localised module has up to two figures against the reference module's output, judged
with the cell's own tolerance: accumulated (both sides end to end: its own error and what it
inherited) and local (the candidate module fed the reference module's inputs: its own error).
The first module in execution order whose local error is beyond the tolerance is where the
cell diverges; a module after it that is within the tolerance locally but beyond it end to end
only inherited its error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from reportgen.contract.events import ErrorStats, Localization, LocalizedModule

Role = Literal["diverges", "own error", "inherited", "within", "not measured"]


@dataclass(frozen=True)
class ModuleVerdict:
    name: str
    type: str
    depth: int
    calls: int
    accumulated: float | None  # worst |diff| / allowance; inf: not finite; None: not measured
    local: float | None
    local_compiled: bool | None
    operators: tuple[str, ...] | None
    role: Role
    note: str | None


@dataclass(frozen=True)
class Localized:
    """A cell's localisation, judged: its modules in execution order and the first divergence."""

    case: str
    mode: str
    reason: str
    atol: float
    rtol: float
    modules: tuple[ModuleVerdict, ...]
    first: ModuleVerdict | None  # the first module whose own (local) error is beyond the tolerance
    inherited: tuple[str, ...]  # modules after it beyond the tolerance end to end only
    skipped: tuple[tuple[str, str], ...]
    skipped_more: int
    bounds: str
    accumulated_note: str | None
    operators_from: str | None
    failure: str | None
    sentence: str = ""  # where the cell diverges, or why no module is named (where_sentence)
    # Modules whose own error was not measured and may come before ``first``: those listed before
    # it without a local figure, and those the bounds skipped (the log gives no order for them).
    unmeasured: tuple[str, ...] = ()

    @property
    def first_words(self) -> str:
        """'first diverging module' or, where a module that may come before it was not
        measured, 'first diverging module among those measured'."""
        return "first diverging module" + (" among those measured" if self.unmeasured else "")

    @property
    def unmeasured_words(self) -> str:
        """'; not measured, and possibly before it: a, b' or ''."""
        if not self.unmeasured or self.first is None:
            return ""
        shown = ", ".join(self.unmeasured[:5]) + (
            f" and {len(self.unmeasured) - 5} more" if len(self.unmeasured) > 5 else ""
        )
        return f"; not measured, and possibly before it: {shown}"


def ratio(stats: ErrorStats | None) -> float | None:
    """Worst |diff| / allowance of one view: above 1 is beyond the tolerance."""
    if stats is None:
        return None
    # No finite difference, or no finite allowance (a NaN or Inf in the reference there): the
    # element is not within its tolerance, and how far beyond cannot be said.
    if stats.diff_at_worst is None or stats.allowed_at_worst is None:
        return math.inf
    if stats.allowed_at_worst > 0:
        return stats.diff_at_worst / stats.allowed_at_worst
    return math.inf if stats.diff_at_worst > 0 else 0.0


def _beyond(stats: ErrorStats | None) -> bool:
    return stats is not None and (stats.mismatched > 0 or stats.diff_at_worst is None)


def _role(m: LocalizedModule, diverging: str | None) -> Role:
    if _beyond(m.local):
        return "diverges" if m.name == diverging else "own error"
    if m.local is None:
        return "not measured"
    return "inherited" if _beyond(m.accumulated) else "within"


def _diverging(modules: list[LocalizedModule]) -> str | None:
    """The first module in execution order whose local error is beyond the tolerance, narrowed
    to the first such module inside it while there is one (a block's own layer, not the block)."""
    own = [m.name for m in modules if _beyond(m.local)]
    if not own:
        return None
    found = own[0]
    inner = [n for n in own if n.startswith(found + ".")]
    while inner:
        found = inner[0]
        inner = [n for n in inner if n.startswith(found + ".")]
    return found


def judge_localization(event: Localization) -> Localized:
    ordered = sorted(event.modules, key=lambda m: m.order)
    diverging = _diverging(ordered)
    verdicts = [
        ModuleVerdict(
            name=m.name,
            type=m.type,
            depth=m.depth,
            calls=m.calls,
            accumulated=ratio(m.accumulated),
            local=ratio(m.local),
            local_compiled=m.local_compiled,
            operators=tuple(m.operators) if m.operators is not None else None,
            role=_role(m, diverging),
            note=m.note,
        )
        for m in ordered
    ]
    first = next((v for v in verdicts if v.name == diverging), None)
    inherited: tuple[str, ...] = ()
    unmeasured: tuple[str, ...] = ()
    if first is not None:
        at = verdicts.index(first)
        inherited = tuple(v.name for v in verdicts[at + 1 :] if v.role == "inherited")
        # A module inside the one named (its parent runs first) is no earlier divergence.
        unmeasured = tuple(
            v.name for v in verdicts[:at] if v.role == "not measured" and not first.name.startswith(v.name + ".")
        )
        # Below max_depth a module lies inside a measured one, whose own error holds its; one the
        # reference never called ran nowhere. The others may run first.
        unmeasured += tuple(s.name for s in event.skipped if s.reason in ("max_modules", "max_bytes"))
        unmeasured += (f"{event.skipped_more} more skipped",) if event.skipped_more else ()
    found = Localized(
        case=event.case,
        mode=event.mode,
        reason=event.reason,
        atol=event.atol,
        rtol=event.rtol,
        modules=tuple(verdicts),
        first=first,
        inherited=inherited,
        skipped=tuple((s.name, s.reason) for s in event.skipped),
        skipped_more=event.skipped_more,
        bounds=f"depth ≤ {event.max_depth}, at most {event.max_modules} modules, {event.max_bytes} bytes held",
        accumulated_note=event.accumulated_note,
        operators_from=event.operators_from,
        failure=event.failure,
        unmeasured=unmeasured,
    )
    return replace(found, sentence=where_sentence(found))


def where_sentence(found: Localized) -> str:
    """One sentence: where the cell diverges, or why no module is named."""
    if found.failure:
        return f"Localisation failed: {found.failure}"
    if found.first is None:
        if any(v.role == "inherited" for v in found.modules):
            return "No localised module's own error is beyond the tolerance; the error builds up across modules (see the accumulated column)."
        return "No localised module's own (local) error is beyond the tolerance."
    f = found.first
    ops = f"; operators {', '.join(f.operators)}" if f.operators else ""
    inherited = f"; after it, {', '.join(found.inherited)} only inherit the error" if found.inherited else ""
    return (
        f"{found.first_words.capitalize()}: {f.name} ({f.type}), local error {ratio_text(f.local)} × the allowance"
        f"{ops}{inherited}{found.unmeasured_words}."
    )


def ratio_text(value: float | None) -> str:
    if value is None:
        return "not measured"
    if math.isinf(value):
        return "not finite"
    return f"{value:.3g}"
