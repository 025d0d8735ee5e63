"""The ``reportgen`` command line. Each command parses options and calls one plain function.

Exit codes shared by every command: 0 success, 1 the input is invalid (or, for ``--fail-on``,
the disposition is one the caller refuses), 2 usage error (bad option, missing file).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from reportgen import __version__

VALIDATE_HELP = """Check run logs (events.jsonl) against the event contract.

Every problem is printed as FILE:LINE: severity: message. A log with only warnings (a newer
minor schema, no run_end, a truncated last line) is valid; the report will call it incomplete.

\b
Exit codes: 0 every log valid, 1 some log invalid, 2 usage error.
\b
Example:
  reportgen validate runs/*/events.jsonl
  reportgen validate --json events.jsonl | jq '.[0].problems'
  reportgen validate s3://bucket/runs          every *.jsonl under the prefix
"""


class Location(click.ParamType):
    """A local path that must exist, or an s3:// location (checked when it is listed)."""

    name = "path-or-s3-url"

    def __init__(self, dir_okay: bool = True) -> None:
        self.local = click.Path(exists=True, dir_okay=dir_okay, path_type=Path)

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> object:
        from reportgen.storage import is_remote

        if is_remote(value):
            return value
        return self.local.convert(value, param, ctx)


def _remote_failed(command: str, exc: OSError) -> None:
    """An object store that cannot be reached or listed: one line, exit 2 (like a missing path)."""
    click.echo(f"reportgen {command}: {exc}", err=True)
    sys.exit(2)


class _Size(click.ParamType):
    name = "SIZE"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        from reportgen.storage.local import parse_size

        try:
            size = parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if size < 1:
            self.fail("the limit must be at least one byte", param, ctx)
        return size


def _max_log_size(command: Any) -> Any:
    return click.option(
        "--max-log-size",
        "max_bytes",
        default="1G",
        show_default=True,
        type=_Size(),
        help="Largest log read (K, M, G suffixes). Larger files, and anything that is not a regular file (FIFO, device, folder), are not read.",
    )(command)


def _follow_symlinks(command: Any) -> Any:
    return click.option(
        "--follow-symlinks",
        is_flag=True,
        help="Read logs through symlinks that lead out of the folders given (by default they are skipped and listed).",
    )(command)


def _write_failed(command: str, exc: Exception) -> None:
    """One line for an output folder that cannot be written (exit 2), never a traceback."""
    reason = getattr(exc, "strerror", None) or str(exc)
    where = getattr(exc, "filename", None)
    click.echo(f"reportgen {command}: cannot write {where + ': ' if where else ''}{reason}", err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="reportgen")
def main() -> None:
    """Turn collector run logs into migration reports with one disposition.

    \b
    The usual order:
      reportgen plan-check plan.toml --target neuron   before any hardware time
      python -m collector --workload plan.toml ...      on the device host
      reportgen validate runs/*/events.jsonl            on the laptop
      reportgen report runs/<id>/events.jsonl --out r/  one run, HTML and Markdown
      reportgen annotate runs/<id>/events.jsonl         a verdict skeleton for failed cells
      reportgen site runs/ --out site/                  many runs, history, changes
      reportgen compare BASELINE CANDIDATE --out c/     one workload, two targets
      reportgen publish site/ s3://bucket/site          the built site to object storage

    Logs can also be read from S3: give s3://bucket/prefix wherever a log or folder goes
    (credentials from the standard AWS chain; AWS_ENDPOINT_URL_S3 for S3-compatible stores).

    Run `reportgen COMMAND --help` for each command's options and exit codes.
    """


@main.command(help=VALIDATE_HELP)
@click.argument("logs", nargs=-1, required=True, type=Location(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON for machines.")
@click.option(
    "--max-problems",
    default=20,
    show_default=True,
    type=click.IntRange(min=0),
    help="Problems printed per file; 0 prints all.",
)
@_max_log_size
def validate(logs: tuple[Path | str, ...], as_json: bool, max_problems: int, max_bytes: int) -> None:
    from reportgen.contract.validation import validate_files
    from reportgen.storage import is_remote
    from reportgen.storage.sources import RemoteError, find_runs

    found: list[Any] = []
    skipped: list[str] = []
    try:
        for arg in logs:
            if is_remote(arg):
                listed = find_runs([arg], max_bytes=max_bytes)
                found += [entry.path for entry in listed.logs]
                skipped += [s.format() for s in listed.skipped]
            else:
                found.append(arg)
    except RemoteError as exc:
        _remote_failed("validate", exc)
    text, code = validate_files(found, as_json=as_json, max_problems=max_problems, max_bytes=max_bytes)
    for line in skipped:
        click.echo(line, err=True)
    click.echo(text)
    sys.exit(code or (1 if skipped else 0))


REPORT_HELP = """Render one run log as a migration report in HTML and Markdown.

