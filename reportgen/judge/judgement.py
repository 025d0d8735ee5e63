"""The judgement of one run: every judged fact the report shows, worked out once, in one object.

The disposition (``decide``) is the verdict; beside it stand the facts that need the rules'
reasons or the owner's annotations to work out: the dominant finding, what to do next (from the
state of the annotations, not from the rule alone), and the cells waiting for the owner's
verdict grouped by cause, each group with the owner's explanation and where it is written; and
per cell, the facts a section shows: which cells are problems, where a localised cell's error
arises (with the sentence that says so), each timed cell's (and generation series') stability flag. The view formats
these and works none of them out (tests/test_sections_judge_free.py holds its imports to it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from reportgen.judge.changes import loop_host_facts
from reportgen.judge.backend_docs import docs_file_sha256, run_backend
from reportgen.judge.disposition import (
    refused_requests,
    FAILED,
    Disposition,
    Reason,
    adapter_note,
    decide,
    flagged,
    incomplete_why,
    generation_undecided,
    throughput_undecided,
    throughput_words,
)
from reportgen.judge.allowance import Allowance, worst_over_allowance
from reportgen.judge.localization import Localized, judge_localization_of, not_localized
from reportgen.judge.nextstep import annotate_command, Words, finding, next_step
from reportgen.judge.timing_stability import (
    figure_caveats,
    FLAG,
    STABLE,
    UNCLASSIFIED,
    UNCLASSIFIED_FLAG,
    UNREAD_WAIT,
    UNSTABLE,
    GENERATION_SERIES,
    is_unstable,
    restart_unread,
    CellStability,
    flag_text,
    generation_attempts,
    generation_flags,
    generation_timing,
    throughput_flags,
    timed_cells,
    undecided_cells,
    undecided_why,
)
from reportgen.model.annotations import ANNOTATIONS_NAME, Annotations
from reportgen.model.groups import failure_groups, metric_values
from reportgen.model.runmodel import CellRecord, LAYOUT_NOT_ACHIEVED, LAYOUT_NOT_MEASURED, RunModel

# The explanation shown in section 1: its first sentences, up to this many characters.
GIST_CHARS = 320
# Cells a page lists in detail per table; per-cell facts that cost an event read each (a
# cell's localisation) are judged for no more problem cells than this.
SHOWN_CELLS = 300
# Localisations of cells that are not problems, judged (and shown) for the first few only.
LOCALIZED_OTHERS = 12
PROBLEM_STATUSES = ("mismatch", "nonfinite", "error", "skipped")


@dataclass(frozen=True)
class OwnerExplanation:
    """One explanation the owner wrote, shown once for every entry that says the same."""

    gist: Words  # its first one or two sentences, Markdown markup dropped, code spans kept as code
    file: str  # the annotations file's name
    lines: tuple[int, ...]  # where its entries start (several entries may say the same)
    cells: int  # cells of the group it covers
    verdict: str | None  # "accepted", "change-needed" or None (awaiting verdict)
    alike: int = 1  # entries whose gists differ from this one in figures only, shown as one


@dataclass(frozen=True)
class AwaitingGroup:
    """Cells waiting for the owner's verdict that share a cause, with what the owner wrote."""

    label: str
    facts: tuple[str, ...]
    cells: tuple[CellRecord, ...]
    explanations: tuple[OwnerExplanation, ...]
    unexplained: int  # cells of the group no entry explains


