"""`reportgen site`: a static site of many runs, with workload history and run-to-run changes.

Layout of the output directory::

    index.html                      runs per target, totals, the newest runs (short labels), and per
                                    workload plan-check's verdict until a run on its target exists; its script lists every run from
    index-rows-<hash>.js            the row data (site_rows.py): sortable, filterable (state in the URL)
    index.csv, index.json           the same table for spreadsheets and scripts
    index.parquet                   one row per run and cell, for DuckDB, Athena, pandas (cell_index.py)
    runs/<run-slug>/index.html      the run's report (report.md beside it)
    workloads/<slug>/index.html     history of one workload and what changed between runs
    campaigns/<slug>/index.html     every task a campaign planned (from its ledger), runs linked
    assets/                         one copy of the shared CSS and JS
    .reportgen-state.json           what was built from which input, for incremental rebuilds
    .reportgen-quick.json           what stat said about every input (and the state), for the no-op check

Three steps. First a no-op check (site_quick.py): when stat says that no log, annotations
file, searched folder, template or configuration changed since the last build, and its pages are
still there, the build returns without reading a log or rendering anything. Otherwise gather
(read and judge only the logs that changed since the last build, a log whose stat matches the
recorded one keeping its recorded content hash; reuse the stored summaries of the rest), then
write: a run page is rendered only for a new or changed run, a workload page only when its
runs (or their comparisons) changed, the index always, and a file is written only when its
bytes change. So adding one run renders that run's page, its workload page and the index, and
a full rebuild is byte-identical to the previous one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

from reportgen import __version__
from reportgen.contract.events import INT64_MAX
from reportgen.contract.times import unplaceable
from reportgen.judge.timing_stability import (
    FLAG as STABILITY_FLAG,
    SYMBOL as STABILITY_SYMBOL,
    UNCLASSIFIED_SYMBOL,
    series_flag,
)
from collector.facts import version_tuple
from reportgen.judge.changes import is_setting_flag
from reportgen.judge.backend_docs import backend_name, docs_for_family, load_backend_docs, targets
from collector.descriptors import default_target
from reportgen.judge.plancheck import CLASSES as PLAN_CHECK_HEADLINES
from reportgen.publish.diff import RunDiff, diff_runs, largest_changes, where
from reportgen.render.templating import (
    Assets,
    asset_names,
    csv_text,
    render_html,
    write_assets,
    write_text,
)
from reportgen.render.report import (
    AnnotationsInvalid,
    InspectionLogGiven,
    JudgedRun,
    ReportInputError,
    judge_log,
    render_report,
)
from reportgen.model.runmodel import STATUS_ORDER
from reportgen.publish.files import RUN_TRACES_CAP_BYTES, SITE_TRACES_CAP_BYTES, copy_run_files
from reportgen.publish.cell_index import INDEX_NAME as CELL_INDEX, write_cell_index
from reportgen.publish.frame import history_frame
from reportgen.publish.summary import VERSION_KEYS, RunSummary, slug, summarize
from reportgen.render.charts import trend_figures
from reportgen.publish.site_compare import (
    ComparisonLink,
    ComparisonPages,
    SiteConfig,
    build_comparisons,
    load_site_config,
    placed,
    plan_pairs,
    remove_stale_comparisons,
)
from reportgen.storage import is_remote
from reportgen.storage.local import (
    DEFAULT_MAX_LOG_BYTES,
    Found,
    inspection_note,
    LogEntry,
    NotReadable,
    Skipped,
    UnsafeOutput,
    find_logs,
    bounded_json,
    read_bounded,
    remove_inside,
    shown,
    write_inside,
)
from reportgen.storage.sources import (
    FETCH_BATCH,
    LogRef,
    RemoteError,
    RemoteLog,
    Store,
    change_key,
    fetched,
    forget_prefetched,
    prefetch,
)
from reportgen.publish.site_campaigns import CampaignPage, campaign_pages
from reportgen.publish.site_links import RunLinks, run_links
from reportgen.publish.site_quick import (
    QUICK_NAME,
    STATE_NAME,
    Quick,
    QuickCheck,
    SiteResult,
    quick_start,
    tool_files,
    tool_folders,
)
from reportgen.storage.ledgers import find_ledgers
from reportgen.publish.site_rows import FIRST_ROWS, rows_data, rows_script, shown_stamp, utc_stamp
from reportgen.contract.validation import paused_gc
from reportgen.render.view import SYMBOLS
from collector.visible import tell, terminal

# A summary kept in a site's state is made again when this changes (with the package version).
# 3: summaries carry the device name, plan-check on the logged plan, collector and schema version,
# and each cell's mode (index.parquet); the state keeps each run page's previous/next links.
# 4: host facts from every timed cell; the reference as computed among the criteria.
# 5: a warm series' figures are checked against its samples, and a compile event's options
# against the plan's: a log kept as valid may not be; each cell keeps its reference outputs' hash.
# 6: a warm loop's count is checked against the plan's warm_repetitions and a run id may hold no
# control character (a log kept as valid may not be); a run where no cell passed, or whose
# criteria pass a wrong output, is judged anew (never "suitable"); host facts of another machine
# flag a history's ratios.
# 7: summaries keep what run_start says of the campaign task that ran it (a campaign page links a
# run as a task's only when its log says so).
# 8: summaries keep a generation cell's repetitions: a decode ratio whose repetitions' whole
# decode times are unstable decides nothing.
# 9: summaries keep the range of a re-measured cell's earlier warm series (a stable last series
# far outside it decides nothing), and the inputs' hash per input shape (a run of fewer cells
# with the same inputs for the shapes both hold is no change of inputs).
# 10: a summary keeps the order its run gave its cells and other mappings (keys were sorted: a
# cached summary named another first cell than a fresh one); a run's slug is checked against its id.
# 11: a summary keeps each cell's loop settings (threads, affinity, CPU count, governor: a diff
# compares them cell by cell) and why an untested cell is untested; the earlier warm series' range
# is their fastest sample and highest third quartile (their slowest sample admitted any speed).
# 12: a summary keeps the same range of a generation cell's earlier series of warm generations
# (1.7 logs on: the collector takes them again while one is unstable).
# 13: a summary keeps which of a cell's timed calls were fed another layout than the cell's (no
# ratio of such a warm figure decides anything) and the rules the log's own classification said
# its warm series failed (a series the collector called unstable decides nothing).
# 14: a summary keeps whether its log has a plan event (a diff of a run without one says its
# criteria are not recorded, never that none changed).
# 15: a cell keeps whether its warm loop's CPU wait was recorded unknown (its series is then not
# classified), and its inputs the recipe of their content hashes.
# 16: a generation cell's warm loop whose CPU wait was not read is not classified.
# 17: a summary marks weights read from a shipped file (a diff names such a file's bytes where
# they change and the content does not).
STATE_FORMAT = 17
MAX_STATE_BYTES = 256 << 20
KEY_TIMINGS = 4
HISTORY_PAIRS = 30  # consecutive pairs a workload page shows in full (a page of 300 runs stays small)
# Runs a target's history table and trend charts show, the newest: 300 runs made a 1.5 MB page,
# two thirds of it chart points two pixels apart.
HISTORY_ROWS = 100
ROWS_NAME = re.compile(r"index-rows-[0-9a-f]{10}\.js")  # fullmatch
# The files a site writes at the top of its folder, beside ROWS_NAME's and its folders.
SITE_FILES = ("index.html", "index.csv", "index.json", CELL_INDEX)


@dataclass
class Entry:
    log: LogRef
    key: str
    summary: RunSummary
    judged: JudgedRun | None
    annotations: Any = None  # the annotations file found beside the log, to judge it again


# --- the state file: untrusted input like any other ----------------------------------------------
# It sits in the output folder, where anybody who can write there can plant one. It is only a
# cache: anything wrong with it is a warning and a full build. A slug names a folder that may be
# removed, so it must be one that summary.slug() makes: one plain path component. The summaries'
# own fields are checked against the RunSummary dataclass, so the check follows it as it grows.

_SLUG = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,95}-[0-9a-f]{8}$"
Count = Annotated[int, Field(ge=0, le=INT64_MAX)]  # a count as the run log bounds it (contract.events.Count)


class _StoredCell(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    status: str = Field(pattern="^(" + "|".join(STATUS_ORDER) + ")$")
    warm_median_s: float | None = Field(None, ge=0, le=1e9)
    warm_samples_s: list[float] | None = None
    # [seconds waited for a CPU, seconds the loop took]: plain figures, as the log's are.
    warm_waited: list[Annotated[float, Field(ge=0, le=1e12)]] | None = Field(None, min_length=2, max_length=2)
    generation_waited: list[Annotated[float, Field(ge=0, le=1e12)]] | None = Field(None, min_length=2, max_length=2)
    warm_before: list[Annotated[float, Field(ge=0, le=1e9)]] | None = Field(None, min_length=2, max_length=2)
    generation_before: (
        dict[str, Annotated[list[Annotated[float, Field(ge=0, le=1e9)]], Field(min_length=2, max_length=2)]] | None
    ) = None


class _StoredRun(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    slug: str = Field(pattern=_SLUG)
    workload_slug: str = Field(pattern=_SLUG)
    outcome: str = Field(pattern="^(suitable|change|blocked)$")
    counts: dict[str, Count]
    cells: dict[str, _StoredCell] = {}


class _StoredComparison(BaseModel):
    model_config = ConfigDict(extra="allow")

    key: str
    link: dict[str, Any]


class _State(BaseModel):
    model_config = ConfigDict(extra="allow")

    fingerprint: str
    runs: dict[str, _StoredRun]
    comparisons: dict[str, _StoredComparison] = {}
    workloads: dict[str, Annotated[str, StringConstraints(pattern="^[0-9a-f]{64}$")]] = {}
    # Campaign page folders the last build wrote (a stale one is removed: names checked).
    campaigns: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,95}-[0-9a-f]{8}$")]] = []


_SUMMARY = TypeAdapter(RunSummary)
_PLAN_CHECK_KEYS = {"target", "classification", "headline", "first"}  # summary._plan_check
_LINK = TypeAdapter(ComparisonLink)


def _check_state(raw: Any) -> dict[str, Any]:
    """The state as plain data once every part checks out; ValueError (or ValidationError) otherwise."""
    state = _State.model_validate(raw)
    runs = raw["runs"]
    for key, run in runs.items():
        summary = _SUMMARY.validate_python(run)
        if set(run) - {f for f in RunSummary.__dataclass_fields__}:
            raise ValueError(f"runs.{key}: fields a summary does not have")
        for name in ("scope_passed", "scope_not_passed"):
            if any(len(entry) != 2 for entry in getattr(summary, name)):
                raise ValueError(f"runs.{key}.{name}: not a list of [label, shapes] pairs")
        # A page folder is named after its run (summary.slug): any other name would have one
        # run's page written over another's.
        if summary.slug != slug(summary.run_id) or summary.workload_slug != slug(summary.workload):
            raise ValueError(f"runs.{key}.slug: not the page name of run {summary.run_id[:100]!r}")
        check = summary.plan_check
        if check and set(check) != _PLAN_CHECK_KEYS:
            raise ValueError(f"runs.{key}.plan_check: not a plan-check verdict this tool writes")
        # Validation takes 0 for false and "1" for 1; the pages get the values it made of them.
        runs[key] = summary.to_dict()
    for name, stored in state.comparisons.items():
        if not re.match(_SLUG, name):
            raise ValueError(f"comparisons: {name!r} is not a page name this tool makes")
        link = _LINK.validate_python(stored.link)
        if link.href != f"comparisons/{name}/index.html":
            raise ValueError(f"comparisons.{name}.link.href: not this comparison's page")
    for name in state.workloads:
        if not re.match(_SLUG, name):
            raise ValueError(f"workloads: {name!r} is not a page name this tool makes")
    return raw


def _fingerprint(folders: list[Path] | None = None) -> str:
    """Changes when the tool changes (any file of tool_folders: code, templates, backend
    descriptors, whatever the version says): then every page is rendered again. Made from
    relative names and bytes, so one tool gives one fingerprint on every machine."""
    digest = hashlib.sha256(f"{STATE_FORMAT}:{__version__}".encode())
    for folder in tool_folders() if folders is None else folders:
        for entry in tool_files(folder):
            name = os.path.relpath(entry.path, folder).encode("utf-8", "surrogateescape")
            data = Path(entry.path).read_bytes()
            digest.update(b"%d:%s%d:" % (len(name), name, len(data)) + data)
    return digest.hexdigest()


def _load_state(out_dir: Path, fingerprint: str, result: SiteResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """The previous build's state, or an empty one (with a warning when it was unusable); and,
    where another version wrote it, that state apart (checked alike), never used as a cache: its
    pages that this build does not write again are removed as a build by the same version
    removes them."""
    path = out_dir / STATE_NAME
    empty: dict[str, Any] = {"runs": {}}
    if not os.path.lexists(path):
        return empty, {}
    try:
        if os.path.islink(path):
            raise NotReadable("a symlink; the state file must be a plain file in the output folder")
        raw = bounded_json(read_bounded(path, MAX_STATE_BYTES))
        if isinstance(raw, dict) and raw.get("fingerprint") != fingerprint:
            # Written by another version: a full build, nothing wrong.
            try:
                return empty, _check_state({**raw, "fingerprint": fingerprint})
            except ValueError:
                return empty, {}
        return _check_state(raw), {}
    except (NotReadable, OSError, ValueError, RecursionError) as exc:
        reason = _first_error(exc) if isinstance(exc, ValidationError) else " ".join(str(exc).split())
        result.warnings.append(f"reportgen site: warning: ignoring {path} ({reason}); doing a full build")
        return empty, {}


def _published_state(published: str, store: Store, fingerprint: str, result: SiteResult) -> dict[str, Any] | None:
    """The state publish left at the site's location; None when there is none, it was written by
    another version, or it does not check out (with a one-line warning: a full build)."""
    url = f"{published.rstrip('/')}/{STATE_NAME}"
    try:
        data = store.read_at_most(url, MAX_STATE_BYTES)
        if data is None:
            return None  # nothing published there yet
        raw = bounded_json(data)
        if isinstance(raw, dict) and raw.get("fingerprint") != fingerprint:
            return None
        return _check_state(raw)
    except (RemoteError, ValueError, RecursionError) as exc:
        reason = _first_error(exc) if isinstance(exc, ValidationError) else " ".join(str(exc).split())
        result.warnings.append(
            terminal(f"reportgen site: warning: ignoring {url} ({reason[:300]}); doing a full build")
        )
        return None


def state_pages(folder: Path) -> list[str] | None:
    """The page folders the state in a built site vouches for (runs/<slug>/, workloads/<slug>/,
    ...): those a site built with ``published`` has in the published copy only. None when the
    folder holds no state that checks out."""
    path = folder / STATE_NAME
    try:
        if os.path.islink(path) or not path.is_file():
            return None
        state = _check_state(bounded_json(read_bounded(path, MAX_STATE_BYTES)))
    except (NotReadable, OSError, ValueError, RecursionError):
        return None
    return sorted(
        {f"runs/{run['slug']}/" for run in state["runs"].values()}
        | {f"workloads/{name}/" for name in state.get("workloads", {})}
        | {f"comparisons/{name}/" for name in state.get("comparisons", {})}
        | {f"campaigns/{name}/" for name in state.get("campaigns", [])}
    )


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in err["loc"])
    return f"{where}: {err['msg']}" if where else "not a JSON object with a fingerprint and runs"


def _gather(
    logs: list[LogEntry],
    out_dir: Path,
    state: dict[str, Any],
    result: SiteResult,
    max_bytes: int,
    check: QuickCheck,
    pages_elsewhere: bool = False,
) -> list[Entry]:
    """Each log's summary: the stored one when its key is known (and its page is in out_dir, or
    with ``pages_elsewhere`` in the published site the state came from), else judged afresh.
    Logs to judge are read ahead a batch at a time, in parallel (sources.prefetch)."""
    entries: list[Entry] = []
    seen: dict[str, LogRef] = {}
    for start in range(0, len(logs), FETCH_BATCH):
        keyed: list[tuple[int, LogEntry, str, dict[str, Any] | None]] = []
        for index, found in enumerate(logs[start : start + FETCH_BATCH], start=start + 1):
            try:
                key = check.known_key(found) or change_key(found, max_bytes)
            except (NotReadable, OSError) as exc:
                result.skipped.append(f"{shown(found.path)}: skipped: {getattr(exc, 'strerror', None) or exc}")
                continue
            cached = state["runs"].get(key)
            if cached and not (pages_elsewhere or (out_dir / "runs" / cached["slug"] / "index.html").is_file()):
                cached = None
            keyed.append((index, found, key, cached))
        prefetch([found for _, found, _, cached in keyed if cached is None])
        for index, found, key, cached in keyed:
            entry = _entry(found, key, cached, index, len(logs), result, max_bytes)
            if entry is None:
                continue
            if entry.summary.run_id in seen:
                result.rejected.append(
                    f"{shown(found.path)}: skipped, run id {entry.summary.run_id!r} is also in {shown(seen[entry.summary.run_id])}"
                )
                continue
            seen[entry.summary.run_id] = found.path
            entries.append(entry)
        forget_prefetched([found for _, found, _, _ in keyed])
    return entries


def _entry(
    found: LogEntry, key: str, cached: dict[str, Any] | None, index: int, total: int, result: SiteResult, max_bytes: int
) -> Entry | None:
    log = found.path
    if cached:
        return Entry(log, key, RunSummary.from_dict(cached), None, found.annotations)
    # A stderr that cannot be written (`site RUNS 2>&1 | head`, a full disk) stops the progress
    # lines, not the build (collector.visible.tell): the last lines and exit code say how it ended.
    tell(f"reportgen site: [{index}/{total}] {shown(log)}")
    try:
        judged = judge_log(log, found.annotations, max_bytes=max_bytes, beside=False, site=True)
        return Entry(log, key, summarize(judged), judged, found.annotations)
    except AnnotationsInvalid as exc:
        result.rejected.append(f"{shown(log)}: skipped, a valid run log whose annotations are not valid:\n{exc}")
    except InspectionLogGiven as exc:  # whatever its name: no run log, and no problem of the site's
        result.warnings.append(f"reportgen site: {exc}; left out")
    except ReportInputError as exc:
        result.rejected.append(f"{shown(log)}: skipped, not a valid run log:\n{exc}")
    except Exception as exc:  # one bad log never stops the others' pages
        result.rejected.append(f"{shown(log)}: skipped, could not be reported: {_one_line(exc)}")
    return None


# The inputs a build left out, as its index names them: the first this many, each on one line
# of at most this many characters (the command's own messages hold them in full).
LEFT_OUT_SHOWN = 50
LEFT_OUT_CHARS = 600


def _under_roots(text: str, roots: list[Path]) -> str:
    """A message with each local RUNS folder's full path (a log's folder, for a log named
    directly) written from the folder's own name, so that a page names no path of the host that
    built it (and reads alike wherever it is built)."""
    for given in roots:
        root = given if given.is_dir() else given.parent  # a log named directly: from its folder
        for full in dict.fromkeys((os.path.abspath(root), str(root.resolve()))):
            if full != os.sep:
                text = text.replace(full + os.sep, f"{root.resolve().name or '.'}{os.sep}")
    return text


def _bounded_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= LEFT_OUT_CHARS else f"{line[:LEFT_OUT_CHARS]}... (cut; the command printed it in full)"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "no message"
    return f"{type(exc).__name__}: {text[:300]}".encode("utf-8", "backslashreplace").decode("utf-8")


def _nav(summary: RunSummary) -> list[tuple[str, str]]:
    return [("All runs", "../../index.html"), (summary.workload, f"../../workloads/{summary.workload_slug}/index.html")]


OUTCOME_SYMBOLS = {"suitable": "✔", "change": "⚠", "blocked": "✖"}
OUTCOME_LABELS = {"suitable": "suitable", "change": "requires a change", "blocked": "blocked"}
INDEX_COLUMNS = (
    "run_id",
    "workload",
    "target",
    "family",
    "started_at",
    "synthetic",
    "weights_origin",
    "complete",
    "outcome",
    "headline",
    *(f"version_{k}" for k in VERSION_KEYS),
    *(f"cells_{s}" for s in STATUS_ORDER),
    "page",
    "intended_target",
    "device",
    "timing_undecided",
    "performance_stopped",
    "adapter_note",
)


def _totals(summaries: list[RunSummary]) -> dict[str, Any]:
    """The dispositions and cells of the measured runs: a synthetic fixture is evidence of
    nothing, so it is left out of the tallies (and counted apart), as from the runs per target."""
    outcomes = {o: 0 for o in OUTCOME_SYMBOLS}
    cells = dict.fromkeys(STATUS_ORDER, 0)
    synthetic = 0
    for s in summaries:
        if s.synthetic:
            synthetic += 1
            continue
        outcomes[s.outcome] += 1
        for name in STATUS_ORDER:
            cells[name] += s.counts.get(name, 0)
    return {
        "outcomes": [(o, OUTCOME_SYMBOLS[o], OUTCOME_LABELS[o], n) for o, n in outcomes.items()],
        "cells": [(name, SYMBOLS[name], n) for name, n in cells.items()],
        "synthetic": synthetic,
    }


def _index_records(summaries: list[RunSummary]) -> list[dict[str, Any]]:
    """The index as plain records, newest first: what index.csv and index.json hold."""
    return [
        {
            "run_id": s.run_id,
            "workload": s.workload,
            "target": s.target,
            "family": s.family,
            "started_at": s.started_at,
            "synthetic": s.synthetic,  # a hand-written fixture, not a measurement
            "weights_origin": s.weights_origin or "",  # synthetic weights: measured, of no trained model
            "complete": s.complete,
            "outcome": s.outcome,
            "headline": s.headline,
            **{f"version_{k}": s.versions.get(k, "") for k in VERSION_KEYS},
            **{f"cells_{name}": s.counts.get(name, 0) for name in STATUS_ORDER},
            "page": f"runs/{s.slug}/index.html",
            "intended_target": s.intended_target or "",
            "device": s.device,
            # Timed cells and generation series whose timing decides nothing (0: none).
            "timing_undecided": s.timing_undecided,
            # Mismatching cells without a verdict: while any, no timing of the run is a result.
            "performance_stopped": s.performance_stopped,
            # How far the collector's adapter for the run's backend has met hardware ("": no word).
            "adapter_note": s.adapter_note,
        }
        for s in sorted(summaries, key=lambda s: s.sort_key, reverse=True)
    ]


def _index_csv(records: list[dict[str, Any]]) -> str:
    """The index as CSV (csv_text: formula-like text marked, every line break quoted)."""
    return csv_text([INDEX_COLUMNS, *([record.get(k) for k in INDEX_COLUMNS] for record in records)])


def short_label(s: RunSummary) -> str:
    """A row's disposition in a few words: "Suitable, 36/36, cpu" (outcome, cells passed of all
    cells, the backend family the run ran on). The headline and the scope are one click away."""
    outcome = OUTCOME_LABELS[s.outcome]
    return f"{outcome[:1].upper()}{outcome[1:]}, {s.counts.get('pass', 0)}/{sum(s.counts.values())}, {s.family}"


def short_run_id(s: RunSummary) -> str:
    """The run id without the "<workload>-<target>-" the row's other columns already say."""
    prefix = f"{s.workload}-{s.target}-"
    return s.run_id[len(prefix) :] if s.run_id.startswith(prefix) and len(s.run_id) > len(prefix) else s.run_id


