"""Explanations written after a run, on the laptop, for one cell or many; the log stays untouched.

An annotations file is TOML. A table keyed by a case explains that one cell::

    [b1-l128-contiguous-bfloat16-compiled]
    explanation = "BF16 rounding in the final LayerNorm; task metric holds (0.9993)."
    verdict = "accepted"              # accepted | change-needed (optional)
    reason = "task criterion met; elementwise drift expected for bf16"   # needed with accepted
    # change = "precision"            # operator | layout | precision, needed with change-needed

An ``[[explain]]`` entry explains every cell its selectors match (all selectors must match)::

    [[explain]]
    cases = ["b4-*-bfloat16-*"]       # globs over case keys (a string or a list)
    mode = "compiled"                 # and/or: dtype, layout, mode, status (a string or a list),
    shape = [[4, 512]]                # shape = [[batch, length], ...], batch, length
    explanation = "..."
    verdict = "accepted"
    reason = "..."

An entry that matches no planned cell is an error naming its line; so is a cell that two entries
give different verdicts. Entries that name their cells (``[case]`` tables, ``cases`` without
wildcards) are looked up, any number of them. Each wildcard pattern, and each entry that selects
by a field such as ``mode``, is tried on every cell of the run: at most ``MAX_SEARCHED_CELLS``
such tests in all, or the file is refused with one line. ``explanation`` is Markdown. It is
rendered with raw HTML off, no images and only http(s) and relative links (see
``reportgen.render.markdown``), so a file copied
from elsewhere cannot inject markup into a report or make it load anything.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from fnmatch import translate
from pathlib import Path
from typing import Any, Iterable, Sequence

from collector.tomltext import toml_text
from collector.visible import visible
from reportgen.model.annotation_form import MAX_EXPLANATION_CHARS as MAX_EXPLANATION_CHARS
from reportgen.model.annotation_form import PATTERN_KEY as PATTERN_KEY
from reportgen.model.annotation_form import SELECTORS as SELECTORS
from reportgen.model.runmodel import CellRecord
from reportgen.storage.remote import RemoteLog, RemoteObject
from reportgen.storage.local import (
    ANNOTATIONS_NAME as ANNOTATIONS_NAME,
    MAX_SIDE_FILE_BYTES,
    NotReadable,
    annotations_beside,
    read_bounded,
    shown,
)  # the name is also read from here

# The key starts and ends with a character that is not a blank, so no two parts of the pattern
# can take the same blanks: a lazy key with blanks on both sides of it was quadratic in a long
# line of spaces (such a line may stand in a multi-line string).
_HEADER = re.compile(r"^[ \t]*(\[\[?)[ \t]*([^\[\]# \t](?:[^\[\]#]*[^\[\]# \t])?)[ \t]*\]\]?[ \t]*(#.*)?$")


SHOWN_CHARS = 200  # of an entry's selectors in a message about it
MAX_SUGGESTED = 5_000  # planned cells a misspelled case name is compared with for a suggestion


class AnnotationError(ValueError):
    """The annotations file cannot be used; the message says where and why."""


_GLOB = re.compile(r"[*?\[]")
# A wildcard character written as the one-character class that matches only it ([*], [?], [[]),
# as `reportgen annotate` writes a key holding one: such a pattern names one key.
_ESCAPED = re.compile(r"\[([*?\[])\]")


def _literal(pattern: str) -> str | None:
    """The one case key ``pattern`` names (its escaped wildcard characters as themselves), or
    None for a pattern that searches (a wildcard of its own)."""
    if _GLOB.search(_ESCAPED.sub("", pattern)):
        return None
    return _ESCAPED.sub(lambda m: m.group(1), pattern) if "[" in pattern else pattern


# Entries that search the run's cells (a wildcard, or a field such as mode) times its cells: at
# most this many tests, so that a file of many overlapping entries cannot keep a report busy
# for minutes (entries that name their cells are looked up, whatever their number).
MAX_SEARCHED_CELLS = 5_000_000


@dataclass(frozen=True)
class Entry:
    """One entry of the file: an explanation, its verdict, and which cells it selects."""

    index: int
    line: int | None
    label: str  # how the file names it: "[case]" or "[[explain]] #2"
    selectors: tuple[tuple[str, tuple[Any, ...]], ...]
    explanation: str
    verdict: str | None
    reason: str | None
    change: str | None

    def where(self, path: str) -> str:
        return f"{path}:{self.line}" if self.line is not None else path

    @property
    def selector_text(self) -> str:
        parts = []
        for name, values in self.selectors:
            shown = ", ".join(f"({v[0]}, {v[1]})" if isinstance(v, tuple) else str(v) for v in values)
            parts.append(f"{name} {shown}")
        text = "; ".join(parts)
        # An error line names the entry, not a whole hostile pattern of thousands of characters.
        return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} characters)"

    @property
    def searches(self) -> int:
        """How many times the entry is tried on each cell of the run: once per wildcard pattern
        of its cases, or once when it selects by fields only; 0 when it names its cells."""
        if self.named is not None:
            return 0
        globs = [v for name, values in self.selectors if name == "cases" for v in values if _literal(v) is None]
        return max(1, len(globs))

    @property
    def named(self) -> list[str] | None:
        """The case keys the entry names when its only selector lists them by name (no
        wildcard): its cells are looked up, not searched for. None otherwise."""
        if len(self.selectors) != 1 or self.selectors[0][0] not in ("case", "cases"):
            return None
        name, values = self.selectors[0]
        if name == "case":  # a [case] table's key is the key itself, never a pattern
            return list(values)
        names = [_literal(v) for v in values]
        return None if any(n is None for n in names) else [n for n in names if n is not None]

    def select(self, cells: list[CellRecord]) -> list[CellRecord]:
        """The cells this entry selects, in plan order: one pass per selector over the cells
        the previous ones kept, the case globs compiled once into one pattern."""
        for name, values in self.selectors:
            if name == "case":
                cells = [c for c in cells if c.planned.case == values[0]]
            elif name == "cases":
                # A name without * ? or [ (or with them escaped) matches only itself: looked up, not matched.
                names = {n for v in values if (n := _literal(v)) is not None}
                globs = [v for v in values if _literal(v) is None]
                match = re.compile("|".join(f"(?:{translate(g)})" for g in globs)).match if globs else None
                cells = [c for c in cells if c.planned.case in names or (match and match(c.planned.case))]
            elif name == "shape":
                shapes = set(values)
                cells = [c for c in cells if (c.planned.batch, c.planned.length) in shapes]
            elif name == "status":
                found = set(values)
                cells = [c for c in cells if c.status in found]
            else:
                found = set(values)
                cells = [c for c in cells if getattr(c.planned, name) in found]
        return cells


@dataclass(frozen=True)
class Annotation:
    """What the annotations say about one cell (every entry that matched it agrees on the verdict)."""

    case: str
    verdict: str | None
    reason: str | None
    change: str | None
    entries: tuple[int, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted"


@dataclass
class AnnotationFile:
    """The parsed file, before it meets a run."""

    path: str
    entries: list[Entry] = field(default_factory=list)

    def add(self, line: int | None, label: str, selectors: tuple[tuple[str, tuple[Any, ...]], ...], form: Any) -> None:
        """Append the entry a validated table (``form``) makes, numbered in file order."""
        self.entries.append(
            Entry(len(self.entries), line, label, selectors, form.explanation, form.verdict, form.reason, form.change)
        )


@dataclass
class Annotations:
    """The file applied to a run: each cell's annotation, and each entry's cells."""

    path: str
    entries: list[Entry]
    by_case: dict[str, Annotation]
    covered: dict[int, list[str]]


def _toml_lines(text: str) -> list[str]:
    """The file's lines as TOML numbers them (a CR before the LF dropped)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def _string_after(line: str, inside: str) -> str:
    """The multi-line string delimiter (''' or three double quotes) still open at the end of
    ``line``, given the one open at its start ("" for none): strings on one line, comments and
    escaped quotes are read past, as TOML reads them."""
    i = 0
    while i < len(line):
        if inside:
            end = line.find(inside, i)
            while end > 0 and inside[0] == '"' and _escaped(line, end):
                end = line.find(inside, end + 1)
            if end < 0:
                return inside
            i, inside = end + 3, ""
            while i < len(line) and line[i] == line[i - 1]:  # up to two quotes more close it too
                i += 1
            continue
        char = line[i]
        if char == "#":
            return ""
        if line.startswith(('"""', "'''"), i):
            inside, i = line[i : i + 3], i + 3
        elif char == '"':
            i += 1
            while i < len(line) and (line[i] != '"' or _escaped(line, i)):
                i += 1
            i += 1
        elif char == "'":
            end = line.find("'", i + 1)
            i = len(line) if end < 0 else end + 1
        else:
            i += 1
    return inside


