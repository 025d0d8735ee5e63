"""The text every TOML reader of the three packages parses (plans, annotations, site
configurations, campaigns, backend descriptors and constraint data).

A byte-order mark (U+FEFF) that some editors write at the start of a UTF-8 file holds no
content; tomllib refuses it ("Invalid statement (at line 1, column 1)"). Every reader drops it
here, so a file is read the same whichever tool reads it.

tomllib's time grows with the square of the number of parts in one dotted key (``a.b.c = 1``,
``[a.b.c]``, ``{a.b.c = 1}``): 80,000 parts take it about 20 seconds, twice as many four times
that. A key of more than MAX_DOTTED_KEY_PARTS parts is refused here first, by one pass over the
text, as tomllib's own error for the line. Stdlib only, like the rest of the collector's shared
helpers.
"""

from __future__ import annotations

import re
import tomllib

BYTE_ORDER_MARK = "\ufeff"

# The deepest key a plan, annotations file or site configuration writes has a handful of parts;
# 64 leaves room for any real file and keeps tomllib's work on one key small.
MAX_DOTTED_KEY_PARTS = 64

# One part of a key: bare, or a quoted string on one line. The quantifiers are possessive, so a
# part that fails is never tried again shorter: the scan stays linear in the text.
_PART = r"""(?:[A-Za-z0-9_-]++|"(?:[^"\\\n]++|\\.)*+"|'[^'\n]*+')"""
_DOT = r"[ \t]*+\.[ \t]*+"
_TOO_LONG = rf"{_PART}(?:{_DOT}{_PART}){{{MAX_DOTTED_KEY_PARTS}}}"
# Text that holds no key: a comment, or a multi-line string (which may run to the end of an
# unfinished file; tomllib reports that itself).
_COMMENT = r"\#[^\n]*+"
_MULTI_LINE_BASIC = r'"""(?:[^"\\]++|\\[\s\S]|"(?!""))*+(?:"{3,5}|\Z)'
_MULTI_LINE_LITERAL = r"'''(?:[^']++|'(?!''))*+(?:'{3,5}|\Z)"
# One token at a time from the start: a comment, a multi-line string, a dotted run (a value's
# quoted string is one part, so dots inside it never count) or any other character, up to the
# first run of more parts than the bound. Anchored and possessive: no match means none.
_TOKEN = rf"{_COMMENT}|{_MULTI_LINE_BASIC}|{_MULTI_LINE_LITERAL}|{_PART}(?:{_DOT}{_PART})*+|[\s\S]"
_FIRST_TOO_LONG = re.compile(rf"(?:(?!{_TOO_LONG})(?:{_TOKEN}))*+(?P<key>{_TOO_LONG})")


class DottedKeyTooLong(tomllib.TOMLDecodeError):
    """A dotted key of more parts than MAX_DOTTED_KEY_PARTS, located like tomllib's errors."""

    def __init__(self, lineno: int, colno: int) -> None:
        self.msg = f"a dotted key of more than {MAX_DOTTED_KEY_PARTS} parts (no real file needs so many)"
        self.lineno = lineno
        self.colno = colno
        # Past TOMLDecodeError's own __init__, whose arguments differ between Python versions.
        ValueError.__init__(self, f"{self.msg} (at line {lineno}, column {colno})")


def toml_text(text: str) -> str:
    """``text`` without a leading byte-order mark: what tomllib.loads is given. Raises
    DottedKeyTooLong (a tomllib.TOMLDecodeError) for a key of too many parts."""
    text = text.removeprefix(BYTE_ORDER_MARK)
    if text.count(".") >= MAX_DOTTED_KEY_PARTS:  # fewer dots: no key can be too long
        found = _FIRST_TOO_LONG.match(text)
        if found is not None:
            start = found.start("key")
            line_start = text.rfind("\n", 0, start) + 1
            raise DottedKeyTooLong(text.count("\n", 0, start) + 1, start - line_start + 1)
    return text
