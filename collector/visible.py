"""Untrusted text shown as it is: invisible and reordering characters written out visibly.

A run id or workload name with U+202E (right-to-left override) or U+2066-U+2069 (isolates)
displays as another name; U+200B-U+200D (zero width) hide a difference; a control character or
an escape sequence (ESC, U+001B) can rewrite a terminal. Every such character is shown as
``<U+XXXX>`` wherever untrusted text reaches a reader: report pages, the site, Markdown and
the terminal (the collector's and reportgen's). One helper for both packages: it is stdlib
only, so the collector stays copyable on its own.

Which characters: every control (Cc) and format (Cf) character, the line and paragraph
separators (U+2028, U+2029) and lone surrogates, except those named in ``keep`` (tab and
newline by default); every other default-ignorable code point (U+034F, Hangul fillers,
variation selectors: a key with one appended reads as the key without it), and every space
but the ASCII one (U+00A0, U+3000, ...) and U+2800, which read as a space. The character class
is written out, not built from ``unicodedata`` at import (a second of work); a test checks it
against ``unicodedata`` for every code point.
"""

from __future__ import annotations

import os
import functools
import re
import sys

_HIDDEN = re.compile(
    "["
    "\x00-\x1f\x7f-\x9f"  # Cc: C0 and C1 controls, DEL; ESC (U+001B) among them
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"  # Cf
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"  # zero widths, marks, separators, embeddings, isolates
    "\ufeff\ufff9-\ufffb"  # Cf
    "\ud800-\udfff"  # lone surrogates (Cs)
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"  # Cf
    "\U000e0000-\U000e0fff"  # Cf and default ignorable: language tag, tags, variation selectors
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2065\u3164\ufe00-\ufe0f\uffa0\ufff0-\ufff8"  # default ignorable
    "\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u2800"  # spaces but U+0020 (Zs), and the braille blank
    "]"
)
# A space or a character not seen: two keys that differ only by these read alike (bare).
_UNSEEN = re.compile(_HIDDEN.pattern[:-1] + " ]")


# Characters a page draws as a blank space that are no space character (str.isspace): the
# Hangul fillers and the braille blank.
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def read_as(text: str, blank: str = " ") -> str:
    """``text`` as a page reads it: every space character (a tab, a line break, a non-ASCII
    space) read as a space, the other characters ``visible`` shows as ``<U+XXXX>`` taken out, and
    runs of spaces read as one, none at either end. ``blank``: what the characters some fonts
    draw as a space and others as nothing (Hangul fillers, the braille blank) read as."""
    spaced = (
        "".join(" " if c.isspace() else blank if c in _BLANK else c for c in text)
        if not text.isascii() or not text.isprintable()
        else text
    )
    kept = _HIDDEN.sub("", spaced)  # a tab, a line break or a non-ASCII space reads as a space
    return " ".join(kept.split()) if " " in kept else kept


def bare(text: str) -> str:
    """``text`` without its spaces and the characters ``visible`` shows as ``<U+XXXX>``: how it
    reads on a page, where two keys equal bare cannot be told apart."""
    return _UNSEEN.sub("", text)


def _shown(match: re.Match[str]) -> str:
    return f"<U+{ord(match.group()):04X}>"


@functools.lru_cache(maxsize=8)
def _ascii_hidden(keep: str) -> re.Pattern[str]:
    """The hidden characters of ASCII text (the C0 controls and DEL) but those in ``keep``."""
    return re.compile("[" + "".join(re.escape(chr(c)) for c in (*range(0x20), 0x7F) if chr(c) not in keep) + "]")


def visible(text: str, keep: str = "\t\n") -> str:
    """``text`` with every hidden character but those in ``keep`` written as ``<U+XXXX>``."""
    if text.isascii():  # the common case: a small class, and no call per kept line break
        ascii_hidden = _ascii_hidden(keep)
        return ascii_hidden.sub(_shown, text) if ascii_hidden.search(text) else text
    if not _HIDDEN.search(text):  # one scan, no copy
        return text
    if not keep:
        return _HIDDEN.sub(_shown, text)
    return _HIDDEN.sub(lambda m: m.group() if m.group() in keep else _shown(m), text)


def escaped(text: str) -> str:
    """TOML text (a revised plan, which a person reviews) with every hidden character past the C0
    controls written as the ``\\uXXXX`` or ``\\UXXXXXXXX`` escape a basic string reads: the escape
    the input held must not come back as the raw character. C0 controls are left as they are
    (the writer escapes those within strings; the others are the text's own line breaks), and
    lone surrogates too (no TOML text holds one)."""

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        if code < 0x20 or 0xD800 <= code <= 0xDFFF:
            return match.group()
        return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"

    return _HIDDEN.sub(escape, text) if _HIDDEN.search(text) else text


def terminal(text: str) -> str:
    """Text for the terminal: tabs and newlines kept, every other hidden character shown (an
    escape sequence starts with ESC, which is shown, so none reaches the terminal whole)."""
    return visible(text)


def tell(line: str) -> None:
    """One line for the reader on stderr, its untrusted text made visible (``terminal``). Where
    that reader went away (`2>&1 | head`) or stderr cannot be written, what follows goes nowhere
    and the run goes on: what it measures is in its log, and a lost terminal is no reason to
    lose it (before, the first line after it raised and ended the run as a collector error)."""
    try:
        print(terminal(line), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115  # for the process's life