def _escaped(line: str, at: int) -> bool:
    """Whether the character at ``at`` follows an odd number of backslashes."""
    slashes = 0
    while at - slashes - 1 >= 0 and line[at - slashes - 1] == "\\":
        slashes += 1
    return slashes % 2 == 1


def _header_lines(text: str) -> dict[tuple[str, str], list[int]]:
    """Line numbers of each table header, by (bracket, first key): tomllib keeps no positions."""
    found: dict[tuple[str, str], list[int]] = {}
    inside = ""  # the delimiter of the multi-line string a line starts in ("" where none)
    # Lines end at LF only, as TOML's do: str.splitlines() also ends one at U+2028, U+0085 and more.
    for number, line in enumerate(_toml_lines(text), start=1):
        starts_inside, inside = inside, _string_after(line, inside)
        match = None if starts_inside else _HEADER.match(line)  # else a line of a string's text
        if not match:
            continue
        try:
            # toml_text refuses a key of too many parts (a header-like line in a multi-line string)
            key = next(iter(tomllib.loads(toml_text(f"{match.group(2)} = 0"))))
        except (tomllib.TOMLDecodeError, StopIteration):
            continue
        found.setdefault((match.group(1), key), []).append(number)
    return found


def _literals(annotation: Any) -> list[str]:
    """The words a Literal field takes (inside Optional), in order."""
    from typing import Literal, get_args, get_origin

    if get_origin(annotation) is Literal:
        return [str(v) for v in get_args(annotation)]
    return [word for arg in get_args(annotation) for word in _literals(arg)]


