"""`reportgen compare BASELINE CANDIDATE` (or --baseline RUN ... --candidate RUN ...): one workload, side by side.

Two phases as for a report: gather (read, validate, judge both runs, compare), then write
``compare.html``, ``compare.md`` and, asked for, ``compare.json``. The pages show at most
DETAIL_CAP rows per table; ``compare-details.csv``, written with them, holds every cell.
Nothing is written when a log is invalid or the pair is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from reportgen.contract.validation import paused_gc
from reportgen.judge.comparison import Comparison, CompareRefused, JudgedSide, compare_runs
from reportgen.render.compare_view import DETAIL_HEADER, build_compare_view, comparison_data, detail_rows
from reportgen.render.report import ReportInputError, read_judged
from reportgen.render.templating import (
    Assets,
    asset_names,
    csv_text,
    json_text,
    render_html,
    render_md,
    write_assets,
    write_text,
)
from reportgen.storage.local import DEFAULT_MAX_LOG_BYTES, LogChanged, refuse_unwritable
from reportgen.storage.sources import LogRef, RemoteLog, find_one, judged_with

EXIT_OK, EXIT_INVALID, EXIT_REFUSED = 0, 1, 2
FORMATS = ("html", "md", "json")


class LocationError(ValueError):
    """A location that does not hold exactly one run log (a usage error)."""


@dataclass
class CompareResult:
    comparison: Comparison
    written: list[Path] = field(default_factory=list)


def judge_side(
    location: LogRef | str, follow_symlinks: bool = False, max_bytes: int = DEFAULT_MAX_LOG_BYTES
) -> JudgedSide:
    """Read, validate and judge one run: a log named directly, the one run log in a run
    directory, or an s3:// one, with the annotations.toml beside it as it was found (through a
    link only with ``follow_symlinks``: beside the link); no report view is built. A log over
    ``max_bytes`` is refused, as every command refuses it."""
    if isinstance(location, RemoteLog):
        run, applied, disposition = read_judged(location, max_bytes=max_bytes)
    else:
        try:
            entry = find_one(location, None, follow_symlinks, max_bytes)
        except ValueError as exc:
            raise LocationError(str(exc)) from None
        annotations, beside = judged_with(entry)
        run, applied, disposition = read_judged(entry.path, annotations, max_bytes, beside=beside)
    return JudgedSide(run, applied.by_case, disposition)


Runs = LogRef | str | list[LogRef | str]  # one run, or a side's replicates (the first speaks for the side)


def _judged(runs: Runs, follow_symlinks: bool = False, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> list[JudgedSide]:
    return [judge_side(run, follow_symlinks, max_bytes) for run in (runs if isinstance(runs, list) else [runs])]


def gather(
    baseline: Runs, candidate: Runs, follow_symlinks: bool = False, max_bytes: int = DEFAULT_MAX_LOG_BYTES
) -> Comparison:
    """Judge every run and compare the sides; raises ReportInputError or CompareRefused."""
    base, cand = _judged(baseline, follow_symlinks, max_bytes), _judged(candidate, follow_symlinks, max_bytes)
    try:
        return compare_runs(base[0], cand[0], tuple(base[1:]), tuple(cand[1:]))
    except LogChanged as exc:  # an event read again from a log changed since it was checked
        raise ReportInputError(str(exc)) from None


DOWNLOADS = {
    "md": ("compare.md", "the comparison in Markdown"),
    "json": ("compare.json", "every figure unrounded, for scripts"),
}


def write_comparison(
    comparison: Comparison,
    out_dir: Path,
    formats: tuple[str, ...],
    assets: Assets,
    root: str = "",
    nav: list[tuple[str, str]] | None = None,
    html_name: str = "compare.html",
    out_root: Path | None = None,
    run_hrefs: Mapping[str, str] | None = None,
    also_written: Sequence[str] = (),
) -> list[Path]:
    """Write the pages; nothing outside ``out_root`` (default: out_dir), and nothing at all when
    one of them, or of ``also_written`` (names under out_dir the caller writes next), cannot be
    written. ``run_hrefs``: each run's page (by run id, replicates too) relative to the
    comparison page, where one exists (a site)."""
    view = build_compare_view(comparison)
    downloads = [DOWNLOADS[fmt] for fmt in FORMATS if fmt in DOWNLOADS and fmt in formats]
    if "html" in formats or "md" in formats:
        downloads.append((view.details, "every compared cell, one row each"))
    view = replace(view, run_hrefs=dict(run_hrefs or {}), downloads=tuple(downloads))
    context = {"view": view, "root": root, "assets": assets, "nav": nav or []}
    outputs = {
        "html": (html_name, lambda: render_html("compare.html.j2", **context)),
        "md": ("compare.md", lambda: render_md("compare.md.j2", **context)),
        "json": (
            "compare.json",
            lambda: json_text(comparison_data(comparison), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        ),
    }
    chosen = [outputs[fmt] for fmt in FORMATS if fmt in formats]
    if "html" in formats or "md" in formats:  # the pages cap their tables: every cell is in this file
        chosen.append((view.details, lambda: csv_text([DETAIL_HEADER, *detail_rows(comparison)])))
    base = out_root if out_root is not None else out_dir
    pages = [(out_dir / name, render()) for name, render in chosen]  # every page made before any is written
    refuse_unwritable(base, [path for path, _ in pages] + [out_dir / name for name in also_written])
    return [path for path, text in pages if write_text(path, text, base)]


def build_comparison(
    baseline: Runs,
    candidate: Runs,
    out_dir: Path,
    formats: tuple[str, ...] = ("html", "md"),
    follow_symlinks: bool = False,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
) -> CompareResult:
    with paused_gc():
        comparison = gather(baseline, candidate, follow_symlinks, max_bytes)
        assets = asset_names() if "html" in formats else Assets("", "")
        written = write_comparison(comparison, out_dir, formats, assets, also_written=assets.linked)
        if assets.linked:
            write_assets(out_dir)  # under the names asset_names gave
    return CompareResult(comparison, written)


__all__ = [
    "CompareRefused",
    "CompareResult",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_REFUSED",
    "build_comparison",
    "gather",
    "judge_side",
    "write_comparison",
]
