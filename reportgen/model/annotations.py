"""Explanations written after a run, on the laptop, keyed by case; the log stays untouched.

An annotations file is TOML, one table per case key::

    [b1-l128-contiguous-bfloat16-compiled]
    explanation = "BF16 rounding in the final LayerNorm; task metric holds (0.9993)."
    verdict = "accepted"              # accepted | change-needed (optional)
    reason = "task criterion met; elementwise drift expected for bf16"   # needed with accepted
    # change = "precision"            # operator | layout | precision, needed with change-needed

``explanation`` is Markdown. It is rendered with raw HTML off and only http(s) and relative
links, so a file copied from elsewhere cannot inject markup into a report.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

ANNOTATIONS_NAME = "annotations.toml"


class AnnotationError(ValueError):
    """The annotations file cannot be used; the message says where and why."""


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    explanation: str
    verdict: Literal["accepted", "change-needed"] | None = None
    reason: str | None = None
    change: Literal["operator", "layout", "precision"] | None = None

    @model_validator(mode="after")
    def _verdict_details(self) -> _Entry:
        if self.verdict == "accepted" and not self.reason:
            raise ValueError("verdict 'accepted' needs a reason")
        if self.verdict == "change-needed" and not self.change:
            raise ValueError("verdict 'change-needed' needs change = operator, layout or precision")
        if self.change and self.verdict != "change-needed":
            raise ValueError("'change' only goes with verdict 'change-needed'")
        return self


@dataclass(frozen=True)
class Annotation:
    case: str
    explanation: str
    verdict: str | None
    reason: str | None
    change: str | None

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted"


def load_annotations(path: str | Path | None) -> dict[str, Annotation]:
    if path is None:
        return {}
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AnnotationError(f"{path}: cannot read: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise AnnotationError(f"{path}: not valid TOML: {exc}") from None
    notes = {}
    for case, table in data.items():
        if not isinstance(table, dict):
            raise AnnotationError(f"{path}: [{case}] must be a table with an explanation")
        try:
            entry = _Entry.model_validate(table)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            raise AnnotationError(f"{path}: [{case}] {where + ': ' if where else ''}{first['msg']}") from None
        notes[case] = Annotation(case, entry.explanation, entry.verdict, entry.reason, entry.change)
    return notes


def find_annotations(log: Path) -> Path | None:
    """The annotations file that sits next to a log, if any."""
    candidate = log.parent / ANNOTATIONS_NAME
    return candidate if candidate.is_file() else None
