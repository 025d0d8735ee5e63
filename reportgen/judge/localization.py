"""Where a cell's error arises, judged from its ``localization`` event.

Each localised module has up to two figures against the reference module's output, judged
with the cell's own tolerance: accumulated (both sides end to end: its own error and what it
inherited) and local (the candidate module fed the reference module's inputs: its own error).
The first module in execution order whose local error is beyond the tolerance is where the
cell diverges; a module after it that is within the tolerance locally but beyond it end to end
only inherited its error.

When the first module beyond the tolerance end to end is within it locally, nothing before it
is beyond it, and its end-to-end error jumps far past what came before (a gap), the error arises
in code no localised module covers: the enclosing module's own forward between the last module
within the tolerance and that one (an operation written in ``forward`` itself, not a submodule).

The collector measures each module's first call only. A module called more than once before the
point named may go wrong in a later call, so the sentence names that as a possibility instead of
a definite place. A mismatching cell whose every module is within the tolerance end to end has its
error in what was not measured: modules the bounds skipped, later calls, or code no module covers.
Where no module is named and a module beyond the tolerance end to end has no local figure (it
could not be run or compiled alone), its own error is unknown: if it is the first one beyond the
tolerance, the error arises in it or before it; after modules within the tolerance on their own,
the error builds up from the first of those, and it may add error of its own. The modules ``max_modules`` cut are the last ones in the reference's execution
order (collector/localize.py keeps the first ones), so they are never said to come before a
module named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

from collector.planschema import module_depth
from reportgen.contract.events import ErrorStats, Localization, LocalizedModule
from reportgen.judge.allowance import NOT_FINITE, ratio, why_infinite
from reportgen.model.runmodel import CellRecord

Role = Literal["diverges", "own error", "inherited", "arises before", "within", "not measured"]

# A rise in end-to-end error of up to this many times what the modules before it carried plus the
# module's own error is read as error building up (a module may amplify the error it is fed: a
# block amplifying a 0.45x error 2.7-fold read as 'arises before' at 2); a larger one, at the
# first module beyond the tolerance end to end, as error arising before it (the parent's own
# code between two blocks gave 13.5 times in the case this reading was made for).
GAP_FACTOR = 4.0

# Reasons a module was left out that are bounds of the plan's [localize] table.
BOUNDS = ("max_depth", "max_modules", "max_bytes")


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
    accumulated_why: str = NOT_FINITE  # why no number states an infinite figure (allowance.why_infinite)
    local_why: str = NOT_FINITE

    @property
    def accumulated_text(self) -> str:
        return ratio_text(self.accumulated, self.accumulated_why)

    @property
    def local_text(self) -> str:
        return ratio_text(self.local, self.local_why)

    def accumulated_times(self, tail: str = " the allowance") -> str:
        """In a sentence: "3.2 × the allowance", or the words for a figure no number states."""
        return _times(self.accumulated_text, tail)

    def local_times(self, tail: str = " the allowance") -> str:
        return _times(self.local_text, tail)


@dataclass(frozen=True)
class Gap:
    """Error that arises between two localised modules, in code neither covers."""

    before: ModuleVerdict  # the first module beyond the tolerance end to end; within it locally
    after: str | None  # the last module before it (outermost), within the tolerance end to end
    enclosing: str | None  # the called module whose own forward holds that code; None: the model itself
    carried: float  # the largest end-to-end figure among the modules before it


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
    gap: Gap | None = None  # error that arises in code no localised module covers, before ``first``
    skipped_words: tuple[str, ...] = ()  # the modules left out, in words (skipped_notes)
    # Modules called more than once, with their calls, whose later calls (never measured) may hold
    # the error: those measured before the module named, or any where no module is named.
    repeated: tuple[tuple[str, int], ...] = ()
    max_depth: int | None = None  # the plan's [localize] max_depth
    # Modules after the one named, beyond the tolerance end to end, called more than once: only
    # their first call was measured, so they are not said to only inherit the error.
    again_after: tuple[tuple[str, int], ...] = ()
    # Where no module is named: the first module beyond the tolerance end to end whose own
    # (local) error was not measured (the error may arise in it), and the first module beyond
    # the tolerance end to end (the same one, or one before it whose own error is within).
    unlocal: ModuleVerdict | None = None
    first_beyond: ModuleVerdict | None = None
    brief: str = ""  # where the error arises, in one phrase (a headline's or a comparison's cell)

    @property
    def again_after_words(self) -> str:
        """'; after it, shared was measured in its first of 2 calls only: its later calls may add error of
        their own' (or each such module, with its calls), or ''."""
        if not self.again_after:
            return ""
        if len(self.again_after) == 1:
            name, calls = self.again_after[0]
            return f"; after it, {name} was measured in its first of {calls} calls only: its later calls may add error of their own"
        shown = [f"{name} ({calls} calls)" for name, calls in self.again_after[:4]]
        more = f" and {len(self.again_after) - 4} more" if len(self.again_after) > 4 else ""
        return (
            f"; after it, {', '.join(shown)}{more} were measured in their first call only: their later calls may add"
            " error of their own"
        )

    @property
    def first_words(self) -> str:
        """'first diverging module' or, where a module that may come before it was not
        measured, 'first diverging module among those measured'."""
        return "first diverging module" + (" among those measured" if self.unmeasured else "")

    @property
    def unmeasured_words(self) -> str:
        """'; not measured, and possibly before it: a, b' or ''."""
        if not self.unmeasured or (self.first is None and self.gap is None):
            return ""
        shown = ", ".join(self.unmeasured[:5]) + (
            f" and {len(self.unmeasured) - 5} more" if len(self.unmeasured) > 5 else ""
        )
        return f"; not measured, and possibly before it: {shown}"


