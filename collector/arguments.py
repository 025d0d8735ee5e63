"""Argument types shared by the collector's and the campaign's command lines (standard library only)."""

from __future__ import annotations

import argparse
from pathlib import Path


def path_argument(text: str) -> Path:
    """A file option's value. The empty string is refused: ``Path("")`` is the current folder, so
    ``--out "$UNSET"`` in a script would otherwise write beside it, into the folder above."""
    return Path(_checked(text, "name a file"))


def folder_argument(text: str) -> Path:
    """A folder option's value, refused as path_argument refuses one."""
    return Path(_checked(text, "name a folder (. for the current one)"))


def _checked(text: str, what: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError(f"an empty path; {what}")
    return text
