"""The disposition in words: the dominant finding, and what must happen next and where.

A reader should learn from the top of a report what the run found about the model and what
to do about it, without reading the rules. Both sentences are built from the reasons the rules
gave (each with its cells) and from measured cell facts; nothing here is a new judgement.
The next step for each rule is data (``NEXT_STEPS``), so a new rule adds one line here.
"""

from __future__ import annotations

import os
import shlex

from collections import Counter
from dataclasses import dataclass
from operator import attrgetter
from typing import Protocol

from reportgen.judge.disposition import FAILED, Disposition, Reason, Scope
from reportgen.model.groups import metric_values
from reportgen.model.runmodel import RunModel

_STATUS = attrgetter("status")


@dataclass(frozen=True)
class Words:
    """A sentence whose identifiers (commands, file names, keys) are marked as code, so each
    format shows them as code and none shows a literal backtick."""

    parts: tuple[tuple[str, bool], ...]  # (text, is code), in order

    def __str__(self) -> str:
        return "".join(text for text, _ in self.parts)

    @classmethod
    def marked(cls, text: str) -> Words:
        """Text with code between backticks (Markdown's code spans); an unpaired backtick is text."""
        pieces = text.split("`")
        if len(pieces) % 2 == 0:  # an odd number of backticks: the last one is text
            pieces[-2:] = [pieces[-2] + "`" + pieces[-1]]
        return cls(tuple((piece, index % 2 == 1) for index, piece in enumerate(pieces) if piece))


def _filled(template: str, **values: str) -> Words:
    """A template whose code is between backticks, each part filled in on its own: a value (a
    file name, a case key: text from the log) never opens or closes a code span."""
    pieces = template.split("`")
    return Words(tuple((piece.format(**values), index % 2 == 1) for index, piece in enumerate(pieces) if piece))


class AnnotationsState(Protocol):
    """What the owner has written about the cells awaiting a verdict (judge.judgement)."""

    # Properties: read-only here, so a frozen dataclass (judge.judgement's) satisfies it.
    @property
    def file(self) -> str: ...
    @property
    def unexplained(self) -> int: ...
    @property
    def needs_verdict_lines(self) -> tuple[int, ...]: ...