def _beyond(stats: ErrorStats | None) -> bool:
    return stats is not None and (stats.mismatched > 0 or stats.diff_at_worst is None)


def _role(m: LocalizedModule, diverging: str | None, gap: str | None = None) -> Role:
    if _beyond(m.local):
        # After a gap, the first module with an error of its own adds to an error that arose before it.
        return "diverges" if m.name == diverging and gap is None else "own error"
    if m.local is None:
        return "not measured"
    if m.name == gap:
        return "arises before"
    return "inherited" if _beyond(m.accumulated) else "within"


def _gap(modules: list[LocalizedModule], not_called: set[str]) -> tuple[str, str | None, str | None, float] | None:
    """Where the first module beyond the tolerance end to end is within it locally, every module
    before it was measured end to end and is within it, and its end-to-end figure exceeds
    GAP_FACTOR times the largest of theirs plus its own: the error arises before it, in code no
    localised module covers: (that module, the last before it, the module whose own forward holds
    the code, the largest figure before it), Gap's fields by name. None otherwise (error that
    builds up, or that cannot be told)."""
    at = next((i for i, m in enumerate(modules) if _beyond(m.accumulated)), None)
    if at is None:
        return None
    m, earlier = modules[at], modules[:at]
    if m.local is None or _beyond(m.local) or any(e.accumulated is None for e in earlier):
        return None
    end_to_end, own = ratio(m.accumulated), ratio(m.local)
    carried = max((ratio(e.accumulated) or 0.0 for e in earlier), default=0.0)
    if end_to_end is None or own is None or end_to_end <= GAP_FACTOR * (carried + own):
        return None
    # The last module before it, taken at its outermost: the block that ran, not the block's last layer.
    after = earlier[-1].name if earlier else None
    names = {e.name for e in earlier}
    for parent in reversed(_parents(after or "")):
        if parent in names and not m.name.startswith(parent + "."):
            after = parent
    if after is not None and m.name.startswith(after + "."):
        after = None  # its parent ran just before it: the code opens that parent's forward
    # The code lies in the nearest enclosing module that was itself called (a ModuleList is not).
    enclosing = next((p for p in reversed(_parents(m.name)) if p not in not_called), None)
    return m.name, after, enclosing, carried


