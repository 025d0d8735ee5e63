"""Campaign ledgers found at the locations a site is built from (``_campaigns/<id>/``).

A campaign task writes its ledger beside the runs it delivers (campaign/task.sh; the format is
campaign/ledger.py, read here through that module's own reader). A location that is a folder or
an ``s3://`` prefix may hold ledgers directly under it; each file is read within the size limit
for side files, and one that cannot be read is reported, never a traceback.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaign.ledger import LEDGER_DIR, Ledger, LedgerError, read_ledger
from reportgen.storage import is_remote
from reportgen.storage.local import MAX_SIDE_FILE_BYTES, NotReadable, read_bounded
from reportgen.storage.remote import RemoteError, Store

MAX_LEDGERS = 1000


@dataclass(frozen=True)
class FoundLedgers:
    ledgers: list[Ledger]
    problems: list[str]


def find_ledgers(locations: list[str | Path], store: Store | None = None) -> FoundLedgers:
    ledgers: list[Ledger] = []
    problems: list[str] = []
    for location in locations:
        if is_remote(location):
            _remote(str(location), store, ledgers, problems)
        else:
            _local(Path(location), ledgers, problems)
    ledgers.sort(key=lambda ledger: ledger.campaign_id)
    return FoundLedgers(ledgers, problems)


def _local(location: Path, ledgers: list[Ledger], problems: list[str]) -> None:
    top = location / LEDGER_DIR
    if not top.is_dir() or top.is_symlink():
        return
    for folder in sorted(top.iterdir())[:MAX_LEDGERS]:
        if folder.is_symlink() or not folder.is_dir():
            continue

        def read(name: str, folder: Path = folder) -> bytes | None:
            path = folder / name
            if not path.is_file() or path.is_symlink():
                return None
            try:
                return read_bounded(path, MAX_SIDE_FILE_BYTES)
            except (NotReadable, OSError) as exc:
                raise LedgerError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None

        def names(sub: str, folder: Path = folder) -> list[str]:
            inner = folder / sub
            if not inner.is_dir() or inner.is_symlink():
                return []
            with os.scandir(inner) as found:
                return sorted(entry.name for entry in found)

        _add(str(folder), read, names, ledgers, problems)


def _remote(location: str, store: Store | None, ledgers: list[Ledger], problems: list[str]) -> None:
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

        def read(name: str, base: str = base) -> bytes | None:
            url = f"{base}/{name}"
            info = listing.get(url)
            if info is None:
                return None
            if info["size"] > MAX_SIDE_FILE_BYTES:
                raise LedgerError(f"{url}: larger than {MAX_SIDE_FILE_BYTES} bytes")
            try:
                return store.read(url)
            except RemoteError as exc:
                raise LedgerError(str(exc)) from None

        def names(sub: str, base: str = base) -> list[str]:
            start = f"{base}/{sub}/"
            return sorted(
                url[len(start) :] for url in listing if url.startswith(start) and "/" not in url[len(start) :]
            )

        _add(base, read, names, ledgers, problems)


def _add(where: str, read: Any, names: Any, ledgers: list[Ledger], problems: list[str]) -> None:
    try:
        data = read("planned.json")
        if data is None:
            problems.append(f"{where}: a campaign ledger without planned.json; its tasks are not shown")
            return
        try:
            planned = json.loads(data)
            if not isinstance(planned, dict) or not isinstance(planned.get("tasks"), list):
                raise ValueError("no task list")
            for task in planned["tasks"]:
                int(task["task"])
        except (ValueError, KeyError, TypeError) as exc:
            raise LedgerError(f"{where}/planned.json: not a campaign's planned tasks ({exc})") from None
        # The site's pages depend only on what the ledger says, never on the clock: a silent
        # attempt reads as lost only once a later record shows its time limit has passed.
        ledgers.append(read_ledger(planned, read, names, now=None))
    except LedgerError as exc:
        problems.append(f"{where}: campaign ledger not read: {exc}")