def _key_line(text: Sequence[str], start: int | None, key: str) -> int | None:
    """The line of ``key = ...`` in the entry whose header is on line ``start`` (before the next
    header), or None where it is not written on a line of its own."""
    if start is None:
        return None
    for number in range(start + 1, len(text) + 1):
        line = text[number - 1]
        if _HEADER.match(line):
            return None
        if re.match(rf"[ \t]*{re.escape(key)}[ \t]*=", line):
            return number
        if '"""' in line or "'''" in line:
            # A multi-line string may start here, and a line of it look like a key: past it, the
            # entry's header is named rather than a line that may be inside one.
            return None
    return None


def _validated(
    pattern: bool, table: Any, where: str, label: str, what: str, text: Sequence[str] = (), line: int | None = None
) -> Any:
    """``table`` as an ``[[explain]]`` entry (``pattern``) or a ``[case]`` table; else an
    AnnotationError naming the entry and its first problem, at the line of the key at fault
    where ``text`` (the file's lines) shows it below the entry's header on ``line``. The entries'
    models are pydantic's, imported here: a run with no annotations file does not load pydantic."""
    if not isinstance(table, dict):
        raise AnnotationError(f"{where}: {label} must be {what}")
    from pydantic import ValidationError

    from reportgen.model.annotation_entries import PatternEntry, VerdictEntry

    try:
        return (PatternEntry if pattern else VerdictEntry).model_validate(table)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # A misspelt key first: its 'did you mean' explains the required key it leaves missing.
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        # A key is text from the file: shown (a newline or an escape as <U+...>) and cut.
        field = visible(".".join(str(p) for p in first["loc"]), keep="")[:SHOWN_CHARS]
        said = first["msg"]
        if first["type"] == "value_error":  # the check's own words, without pydantic's prefix
            said = said.removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":  # in this tool's words, with the key meant
            keys = (PatternEntry if pattern else VerdictEntry).model_json_schema().get("properties", {})
            key = str(first["loc"][-1])
            close = difflib.get_close_matches(key, sorted(keys), n=1) if len(key) <= SHOWN_CHARS else []
            said = "unknown key" + (f"; did you mean {close[0]!r}?" if close else "")
        if first["type"] == "literal_error":  # a verdict or change misspelt: the words it takes
            allowed = _literals(
                (PatternEntry if pattern else VerdictEntry).model_fields[str(first["loc"][0])].annotation
            )
            given = first.get("input")
            close = difflib.get_close_matches(str(given), allowed, n=1) if isinstance(given, str) else []
            shown_given = visible(repr(given), keep="")[:SHOWN_CHARS]
            said = f"{shown_given} is none of {', '.join(map(repr, allowed))}" + (
                f"; did you mean {close[0]!r}?" if close else ""
            )
        if first["loc"] and (at := _key_line(list(text), line, str(first["loc"][0]))) is not None:
            where = f"{where.rsplit(':', 1)[0] if line is not None else where}:{at}"
        raise AnnotationError(f"{where}: {label} {field + ': ' if field else ''}{said}") from None