def _parents(name: str) -> list[str]:
    """The modules around a named one, outermost first: "a.b.c" -> ["a", "a.b"]."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


# A module inside the one found is named in its place only where its own error is at least
# this share of the outer one's (measured at each module's worst element, as a ratio to its
# allowance): a small error of a later child does not account for a large one of the parent's
# own code before it.
ACCOUNTS_FOR = 0.5


def _diverging(modules: list[LocalizedModule]) -> str | None:
    """The first module in execution order whose local error is beyond the tolerance, narrowed
    to the first such module inside it while there is one that accounts for its error (a block's
    own layer, not the block; but the block itself where its own code between its layers adds
    far more than any layer does)."""
    own = [m for m in modules if _beyond(m.local)]
    if not own:
        return None
    found = own[0]
    inner = [m for m in own if m.name.startswith(found.name + ".")]
    while inner:
        outer, child = ratio(found.local), ratio(inner[0].local)
        if outer is not None and child is not None and not math.isinf(outer) and child < ACCOUNTS_FOR * outer:
            break
        found = inner[0]
        inner = [m for m in inner if m.name.startswith(found.name + ".")]
    return found.name


def judge_localization(event: Localization) -> Localized:
    ordered = sorted(event.modules, key=lambda m: m.order)
    diverging = _diverging(ordered)
    gap_at = _gap(ordered, {s.name for s in event.skipped if s.reason not in BOUNDS})
    names = [m.name for m in ordered]
    if gap_at is not None and diverging is not None and names.index(gap_at[0]) > names.index(diverging):
        gap_at = None  # reported only where it comes before the first module with its own error
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
            role=_role(m, diverging, gap_at[0] if gap_at else None),
            note=m.note,
            accumulated_why=why_infinite(m.accumulated) if m.accumulated is not None else NOT_FINITE,
            local_why=why_infinite(m.local) if m.local is not None else NOT_FINITE,
        )
        for m in ordered
    ]
    first = next((v for v in verdicts if v.name == diverging), None)
    gap = None
    if gap_at is not None:
        name, after, enclosing, carried = gap_at
        gap = Gap(next(v for v in verdicts if v.name == name), after, enclosing, carried)
    inherited: tuple[str, ...] = ()
    again_after: tuple[tuple[str, int], ...] = ()
    unmeasured: tuple[str, ...] = ()
    named = gap.before if gap else first
    if named is not None:
        at = names.index(named.name)
        # A module called more than once was measured in its first call only: its later calls may
        # add error of their own, so it is not said to only inherit it.
        inherited = tuple(v.name for v in verdicts[at + 1 :] if v.role == "inherited" and v.calls <= 1)
        again_after = tuple((v.name, v.calls) for v in verdicts[at + 1 :] if v.role == "inherited" and v.calls > 1)
        # A module inside the one named (its parent runs first) is no earlier divergence; before a
        # gap, every module was measured end to end within the tolerance and holds none of it.
        unmeasured = tuple(
            v.name
            for v in verdicts[:at]
            if v.role == "not measured" and not named.name.startswith(v.name + ".") and gap is None
        )
        # Below max_depth a module lies inside a measured one, whose own error holds its; one the
        # reference never called ran nowhere; max_modules cut the modules that ran after every
        # measured one. A module whose captures passed max_bytes may run anywhere.
        unmeasured += tuple(s.name for s in event.skipped if s.reason == "max_bytes")
        # The list was cut (collector/localize.py names 200): those not named may be of max_bytes.
        unmeasured += (f"{event.skipped_more} more skipped",) if event.skipped_more else ()
    # Where no module is named, the first one beyond the tolerance end to end is the point placed.
    beyond = next((v for v, m in zip(verdicts, ordered) if _beyond(m.accumulated)), None)
    point = named or beyond
    unlocal = (
        next((v for v, m in zip(verdicts, ordered) if _beyond(m.accumulated) and v.local is None), None)
        if named is None
        else None
    )
    repeated = _repeated(verdicts, point)
    if named is not None and gap is None:
        unmeasured += tuple(
            f"later calls of {name} (only its first of {calls} was measured)" for name, calls in repeated
        )
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
        gap=gap,
        repeated=repeated,
        max_depth=event.max_depth,
        again_after=again_after,
        unlocal=unlocal,
        first_beyond=beyond,
    )
    return replace(found, sentence=where_sentence(found), skipped_words=skipped_notes(found), brief=_brief(found))


def region_caveat(plan: Any) -> str:
    """Where the plan judges only part of the outputs (a mask or region of compare.outputs), what
    a localisation cannot say: its figures cover each module's whole output, the cell's its judged
    elements, so a module named may diverge only where the cell does not judge ('' otherwise)."""
    compare = getattr(plan, "compare", None)
    rules = [r for r in (compare.outputs if compare is not None else ()) if r.mask is not None or r.region is not None]
    if not rules:
        return ""
    judged = "; ".join(f"{r.output}: {r.description}"[:120] for r in rules[:4])
    return (
        f" Module figures cover each module's whole output, while this cell judges only part of its outputs ({judged}):"
        " a module named here may diverge only in elements the cell does not judge."
    )


# Said of a cell that met its elementwise tolerance and failed its task criterion alone.
TASK_ONLY = (
    "The cell met its elementwise tolerance and failed its task criterion alone: each module's figures are judged by"
    " that elementwise tolerance, so they cannot place a task-criterion failure; no module or place is named."
)


def task_only(cell: Any) -> bool:
    """Whether an inference cell mismatched on its task criterion alone, every element within its
    tolerance: what localisation measures (elementwise, per module) cannot place that."""
    result = cell.result if cell.status == "mismatch" and not cell.trained else None
    stats = result.error_stats if result is not None else None
    metric = result.task_metric if result is not None else None
    return stats is not None and stats.mismatched == 0 and metric is not None and metric.passed is False


def judge_cell_localization(cell: Any) -> Localized | None:
    """A cell's localisation judged (None where it has none), placing nothing where the cell
    failed its task criterion alone (task_only)."""
    event = cell.localization
    if event is None:
        return None
    found = judge_localization(event)
    if found.failure or not task_only(cell):
        return found
    return replace(
        found,
        first=None,
        inherited=(),
        gap=None,
        unlocal=None,
        first_beyond=None,
        again_after=(),
        sentence=TASK_ONLY,
        brief="not placed: the cell failed its task criterion alone, which module figures cannot place",
    )


def judge_localization_of(run: Any, cell: Any) -> Localized | None:
    """judge_cell_localization, with the plan's judged region said beside the sentence where there is one."""
    found = judge_cell_localization(cell)
    if found is None:
        return None
    caveat = region_caveat(run.plan) if run is not None else ""
    return replace(found, sentence=found.sentence + caveat) if caveat and not found.failure else found


