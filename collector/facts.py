"""Facts about the host, each ``{"value", "source"}`` when read or ``{"value": None,
"unknown_reason"}`` when it could not be: the helpers environment.py and every adapter use."""

from __future__ import annotations

import importlib.metadata as metadata
import socket
import subprocess
from pathlib import Path
from typing import Any

Fact = dict[str, Any]


def known(value: Any, source: str) -> Fact:
    return {"value": str(value), "source": source}


def unknown(reason: str) -> Fact:
    return {"value": None, "unknown_reason": reason}


def dist_version(name: str) -> Fact:
    try:
        return known(metadata.version(name), f"package metadata of {name}")
    except metadata.PackageNotFoundError:
        return unknown(f"{name} is not installed")


def read_text_file(path: str, what: str) -> Fact:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        return unknown(f"{path} unreadable: {exc.strerror}")
    return known(text, path) if text else unknown(f"{path} is empty ({what})")


def run_command(argv: list[str], timeout: float = 15) -> Fact:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return unknown(f"{argv[0]} not found")
    except subprocess.TimeoutExpired:
        return unknown(f"{' '.join(argv)} timed out after {timeout:.0f}s")
    output = (done.stdout or done.stderr).strip()
    if done.returncode != 0 or not output:
        return unknown(f"{' '.join(argv)} exited {done.returncode}: {output[:200]}")
    return known(output.splitlines()[0], " ".join(argv))


def os_release() -> Fact:
    try:
        lines = Path("/etc/os-release").read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        return unknown(f"/etc/os-release unreadable: {exc.strerror}")
    fields = dict(line.split("=", 1) for line in lines if "=" in line)
    name = fields.get("PRETTY_NAME", "").strip('"')
    return known(name, "/etc/os-release PRETTY_NAME") if name else unknown("no PRETTY_NAME in /etc/os-release")


def version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


# What a campaign's task script (campaign/task.sh) exports about the task it runs.
_TASK_VARIABLES = {
    "campaign": "MIGRATION_RECORD_CAMPAIGN",
    "campaign_id": "MIGRATION_RECORD_CAMPAIGN_ID",
    "environment": "MIGRATION_RECORD_ENVIRONMENT",
    "task_index": "MIGRATION_RECORD_TASK_INDEX",
    "scheduler": "MIGRATION_RECORD_SCHEDULER",
    "job_id": "MIGRATION_RECORD_JOB_ID",
    "attempt": "MIGRATION_RECORD_ATTEMPT",
}


def scheduled_task(environ: Any) -> dict[str, Any] | None:
    """The campaign task running this collector, or None when no campaign started it. Values
    are recorded as the task script set them (a bad task index is left out, not guessed)."""
    if not environ.get("MIGRATION_RECORD_CAMPAIGN") or not environ.get("MIGRATION_RECORD_CAMPAIGN_ID"):
        return None
    task: dict[str, Any] = {key: environ.get(name) or None for key, name in _TASK_VARIABLES.items()}
    index = task["task_index"]
    task["task_index"] = (
        int(index) if index is not None and index.isascii() and index.isdigit() and len(index) < 12 else None
    )
    task["node"] = socket.gethostname() or None
    return task