The report ends in one disposition: suitable for the tested fixed-shape path, requires an
operator/layout/precision change, or blocked pending evidence. An annotations.toml next to
the log (or --annotations) explains mismatches after the run; the log is never modified.
LOG is an events.jsonl file or the run folder that holds it.

\b
Exit codes:
  0  report written
  1  the log or the annotations are invalid (problems printed as FILE:LINE: message)
  2  usage error
  3  report written, but the disposition is one that --fail-on refuses
\b
Examples:
  reportgen report runs/tiny-encoder-cpu-*/events.jsonl --out report/
  reportgen report events.jsonl --out out/ --format md --fail-on blocked
"""


def _format_list(*allowed: str) -> Any:
    """A click callback: a comma-separated list of formats, each one of ``allowed``."""

    def parse(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
        formats = tuple(f.strip() for f in value.split(",") if f.strip())
        if not formats or any(f not in allowed for f in formats):
            raise click.BadParameter(f"use a comma-separated list of {', '.join(allowed)}")
        return formats

    return parse


_formats = _format_list("html", "md", "md-summary")
_compare_formats = _format_list("html", "md", "json")


@main.command(help=REPORT_HELP)
@click.argument("log", type=Location())
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory for report.html, report.md and assets/.")
@click.option("--annotations", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Annotations TOML (default: annotations.toml next to the log).")
@click.option("--format", "formats", default="html,md", show_default=True, callback=_formats, help="Comma-separated: html, md, md-summary (report-summary.md: headline, scope, matrix, counts and findings in under 60,000 characters, for a pull-request comment).")
@click.option("--fail-on", type=click.Choice(["blocked", "change"]), help="Exit 3 when the disposition is blocked (or, with 'change', blocked or requires a change).")
@_max_log_size
def report(log: Any, out_dir: Path, annotations: Any, formats: tuple[str, ...], fail_on: str | None, max_bytes: int) -> None:
    from reportgen.render.report import EXIT_INVALID, ReportInputError, build_report
    from reportgen.storage.local import UnsafeOutput
    from reportgen.storage.sources import RemoteError, find_one

    try:
        entry = find_one(log, max_bytes=max_bytes)
    except RemoteError as exc:
        _remote_failed("report", exc)
    except ValueError as exc:
        click.echo(f"reportgen report: {exc}", err=True)
        sys.exit(2)
    log = entry.path
    annotations = annotations if annotations is not None else entry.annotations
    try:
        result = build_report(log, out_dir, formats, annotations, fail_on, max_bytes)
    except ReportInputError as exc:
        click.echo(str(exc), err=True)
        click.echo(f"{log}: no report written", err=True)
        sys.exit(EXIT_INVALID)
    except (UnsafeOutput, OSError) as exc:
        _write_failed("report", exc)
    click.echo(f"{result.disposition.headline}")
    for path in result.written:
        click.echo(f"wrote {path}")
    sys.exit(result.exit_code)


ANNOTATE_HELP = """Write an annotations.toml skeleton for a run's failed cells, ready for the owner to edit.

