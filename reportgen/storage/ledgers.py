"""Campaign ledgers found at the locations a site is built from (``_campaigns/<id>/``).

A campaign task writes its ledger beside the runs it delivers (campaign/task.sh; the format is
campaign/ledger.py, read here through that module's own reader). A location that is a folder or
an ``s3://`` prefix may hold ledgers directly under it; each file is read within the size limit
for side files (a failed attempt's log only from its end, whatever its size), and one that
cannot be read is reported, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from campaign.spec import MAX_TASKS
from collector.visible import visible
from campaign.ledger import (
    LEDGER_DIR,
    MAX_INDEX,
    MAX_RECORDS,
    MAX_TASK_FILES,
    READ_ERRORS,
    Ledger,
    LedgerError,
    Lister,
    Reader,
    StartReader,
    deadline_seconds,
    read_ledger,
    strict_json,
    whole_number,
)
from reportgen.storage import is_remote
from reportgen.storage.local import MAX_SIDE_FILE_BYTES, NotReadable, describe_size, open_regular, read_bounded
from reportgen.storage.remote import RemoteError, Store

MAX_LEDGERS = 1000


@dataclass(frozen=True)
class FoundLedgers:
    ledgers: list[Ledger]
    problems: list[str]


def find_ledgers(locations: list[str | Path], store: Store | None = None) -> FoundLedgers:
    found: list[tuple[str, Ledger]] = []
    problems: list[str] = []
    for location in locations:
        if is_remote(location):
            _remote(str(location), store, found, problems)
        else:
            _local(Path(location), found, problems)
    # Each problem is one line: a name from the ledger (a record's file name) may hold a line
    # break, which would start a line that reads as another message.
    problems[:] = [visible(problem, keep="\t") for problem in problems]
    # One page per campaign id: a second ledger of an id (a copied folder, another location
    # given) is named and skipped, never merged into or written over the first one's page.
    unique: dict[str, Ledger] = {}
    # The ledger a task wrote is at _campaigns/<its campaign id>: it is the one kept, before any
    # copy of it under another folder name.
    found.sort(key=lambda pair: pair[0].rstrip("/").rsplit("/", 1)[-1] != pair[1].campaign_id)
    for where, ledger in found:
        if ledger.campaign_id in unique:
            problems.append(
                visible(
                    f"{where}: campaign ledger not read: its campaign id {ledger.campaign_id!r} is another ledger's",
                    keep="\t",
                )
            )
        else:
            unique[ledger.campaign_id] = ledger
    return FoundLedgers(sorted(unique.values(), key=lambda ledger: ledger.campaign_id), problems)


def _local(location: Path, ledgers: list[tuple[str, Ledger]], problems: list[str]) -> None:
    top = location / LEDGER_DIR
    if not top.is_dir() or top.is_symlink():
        return
    for folder in sorted(top.iterdir())[:MAX_LEDGERS]:
        if folder.is_symlink() or not folder.is_dir():
            continue
        _add(str(folder), *folder_access(folder), ledgers, problems)


def folder_access(folder: Path) -> tuple[Reader, Lister]:
    """Reading a ledger folder as untrusted input: regular files within the side-file limit,
    never through a link (a linked record is no record), and a file that cannot be read, or an
    entry that is no file (a FIFO, a folder), is a LedgerError naming it."""

    def read(name: str, tail: int = 0) -> bytes | None:
        path = folder / name
        if path.is_symlink() or not os.path.lexists(path):
            return None
        try:
            if not tail:
                return read_bounded(path, MAX_SIDE_FILE_BYTES)
            with open_regular(path, sys.maxsize) as stream:
                stream.seek(max(0, os.fstat(stream.fileno()).st_size - tail - 1))
                return stream.read(tail + 1)
        except (NotReadable, OSError) as exc:
            raise LedgerError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None

    def names(sub: str) -> list[str]:
        inner = folder / sub
        if not inner.is_dir() or inner.is_symlink():
            return []
        listed: list[str] = []
        with os.scandir(inner) as found:
            for entry in found:  # a folder of millions of names is refused, not held
                if len(listed) == MAX_TASK_FILES:
                    raise LedgerError(
                        f"{inner}: more than {MAX_TASK_FILES:,} files; a ledger holds at most {MAX_RECORDS:,} task records, each with its log"
                    )
                listed.append(entry.name)
        return sorted(listed)

    return read, names


def store_access(store: Store, listing: dict[str, dict[str, Any]], base: str) -> tuple[Reader, Lister]:
    """Reading the ledger under ``base`` from one listing of the store: what the listing does
    not hold is missing, an object over the side-file limit is a LedgerError, not a download."""

    def read(name: str, tail: int = 0) -> bytes | None:
        url = f"{base}/{name}"
        info = listing.get(url)
        if info is None:
            return None
        if tail:
            try:
                return store.read_end(url, info["size"], tail + 1)
            except RemoteError as exc:
                raise LedgerError(str(exc)) from None
        if info["size"] > MAX_SIDE_FILE_BYTES:
            raise LedgerError(f"{url}: larger than the limit of {describe_size(MAX_SIDE_FILE_BYTES)}")
        try:
            return store.read(url, info["size"])
        except RemoteError as exc:
            raise LedgerError(str(exc)) from None

    def names(sub: str) -> list[str]:
        start = f"{base}/{sub}/"
        return sorted(url[len(start) :] for url in listing if url.startswith(start) and "/" not in url[len(start) :])

    return read, names


# A run_start line is read up to this size (the reader's limit on any line of a log), in pieces
# (a run_start is a few kB): a first piece, then the rest only when the line goes on.
FIRST_LINE_BYTES = 8 * 1024 * 1024
FIRST_PIECE = 64 * 1024
# What status reads of the runs a ledger names, in all: a hostile ledger naming millions of runs
# (or one run many times) costs at most this much, and the runs past it read as not checked.
RUNS_READ_BUDGET = 256 * 1024 * 1024
LOG_NAME = "events.jsonl"
# A run folder's name as a collector writes it is short; a longer one is no run of it (and a
# file system refuses a name past 255 bytes).
LONGEST_RUN_NAME = 255


def run_start_of(data: bytes | None, where: str) -> dict[str, Any] | str:
    """A log's run_start from its first bytes (``data``, None: no such log), or why there is none."""
    if data is None:
        return f"no log at {where}"
    line, newline, _ = data.partition(b"\n")
    if not newline and len(data) > FIRST_LINE_BYTES:
        return f"{where}: its first line is longer than {describe_size(FIRST_LINE_BYTES)}"
    try:
        start = json.loads(line)
    except (ValueError, RecursionError):
        return f"{where}: its first line is not JSON"
    if not isinstance(start, dict) or start.get("kind") != "run_start":
        return f"{where}: its first line is not a run_start"
    return start


