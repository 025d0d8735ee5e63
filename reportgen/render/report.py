"""`reportgen report`: one log (and its annotations) to report.html and report.md.

Two phases, as mkdocs builds: gather everything (read, validate, model, judge, view), then
write. Nothing is written for a log that does not validate.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
import io
from typing import Any, Callable

from reportgen.model.annotations import Annotation, AnnotationError, Annotations, find_annotations, load_annotations
from reportgen.judge.disposition import Disposition
from reportgen.judge.judgement import Judgement, judge
from reportgen.judge.nextstep import shell_path
from reportgen.render.sections.common import DETAILS_NAME
from reportgen.render.templating import (
    ASSET_SOURCES,
    Assets,
    asset_names,
    csv_text,
    inline_assets,
    render_html,
    render_md,
    write_assets,
)
from reportgen.model.runmodel import NotARun, RunModel, read_run
from reportgen.contract.validation import paused_gc
from reportgen.render.view import DETAIL_COLUMNS, ReportView, Row, build_view, detail_rows
from reportgen.storage.sources import LogRef
from reportgen.storage.local import (
    DEFAULT_MAX_LOG_BYTES,
    LogChanged,
    inspection_note,
    is_inspection_log,
    open_regular,
    refuse_unwritable,
    write_inside,
)

EXIT_OK, EXIT_INVALID, EXIT_REFUSED = 0, 1, 3  # 2 (usage) is click's own
FAIL_ON = {"blocked": ("blocked",), "change": ("blocked", "change")}


class ReportInputError(ValueError):
    """The log or annotations cannot be reported on; the message lists the problems."""


class AnnotationsInvalid(ReportInputError):
    """The log is a valid run, its annotations are not."""


class InspectionLogGiven(ReportInputError):
    """The log is an inspection log (python -m collector inspect), not a run log."""


@dataclass
class JudgedRun:
    """A run gathered and judged: everything a page needs, before anything is written."""

    log: LogRef
    run: RunModel
    notes: dict[str, Annotation]
    disposition: Disposition
    view: ReportView
    annotations: Annotations | None = None
    judgement: Judgement | None = None


@dataclass
class ReportResult:
    disposition: Disposition
    written: list[Path] = field(default_factory=list)
    exit_code: int = EXIT_OK
    removed: list[Path] = field(default_factory=list)  # an earlier report's files this one does not write
    # Files by a report's names this one does not write and did not remove: no record says an
    # earlier report here wrote them as they are (a user's own report.md, or one edited since).
    left: list[Path] = field(default_factory=list)


def read_judged(
    log: LogRef, annotations: Any = None, max_bytes: int = DEFAULT_MAX_LOG_BYTES, beside: bool = True
) -> tuple[RunModel, Annotations, Disposition]:
    """``read_judgement`` for callers that need only the disposition."""
    run, applied, judgement = read_judgement(log, annotations, max_bytes, beside)
    return run, applied, judgement.disposition


def read_judgement(
    log: LogRef,
    annotations: Any = None,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
    beside: bool = True,
    site: bool = False,
    rerun: str = "reportgen report",
) -> tuple[RunModel, Annotations, Judgement]:
    """Read, validate, model and judge one log, without a view; raises ReportInputError with
    every problem. Without ``annotations``, the annotations.toml beside the log is used when
    ``beside`` is set (callers that found the log through storage.local pass the file it allowed).
    ``site``: judged for a site's page, whose next step names the log where it was read (the
    page is not beside it) and rebuilds the site; else ``rerun`` is the command it names to show
    an edit's result (the report command with its log and --out, where build_report knows them)."""
    # read_run reads a RemoteLog too; its annotation (model/runmodel.py) says only a path.
    reading, builder = read_run(log, max_bytes)  # type: ignore[arg-type]
    if not reading.valid and isinstance(log, Path) and is_inspection_log(log, max_bytes):
        raise InspectionLogGiven(inspection_note(log))  # one line, not one error per event
    if not reading.valid:
        shown = [p.format() for p in reading.errors[:20]]
        more = reading.error_count - len(shown)
        raise ReportInputError("\n".join(shown + ([f"... and {more} more errors"] if more else [])))
    try:
        run = builder.build(reading)
    except NotARun as exc:
        raise ReportInputError(str(exc)) from None
    try:
        applied = load_annotations(
            annotations if annotations is not None or not beside else find_annotations(log), run.cells
        )
    except AnnotationError as exc:
        raise AnnotationsInvalid(str(exc)) from None
    try:
        # The next step names the log as `reportgen annotate` can find it from where the command
        # ran (a log in S3 by its file name: annotate writes beside a local one only).
        if site:
            return run, applied, judge(run, applied, _source_name(log), "reportgen site")
        return run, applied, judge(run, applied, _source_name(log), rerun)
    except LogChanged as exc:  # an event read again from a log changed since it was checked
        raise ReportInputError(str(exc)) from None