# Rule -> what to do next and where. {annotate} and {collect} are filled in per run.
NEXT_STEPS: dict[str, str] = {
    "mismatch": "explain and decide each in annotations.toml next to the log (`{annotate}` writes a skeleton grouped by cause), then run `{rerun}` again",
    "error": "read each failure (phase and message) under Mismatches and errors; fix the cause and collect again, or explain it in annotations.toml",
    "reference-nonfinite": "fix the reference or its inputs first: a non-finite reference judges nothing",
    "reference-not-repeatable": "make the reference repeat within the tolerance (seed or remove what is random in the forward, such as dropout left on or a buffer updated per call; torch.use_deterministic_algorithms), then collect again",
    "incomplete-run": "collect the missing cells again with the same plan (`{collect}`)",
    "stopped-on-plan": "change the plan as the reason under Disposition says (as it is, the collector stops it again the same way), then collect again",
    "stopped-on-workload": "fix what the workload error under Disposition names (a module that lacks a function, or raises, stops the collector again the same way), then collect again; an error that may not repeat (a timeout, a file that could not be read), collect again (`{collect}`)",
    "untested-cells": "collect the untested cells with the same plan (`{collect}`)",
    "layout-not-measured": "collect the non-contiguous cells again with this collector, which records the layout the model receives (`{collect}`)",
    "layout-not-achieved": "make the collector feed the planned layout (see Inputs as fed), then collect those cells again",
    "skipped-cells": "remove the cause of the skips or accept them with a reason in annotations.toml",
    "cold-mismatch": "explain why the cold first call differs from the warm result before accepting any timing",
    "tolerances": "declare tolerances for every dtype in the plan, before collecting again",
    "environment": "collect again on a host where the versions and backend family can be read",
    "release-matrix": "install a torch and backend package pair from the release's package matrix (named in the reason), then collect again",
    "wrong-target": "collect on a host of the intended target (`{collect_there}`)",
    "precision": "keep the workload on a float64-capable path, or have its owner approve a justified precision change in the plan",
    "cpu-fallback": "replace or avoid the ops that fell back to the CPU (listed under Fallback and compile findings)",
    "graph-breaks": "remove the graph breaks (reasons under Fallback and compile findings) so the compiled path is one graph",
    "recompiles": "find why the same shape compiled again (cache check under Fallback and compile findings)",
    "recompile-limit": "stay within the recompile limit: fewer shapes per process or padding to buckets",
    "no-compiled-graph": "collect the compiled cells again with the compiled path on (no `TORCHDYNAMO_DISABLE`); if they still compile no graph, find why TorchDynamo skipped the model (`TORCH_LOGS=+dynamo`)",
    "layout": "feed contiguous inputs to the compiled path (make the preprocessing produce them), then collect again",
    "compile-fallback": "collect the compiled cells again with the setting the reason names at the value it names",
    "compile-unmeasured": "collect the compiled cells again with a collector that logs each one's compile (`{collect}`)",
    "instance-generation": "collect again on an instance of a generation the release supports (named in the reason), where its instance type can be read",
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
    failed, errored, untested = (
        run.with_status(*FAILED),
        run.with_status("error"),
        run.with_status("untested"),
    )
    parts = []
    # A cell that failed its task criterion with no element outside the tolerance (a generation
    # cell whose greedy steps diverged) is said so: it differs beyond no tolerance. Not a training
    # cell: its elements counted are its loss's, and its parameters or gradients may be outside.
    task_only = [
        c
        for c in failed
        if c.status == "mismatch"
        and c.mismatched == 0
        and c.task_metric is not None
        and metric_values([c.task_metric], "passed") == [False]
        and c.train_result is None
    ]
    told = {id(c) for c in task_only}
    beyond = [c for c in failed if id(c) not in told]
    if task_only:
        by_group: Counter[tuple[str, str]] = Counter((c.planned.mode, c.planned.dtype) for c in task_only)
        parts.append(
            _cells_phrase(len(task_only), by_group, "fail their task criterion with no element beyond tolerance")
        )
    if beyond:
        counted = _failed_by_mode_dtype(disposition.scope)
        counted.subtract(Counter((c.planned.mode, c.planned.dtype) for c in task_only))
        text = _cells_phrase(len(beyond), +counted, "differ from the reference beyond tolerance")
        # The cells' compact facts (runmodel), not their events: a long run has thousands of these.
        # Each metric's "passed" read once: a long run has thousands of failed cells.
        judged = [
            passed
            for passed in metric_values([m for m in [c.task_metric for c in beyond] if m is not None], "passed")
            if passed is not None
        ]
        if judged:
            met = sum(map(bool, judged))
            text += (
                f"; task metric met in {met} of {len(judged)}"
                if met < len(judged)
                else f"; task metric met in all {met}"
            )
        parts.append(text)
    if errored:
        phases = Counter(c.failure_kind.split(": ", 1)[0] for c in errored if c.failure_kind)
        where = ", ".join(f"{phase}: {n}" for phase, n in sorted(phases.items()))
        parts.append(f"{len(errored)} cell(s) failed to run" + (f" (phase {where})" if where else ""))
    if untested:
        text = f"{len(untested)} of {len(run.cells)} planned cell(s) untested"
        # A cell untested for its planned layout still measured its outputs at the layout it did
        # receive: one that differed beyond tolerance there is said, not hidden in the count.
        differed = sum(1 for c in untested if c.measured_status in FAILED)
        if differed:
            text += f" ({differed} of them differ from the reference beyond tolerance at the layout they received)"
        parts.append(text)
    skipped = run.with_status("skipped")
    if skipped:
        parts.append(f"{len(skipped)} of {len(run.cells)} planned cell(s) skipped")
    changes = [r for r in disposition.reasons if r.outcome == "change" and r.rule not in ("mismatch", "error")]
    parts += [r.message.rstrip(".") for r in changes[:2]]
    passed = run.counts()["pass"]
    if not run.cells:
        return "No planned cell in the log: nothing was measured."
    if not parts and passed == len(run.cells):
        return f"All {passed} planned cell(s) passed against the reference."
    return "; ".join(parts) + f". {passed} of {len(run.cells)} cell(s) passed."


def next_step(
    run: RunModel,
    disposition: Disposition,
    log_name: str = "events.jsonl",
    notes: AnnotationsState | None = None,
    rerun: str = "reportgen report",
) -> Words:
    """What must happen next and where, from the first reason that stands in the way; for cells
    awaiting the owner's verdict, from what the annotations already say (``notes``). ``rerun``:
    the command that shows the result of an edit ('reportgen site' on a site's pages)."""
    standing = [r for r in disposition.reasons if r.outcome == "blocked"] or [
        r for r in disposition.reasons if r.outcome == "change"
    ]
    if not standing:
        if disposition.timing_undecided:
            # The correctness scope stands; its timings decide nothing until measured again.
            return Words.marked(
                f"Nothing for this scope's correctness; {disposition.timing_undecided} timing(s) decide no performance "
                "(section 7 gives each one's reason): collect again as that reason asks (a quieter host where threads "
                "waited for a CPU; more warm repetitions where a series was too short to classify) to decide "
                "performance. To widen the scope, add shapes, dtypes or modes to the plan."
            )
        return Words.marked(
            "Nothing for this scope. To widen it, add shapes, dtypes or modes to the plan and collect again."
        )
    first = _first(standing, planless=run.plan is None)
    owner = notes if any(r.needs_verdict for r in standing) else None
    if owner is not None and first.needs_verdict:
        return _verdict_step(owner, log_name, _then(standing, {r.rule for r in standing if r.needs_verdict}), rerun)
    template = NEXT_STEPS.get(first.rule, "resolve the reason listed first under Disposition")
    planned = run.plan.target if run.plan is not None else run.start.target
    intended = disposition.scope.intended_target or planned
    words = _filled(
        template,
        annotate=annotate_command(log_name),
        collect=_collect_hint(run),
        collect_there=_collect_hint(run, intended),
        rerun=rerun,
    )
    if owner is None:
        return Words((("Next: ", False), *words.parts, ("." + _then(standing, {first.rule}), False)))
    # The owner can write the missing verdicts meanwhile: said in the same breath.
    also = _verdict_step(
        owner, log_name, _then(standing, {first.rule} | {r.rule for r in standing if r.needs_verdict}), rerun
    )
    return Words(
        (("Next: ", False), *words.parts, (". Meanwhile, for the cells awaiting a verdict: ", False), *also.parts[1:])
    )


def _then(standing: list[Reason], said: set[str]) -> str:
    more = len({r.rule for r in standing} - said)
    return f" Then {more} other reason(s) listed below." if more > 0 else ""


LINES_NAMED = 12  # entry lines a next step names; the rest are counted


def _verdict_step(notes: AnnotationsState, log_name: str, then: str, rerun: str) -> Words:
    """The next step for cells awaiting the owner: write what is missing, where it goes."""
    if notes.unexplained and notes.file:
        step = _filled(
            "explain the {n} cell(s) no entry covers: `{annotate} --out {new}` writes entries for them "
            "beside `{file}` (never over it); move them into `{file}`, say why and give each a verdict, then run `{rerun}` again.",
            n=str(notes.unexplained),
            annotate=annotate_command(log_name),
            new=shell_path(os.path.join(os.path.dirname(log_name), "annotations.new.toml")),
            file=notes.file,
            rerun=rerun,
        )
    elif notes.unexplained:
        step = _filled(
            "explain and decide the {n} cell(s) awaiting a verdict: `{annotate}` writes `annotations.toml` beside the log, "
            "one entry per cause with the measured facts; say why and give each a verdict, then run `{rerun}` again.",
            n=str(notes.unexplained),
            annotate=annotate_command(log_name),
            rerun=rerun,
        )
    else:
        lines = notes.needs_verdict_lines
        named = ", ".join(map(str, lines[:LINES_NAMED])) + (
            f" and {len(lines) - LINES_NAMED} more entries" if len(lines) > LINES_NAMED else ""
        )
        where = (f"line {lines[0]}" if len(lines) == 1 else f"lines {named}") if lines else "each entry"
        step = _filled(
            'give a verdict in `{file}` at {where}: `verdict = "accepted"` with a `reason`, or `verdict = "change-needed"` '
            "with a `change` (operator, layout or precision); then run `{rerun}` again.",
            file=notes.file or "annotations.toml",
            where=where,
            rerun=rerun,
        )
    return Words((("Next: ", False), *step.parts) + (((then, False),) if then else ()))


def _first(reasons: list[Reason], planless: bool = False) -> Reason:
    # A wrong target or a non-finite reference makes every other finding moot: say those first;
    # so does a run the collector stopped on its plan or its workload module, and one that stopped before its plan event
    # (whose tolerances were never written, not left out of the plan).
    early = ("incomplete-run",) if planless else ()
    for rule in ("wrong-target", "stopped-on-plan", "stopped-on-workload", *early, "reference-nonfinite", "tolerances"):
        for reason in reasons:
            if reason.rule == rule:
                return reason
    return reasons[0]


def shell_path(path: str) -> str:
    """A path as one argument of a pasted command: quoted for a shell (a folder name is text
    from wherever the runs came from: pasted, it must run nothing else), and never read as an
    option (a relative path that starts with '-' is written ./-x)."""
    return shlex.quote(f"./{path}" if path.startswith("-") else path)


def annotate_command(log_name: str) -> str:
    """`reportgen annotate LOG` with the log's path as one argument (shell_path)."""
    return f"reportgen annotate {shell_path(log_name)}"


def _collect_hint(run: RunModel, target: str | None = None) -> str:
    """The collector's command for the run's plan, target and the options that shape what it
    measures (warm repetitions, how the cold call is taken) as its run_start recorded them
    (PLAN.toml where it did not), with --only for each of up to three untested cells; options
    that chose cells or outputs (--only, --modes, --max-cells, --profile, --out) are left out.
    ``target``: the whole plan again on that target instead."""
    argv = [str(a) for a in (run.start.command or ())]
    plan = _option(argv, "--workload")
    command = f"python -m collector --workload {shell_path(plan) if plan else 'PLAN.toml'}"
    for name in ("--target", "--warm", "--cold", "--cold-timeout"):
        value = target if name == "--target" and target else _option(argv, name)
        if value is not None:
            command += f" {name} {shlex.quote(value)}"
    if target:
        return command
    untested = [c.case for c in run.with_status("untested")]
    if untested and len(untested) <= 3:
        return command + " " + " ".join(f"--only {shlex.quote(case)}" for case in untested)
    return command


def _option(argv: list[str], name: str) -> str | None:
    """The value of ``name`` in a recorded command line (``--name value`` or ``--name=value``)."""
    for index, word in enumerate(argv):
        if word == name and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith(name + "="):
            return word[len(name) + 1 :]
    return None