One [[explain]] entry per group of failed cells that share mode, dtype and where the log says
the mismatches lie; each explanation is prefilled with the measured facts, and no entry has a
verdict. The file goes next to the log (or to --out) and an existing file is never replaced
unless --force is given. Edit it, then run `reportgen report` again. LOG is an events.jsonl file or its run folder.

\b
Exit codes:
  0  skeleton written (or no failed cell: nothing to write)
  1  the log is invalid, or the file cannot be written
  2  usage error
  3  the file already exists and --force was not given (nothing written)
\b
Example:
  reportgen annotate runs/<id>/events.jsonl && $EDITOR runs/<id>/annotations.toml
"""


@main.command(help=ANNOTATE_HELP)
@click.argument("log", type=click.Path(exists=True, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Where to write (default: annotations.toml next to the log).")
@click.option("--force", is_flag=True, help="Replace an existing file.")
@_max_log_size
def annotate(log: Path, out: Path | None, force: bool, max_bytes: int) -> None:
    from reportgen.render.skeleton import SkeletonError, write_skeleton

    if log.is_dir():
        if not (log / "events.jsonl").is_file():
            click.echo(f"reportgen annotate: {log}: no events.jsonl in this folder", err=True)
            sys.exit(2)
        log = log / "events.jsonl"
    try:
        result = write_skeleton(log, out, force, max_bytes)
    except SkeletonError as exc:
        click.echo(f"reportgen annotate: {exc}", err=True)
        sys.exit(exc.code)
    if result.path is None:
        click.echo(f"{log}: no failed cell; nothing to annotate")
    else:
        click.echo(f"wrote {result.path}: {result.groups} entr{'y' if result.groups == 1 else 'ies'} for {result.cells} failed cell(s); add each verdict, then run reportgen report")


SITE_HELP = """Build a static site of many runs: an index, a page per run, a history per workload.

