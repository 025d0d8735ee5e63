"""`reportgen annotate`: an annotations.toml skeleton for the owner to edit, one entry per cause.

Failed cells are grouped by mode, dtype and where the log says their mismatches lie
(reportgen.model.groups). Each group becomes one ``[[explain]]`` entry listing its cells, its
explanation prefilled with the measured facts, and no verdict: the report stays blocked for those
cells until the owner writes why and decides. An existing file is never replaced without force;
a skeleton written beside the annotations.toml that sits next to the log (``--out``) holds only
the failed cells that file does not explain yet.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from reportgen.model.annotations import (
    ANNOTATIONS_NAME,
    PATTERN_KEY,
    AnnotationError,
    find_annotations,
    load_annotations,
    parse_annotations,
)
from reportgen.judge.nextstep import shell_path
from reportgen.model.annotation_form import CAUSE_PLACEHOLDER
from reportgen.model.groups import FailureGroup, failure_groups
from reportgen.storage.local import DEFAULT_MAX_LOG_BYTES, replace_file, same_file
from reportgen.model.runmodel import NotARun, RunModel, read_run

EXIT_WRITTEN, EXIT_INVALID, EXIT_USAGE, EXIT_EXISTS = 0, 1, 2, 3


class SkeletonError(ValueError):
    """The skeleton cannot be written; the message says why and nothing was written."""

    def __init__(self, message: str, code: int = EXIT_INVALID) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class SkeletonResult:
    path: Path | None
    groups: int
    cells: int
    explained: int = 0  # failed cells left out because the existing annotations.toml explains them
    existing: Path | None = None  # that file
    decided: int = 0  # of those, the ones it gives a verdict


def toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and every control character escaped."""
    out = []
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _comment(text: str) -> str:
    """One comment line: no line break can end the comment early."""
    return "# " + " ".join(toml_string(text)[1:-1].split())


def _literal(case: str) -> str:
    """A case key as a ``cases`` pattern that matches only that key: ``*``, ``?`` and ``[`` in
    it, which a pattern reads as wildcards, each written as the one-character class that
    matches it (``b[*]``); a key without them is written as it is."""
    return re.sub(r"([*?\[])", r"[\1]", case)


def skeleton_text(run: RunModel, groups: list[FailureGroup]) -> str:
    lines = [
        _comment(
            f"Annotations for run {run.start.run_id} ({run.start.workload}), written by `reportgen annotate` from the log."
        ),
        "# One [[explain]] entry per group of failed cells sharing mode, dtype and where the mismatches lie.",
        "# Each explanation starts with the facts the log measured. Say why they happen, then decide:",
        '#   verdict = "accepted" with reason = "..."   or   verdict = "change-needed" with change = "operator", "layout" or "precision"',
        "# Until an entry has a verdict, the report stays blocked for its cells. The log is never changed.",
    ]
    for group in groups:
        facts = group.facts()
        body = "Measured in the log: " + "; ".join([group.label] + facts[1:]) + f".\n\nWhy: {CAUSE_PLACEHOLDER}"
        lines += [
            "",
            f"[[{PATTERN_KEY}]]",
            _comment(group.label),
            "cases = [" + ", ".join(toml_string(_literal(c)) for c in group.cases) + "]",
            f"explanation = {toml_string(body)}",
            '# verdict = "accepted"',
            '# reason = ""',
        ]
    return "\n".join(lines) + "\n"


def _read(log: Path, max_bytes: int) -> RunModel:
    reading, builder = read_run(log, max_bytes)
    if not reading.valid:
        raise SkeletonError("\n".join(p.format() for p in reading.errors[:20]))
    try:
        return builder.build(reading)
    except NotARun as exc:
        raise SkeletonError(str(exc)) from None


def _reads_as_a_log(path: Path) -> bool:
    """Whether a regular file at ``path`` starts as a JSON-lines log does (a JSON object), which an
    annotations file (TOML) never does; never follows a link nor opens anything but a file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, 4096)
    except OSError:
        return False
    finally:
        os.close(fd)
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{")


def write_skeleton(
    log: Path, out: Path | None = None, force: bool = False, max_bytes: int = DEFAULT_MAX_LOG_BYTES
) -> SkeletonResult:
    """Write the skeleton beside the log (or to ``out``); refuses to replace a file unless forced.
    Beside an existing annotations.toml (``out`` another file), only the failed cells it does not
    explain get entries."""
    default = log.parent / ANNOTATIONS_NAME
    target = out if out is not None else default
    if same_file(target, log):  # --force would replace the run's own record with the skeleton
        raise SkeletonError(f"{target}: is the run log being annotated; name another file", EXIT_USAGE)
    if _reads_as_a_log(target):  # another run's log: --force replaces an annotations file, not evidence
        raise SkeletonError(
            f"{target}: reads as a JSON-lines log (its first line is a JSON object), not an annotations file; "
            "not replaced, even with --force: name another file",
            EXIT_USAGE,
        )
    run = _read(log, max_bytes)
    try:
        existing = find_annotations(log)
    except AnnotationError as exc:
        raise SkeletonError(str(exc)) from None
    failed = failure_groups(run)
    explained: set[str] = set()
    verdicts: set[str] = set()
    if isinstance(existing, Path) and not (force and target.resolve() == existing.resolve()):
        try:
            notes = load_annotations(existing, run.cells).by_case
            explained = set(notes)
            verdicts = {case for case, note in notes.items() if note.verdict}
        except AnnotationError as exc:
            raise SkeletonError(
                f"{exc} (the annotations beside the log must load before a skeleton is written beside them)"
            ) from None
    waiting = [c for g in failed for c in g.cells if c.case not in explained]
    groups = failure_groups(run, waiting) if explained else failed
    left_out = sum(len(g.cells) for g in failed) - len(waiting)
    if not groups:
        decided = sum(1 for g in failed for c in g.cells if c.case in verdicts)
        return SkeletonResult(None, 0, 0, left_out, existing if isinstance(existing, Path) else None, decided)
    if out is None and not force and target.exists():
        name = existing.name if isinstance(existing, Path) else ANNOTATIONS_NAME
        raise SkeletonError(
            f"{target}: already exists; not overwritten. `reportgen annotate {shell_path(str(log))} --out {shell_path(str(target.with_name('annotations.new.toml')))}` writes entries for the "
            f"{len(waiting)} failed cell(s) {name} does not explain beside it (or use --force to replace it)",
            EXIT_EXISTS,
        )
    text = skeleton_text(run, groups)
    parse_annotations(text, str(target))  # what we write must load: a bug here is not the owner's
    if target.is_dir():
        raise SkeletonError(f"{target}: is a directory")
    if not force:
        try:
            with open(target, "x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            raise SkeletonError(
                f"{target}: already exists; not overwritten (use --force to replace it)", EXIT_EXISTS
            ) from None
        except OSError as exc:
            raise SkeletonError(f"{target}: cannot write: {exc.strerror}") from None
    else:
        try:
            replace_file(target, text.encode("utf-8"))
        except OSError as exc:
            raise SkeletonError(f"{target}: cannot write: {exc.strerror}") from None
    return SkeletonResult(
        target,
        len(groups),
        sum(len(g.cells) for g in groups),
        left_out,
        existing if isinstance(existing, Path) else None,
    )