def _index_rows(summaries: list[RunSummary], limit: int | None = None) -> list[dict[str, Any]]:
    """The newest ``limit`` rows as index.html writes them (site.js draws the same from the row data)."""
    rows = []
    for s in sorted(summaries, key=lambda s: s.sort_key, reverse=True)[:limit]:
        stamp = utc_stamp(s.started_at)
        rows.append(
            {
                "summary": s,
                "href": f"runs/{s.slug}/index.html",
                "workload_href": f"workloads/{s.workload_slug}/index.html",
                "symbol": OUTCOME_SYMBOLS[s.outcome],
                "stamp": stamp,
                "started": shown_stamp(stamp),
                "counts": [(name, SYMBOLS[name], s.counts.get(name, 0)) for name in STATUS_ORDER],
                "passed": s.counts.get("pass", 0),
                "not_passed": sum(s.counts.values()) - s.counts.get("pass", 0),
                "label": short_label(s),
                "short_id": short_run_id(s),
            }
        )
    return rows


def evidence_target(s: RunSummary) -> str:
    """The target a run is evidence for: the one whose constraint file lists the family it ran on
    as evidence (a stand-in or an XLA run is evidence for none), else the family itself."""
    docs = docs_for_family(s.family)
    if docs is None:
        return s.family
    return docs.target if s.family in docs.evidence_families else f"{s.family} (not evidence for {docs.target})"


