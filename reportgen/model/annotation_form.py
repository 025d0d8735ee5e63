"""The words and bounds of an annotations file that both its reader (reportgen.model.annotations)
and its entries' form (reportgen.model.annotation_entries, pydantic, loaded only when a run has
annotations) use: here, so that neither imports the other."""

from __future__ import annotations

PATTERN_KEY = "explain"  # [[explain]]: an entry that selects cells by pattern or field
# An explanation is prose for a reader; its Markdown is rendered on every page that shows it, and
# markdown-it takes seconds on some 100 KB inputs (a run of "![").
MAX_EXPLANATION_CHARS = 20_000
# The fields an [[explain]] entry may select cells by.
SELECTORS = ("cases", "shape", "batch", "length", "dtype", "layout", "mode", "status")
# What a skeleton (reportgen annotate) writes where the owner's cause goes: a verdict beside it is
# refused, since the entry would read as explained with nothing said.
CAUSE_PLACEHOLDER = "(the owner writes the cause here)"