RUNS are logs, run directories, or folders that hold run directories (searched for
events.jsonl), local or in S3 (s3://bucket/prefix). An annotations.toml next to a log is used
for its report. Rebuilding into the same --out only re-reads logs that changed (for S3, known
from each object's ETag and size in the listing, so unchanged logs are not fetched) and only
rewrites files whose bytes change. When stat says no log, annotations file, searched folder,
template or configuration changed (size, mtime, ctime, inode), a rebuild reads and renders
nothing; a log rewritten with all of those unchanged would be missed, so files changed in the
last 3 s are always hashed. Delete --out/.reportgen-quick.json to have every log hashed.

Comparison pages (see `reportgen compare`) are declared in a site configuration TOML: --config,
or a site.toml directly inside a RUNS folder. It lists pairs by run id ([[compare]] baseline,
candidate) or a rule ([[compare_latest]] baseline_target, candidate_target: for each workload,
the latest run on one target against the latest on the other). The index links each page.
Nothing is compared across workloads.

Only regular files are read: FIFOs, devices, folders named *.jsonl, dangling symlinks, files
over --max-log-size and symlinks that lead out of the folders given are skipped, each listed
with the reason. Nothing is written or removed outside --out (a state file there that does
not check out is ignored, with a warning, for a full build).

\b
Exit codes: 0 built, 1 some input was skipped or not a valid run log, or a declared comparison
could not be built (the rest is built), 2 usage error, an unusable site configuration, or an
output folder that cannot be written (or leads outside itself through a symlink).
\b
Publish: the folder is plain static files with relative links. Look at it with
  python -m http.server -d site 8000
or copy it to any static web server, or `reportgen publish site s3://bucket/prefix`.
\b
Example:
  reportgen site runs/ s3://fleet-runs/nightly --out site
"""


@main.command(help=SITE_HELP)
@click.argument("runs", nargs=-1, required=True, type=Location())
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory the site is written to.")
@click.option("--config", "config", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Site configuration TOML declaring comparison pages (default: a site.toml inside a RUNS folder).")
@_max_log_size
@_follow_symlinks
def site(runs: tuple[Path | str, ...], out_dir: Path, config: Path | None, max_bytes: int, follow_symlinks: bool) -> None:
    # The no-op check first, with only what it needs imported: most rebuilds find nothing to
    # do, and the pages' modules (pydantic, plotly, numpy, jinja2) cost many times that check.
    from reportgen.publish.site_quick import SiteConfigError, quick_start
    from reportgen.storage.local import UnsafeOutput
    from reportgen.storage.sources import RemoteError

    try:
        quick = quick_start(list(runs), out_dir, config, max_bytes, follow_symlinks)
        result = quick.result if quick.unchanged else _build_site(runs, out_dir, config, max_bytes, follow_symlinks, quick)
    except SiteConfigError as exc:
        click.echo(f"reportgen site: {exc}", err=True)
        sys.exit(2)
    except RemoteError as exc:
        _remote_failed("site", exc)
    except (UnsafeOutput, OSError) as exc:
        _write_failed("site", exc)
    for message in result.warnings + result.skipped + result.rejected:
        click.echo(message, err=True)
    fetched = f", {len(result.fetched)} fetched from object storage" if any(isinstance(r, str) for r in runs) else ""
    skipped = f", {len(result.skipped)} entries skipped" if result.skipped else ""
    click.echo(f"{result.runs} runs, {len(result.written)} files written{fetched}{skipped}, site at {out_dir / 'index.html'}")
    sys.exit(1 if result.rejected or result.skipped else 0)


def _build_site(runs: tuple[Path | str, ...], out_dir: Path, config: Path | None, max_bytes: int, follow_symlinks: bool, quick: Any) -> Any:
    from reportgen.publish.site import NoRunLogs, build_site

    try:
        return build_site(list(runs), out_dir, config, max_bytes, follow_symlinks, require_logs=True, quick=quick)
    except NoRunLogs as exc:
        for skipped_entry in exc.skipped:
            click.echo(skipped_entry.format(), err=True)
        click.echo(f"reportgen site: no run log (*.jsonl) in {', '.join(map(str, runs))}; nothing written", err=True)
        sys.exit(1)


DIFF_HELP = """What changed between two runs of one workload, A (earlier) and B (later).

For an upgrade on one target (an SDK or torch release): cells that started failing, cells
fixed, cells added or removed, version changes, and warm-median ratios of the cells that passed
in both runs, each judged by a 95% interval from both runs' kept warm samples (faster, slower or
no clear difference), never by a fixed percentage. A ratio from a run whose performance
acceptance is stopped, or from a cell with CPU fallback, carries that caveat. Runs of two
workloads are refused; runs on two targets are compared but said to be a migration question
(see `reportgen compare`). A and B are logs or run folders, local or s3://.

\b
Exit codes:
  0  compared
  1  a log is invalid
  2  usage error: not exactly one log at A or B, or runs of different workloads
\b
Examples:
  reportgen diff runs/tiny-encoder-2.13 runs/tiny-encoder-2.14
  reportgen diff old/events.jsonl new/events.jsonl --format md > diff.md   # a PR comment
"""


@main.command(help=DIFF_HELP)
@click.argument("a", type=Location())
@click.argument("b", type=Location())
@click.option("--format", "fmt", type=click.Choice(["text", "md", "json"]), default="text", show_default=True, help="Terminal text, Markdown (for a pull request), or JSON.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@_max_log_size
@_follow_symlinks
def diff(a: Path | str, b: Path | str, fmt: str, as_json: bool, max_bytes: int, follow_symlinks: bool) -> None:
    from reportgen.contract.validation import LogChanged
    from reportgen.publish.diff import DiffRefused, diff_command
    from reportgen.render.report import ReportInputError
    from reportgen.storage.sources import RemoteError

    try:
        click.echo(diff_command(a, b, "json" if as_json else fmt, max_bytes, follow_symlinks))
    except RemoteError as exc:
        _remote_failed("diff", exc)
    except (ReportInputError, LogChanged) as exc:  # LogChanged: a log changed after its report view was built, while summarised
        click.echo(f"reportgen diff: {exc}", err=True)
        sys.exit(1)
    except (DiffRefused, ValueError) as exc:
        click.echo(f"reportgen diff: {exc}", err=True)
        sys.exit(2)


COMPARE_HELP = """Compare a baseline run with a candidate run of the same workload, cell by cell.

The migration question: the workload runs on the baseline target today; on the candidate, is
it as correct, and how much faster or slower per shape, at what compile cost? BASELINE and
CANDIDATE are logs or run directories, local or s3:// (an annotations.toml beside a log is
used).

