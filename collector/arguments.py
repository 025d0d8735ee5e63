"""Argument types shared by the collector's and the campaign's command lines (standard library only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


class StdoutFailed(Exception):
    """Standard output could not be written (not a broken pipe): not an OSError, so no handler
    of the run's own files takes it for one."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(exc.strerror or str(exc))


class Parser(argparse.ArgumentParser):
    """argparse whose help text, when standard output cannot take it, says so: argparse's own
    _print_message drops the OSError, so with unbuffered output (PYTHONUNBUFFERED=1) --help into a
    full disk exited 0 having printed nothing. A broken pipe is raised as it is (exit 141)."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if not message:
            return
        stream = file if file is not None else sys.stderr
        try:
            stream.write(message)
        except BrokenPipeError:
            raise
        except OSError as exc:
            if stream is sys.stdout:
                raise StdoutFailed(exc) from None


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