def _brief(found: Localized) -> str:
    """Where the error arises, in one phrase: what a headline or a comparison's cell says."""
    if found.failure:
        return "localisation failed"
    if found.gap is not None:
        m = found.gap.before
        later = f"; later, {found.first.name} adds its own" if found.first is not None else ""
        calls = f"in {later_calls_words(found.repeated)} or " if found.repeated else ""
        return f"arises before {m.name} ({m.type}), {calls}in code no localised module covers ({_gap_place(found.gap)}){later}"
    if found.first is not None:
        return (
            f"{found.first_words} {found.first.name} ({found.first.type}), local {found.first.local_times()}"
            + (f", {len(found.inherited)} after it inherit" if found.inherited else "")
            + found.unmeasured_words
        )
    if found.unlocal is not None:
        u, b = found.unlocal, found.first_beyond
        if b is not None and b is not u:
            return f"builds up from {b.name} on; {u.name} ({u.type}), whose own error was not measured, may add to it"
        return f"{u.name} ({u.type}) is the first beyond the tolerance end to end ({u.accumulated_times('')}); its own error was not measured"
    if any(v.local is None for v in found.modules):
        return "localised: no measured module's own error beyond the tolerance"
    return "localised: no module's own error beyond the tolerance"


def _repeated(verdicts: list[ModuleVerdict], point: ModuleVerdict | None) -> tuple[tuple[str, int], ...]:
    """Modules called more than once that ran before ``point`` (all of them where it is None),
    with their calls. A module around ``point`` is left out (its first call holds it, so its later
    calls come after), and so is one inside a module already listed (its calls run in the parent's)."""
    before = verdicts if point is None else verdicts[: verdicts.index(point)]
    found: list[tuple[str, int]] = []
    listed: set[str] = set()
    for v in before:
        around = point is not None and point.name.startswith(v.name + ".")
        inside = any(parent in listed for parent in _parents(v.name))  # by name: linear in the modules
        if v.calls > 1 and not around and not inside:
            found.append((v.name, v.calls))
            listed.add(v.name)
    return tuple(found)


