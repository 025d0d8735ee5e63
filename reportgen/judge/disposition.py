"""The disposition: explicit rules over the run model, each returning its reasons and cells.

Outcomes, strongest first:

* ``blocked``  - blocked pending compatibility evidence;
* ``change``   - requires an operator, layout or precision change (the reason says which);
* ``suitable`` - suitable for the tested fixed-shape path, within the stated scope only.

Each rule is a small function ``(run, notes) -> list[Reason]``. Rules live here rather than in
the collector so an old log can be judged again when a rule changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Callable, Literal, Sequence

import msgspec

from collector.planschema import policy_word
from reportgen.model.annotations import Annotation
from reportgen.judge.criterion_power import logged_vocabulary, no_evidence
from reportgen.judge.backend_docs import (
    BackendDocs,
    adapter_docs,
    check_release_pairing,
    docs_for_family,
    evidence_families,
    family_label,
    instance_generation,
    run_backend,
    version_keys,
)
from reportgen.contract import events as ev
from reportgen.judge.changes import TIMING_HOST_KEYS, cell_loop_settings, every_host_key
from reportgen.judge.timing_stability import (
    DECODE_FLAGGED,
    GENERATION_SERIES,
    cell_stability,
    UNREAD_WAIT,
    generation_flags,
    generation_warm,
    is_unstable,
    throughput_flags,
    timed_cells,
    undecided_cells,
    undecided_why,
)
from reportgen.contract.events import PlannedCell, absent
from reportgen.model.provenance import weights_origin_words
from reportgen.judge.localization import judge_cell_localization, region_caveat
from reportgen.model.runmodel import (
    DESELECTED,
    LAYOUT_NOT_ACHIEVED,
    LAYOUT_NOT_MEASURED,
    CellRecord,
    RunModel,
    per_run,
    reference_of,
    shape_label,
)

Outcome = Literal["blocked", "change", "note"]
Notes = dict[str, Annotation]
FAILED = ("mismatch", "nonfinite")
HEADLINES = {
    "blocked": "Blocked pending compatibility evidence",
    "change": "Requires a change",
    "suitable": "Suitable for the tested fixed-shape path",
}
SYNTHETIC_LEAD = "Synthetic fixture, not a measurement (evidence of nothing)"


@dataclass(frozen=True)
class Reason:
    rule: str
    outcome: Outcome
    message: str
    cases: tuple[str, ...] = ()
    category: str | None = None
    needs_verdict: bool = False  # blocked only until the owner explains and decides these cells


@dataclass(frozen=True)
class ScopeGroup:
    """Cells of one dtype, layout and mode, in plan order (each shape's words: ``scope_label``)."""

    dtype: str
    layout: str
    mode: str
    cells: tuple[CellRecord, ...]

    @property
    def label(self) -> str:
        return f"{self.dtype} · {self.layout} · {self.mode}"


@dataclass(frozen=True)
class Scope:
    """What the disposition covers: the (shape, dtype, layout, mode) cells that passed, and
    beside them the planned cells that did not. Never flattened into separate lists, so an
    eager pass at a shape is never read as a compiled one."""

    target: str  # the target the run used (plan event), as --target resolved it
    intended_target: str | None  # what the plan is meant to certify; None: not recorded
    evidence: str  # e.g. "on cpu: not evidence for neuron"
    family: str
    passed: tuple[ScopeGroup, ...]
    not_passed: tuple[ScopeGroup, ...]
    versions: dict[str, str]

    @property
    def passed_count(self) -> int:
        return sum(len(g.cells) for g in self.passed)

    @property
    def not_passed_count(self) -> int:
        return sum(len(g.cells) for g in self.not_passed)


@dataclass(frozen=True)
class Disposition:
    outcome: Literal["suitable", "change", "blocked"]
    headline: str  # names the target the run is evidence for
    reasons: list[Reason]
    scope: Scope
    changes: list[str] = field(default_factory=list)
    # Mismatching or errored cells without a verdict: until they have one, no timing of this run
    # is accepted as a performance result (in the report, the site and diffs alike).
    performance_stopped: tuple[str, ...] = ()
    # What those cells are, in words: "mismatching", "errored" or "mismatching or errored".
    stopped_kind: str = "mismatching or errored"
    # Timed cells and generation series whose timing decides nothing (unstable, or too short to
    # classify): the headline names them, and every short form of the disposition flags them.
    timing_undecided: int = 0
    # The log says it is a synthetic fixture: whatever the headline says is evidence of nothing.
    synthetic: bool = False

    @property
    def led_headline(self) -> str:
        """The headline where it stands alone (the line `reportgen report` prints), after the
        words that a synthetic fixture is evidence of nothing; the reports say it in their banner
        above the headline."""
        return f"{SYNTHETIC_LEAD}: {self.headline}" if self.synthetic else self.headline


_CASE = attrgetter("case")


def _cases(cells: Sequence[CellRecord]) -> tuple[str, ...]:
    return tuple(map(_CASE, cells))  # in C: a reason can name tens of thousands of cells


@per_run
def failed_cases(run: RunModel) -> tuple[str, ...]:
    """The cases of the mismatching and non-finite cells, in plan order (worked out once per
    run: the headline and the performance stop read them too)."""
    return _cases(run.with_status(*FAILED))


def _family(run: RunModel) -> str:
    return run.environment.backend_family if run.environment else "unknown"


def _planned_target(run: RunModel) -> str:
    return run.plan.target if run.plan else run.start.target


# Named in a headline where the run's adapter has not met its hardware (adapter_note), as the
# site's tag names it.
ADAPTER_UNTRIED = "adapter untried on hardware"


def adapter_note(run: RunModel) -> str:
    """How far the collector's adapters for the run's backends have been exercised (the planned
    target's and the one it ran on; a neuron run: a stand-in only), in words."""
    return " ".join(docs.adapter_note for docs in adapter_docs(_planned_target(run), _family(run)))


def rule_reference_nonfinite(run: RunModel, notes: Notes) -> list[Reason]:
    """A reference (or float64 golden) that is itself NaN or Inf is a finding before any cell:
    a comparison against it cannot establish correctness."""
    reasons = []
    for ref in run.references:
        if not (ref.nonfinite or ref.golden_nonfinite):
            continue  # the cells are looked up only for a reference that is a finding
        cells = [c for c in run.cells if c.case.startswith(f"{ref.shape}-")]
        if ref.nonfinite:
            reasons.append(
                Reason(
                    "reference-nonfinite",
                    "blocked",
                    f"The reference output for input {ref.shape} is itself non-finite ({ref.nonfinite} NaN/Inf element(s), {ref.device} {ref.dtype}): cells compared against it are not evidence of correctness.",
                    _cases(cells),
                )
            )
        if ref.golden_nonfinite:
            reasons.append(
                Reason(
                    "reference-nonfinite",
                    "blocked",
                    f"The float64 golden output for input {ref.shape} is itself non-finite ({ref.golden_nonfinite} NaN/Inf element(s)): the reference's distance to it is not measured.",
                    _cases(cells),
                )
            )
    return reasons


def rule_reference_not_repeatable(run: RunModel, notes: Notes) -> list[Reason]:
    """A reference whose two runs differ beyond a dtype's tolerance (measured from schema 1.5)
    cannot tell a cell of that dtype's backend error from its own nondeterminism (dropout left
    on, a buffer that changes per call): those cells are evidence of nothing, pass or mismatch.
    Before 1.5 only the largest difference was logged, which rule_notes states."""
    reasons = []
    for ref in run.references:
        beyond = ref.noise_beyond_tolerance
        if not beyond:  # absent, not comparable, or nothing beyond: the cells speak as measured
            continue
        for dtype, count in sorted(beyond.items()):
            cells = [c for c in run.cells if c.case.startswith(f"{ref.shape}-") and c.planned.dtype == dtype]
            if not count or not cells:
                continue
            largest = "" if ref.noise_max_abs is None else f"; largest difference {ref.noise_max_abs:.3g}"
            reasons.append(
                Reason(
                    "reference-not-repeatable",
                    "blocked",
                    f"The reference for input {ref.shape} does not repeat within the {dtype} tolerance: its two runs "
                    f"differ beyond it at {count} judged element(s){largest}. Its {dtype} cells cannot tell a backend "
                    "error from the reference's own nondeterminism, whether they pass or mismatch.",
                    _cases(cells),
                )
            )
    return reasons


# The reason the collector gives a run it stopped on its plan (collector/runner.py): the same plan
# stops the same way, so collecting again with it is no next step. Not a workload error: that
# prefix also carries whatever build_model() raised, which may not happen again (a timeout).
STOPPED_ON_PLAN = "plan error:"
# The reasons the collector gives a run its workload module stopped (collector/runner.py): run
# again as it is, it stops the same way.
STOPPED_ON_WORKLOAD = ("workload error:", "workload code called sys.exit")


def incomplete_why(run: RunModel) -> str:
    """Why a run is incomplete, in words ('' for a complete run)."""
    if run.complete:
        return ""
    if run.end is None:
        return "the log has no run_end (the run stopped early)"
    if run.end.status == "aborted":
        # Its reason as said, without a closing period: the sentences it ends add theirs.
        return f"the run was aborted: {(run.end.reason or '').rstrip(' .') or 'no reason given'}"
    return "the log's last line is cut off"


def rule_incomplete_run(run: RunModel, notes: Notes) -> list[Reason]:
    if run.complete:
        return []
    why = (run.end.reason or "") if run.end is not None and run.end.status == "aborted" else ""
    untested = [c for c in run.with_status("untested") if c.untested_reason is None]
    if why.startswith(STOPPED_ON_PLAN):
        rule = "stopped-on-plan"
    elif why.startswith(STOPPED_ON_WORKLOAD):
        rule = "stopped-on-workload"
    else:
        rule = "incomplete-run"
    return [Reason(rule, "blocked", f"Incomplete run: {incomplete_why(run)}.", _cases(untested))]


def rule_untested_or_skipped(run: RunModel, notes: Notes) -> list[Reason]:
    reasons = []
    # A deselected cell, or one whose layout was not achieved, is untested too.
    untested_cells = run.with_status("untested")
    untested = [c for c in untested_cells if c.untested_reason is None]
    if untested:
        reasons.append(
            Reason(
                "untested-cells",
                "blocked",
                f"{len(untested)} planned cell(s) have no result and are untested.",
                _cases(untested),
            )
        )
    deselected = [c for c in untested_cells if c.untested_reason == DESELECTED]
    if deselected:
        reasons.append(
            Reason(
                "untested-cells",
                "blocked",
                f"{len(deselected)} planned cell(s) were not run (deselected by --only/--modes) and are untested.",
                _cases(deselected),
            )
        )
    plan = run.plan
    if plan is not None and plan.matrix_cells is not None and plan.matrix_cells > len(plan.matrix):
        # A cap cut the plan's matrix (--max-cells, [matrix] max_cells): the cells past it are
        # untested as deselected ones are (a run of one cell of three read "Suitable").
        reasons.append(
            Reason(
                "untested-cells",
                "blocked",
                f"{plan.matrix_cells - len(plan.matrix):,} of the plan's {plan.matrix_cells:,} cells are past its cap "
                "([matrix] max_cells or --max-cells): not run, and untested.",
                (),
            )
        )
    missed = [c for c in untested_cells if c.untested_reason == LAYOUT_NOT_ACHIEVED]
    if missed:
        fed = sorted({c.layout_fed or "another layout" for c in missed})
        reasons.append(
            Reason(
                "layout-not-achieved",
                "blocked",
                f"Layout not achieved: {len(missed)} cell(s) planned with one layout fed the model {', '.join(fed)} inputs; "
                "they are untested for their planned layout.",
                _cases(missed),
            )
        )
    unmeasured = [c for c in untested_cells if c.untested_reason == LAYOUT_NOT_MEASURED]
    if unmeasured:
        why = (
            "whose recorded host inputs are contiguous"
            if all(c.layout_fed == "contiguous" for c in unmeasured)
            else "that ran on a device without recording the layout the model received"
        )
        reasons.append(
            Reason(
                "layout-not-measured",
                "blocked",
                f"Layout not measured: {len(unmeasured)} cell(s) planned non-contiguous {why} (a log written before layouts were measured); "
                "they are untested for the non-contiguous layout.",
                _cases(unmeasured),
            )
        )
    skipped = [c for c in run.with_status("skipped") if not _accepted(notes, c)]
    # A generation plan's request above the largest bucket that its declared policy refuses
    # (request event) is the policy holding, not a gap in the evidence: said, not blocking.
    refusing = refused_requests(run)
    refused = [c for c in skipped if c.case in refusing]
    if refused:
        lengths = ", ".join(str(n) for n in sorted({refusing[c.case] for c in refused}))
        reasons.append(
            Reason(
                "refused-requests",
                "note",
                f"{len(refused)} planned cell(s) serve requests of {lengths} tokens, which the plan's declared policy above the largest bucket refuses: "
                "refused as declared (request events); nothing of the model ran for them.",
                _cases(refused),
            )
        )
        skipped = [c for c in skipped if c.case not in refusing]
    if skipped:
        given = sorted({c.skip_reason or "no reason recorded" for c in skipped})
        reasons.append(
            Reason(
                "skipped-cells",
                "blocked",
                f"{len(skipped)} planned cell(s) were skipped: {'; '.join(given)}.",
                _cases(skipped),
            )
        )
    return reasons


@per_run
def flagged(run: RunModel) -> list[CellRecord]:
    """The cells with any fact that a rule looks for besides status and plan: a cold call that
    did not match or did not start empty, CPU fallback, a graph break, a recompile, a compile
    that ran no graph, per-output statistics. Found in one pass over the cells, kept for the run
    (a long log has tens of thousands of cells and almost none of these); each rule picks its
    own from these few.
    A rule that reads another such fact adds it here."""
    return [
        c
        for c in run.cells
        if c.cold_check_failed
        or c.cold_full_caches
        or c.fallback_items
        or c.graph_break_reasons
        or c.recompiles_seen
        or c.recompiled
        or c.recompile_limit_hit
        or c.eager_after_recompile_limit
        or c.ran_graph is False
        or c.per_output
    ]


def _accepted(notes: Notes, cell: CellRecord) -> bool:
    note = notes.get(cell.case)
    return note is not None and note.accepted


def _judge_failures(cells: Sequence[CellRecord], notes: Notes, rule: str, what: str, caveat: str = "") -> list[Reason]:
    unexplained: list[CellRecord] = []
    no_verdict: list[CellRecord] = []
    accepted: list[CellRecord] = []
    changes: dict[str | None, list[CellRecord]] = {"operator": [], "layout": [], "precision": []}
    # One pass sorts each cell by its annotation (a long log has thousands of failed cells).
    for c in cells:
        note = notes.get(c.case)
        if note is None:
            unexplained.append(c)
            continue
        if note.verdict is None:
            no_verdict.append(c)
        if note.change in changes:
            changes[note.change].append(c)
        if note.accepted:
            accepted.append(c)
    reasons = []
    if unexplained:
        where = diverging_modules(unexplained, caveat=caveat) if rule == "mismatch" else ""
        reasons.append(
            Reason(
                rule,
                "blocked",
                f"{len(unexplained)} {what} not explained; performance acceptance is stopped until they have a verdict.{where}",
                _cases(unexplained),
                needs_verdict=True,
            )
        )
    if no_verdict:
        reasons.append(
            Reason(
                rule,
                "blocked",
                f"{len(no_verdict)} {what} explained, awaiting verdict (accepted or change needed).",
                _cases(no_verdict),
                needs_verdict=True,
            )
        )
    for change, needed in changes.items():
        if needed:
            where = diverging_modules(needed, caveat=caveat) if change == "operator" else ""
            reasons.append(
                Reason(
                    rule,
                    "change",
                    f"{len(needed)} {what} need a {change} change, per the annotations.{where}",
                    _cases(needed),
                    change,
                )
            )
    if accepted:
        reasons.append(
            Reason(rule, "note", f"{len(accepted)} {what} accepted with a reason in the annotations.", _cases(accepted))
        )
    return reasons


def refused_requests(run: RunModel) -> dict[str, int]:
    """Each case whose request the plan's declared policy refused (request events), with the
    request's length in tokens. Only a policy that says to reject holds in a refusal: a request
    refused for want of a policy, or under one the collector does not run (split), is a cell
    not tested, not a policy holding."""
    padding = run.plan.padding if run.plan is not None else None
    if policy_word(padding.above_largest if padding is not None else None) != "reject":
        return {}
    return {case: r.length for r in run.requests if r.outcome == "refused" for case in r.cases}


# The cells whose localisation a blocking line reads: a long log has thousands of failed cells,
# and an event is built per cell looked at.
LOCALISED_LOOKED = 50


def diverging_modules(cells: Sequence[CellRecord], named: int = 3, caveat: str = "") -> str:
    """Where the first few localised cells' errors arise (the module an operator change concerns,
    or the code between modules), as a sentence; "" when none was localised to a place. Where
    more cells were localised than it names, or more failed than it looked at, it says how many
    it names of how many, and where every cell's is."""
    found: list[str] = []
    modules_only = True
    # The cells the log localised (a flag the model keeps per cell, read without building a
    # cell's events), of which the first LOCALISED_LOOKED are judged: a long log's localised
    # cells past its first failed ones are read too (a review).
    localised = [cell for cell in cells if cell.localized]
    looked = localised[:LOCALISED_LOOKED]
    for cell in looked:
        judged = judge_cell_localization(cell) if cell.lines else None
        if judged is None or judged.failure:
            continue
        first = judged.first
        if judged.gap is None and first is not None:
            # A compiled cell's module is listed with the operators of an eager call of it.
            eager = " of an eager call" if judged.mode == "compiled" else ""
            ops = (
                f"; operators{eager} {', '.join(first.operators[:8])}{' …' if len(first.operators) > 8 else ''}"
                if first.operators
                else ""
            )
            among = " (among those measured" + judged.unmeasured_words + ")" if judged.unmeasured else ""
            text = f"{cell.case}: {first.name} ({first.type}{ops}){among}"
        elif judged.gap is not None or judged.unlocal is not None:
            text = f"{cell.case}: {judged.brief}"
            if len(found) < named:  # the words say what the named cells show
                modules_only = False
        else:
            continue
        found.append(text)
    if not found:
        return ""
    shown = found[:named]
    count = ""
    if len(found) > named or len(localised) > len(looked):
        of = f"{len(found)} localised cells" if len(found) != 1 else "1 localised cell"
        if len(localised) > len(looked):
            of += (
                f" in the first {len(looked)} of the {len(localised)} cells with a localisation, the rest not looked at"
            )
        some = f"the first {len(shown)} of " if len(found) > named else ""
        count = f" ({some}{of}; every cell's own is under 5. Mismatches and errors in the run's report)"
    heading = "First diverging module" if modules_only else "Where the error arises"
    return f" {heading}, from the localisation{count}: {'; '.join(shown)}.{caveat}"


def rule_mismatches(run: RunModel, notes: Notes) -> list[Reason]:
    reasons = _judge_failures(
        run.with_status(*FAILED), notes, "mismatch", "mismatching cell(s)", region_caveat(run.plan)
    )
    cold_bad = [c for c in flagged(run) if c.cold_check_failed]
    if cold_bad:
        reasons.append(
            Reason(
                "cold-mismatch",
                "blocked",
                f"The cold first call of {len(cold_bad)} cell(s) did not match the reference within tolerance.",
                _cases(cold_bad),
            )
        )
    return reasons


def rule_cold_cache(run: RunModel, notes: Notes) -> list[Reason]:
    """A cold call is only as cold as its caches were: say which were not empty."""
    warm_caches = [c for c in flagged(run) if c.cold_full_caches]
    if not warm_caches:
        return []
    dirs = sorted({folder for c in warm_caches for folder in c.cold_full_caches})
    return [
        Reason(
            "cold-cache",
            "note",
            f"The cold first call of {len(warm_caches)} cell(s) started with cache entries present in {'; '.join(dirs)}: it is labelled with that condition, not as an empty cache.",
            _cases(warm_caches),
        )
    ]


def rule_errors(run: RunModel, notes: Notes) -> list[Reason]:
    return _judge_failures(run.with_status("error"), notes, "error", "errored cell(s)")


def rule_tolerances(run: RunModel, notes: Notes) -> list[Reason]:
    if run.plan is None:
        return [
            Reason("tolerances", "blocked", "No plan was recorded, so no tolerances were declared before the results.")
        ]
    reasons = []
    dtypes = sorted({dtype for dtype, _, _ in planned_columns(run)})
    missing = [d for d in dtypes if d not in run.plan.tolerances]
    if missing:
        cells = [c for c in run.cells if c.planned.dtype in missing]
        reasons.append(
            Reason("tolerances", "blocked", f"No tolerance declared for {', '.join(missing)}.", _cases(cells))
        )
    # A generation plan's top-k overlap is a part of each dtype's criteria; the vocabulary it is
    # taken over is the logged prefill logits' last dimension.
    generation = msgspec.to_builtins(run.plan.generation) if run.plan.generation is not None else None
    vocabulary = (
        logged_vocabulary(
            o.shape for c in run.cells if c.result is not None for o in c.result.outputs if o.name == "prefill_logits"
        )
        if generation is not None
        else None
    )
    for dtype in dtypes:
        if dtype in missing:
            continue
        vacuous = no_evidence(dtype, msgspec.to_builtins(run.plan.tolerances[dtype]), generation, vocabulary)
        if vacuous:
            cells = [c for c in run.cells if c.planned.dtype == dtype]
            reasons.append(
                Reason(
                    "tolerances",
                    "blocked",
                    f"The declared {dtype} criteria pass a wrong output, so a pass under them is no evidence: {'; '.join(vacuous)}.",
                    _cases(cells),
                )
            )
    if run.first_result_line is not None and run.plan_line is not None and run.plan_line > run.first_result_line:
        reasons.append(
            Reason("tolerances", "blocked", "Tolerances and comparison rules were declared after the first result.")
        )
    return reasons + _no_task_criterion(run, [d for d in dtypes if d not in missing])


def _no_task_criterion(run: RunModel, dtypes: list[str]) -> list[Reason]:
    """Passing cells of an inference plan whose dtype declares no task criterion rest on the
    elementwise tolerance alone (a training plan compares losses and gradients; a generation
    plan cannot omit one)."""
    if run.plan is None or run.plan.training is not None or run.plan.generation is not None:
        return []
    reasons = []
    for dtype in dtypes:
        if absent(getattr(run.plan.tolerances[dtype], "task", None)):
            passed = [c for c in run.cells if c.planned.dtype == dtype and c.status == "pass"]
            if passed:
                reasons.append(
                    Reason(
                        "tolerances",
                        "note",
                        f"No {dtype} task criterion was declared: the {len(passed)} {dtype} cell(s) that passed rest on the "
                        "elementwise tolerance alone; a task-relevant result (the workload's own metric) was not compared.",
                        _cases(passed),
                    )
                )
    return reasons


def rule_environment(run: RunModel, notes: Notes) -> list[Reason]:
    if run.environment is None:
        return [
            Reason("environment", "blocked", "No environment was recorded: versions and backend family are unknown.")
        ]
    reasons = []
    family = _family(run)
    if family == "unknown":
        reasons.append(
            Reason("environment", "blocked", f"Backend family unknown: {run.environment.backend_family_reason}.")
        )
    ran = docs_for_family(family)
    # What a run must record is the data of the backend it ran on, else of the one it was
    # planned for: a neuron run whose family could not be decided is still held to Neuron's list.
    about = run_backend(run.plan.target if run.plan else run.start.target, family)
    for name in about.required_versions if about else ("torch",):
        fact = run.environment.versions.get(name)
        if fact is None or fact.value is None:
            why = fact.unknown_reason if fact else "not recorded"
            reasons.append(Reason("environment", "blocked", f"{name} version unknown: {why}."))
    if about is not None:
        reasons += _hardware_reasons(run.environment, about)
    if ran is not None and family in ran.evidence_families:
        versions = {k: v.value for k, v in run.environment.versions.items()}
        for problem in check_release_pairing(versions, ran):
            reasons.append(Reason("release-matrix", "blocked", problem + "."))
        os_name = versions.get("os_release") or ""
        if ran.wheels:
            installed, published = _install_record(run.environment, ran.wheels.get("package", ""))
            if ran.wheels["os"] not in os_name:
                reasons.append(
                    Reason(
                        "release-matrix",
                        "note",
                        f"OS is {os_name or 'unknown'}; {ran.wheels['note']} [{ran.wheels['source']}]"
                        + (f" The run's install record: {installed}." if installed else ""),
                    )
                )
            elif installed and not published:  # an OS on the list does not say how the package came to be installed
                reasons.append(Reason("release-matrix", "note", f"Install record: {installed}."))
    return reasons


def _install_record(env: ev.Environment, package: str) -> tuple[str, bool]:
    """What the environment's installed-artifact record says of ``package`` (its version, the
    installer, a wheel's tags or the URL it came from: a local build reads as one, or that no
    record names it; '' where the backend's data names no package), and whether it is a
    published wheel (tagged, from no local file)."""
    if not package:
        return "", False
    key = package.lower().replace("_", "-")
    found = next((a for a in env.artifacts if a.name.lower().replace("_", "-") == key), None)
    if found is None:
        return f"no installed-artifact record names {package}: how it was installed is not known", False
    local = (found.source_url or "").startswith("file:")
    how = [f"{found.name} {found.version}"]
    how.append(f"installed by {found.installer}" if found.installer else "installer not recorded")
    if found.source_url:
        how.append(
            f"from {found.source_url[:200]}" + (" (a local build or file, not a published wheel)" if local else "")
        )
    if found.wheel_tags:
        how.append(f"wheel tags {', '.join(found.wheel_tags[:4])}")
    elif not found.source_url:
        how.append("no wheel tags recorded")
    return ", ".join(how), bool(found.wheel_tags) and not local


def _hardware_reasons(env: ev.Environment, docs: BackendDocs) -> list[Reason]:
    """The recorded instance type against the generations the release supports, and the
    device facts its data asks for that the run could not read."""
    reasons = []
    instance = env.device.get("instance_type")
    listed = env.device.get("instance_type_neuron_ls")  # what neuron-ls printed, where DMI said nothing usable
    if (
        listed is not None
        and listed.value
        and (instance is None or instance.value is None or instance_generation(instance.value) is None)
    ):
        instance = listed
    found = docs.check_instance(
        instance.value if instance else None, instance.unknown_reason or "" if instance else "not recorded"
    )
    if found is not None:
        level, text = found
        reasons.append(Reason("instance-generation", level, text))
    unknown = [
        f"{name}: unknown: {fact.unknown_reason if fact else 'not recorded'}"
        for name in docs.device_facts
        if name != "instance_type"
        for fact in [env.device.get(name)]
        if fact is None or fact.value is None
    ]
    if unknown:
        reasons.append(
            Reason("environment", "note", f"Device facts {docs.file} asks for were not read: {'; '.join(unknown)}.")
        )
    return reasons


def intended_target(run: RunModel) -> str | None:
    """The target the plan is meant to certify; None for a log that did not record it."""
    return run.plan.intended_target if run.plan is not None else None


def ran_on(run: RunModel) -> str:
    """The target the cells really ran on, from the environment's backend family."""
    return family_label(_family(run))


def evidence_for(run: RunModel) -> str:
    """What the run is evidence for, named in every headline: the backend, the intended
    target, an adapter that has not met the hardware (its constraint file's adapter note: the
    neuron adapter has met a stand-in only, so its fallback and compile readings are untried),
    and synthetic weights where the workload says its weights are made up (or that their origin
    is not recorded, where the log does not say)."""
    intended = intended_target(run)
    where = f"on {ran_on(run)}"
    if intended is None:
        where += "; intended target not recorded"
    elif _family(run) in evidence_families(intended):
        where += f": evidence for {intended}"
    else:
        where += f": not evidence for {intended}"
    if (ran := docs_for_family(_family(run))) is not None and ran.adapter_note:  # the adapter that ran
        where += f"; {ADAPTER_UNTRIED}"
    if synthetic_weights(run):
        where += "; synthetic weights"
    elif run.plan is not None and run.plan.weights_origin is None:  # trained or made up: not known
        where += "; weights origin not recorded"
    return where


def synthetic_weights(run: RunModel) -> bool:
    return run.plan is not None and run.plan.weights_origin == "synthetic"


def rule_weights(run: RunModel, notes: Notes) -> list[Reason]:
    """A note where the weights are made up, or where a plan that could say does not."""
    if run.plan is None:
        return []
    if synthetic_weights(run):
        text = (
            "The weights are synthetic (the workload says: made up, a seeded initialisation, never trained): "
            "every cell compares this architecture's operators on those values. A trained checkpoint's values "
            "can differ in range and in what a lower precision does to them: the same plan run with the trained "
            "weights is the evidence for a model in service."
        )
    elif run.plan.weights_origin is None:
        revision = (run.plan.model_revision or "").strip()
        said = (
            f" The plan's model revision, free text this report does not read as a field, says: {revision[:200]!r}."
            if revision
            else ""
        )
        text = (
            f"Where the weights come from is {weights_origin_words(run)}: the report cannot tell trained weights "
            f"from made-up ones.{said}"
        )
    else:
        return []
    return [Reason("weights", "note", text)]


def rule_target(run: RunModel, notes: Notes) -> list[Reason]:
    intended = intended_target(run)
    family = _family(run)
    if intended is not None:
        if family in evidence_families(intended):
            return []
        return [
            Reason(
                "wrong-target",
                "blocked",
                f"The plan is meant to certify {intended} but the cells ran on {family}: a {family} run is not evidence for {intended}.",
            )
        ]
    reasons = [
        Reason(
            "wrong-target",
            "note",
            "The log does not record the plan's intended target: this run is evidence only for the backend it ran on.",
        )
    ]
    planned = run.plan.target if run.plan else run.start.target
    expected = evidence_families(planned)
    if not expected or family in expected or family == "unknown":
        return reasons
    return [
        Reason(
            "wrong-target",
            "blocked",
            f"The plan targets {planned} but the cells ran on {family}: a {family} run is not evidence for {planned}.",
        )
    ] + reasons


def rule_precision(run: RunModel, notes: Notes) -> list[Reason]:
    if run.plan is None:
        return []
    f64 = [c for c in run.cells if c.planned.dtype == "float64"]
    if "requires_float64" not in run.plan.requirements:
        return _float64_not_required(run, f64)
    family = _family(run)
    if not f64:
        return [
            Reason("precision", "blocked", "The workload requires float64 computation but no float64 cell was planned.")
        ]
    docs = docs_for_family(family)
    if docs is not None and docs.constraint("float64-as-float32") is not None:
        return [
            Reason(
                "precision",
                "change",
                f"float64 is required, but on this backend float64 runs as float32 ({docs.cite('float64-as-float32')}). Keep the workload on a verified float64 path unless its owner approves a justified change.",
                _cases(f64),
                "precision",
            )
        ]
    downcast = [c for c in f64 if _lower_precision(c)]
    if downcast:
        return [
            Reason(
                "precision",
                "change",
                "float64 is required, but these cells warned of or produced a lower precision.",
                _cases(downcast),
                "precision",
            )
        ]
    return []


def _float64_not_required(run: RunModel, f64: list[CellRecord]) -> list[Reason]:
    """float64 cells of a plan that does not say float64 is required: what they computed in is
    said beside a disposition that names float64 (plan-check asks the same question before)."""
    passed = [c for c in f64 if c.status == "pass"]
    if not passed:
        return []
    docs = docs_for_family(_family(run))
    if docs is not None and docs.constraint("float64-as-float32") is not None:
        return [
            Reason(
                "precision",
                "note",
                f"{len(passed)} float64 cell(s) passed on a backend where float64 runs as float32 ({docs.cite('float64-as-float32')}): "
                "they are evidence of float32 computation fed float64 tensors, not of float64 arithmetic. The plan does not say "
                "whether float64 computation is required (plan.requirements).",
                _cases(passed),
            )
        ]
    lower = [c for c in passed if _lower_precision(c)]
    if lower:
        return [
            Reason(
                "precision",
                "note",
                f"{len(lower)} float64 cell(s) passed but warned of or produced a lower precision; the plan does not say "
                "whether float64 computation is required (plan.requirements).",
                _cases(lower),
            )
        ]
    return []


FLOAT_DTYPES = frozenset({"float64", "float32", "bfloat16", "float16"})  # a cell's dtype may cast these


def rule_declared_inputs(run: RunModel, notes: Notes) -> list[Reason]:
    """Inputs the plan declares as integers or booleans (token ids, masks) that a cell received
    in another dtype: the cell tested what the workload fed, not the declared preprocessing."""
    declared = (run.plan.declared_inputs or {}) if run.plan is not None else {}
    kept = {name: spec.dtype for name, spec in declared.items() if spec.dtype not in FLOAT_DTYPES}
    if not kept:
        return []
    differ: dict[tuple[str, str, str], list[CellRecord]] = {}
    for c in run.cells:  # as the run model keeps them: no cell's events are built again
        for name, dtype in zip(c.input_names, c.input_dtypes):
            want = kept.get(name)
            if want is not None and dtype != want:
                differ.setdefault((name, want, dtype), []).append(c)
    return [
        Reason(
            "declared-inputs",
            "note",
            f"The plan declares input {name} as {want}, but {len(cells)} cell(s) received it as {got}: they tested "
            "what the workload fed, not the declared preprocessing (an integer id or a boolean mask kept in its type).",
            _cases(cells),
        )
        for (name, want, got), cells in differ.items()
    ]


def _lower_precision(cell: CellRecord) -> bool:
    """Whether a float64 cell warned of float64 or gave a floating output below it."""
    return any("float64" in w or "fp64" in w.lower() for w in cell.warnings) or _outputs_not_f64(cell)


def _outputs_not_f64(cell: CellRecord) -> bool:
    """Whether a floating output came back below float64 (an integer output, argmax or ids, is
    no lower precision)."""
    return any(dtype in FLOAT_DTYPES and dtype != "float64" for dtype in cell.output_dtypes)


def rule_fallback(run: RunModel, notes: Notes) -> list[Reason]:
    fell = [c for c in flagged(run) if c.fallback_items]
    reasons = []
    if fell:
        ops = sorted({op for c in fell for op in c.fallback_items})
        reasons.append(
            Reason(
                "cpu-fallback",
                "change",
                f"Ops fell back to the CPU on the path under test: {', '.join(ops)}.",
                _cases(fell),
                "operator",
            )
        )
    ran = docs_for_family(_family(run))
    if ran is not None and ran.fallback_must_be_measured:
        results = [c for c in run.cells if c.result_line is not None]
        for cells, why in (
            (
                [c for c in results if c.fallback_status == "unmeasured"],
                "CPU fallback could not be measured for these cells.",
            ),
            # A backend whose fallback happens inside its runtime has one to measure: "not
            # applicable" (what the cpu and cuda adapters answer, never the neuron one) measured nothing.
            (
                [c for c in results if c.fallback_status == "not_applicable"],
                "CPU fallback was not measured for these cells: their log calls it not applicable, but on this "
                "backend ops can fall back to the CPU inside the runtime, so it must be measured.",
            ),
            # A passing cell with no operators event at all: nothing was measured either (a review
            # relabelled a cpu log as neuron and deleted its operators line, and read "Suitable").
            (
                [c for c in results if c.status == "pass" and c.fallback_status is None],
                "CPU fallback was not recorded for these passing cells: their log has no operators event for "
                "them, and on this backend ops can fall back to the CPU inside the runtime, so it must be measured.",
            ),
        ):
            if cells:
                reasons.append(Reason("cpu-fallback", "blocked", why, _cases(cells)))
    return reasons


def rule_compiled_path(run: RunModel, notes: Notes) -> list[Reason]:
    cells = flagged(run)
    breaks = [c for c in cells if c.graph_break_reasons]
    recompiles = [c for c in cells if c.recompiles_seen or c.recompiled]
    limit = [c for c in cells if c.recompile_limit_hit or c.eager_after_recompile_limit]
    eager = [c for c in cells if _ran_no_graph(c)]
    reasons = []
    # The collector logs a compile event for every compiled cell it checks: a passing one without
    # it says nothing of graph breaks, recompiles or whether a compiled graph ran at all.
    unmeasured = [c for c in run.with_status("pass") if c.planned.mode == "compiled" and not c.compiled]
    if unmeasured:
        reasons.append(
            Reason(
                "compile-unmeasured",
                "blocked",
                "No compile event was logged for these compiled cells: their graph breaks, recompiles and whether"
                " a compiled graph ran were not measured.",
                _cases(unmeasured),
            )
        )
    if breaks:
        why = sorted({reason for c in breaks for reason in c.graph_break_reasons})
        reasons.append(
            Reason(
                "graph-breaks",
                "change",
                f"Graph breaks split the compiled path: {'; '.join(why)[:500]}.",
                _cases(breaks),
                "operator",
            )
        )
    if recompiles:
        reasons.append(
            Reason(
                "recompiles",
                "change",
                "The fixed-shape compiled path compiled again for a shape it had already compiled.",
                _cases(recompiles),
                "operator",
            )
        )
    if limit:
        reasons.append(
            Reason(
                "recompile-limit",
                "change",
                "The recompile limit was hit: later 'compiled' calls really ran eager.",
                _cases(limit),
                "operator",
            )
        )
    if eager:
        disabled = _setting(run, "TORCHDYNAMO_DISABLE")
        said = f"; TORCHDYNAMO_DISABLE was {disabled!r}" if disabled not in (None, "", "0") else ""
        reasons.append(
            Reason(
                "no-compiled-graph",
                "blocked",
                "'Compiled' cells ran no compiled graph (graphs 0, no cache hit or miss: TorchDynamo "
                f"disabled or the model fell back to eager{said}), so these cells are not evidence of the compiled path.",
                _cases(eager),
            )
        )
    return reasons


def _ran_no_graph(cell: CellRecord) -> bool:
    """A compiled cell whose outputs were compared though its compile events traced no graph and
    met no cache. Not a cache check (repeat_of): it calls a graph its cell compiled, in the same
    process, by design. A cell that reused a graph compiled earlier in its process for part of its
    work (a generation cell's decode graph) compiled its other graph, so it is not one either."""
    return (
        cell.ran_graph is False
        and cell.planned.mode == "compiled"
        and cell.planned.repeat_of is None
        and cell.status in ("pass", *FAILED)
    )


COPY_OPS = ("aten::contiguous", "aten::clone", "aten::copy_", "aten::_to_copy")


def _copy_calls(cell: CellRecord) -> int | None:
    """Copy-op calls in the cell's profile top ops; None when the cell was not profiled."""
    profiles = cell.profiles
    if not profiles:
        return None
    return sum(op.calls for p in profiles for op in p.top_ops if op.name in COPY_OPS)


def _undecided_sides(cell: CellRecord, twin: CellRecord) -> str | None:
    """Which of the two warm series decides nothing and why ("this cell's (unstable)", "the
    contiguous cell's (not classified)", or both), or None when both are stable: the
    report says such a timing decides nothing, so it is no evidence of a copy either."""
    sides = [
        f"{side} ({'unstable' if judged is not None and judged.unstable else 'not classified'})"
        for side, c in (("this cell's", cell), ("the contiguous cell's", twin))
        if (judged := cell_stability(c)) is None or not judged.decides
    ]
    return " and ".join(sides) or None


def _layout_evidence(
    cell: CellRecord, twin: CellRecord | None, timing: tuple[str, str]
) -> tuple[str | None, str | None, str | None]:
    """(evidence of a per-call copy, what was measured without finding one, why the timing
    decides nothing) for one cell, its warm timing judged already (``timing``: _layout_timing's,
    _contradicted_by's after it)."""
    found, looked = [], []
    copies = _copy_calls(cell)
    if copies is not None:
        twin_copies = _copy_calls(twin) if twin is not None else None
        base = twin_copies or 0
        if copies > base:
            found.append(
                f"{copies} copy-op call(s) in its profile against {base if twin_copies is not None else 'no profile of'} the contiguous cell's"
            )
        else:
            looked.append("no extra copy op in its profile")
    verdict, words = timing
    (found if verdict == "cost" else looked if verdict == "none" else []).append(words)
    return ("; ".join(found) or None, "; ".join(looked) or None, words if verdict == "undecided" else None)


def _layout_timing(cell: CellRecord, twin: CellRecord | None, every_key: bool) -> tuple[str, str]:
    """A non-contiguous cell's warm timing against its contiguous twin's: ('cost', words) where
    its median is slower by more than both IQRs, ('none', words) where not, ('undecided', why)
    where either series decides nothing or the two loops ran under other settings (torch
    threads, CPU affinity, governor: as compare's compiled-over-eager speed-up, which is not
    compared then), ('', '') where either is not timed. The cells' compact warm facts
    (runmodel): the latest warm measurement of each. ``every_key``: changes.every_host_key."""
    if cell.warm_median_s is None or twin is None or twin.warm_median_s is None:
        return "", ""
    if unsteady := _undecided_sides(cell, twin):
        return "undecided", f"warm timing not decided: {unsteady} warm series decides nothing"
    mine, theirs = (cell_loop_settings(c, None, every_key) or {} for c in (cell, twin))
    if differ := [key for key in TIMING_HOST_KEYS if key in mine and key in theirs and mine[key] != theirs[key]]:
        return "undecided", (
            f"warm timing not decided: this cell's loop and the contiguous cell's ran under other {' and '.join(differ)}"
        )
    if cell.warm_median_s - twin.warm_median_s > (cell.warm_iqr_s or 0.0) + (twin.warm_iqr_s or 0.0):
        return "cost", (
            f"warm median {cell.warm_median_s * 1e3:.4g} ms against {twin.warm_median_s * 1e3:.4g} ms contiguous (more than both IQRs)"
        )
    return "none", "warm median within the IQRs of the contiguous cell's"


def _contradicted_by(timings: dict[str, tuple[str, str]], shape: dict[str, object]) -> dict[str, tuple[str, str]]:
    """The timings of non-contiguous cells, a cost that another pair of the same shape and dtype
    (a cache-check repeat beside its first cell) measured as none made undecided: one pair of
    warm series, each from its own process, is no evidence of a per-call copy that the other
    pair does not pay."""
    none: dict[object, str] = {}
    for case, (verdict, _) in timings.items():
        if verdict == "none":
            none.setdefault(shape[case], case)
    return {
        case: (
            (
                "undecided",
                f"warm timing not decided: {words}, but {none[shape[case]]} of the same shape measured no cost",
            )
            if verdict == "cost" and shape[case] in none
            else (verdict, words)
        )
        for case, (verdict, words) in timings.items()
    }


def rule_layout(run: RunModel, notes: Notes) -> list[Reason]:
    # The contiguous twin of a cell: same shape, dtype, mode and cache-check role.
    def twin_key(p: PlannedCell) -> tuple[object, ...]:
        return (p.batch, p.length, p.dtype, p.mode, p.repeat_of is None)

    if not any(layout == "noncontiguous" for _, layout, _ in planned_columns(run)):
        return []  # known without a pass over every cell
    nonc = [c for c in run.cells if c.planned.layout == "noncontiguous"]
    contiguous = {twin_key(c.planned): c for c in reversed(run.cells) if c.planned.layout == "contiguous"}
    failing = [
        c
        for c in nonc
        if c.status in ("error", "mismatch", "nonfinite")
        and (t := contiguous.get(twin_key(c.planned))) is not None
        and t.status == "pass"
    ]
    reasons = []
    if failing:
        reasons.append(
            Reason(
                "layout",
                "change",
                "The non-contiguous layout fails where the contiguous one passes.",
                _cases(failing),
                "layout",
            )
        )
    passing = [c for c in nonc if c.planned.mode == "compiled" and c.status == "pass" and not _accepted(notes, c)]
    ran = docs_for_family(_family(run))
    if (
        not passing
        or ran is None
        or _family(run) not in ran.evidence_families
        or ran.constraint("noncontiguous-copy") is None
    ):
        return reasons
    cite = ran.cite("noncontiguous-copy")
    measured, clean, unsteady, undocumented = [], [], [], []
    evidence, looked, undecided = [], [], []
    fed = [c for c in passing if c.layout_achieved is not None]
    timings = _contradicted_by(
        {c.case: _layout_timing(c, contiguous.get(twin_key(c.planned)), every_host_key(run)) for c in fed},
        {c.case: (c.planned.batch, c.planned.length, c.planned.dtype) for c in fed},
    )
    for c in passing:
        if c.layout_achieved is None:
            undocumented.append(c)
            continue
        found, seen, why = _layout_evidence(c, contiguous.get(twin_key(c.planned)), timings[c.case])
        if found:
            measured.append(c)
            evidence.append(f"{c.case}: {found}")
        elif why:
            unsteady.append(c)
            undecided.append(f"{c.case}: {why}" + (f"; {seen}" if seen else ""))
        elif seen:
            clean.append(c)
            looked.append(seen)
        else:
            undocumented.append(c)
    if measured:
        reasons.append(
            Reason(
                "layout",
                "change",
                f"Non-contiguous inputs cost a per-call copy on the compiled path, as measured: {'; '.join(evidence)[:600]} ({cite}). Make the input contiguous upstream or accept the copy in the annotations.",
                _cases(measured),
                "layout",
            )
        )
    if clean:
        reasons.append(
            Reason(
                "layout",
                "note",
                f"The documentation says compiled execution copies non-contiguous inputs on every call ({cite}); this run fed them non-contiguous and measured no cost: {'; '.join(sorted(set(looked)))}.",
                _cases(clean),
            )
        )
    if unsteady:
        reasons.append(
            Reason(
                "layout",
                "note",
                f"The documentation says compiled execution copies non-contiguous inputs on every call ({cite}); whether this run pays it is not decided, because a timing decides nothing: {'; '.join(undecided)[:600]}.",
                _cases(unsteady),
            )
        )
    if undocumented:
        reasons.append(
            Reason(
                "layout",
                "note",
                f"Documented, not measured: compiled execution copies non-contiguous inputs on every call ({cite}); this run has no profile or contiguous timing to show it{' and does not record the layout fed' if any(c.layout_achieved is None for c in undocumented) else ''}.",
                _cases(undocumented),
            )
        )
    return reasons


def rule_adapter(run: RunModel, notes: Notes) -> list[Reason]:
    """The standing of the collector's adapter for the run's backend (from its constraint file),
    and whether a compile failure could have run eager there."""
    reasons = [
        Reason(f"{docs.target}-adapter", "note", docs.adapter_note)
        for docs in adapter_docs(_planned_target(run), _family(run))
    ]
    ran = docs_for_family(_family(run))
    if ran is None or not ran.compile_fallback_setting:
        return reasons
    compiled = [c for c in run.with_status("pass") if c.planned.mode == "compiled"]
    if compiled:
        name, wanted = ran.compile_fallback_setting["name"], ran.compile_fallback_setting["value"]
        value = _setting(run, name)
        if value != wanted:
            shown = "not recorded" if value is None else f"{value!r}"
            reasons.append(
                Reason(
                    "compile-fallback",
                    "blocked",
                    f"{name} was {shown}, not {wanted}: a compile failure may have run eager, so these compiled passes are not evidence of the compiled path.",
                    _cases(compiled),
                )
            )
    return reasons


def _setting(run: RunModel, name: str) -> str | None:
    env = run.environment
    if env is None:
        return None
    for setting in env.backend_settings or ():
        if setting.name == name:
            return setting.value
    return env.env_vars.get(name)


def reference_repeats(run: RunModel) -> list[str]:
    """The passing eager cells that ran as their reference was computed (the same device, the
    same dtype, eager, on the same inputs): a pass there shows that the computation repeats,
    not that the backend computes it correctly."""
    family = _family(run)
    references = {r.shape: r for r in run.references}
    found = []
    for cell in run.cells:
        planned = cell.planned
        if planned.mode != "eager" or cell.status != "pass":
            continue
        reference = reference_of(references, planned)
        if reference is not None and reference.device == family and reference.dtype == planned.dtype:
            found.append(cell.case)
    return found


def rule_reference_repeats(run: RunModel, notes: Notes) -> list[Reason]:
    repeats = reference_repeats(run)
    if not repeats:
        return []
    passed = run.counts()["pass"]
    family = _family(run)
    others = (
        f"the other {passed - len(repeats)} passing cell(s) (compiled, or in another dtype) show that those paths "
        f"agree with this {family} eager computation, which is the reference: none of them checks the reference itself"
        if passed > len(repeats)
        else "no other cell passed"
    )
    return [
        Reason(
            "reference-repeats",
            "note",
            f"{len(repeats)} passing eager cell(s) ran on {family} in the dtype their reference was computed in, "
            f"eager, as the reference itself: their pass shows that the computation repeats, not that it is right; "
            f"{others}.",
            tuple(repeats),
        )
    ]


# The name the collector logs for a task metric whose module does not name it (no TASK_METRIC).
UNNAMED_METRIC = "task_metric"


def rule_unnamed_metric(run: RunModel, notes: Notes) -> list[Reason]:
    """Cells judged by a task criterion whose module does not say which metric its
    task_metric() computes: the collector checks a stated TASK_METRIC against the plan's
    criterion, and a module with none is judged by the plan's word only."""
    judged: dict[str, list[str]] = {}
    for cell in run.cells:
        metric = cell.task_metric
        criterion = metric.criterion if metric is not None else None
        if metric is not None and metric.name == UNNAMED_METRIC and criterion and criterion.metric != UNNAMED_METRIC:
            judged.setdefault(criterion.metric, []).append(cell.case)
    return [
        Reason(
            "unnamed-metric",
            "note",
            f"The workload module does not say which metric its task_metric() computes (no TASK_METRIC): that the "
            f"task values of {len(cases)} cell(s) are {metric!r}, as the plan's criterion names it, is the plan's word "
            "only. A module that sets TASK_METRIC has the collector check the two agree before any cell runs.",
            tuple(cases),
        )
        for metric, cases in sorted(judged.items())
    ]


def rule_notes(run: RunModel, notes: Notes) -> list[Reason]:
    reasons = []
    if run.synthetic:
        reasons.append(
            Reason(
                "synthetic", "note", "This log is a synthetic fixture, not a measurement: it is evidence of nothing."
            )
        )
    noisy = [r for r in run.references if r.noise_max_abs not in (None, 0.0)]
    if noisy:
        worst = max(r.noise_max_abs or 0.0 for r in noisy)
        reasons.append(
            Reason(
                "reference-noise",
                "note",
                f"The reference is not bitwise deterministic (largest difference between two runs {worst:.3g}).",
            )
        )
    reasons += _left_out(run)
    return reasons


def _left_out(run: RunModel) -> list[Reason]:
    """Elements the plan's judged regions leave out that the tolerance would refuse: said up front, never hidden."""
    cells, beyond, nonfinite, regions = [], 0, 0, set()
    for c in [c for c in flagged(run) if c.per_output]:
        found = False
        for o in c.per_output or []:
            x = o.get("outside")
            if x and ((x.get("beyond_tolerance") or 0) or x.get("nonfinite")):
                beyond += x.get("beyond_tolerance") or 0
                nonfinite += x.get("nonfinite") or 0
                regions.add(f"{o['name']}: {o.get('region')}")
                found = True
        if found:
            cells.append(c)
    if not cells:
        return []
    extra = f", {nonfinite} of them non-finite" if nonfinite else ""
    return [
        Reason(
            "judged-regions",
            "note",
            f"{beyond} element(s) outside the judged regions the plan declared ({'; '.join(sorted(regions))}) would be outside the tolerance{extra}, in {len(cells)} cell(s); "
            "they are recorded and shown beside the judged figures, not judged.",
            _cases(cells),
        )
    ]


def rule_timing_stability(run: RunModel, notes: Notes) -> list[Reason]:
    """Warm series that are unstable (or too short to classify) decide nothing: said, with the cells.

    Timing never decides the outcome (correctness does), so this is a note; ``decide`` also
    says in the headline that performance is undecided for these cells."""
    undecided = undecided_cells(run)
    series, series_total = generation_undecided(run)
    rates = throughput_undecided(run)
    if not undecided and not series and not rates:
        return []
    unstable = [j for j in undecided if j.unstable]
    unread = sum(j.unclassified == UNREAD_WAIT for j in undecided)
    short = len(undecided) - len(unstable) - unread
    timed = len(timed_cells(run))
    parts = []
    if unstable:
        parts.append(
            f"{len(unstable)} of {timed} timed cells have an unstable warm timing (bimodal, drifting, spread wide, with many far"
            " outliers or a fastest sample far below the median, or measured while the threads waited for a CPU, by the"
            " collector's stability rules; or measured again at a speed none of its earlier attempts ran at; or called"
            " unstable by the collector that measured it)"
        )
    if short:
        parts.append(
            f"{short} of {timed}{'' if parts else ' timed cells'} have a warm series the rules cannot classify (too few samples, or every sample one value)"
        )
    if unread:
        parts.append(
            f"{unread} of {timed}{'' if parts else ' timed cells'} have a warm loop whose threads' CPU wait the collector"
            " could not read (a loop shorter than the host's scheduler tick reads none), so contention was not judged"
            " (more warm repetitions make a loop long enough to read)"
        )
    if series:
        parts.append(
            f"{len(series)} of {series_total} generation series (time to first token or decode per token) are"
            f" {undecided_why(sum(u for _, _, u in series), len(series))}"
        )
    if rates:
        parts.append(throughput_words(rates, series_total // len(GENERATION_SERIES)))
    cases = dict.fromkeys([j.case for j in undecided] + [case for case, _, _ in series] + [case for case, _ in rates])
    return [
        Reason(
            "timing-stability",
            "note",
            "; ".join(parts) + ": their timings decide nothing here, in comparisons or in the"
            f" history, and the performance {'of those cells' if not series else 'they measure'} is undecided"
            " (the timing table shows each one's figures).",
            tuple(cases),
        )
    ]


@per_run
def generation_undecided(run: RunModel) -> tuple[list[tuple[str, str, bool]], int]:
    """The generation series (case, series, whether it is unstable rather than too short to
    classify) that decide nothing, and how many warm generation series the run's passing cells hold."""
    flags = generation_flags(run)
    total = sum(
        generation_warm(cell, name) is not None
        for cell in run.cells_with("generation")
        if cell.status == "pass"
        for name in GENERATION_SERIES
    )
    return [(case, name, is_unstable(text)) for case, found in flags.items() for name, text in found.items()], total


@per_run
def throughput_undecided(run: RunModel) -> list[tuple[str, bool]]:
    """The passing generation cells whose tokens/s decides nothing though both their series are
    judged: their repetitions' whole decode times are unstable, too few to classify, or at a
    speed their earlier series did not run at (throughput_flags); (case, whether unstable). A
    cell whose decode series is flagged is counted among generation_undecided's series already."""
    return [(case, is_unstable(text)) for case, text in throughput_flags(run).items() if text != DECODE_FLAGGED]


def throughput_words(rates: Sequence[tuple[str, bool]], cells: int) -> str:
    """'tokens/s of 1 of 13 timed generation cells is unstable (its repetitions' whole decode times)'."""
    verb = "is" if len(rates) == 1 else "are"
    why = undecided_why(sum(u for _, u in rates), len(rates))
    return f"tokens/s of {len(rates)} of {cells} timed generation cells {verb} {why} (from their repetitions' whole decode times)"


RULES: list[Callable[[RunModel, Notes], list[Reason]]] = [
    rule_reference_nonfinite,  # first: it undermines every comparison after it
    rule_reference_not_repeatable,
    rule_incomplete_run,
    rule_untested_or_skipped,
    rule_errors,
    rule_mismatches,
    rule_tolerances,
    rule_environment,
    rule_target,
    rule_weights,
    rule_reference_repeats,
    rule_precision,
    rule_declared_inputs,
    rule_fallback,
    rule_compiled_path,
    rule_layout,
    rule_cold_cache,
    rule_adapter,
    rule_unnamed_metric,
    rule_notes,
    rule_timing_stability,
]


def planned_columns(run: RunModel) -> set[tuple[str, str, str]]:
    """The (dtype, layout, mode) columns the plan has cells in (from the scope's one pass)."""
    return {(g.dtype, g.layout, g.mode) for side in _scope_groups(run) for g in side}


@per_run
def _scope_groups(run: RunModel) -> tuple[tuple[ScopeGroup, ...], tuple[ScopeGroup, ...]]:
    """(passed, not passed) groups, each in plan order; worked out once per run (the rules
    read its columns too)."""
    return _scope_pass(run.cells)


def scope_label(cell: CellRecord) -> str:
    """A scope cell's shape in words: '(2, 16)', or '(2, 16) repeat (cache check)'."""
    p = cell.planned
    return shape_label(p.batch, p.length) + (" repeat (cache check)" if p.repeat_of else "")


def _scope_pass(cells: Sequence[CellRecord]) -> tuple[tuple[ScopeGroup, ...], tuple[ScopeGroup, ...]]:
    passed: dict[tuple[str, str, str], list[CellRecord]] = {}
    not_passed: dict[tuple[str, str, str], list[CellRecord]] = {}
    # One pass over every cell for both sides (a long log has tens of thousands). A column's
    # lists are looked up again only when the column changes from the previous cell's: once per
    # column when its cells follow each other, about once per cell when a plan alternates
    # columns (the collector's plans alternate modes). The groups hold the cells themselves:
    # their shapes are put in words only where a page shows them.
    dtype = layout = mode = passing = failing = None
    for c in cells:
        p = c.planned
        if p.dtype != dtype or p.layout != layout or p.mode != mode:
            dtype, layout, mode = p.dtype, p.layout, p.mode
            passing = failing = None
        if c.status == "pass":
            if passing is None:
                passing = passed.setdefault((dtype, layout, mode), [])
            passing.append(c)
        else:
            if failing is None:
                failing = not_passed.setdefault((dtype, layout, mode), [])
            failing.append(c)

    def scope_groups(groups: dict[tuple[str, str, str], list[CellRecord]]) -> tuple[ScopeGroup, ...]:
        return tuple(
            ScopeGroup(dtype, layout, mode, tuple(members)) for (dtype, layout, mode), members in groups.items()
        )

    return scope_groups(passed), scope_groups(not_passed)


def verdicts_headline(run: RunModel, cases: set[str]) -> str:
    """'Blocked: 10 mismatches need the owner's verdict', counting each kind of failed cell."""
    mismatches = sum(map(cases.__contains__, failed_cases(run)))  # counted in C
    errors = sum(map(cases.__contains__, map(_CASE, run.with_status("error"))))
    parts = [f"{mismatches} mismatch{'es' if mismatches != 1 else ''}"] if mismatches else []
    parts += [f"{errors} errored cell{'s' if errors != 1 else ''}"] if errors else []
    verb = "needs" if mismatches + errors == 1 else "need"
    return f"Blocked: {' and '.join(parts)} {verb} the owner's verdict"


def scope_of(run: RunModel) -> Scope:
    versions = {}
    if run.environment:
        versions = {k: v.value for k, v in run.environment.versions.items() if v.value and k in version_keys()}
    passed, not_passed = _scope_groups(run)
    return Scope(
        target=run.plan.target if run.plan else run.start.target,
        intended_target=intended_target(run),
        evidence=evidence_for(run),
        family=_family(run),
        passed=passed,
        not_passed=not_passed,
        versions=versions,
    )


def decide(run: RunModel, notes: Notes) -> Disposition:
    reasons = [reason for rule in RULES for reason in rule(run, notes)]
    changes = sorted({r.category for r in reasons if r.outcome == "change" and r.category})
    outcome: Literal["suitable", "change", "blocked"]
    if any(r.outcome == "blocked" for r in reasons):
        outcome = "blocked"
    elif changes:
        outcome = "change"
    elif run.counts()["pass"] == 0:  # nothing measured stands behind a "suitable"
        outcome = "blocked"
        reasons.append(
            Reason(
                "nothing-passed",
                "blocked",
                "No planned cell passed, so nothing here is evidence that the path is suitable.",
                _cases(run.cells),
            )
        )
    else:
        outcome = "suitable"
    evidence = evidence_for(run)
    headline = HEADLINES[outcome] + (f": {', '.join(changes)}" if outcome == "change" else "")
    blocking = [r for r in reasons if r.outcome == "blocked"]
    only_verdicts = bool(blocking) and all(r.needs_verdict for r in blocking)
    if only_verdicts:
        headline = verdicts_headline(run, set().union(*(r.cases for r in blocking)))
    scope = scope_of(run)
    if outcome == "suitable":
        headline += f": {scope_sentence(scope)}"
        training = run.plan.training if run.plan is not None else None
        if training is not None:  # what the training steps left out is out of the scope too
            headline += f", {training.steps} training steps as the plan ran them ({training.randomness})"
        in_scope = {c.case for g in scope.passed for c in g.cells}
        if in_scope and in_scope <= set(reference_repeats(run)):  # rule_reference_repeats says what each shows
            headline += (
                f"; every passing cell ran as its reference did (eager, in its dtype, on {scope.family}), so "
                "the passes show the computation repeats and check nothing beyond the reference"
            )
    undecided = undecided_cells(run)
    series, series_total = generation_undecided(run)
    rates = throughput_undecided(run)
    stopped = performance_stopped(run, notes)
    kind = stopped_kind(run, stopped)
    if stopped:  # no timing is judged at all: how many would be undecided is beside the point
        if not only_verdicts:  # that headline says already that cells need the owner's verdict
            headline += (
                f"; performance not judged: acceptance is stopped until {len(stopped)} {kind} cell(s) have a verdict"
            )
    elif undecided:  # never a plain "Suitable" over timings that decide nothing
        why = undecided_why(sum(j.unstable for j in undecided), len(undecided))
        headline += f"; performance undecided for {len(undecided)} of {len(timed_cells(run))} timed cells, whose warm timing is {why}"
    if series and not stopped:  # nor over generation series that decide nothing
        headline += (
            f"; {'and' if undecided else 'performance undecided'} for {len(series)} of {series_total} generation series"
            f" (time to first token or decode per token), {undecided_why(sum(u for _, _, u in series), len(series))}"
        )
    if rates and not stopped:  # nor over a tokens/s read from repetitions that ran at different speeds
        headline += f"; {throughput_words(rates, series_total // len(GENERATION_SERIES))}"
    headline += f" ({evidence})"
    return Disposition(
        outcome,
        headline,
        reasons,
        scope,
        changes,
        stopped,
        kind,
        len(undecided) + len(series) + len(rates),
        run.synthetic,
    )


def scope_sentence(scope: Scope) -> str:
    """The cells a 'suitable' covers, in one phrase: '14 cells in float32, eager and compiled, at 4 shapes'."""
    cells = sum(len(g.cells) for g in scope.passed)
    dtypes = sorted({g.dtype for g in scope.passed})
    modes = sorted({g.mode for g in scope.passed})
    layouts = sorted({g.layout for g in scope.passed})
    shapes = {(c.planned.batch, c.planned.length) for g in scope.passed for c in g.cells}
    return (
        f"{cells} cell(s) in {' and '.join(dtypes)}, {' and '.join(modes)}, {' and '.join(layouts)} layout, "
        f"at {len(shapes)} shape(s) (batch, length)"
    )


def stopped_kind(run: RunModel, stopped: tuple[str, ...]) -> str:
    """The stopping cells in words: 'mismatching' or 'errored' where all are of one kind."""
    cases = set(stopped)
    errored = any(c.case in cases for c in run.with_status("error"))
    failed = any(c.case in cases for c in run.with_status(*FAILED))
    return (
        "errored" if errored and not failed else "mismatching" if failed and not errored else "mismatching or errored"
    )


def performance_stopped(run: RunModel, notes: Notes) -> tuple[str, ...]:
    """Cells whose mismatch or error has no verdict yet, in plan order: performance acceptance
    waits for them (an error is a result not compared, a wrong output shape among them)."""
    stopping = _cases(run.with_status(*FAILED, "error"))
    return tuple([case for case in stopping if not ((note := notes.get(case)) is not None and note.verdict)])
