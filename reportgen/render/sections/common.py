"""What every section shares: the report's one float format, cell anchors, labelled rows, text cuts and caps."""

from __future__ import annotations

import hashlib
import heapq
import os
import re
from dataclasses import dataclass, replace
from itertools import islice
from operator import attrgetter
from typing import Any, Callable, Collection

from reportgen.judge.judgement import SHOWN_CELLS
from reportgen.model.runmodel import CellRecord, RunModel

_RESULT_LINE = attrgetter("result_line")
SYMBOLS = {"pass": "✔", "mismatch": "✘", "nonfinite": "∞", "error": "✖", "skipped": "⊘", "untested": "…"}
DETAIL_CAP = SHOWN_CELLS  # the cells the judge judged per-cell details for
DETAILS_NAME = "details.csv"
# Bytes, not rows: a page stays under 1 MB for any log. A failure or warning text longer than
# TEXT_CHARS is cut on the page (the full text is in details.csv), and the problems and
# warnings sections stop adding cells at their budget (in characters of text shown).
TEXT_CHARS = 500
PROBLEMS_BUDGET = 250_000
WARNINGS_BUDGET = 120_000


# A case key that is safe as an element id and URL fragment is its own anchor, so a link like
# report.html#b4-l512-contiguous-float32-compiled reads as the cell it points to. Anything
# else (log text is untrusted) gets a hashed id. Keys must contain a digit, which keeps them
# apart from the page's own section ids and the generated "fig-"/"case-"/"entry-" ids.
_READABLE_ANCHOR = re.compile(r"[a-z][a-z0-9_.-]{0,95}", re.IGNORECASE | re.ASCII)  # the whole key (fullmatch)
_ASCII_DIGIT = re.compile(r"[0-9]")
_RESERVED_PREFIXES = ("fig-", "case-", "entry-", "target-")


def anchor(case: str) -> str:
    """A stable element id from a case key: the key itself when safe, else a hash of it."""
    if _READABLE_ANCHOR.fullmatch(case) and _ASCII_DIGIT.search(case) and not case.startswith(_RESERVED_PREFIXES):
        return case
    return "case-" + hashlib.sha256(case.encode("utf-8")).hexdigest()[:12]


def fmt(value: float | None, unit: str = "", digits: int = 4) -> str:
    """One float format for the whole report; 'not measured' is never shown as zero."""
    if value is None:
        return "not measured"
    return f"{value:.{digits}g}{unit}"


def beside(value: float, limit: float, digits: int = 4) -> tuple[str, str]:
    """A value and the limit it is judged against, each with ``digits`` significant digits, or
    as many more as two different numbers need to read differently: 0.99899996 against 0.999
    reads '0.999' at four and six digits, a failure shown as if it met its limit."""
    for shown in range(digits, 18):
        a, b = f"{value:.{shown}g}", f"{limit:.{shown}g}"
        if a != b or value == limit:
            break
    return a, b


def hits_misses(hits: float | None, misses: float | None) -> str:
    """'0 hits / 1 miss': cache counts, each named in the singular or plural its count needs
    ('hits not measured' where the log has no count)."""
    return " / ".join(
        f"{fmt(n)} {one if n == 1 else many}" if n is not None else f"{many} not measured"
        for n, one, many in ((hits, "hit", "hits"), (misses, "miss", "misses"))
    )


def fmt_time(seconds: float | None) -> str:
    """A time as a reader takes it in: in ms below a second, else in s, 4 significant digits."""
    if seconds is None:
        return "not measured"
    ms = f"{seconds * 1e3:.4g}"
    # 0.99996 s rounds to "1000 ms" at 4 digits: that is "1 s".
    return f"{ms} ms" if abs(float(ms)) < 1000 else f"{seconds:.4g} s"


def fmt_ms(seconds: float | None) -> str:
    return "not measured" if seconds is None else f"{seconds * 1e3:.4g} ms"


@dataclass
class Row:
    """A labelled value with where it came from in the log."""

    label: str
    value: str
    source: str = ""
    detail: str = ""  # the full text behind a shortened value (a tooltip in HTML, a footnote in Markdown)


def fact_rows(facts: dict[str, Any]) -> list[Row]:
    rows = []
    for name, fact in sorted(facts.items()):
        if fact.value is not None:
            rows.append(Row(name, fact.value, fact.source or ""))
        else:
            reason = fact.unknown_reason or "no reason recorded"
            rows.append(Row(name, f"unknown: {short_reason(reason)}", "", reason))
    return rows


