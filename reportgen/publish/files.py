"""The files a published run page links: its Markdown report, its log, its detail table, traces.

A run page must not be a dead end: a reader can take the log itself (the evidence), the
Markdown, the per-cell CSV and the profiler traces. Traces are copied only when they are
regular files inside the run's own folder, no larger than a cap, and still have the sha256 the
log recorded; otherwise the page says why not. Nothing is read from outside the run folder and
nothing is written outside the run's page folder.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from reportgen.render.report import JudgedRun
from reportgen.render.templating import write_bytes_if_changed
from reportgen.storage.local import DEFAULT_MAX_LOG_BYTES, LOG_LIMIT_OPTION, read_bounded

TRACE_CAP_BYTES = 25 * 1024 * 1024  # one trace
RUN_TRACES_CAP_BYTES = 200 * 1024 * 1024  # all the traces one run page copies
SITE_TRACES_CAP_BYTES = 2 * 1024 * 1024 * 1024  # all the traces one site build copies (publish/site.py)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
# The endings a copied trace keeps: types a browser or an object store serves as data, never as
# a page or a script (a profiler writes JSON, gzip, protobuf and Neuron's binaries). Any other
# name gets INERT appended: a file logged as a trace named evil.html or .svg would otherwise be
# served as a page of the site's own origin, outside its pages' content security policy.
TRACE_ENDINGS = frozenset({".json", ".gz", ".pb", ".ntff", ".neff", ".txt", ".csv", ".log", ".bin"})
INERT = ".bin"
# Endings of pages and scripts, which taken inside a name ('x.html.gz') may still type it as one.
PAGE_ENDINGS = frozenset({".html", ".htm", ".xhtml", ".shtml", ".svg", ".svgz", ".xml", ".xsl", ".js", ".mjs"})


@dataclass(frozen=True)
class RunFile:
    """One linked file: ``href`` is relative to the page, or empty when it was not copied."""

    label: str
    href: str
    note: str


def copy_run_files(
    judged: JudgedRun,
    page_dir: Path,
    trace_cap: int = TRACE_CAP_BYTES,
    root: Path | None = None,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
    run_cap: int = RUN_TRACES_CAP_BYTES,
) -> tuple[list[RunFile], list[Path], int]:
    """Copy the log and its traces beside the page; return the links to show, what was written
    (a file that already held these bytes is not) and the bytes of the traces linked.

    Each file is copied once, however many trace entries name it, each within ``trace_cap`` and
    all within ``run_cap`` (a sparse file of a few bytes on disk, listed many times, would
    otherwise be written out in full again and again), each cap held to the size on disk (a log
    that under-states a trace's bytes copies nothing more); a name whose ending a browser could
    serve as a page or a script gets INERT appended (TRACE_ENDINGS).
    Nothing is written outside ``root`` (the site's output folder; default: page_dir). The log is
    read again as every log is read: a regular file within ``max_bytes`` (one swapped since it
    was judged for a FIFO, a device or a larger file is refused, NotReadable, never waited on)."""
    files = [RunFile("Markdown report", "report.md", "the same report as Markdown")]
    if judged.view.details:
        files.append(
            RunFile("Per-cell table", judged.view.details, "one row per planned cell, with the log line of its result")
        )
    written: list[Path] = []
    log = judged.log
    if not isinstance(log, Path):
        files.append(RunFile("Event log", "", f"not copied: it stays in the object store at {log}"))
        return files, written, 0
    data = read_bounded(log, max_bytes, LOG_LIMIT_OPTION)
    if write_bytes_if_changed(page_dir / "events.jsonl", data, root or page_dir):
        written.append(page_dir / "events.jsonl")
    files.append(RunFile("Event log", "events.jsonl", f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}"))
    run_dir = log.resolve().parent
    used: dict[str, int] = {}  # names taken, each with the last number given to a trace of that name
    # Each file copied once, however many entries name it: its link, note, size and sha256.
    copied: dict[Path, tuple[str, str, int, str]] = {}
    left = run_cap
    for cell in judged.run.cells:
        for profile in cell.profiles:
            for trace in profile.traces:
                label = f"Trace of {cell.case} ({trace.kind})"
                found = _trace_source(run_dir, trace.path)
                if isinstance(found, str):
                    files.append(RunFile(label, "", found))
                    continue
                if found in copied:
                    link, why, size, sha256 = copied[found]
                    if (trace.bytes, trace.sha256) != (size, sha256):  # this entry says other bytes of it
                        why = f"not copied: {trace.path} is linked above with {size} bytes, sha256 {sha256}; this entry records {trace.bytes} bytes, sha256 {trace.sha256}"
                        link = ""
                    files.append(RunFile(label, link, why))
                    continue
                size = found.stat().st_size
                if size != trace.bytes:
                    files.append(RunFile(label, "", _not_as_logged(trace.path, size, trace.bytes, trace.sha256)))
                    continue
                if size > left:
                    files.append(RunFile(label, "", _over_cap(size, trace.sha256)))
                    continue
                link, why, wrote = _copy_trace(
                    found, trace.path, size, trace.sha256, page_dir, used, trace_cap, root or page_dir
                )
                if link:
                    if wrote:
                        written.append(page_dir / link)
                    copied[found] = (link, why, size, trace.sha256)
                    left -= size
                files.append(RunFile(label, link, why))
    return files, written, run_cap - left


def _not_as_logged(logged: str, size: int, claimed: int, sha256: str) -> str:
    return f"not copied: {logged} holds {size} bytes, not the {claimed} the log recorded; sha256 {sha256}"


def _over_cap(size: int, sha256: str) -> str:
    return (
        f"not copied: {size / 1e6:.1f} MB more would take the traces copied over their cap (at most "
        f"{RUN_TRACES_CAP_BYTES / 1e6:.0f} MB a run, {SITE_TRACES_CAP_BYTES / 1e9:.1f} GB a site build); sha256 {sha256}"
    )


def _trace_source(run_dir: Path, logged: str) -> Path | str:
    """The regular file inside the run folder that a trace entry names, or why there is none."""
    try:
        resolved = (run_dir / logged).resolve(strict=True)
    except (OSError, RuntimeError):
        return f"not copied: {logged} is not in the run folder"
    if not resolved.is_relative_to(run_dir) or not resolved.is_file():
        return f"not copied: {logged} is not a regular file inside the run folder"
    return resolved


def _copy_trace(
    resolved: Path, logged: str, size: int, sha256: str, page_dir: Path, used: dict[str, int], cap: int, root: Path
) -> tuple[str, str, bool]:
    """The link to the trace's copy and its note ("" and why not, when not copied), and whether
    its bytes were written (False: the copy already held them). ``size``: its size on disk."""
    if size > cap:
        return "", f"not copied: {size / 1e6:.1f} MB is over the {cap / 1e6:.0f} MB cap; sha256 {sha256}", False
    data = resolved.read_bytes() if resolved.stat().st_size <= cap else b""
    if hashlib.sha256(data).hexdigest() != sha256:
        return "", f"not copied: {logged} no longer has the sha256 the log recorded", False
    # The logged name, its last 100 characters (a file name stays far below the 255 a file
    # system takes), numbered when another trace took it: traces of many cells may share one
    # name in folders of their own.
    base = _SAFE_NAME.sub("-", Path(logged).name)[-100:].strip("-.") or "trace"
    # The last ending decides the type most servers give; an inner one a page's or a script's
    # may decide it for others ('x.html.gz' typed a page by mimetypes).
    endings = [ending.lower() for ending in Path(base).suffixes]
    if not endings or endings[-1] not in TRACE_ENDINGS or any(e in PAGE_ENDINGS for e in endings):
        base += INERT
    name, number = base, used.get(base, 1)
    while name in used:
        number += 1
        name = f"{number}-{base}"
    used[base] = number
    used.setdefault(name, 1)
    wrote = write_bytes_if_changed(page_dir / "traces" / name, data, root)
    return f"traces/{name}", f"{len(data)} bytes, sha256 {sha256}", wrote
