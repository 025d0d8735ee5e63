"""`reportgen annotate`: an annotations.toml skeleton for the owner to edit, one entry per cause.

Failed cells are grouped by mode, dtype and where the log says their mismatches lie
(reportgen.model.groups). Each group becomes one ``[[explain]]`` entry listing its cells, its
explanation prefilled with the measured facts, and no verdict: the report stays blocked for those
cells until the owner writes why and decides. An existing file is never replaced without force.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from reportgen.model.annotations import ANNOTATIONS_NAME, PATTERN_KEY, parse_annotations
from reportgen.model.groups import FailureGroup, failure_groups
from reportgen.storage.local import DEFAULT_MAX_LOG_BYTES
from reportgen.model.runmodel import NotARun, RunModel, read_run

EXIT_WRITTEN, EXIT_INVALID, EXIT_EXISTS = 0, 1, 3


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


def skeleton_text(run: RunModel, groups: list[FailureGroup]) -> str:
    lines = [
        _comment(f"Annotations for run {run.start.run_id} ({run.start.workload}), written by `reportgen annotate` from the log."),
        "# One [[explain]] entry per group of failed cells sharing mode, dtype and where the mismatches lie.",
        "# Each explanation starts with the facts the log measured. Say why they happen, then decide:",
        '#   verdict = "accepted" with reason = "..."   or   verdict = "change-needed" with change = "operator", "layout" or "precision"',
        "# Until an entry has a verdict, the report stays blocked for its cells. The log is never changed.",
    ]
    for group in groups:
        facts = group.facts()
        body = "Measured in the log: " + "; ".join([group.label] + facts[1:]) + ".\n\nWhy: (the owner writes the cause here)"
        lines += [
            "",
            f"[[{PATTERN_KEY}]]",
            _comment(group.label),
            "cases = [" + ", ".join(toml_string(c) for c in group.cases) + "]",
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


def write_skeleton(log: Path, out: Path | None = None, force: bool = False, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> SkeletonResult:
    """Write the skeleton beside the log (or to ``out``); refuses to replace a file unless forced."""
    run = _read(log, max_bytes)
    groups = failure_groups(run)
    if not groups:
        return SkeletonResult(None, 0, 0)
    target = out if out is not None else log.parent / ANNOTATIONS_NAME
    text = skeleton_text(run, groups)
    parse_annotations(text, str(target))  # what we write must load: a bug here is not the owner's
    if target.is_dir():
        raise SkeletonError(f"{target}: is a directory")
    if not force:
        try:
            with open(target, "x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            raise SkeletonError(f"{target}: already exists; not overwritten (use --force to replace it)", EXIT_EXISTS) from None
        except OSError as exc:
            raise SkeletonError(f"{target}: cannot write: {exc.strerror}") from None
    else:
        temp = None
        try:
            fd, temp = tempfile.mkstemp(prefix=".annotations-", dir=target.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temp, target)
            temp = None
        except OSError as exc:
            raise SkeletonError(f"{target}: cannot write: {exc.strerror}") from None
        finally:
            if temp is not None and os.path.exists(temp):
                os.unlink(temp)
    return SkeletonResult(target, len(groups), sum(len(g.cells) for g in groups))
