"""Argument types shared by the collector's and the campaign's command lines (standard library only)."""

from __future__ import annotations

import argparse
import re
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
    full disk exited 0 having printed nothing. A broken pipe is raised as it is (exit 141).

    A missing required option is said after the options the command line holds that no parser
    knows (``with_unrecognized``): argparse checks the required ones first, so ``--workloda``
    read only "the following arguments are required: --workload"."""

    # The command line being parsed and every option string of the command (its subcommands'
    # too), set by the outermost parse_args: a subcommand's parser reports its own errors.
    _argv: list[str] = []
    _known: frozenset[str] = frozenset()

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        Parser._argv = [str(a) for a in (sys.argv[1:] if args is None else args)]
        Parser._known = frozenset(_option_strings(self))
        return super().parse_args(args, namespace)

    def with_unrecognized(self, message: str) -> str:
        """``message``, led by the options no parser of this command knows, where it says a
        required one is missing."""
        if not message.startswith("the following arguments are required"):
            return message
        unknown = []
        for token in Parser._argv:
            if token == "--":
                break
            name = token.split("=", 1)[0]
            if token.startswith("-") and len(token) > 1 and not _NUMBER.match(token) and name not in Parser._known:
                unknown.append(token)
        return f"unrecognized arguments: {' '.join(unknown)}; {message}" if unknown else message

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


_NUMBER = re.compile(r"-\d|-\.\d")  # a negative number is a value, not an option


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    found: set[str] = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found


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