@dataclass(frozen=True)
class Judgement:
    """Everything judged about one run that a page shows."""

    disposition: Disposition
    finding: str
    next_step: Words
    awaiting: tuple[AwaitingGroup, ...]
    annotations_file: str  # the annotations file's name, "" when the run has none
    only_verdicts_block: bool  # every blocking reason is a missing explanation or verdict
    adapter_note: str  # how far the collector's adapters for the run's backends have been exercised
    # `reportgen annotate LOG` as the next step gives it (the log's file name; on a site's page
    # the source the site read), quoted for a shell.
    annotate_command: str = "reportgen annotate events.jsonl"
    timed: tuple[CellStability, ...] = ()  # every timed cell's warm series, classified, in plan order
    undecided: tuple[CellStability, ...] = ()  # of those, the ones whose timing decides nothing
    # Of those, the ones whose loop's CPU wait was recorded but not read (UNREAD_WAIT): contention
    # not judged, whatever their samples look like.
    undecided_unread: int = 0
    # Per timed cell whose restart did not read the cache it was given, why (restart_unread).
    restart_unread: dict[str, str] = field(default_factory=dict)
    judged_with: str = ""  # the constraint file the run was judged with, and its sha256
    # Why an incomplete run is incomplete, a sentence (disposition.incomplete_why); "": a complete run.
    incomplete: str = ""
    failed: tuple[CellRecord, ...] = ()  # mismatching and non-finite cells, in plan order
    flagged: tuple[CellRecord, ...] = ()  # cells with a fact a rule looks for besides status (disposition.flagged)
    # The annotations' entries, by index, grouped when they say the same but for their figures
    # and give the same verdict (each group in file order, the first entry first).
    entry_groups: tuple[tuple[int, ...], ...] = ()
    # Per failed cell (mismatch, non-finite), what failed: "outputs", "updated parameters", ...
    failing: dict[str, str] = field(default_factory=dict)
    # Section 5's cells, in plan order: failed, errored, skipped, and untested because their
    # planned layout was not achieved (or not measured).
    problems: tuple[CellRecord, ...] = ()
    # Per skipped cell that awaits no explanation, why: the plan's declared policy refused its
    # request (a request event), as the disposition notes.
    settled: dict[str, str] = field(default_factory=dict)
    # Per localised cell, where its error arises: the first SHOWN_CELLS problem cells and the
    # first LOCALIZED_OTHERS localised cells that are not problems.
    localized: dict[str, Localized] = field(default_factory=dict)
    localized_others: tuple[CellRecord, ...] = ()  # those cells that are not problems, in plan order
    # Per failed problem cell of a kind the collector never localises (generation), why no
    # module is named (localization.not_localized).
    unlocalized: dict[str, str] = field(default_factory=dict)
    # Per timed cell whose timing needs a word (unstable, not classified, measured again), the flag.
    timing_flags: dict[str, str] = field(default_factory=dict)
    # Per passing generation cell, the flag of each of its warm series (time to first token,
    # decode per token) that needs a word, by GenerationTiming's field name.
    generation_flags: dict[str, dict[str, str]] = field(default_factory=dict)
    # Per passing generation cell, each warm series' median and stability word (first token, then
    # decode per token): 'stable' unless flagged above, then 'unstable' or 'unclassified'.
    generation_columns: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    # Per passing generation cell whose repetitions' decode times are unstable: tokens/s decides nothing.
    throughput_flags: dict[str, str] = field(default_factory=dict)
    # The warm generation series of the passing cells, and of those the ones (case, field) that
    # decide nothing (unstable, or too short to classify).
    generation_series: int = 0
    generation_undecided: tuple[tuple[str, str, bool], ...] = ()  # (case, series, unstable)
    # The cells whose tokens/s decides nothing though both their series are judged (case,
    # unstable), in words; and the timed generation cells whose warm generations were measured again.
    throughput_undecided: tuple[tuple[str, bool], ...] = ()
    throughput_why: str = ""
    generation_again: int = 0
    # Why the undecided timed cells, and the undecided generation series, decide nothing, in words
    # ('unstable', 'too short to classify', or both); '' where there are none.
    undecided_why: str = ""
    generation_why: str = ""
    # Per timed cell whose warm figure decides nothing, why, in the timing table's words (the
    # stability verdict, CPU fallback, a compiled cell that ran eager): the charts say it on hover.
    figure_flags: dict[str, str] = field(default_factory=dict)
    # Per passing timed cell whose figures carry a caveat whatever their stability (CPU fallback, a
    # hit recompile limit, a timed call fed another layout), its caveats (timing_stability.figure_caveats).
    timing_caveats: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The host around the warm loops (judge.changes.loop_host_facts): threads, CPUs, load average
    # and accelerator readings, (label, value) in the record's order; () when none was recorded.
    loop_host: tuple[tuple[str, str], ...] = ()
    # Per compared cell of the first SHOWN_CELLS, its largest difference over its allowance
    # (allowance.worst_over_allowance): the error chart draws these.
    allowance: dict[str, Allowance] = field(default_factory=dict)


