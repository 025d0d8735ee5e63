"""The one interface the commands use to turn what the user typed into run logs.

A location is a local path (a log, a run folder, or a folder of runs: ``local.find_logs``
decides) or an ``s3://`` prefix (``remote.list_logs`` applies the same rule to keys). Each log
comes back as a ``Path`` or a ``RemoteLog``; the contract layer reads either (``open_stream``),
and ``change_key`` tells the site builder whether a log changed without reading it.
"""

from __future__ import annotations

import os

import hashlib
from pathlib import Path
from typing import Union

from reportgen.storage import is_remote
from reportgen.storage.local import (
    DEFAULT_MAX_LOG_BYTES,
    LOG_LIMIT_OPTION,
    MAX_SIDE_FILE_BYTES,
    Found,
    LogEntry,
    Skipped,
    describe_size,
    find_logs,
    read_bounded,
    shown,
)
from reportgen.storage.remote import WHOLE_GET_BYTES, RemoteError, RemoteLog, RemoteObject, Store, list_logs

LogRef = Union[Path, RemoteLog]

__all__ = [
    "LogRef",
    "RemoteError",
    "RemoteLog",
    "Store",
    "find_runs",
    "find_one",
    "change_key",
    "fetched",
    "prefetch",
    "FETCH_BATCH",
]

# Logs read ahead at once by prefetch's callers: with logs of up to WHOLE_GET_BYTES each, at most
# this many times that is held in memory (most logs are tens of KB).
FETCH_BATCH = 32


def find_runs(
    locations: list[str | Path],
    store: Store | None = None,
    follow_symlinks: bool = False,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
) -> Found:
    """Logs at every location, with the annotations each may use, and the entries not read (and why):
    local ones as find_logs decides, then remote ones in listing order (an object larger than
    max_bytes is not fetched)."""
    local = [Path(loc) for loc in locations if not is_remote(loc)]
    remote = [str(loc) for loc in locations if is_remote(loc)]
    found = find_logs(local, follow_symlinks, max_bytes) if local else Found()
    if remote:
        store = store or Store()
        seen: set[str] = set()
        for location in remote:
            for log in list_logs(location, store):
                if log.url in seen:
                    continue
                seen.add(log.url)
                if log.size > max_bytes:
                    found.skipped.append(
                        Skipped(
                            log.url,
                            f"{describe_size(log.size)}, larger than the limit of {describe_size(max_bytes)} (--max-log-size)",
                        )
                    )
                    continue
                notes = log.annotations
                if notes is not None and notes.size > MAX_SIDE_FILE_BYTES:
                    found.skipped.append(
                        Skipped(
                            notes.url,
                            f"{describe_size(notes.size)}, larger than the limit of {describe_size(MAX_SIDE_FILE_BYTES)} for annotations",
                        )
                    )
                    notes = None
                found.logs.append(LogEntry(log, notes))  # type: ignore[arg-type]
        found.warnings += store.warnings
    return found


def find_one(
    location: str | Path,
    store: Store | None = None,
    follow_symlinks: bool = False,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
) -> LogEntry:
    """Exactly one log at a location (a log, or a run folder); ValueError otherwise (saying why
    an entry there was not read)."""
    found = find_runs([location], store, follow_symlinks, max_bytes)
    if not found.logs and len(found.skipped) == 1:
        raise ValueError(f"{found.skipped[0].path}: not read: {found.skipped[0].reason}")
    if len(found.logs) != 1:
        why = "; ".join([s.format() for s in found.skipped] + found.warnings)
        many = (
            f": {', '.join(shown(e.path) for e in found.logs[:3])}{', ...' if len(found.logs) > 3 else ''}; name one run folder"
            if found.logs
            else ""
        )
        raise ValueError(
            f"{location}: expected one run log, found {len(found.logs)}{many}" + (f" ({why})" if why else "")
        )
    return found.logs[0]


def judged_with(entry: LogEntry) -> tuple[Path | None, bool]:
    """The annotations a found log is judged with, and whether to look beside the log for more:
    those beside the log as it was found, so a log reached through a link (--follow-symlinks) is
    judged with the annotations beside the link, never with those beside its target, as the
    site and diff judge it. A log found where it lies keeps the finder's choice and its look."""
    stats = entry.stats
    if stats is None or os.path.dirname(stats.notes_path) == os.path.dirname(os.path.abspath(entry.path)):
        return entry.annotations, True
    notes = Path(stats.notes_path)
    return (notes if os.path.lexists(notes) else None), False


def change_key(entry: LogEntry, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> str:
    """Changes whenever the log or its annotations change; remote logs from the listing alone.

    A local log is read within the size limit (NotReadable or OSError when it cannot be)."""
    log = entry.path
    if isinstance(log, RemoteLog):
        return log.change_key
    digest = hashlib.sha256(read_bounded(log, max_bytes, LOG_LIMIT_OPTION))
    if isinstance(entry.annotations, Path):
        try:
            notes = read_bounded(entry.annotations, MAX_SIDE_FILE_BYTES)
        except OSError:
            notes = b"\0unreadable"
        except Exception:  # NotReadable: the annotations step reports it
            notes = b"\0not read"
        digest.update(b"\0annotations\0" + notes)
    return digest.hexdigest()


def fetched(logs: list[LogEntry]) -> list[str]:
    """Objects the stores behind these logs have read so far (remote only)."""
    stores = {id(e.path.store): e.path.store for e in logs if isinstance(e.path, RemoteLog)}
    return [url for store in stores.values() for url in store.fetched]


def prefetch(logs: list[LogEntry]) -> None:
    """Read the remote logs among these (and their annotations) in parallel, so that the reads
    that follow find them in memory; local logs and logs too large to hold are left to be read
    as they are opened. Errors are held and raised at that read."""
    by_store: dict[int, tuple[Store, list[tuple[str, int]]]] = {}
    for entry in logs:
        log = entry.path
        if not isinstance(log, RemoteLog) or log.size > WHOLE_GET_BYTES:
            continue
        store, urls = by_store.setdefault(id(log.store), (log.store, []))
        urls.append((log.url, log.size))
        if isinstance(entry.annotations, RemoteObject):
            urls.append((entry.annotations.url, entry.annotations.size))
    for store, urls in by_store.values():
        store.fetch(urls)


def forget_prefetched(logs: list[LogEntry]) -> None:
    """Drop what prefetch read and nobody used (a log skipped after all)."""
    for store in {id(e.path.store): e.path.store for e in logs if isinstance(e.path, RemoteLog)}.values():
        store.forget()