Per cell: status on each side against its own reference, error statistics, task metric and
whether the references agree. Timing only for cells that passed on both sides while neither
side's performance acceptance is stopped: the warm-median ratio candidate/baseline with a 95%
interval from the kept samples, classified faster / slower / no clear difference by that
interval; cold first call and compile time ratios; the geometric mean (with how many cells it
covers); compiled-over-eager speedup per shape on each side. Cells with CPU fallback, a hit
recompile limit or a different timing scope are flagged and left out of the geometric mean.

Refused: runs of different workloads, model revisions or weights, and pairs where no cell has
the same saved inputs (sha256) on both sides. Cells whose inputs differ are listed as not
comparable and the rest are compared.

\b
Exit codes:
  0  comparison written (compare.html, compare.md, compare.json as asked; with either page,
     compare-details.csv: every cell, as the pages show at most 300 rows per table)
  1  a log or its annotations are invalid (problems printed as FILE:LINE: message)
  2  the pair is refused (the reason is printed), a usage error (such as a location that
     does not hold exactly one run log), or an object store that cannot be reached
\b
Example:
  reportgen compare runs/tiny-encoder-cuda-*/ runs/tiny-encoder-neuron-*/ --out cmp/
  reportgen compare base/events.jsonl cand/events.jsonl --out cmp/ --format json
"""


@main.command(help=COMPARE_HELP)
@click.argument("baseline", type=Location())
@click.argument("candidate", type=Location())
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory for compare.html, compare.md, compare.json and compare-details.csv.")
@click.option("--format", "formats", default="html,md", show_default=True, callback=_compare_formats, help="Comma-separated: html, md, json.")
def compare(baseline: Path | str, candidate: Path | str, out_dir: Path, formats: tuple[str, ...]) -> None:
    from reportgen.render.compare import EXIT_INVALID, EXIT_REFUSED, CompareRefused, LocationError, build_comparison
    from reportgen.render.report import ReportInputError
    from reportgen.storage.sources import RemoteError
    from reportgen.storage.local import UnsafeOutput

    try:
        result = build_comparison(baseline, candidate, out_dir, formats)
    except RemoteError as exc:
        _remote_failed("compare", exc)
    except ReportInputError as exc:
        click.echo(str(exc), err=True)
        click.echo("reportgen compare: no comparison written", err=True)
        sys.exit(EXIT_INVALID)
    except CompareRefused as exc:
        click.echo(f"reportgen compare: refused: {exc}", err=True)
        sys.exit(EXIT_REFUSED)
    except LocationError as exc:
        click.echo(f"reportgen compare: {exc}", err=True)
        sys.exit(2)
    except (UnsafeOutput, OSError) as exc:
        _write_failed("compare", exc)
    click.echo(result.comparison.headline)
    for path in result.written:
        click.echo(f"wrote {path}")


PUBLISH_HELP = """Upload a built site (or any folder, such as a run directory) to s3://bucket/prefix.