_SHORT_REASONS = (
    ("not installed", "not installed"),
    ("no packages found", "not installed"),
    ("no module named", "not installed"),
    ("no such file", "not found on this host"),
    ("without cuda", "torch build without CUDA"),
    ("permission denied", "not readable (permission denied)"),
    ("timed out", "probe timed out"),
)


def short_reason(reason: str) -> str:
    """A probe's failure in a few words; the full text stays beside it."""
    lowered = reason.lower()
    for needle, words in _SHORT_REASONS:
        if needle in lowered:
            return words
    first = reason.split(":")[0].strip()
    return first if len(first) <= 60 else first[:59] + "…"


LISTED = 40


def list_text(items: Collection[Any], run: RunModel, label: Callable[[Any], str] = str, ordered: bool = False) -> str:
    """A readable list: a run too big to show every cell names the first few and counts the rest
    (``label`` puts an item in words: only the items shown are). ``ordered``: the items sorted."""
    if not items:
        return "none"
    if len(items) <= LISTED or not needs_details(run):
        return ", ".join(map(label, sorted(items) if ordered else items))
    # Speed: only the items named are sorted (a long run can have a shape per cell), or copied.
    shown = heapq.nsmallest(LISTED, items) if ordered else list(islice(items, LISTED))
    return f"{', '.join(map(label, shown))} and {len(items) - LISTED} more ({len(items)} in all; every cell is in {DETAILS_NAME})"


def clip(text: str, limit: int = TEXT_CHARS, where: str = DETAILS_NAME) -> str:
    """A text as the page shows it: cut after ``limit`` characters, saying where the rest is."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (cut here: {len(text)} characters in all; the full text is in {where})"


FACTS_SHOWN = 60  # rows of one list of facts (env vars, versions) a page shows


def capped_facts(rows: list[Row], what: str, run: RunModel) -> list[Row]:
    """A list of facts from the log (its env vars, its versions) as a page shows it: the first
    FACTS_SHOWN rows, each label and value clipped, then one row counting the rest. A valid log
    may carry 100,000 env vars; the page stays readable and the log keeps them all."""
    log = os.path.basename(run.path)
    shown = [
        replace(
            row, label=clip(row.label, where=log), value=clip(row.value, where=log), detail=clip(row.detail, where=log)
        )
        for row in islice(rows, FACTS_SHOWN)
    ]
    if len(rows) > FACTS_SHOWN:
        source = rows[0].source
        shown.append(Row(f"more {what}", f"first {FACTS_SHOWN} of {len(rows):,} shown; all in {log}", source))
    return shown


def verdict_text(verdict: str | None, reason: str | None, change: str | None) -> str:
    return {"accepted": f"accepted: {reason}", "change-needed": f"change needed: {change}"}.get(
        verdict or "", "explained, awaiting verdict"
    )


def entry_anchor(index: int) -> str:
    return f"explanation-{index + 1}"


def stat_text(value: float | None, nonfinite: int) -> str:
    """A comparison statistic: null in error_stats means a difference was not finite."""
    if value is None:
        return (
            f"not finite ({nonfinite} NaN/Inf output element(s))"
            if nonfinite
            else "not finite (a NaN or Inf in the output or the reference)"
        )
    if nonfinite:
        return f"{fmt(value)} over finite elements only; {nonfinite} NaN/Inf output element(s) not included"
    return fmt(value)


def first_cells(run: RunModel, keep: Callable[[CellRecord], Any]) -> list[CellRecord]:
    """The first DETAIL_CAP cells that ``keep`` accepts: the ones a table shows on the page."""
    return list(islice((c for c in run.cells if keep(c)), DETAIL_CAP))


def collapse_rows(rows: list[Row], at_least: int = 3) -> list[Row]:
    """Rows of cells that say the same thing become one row with a count, in first-seen order.

    "not applicable on cpu" for 36 cells is one row "all 36 cells"; a value shared by fewer
    than ``at_least`` cells keeps its own rows (and their links).
    """
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.value, type(row).__name__), []).append(row)
    out: list[Row] = []
    for (value, _), members in groups.items():
        if len(members) < at_least:
            out.extend(members)
        else:
            who = f"all {len(members)} cells" if len(members) == len(rows) else f"{len(members)} cells"
            out.append(Row(who, value, ""))
    return out


def needs_details(run: RunModel) -> bool:
    return len(run.cells) > DETAIL_CAP
