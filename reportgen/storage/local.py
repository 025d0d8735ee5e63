"""Finding logs in local folders: the one place that decides which files are run logs."""

from __future__ import annotations

from pathlib import Path


def find_logs(paths: list[Path]) -> list[Path]:
    """Logs named directly, run directories, or folders searched for *.jsonl logs."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
        elif (path / "events.jsonl").is_file():
            found.append(path / "events.jsonl")
        else:
            found.extend(sorted(path.rglob("*.jsonl")))
    return sorted(dict.fromkeys(p.resolve() for p in found))