Only files whose bytes differ from the stored objects are uploaded (an object whose ETag is
the MD5 of the local file and whose size matches is left alone), each with its content type
(text/html, text/css, ...). Hidden files (the site's .reportgen-state.json and .reportgen-quick.json) and links are not
uploaded. Credentials come from the standard AWS chain; AWS_ENDPOINT_URL_S3 selects an
S3-compatible endpoint.

\b
Exit codes: 0 published, 2 usage error or the store could not be reached.
\b
Examples:
  reportgen publish site s3://fleet-reports/migration
  reportgen publish site s3://fleet-reports/migration --delete   also remove stale objects
  reportgen publish runs/<run-id> s3://fleet-runs/nightly/<run-id>   what a campaign task does
"""


@main.command(help=PUBLISH_HELP)
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("destination")
@click.option("--delete", is_flag=True, help="Also delete objects under DESTINATION that FOLDER no longer has.")
def publish(folder: Path, destination: str, delete: bool) -> None:
    from reportgen.storage import is_remote
    from reportgen.storage.sources import RemoteError, Store
    from reportgen.storage.remote import publish as publish_folder

    if not is_remote(destination):
        raise click.BadParameter("an s3://bucket/prefix location", param_hint="DESTINATION")
    if delete and not destination[len("s3://"):].partition("/")[2].strip("/"):
        raise click.BadParameter("--delete needs a prefix (s3://bucket/prefix): at the bucket root it would delete every other object", param_hint="DESTINATION")
    try:
        result = publish_folder(folder, destination, Store(), delete=delete)
    except RemoteError as exc:
        _remote_failed("publish", exc)
    for url in result.uploaded:
        click.echo(f"uploaded {url}", err=True)
    for url in result.deleted:
        click.echo(f"deleted {url}", err=True)
    click.echo(f"{len(result.uploaded)} uploaded, {result.unchanged} unchanged, {len(result.deleted)} deleted: {destination}")


PLAN_CHECK_HELP = """Review a workload plan against the target backend's documented limits, before hardware time.

Classifies the plan as compatible as specified, needing a revised test plan, or blocked by a
precision requirement. Each finding names the documented constraint and its source, and says
what to change or verify first. The constraint files are in reportgen/judge/constraints/.

\b
Exit codes:
  0  compatible as specified
  1  unreadable plan: not TOML, not UTF-8, or not the plan schema (collector/PLAN.md);
     one line names the file, line and key
  2  usage error
  3  needs a revised test plan (--write-revised writes one; its proposed values,
     marked proposed = true or UNDECIDED, keep exit 3 and the collector refuses the
     plan until a person replaces them)
  4  blocked by a precision requirement
\b
Example:
  reportgen plan-check plan.toml --target neuron --write-revised plan.revised.toml
"""


@main.command("plan-check", help=PLAN_CHECK_HELP)
@click.argument("plan", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--target", type=click.Choice(["neuron", "cuda", "cpu"]), default=None, help="Backend whose documented limits apply (default: the plan's [workload] target, else neuron).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md"]), default="text", show_default=True, help="Output: text, JSON, or Markdown for a review thread.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--write-revised", type=click.Path(dir_okay=False, path_type=Path), help="Write the revised plan here (when one is needed).")
def plan_check(plan: Path, target: str | None, fmt: str, as_json: bool, write_revised: Path | None) -> None:
    from collector.plan import PlanError
    from reportgen.judge import plancheck

    try:
        review = plancheck.review_plan(plan, target)
    except PlanError as exc:
        click.echo(f"reportgen plan-check: unreadable plan: {exc}", err=True)
        sys.exit(1)
    if as_json or fmt == "json":
        click.echo(plancheck.format_json(review))
    elif fmt == "md":
        from reportgen.render.templating import render_md

        click.echo(render_md("plancheck.md.j2", review=review), nl=False)
    else:
        click.echo(plancheck.format_text(review))
    if write_revised is not None:
        if review.revised is None:
            click.echo(f"no revised plan written: the plan is {review.headline.lower()}", err=True)
        else:
            plancheck.write_revised(review, plan, write_revised)
            click.echo(f"wrote {write_revised}", err=True)
    sys.exit(plancheck.EXIT_CODES[review.classification])
