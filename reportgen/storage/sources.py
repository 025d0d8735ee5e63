"""The one interface the commands use to turn what the user typed into run logs.

A location is a local path (a log, a run folder, or a folder of runs: ``local.find_logs``
decides) or an ``s3://`` prefix (``remote.list_logs`` applies the same rule to keys). Each log
comes back as a ``Path`` or a ``RemoteLog``; the contract layer reads either (``open_stream``),
and ``change_key`` tells the site builder whether a log changed without reading it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Union

from reportgen.storage import is_remote
from reportgen.storage.local import find_logs
from reportgen.storage.remote import RemoteError, RemoteLog, Store, list_logs

LogRef = Union[Path, RemoteLog]

__all__ = ["LogRef", "RemoteError", "RemoteLog", "Store", "find_runs", "find_one", "change_key", "fetched"]


def find_runs(locations: list[str | Path], store: Store | None = None) -> list[LogRef]:
    """Logs at every location: local ones as find_logs returns them, then remote ones in listing order."""
    local = [Path(loc) for loc in locations if not is_remote(loc)]
    remote = [str(loc) for loc in locations if is_remote(loc)]
    found: list[LogRef] = list(find_logs(local)) if local else []
    if remote:
        store = store or Store()
        seen: set[str] = set()
        for location in remote:
            for log in list_logs(location, store):
                if log.url not in seen:
                    seen.add(log.url)
                    found.append(log)
    return found


def find_one(location: str | Path, store: Store | None = None) -> LogRef:
    """Exactly one log at a location (a log, or a run folder); ValueError otherwise."""
    logs = find_runs([location], store)
    if len(logs) != 1:
        raise ValueError(f"{location}: expected one run log, found {len(logs)}")
    return logs[0]


def change_key(log: LogRef, annotations: Path | None) -> str:
    """Changes whenever the log or its annotations change; remote logs from the listing alone."""
    if isinstance(log, RemoteLog):
        return log.change_key
    digest = hashlib.sha256(log.read_bytes())
    if annotations is not None:
        digest.update(b"\0annotations\0" + annotations.read_bytes())
    return digest.hexdigest()


def fetched(logs: list[LogRef]) -> list[str]:
    """Objects the stores behind these logs have read so far (remote only)."""
    stores = {id(log.store): log.store for log in logs if isinstance(log, RemoteLog)}
    return [url for store in stores.values() for url in store.fetched]