def judge(
    run: RunModel, annotations: Annotations | None = None, log_name: str | None = None, rerun: str = "reportgen report"
) -> Judgement:
    """Judge one run against its annotations (none: judged as if no file existed). ``log_name``:
    the log as the next step names it (default: its file name); ``rerun``: the command that
    shows an edit's result (nextstep.next_step)."""
    if annotations is None:
        annotations = Annotations("", [], {}, {})
    disposition = decide(run, annotations.by_case)
    awaiting = awaiting_groups(run, disposition, annotations)
    name = log_name if log_name is not None else (os.path.basename(run.path) or "events.jsonl")
    failed = tuple(run.with_status(*FAILED))
    timed = tuple(timed_cells(run))
    problems = problem_cells(run)
    others = localized_others(run, problems)
    series, series_total = generation_undecided(run)
    rates = throughput_undecided(run)
    undecided = tuple(undecided_cells(run))
    flagged_cells = tuple(flagged(run))
    return Judgement(
        disposition=disposition,
        finding=finding(run, disposition),
        next_step=next_step(run, disposition, name, annotations_state(annotations, awaiting), rerun),
        annotate_command=annotate_command(name),
        awaiting=awaiting,
        only_verdicts_block=_only_verdicts_block(disposition),
        annotations_file=os.path.basename(annotations.path) if annotations.path else "",
        adapter_note=adapter_note(run),
        timed=timed,
        undecided=undecided,
        undecided_unread=sum(j.unclassified == UNREAD_WAIT for j in undecided),
        restart_unread={c.case: said for c in run.cells if c.restart_s is not None and (said := restart_unread(c))},
        judged_with=_judged_with(run),
        # Said after the page's 'Incomplete run.' (the reason's own 'Incomplete run: ' left out).
        incomplete="" if run.complete else _sentence(incomplete_why(run)),
        failed=failed,
        flagged=flagged_cells,
        entry_groups=alike_entries(annotations),
        failing={c.case: failing_quantity(c) for c in failed},
        problems=problems,
        settled=refused_as_declared(run),
        localized=localizations(run, problems[:SHOWN_CELLS] + others),
        localized_others=others,
        unlocalized={c.case: why for c in problems[:SHOWN_CELLS] if (why := not_localized(c)) is not None},
        timing_flags={j.case: text for j in timed if (text := flag_text(j))},
        generation_flags=(gen_flags := generation_flags(run)),
        generation_columns=generation_columns(run, gen_flags),
        throughput_flags=throughput_flags(run),
        generation_series=series_total,
        generation_undecided=tuple(series),
        throughput_undecided=tuple(rates),
        throughput_why=throughput_words(rates, series_total // len(GENERATION_SERIES)) if rates else "",
        generation_again=sum(
            generation_attempts(generation_timing(c)) > 1 for c in run.cells_with("generation") if c.status == "pass"
        ),
        undecided_why=undecided_why(sum(j.unstable for j in undecided), len(undecided)) if undecided else "",
        generation_why=undecided_why(sum(u for _, _, u in series), len(series)) if series else "",
        figure_flags=figure_flags(undecided, flagged_cells),
        timing_caveats=timing_caveats(run),
        loop_host=tuple(loop_host_facts(run).items()) if timed or series_total else (),
        allowance={
            cell.case: found for cell in run.cells[:SHOWN_CELLS] if (found := worst_over_allowance(cell)) is not None
        },
    )


def figure_flags(undecided: tuple[CellStability, ...], flagged_cells: tuple[CellRecord, ...]) -> dict[str, str]:
    """Per timed cell whose warm figure decides nothing, why: its series' stability verdict,
    CPU fallback, a compiled cell that ran eager after its recompile limit."""
    found = {j.case: [FLAG if j.unstable else UNCLASSIFIED_FLAG] for j in undecided}
    for c in flagged_cells:
        if c.warm_median_s is not None and (c.fallback_items or c.eager_after_recompile_limit):
            found.setdefault(c.case, []).extend(figure_caveats(bool(c.fallback_items), c.eager_after_recompile_limit))
    return {case: "; ".join(words) for case, words in found.items()}


def timing_caveats(run: RunModel) -> dict[str, tuple[str, ...]]:
    """Per passing timed cell whose figures carry a caveat (CPU fallback, a hit recompile limit, a
    timed call fed another layout), the caveats, as the timing table shows them beside its flag."""
    return {
        c.case: tuple(figure_caveats(bool(c.fallback_items), c.eager_after_recompile_limit, c.timing_layout_missed))
        for c in run.cells
        if (c.fallback_items or c.eager_after_recompile_limit or c.timing_layout_missed)
        and c.status == "pass"
        and (c.cold_s is not None or c.warm_median_s is not None)
    }


def problem_cells(run: RunModel) -> tuple[CellRecord, ...]:
    """The cells section 5 lists, in plan order: failed, errored, skipped, and untested because
    their planned layout was not achieved."""
    return tuple(
        c
        for c in run.cells
        if c.status in PROBLEM_STATUSES or c.untested_reason in (LAYOUT_NOT_ACHIEVED, LAYOUT_NOT_MEASURED)
    )


def localized_others(run: RunModel, problems: tuple[CellRecord, ...]) -> tuple[CellRecord, ...]:
    """The first LOCALIZED_OTHERS localised cells that are not problems, in plan order."""
    if not run.kind_counts.get("localization"):
        return ()
    listed = {c.case for c in problems}
    return tuple(islice((c for c in run.cells if c.localized and c.case not in listed), LOCALIZED_OTHERS))


def generation_columns(run: RunModel, flags: dict[str, dict[str, str]]) -> dict[str, tuple[Any, ...]]:
    """Per passing generation cell, each warm series' median and stability word (first token, then
    decode per token), as load_cells gives them: 'stable' unless ``flags`` (the judge's flags of
    the series) has one, then 'unstable' or 'unclassified'."""
    found: dict[str, tuple[Any, ...]] = {}
    for cell in run.cells_with("generation"):
        timing = generation_timing(cell) if cell.status == "pass" else None
        if timing is None:
            continue
        row: list[Any] = []
        for series in GENERATION_SERIES:
            flag = flags.get(cell.case, {}).get(series)
            row += [
                getattr(timing, series).median_s,
                STABLE if flag is None else UNSTABLE if is_unstable(flag) else UNCLASSIFIED,
            ]
        found[cell.case] = tuple(row)
    return found


def localizations(run: RunModel, cells: tuple[CellRecord, ...]) -> dict[str, Localized]:
    """Where each of these cells' error arises, for those with a localization event (with what
    the plan's judged region leaves a module's figures unable to say)."""
    found = {}
    for cell in cells:  # (each event built from the cell's line when asked: only for the cells shown)
        if (judged := judge_localization_of(run, cell)) is not None:
            found[cell.case] = judged
    return found


def refused_as_declared(run: RunModel) -> dict[str, str]:
    """The skipped cells whose request the plan's declared policy refused (request events), each
    with why no explanation is owed."""
    refused = refused_requests(run)
    return {
        c.case: f"none owed: the plan's declared policy refuses requests of {refused[c.case]} tokens (request event);"
        " nothing of the model ran"
        for c in run.with_status("skipped")
        if c.case in refused
    }


def failing_quantity(cell: CellRecord) -> str:
    """What a failed cell failed on, in words: the quantity a status stands for."""
    found = []
    if cell.output_nonfinite:
        found.append("non-finite outputs")
    if cell.mismatched:
        found.append("outputs")
    if cell.trained:
        steps = cell.train_steps
        if any(not s.loss_within for s in steps):
            found.append("loss")
        if any(g.mismatched for s in steps for g in s.grads):
            found.append("gradients")
        result = cell.train_result
        if result is not None and any(p.mismatched for p in result.params):
            found.append("updated parameters")
    if cell.task_metric is not None and metric_values([cell.task_metric], "passed") == [False]:
        found.append("task metric")
    generated = cell.generation  # (its events are read for failed cells only)
    if generated is not None:
        # Its greedy tokens failed the task criterion (no criterion: a divergence is named; the
        # task metric, where it failed, is that criterion); its top-k overlap fell below the
        # plan's least at some step, whatever else failed.
        if "task metric" not in found and (
            generated.tokens_passed is False
            or (generated.tokens_passed is None and generated.first_divergent_step is not None)
        ):
            found.append("greedy tokens")
        if generated.top_k_passed is False:
            found.append("top-k overlap")
    return ", ".join(found) or "not recorded"


def alike_entries(annotations: Annotations) -> tuple[tuple[int, ...], ...]:
    """Entries that say the same but for their figures, with the same verdict, reason and change."""
    groups: dict[tuple[str, str | None, str | None, str | None], list[int]] = {}
    for entry in annotations.entries:
        key = (_FIGURES.sub("#", " ".join(entry.explanation.split())), entry.verdict, entry.reason, entry.change)
        groups.setdefault(key, []).append(entry.index)
    return tuple(tuple(indices) for indices in groups.values())


def _judged_with(run: RunModel) -> str:
    """The constraint file this run is judged with (planned target and family), with its sha256."""
    judged_by = run_backend(
        run.plan.target if run.plan else run.start.target,
        run.environment.backend_family if run.environment else "unknown",
    )
    if judged_by is None:
        return ""
    return f"reportgen/judge/constraints/{judged_by.file} (sha256 {docs_file_sha256(judged_by.target)})"


def _only_verdicts_block(disposition: Disposition) -> bool:
    blocking = [r for r in disposition.reasons if r.outcome == "blocked"]
    return bool(blocking) and all(r.needs_verdict for r in blocking)


@dataclass(frozen=True)
class AnnotationsState:
    """What the owner has written so far about the cells awaiting a verdict."""

    file: str  # "" when there is no annotations file
    unexplained: int
    needs_verdict_lines: tuple[int, ...]  # lines of the entries that explain without a verdict


def annotations_state(annotations: Annotations, awaiting: tuple[AwaitingGroup, ...]) -> AnnotationsState:
    lines = sorted({line for g in awaiting for e in g.explanations if e.verdict is None for line in e.lines})
    return AnnotationsState(
        file=os.path.basename(annotations.path) if annotations.path else "",
        unexplained=sum(g.unexplained for g in awaiting),
        needs_verdict_lines=tuple(lines),
    )


def awaiting_groups(run: RunModel, disposition: Disposition, annotations: Annotations) -> tuple[AwaitingGroup, ...]:
    """The cells awaiting the owner's explanation or verdict, grouped by cause (whatever else blocks)."""
    waiting = [r for r in disposition.reasons if r.outcome == "blocked" and r.needs_verdict]
    if not waiting:
        return ()
    groups = failure_groups(run, waiting_cells(run, waiting))
    return tuple(
        AwaitingGroup(g.label, tuple(g.measured_facts()), tuple(g.cells), *_explained(g.cells, annotations))
        for g in groups
    )


def waiting_cells(run: RunModel, blocking: list[Reason]) -> list[CellRecord]:
    """The cells these reasons name, in plan order."""
    waiting = {case for r in blocking for case in r.cases}
    return [c for c in run.cells if c.case in waiting]


def _explained(
    cells: tuple[CellRecord, ...] | list[CellRecord], annotations: Annotations
) -> tuple[tuple[OwnerExplanation, ...], int]:
    """The group's explanations, entries whose gists differ in figures only (and share a
    verdict) shown once, the first one's words kept; and how many of its cells none explains."""
    file = os.path.basename(annotations.path) if annotations.path else ANNOTATIONS_NAME
    # Cells matched by the same entries are taken together, and each entry's gist is made once:
    # many overlapping [[explain]] entries over a long run were a gist per cell and entry.
    by_entries: dict[tuple[int, ...], list[str]] = {}
    unexplained = 0
    for cell in cells:
        note = annotations.by_case.get(cell.case)
        if note is None:
            unexplained += 1
            continue
        by_entries.setdefault(note.entries, []).append(cell.case)
    gists: dict[int, str] = {}
    found: dict[tuple[str, str | None], tuple[str, list[int], set[str], set[int]]] = {}
    for indexes, cases in by_entries.items():
        for index in indexes:
            entry = annotations.entries[index]
            text = gists.get(index)
            if text is None:
                text = gists[index] = gist(entry.explanation)
            _, lines, covered, entries = found.setdefault(
                (_FIGURES.sub("#", text), entry.verdict), (text, [], set(), set())
            )
            if entry.line is not None and entry.line not in lines:
                lines.append(entry.line)
            covered.update(cases)
            entries.add(index)
    return tuple(
        OwnerExplanation(Words.marked(text), file, tuple(sorted(lines)), len(covered), verdict, len(entries))
        for (_, verdict), (text, lines, covered, entries) in found.items()
    ), unexplained


_FIGURES = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(`*_])")
_MARKUP = re.compile(r"\*\*|__|(?<!\w)[*_](?=\w)|(?<=\w)[*_](?!\w)")


def gist(explanation: str) -> str:
    """An explanation's first one or two sentences, as plain text (code spans keep their
    backticks: the page shows them as code), cut at GIST_CHARS."""
    first = explanation.strip().split("\n\n", 1)[0]
    text = _MARKUP.sub("", " ".join(first.split()))
    sentences = _SENTENCE_END.split(text)
    shown = " ".join(sentences[:2])
    if len(shown) > GIST_CHARS and len(sentences[0]) <= GIST_CHARS:
        shown = sentences[0]
    if len(shown) > GIST_CHARS:
        shown = shown[: GIST_CHARS - 1].rstrip() + "…"
    return shown


def _sentence(words: str) -> str:
    """``words`` as a sentence: capitalised, with its period."""
    return f"{words[:1].upper()}{words[1:]}."