def run_name_problem(name: str) -> str | None:
    """A run named by a ledger is a folder directly under the destination: no '/', '.' or '..'."""
    if not name or "/" in name or name in (".", "..") or "\x00" in name:
        return "not a run folder name"
    if len(name.encode("utf-8", "surrogatepass")) > LONGEST_RUN_NAME:
        return f"not a run folder name (longer than {LONGEST_RUN_NAME} bytes)"
    return None


class _Budget:
    """Bytes of run logs read so far for one ledger; the reads stop past RUNS_READ_BUDGET."""

    def __init__(self) -> None:
        self.spent = 0

    def over(self) -> str | None:
        if self.spent <= RUNS_READ_BUDGET:
            return None
        return f"not checked: status had read {describe_size(RUNS_READ_BUDGET)} of run logs for this ledger already"


def _first_line(read_piece: Callable[[int, int], bytes], budget: _Budget) -> bytes:
    """The first line (and a little after it), read in pieces of growing size up to
    FIRST_LINE_BYTES + 1 bytes; ``read_piece(start, count)``."""
    data = b""
    count = FIRST_PIECE
    while True:
        piece = read_piece(len(data), count)
        budget.spent += len(piece)
        data += piece
        if b"\n" in piece or len(piece) < count or len(data) > FIRST_LINE_BYTES:
            return data
        count = min(count * 4, FIRST_LINE_BYTES + 1 - len(data))