def parse_annotations(text: str, path: str) -> AnnotationFile:
    """Check the file's form; raises AnnotationError naming the entry and its line."""
    try:
        text = toml_text(text)  # drops a byte-order mark; refuses a dotted key of too many parts
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AnnotationError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise AnnotationError(f"{path}: not valid TOML: nested too deeply") from None
    except ValueError:  # tomllib's one other refusal: an integer past Python's digit limit
        raise AnnotationError(
            f"{path}: not valid TOML: an integer of more than {sys.get_int_max_str_digits():,} digits"
        ) from None
    lines = _header_lines(text)
    text_lines = _toml_lines(text)
    result = AnnotationFile(path)
    for key, value in data.items():
        if key == PATTERN_KEY and isinstance(value, list):
            numbers = lines.get(("[[", key), [])
            for position, table in enumerate(value):
                line = numbers[position] if len(numbers) == len(value) else None
                label = f"[[{PATTERN_KEY}]] #{position + 1}"
                where = f"{path}:{line}" if line is not None else path
                entry = _validated(True, table, where, label, "a table", text_lines, line)
                selectors = tuple((name, tuple(getattr(entry, name))) for name in SELECTORS if getattr(entry, name))
                result.add(line, label, selectors, entry)
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            # [[name]]: an array of tables under another name than [[explain]] (a misspelling)
            numbers = lines.get(("[[", key), [])
            where = f"{path}:{numbers[0]}" if numbers else path
            close = difflib.get_close_matches(key, [PATTERN_KEY], n=1) if len(key) <= SHOWN_CHARS else []
            hint = f"; did you mean [[{PATTERN_KEY}]]?" if close else ""
            raise AnnotationError(
                f"{where}: [[{visible(key, keep='')[:SHOWN_CHARS]}]] is no entry: a pattern entry is written "
                f"[[{PATTERN_KEY}]], one cell's [CASE]{hint}"
            )
        numbers = lines.get(("[", key), [])
        line = numbers[0] if len(numbers) == 1 else None
        where = f"{path}:{line}" if line is not None else path
        if key == PATTERN_KEY:
            raise AnnotationError(f"{where}: [{PATTERN_KEY}] must be written [[{PATTERN_KEY}]] (one per entry)")
        one = _validated(False, value, where, f"[{key}]", "a table with an explanation", text_lines, line)
        result.add(line, f"[{key}]", (("case", (key,)),), one)
    return result


def read_annotations(path: str | Path | RemoteObject | None) -> AnnotationFile:
    if path is None:
        return AnnotationFile("")
    # The path as every message names it: a newline in a folder's name cannot start a line.
    name = shown(path)
    try:
        if isinstance(path, RemoteObject):
            if path.size > MAX_SIDE_FILE_BYTES:
                raise NotReadable(
                    f"{path.size} bytes, larger than the limit for an annotations file ({MAX_SIDE_FILE_BYTES})"
                )
            text = path.read_text(encoding="utf-8")
        else:
            text = read_bounded(path, MAX_SIDE_FILE_BYTES).decode("utf-8")
    except NotReadable as exc:
        raise AnnotationError(f"{name}: not read: {exc}") from None
    except OSError as exc:
        raise AnnotationError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise AnnotationError(
            f"{name}: not valid TOML: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
        ) from None
    return parse_annotations(text, name)


