"""Section 1, Disposition: the reasons, the cells awaiting a verdict and the scope, as the judge gave them."""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.judge.disposition import Reason, Scope, ScopeGroup, scope_label
from reportgen.judge.judgement import Judgement, OwnerExplanation
from reportgen.judge.nextstep import Words
from reportgen.judge.timing_stability import SYMBOL as STABILITY_SYMBOL
from reportgen.model.runmodel import CellRecord, RunModel, STATUS_ORDER
from reportgen.render.labels import VERDICT_WORDS
from reportgen.render.sections.common import DETAIL_CAP, Row, anchor, list_text


# The one vocabulary of verdicts, on every page.


@dataclass
class ReasonView:
    outcome: str
    category: str
    message: str
    cases: list[tuple[str, str]]  # the first DETAIL_CAP, with anchors
    total: int


@dataclass
class ExplanationGist:
    """What the owner wrote about a group, in a sentence or two, and where it is written."""

    words: Words
    where: str  # "annotations.toml lines 2, 5"
    cells: int
    verdict: str
    alike: int  # entries saying the same but for their figures (the words are the first one's)


@dataclass
class VerdictGroupView:
    """Cells waiting for the owner's verdict that share a cause, with the owner's explanations."""

    label: str
    facts: list[str]
    cases: list[tuple[str, str]]
    total: int
    explanations: list[ExplanationGist]
    unexplained: int


@dataclass
class ScopeView:
    """The disposition's scope as grouped lines: per dtype · layout · mode, the shapes."""

    facts: list[Row]
    passed: list[Row]
    not_passed: list[Row]
    passed_count: int
    not_passed_count: int

    @property
    def none_left(self) -> str:
        """What the empty table of cells that did not pass says: that every planned cell passed,
        only where one was planned (a log that stopped before its plan planned none)."""
        return "every planned cell passed" if self.passed_count else "no planned cell in the log"


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
        by_status: dict[str, list[CellRecord]] = {}
        for c in cells:
            by_status.setdefault(c.status, []).append(c)
        text = "; ".join(
            f"{status}: {list_text(by_status[status], run, scope_label)}"
            for status in STATUS_ORDER
            if status in by_status
        )
        rows.append(Row(g.label, text))
    return rows


def scope_view(scope: Scope, run: RunModel, judgement: Judgement) -> ScopeView:
    facts = [
        Row("evidence for", scope.evidence),
        Row(
            "intended target (plan) / run's target / ran on",
            f"{scope.intended_target or 'intended target not recorded'} / {scope.target} / {scope.family}",
        ),
        Row("versions", ", ".join(f"{k} {v}" for k, v in sorted(scope.versions.items())) or "unknown"),
        Row("performance", _performance_scope(run, judgement)),
    ]
    facts += _generation_scope(run)
    return ScopeView(
        facts=facts,
        passed=scope_lines(scope.passed, run, with_status=False),
        not_passed=scope_lines(scope.not_passed, run, with_status=True),
        passed_count=scope.passed_count,
        not_passed_count=scope.not_passed_count,
    )


def _performance_scope(run: RunModel, judgement: Judgement) -> str:
    """What the run's timings may decide: the correctness scope above holds either way."""
    stopped = judgement.disposition.performance_stopped
    if stopped:
        return (
            f"stopped: {len(stopped)} {judgement.disposition.stopped_kind} cell(s) have no verdict, and until they do no timing "
            "of this run is a performance result, stable or not (section 7)"
        )
    timed = judgement.timed
    if not timed and run.plan is not None and run.plan.generation is not None:
        total, series = judgement.generation_series, judgement.generation_undecided
        if not total:
            return "no warm generation timing recorded: performance not measured"
        rates = f"; {judgement.throughput_why}" if judgement.throughput_undecided else ""
        if not series:
            again = judgement.generation_again
            after = (
                f" ({again} of those cells only when measured again, after an unstable series: see the host facts)"
                if again
                else ""
            )
            return (
                f"warm timing of all {total} generation series (time to first token, decode per token; section 7, per bucket) "
                f"is stable by the collector's rules{after}{rates}"
            )
        return (
            f"undecided for {len(series)} of {total} generation series (time to first token or decode per token: {judgement.generation_why}, "
            f"flagged beside their figures in section 7){rates}; the correctness scope above is not affected"
        )
    if not timed:
        return "no warm timing recorded: performance not measured"
    undecided = judgement.undecided
    if not undecided:
        again = sum(j.attempts > 1 for j in timed)
        after = (
            f" ({again} of them only when measured again, after an unstable series: see the host facts)"
            if again
            else ""
        )
        return f"warm timing of all {len(timed)} timed cells is stable by the collector's rules{after}"
    unstable = sum(j.unstable for j in undecided)
    return (
        f"undecided for {len(undecided)} of {len(timed)} timed cells (warm timing {judgement.undecided_why}: "
        f"{'flagged' if unstable < len(undecided) else STABILITY_SYMBOL} in the timing table); the correctness scope above is not affected"
    )