PLAN_CHECK_CLASSES = {
    "compatible": "suitable",
    "revise": "change",
    "blocked": "blocked",
}  # colour of each plan-check class


def workload_targets(summaries: list[RunSummary]) -> list[dict[str, Any]]:
    """Per workload, the target its plan is meant for (plan-check's default, neuron, when the plan
    does not say), how many runs are evidence for it, and while there is none, plan-check's verdict
    on the latest run's logged plan for that target."""
    by_workload: dict[str, list[RunSummary]] = {}
    for s in sorted(summaries, key=lambda s: s.sort_key):
        by_workload.setdefault(s.workload, []).append(s)
    rows = []

    # Workloads without a run on their target first: the index lists the first FIRST_ROWS of them.
    # The latest measured run speaks for the workload's plan: a synthetic fixture's plan is no
    # plan of the workload (its runs alone: the latest of them, said synthetic beside it).
    def speaking(runs: list[RunSummary]) -> RunSummary:
        return newest([s for s in runs if not s.synthetic] or runs)

    for workload, runs in sorted(
        by_workload.items(),
        key=lambda item: (
            any(not s.synthetic and evidence_target(s) == backend_name(_meant_for(speaking(item[1]))) for s in item[1]),
            item[0],
        ),
    ):
        latest = speaking(runs)
        target = _meant_for(latest)  # as the plan names it (an alias included)
        on_target = [s for s in runs if not s.synthetic and evidence_target(s) == backend_name(target)]
        rows.append(
            {
                "workload": workload,
                "href": f"workloads/{latest.workload_slug}/index.html",
                "target": target,
                "recorded": latest.intended_target is not None,
                "runs": len(on_target),
                "latest": newest(on_target) if on_target else None,
                "check": latest.plan_check if not on_target else {},
                "check_class": PLAN_CHECK_CLASSES.get(latest.plan_check.get("classification", ""), "untested"),
                "check_run": latest,
            }
        )
    return rows


