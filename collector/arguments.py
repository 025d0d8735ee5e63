"""Argument types shared by the collector's and the campaign's command lines (standard library only)."""

from __future__ import annotations

import argparse
from pathlib import Path


def path_argument(text: str) -> Path:
    """A path option's value; the empty string is refused. ``Path("")`` is the current folder,
    so ``--out "$UNSET"`` in a script would otherwise write into wherever it happened to run
    (or, for a file option, beside it: into the folder above)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path; name a file or folder (. for the current folder)")
    return Path(text)