def _generation_scope(run: RunModel) -> list[Row]:
    """A generation run's scope in its own terms: which buckets served which request lengths,
    and how many decode steps on which cache; a shape that passed is that bucket and those steps."""
    g = run.plan.generation if run.plan else None
    if g is None:
        return []
    served = [
        f"{r.length} → bucket {r.bucket}" + (" (truncated)" if r.outcome == "truncated" else "")
        for r in run.requests
        if r.bucket is not None
    ]
    refused = [f"{r.length} tokens refused" for r in run.requests if r.bucket is None]
    return [
        Row("buckets (request length → bucket)", "; ".join(served + refused) or "no request event recorded"),
        Row(
            "decode steps",
            f"prefill then {g.decode_steps} greedy decode steps per request, static KV cache of {g.max_cache_len} positions; "
            "nothing beyond these buckets and steps is covered",
        ),
    ]


def verdict_group_views(judgement: Judgement) -> list[VerdictGroupView]:
    """The judge's groups of cells awaiting a verdict, each with what the owner wrote and where."""
    return [
        VerdictGroupView(
            label=g.label,
            facts=list(g.facts),
            cases=[(c.case, anchor(c.case)) for c in g.cells[:DETAIL_CAP]],
            total=len(g.cells),
            explanations=[_explanation_gist(e) for e in g.explanations],
            unexplained=g.unexplained,
        )
        for g in judgement.awaiting[:DETAIL_CAP]
    ]


def _explanation_gist(found: OwnerExplanation) -> ExplanationGist:
    lines = found.lines
    where = found.file + (
        f" line {lines[0]}" if len(lines) == 1 else f" lines {', '.join(map(str, lines))}" if lines else ""
    )
    return ExplanationGist(
        found.gist, where, found.cells, VERDICT_WORDS.get(found.verdict or "", "awaiting verdict"), found.alike
    )


def unstable_timing_text(judgement: Judgement) -> tuple[str, str]:
    """The banner's title and text: '9 of 14 timed cells have an unstable warm timing ...' (and
    the generation series that decide nothing), or ('', '') when every timed series is stable.
    Titled 'Unstable timing' only when a series is unstable: one too short to classify is not."""
    undecided = judgement.undecided
    series = judgement.generation_undecided
    rates = judgement.throughput_undecided
    stopped = judgement.disposition.performance_stopped
    if stopped:  # stronger than any stability word: no timing of the run is a result
        return (
            "Performance acceptance stopped",
            f"{len(stopped)} {judgement.disposition.stopped_kind} cell(s) have no verdict: until they do, no timing of this run is a "
            "performance result, stable or not (section 7 names them).",
        )
    if not undecided and not series and not rates:
        return "", ""
    unstable = sum(1 for j in undecided if j.unstable)
    timed = len(judgement.timed)
    parts = (
        [
            f"{unstable} of {timed} timed cells have an unstable warm timing ({STABILITY_SYMBOL} in the timing table, with the figures that make it so)"
        ]
        if unstable
        else []
    )
    unread = judgement.undecided_unread
    if len(undecided) > unstable + unread:
        noun = "" if parts else " timed cells"
        parts.append(
            f"{len(undecided) - unstable - unread} of {timed}{noun} have a warm series the rules cannot classify (too few"
            " samples, or every sample one value)"
        )
    if unread:
        noun = "" if parts else " timed cells"
        parts.append(
            f"{unread} of {timed}{noun} have a warm loop whose threads' CPU wait the collector could not read, so"
            " contention was not judged (a loop shorter than the host's scheduler tick reads none)"
        )
    series_unstable = sum(u for _, _, u in series) + sum(u for _, u in rates)
    if series:
        parts.append(
            f"{len(series)} of {judgement.generation_series} generation series (time to first token or decode per token) "
            f"are {judgement.generation_why} (flagged beside their figures in the generation table)"
        )
    if rates:
        parts.append(f"{judgement.throughput_why}, flagged beside it in the generation table")
    title = "Unstable timing" if unstable or series_unstable else "Timing not classified"
    return (
        title,
        "; ".join(parts)
        + ". Their timings decide nothing: no faster or slower verdict, geometric mean, trend point or regression uses them.",
    )
