"""The text every TOML reader of the three packages parses (plans, annotations, site
configurations, campaigns, backend descriptors and constraint data).

A byte-order mark (U+FEFF) that some editors write at the start of a UTF-8 file holds no
content; tomllib refuses it ("Invalid statement (at line 1, column 1)"). Every reader drops it
here, so a file is read the same whichever tool reads it. Stdlib only, like the rest of the
collector's shared helpers.
"""

from __future__ import annotations

BYTE_ORDER_MARK = "\ufeff"


def toml_text(text: str) -> str:
    """``text`` without a leading byte-order mark: what tomllib.loads is given."""
    return text.removeprefix(BYTE_ORDER_MARK)