def later_calls_words(repeated: tuple[tuple[str, int], ...]) -> str:
    """'a later call of shared (only its first of 2 calls was measured)', or for several modules
    'a later call of a or b (only the first call of each was measured)'."""
    if len(repeated) == 1:
        name, calls = repeated[0]
        return f"a later call of {name} (only its first of {calls} calls was measured)"
    names = [name for name, _ in repeated[:4]] + ([f"{len(repeated) - 4} more"] if len(repeated) > 4 else [])
    return f"a later call of {', '.join(names[:-1])} or {names[-1]} (only the first call of each was measured)"


def _unmeasured_places(found: Localized) -> tuple[list[str], str]:
    """Where the error of a mismatching cell may arise when no localised module holds it: later
    calls, modules the bounds skipped, code no module covers; and which bound to raise ('' if none).
    A module below max_depth lies inside a measured one unless its parent was never called itself."""
    max_depth = found.max_depth
    places = [later_calls_words(found.repeated)] if found.repeated else []
    bounded = [name for name, why in found.skipped if why in ("max_modules", "max_bytes")]
    bounds = [b for b in ("max_modules", "max_bytes") if any(why == b for _, why in found.skipped)]
    measured = {v.name for v in found.modules}
    uncovered = max_depth is not None and any(
        why not in BOUNDS and module_depth(name) == max_depth and not any(p in measured for p in _parents(name))
        for name, why in found.skipped
    )
    if bounded or found.skipped_more:
        more = len(bounded) - 3 + found.skipped_more
        shown = ", ".join(bounded[:3]) + (f" and {more} more" if more > 0 else "")
        places.append(f"a module the bounds skipped ({shown})")
    elif uncovered and any(why == "max_depth" for _, why in found.skipped):
        places.append(f"a module below depth {max_depth} that no measured module holds")
        bounds = ["max_depth"]
    places.append("code no localised module covers")
    return places, " or ".join(bounds) if bounds else ("max_modules or max_bytes" if found.skipped_more else "")


# A skipped module's reason where the candidate called it and the reference never did
# (collector/localize.py, CANDIDATE_ONLY; collector 0.14.0 on).
CANDIDATE_ONLY = "called by the candidate, not by the reference"


def candidate_only(found: Localized) -> list[str]:
    """The modules the candidate called and the reference never did: another code path."""
    return [name for name, why in found.skipped if why == CANDIDATE_ONLY]


def where_sentence(found: Localized) -> str:
    """Where the cell diverges, or why no module is named; then the modules only the candidate
    called, where the two took different code paths (a likely place for the outputs to part,
    which no figure measures)."""
    other = candidate_only(found)
    if found.failure or not other:
        return _where_sentence(found)
    more = f" and {len(other) - 8} more" if len(other) > 8 else ""
    paths = (
        f"The candidate called {', '.join(other[:8])}{more}, which the reference never called: the two"
        " took different code paths there (not measured)"
    )
    if found.first is None and found.gap is None and found.unlocal is None:
        # No measured module holds the error: the other path leads, and nothing is said to
        # build up across modules (a module not measured may hold all of it).
        none = _none_own(found)
        return f"{paths}; {none[0].lower()}{none[1:]}."
    return f"{_where_sentence(found)} {paths}."