def folder_run_starts(destination: Path) -> StartReader:
    """Each named run's run_start, read from DESTINATION/<run>/events.jsonl (a regular file,
    never through a link; only its first line), within the ledger's read budget."""
    budget = _Budget()

    def read(name: str) -> Any:
        if (problem := run_name_problem(name) or budget.over()) is not None:
            return problem
        folder = destination / name
        path = folder / LOG_NAME
        try:
            if folder.is_symlink() or path.is_symlink() or not path.is_file():
                return run_start_of(None, str(path))
            with open_regular(path, sys.maxsize) as stream:

                def piece(start: int, count: int) -> bytes:
                    stream.seek(start)
                    return stream.read(count)

                return run_start_of(_first_line(piece, budget), str(path))
        except (NotReadable, OSError) as exc:
            return f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})"

    return read


def store_run_starts(store: Store, destination: str) -> StartReader:
    """Each named run's run_start, from the first bytes of DESTINATION/<run>/events.jsonl in
    the store (ranged GETs of its start), within the ledger's read budget."""
    budget = _Budget()

    def read(name: str) -> Any:
        if (problem := run_name_problem(name) or budget.over()) is not None:
            return problem
        url = f"{destination.rstrip('/')}/{name}/{LOG_NAME}"
        try:
            first = store.read_start(url, FIRST_PIECE)
            if first is None:
                return run_start_of(None, url)

            def piece(start: int, count: int) -> bytes:
                if start == 0 and count == FIRST_PIECE:
                    return first
                return store.read_range(url, start, count)

            return run_start_of(_first_line(piece, budget), url)
        except RemoteError as exc:
            return str(exc)

    return read


def planned_tasks(data: bytes, where: str) -> dict[str, Any]:
    """A ledger's planned.json, checked as far as reading the ledger relies on it."""
    try:
        planned = strict_json(data)  # a repeated key is no ledger the campaign wrote
        if not isinstance(planned, dict) or not isinstance(planned.get("tasks"), list):
            raise ValueError("no task list")
        if len(planned["tasks"]) > MAX_TASKS:  # status and the site hold each one
            raise ValueError(f"{len(planned['tasks']):,} tasks, more than the {MAX_TASKS:,} a campaign may plan")
        for task in planned["tasks"]:
            whole_number(task["task"], "task", MAX_INDEX)
        deadline_seconds(planned.get("deadline_s"))
        for key in ("campaign_id", "destination"):
            if key in planned and not isinstance(planned[key], str):
                raise ValueError(f"{key} is not a string")
    except READ_ERRORS as exc:
        raise LedgerError(f"{where}: not a campaign's planned tasks ({exc})") from None
    return planned


def _remote(location: str, store: Store | None, ledgers: list[tuple[str, Ledger]], problems: list[str]) -> None:
    try:
        store = store or Store()
        prefix = f"{location.rstrip('/')}/{LEDGER_DIR}"
        listing = store.list(prefix)
    except RemoteError as exc:
        problems.append(f"{location}: campaign ledgers not read: {exc}")
        return
    ids = sorted({url[len(prefix) + 1 :].split("/", 1)[0] for url in listing if "/" in url[len(prefix) + 1 :]})[
        :MAX_LEDGERS
    ]
    for campaign_id in ids:
        base = f"{prefix}/{campaign_id}"
        _add(base, *store_access(store, listing, base), ledgers, problems)


def _add(where: str, read: Reader, names: Lister, ledgers: list[tuple[str, Ledger]], problems: list[str]) -> None:
    try:
        data = read("planned.json")
        if data is None:
            problems.append(f"{where}: a campaign ledger without planned.json; its tasks are not shown")
            return
        planned = planned_tasks(data, f"{where}/planned.json")
        # The site's pages depend only on what the ledger says, never on the clock: a silent
        # attempt reads as lost only once a later record shows its time limit has passed.
        ledgers.append((where, read_ledger(planned, read, names, now=None)))
    except LedgerError as exc:
        problems.append(f"{where}: campaign ledger not read: {exc}")