def _relative(path: Path) -> str | None:
    """A path relative to the folder the command ran in, where it lies inside it; else None."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return None


def _source_name(log: LogRef) -> str | None:
    """A local log as a page names it for `reportgen annotate`: the source the command read (a
    site page's own copy is not the one the next build reads), relative to the folder the
    command ran in when it lies inside it; None (its file name) for a log outside it (a page
    shows no path of the builder's machine) or in S3."""
    # Outside it: its file name, no path of the builder's machine.
    return _relative(log) if isinstance(log, Path) else None


def judge_log(
    log: LogRef,
    annotations: Any = None,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
    beside: bool = True,
    inspection: Path | None = None,
    site: bool = False,
    rerun: str = "reportgen report",
) -> JudgedRun:
    """Read, validate, model and judge one log, and build its report view; with ``inspection``
    (an inspection log of its plan), its predicted fallback is set against the observed one."""
    inspected = _inspection(inspection)
    run, applied, judgement = read_judgement(log, annotations, max_bytes, beside, site, rerun)
    disposition = judgement.disposition
    try:
        view = build_view(run, judgement, applied)
    except LogChanged as exc:  # an event read again from a log changed since it was checked
        raise ReportInputError(str(exc)) from None
    if inspected is not None and run.start is not None and inspected.start.workload != run.start.workload:
        # As plan-check refuses it: a prediction for another workload's graphs compares nothing.
        raise ReportInputError(
            f"{inspection}: inspects the workload {inspected.start.workload!r}, not this run's {run.start.workload!r}"
        )
    if inspected is not None:
        from reportgen.judge.backend_docs import load_backend_docs
        from reportgen.judge.prediction import predicted_against_observed

        target = disposition.scope.intended_target or disposition.scope.target
        try:
            docs = load_backend_docs(target)
        except KeyError:
            view.predicted = [
                Row(
                    "predicted CPU fallback",
                    f"no constraint data for {target}: nothing is predicted",
                    "reportgen/judge/constraints",
                )
            ]
        else:
            view.predicted = [Row(r.label, r.value, r.source) for r in predicted_against_observed(run, inspected, docs)]
    return JudgedRun(log, run, applied.by_case, disposition, view, applied, judgement)


def _inspection(path: Path | None) -> Any:
    if path is None:
        return None
    from reportgen.contract.inspection import InspectionError, read_inspection

    try:
        return read_inspection(path)
    except InspectionError as exc:
        raise ReportInputError(f"unreadable inspection: {exc}") from None


SUMMARY_NAME = "report-summary.md"
SUMMARY_LIMIT = 60_000  # characters; a pull-request comment holds at most 65,536


@dataclass(frozen=True)
class SummaryCaps:
    reasons: int
    cells: int
    rows: int
    text: int


# Tried in order until the summary fits: the first is what a normal run shows.
SUMMARY_CAPS = (
    SummaryCaps(30, 20, 60, 600),
    SummaryCaps(15, 8, 25, 300),
    SummaryCaps(8, 4, 10, 160),
    SummaryCaps(3, 2, 4, 80),
)


def render_summary(view: ReportView) -> str:
    """The Markdown summary for a pull request: under SUMMARY_LIMIT characters for any log."""
    for caps in SUMMARY_CAPS:
        text = render_md("report-summary.md.j2", view=view, caps=caps)
        if len(text) <= SUMMARY_LIMIT:
            return text
    note = "\n\n… cut here to fit a pull-request comment; the full report has everything.\n"
    return text[: SUMMARY_LIMIT - len(note)] + note


MD_LIMIT = 64_000  # characters: report.md fits a pull request's 65,536 with room for a line of its own


@dataclass(frozen=True)
class MarkdownCaps:
    rows: int  # per table (matrix, inputs, fallback, compile, timings, ...)
    problems: int  # problem cells, explanations, warnings, training cells, verdict groups


# Tried in order until report.md fits MD_LIMIT: the first shows what the HTML page shows.
MD_CAPS = (MarkdownCaps(300, 300), MarkdownCaps(100, 40), MarkdownCaps(40, 15), MarkdownCaps(15, 6), MarkdownCaps(5, 2))


def render_report_md(context: dict[str, Any]) -> str:
    """report.md under MD_LIMIT characters for any log: tables and problem lists shortened
    (each says how many more, and that every cell is in details.csv), then, at the very last,
    the text cut with a note."""
    for caps in MD_CAPS:
        text = render_md("report.md.j2", caps=caps, **context)
        if len(text) <= MD_LIMIT:
            return text
    details = context["view"].details or "details.csv"
    note = (
        f"\n\n… cut here to stay under a pull request's 65,536 characters; report.html and {details} have everything.\n"
    )
    return text[: MD_LIMIT - len(note)] + note


def render_report(
    judged: JudgedRun,
    out_dir: Path,
    formats: tuple[str, ...],
    assets: Assets,
    root: str = "",
    nav: list[tuple[str, str]] | None = None,
    html_name: str = "report.html",
    files: list[Any] | None = None,
    related: Any = None,
) -> list[tuple[Path, bytes]]:
    """The files of one report, rendered and encoded but not written: (path, bytes) pairs.
    ``related``: on a site, the run's previous and next run and its comparisons (publish.site_links)."""
    view = judged.view
    context = {"view": view, "root": root, "assets": assets, "nav": nav or [], "files": files or [], "related": related}
    pages: list[tuple[Path, str | bytes]] = []
    if view.details:
        pages.append((out_dir / view.details, details_table(judged)))
    if "html" in formats:
        pages.append((out_dir / html_name, render_html("report.html.j2", **context)))
    if "md" in formats:
        pages.append((out_dir / "report.md", render_report_md(context)))
    if "md-summary" in formats:
        pages.append((out_dir / SUMMARY_NAME, render_summary(view)))
    return [(path, text if isinstance(text, bytes) else text.encode("utf-8")) for path, text in pages]


def write_report(judged: JudgedRun, out_dir: Path, formats: tuple[str, ...]) -> list[Path]:
    """Write report.html, report.md, details.csv (as ``formats`` ask) and the assets the page
    links. Every page is made, and every place it goes checked, before anything is written."""
    return _write_report(judged, out_dir, formats)[0]


def report_inputs(judged: JudgedRun, inspection: Path | None = None) -> list[Path]:
    """The files a report read that its output must never replace: the log, the annotations
    (given or found beside the log) and the inspection log (a report.md given as --annotations
    was overwritten with the page, the owner's verdicts gone)."""
    found = [judged.log] if isinstance(judged.log, Path) else []
    if judged.annotations is not None and judged.annotations.path:
        found.append(Path(judged.annotations.path))
    return found + ([inspection] if inspection is not None else [])


def _write_report(
    judged: JudgedRun, out_dir: Path, formats: tuple[str, ...], inputs: list[Path] | None = None
) -> tuple[list[Path], set[str]]:
    """write_report's files written, and the names (relative to out_dir) of every file this
    report is made of, written now or left as they were (the same bytes). ``inputs``: the files
    it read (report_inputs; default: those the judged run names)."""
    assets = asset_names() if "html" in formats else Assets("", "")
    pages = render_report(judged, out_dir, formats, assets)
    inputs = report_inputs(judged) if inputs is None else inputs
    # The record remove_stale writes after them is checked with them (RECORD_NAME).
    places = [path for path, _ in pages] + [out_dir / name for name in (*assets.linked, RECORD_NAME)]
    refuse_unwritable(out_dir, places, inputs)
    if assets.linked:
        write_assets(out_dir)  # under the names asset_names gave
    written = [path for path, data in pages if write_inside(out_dir, path, data)]
    return written, {path.name for path, _ in pages} | set(assets.linked)


# The files `reportgen report` writes into --out, by name: a later report into the same folder
# removes those it does not write itself, so the folder never holds two runs' files side by side.
REPORT_FILES = ("report.html", "report.md", SUMMARY_NAME, DETAILS_NAME)
ASSETS_FOLDER = "assets"
# The assets write_assets copies: each source's stem, a 10-digit content hash, its extension.
_ASSET_NAME = re.compile(
    "^(?:" + "|".join(re.escape(s.rpartition(".")[0]) for s in ASSET_SOURCES) + r")-[0-9a-f]{10}\.(?:css|js)$"
)


# Beside a report, what it wrote: each of REPORT_FILES it wrote with its sha256. A later report
# into the same folder removes a file it does not write only where this record says an earlier
# report wrote it, byte for byte as it is now: a user's own report.md there is never removed.
RECORD_NAME = ".reportgen-report.json"
RECORD_MAX_BYTES = 64 * 1024


def _read_regular(path: Path, read: Callable[[io.BufferedReader, int], Any]) -> Any:
    """``read(stream, size)`` of a regular file; None for a link (never followed), anything else,
    or a file that cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        try:
            st = os.fstat(fd)
            return read(stream, st.st_size) if stat.S_ISREG(st.st_mode) else None
        except OSError:
            return None


def _regular_bytes(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes; None for anything else."""
    data = _read_regular(path, lambda stream, size: stream.read(limit + 1))
    return None if data is None or len(data) > limit else data


def _sha256(path: Path) -> str | None:
    """A regular file's sha256, read in pieces; None for anything else, or a file larger than any
    page a report writes (MAX_PAGE_BYTES: it is then left, never read whole into memory)."""
    return _read_regular(
        path, lambda stream, size: hashlib.file_digest(stream, "sha256").hexdigest() if size <= MAX_PAGE_BYTES else None
    )


def _recorded(out_dir: Path) -> dict[str, str]:
    """The earlier report's record in out_dir ({} when there is none, or it is no regular file
    of at most RECORD_MAX_BYTES holding such a record: a link is not followed)."""
    raw = _regular_bytes(out_dir / RECORD_NAME, RECORD_MAX_BYTES)
    try:
        data = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def remove_stale(out_dir: Path, kept: set[str], record: bool = True) -> tuple[list[Path], list[Path]]:
    """Remove the files of an earlier report in out_dir that are not in ``kept`` (names relative
    to out_dir): report.html, report.md, report-summary.md and details.csv where the earlier
    report's record (RECORD_NAME) holds them as they are, and the assets/ files write_assets
    names (named by their content), nothing else. Only regular files are removed; a link is
    never followed (assets/ itself included) and never removed. An asset another page in out_dir
    still links (a compare.html written there) stays. Then (with ``record``) records what this
    report wrote; a single-file report writes nothing beside its page (an earlier record goes),
    so a later report leaves that page where it finds it.
    Returns what was removed, and the files by a report's name it left (no record of them)."""
    removed: list[Path] = []
    left: list[Path] = []
    earlier = _recorded(out_dir)
    for name in REPORT_FILES:
        if name in kept or not os.path.lexists(out_dir / name):
            continue
        if name in earlier and earlier[name] == _sha256(out_dir / name) and _remove_file(out_dir / name):
            removed.append(out_dir / name)
        else:
            left.append(out_dir / name)
    if record:
        files = {name: sha for name in REPORT_FILES if name in kept and (sha := _sha256(out_dir / name))}
        text = json.dumps({"files": files}, indent=1, sort_keys=True) + "\n"
        write_inside(out_dir, out_dir / RECORD_NAME, text.encode())
    else:  # the earlier record names files this page replaced or removed: it goes with them
        _remove_file(out_dir / RECORD_NAME)
    return removed + _remove_stale_assets(out_dir, kept), left


def _remove_stale_assets(out_dir: Path, kept: set[str]) -> list[Path]:
    removed: list[Path] = []
    folder = out_dir / ASSETS_FOLDER
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return removed  # none there, or a link or a file by that name: not ours to look into
    try:
        stale = sorted(
            name for name in os.listdir(fd) if _ASSET_NAME.match(name) and f"{ASSETS_FOLDER}/{name}" not in kept
        )
        linked = _linked_elsewhere(out_dir, stale) if stale else set()
        for name in stale:
            if name not in linked and _remove_file(Path(name), dir_fd=fd):
                removed.append(folder / name)
        left = os.listdir(fd)
    finally:
        os.close(fd)
    if removed and not left:
        with contextlib.suppress(OSError):
            os.rmdir(folder)  # empty now: it held this tool's assets only
    return removed


def _remove_file(path: Path, dir_fd: int | None = None) -> bool:
    """Unlink path when it is a regular file (lstat: a link is left alone); True when removed."""
    try:
        if not stat.S_ISREG(os.lstat(path, dir_fd=dir_fd).st_mode):
            return False
        os.unlink(path, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def _linked_elsewhere(out_dir: Path, names: list[str]) -> set[str]:
    """Those of the asset names that another page directly in out_dir links (regular files only)."""
    linked: set[str] = set()
    try:
        pages = [e for e in os.scandir(out_dir) if e.name.endswith(".html") and e.name not in REPORT_FILES]
    except OSError:
        return linked
    budget = MAX_PAGE_BYTES  # over every page: forty large pages took a report most of a minute
    for entry in pages:
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            with open_regular(entry.path, budget, None) as stream:
                text = stream.read()
        except Exception:  # unreadable or past the budget: keep every asset, as if linked by all
            return set(names)
        budget -= len(text)
        linked.update(name for name in names if f"{ASSETS_FOLDER}/{name}".encode() in text)
    return linked


MAX_PAGE_BYTES = 256 * 1024 * 1024


def warm_stability(judged: JudgedRun) -> dict[str, str]:
    """Per timed cell, its warm series' stability as the judge classified it (details.csv's column)."""
    return {j.case: j.verdict for j in judged.judgement.timed} if judged.judgement is not None else {}


def details_table(judged: JudgedRun) -> bytes:
    """details.csv's bytes: every cell (``detail_rows``, as csv_text writes them), each timing
    beside the judge's words for it (its warm series' stability, and whether the run's
    performance acceptance is stopped)."""
    stability = warm_stability(judged)
    columns = judged.judgement.generation_columns if judged.judgement is not None else {}
    rows = detail_rows(judged.run, stability, bool(judged.disposition.performance_stopped), columns)
    return csv_text([DETAIL_COLUMNS, *rows]).encode("utf-8")


def build_report(
    log: LogRef,
    out_dir: Path,
    formats: tuple[str, ...] = ("html", "md"),
    annotations: Path | None = None,
    fail_on: str | None = None,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
    inspection: Path | None = None,
    single_file: bool = False,
    beside: bool = True,
) -> ReportResult:
    """``single_file``: report.html alone, its stylesheet and script written
    into it (a file to attach to a ticket); nothing else is written. ``beside``: without
    ``annotations``, look for them beside the log (read_judgement)."""
    with paused_gc():
        # The next step's command to show an edit's result: this one's log and --out (a bare
        # `reportgen report` wrote nothing anywhere a user would look).
        rerun = "reportgen report"
        if isinstance(log, Path):  # named as the page names the log: no path of the builder's machine
            out = _relative(out_dir)
            rerun += f" {shell_path(_source_name(log) or log.name)}" + (f" --out {shell_path(out)}" if out else "")
        judged = judge_log(log, annotations, max_bytes, beside, inspection=inspection, rerun=rerun)
        if single_file:
            assets = inline_assets()
            if judged.view.details:  # the full table travels inside the page, as a download link
                table = base64.b64encode(details_table(judged)).decode("ascii")
                assets = replace(
                    assets, inline={**(assets.inline or {}), "details": f"data:text/csv;charset=utf-8;base64,{table}"}
                )
            pages = [
                (path, data)
                for path, data in render_report(judged, out_dir, ("html",), assets)
                if path.name == "report.html"
            ]
            refuse_unwritable(out_dir, [path for path, _ in pages], report_inputs(judged, inspection))
            written = [path for path, data in pages if write_inside(out_dir, path, data)]
            kept = {path.name for path, _ in pages}
        else:
            written, kept = _write_report(judged, out_dir, formats, report_inputs(judged, inspection))
    removed, left = remove_stale(out_dir, kept, record=not single_file)
    refused = fail_on is not None and judged.disposition.outcome in FAIL_ON[fail_on]
    return ReportResult(judged.disposition, written, EXIT_REFUSED if refused else EXIT_OK, removed, left)