def _none_own(found: Localized) -> str:
    """'No localised module's own error is beyond the tolerance', said of the modules measured
    on their own where some were not, naming those."""
    alone = [v.name for v in found.modules if v.local is None]
    if not alone:
        return "No localised module's own error is beyond the tolerance"
    more = f" and {len(alone) - 5} more" if len(alone) > 5 else ""
    return f"No measured module's own error is beyond the tolerance (not measured on their own: {', '.join(alone[:5])}{more})"


def _where_sentence(found: Localized) -> str:
    if found.failure:
        return f"Localisation failed: {found.failure}"
    if found.gap is not None:
        return gap_sentence(found, found.gap)
    later = f"; it may also arise in {later_calls_words(found.repeated)}" if found.repeated else ""
    if found.first is None and found.unlocal is not None:
        u = found.unlocal
        why = f" ({u.note})" if u.note else ""
        others = [v.name for v in found.modules[: found.modules.index(u)] if v.local is None]
        also = (
            f"; nor was that of {', '.join(others[:5])}{f' and {len(others) - 5} more' if len(others) > 5 else ''} before it"
            if others
            else ""
        )
        b = found.first_beyond
        if (
            b is not None and b is not u
        ):  # the error is beyond the tolerance before it, from modules within it on their own
            return (
                f"No module whose own error was measured is beyond the tolerance; {b.name} is the first beyond it end to end,"
                f" {b.accumulated_times()} (its own error {b.local_times('')}): the error builds up"
                f" from {b.name} on{later}. {u.name} ({u.type}), {u.accumulated_times(' end to end')}, has no local"
                f" figure{why}{also}: it may add error of its own."
            )
        return (
            f"{u.name} ({u.type}) is the first localised module beyond the tolerance end to end, {u.accumulated_times()},"
            f" and its own (local) error was not measured{why}{also}: the error arises in it or before it"
            f"{later}; no module whose own error was measured is beyond the tolerance."
        )
    if found.first is None:
        beyond = next((v for v in found.modules if v.role == "inherited"), None)
        if beyond is not None:
            # A module before the first one beyond the tolerance whose output was not compared
            # (not a tensor, or not finite in the reference) may hold the error: not "builds up".
            blind = [v.name for v in found.modules[: found.modules.index(beyond)] if v.accumulated is None]
            if blind:
                more = f" and {len(blind) - 5} more" if len(blind) > 5 else ""
                return (
                    f"{_none_own(found)}; {beyond.name} is the first beyond it end to end ({beyond.accumulated_times()}), "
                    f"after {', '.join(blind[:5])}{more}, whose output was not measured: the error arises in "
                    f"{'it' if len(blind) == 1 else 'one of them'} or builds up before {beyond.name}{later}."
                )
            return f"{_none_own(found)}; the error builds up across modules (see the accumulated column){later}."
        if found.reason == "plan":  # the cell matched: no error to place
            return "No localised module's own (local) error is beyond the tolerance."
        places, bound = _unmeasured_places(found)
        raise_it = f"; raise [localize] {bound} to measure them" if bound else ""
        if found.modules and all(v.accumulated is not None for v in found.modules):
            # The log does not say whether localisation's own run of the model reproduced the
            # mismatch: an error on a first call only, or one that varies from run to run, is
            # gone there, and every module then reads within the tolerance too.
            return (
                "Every localised module is within the tolerance, end to end too, yet the cell did not match the reference:"
                f" the error arises in {' or in '.join(places)}, or localisation's own run of the model did not"
                " reproduce the mismatch (an error on a first call only, or one that varies from run to run): the log"
                f" does not say which{raise_it}."
            )
        return f"No localised module's own (local) error is beyond the tolerance; the error may arise in {' or in '.join(places)}{raise_it}."
    f = found.first
    ops = f"; operators {', '.join(f.operators)}" if f.operators else ""
    inherited = f"; after it, {', '.join(found.inherited)} only inherit the error" if found.inherited else ""
    return (
        f"{found.first_words.capitalize()}: {f.name} ({f.type}), local error {f.local_times()}"
        f"{ops}{inherited}{found.again_after_words}{found.unmeasured_words}."
    )