def apply_annotations(notes: AnnotationFile, cells: Iterable[CellRecord]) -> Annotations:
    """Match every entry to the run's cells; an entry matching nothing or conflicting verdicts are errors."""
    cells = list(cells)
    searches = sum(entry.searches for entry in notes.entries)
    if searches * len(cells) > MAX_SEARCHED_CELLS:
        raise AnnotationError(
            f"{notes.path}: {searches} patterns and field selectors, each tried on a run of {len(cells)} cells: "
            f"more than the {MAX_SEARCHED_CELLS:,} cell tests a report makes; name the cells "
            "(cases = [...] without wildcards) or write fewer, broader patterns"
        )
    position = {c.case: i for i, c in enumerate(cells)}
    covered: dict[int, list[str]] = {}
    by_case: dict[str, list[int]] = {}
    for entry in notes.entries:
        named = entry.named
        if named is None:
            matched = [c.case for c in entry.select(cells)]
        else:
            matched = [cells[i].case for i in sorted({position[n] for n in named if n in position})]
        if not matched:
            what = (
                f"names case {entry.label[1:-1]!r}, which is not in the plan"
                if entry.selectors[0][0] == "case"
                else f"({entry.selector_text}) matches no planned cell"
            )
            raise AnnotationError(f"{entry.where(notes.path)}: {entry.label} {what}")
        # A name listed without a wildcard names one cell: a misspelled one among others that
        # match must not leave its cell unexplained with no word.
        listed = [
            n for name, values in entry.selectors if name == "cases" for v in values if (n := _literal(v)) is not None
        ]
        missing = [n for n in listed if n not in position]
        if missing:
            more = f" (and {len(missing) - 1} more not in it)" if len(missing) > 1 else ""
            # A suggestion only among names of a plausible length: difflib's cost grows with the
            # product of the lengths, and a log's case names are untrusted text.
            names = [name for name in list(position)[:MAX_SUGGESTED] if len(name) <= SHOWN_CHARS]
            close = difflib.get_close_matches(missing[0], names, n=1) if len(missing[0]) <= SHOWN_CHARS else []
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise AnnotationError(
                f"{entry.where(notes.path)}: {entry.label} names case {missing[0][:SHOWN_CHARS]!r}, which is not in the plan{more}{hint}"
            )
        covered[entry.index] = matched
        for case in matched:
            by_case.setdefault(case, []).append(entry.index)
    # Cells matched by the same entries share one verdict and reason: each set of entries is
    # checked and joined once, however many cells it covers (many overlapping [[explain]]
    # entries over a long run were entries x cells joins, and as much memory).
    shared: dict[tuple[int, ...], tuple[str | None, str | None, str | None]] = {}
    result: dict[str, Annotation] = {}
    for case, indexes in by_case.items():
        key = tuple(indexes)
        if key not in shared:
            entries = [notes.entries[i] for i in key]
            first = entries[0]
            for other in entries[1:]:
                if (other.verdict, other.change) != (first.verdict, first.change):
                    raise AnnotationError(
                        f"{first.where(notes.path)} and {other.where(notes.path)}: cell {case!r} is matched by {first.label} "
                        f"(verdict {_verdict_word(first)}) and {other.label} (verdict {_verdict_word(other)}); one cell takes one verdict"
                    )
            reason = "; ".join(dict.fromkeys(e.reason for e in entries if e.reason)) or None
            shared[key] = (first.verdict, reason, first.change)
        verdict, reason, change = shared[key]
        result[case] = Annotation(case, verdict, reason, change, key)
    return Annotations(notes.path, notes.entries, result, covered)


def _verdict_word(entry: Entry) -> str:
    if entry.verdict is None:
        return "none"
    return entry.verdict + (f" ({entry.change})" if entry.change else "")


def load_annotations(path: str | Path | RemoteObject | None, cells: Iterable[CellRecord]) -> Annotations:
    return apply_annotations(read_annotations(path), cells)


def find_annotations(log: Path | RemoteLog) -> Path | RemoteObject | None:
    """The annotations file that sits next to a log, if there is one: for a local log a
    regular file, not a symlink that leads out of the log's folder; for a log in object
    storage, as listed. One that is there but may not be read is an AnnotationError: a report
    made without the explanations its owner wrote would read as if there were none."""
    if isinstance(log, RemoteLog):
        return log.annotations
    path, reason = annotations_beside(log)
    if reason is not None:
        candidate = log.parent / ANNOTATIONS_NAME
        if os.path.islink(candidate) and os.path.exists(candidate):
            reason = "a symlink that leads out of the log's folder; name the file with --annotations to use it"
        raise AnnotationError(f"{shown(candidate)}: not read: {reason}")
    return path