def _left_behind(state: dict[str, Any], entries: list[Entry], published: str) -> list[str]:
    """Runs the published site lists whose logs this build was not given: its index leaves them
    out, and their pages stay where they were published; said, never dropped without a word."""
    built = {e.summary.run_id for e in entries}
    listed = {run.get("run_id") for run in state.get("runs", {}).values() if isinstance(run, dict)}
    gone = sorted(r for r in listed if isinstance(r, str) and r not in built)
    if not gone:
        return []
    named = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
    return [
        terminal(
            f"reportgen site: warning: {len(gone)} run(s) the site published at {published} lists are not among RUNS "
            f"({named}): this build's index leaves them out (their pages stay where they were published)"
        )
    ]


def newest(runs: list[RunSummary]) -> RunSummary:
    """The last of ``runs`` (oldest first) whose start can be placed in time, else the last: a
    run whose start cannot be placed sorts where its text falls, and is never the latest."""
    return next((s for s in reversed(runs) if placed(s)), runs[-1])


def _meant_for(latest: RunSummary) -> str:
    return latest.intended_target or latest.plan_check.get("target") or default_target()


def plan_check_counts(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """How many workloads without a run on their target plan-check puts in each class, worst first."""
    counts: dict[str, int] = {}
    for row in rows:
        if row["check"]:
            counts[row["check"]["classification"]] = counts.get(row["check"]["classification"], 0) + 1
    order = ("blocked", "revise", "compatible", "unreadable")
    labels = {**PLAN_CHECK_HEADLINES, "unreadable": "Not reviewable from the log"}
    return [(labels[c], counts[c]) for c in order if c in counts]


def runs_per_target(summaries: list[RunSummary]) -> dict[str, Any]:
    """The index's top line: how many runs are evidence for each target, every documented target
    listed (0 included), and the targets without any run named with what the dispositions are for.
    A synthetic fixture is evidence for no target: counted apart, never as a run on one."""
    counts = dict.fromkeys(targets(), 0)
    synthetic = 0
    for s in summaries:
        if s.synthetic:
            synthetic += 1
            continue
        key = evidence_target(s)
        counts[key] = counts.get(key, 0) + 1
    measured = [t for t, n in counts.items() if n]
    missing = [t for t, n in counts.items() if not n]
    return {"counts": list(counts.items()), "measured": measured, "missing": missing, "synthetic": synthetic}


def _workload_context(runs: list[RunSummary], watched: tuple[str, ...] = ()) -> dict[str, Any]:
    """One history per target and backend it ran on: runs on different targets, or planned for
    one target and run on another backend, are never compared as consecutive."""
    ordered = sorted(runs, key=lambda s: s.sort_key)
    by_target: dict[str, list[RunSummary]] = {}
    for s in ordered:
        by_target.setdefault(where(s), []).append(s)
    return {
        "workload": ordered[-1].workload,
        "runs": len(ordered),
        "targets": [_target_history(target, history, watched) for target, history in sorted(by_target.items())],
        # The first screen: the documented targets this workload has no run on, as the index says.
        "no_run_on": runs_per_target(ordered)["missing"],
        "status_order": STATUS_ORDER,
        "symbols": SYMBOLS,
        "verdict_classes": {"slower": "ratio-up", "faster": "ratio-down"},
        "labels": {s.run_id: short_label(s) for s in ordered},
        "short_ids": {s.run_id: short_run_id(s) for s in ordered},
        "started": {s.run_id: shown_stamp(utc_stamp(s.started_at)) for s in ordered},
        "outcome_symbols": OUTCOME_SYMBOLS,
    }


def _target_history(target: str, history: list[RunSummary], watched: tuple[str, ...] = ()) -> dict[str, Any]:
    """The runs on one target, oldest first; charts and columns follow the cells that changed most
    against the previous run (see diff.largest_changes) plus the cells the site configuration names."""
    # The table and the charts show the newest HISTORY_ROWS runs, each against the run before it
    # (index.csv, index.json and index.parquet list every run): only those pairs are compared.
    rows = history[-HISTORY_ROWS:]
    # The latest run and the one before it are runs whose start can be placed in time: one that
    # cannot be sorts where its text falls, is neither (validate warns about it), and is in no
    # pair: nothing is fixed, faster or slower across a start that is not known (a run dated
    # 2099 by a wrong clock had turned the newest run's new failure into "Fixed").
    # Nor is a pair that started at the same instant: which came first is not known, and the run
    # ids' spelling had decided which way every ratio pointed.
    compared = [s for s in history[-HISTORY_ROWS - 1 :] if placed(s)]
    diffs: list[tuple[RunSummary, RunSummary, RunDiff]] = [
        (a, b, diff_runs(a, b)) for a, b in zip(compared, compared[1:]) if a.sort_key[0] != b.sort_key[0]
    ]
    together = {
        b.run_id: f"not compared: started at the same instant as {a.run_id} (which came first is not known)"
        for a, b in zip(compared, compared[1:])
        if a.sort_key[0] == b.sort_key[0]
    }
    timed = [s for s in history if placed(s)]
    unplaced = [s.run_id for s in history if not placed(s)]
    latest = newest(history)
    last: RunDiff | None = None
    if len(timed) > 1 and timed[-1].run_id not in together:
        before, after = timed[-2], timed[-1]
        last = next((d for a, b, d in diffs if a is before and b is after), None) or diff_runs(before, after)
    named = [c for c in watched if c in latest.cells]
    stop = last.timing_stop if last is not None else None
    changed = largest_changes(last, KEY_TIMINGS) if last is not None and stop is None else []
    if changed:
        why = "the cells with the largest change against the previous run"
    elif last is not None and stop is None:  # every ratio against the previous run is unstable or of another series
        changed = sorted(c for c, cell in latest.cells.items() if cell.warm_median_s)[:KEY_TIMINGS]
        why = "the first cells with a warm median (no stable ratio of a warm call against the previous run to rank them by)"
        if any(t.series for t in last.timings):
            # A generation run's ratios are of its series (first token, decode per token): judged
            # in the pair table, not charted or ranked here.
            why += (
                "; generation series (first token, decode per token) are judged in the table of pairs, not charted here"
            )
    elif stop is not None:  # no ratio against the previous run to rank by: the cells alone decide
        changed = sorted(c for c, cell in latest.cells.items() if cell.warm_median_s)[:KEY_TIMINGS]
        why = f"the first cells with a warm median (no timing is compared against the previous run: {stop.reason})"
    else:
        changed = sorted(c for c, cell in latest.cells.items() if cell.warm_median_s)[:KEY_TIMINGS]
        if len(history) == 1:
            alone = "one run"
        elif timed and timed[-1].run_id in together:
            alone = "the latest run started at the same instant as the run before it"
        else:
            alone = "fewer than two runs whose start can be placed in time"
        why = f"the first cells with a warm median ({alone}: nothing to compare yet)"
    key_cases = named + [c for c in changed if c not in named]
    points = {
        after.run_id: (
            d.geomean.ratio,
            d.geomean.low,
            d.geomean.high,
            d.geomean_counts,
            d.lead if d.leads else "",  # what changed leads the ratio, as in the column
        )
        for _, after, d in diffs
        if d.geomean is not None
    }
    # A run whose timings are not like-for-like with the run before it is not joined to it.
    unlike = {
        after.run_id: "; ".join(d.timing_unlike + d.remeasure_unlike)
        for _, after, d in diffs
        if d.timing_unlike or d.remeasure_unlike
    }
    # Nor is a cell joined to a run that fed it other inputs (other weights are run-wide, above),
    # or whose loop ran it under other settings than the run before (threads changed for that
    # cell alone), or under settings not recorded on either side.
    unlike_cells = {
        (after.run_id, case): why
        for _, after, d in diffs
        if after.run_id not in unlike
        for case, why in [
            *d.changed_values.items(),
            *d.redefined,
            *((t.case, flag) for t in d.timings if not t.series for flag in t.flags if is_setting_flag(flag)),
        ]
        if case in key_cases
    }
    figures = (
        trend_figures(history_frame(rows), key_cases, f"fig-{slug(target, 24)}", points, unlike, unlike_cells)
        if len(rows) > 1
        else []
    )
    # What changed leads the column's speed words, as it leads every comparison.
    # A mean with an interval says what variation the interval covers, as the diff's timing line does.
    geomeans = (
        {
            after.run_id: (f"{d.lead}: " if d.leads else "")
            + d.geomean_line
            + (f" ({d.interval_scope})" if d.geomean is not None and d.geomean.low is not None else "")
            for _, after, d in diffs
        }
        | {run_id: "not compared: its start time is not placed" for run_id in unplaced}
        | together
    )
    unstable = {(s.run_id, case): reason for s in rows for case in key_cases if (reason := _unstable_cell(s, case))}
    package, latest_by_version = version_latest(latest.target, history)
    version_pairs = [(a, b, diff_runs(a, b)) for (_, a), (_, b) in zip(latest_by_version, latest_by_version[1:])]
    return {
        "version_package": package,
        "version_latest": latest_by_version,
        "version_pairs": version_pairs,
        "target": target,
        "anchor": f"target-{slug(target, 24)}",
        "history": history,
        "rows": rows,  # the newest HISTORY_ROWS runs, oldest first: the table's and the charts'
        "latest": latest,  # the latest run whose start can be placed (else the last listed)
        # Runs that started at the latest's instant: which of them is the latest is not known.
        "tied": [s.run_id for s in timed if s is not latest and s.sort_key[0] == latest.sort_key[0]],
        # The plan's own word for the target where it named the backend by an alias ("trainium").
        "planned_as": {s.run_id: s.target for s in history if s.target != backend_name(s.target)},
        "key_cases": key_cases,
        "key_cases_why": why + (f", and {len(named)} named in the site configuration" if named else ""),
        "summary": last.summary if last is not None else "",
        "changed": last.lead_named if last is not None else "",  # the first screen's line names the changes
        "interval_scope": last.interval_scope if last is not None else "",
        # The runs the line compares, named when they are not the last two rows.
        "latest_pair": (timed[-2].run_id, timed[-1].run_id) if last is not None and unplaced else None,
        "unplaced": unplaced,
        "geomeans": geomeans,
        "unstable": unstable,
        "diffs": list(reversed(diffs[-HISTORY_PAIRS:])),  # newest first, the older ones said as left out
        "diffs_left_out": max(0, len(timed) - 1 - HISTORY_PAIRS),
        "figures": figures,
    }


def version_package(target: str) -> str:
    """The package whose version names a release of the target's stack (torch_neuronx on
    neuron; torch where the backend descriptor names none)."""
    try:
        return load_backend_docs(backend_name(target)).matrix_package or "torch"
    except KeyError:
        return "torch"


def version_latest(target: str, history: list[RunSummary]) -> tuple[str, list[tuple[str, RunSummary]]]:
    """The latest run of each version of the target's package, versions in release order (runs
    that did not record it are left out: they name no version)."""
    package = version_package(target)
    runs: dict[str, list[RunSummary]] = {}
    for summary in history:  # oldest first
        version = summary.versions.get(package)
        if version and version != "unknown":
            runs.setdefault(version, []).append(summary)
    latest = {version: newest(of_version) for version, of_version in runs.items()}
    return package, sorted(latest.items(), key=lambda item: (version_tuple(item[0]), item[0]))


def _version_grid(summaries: list[RunSummary]) -> list[dict[str, Any]]:
    """Per workload and target, the latest run of each version of the target's package: the
    index's workload x version grid."""
    by_key: dict[tuple[str, str], list[RunSummary]] = {}
    for s in sorted(summaries, key=lambda s: s.sort_key):
        by_key.setdefault((s.workload, where(s)), []).append(s)
    rows: dict[str, dict[str, Any]] = {}
    for (workload, target), history in sorted(by_key.items()):
        package, latest = version_latest(history[-1].target, history)
        if not latest:
            continue
        row = rows.setdefault(
            workload, {"workload": workload, "href": f"workloads/{history[-1].workload_slug}/index.html", "targets": []}
        )
        row["targets"].append(
            {
                "target": target,
                "package": package,
                "versions": [
                    {
                        "version": v,
                        "summary": s,
                        "symbol": OUTCOME_SYMBOLS[s.outcome],
                        "href": f"runs/{s.slug}/index.html",
                    }
                    for v, s in latest
                ],
            }
        )
    return list(rows.values())


def _unstable_cell(summary: RunSummary, case: str) -> str | None:
    """Why a cell's warm point decides nothing, after its symbol ('≋ unstable timing: ...', '?
    timing not classified: ...'), or None."""
    cell = summary.cells.get(case)
    flag = (
        series_flag(
            cell.warm_samples_s,
            cell.warm_waited,
            before=cell.warm_before,
            logged=cell.warm_logged,
            unread=cell.warm_wait_unread,
        )
        if cell is not None
        else None
    )
    if flag is None:
        return None
    return f"{STABILITY_SYMBOL if flag.startswith(STABILITY_FLAG) else UNCLASSIFIED_SYMBOL} {flag}"


def _remove_stale(out_dir: Path, runs: dict[str, Any], keep: set[str], result: SiteResult) -> None:
    for cached in runs.values():
        if cached["slug"] not in keep:
            _remove(out_dir, out_dir / "runs" / cached["slug"], result)


def _remove_if_empty(folder: Path) -> None:
    """Remove a folder of the output (never a link) that holds nothing."""
    try:
        if stat.S_ISDIR(os.lstat(folder).st_mode):
            os.rmdir(folder)
    except OSError:
        pass  # not there, or not empty: nothing to do


def _remove(out_dir: Path, path: Path, result: SiteResult) -> None:
    try:
        remove_inside(out_dir, path)
    except (UnsafeOutput, OSError) as exc:
        result.warnings.append(
            f"reportgen site: warning: left {path} in place: {getattr(exc, 'strerror', None) or exc}"
        )


class NoRunLogs(Exception):
    """No run log at the local locations given; nothing was written."""

    def __init__(self, skipped: list[Skipped], output_met: bool = False) -> None:
        super().__init__("no run log")
        self.skipped = skipped
        self.output_met = output_met  # the output folder lay inside a location given: not searched


def build_site(
    paths: list[Path | str],
    out_dir: Path,
    config: Path | None = None,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
    follow_symlinks: bool = False,
    require_logs: bool = False,
    quick: Quick | None = None,
    published: str | None = None,
) -> SiteResult:
    """Build the site; ``config`` (or a site.toml inside a given local folder) declares comparison pages.

    PATHS are local paths or s3:// prefixes; a log in object storage is fetched only when its
    ETag, size or annotations changed since the last build into out_dir (RemoteError when the
    store cannot be listed). Raises SiteConfigError, before anything is written, when the
    configuration is unusable, UnsafeOutput when the output folder leads elsewhere through
    a symlink, and (with ``require_logs``) NoRunLogs when only local locations are given and
    they hold no run log. ``quick``: the no-op check the caller already made (``quick_start``
    with the same arguments), so that a build with nothing to do imports nothing that renders.
    """
    if quick is None:
        quick = quick_start(paths, out_dir, config, max_bytes, follow_symlinks)
    if quick.unchanged:
        return quick.result
    # The configuration was checked by the build that left the record an unchanged build
    # returns on; any other build checks it before anything is written.
    config_path, result, check, remote = quick.config_path, quick.result, quick.check, quick.remote
    site_config = load_site_config(config_path) if config_path is not None else SiteConfig()
    remote_paths = [p for p in paths if is_remote(p)]
    local = [Path(p) for p in paths if not is_remote(p)]
    found = find_logs(local, follow_symlinks, max_bytes, output=out_dir) if local else Found()
    if remote is not None:
        found.logs += remote.logs
        found.skipped += remote.skipped
    if require_logs and not remote_paths and not found.logs:
        raise NoRunLogs(found.skipped, found.output_met)
    check.forget(result.warnings)
    fingerprint = _fingerprint()
    state, earlier = _load_state(out_dir, fingerprint, result)
    dropped: dict[str, Any] = dict(earlier.get("runs", {}))
    if state["runs"] and not check.vouches_for_state():
        # A cache only, trusted while it is the file the last build wrote (the record that build
        # left holds its stat): one edited since, or without a record, has its summaries judged
        # again. Its runs' pages are still removed when their runs are gone.
        result.warnings.append(
            f"reportgen site: warning: {out_dir / STATE_NAME} is not the one the last build left "
            f"(changed since, or no {QUICK_NAME} beside it); judging every log again"
        )
        dropped, state = state["runs"], {**state, "runs": {}}
    store = _store_of(found.logs)
    result.warnings += [f"reportgen site: {line}" for line in (remote.warnings if remote is not None else [])]
    result.warnings += [f"reportgen site: {inspection_note(path)}; left out" for path in found.inspections]
    pages_elsewhere = False
    if published is not None:
        stored = _published_state(published, store or Store(), fingerprint, result)
        if stored is not None:
            # Runs this folder built since its last publish keep their local pages.
            for key, run in state["runs"].items():
                if key not in stored["runs"] and (out_dir / "runs" / run["slug"] / "index.html").is_file():
                    stored["runs"][key] = run
            # And so do the links those pages were rendered with (previous/next run, comparisons).
            local_links, stored_links = state.get("links"), stored.get("links")
            if isinstance(local_links, dict):
                stored["links"] = stored_links = stored_links if isinstance(stored_links, dict) else {}
                for slug, key in local_links.items():
                    if (
                        isinstance(slug, str)
                        and slug.strip(".")
                        and "/" not in slug
                        and "\\" not in slug
                        and (out_dir / "runs" / slug / "index.html").is_file()
                    ):
                        stored_links[slug] = key
            state, pages_elsewhere = stored, True
    warnings_before = len(result.warnings)
    result.skipped += [s.format() for s in found.skipped]
    with paused_gc():
        entries = _gather(found.logs, out_dir, state, result, max_bytes, check, pages_elsewhere)
        if pages_elsewhere and published is not None:
            result.warnings += _left_behind(state, entries, published)
        result.warnings += [
            terminal(
                f"reportgen site: warning: {shown(e.log)}: run_start started_at {e.summary.started_at[:40]!r} "
                f"{why}: never taken as its workload's latest run"
            )
            for e in entries
            if (why := unplaceable(e.summary.started_at)) is not None
        ]
        assets = write_assets(out_dir)
        comparisons = _comparison_pages(
            site_config, entries, out_dir, assets, state, result, str(config_path) if config_path else "", max_bytes
        )
        result.written += comparisons.written
        links = run_links([e.summary for e in entries], comparisons.links)
        _render_runs(entries, out_dir, result, links, max_bytes, state.get("links", {}))
        result.runs = len(entries)
        # The run inputs read (logs and notes), counted before the ledgers' small files, which
        # the same store reads on every full build.
        result.fetched = fetched(found.logs)
        campaigns = _campaign_pages(paths, entries, out_dir, assets, result, store)
        written, workloads, index_pages = _write_pages(
            entries,
            out_dir,
            assets,
            comparisons.links,
            state.get("workloads", {}),
            tuple(site_config.history.cases),
            campaigns,
            pages_elsewhere,
            left_out=[_under_roots(text, local) for text in (*result.skipped, *result.rejected)],
        )
        result.written += written
        # A case the configuration pins that no run holds (a typo, a renamed cell) is said, as a
        # comparison rule that makes no page is: it would otherwise pin nothing, unsaid.
        held = {case for e in entries for case in e.summary.cells}
        result.warnings += [
            f"reportgen site: warning: [history] cases names {case[:200]!r}{f' ({len(case)} characters)' if len(case) > 200 else ''}, a cell no run here holds"
            for case in site_config.history.cases
            if case not in held
        ]
        cells = write_cell_index([(e.summary, e.log) for e in entries], out_dir)
        result.written += [cells] if cells else []
        index_pages.append(CELL_INDEX)
    _remove_stale(out_dir, {**dropped, **state["runs"]}, {e.summary.slug for e in entries}, result)
    for gone in sorted({*state.get("workloads", {}), *earlier.get("workloads", {})} - set(workloads)):
        _remove(out_dir, out_dir / "workloads" / gone, result)
    for gone in sorted({*state.get("campaigns", []), *earlier.get("campaigns", [])} - {c.slug for c in campaigns}):
        _remove(out_dir, out_dir / "campaigns" / gone, result)
    remove_stale_comparisons(
        out_dir, {**earlier.get("comparisons", {}), **state.get("comparisons", {})}, set(comparisons.state)
    )
    for folder in ("comparisons", "campaigns"):  # a fresh build makes neither when it has no page there
        _remove_if_empty(out_dir / folder)
    # Keys in a stable order, sorted where this build names them; a summary keeps its own order
    # (its cells in plan order, as a fresh one has them: pages list and name them in that order).
    new_state: dict[str, Any] = {
        "fingerprint": fingerprint,
        "runs": {e.key: e.summary.to_dict() for e in sorted(entries, key=lambda e: e.key)},
    }
    if comparisons.state:
        new_state["comparisons"] = dict(sorted(comparisons.state.items()))
    new_state["links"] = dict(
        sorted((e.summary.slug, links[e.summary.slug].key) for e in entries if e.summary.slug in links)
    )
    new_state["workloads"] = dict(sorted(workloads.items()))
    if campaigns:
        new_state["campaigns"] = sorted(c.slug for c in campaigns)
    state_path = out_dir / STATE_NAME
    # Compact: with an indent, json writes through its Python encoder, a string per token (a
    # site of long runs keeps hundreds of thousands of cells here: seconds and hundreds of MB).
    state_text = json.dumps(new_state, ensure_ascii=False, separators=(",", ":"))
    if write_text(state_path, state_text + "\n", out_dir):
        result.written.append(state_path)
    # Written on every build, after the state: it vouches for that state file. A build that
    # warned leaves no signature, so the next one is not skipped and says it again.
    checked = [
        *index_pages,
        *(name for name in asset_names().__dict__.values() if name),
        *(f"runs/{e.summary.slug}/index.html" for e in entries),
        *(f"workloads/{w}/index.html" for w in workloads),
        *(link.href for link in comparisons.links),
        *(c.href for c in campaigns),
    ]
    clean = len(result.warnings) == warnings_before
    check.record(found, {str(e.log): e.key for e in entries}, result.runs, checked, result.rejected, clean)
    return result


def _relinked(
    entry: Entry, links: dict[str, RunLinks], known: Any, max_bytes: int, result: SiteResult
) -> JudgedRun | None:
    """An unchanged run judged again where its page links changed (a new neighbour, a comparison
    added or gone), so that its page is rendered again with them; None where they did not."""
    known = known if isinstance(known, dict) else {}  # the state file is untrusted: anything else is no record
    wanted = links.get(entry.summary.slug)
    if wanted is None or known.get(entry.summary.slug) == wanted.key:
        return None
    try:
        return judge_log(entry.log, entry.annotations, max_bytes=max_bytes, beside=False, site=True)
    except Exception as exc:  # its page stays as it was; the next build tries again
        result.warnings.append(f"reportgen site: warning: {entry.log}: links not updated: {_one_line(exc)}")
        return None


def _render_runs(
    entries: list[Entry],
    out_dir: Path,
    result: SiteResult,
    links: dict[str, RunLinks] | None = None,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
    known: Any = None,
) -> None:
    """Each new run's pages, and each unchanged run's whose links changed (``known``: the links
    the last build rendered, by slug), written as each is rendered, and the judged run let go
    then (a first build of many runs holds no page, only the judged runs not yet rendered); a
    run that fails is dropped, its page folder removed."""
    traces_left = SITE_TRACES_CAP_BYTES  # what this build may still copy of traces, all runs together
    for entry in list(entries):
        judged, entry.judged = entry.judged, None
        if judged is None:
            judged = _relinked(entry, links or {}, known, max_bytes, result)
        if judged is None:
            continue
        page_dir = out_dir / "runs" / entry.summary.slug
        try:
            files, copied, traced = copy_run_files(
                judged, page_dir, root=out_dir, max_bytes=max_bytes, run_cap=min(RUN_TRACES_CAP_BYTES, traces_left)
            )
            traces_left -= traced
            result.written += copied
            pages = render_report(
                judged,
                page_dir,
                ("html", "md"),
                asset_names(),
                root="../../",
                nav=_nav(entry.summary),
                html_name="index.html",
                files=files,
                related=(links or {}).get(entry.summary.slug),
            )
            result.written += [path for path, data in pages if write_inside(out_dir, path, data)]
        except UnsafeOutput:
            raise  # the output folder leads elsewhere: no page is written at all
        except Exception as exc:  # one bad log never stops the others' pages
            if isinstance(exc, OSError) and _written_in(exc, page_dir, out_dir):
                # The output cannot be written (a full disk, a quota): no fault of the log, and
                # nothing the next build should remember of it. The command exits 2 saying so.
                raise
            result.rejected.append(f"{entry.log}: skipped, could not be rendered: {_one_line(exc)}")
            entries.remove(entry)
            result.written = [p for p in result.written if page_dir not in p.parents]
            _remove(out_dir, page_dir, result)  # the index does not list it: leave no half page


def _written_in(exc: OSError, page_dir: Path, out_dir: Path) -> bool:
    """Whether a failed file operation was one of the site's writes: on a file of the run's
    page folder, or on a folder the site makes for it (--out/runs), where no input lies (a log
    below --out, in a Pages root's data/, is read, not written)."""
    name = exc.filename
    if not isinstance(name, str | os.PathLike):
        return False
    try:
        failed, page, out = (Path(os.path.realpath(p)) for p in (name, page_dir, out_dir))
    except (OSError, ValueError):
        return False
    return failed.is_relative_to(page) or (page.is_relative_to(failed) and failed.is_relative_to(out))


def _comparison_pages(
    config: SiteConfig,
    entries: list[Entry],
    out_dir: Path,
    assets: Assets,
    state: dict[str, Any],
    result: SiteResult,
    source: str = "",
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
) -> ComparisonPages:
    pairs, problems, notes = plan_pairs(config, [e.summary for e in entries], source)
    result.rejected += problems
    result.warnings += [f"reportgen site: warning: {note}" for note in notes]
    logs = {e.summary.run_id: (e.log, e.key) for e in entries}
    pages = build_comparisons(pairs, logs, out_dir, assets, state.get("comparisons", {}), max_bytes)
    result.rejected += pages.rejected
    return pages


def _store_of(logs: list[LogEntry]) -> Store | None:
    """The store that listed the remote logs (its listings answer later lookups under them)."""
    return next((e.path.store for e in logs if isinstance(e.path, RemoteLog)), None)


def _campaign_pages(
    paths: list[Path | str],
    entries: list[Entry],
    out_dir: Path,
    assets: Assets,
    result: SiteResult,
    store: Store | None = None,
) -> list[CampaignPage]:
    """A page per campaign ledger found at the given locations (every planned task shown)."""
    found = find_ledgers(paths, store)
    # A ledger not read is an input skipped (exit 1): its campaign's untested tasks are not shown.
    result.rejected += found.problems
    pages = campaign_pages(found.ledgers, [e.summary for e in entries])
    for page in pages:
        path = out_dir / page.href
        if write_text(path, render_html("campaign.html.j2", root="../../", assets=assets, page=page), out_dir):
            result.written.append(path)
    return pages


def _workload_key(runs: list[Entry], related: list[ComparisonLink], watched: tuple[str, ...] = ()) -> str:
    """Changes when a workload page would: its runs (by content), its comparisons or the named cells change."""
    return hashlib.sha256(
        json.dumps([sorted(e.key for e in runs), [c.__dict__ for c in related], list(watched)], sort_keys=True).encode()
    ).hexdigest()


def _write_pages(
    entries: list[Entry],
    out_dir: Path,
    assets: Assets,
    comparisons: list[ComparisonLink] | None = None,
    known: dict[str, str] | None = None,
    watched: tuple[str, ...] = (),
    campaigns: list[CampaignPage] | None = None,
    pages_elsewhere: bool = False,
    left_out: list[str] | None = None,
) -> tuple[list[Path], dict[str, str], list[str]]:
    """Workload pages whose inputs changed (``known``: each page's key at the last build; with
    ``pages_elsewhere`` an unchanged page is the published one) and the index; returns what
    was written, each workload page's key, and the index's files."""
    written: list[Path] = []
    summaries = [e.summary for e in entries]
    by_workload: dict[str, list[Entry]] = {}
    for e in entries:
        by_workload.setdefault(e.summary.workload_slug, []).append(e)
    keys: dict[str, str] = {}
    for wslug, runs in sorted(by_workload.items()):
        page = out_dir / "workloads" / wslug / "index.html"
        related = [c for c in comparisons or [] if c.workload == runs[0].summary.workload]
        keys[wslug] = _workload_key(runs, related, watched)
        if (known or {}).get(wslug) == keys[wslug] and (pages_elsewhere or page.is_file()):
            continue
        if write_text(
            page,
            render_html(
                "workload.html.j2",
                root="../../",
                assets=assets,
                comparisons=related,
                **_workload_context([e.summary for e in runs], watched),
            ),
            out_dir,
        ):
            written.append(page)
    index_written, index_pages = write_index(
        summaries, out_dir, assets, comparisons or [], campaigns or [], left_out or []
    )
    return written + index_written, keys, index_pages


def write_index(
    summaries: list[RunSummary],
    out_dir: Path,
    assets: Assets,
    comparisons: list[ComparisonLink],
    campaigns: list[CampaignPage] | None = None,
    left_out: list[str] | None = None,
) -> tuple[list[Path], list[str]]:
    """index.html (totals and the newest rows), the row data its script reads, index.csv and
    index.json; returns what was written and the index's file names. ``left_out``: the inputs
    this build read and left out, each with why (the messages the command prints): the page
    names them, so a run left out (an invalid log or annotations, a run id given twice) is not
    missing without a word where the site is read."""
    written: list[Path] = []
    index = out_dir / "index.html"
    rows = _index_rows(summaries, FIRST_ROWS)
    script, data = rows_script(
        rows_data(summaries, {o: (OUTCOME_SYMBOLS[o], OUTCOME_LABELS[o]) for o in OUTCOME_SYMBOLS})
    )
    records = _index_records(summaries)
    for path, text in (
        (out_dir / script, data),
        (out_dir / "index.csv", _index_csv(records)),
        (out_dir / "index.json", json.dumps(records, indent=1, ensure_ascii=False) + "\n"),
    ):
        if write_text(path, text, out_dir):
            written.append(path)
    per_workload = workload_targets(summaries)
    page = render_html(
        "site_index.html.j2",
        root="",
        assets=assets,
        rows=rows,
        runs=len(summaries),
        rows_script=script,
        totals=_totals(summaries),
        per_target=runs_per_target(summaries),
        workload_targets=per_workload[:FIRST_ROWS],
        more_workloads=max(0, len(per_workload) - FIRST_ROWS),
        plan_checks=plan_check_counts(per_workload),
        default_target=default_target(),
        status_order=STATUS_ORDER,
        symbols=SYMBOLS,
        comparisons=comparisons,
        campaigns=campaigns or [],
        grid=_version_grid(summaries),
        left_out=[_bounded_line(text) for text in (left_out or [])[:LEFT_OUT_SHOWN]],
        more_left_out=max(0, len(left_out or []) - LEFT_OUT_SHOWN),
    )
    if write_text(index, page, out_dir):
        written.append(index)
    with os.scandir(out_dir) as found:
        stale = sorted(e.name for e in found if ROWS_NAME.fullmatch(e.name) and e.name != script)
    for name in stale:
        remove_inside(out_dir, out_dir / name)
    return written, [*SITE_FILES[:3], script]