def gap_sentence(found: Localized, gap: Gap) -> str:
    """Error that arises in code no localised module covers, between the two modules around it."""
    m = gap.before
    # A module called more than once before it may go wrong in a later call, never measured.
    later = f"in {later_calls_words(found.repeated)} or " if found.repeated else ""
    if found.first is not None:
        f = found.first
        after = f"; later, {f.name} ({f.type}) adds its own error, local error {f.local_times()}"
    elif found.inherited:
        after = (
            f"; the {len(found.inherited)} module(s) after it beyond the tolerance end to end only inherit the error"
        )
    else:
        after = ""
    after += found.again_after_words
    return (
        f"The error arises before {m.name} ({m.type}), {later}in code no localised module covers ({_gap_place(gap)}): "
        f"{m.name} is {m.accumulated_times(' the allowance end to end')} but {m.local_times(' on its own')}, "
        f"while no module before it is above {ratio_text(gap.carried)} × end to end{after}{found.unmeasured_words}."
    )


def _gap_place(gap: Gap) -> str:
    """Which forward holds the code, and between which modules: "the model's own forward, between a and b"."""
    holder = f"{gap.enclosing}'s own forward" if gap.enclosing else "the model's own forward"
    where = f"between {gap.after} and {gap.before.name}" if gap.after else f"before {gap.before.name}"
    return f"{holder}, {where}"


def skipped_notes(found: Localized) -> tuple[str, ...]:
    """The modules left out, in words: those the bounds skipped, and those never called themselves
    (a container such as a ModuleList, whose members are called and measured, or a module this
    input does not reach), which no bound skipped."""
    bounded = [f"{name} ({why})" for name, why in found.skipped if why in BOUNDS]
    uncalled = [name for name, why in found.skipped if why not in BOUNDS and why != CANDIDATE_ONLY]
    notes: list[str] = []
    if bounded or found.skipped_more:
        more = max(len(bounded) - 12, 0) + found.skipped_more
        listed = "; ".join(bounded[:12])
        notes.append(
            f"Skipped by the bounds: {listed}" + (f" and {more} more" if more > 0 else "") + "."
            if listed
            else f"{found.skipped_more} more module(s) skipped."
        )
    if uncalled:
        more = len(uncalled) - 12
        notes.append(
            "Never called itself in the reference run, so not measured (a container whose members are"
            " measured, or a module this input does not reach): "
            + ", ".join(uncalled[:12])
            + (f" and {more} more" if more > 0 else "")
            + "."
        )
    return tuple(notes)


def not_localized(cell: CellRecord) -> str | None:
    """Why a mismatching cell has no localisation where the collector never localises its kind
    (a generation cell), so that no module named is not read as no module diverging; else None."""
    if cell.status in ("mismatch", "nonfinite") and not cell.localized and cell.generation is not None:
        return "not localised: the collector does not localise generation cells, so no module is named"
    return None


def _times(text: str, tail: str) -> str:
    return f"{text} ×{tail}" if text[:1].isdigit() else text


def ratio_text(value: float | None, why: str = NOT_FINITE) -> str:
    """A difference over its allowance in words: ``why`` names an infinite one (not finite, beyond
    a zero allowance; "" for a quotient past a float's range)."""
    if value is None:
        return "not measured"
    if math.isinf(value):
        return why or "out of range"
    return f"{value:.3g}"
