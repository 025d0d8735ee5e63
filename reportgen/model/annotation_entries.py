"""The form of one annotations entry (reportgen.model.annotations): a ``[case]`` table
(``VerdictEntry``) or an ``[[explain]]`` entry (``PatternEntry``). Imported only when a run has an
annotations file, so a report of a run without one does not load pydantic."""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from reportgen.model.annotation_form import CAUSE_PLACEHOLDER, MAX_EXPLANATION_CHARS, PATTERN_KEY, SELECTORS
from reportgen.model.runmodel import STATUS_ORDER


class VerdictEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    explanation: str = Field(min_length=1, max_length=MAX_EXPLANATION_CHARS)
    verdict: Literal["accepted", "change-needed"] | None = None
    reason: str | None = None
    change: Literal["operator", "layout", "precision"] | None = None

    @model_validator(mode="after")
    def _verdict_details(self) -> VerdictEntry:
        if self.verdict and CAUSE_PLACEHOLDER in self.explanation:
            raise ValueError(
                f"a verdict beside the skeleton's 'Why: {CAUSE_PLACEHOLDER}': write the cause in the explanation first"
            )
        if self.verdict == "accepted" and not self.reason:
            raise ValueError("verdict 'accepted' needs a reason")
        if self.verdict == "change-needed" and not self.change:
            raise ValueError("verdict 'change-needed' needs change = operator, layout or precision")
        if self.change and self.verdict != "change-needed":
            raise ValueError("'change' only goes with verdict 'change-needed'")
        return self


Words = Union[list[str], None]


class PatternEntry(VerdictEntry):
    cases: Words = None
    dtype: Words = None
    layout: Words = None
    mode: Words = None
    status: Words = None
    # Whole numbers only, as the plan schema takes them: true, "2" or 2.0 select no shape.
    shape: list[tuple[StrictInt, StrictInt]] | None = None
    batch: list[StrictInt] | None = None
    length: list[StrictInt] | None = None

    @field_validator("cases", "dtype", "layout", "mode", "status", "batch", "length", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        # One value is a list of one (a float or a bool too, refused then as what it is).
        return value if isinstance(value, (list, dict)) or value is None else [value]

    @field_validator("shape", mode="before")
    @classmethod
    def _one_shape(cls, value: Any) -> Any:
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
            return [value]
        return value

    @field_validator("status")
    @classmethod
    def _known_status(cls, value: Words) -> Words:
        bad = [v for v in value or [] if v not in STATUS_ORDER]
        if bad:
            raise ValueError(f"unknown status {bad}; known: {', '.join(STATUS_ORDER)}")
        return value

    @model_validator(mode="after")
    def _has_selector(self) -> PatternEntry:
        if not any(getattr(self, name) for name in SELECTORS):
            raise ValueError(f"an [[{PATTERN_KEY}]] entry needs at least one selector: {', '.join(SELECTORS)}")
        return self
