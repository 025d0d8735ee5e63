"""The ``reportgen`` command line. Each command parses options and calls one plain function.

Exit codes shared by every command: 0 success, 1 the input is invalid (or, for ``--fail-on``,
the disposition is one the caller refuses), 2 usage error (bad option, missing file) or an
output that cannot be written (standard output included: a full disk), 130 interrupted (Ctrl-C,
as the collector exits), 141 standard output's reader went away (``| head``; as the collector
and the campaign tool exit).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import click

from reportgen import __version__

VALIDATE_HELP = """Check run logs (events.jsonl) against the event contract.

Each LOG is a log file, a run folder (the events.jsonl in it), a folder of runs (every *.jsonl
under it, as `reportgen site` finds them) or an s3:// prefix (the same, in the object store).
Every problem is printed as FILE:LINE: severity: message. A log with only warnings is valid:
one with no run_end or a truncated last line is reported as incomplete; one of a newer minor
schema has the fields and kinds this reportgen does not know ignored, each named.

\b
An inspection log (python -m collector inspect) is no run log: met in a folder it is left out
with one line on stderr; named directly, that line and exit 1.

\b
Exit codes: 0 every log valid, 1 some log invalid or an entry in a folder skipped (listed), 2 usage
error (a path that does not exist, a folder with no log in it) or standard output cannot be
written (a full disk; one line says so), 141 standard output's reader went away (`| head`).
\b
Example:
  reportgen validate runs/*/events.jsonl
  reportgen validate runs/tiny-encoder-cpu-20261202T053312Z-ecd07d/   its events.jsonl
  reportgen validate --json events.jsonl | jq '.[0].problems'
  reportgen validate s3://bucket/runs          every *.jsonl under the prefix
"""


OUTPUT_FAILED = 2  # standard output cannot be written (a full disk), as for a folder (_write_failed)
BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a command whose reader went away (`| head`)


class _OutputFailed(Exception):
    """Writing to standard output (or error) failed. Not an OSError, so no command's handler
    for its own files takes it for one: it goes up to _Commands.main, which ends the command."""

    def __init__(self, exc: OSError, err: bool) -> None:
        super().__init__(str(exc))
        self.exc, self.err = exc, err


def _emit(text: str, err: bool = False, nl: bool = True) -> None:
    try:
        click.echo(text, err=err, nl=nl)
    except OSError as exc:
        raise _OutputFailed(exc, err) from None


def echo(message: object = "", err: bool = False, nl: bool = True) -> None:
    """Every line reportgen prints: a log's, plan's or object key's text may hold escape
    sequences or reordering characters, shown as <U+XXXX> instead (collector.visible)."""
    from collector.visible import terminal

    _emit(terminal(str(message)), err=err, nl=nl)


def echo_line(message: str) -> None:
    """A one-line result (a headline) that may hold a log's text: its line breaks are shown as
    <U+000A> too, so a forged field cannot print lines of its own into a CI job's output."""
    from collector.visible import visible

    _emit(visible(message, keep="\t"))


def _silence(stream: Any) -> None:
    """Point a stream's descriptor at /dev/null: what is still buffered for it is dropped there
    when Python exits, so that flush cannot fail too (and print a traceback of its own)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file descriptor (a test's captured output): nothing is flushed at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _shown_error(exc: BaseException) -> click.ClickException | None:
    """The usage or other click error whose message was being written when ``exc`` (an OSError
    of that write) was raised, else None: click writes it after leaving its handler, so the
    error is found in the frames ``exc`` passed through, not as its context."""
    frame = exc.__traceback__
    while frame is not None:
        found = frame.tb_frame.f_locals.get("self")
        if frame.tb_frame.f_code.co_name == "show" and isinstance(found, click.ClickException):
            return found
        frame = frame.tb_next
    return None


def _output_failed(failure: _OutputFailed) -> int:
    """The exit code for an output that failed, after one line on stderr saying so: 141 and
    nothing said when the reader went away (`| head`), else 2 (a full disk, an I/O error)."""
    exc = failure.exc
    _silence(sys.stderr if failure.err else sys.stdout)
    if isinstance(exc, BrokenPipeError):
        return BROKEN_PIPE
    if not failure.err:
        try:
            click.echo(f"reportgen: cannot write to standard output: {exc.strerror or exc}", err=True)
        except OSError:
            pass  # standard error is gone too: the exit code says it
    return OUTPUT_FAILED


class Location(click.ParamType):
    """A local path that must exist, or an s3:// location (checked when it is listed)."""

    name = "path-or-s3-url"

    def __init__(self, dir_okay: bool = True) -> None:
        self.local = click.Path(exists=True, dir_okay=dir_okay, path_type=Path)

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> object:
        from reportgen.storage import is_remote

        if is_remote(value):
            return value
        if not isinstance(value, (str, os.PathLike)):  # a default given as something else is a bug here
            self.fail(f"expected a path or s3:// location, got {value!r}", param, ctx)
        return self.local.convert(value, param, ctx)


class WritePath(click.Path):
    """A path to write to; the empty string is refused. ``Path("")`` is the current folder, so
    ``--out "$UNSET"`` in a script would otherwise write into wherever the command ran."""

    def __init__(self, file_okay: bool = True, dir_okay: bool = True) -> None:
        super().__init__(file_okay=file_okay, dir_okay=dir_okay, path_type=Path)

    def convert(
        self, value: str | os.PathLike[str], param: click.Parameter | None, ctx: click.Context | None
    ) -> str | bytes | os.PathLike[str]:
        if isinstance(value, str) and not value:
            self.fail("an empty path; name a file or folder (. for the current folder)", param, ctx)
        if isinstance(value, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:/", value):
            # s3://bucket/site (or s3:/bucket/site) would be written to a local folder named
            # 's3:', and read as published. (A drive letter, C:/, is one letter.)
            then = ", then `reportgen publish` the folder" if not self.file_okay else ""
            self.fail(f"{value!r} is a URL: this option writes a local path; name one{then}", param, ctx)
        return super().convert(value, param, ctx)


def _remote_failed(command: str, exc: OSError) -> None:
    """An object store that cannot be reached or listed: one line, exit 2 (like a missing path);
    a line break in a key or a path it names is shown as <U+000A>."""
    from collector.visible import visible

    echo(visible(f"reportgen {command}: {exc}", keep="\t"), err=True)
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
        help="Largest log read (K, M, G, T suffixes; at most 1024T). Larger files, and anything that is not a regular file (FIFO, device, folder), are not read.",
    )(command)


def _follow_symlinks(command: Any) -> Any:
    return click.option(
        "--follow-symlinks",
        is_flag=True,
        help="Read logs through symlinks that lead out of the folders given (by default they are skipped and listed).",
    )(command)


def _write_failed(command: str, exc: Exception) -> None:
    """One line for an output folder that cannot be written (exit 2), never a traceback."""
    from collector.visible import visible

    reason = getattr(exc, "strerror", None) or str(exc)
    where = getattr(exc, "filename", None)
    echo(
        visible(f"reportgen {command}: cannot write{' ' + str(where) if where else ''}: {reason}", keep="\t"), err=True
    )
    sys.exit(2)


# The folders a site writes below its --out (reportgen.publish.site): RUNS may not lie in one.
SITE_FOLDERS = ("runs", "workloads", "comparisons", "campaigns", "assets")
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command that Ctrl-C ended


def _guarded(callback: Any) -> Any:
    """An eager option's callback (--help, --version) whose printing ends as echo's does."""

    def call(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        try:
            return callback(ctx, param, value)
        except OSError as exc:  # it only prints: standard output failed
            raise _OutputFailed(exc, False) from None

    call.guarded = True  # type: ignore[attr-defined]
    return call


class _GuardedHelp(click.Command):
    """--help printed into a closed pipe or a full disk ends as any other output does."""

    def get_help_option(self, ctx: click.Context) -> click.Option | None:
        option = super().get_help_option(ctx)
        if option is not None and option.callback is not None and not getattr(option.callback, "guarded", False):
            option.callback = _guarded(option.callback)
        return option


class _Commands(_GuardedHelp, click.Group):
    """Ctrl-C ends any command with exit 130 and one line, not click's 'Aborted!' and exit 1,
    which a CI job would read as an invalid input. What it had written stays as it was (a
    site's pages each written whole; its next build completes the site).

    Python raises KeyboardInterrupt wherever the main thread is; inside a finalizer or a weakref
    callback (a run model leaving a per-run cache) it is only printed and dropped, and the
    command would go on to exit 0. Such a dropped interrupt is noted instead, and the command
    still ends with 130 when it returns (a second Ctrl-C stops it at once)."""

    command_class = _GuardedHelp

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Standard output that cannot be written ends any command in one place: 141 and
        nothing said when its reader went away (click would exit 1, which says an input was
        invalid), else one line on stderr and exit 2 (a full disk), never a traceback."""
        try:
            return super().main(*args, **kwargs)
        except _OutputFailed as failure:
            sys.exit(_output_failed(failure))
        except OSError as exc:
            if exc.filename is None and (unsaid := _shown_error(exc)) is not None:
                # Its message could not be written (standard error on a full disk): its own exit
                # code all the same (2 for a usage error), not 1, which says a log was invalid.
                _silence(sys.stderr)
                sys.exit(unsaid.exit_code)
            # A path no check expected to fail (a name longer than the file system allows fails
            # even Path.is_dir on Python 3.11): that path and why in one line, exit 2.
            if exc.filename is None:
                raise
            from reportgen.storage.local import shown

            echo(f"reportgen: {shown(exc.filename)}: {exc.strerror or exc}", err=True)
            sys.exit(2)

    def invoke(self, ctx: click.Context) -> Any:
        dropped: list[BaseException] = []
        previous = sys.unraisablehook

        def note(unraisable: Any) -> None:
            if isinstance(unraisable.exc_value, KeyboardInterrupt):
                dropped.append(unraisable.exc_value)
            else:
                previous(unraisable)

        sys.unraisablehook = note
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            dropped.append(KeyboardInterrupt())
        finally:
            sys.unraisablehook = previous
            if dropped:  # also over a command's own exit code: it was interrupted
                echo(f"{' '.join(filter(None, ('reportgen', ctx.invoked_subcommand)))}: interrupted", err=True)
                sys.exit(INTERRUPTED)


class _VersionOption(click.Option):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.callback = _guarded(self.callback)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="reportgen", cls=_VersionOption)
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
      reportgen diff runs/<old>/ runs/<new>/            what changed between two runs
      reportgen compare BASELINE CANDIDATE --out c/     one workload, two targets
      reportgen publish site/ s3://bucket/site          the built site to object storage

    validate, report, diff, compare and site also read logs from S3: give s3://bucket/prefix
    wherever a log or folder goes (credentials from the standard AWS chain;
    AWS_ENDPOINT_URL_S3 for S3-compatible stores). annotate writes beside its log: a local one.

    Run `reportgen COMMAND --help` for each command's options and exit codes. Every command
    exits 130 when interrupted (Ctrl-C), 141 when its standard output's reader went away
    (`| head`), and 2 with one line when standard output cannot be written (a full disk).
    """
    # `site` checks the data when it builds: a rebuild that finds nothing changed (the tool's
    # files included) judges nothing, and the check would cost it a fifth of its time.
    if click.get_current_context().invoked_subcommand != "site":
        _check_backend_data()


def _check_backend_data() -> None:
    """A constraint file with an unknown or missing key stops every command with one line (exit 2)."""
    from collector.descriptors import DescriptorError
    from reportgen.judge.backend_docs import BackendDocsError, load_backend_docs, targets

    try:
        for target in targets():
            load_backend_docs(target)
    except DescriptorError as exc:
        click.echo(f"reportgen: backend descriptor: {exc}", err=True)
        sys.exit(2)
    except BackendDocsError as exc:
        click.echo(f"reportgen: constraint data: {exc}", err=True)
        sys.exit(2)


def _target_choices() -> list[str]:
    """Every backend's name and aliases, from the backend descriptors."""
    from collector.descriptors import DescriptorError, target_choices

    try:
        return list(target_choices())
    except DescriptorError:
        return []  # _check_backend_data reports the descriptor before any command runs


def _default_target() -> str:
    from collector.descriptors import DescriptorError, default_target

    try:
        return default_target()
    except DescriptorError:
        return "?"  # _check_backend_data reports the descriptor before any command runs


@main.command(help=VALIDATE_HELP)
@click.argument("logs", nargs=-1, required=True, type=Location())
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON for machines.")
@click.option(
    "--max-problems",
    default=20,
    show_default=True,
    type=click.IntRange(min=0),
    help="Problems printed per file; 0 prints all.",
)
@_max_log_size
@_follow_symlinks
def validate(
    logs: tuple[Path | str, ...], as_json: bool, max_problems: int, max_bytes: int, follow_symlinks: bool
) -> None:
    from reportgen.contract.validation import validate_files
    from reportgen.storage import is_remote
    from reportgen.storage.sources import RemoteError, find_runs
    from reportgen.storage.local import inspection_note, is_inspection_log, shown

    found: list[Any] = []
    skipped: list[str] = []
    notes: list[str] = []  # inspection logs met in a folder: said, not counted
    named_inspections = 0  # inspection logs named directly: a wrong input
    try:
        for arg in logs:
            if is_remote(arg) or os.path.isdir(arg):
                listed = find_runs([arg], max_bytes=max_bytes, follow_symlinks=follow_symlinks)
                notes += [f"{inspection_note(path)}; left out (not counted as skipped)" for path in listed.inspections]
                if not listed.logs and not listed.skipped and not is_remote(arg):
                    for line in notes:
                        echo(line, err=True)
                    what = "only inspection logs" if listed.inspections else "no events.jsonl, no *.jsonl under it"
                    echo(f"reportgen validate: {shown(arg)}: no run log in this folder ({what})", err=True)
                    sys.exit(2)
                for entry in listed.logs:  # one not named *.inspection.jsonl is known by its first line
                    if isinstance(entry.path, Path) and is_inspection_log(entry.path, max_bytes):
                        notes.append(f"{inspection_note(entry.path)}; left out (not counted as skipped)")
                    else:
                        found.append(entry.path)
                skipped += [s.format() for s in listed.skipped]
                notes += [f"reportgen validate: {line}" for line in listed.warnings]
            elif is_inspection_log(arg, max_bytes):
                notes.append(inspection_note(arg))
                named_inspections += 1
            else:
                found.append(arg)
    except RemoteError as exc:
        _remote_failed("validate", exc)
    for line in skipped + notes:
        echo(line, err=True)
    code = 0
    # Each log's findings printed as it is read (and let go): a JSON list of one object a log.
    if as_json:
        echo("[" if found else "[]", nl=bool(found))
    for index, (text, valid) in enumerate(
        validate_files(found, as_json=as_json, max_problems=max_problems, max_bytes=max_bytes)
    ):
        code = code if valid else 1
        if as_json:  # as json.dumps of the whole list with indent=2 writes it
            if index:
                echo(",")
            echo("\n".join("  " + line for line in text.splitlines()), nl=False)
        else:
            echo(text)
    if as_json and found:
        echo("\n]")
    sys.exit(code or (1 if skipped or named_inspections else 0))


REPORT_HELP = """Render one run log as a migration report in HTML and Markdown.

The report ends in one disposition: suitable for the tested fixed-shape path, requires an
operator/layout/precision change, or blocked pending evidence. An annotations.toml next to
the log (or --annotations) explains mismatches after the run; the log is never modified.
LOG is an events.jsonl file or the run folder that holds it.

--out holds one report: the files of an earlier report there that this one does not write
(report.html, report.md, report-summary.md, details.csv, and the assets/ files this tool
names, unless another page there links them) are removed, each listed, so no other run's
files stay beside it. A report records what it wrote in --out/.reportgen-report.json; a file
by one of those names is removed only where that record holds it, unchanged since (a file of
your own named report.md, or a report you edited, is listed as left, never removed). Only
regular files are removed; any other file in --out is left alone, and a link is never
followed or removed. --single-file writes report.html alone (no record).

\b
Exit codes:
  0  report written
  1  the log, the annotations or the --inspection log are invalid or unreadable (problems
     printed as FILE:LINE: message), or the --inspection log is of another workload
  2  usage error (such as a location that does not hold exactly one run log, or a log larger than
     --max-log-size), or --out or standard output cannot be written (a full disk; one line says why)
  3  report written, but the disposition is one that --fail-on refuses
  141  standard output's reader went away (`| head`): what was written stays
\b
Examples:
  reportgen report sample_runs/tiny-encoder-cpu-20261202T053312Z-ecd07d/ --out report/
  reportgen report events.jsonl --out out/ --format md --fail-on blocked
"""


def _format_list(*allowed: str) -> Any:
    """A click callback: a comma-separated list of formats, each one of ``allowed``."""

    def parse(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
        formats = tuple(f.strip() for f in value.split(",") if f.strip())
        unknown = next((f for f in formats if f not in allowed), None)
        if not formats or unknown is not None:
            named = f"{unknown[:40]!r} is not a format: " if unknown is not None else ""
            raise click.BadParameter(f"{named}use a comma-separated list of {', '.join(allowed)}")
        return formats

    return parse


_formats = _format_list("html", "md", "md-summary")
_compare_formats = _format_list("html", "md", "json")


@main.command(help=REPORT_HELP)
@click.argument("log", type=Location())
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=WritePath(file_okay=False),
    help="Directory for report.html, report.md, details.csv (every cell) and assets/.",
)
@click.option(
    "--annotations",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Annotations TOML (default: annotations.toml next to the log).",
)
@click.option(
    "--format",
    "formats",
    default="html,md",
    show_default=True,
    callback=_formats,
    help="Comma-separated: html, md, md-summary (report-summary.md: headline, scope, matrix, counts and findings in under 60,000 characters, for a pull-request comment).",
)
@click.option(
    "--fail-on",
    type=click.Choice(["blocked", "change"]),
    help="Exit 3 when the disposition is blocked (or, with 'change', blocked or requires a change).",
)
@click.option(
    "--inspection",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An inspection log of the run's plan (python -m collector inspect): section 6 sets its predicted CPU fallback against the fallback the run observed.",
)
@click.option(
    "--single-file",
    is_flag=True,
    help="Write report.html alone, with its stylesheet and script inside it: one file to attach to a ticket (a few kB more; no report.md, details.csv or assets/). Cannot be combined with --format.",
)
@_max_log_size
@_follow_symlinks
def report(
    log: Any,
    out_dir: Path,
    annotations: Any,
    formats: tuple[str, ...],
    fail_on: str | None,
    max_bytes: int,
    inspection: Path | None,
    single_file: bool,
    follow_symlinks: bool,
) -> None:
    from reportgen.render.report import EXIT_INVALID, ReportInputError, build_report
    from reportgen.storage.local import UnsafeOutput, shown
    from reportgen.storage.sources import RemoteError, find_one, judged_with

    if (
        single_file
        and click.get_current_context().get_parameter_source("formats") != click.core.ParameterSource.DEFAULT
    ):
        echo("reportgen report: --single-file writes report.html alone: leave out --format", err=True)
        sys.exit(2)
    try:
        entry = find_one(log, None, follow_symlinks, max_bytes)
    except RemoteError as exc:
        _remote_failed("report", exc)
    except ValueError as exc:
        echo(f"reportgen report: {exc}", err=True)
        sys.exit(2)
    log = entry.path
    beside = True
    if annotations is None:
        annotations, beside = judged_with(entry)
    from reportgen.storage.local import OutputBusy, folder_lock

    try:
        # One command at a time writes a folder: two reports into one --out at once left one
        # run's details.csv beside the other's pages, both exiting 0.
        with folder_lock(out_dir):
            result = build_report(
                log,
                out_dir,
                formats,
                annotations,
                fail_on,
                max_bytes,
                inspection,
                single_file=single_file,
                beside=beside,
            )
    except OutputBusy as exc:
        echo(f"reportgen report: {exc}", err=True)
        sys.exit(2)
    except ReportInputError as exc:
        echo(str(exc), err=True)
        echo(f"{shown(log)}: no report written", err=True)
        sys.exit(EXIT_INVALID)
    except (UnsafeOutput, OSError) as exc:
        _write_failed("report", exc)
    echo_line(result.disposition.led_headline)
    for path in result.written:
        echo(f"wrote {shown(path)}")
    for path in result.removed:
        echo(f"removed {shown(path)} (an earlier report's, not written this time)")
    for path in result.left:
        echo(f"left {shown(path)}: not written this time, and no record says an earlier report here wrote it as it is")
    sys.exit(result.exit_code)


ANNOTATE_HELP = """Write an annotations.toml skeleton for a run's failed cells, ready for the owner to edit.

One [[explain]] entry per group of failed cells that share mode, dtype and where the log says
the mismatches lie; each explanation is prefilled with the measured facts, and no entry has a
verdict. The file goes next to the log (or to --out) and an existing file is never replaced
unless --force is given; a file that reads as a JSON-lines log (a run's events.jsonl) is never
replaced, --force or not. When an annotations.toml already sits next to the log, write beside it
(--out annotations.new.toml): the new file holds only the failed cells it does not explain, to
move into it. Edit it, then run `reportgen report` again. LOG is an events.jsonl file or its run folder.

\b
Exit codes:
  0  skeleton written (or no failed cell: nothing to write)
  1  the log is invalid, or the file cannot be written
  2  usage error (--out is the log annotated, or another file that reads as a log), or
     standard output cannot be written (a full disk; one line says so)
  3  the file already exists and --force was not given (nothing written)
  141  standard output's reader went away (`| head`): the file is written
\b
Example:
  reportgen annotate runs/<id>/events.jsonl && $EDITOR runs/<id>/annotations.toml
  reportgen annotate runs/<id>/events.jsonl --out runs/<id>/annotations.new.toml
"""


@main.command(help=ANNOTATE_HELP)
@click.argument("log", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--out",
    type=WritePath(dir_okay=False),
    help="Where to write (default: annotations.toml next to the log). Beside an existing annotations.toml, e.g. annotations.new.toml: only the cells it does not explain.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing file: a regular file only; a link, folder, device or FIFO is refused (never written through), and so is a file that reads as a JSON-lines log (a run's events.jsonl).",
)
@_max_log_size
@_follow_symlinks
def annotate(log: Path, out: Path | None, force: bool, max_bytes: int, follow_symlinks: bool) -> None:
    from reportgen.render.skeleton import SkeletonError, write_skeleton
    from reportgen.storage.local import shown
    from reportgen.storage.sources import find_one

    given = log
    if log.is_dir():
        if not (log / "events.jsonl").is_file():
            echo(f"reportgen annotate: {shown(log)}: no events.jsonl in this folder", err=True)
            sys.exit(2)
        log = log / "events.jsonl"
    try:  # found as report finds it (a link out of a folder only when asked); written beside ``log``
        find_one(given, None, follow_symlinks, max_bytes)
    except ValueError as exc:
        echo(f"reportgen annotate: {exc}", err=True)
        sys.exit(2)
    try:
        result = write_skeleton(log, out, force, max_bytes)
    except SkeletonError as exc:
        echo(f"reportgen annotate: {exc}", err=True)
        sys.exit(exc.code)
    beside = (
        f" ({result.explained} failed cell(s) left out: {shown(result.existing)} explains them)"
        if result.explained and result.existing
        else ""
    )
    if result.path is None and result.explained and result.decided == result.explained:
        echo(
            f"{shown(log)}: every failed cell is explained and has a verdict in {shown(result.existing)}; nothing to annotate"
        )
    elif result.path is None and result.explained:
        echo(
            f"{shown(log)}: every failed cell is explained in {shown(result.existing)}; nothing to annotate: "
            f"{result.explained - result.decided} of them await a verdict there"
        )
    elif result.path is None:
        echo(f"{shown(log)}: no failed cell; nothing to annotate")
    else:
        echo(
            f"wrote {shown(result.path)}: {result.groups} entr{'y' if result.groups == 1 else 'ies'} for {result.cells} failed cell(s){beside}; add each verdict, then run reportgen report"
        )


SITE_HELP = """Build a static site of many runs: an index, a page per run, a history per workload.

RUNS are logs, run directories, or folders that hold run directories (searched for
events.jsonl), local or in S3 (s3://bucket/prefix). An annotations.toml next to a log is used
for its report. Rebuilding into the same --out only re-reads logs that changed (for S3, known
from each object's ETag and size in the listing, so unchanged logs are not fetched) and only
rewrites files whose bytes change. When stat says no log, annotations file, searched folder,
template, file of the tool (its code, its constraint data) or configuration changed (size,
mtime, ctime, inode), a rebuild reads, judges and renders nothing; a log rewritten with all
of those unchanged would be missed, so files changed in the last 3 s are always hashed.
Delete --out/.reportgen-quick.json to have every log hashed and judged again. The
state a build keeps in --out is a cache bound to that build: edited, copied from another
folder, or without its record, it is not reused (a warning, then every log is judged). Its
record is a stat of the state, not a secret: whoever can write --out can edit both, as they
can edit the pages; delete both to have the site judged from its logs alone.
A build holds --out/.reportgen-lock while it runs: a second build into the same --out at
the same time is refused (exit 2) and writes nothing.

Comparison pages (see `reportgen compare`) are declared in a site configuration TOML: --config,
or a site.toml directly inside a RUNS folder. It lists pairs by run id ([[compare]] baseline,
candidate) or a rule ([[compare_latest]] baseline_target, candidate_target: for each workload,
the latest run on one target against the latest on the other); a [[compare]] side may be a
list of run ids (replicates). The index links each page. Nothing is compared across workloads.

Each workload history names every change of declared criteria between consecutive runs before
their results, and its timing columns and trend charts follow the cells with the largest change
against the previous run; [history] cases = [...] in the configuration adds cells always shown.

Only regular files are read: FIFOs, devices, folders named *.jsonl, dangling symlinks, files
over --max-log-size and symlinks that lead out of the folders given are skipped, each listed
with the reason. Nothing is written or removed outside --out (a state file there that does
not check out is ignored, with a warning, for a full build).

\b
Exit codes: 0 built, 1 some input was skipped or not a valid run log, or a declared comparison
could not be built (the rest is built), 2 usage error (RUNS that hold no run log and nothing
skipped either), an unusable site configuration, or an output folder (or standard output) that cannot be written (or leads outside itself through a
symlink), 141 standard output's reader went away (`| head`): the site is built. Progress goes to
stderr, one line per log read; a stderr that cannot be written stops the progress, not the
build (`site RUNS 2>&1 | head` builds the site and exits 141).
\b
Publish: the folder is plain static files with relative links. Look at it with
  python -m http.server -d site 8000
or copy it to any static web server, or `reportgen publish site s3://bucket/prefix`.
A build on a machine without the previous --out (a CI runner) continues from the published
site with --published S3_URL: the state `reportgen publish` uploaded there says which runs
(by URL, ETag and size) already have pages, so only new or changed runs are fetched and
rendered into --out; publish --out to the same place afterwards. Besides index.csv and
index.json, index.parquet holds one row per run and cell (docs/campaigns.md: columns, a query).

\b
Example:
  reportgen site runs/ s3://fleet-runs/nightly --out site
  reportgen site s3://fleet-runs/nightly --out site --published s3://fleet-reports/migration
  reportgen publish site s3://fleet-reports/migration
"""


@main.command(help=SITE_HELP)
@click.argument("runs", nargs=-1, required=True, type=Location())
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=WritePath(file_okay=False),
    help="Directory the site is written to: a new or empty one, one a reportgen command wrote, or one whose files the site does not replace (index.html, index.csv, index.json, index.parquet, runs/, workloads/, comparisons/, campaigns/, assets/) and that holds no run log but those given as RUNS (its first build looks through at most 20,000 of its entries, RUNS below it aside, and refuses a larger one).",
)
@click.option(
    "--config",
    "config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Site configuration TOML declaring comparison pages (default: a site.toml inside a RUNS folder).",
)
@click.option(
    "--published",
    "published",
    metavar="S3_URL",
    help="Where this site is published (reportgen publish): continue from the state published there, so only new or changed runs are fetched and rendered; publish --out there afterwards.",
)
@_max_log_size
@_follow_symlinks
def site(
    runs: tuple[Path | str, ...],
    out_dir: Path,
    config: Path | None,
    max_bytes: int,
    follow_symlinks: bool,
    published: str | None,
) -> None:
    # The no-op check first, with only what it needs imported: most rebuilds find nothing to
    # do, and the pages' modules (pydantic, pandas, numpy, jinja2) cost many times that check.
    # The object-store modules are imported only for s3:// locations, so RemoteError is looked
    # up only when an error comes.
    from reportgen.publish.site_quick import SiteConfigError, quick_start
    from reportgen.storage.local import UnsafeOutput, shown

    if published is not None:
        from reportgen.storage.remote import RemoteError, split_url

        try:
            split_url(published)
        except RemoteError as exc:
            raise click.BadParameter(str(exc), param_hint="--published") from None
    # A site at or below a folder of runs holds a copy of each run's log: the next build of that
    # folder (to another --out), and validate, would read the copies as runs, and a copy has
    # no annotations beside it. Refused before anything is written.
    # Nor may a folder of runs (or a log) lie in one of the folders the site writes (runs/,
    # workloads/, ...): the site would write into them, or its copies beside the user's runs.
    # Elsewhere below --out (a Pages root with data/ in it) the site writes nothing.
    out_real = os.path.realpath(out_dir)
    for where in runs:
        if not isinstance(where, Path):
            continue
        top = os.path.realpath(where)
        # A log named directly: its run folder, which a build of the folder above reads.
        folder = top if where.is_dir() else os.path.dirname(top)
        if out_real == folder or out_real.startswith(folder.rstrip(os.sep) + os.sep):
            named = shown(where) if where.is_dir() else f"{shown(where.parent)} (the folder of {shown(where)})"
            raise click.BadParameter(
                f"{shown(out_dir)} is inside RUNS {named}: the site's copy of each log would be read as a run "
                "by the next build and by validate; give --out a folder outside RUNS",
                param_hint="--out",
            )
        below = (
            os.path.relpath(top, out_real).split(os.sep)[0] if top.startswith(out_real.rstrip(os.sep) + os.sep) else ""
        )
        if below in SITE_FOLDERS:
            raise click.BadParameter(
                f"RUNS {shown(where)} is inside {shown(out_dir / below)}, a folder the site writes: its copies of "
                "the logs would go into or beside your runs; give --out a folder whose "
                f"{', '.join(f'{name}/' for name in SITE_FOLDERS)} do not hold RUNS",
                param_hint="--out",
            )
    if (foreign := _foreign_output(out_dir, [Path(w) for w in runs if isinstance(w, Path)])) is not None:
        raise click.BadParameter(foreign, param_hint="--out")
    from reportgen.storage.local import OutputBusy, output_lock

    try:
        with output_lock(out_dir):
            quick = quick_start(list(runs), out_dir, config, max_bytes, follow_symlinks)
            result = (
                quick.result
                if quick.unchanged
                else _build_site(runs, out_dir, config, max_bytes, follow_symlinks, quick, published)
            )
    except OutputBusy as exc:
        echo(f"reportgen site: {exc}", err=True)
        sys.exit(2)
    except SiteConfigError as exc:
        echo(f"reportgen site: {exc}", err=True)
        sys.exit(2)
    except (UnsafeOutput, OSError) as exc:
        from reportgen.storage.remote import RemoteError

        if isinstance(exc, RemoteError):
            _remote_failed("site", exc)
        _write_failed("site", exc)
    for message in result.warnings + result.skipped + result.rejected:
        echo(message, err=True)
    fetched = (
        f", {len(result.fetched)} fetched from object storage"
        if published or any(isinstance(r, str) for r in runs)
        else ""
    )
    skipped = (
        f", {len(result.skipped)} entr{'y' if len(result.skipped) == 1 else 'ies'} skipped" if result.skipped else ""
    )
    # Every reason for exit 1 is counted here, as it is listed above (a log skipped as a second
    # copy of a run id, or as invalid, is no folder entry skipped).
    problems = len(result.rejected)
    rejected = f", {problems} problem{'' if problems == 1 else 's'} (listed above)" if problems else ""
    echo(
        f"{result.runs} run{'' if result.runs == 1 else 's'}, {len(result.written)} files written{fetched}{skipped}{rejected}, site at {shown(out_dir / 'index.html')}"
    )
    sys.exit(1 if result.rejected or result.skipped else 0)


def _build_site(
    runs: tuple[Path | str, ...],
    out_dir: Path,
    config: Path | None,
    max_bytes: int,
    follow_symlinks: bool,
    quick: Any,
    published: str | None = None,
) -> Any:
    _check_backend_data()  # before the pages' modules, which read the constraint data as they load
    from reportgen.publish.site import NoRunLogs, build_site
    from reportgen.storage.local import shown

    try:
        return build_site(
            list(runs), out_dir, config, max_bytes, follow_symlinks, require_logs=True, quick=quick, published=published
        )
    except NoRunLogs as exc:
        for skipped_entry in exc.skipped:
            echo(skipped_entry.format(), err=True)
        where = ", ".join(map(shown, runs))
        if exc.output_met:
            where += f" outside --out {shown(out_dir)} (the output folder is never searched for logs: give --out a folder outside RUNS)"
        none = (
            f"no run log (*.jsonl) read in {where}: each entry found was skipped (listed above)"
            if exc.skipped
            else f"no run log (*.jsonl) in {where}"
        )
        echo(f"reportgen site: {none}; nothing written", err=True)
        # Entries skipped (a FIFO, a file over --max-log-size): inputs not read, as a skipped log
        # among others is (1). Nothing there at all: the RUNS given were wrong, as validate says (2).
        sys.exit(1 if exc.skipped else 2)


DIFF_HELP = """What changed between runs of one workload: A (earlier) and B (later), or replicates of each.

First every change of criteria between the two runs' declarations (tolerances, judged regions,
update rules, task criteria, reference as declared and as computed, planned matrix, timing
scope, warm repetitions, re-measure rounds, a generation or training plan's settings, weights'
and inputs' sha256 (over the input shapes both runs hold, where each shape is hashed), where
compiled cells were compiled and timed, collector and schema versions): a cell that passes only
under a changed criterion is listed as such, never as fixed.
Then the version, code and data, and host changes (or that a host change cannot be ruled out,
where the logs kept no threads or load; with replicates, each reading as each run gave it),
and the cells whose status is the same but said differently (an owner's verdict given or taken
back in the annotations) before the disposition. Then, for an upgrade on one target (an SDK or torch
release): cells that started failing, cells fixed, cells added or removed, and warm-median
ratios of the cells that passed in both runs, each judged by a 95%
interval (faster, slower or no clear difference), never by a fixed percentage. With one run a
side that interval covers sampling within the two runs only, and says so (and gives no rate of
verdicts read by chance: how far a second run would move is not measured); give replicates
(--before RUN --before RUN ... --after RUN ...) and it covers the variation between runs too
(the wider of a hierarchical bootstrap with a fixed seed and a t interval on the runs' log
medians: the same runs give the same output, and few runs give a wide interval). Where a run
of either side has mismatching or errored cells without a verdict, its performance acceptance is stopped
and no timing is compared (as in `reportgen compare`): the reason stands in place of any ratio.
A ratio from a cell with CPU fallback or a hit recompile limit, under a changed timing scope,
warm repetitions, or re-measure rounds (of a cell measured again), or across a changed host
(torch threads, CPU affinity)
carries that caveat and is no verdict; a cell of another model revision, other weights or
other inputs gets no ratio, only that reason; a cell whose warm series is unstable reads
"unstable timing" (one the rules cannot classify, too short or every sample one value, "timing
not classified") and decides nothing, as does a stable series measured again at a speed none of
the cell's earlier series ran at ("the attempts disagree").
Runs of two workloads are refused; runs on two
targets are compared but said to be a migration question (see `reportgen compare`). Runs are
logs or run folders, local or s3://.

\b
Exit codes:
  0  compared
  1  a log is invalid
  3  compared, but --fail-on refuses the later run (the reasons on stderr)
  2  standard output cannot be written (a full disk; one line says so), or a
     usage error: not exactly one log at a location, runs of different workloads, replicates
     of one side on different targets or backends, or differing in criteria (weights, inputs,
     tolerances, ...), versions, code, data or host settings (the message names them), a
     copy of a run (the same warm samples in every cell, or in one whose samples are all
     distinct), or a run given twice
  141  standard output's reader went away (`| head`)
\b
Examples:
  reportgen diff runs/tiny-encoder-2.13 runs/tiny-encoder-2.14
  reportgen diff old/events.jsonl new/events.jsonl --format md > diff.md   # a PR comment
  reportgen diff main/run pr/run --fail-on worse                           # a CI gate
  reportgen diff --before runs/a1 --before runs/a2 --before runs/a3 \\
                 --after runs/b1 --after runs/b2 --after runs/b3          # replicates
"""


def _output_format(fmt: str, as_json: bool) -> str:
    """--format, or json for --json; both, naming another format, is a usage error (the output
    silently ignored one of them)."""
    given = click.get_current_context().get_parameter_source("fmt") != click.core.ParameterSource.DEFAULT
    if as_json and given and fmt != "json":
        raise click.UsageError(f"--json and --format {fmt} ask for two outputs: give one")
    return "json" if as_json else fmt


def _sides(
    command: str, positional: tuple[Any, ...], first: tuple[Any, ...], second: tuple[Any, ...], names: tuple[str, str]
) -> tuple[list[Any], list[Any]]:
    """Two positional runs, or each side's runs by option: one form, not both (a usage error)."""
    if positional and (first or second):
        raise click.UsageError(f"give either two runs or --{names[0]}/--{names[1]}, not both")
    if positional:
        if len(positional) != 2:
            raise click.UsageError(
                f"give two runs ({names[0]} then {names[1]}), or --{names[0]} RUN ... --{names[1]} RUN ...; got {len(positional)}"
            )
        return [positional[0]], [positional[1]]
    if not first or not second:
        raise click.UsageError(f"give at least one --{names[0]} and one --{names[1]} run (or two runs as arguments)")
    return list(first), list(second)


@main.command(help=DIFF_HELP)
@click.argument("runs", nargs=-1, type=Location())
@click.option("--before", "befores", multiple=True, type=Location(), help="An earlier run (repeat for replicates).")
@click.option("--after", "afters", multiple=True, type=Location(), help="A later run (repeat for replicates).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "md", "json"]),
    default="text",
    show_default=True,
    help="Terminal text, Markdown (for a pull request), or JSON.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option(
    "--fail-on",
    type=click.Choice(["new-failures", "worse", "undecided"]),
    help="Exit 3 when cells started failing, or passed before and were not tested in the later run (it stopped early, did not select them, or left them out of its matrix) ('new-failures'), or when they did, the disposition moved away from suitable, or a cell or the geometric mean is judged slower ('worse'). With 'worse', flagged, unstable and unclassified ratios decide nothing here either, and speed gates only with replicates (more than one run on a side, --before/--after; 3 or more a side for a useful interval): with one run on each side a ratio's interval covers sampling within the two runs only, not the variation between runs, and with 'worse' the cells read slower there are named on stderr, not gated. 'undecided' is the strict gate: what 'worse' refuses, and also any timing read slower that could not be judged (unstable, not classified, flagged, or one run a side), and any cell that passed on both sides whose timing was not compared (other weights or inputs, a stopped performance acceptance): a pass then means every compared timing was judged or read no slower, and no passing cell went uncompared.",
)
@_max_log_size
@_follow_symlinks
def diff(
    runs: tuple[Path | str, ...],
    befores: tuple[Path | str, ...],
    afters: tuple[Path | str, ...],
    fmt: str,
    as_json: bool,
    fail_on: str | None,
    max_bytes: int,
    follow_symlinks: bool,
) -> None:
    from reportgen.storage.local import LogChanged
    from reportgen.publish.diff import DiffRefused, diff_command
    from reportgen.render.report import ReportInputError
    from reportgen.storage.sources import RemoteError

    fmt = _output_format(fmt, as_json)
    a, b = _sides("diff", runs, befores, afters, ("before", "after"))
    try:
        text, refused, ungated = diff_command(a, b, fmt, max_bytes, follow_symlinks, fail_on)
        echo(text)
        if ungated:
            echo(f"reportgen diff: --fail-on {fail_on}: {ungated}", err=True)
        if refused:
            echo(f"reportgen diff: --fail-on {fail_on}: {'; '.join(refused)}", err=True)
            sys.exit(3)
    except RemoteError as exc:
        _remote_failed("diff", exc)
    except (
        ReportInputError,
        LogChanged,
    ) as exc:  # LogChanged: a log changed after its report view was built, while summarised
        echo(f"reportgen diff: {exc}", err=True)
        sys.exit(1)
    except (DiffRefused, ValueError) as exc:
        echo(f"reportgen diff: {exc}", err=True)
        sys.exit(2)


COMPARE_HELP = """Compare a baseline run with a candidate run of the same workload, cell by cell.

The migration question: the workload runs on the baseline target today; on the candidate, is
it as correct, and how much faster or slower per shape, at what compile cost? BASELINE and
CANDIDATE are logs or run directories, local or s3:// (an annotations.toml beside a log is
used). For replicates give each side's runs by option instead: --baseline RUN --baseline RUN
... --candidate RUN ... (runs of one workload, target and backend a side, with the same
criteria, weights, inputs, versions, code, data and host settings: device, environment
variables, threads, affinity, CPU count and governor; a load or clock reading may differ, and
a copy of a run is refused; the first speaks for the side's
statuses and criteria). Every criterion the two runs declared differently is listed
before any result, and a cell judged under a changed criterion says so.

Per cell: status on each side against its own reference, error statistics, task metric and
whether the references agree. Timing only for cells that passed on both sides while neither
side's performance acceptance is stopped: the warm-median ratio candidate/baseline with a 95%
interval from the kept samples, classified faster / slower / no clear difference by that
interval (with one run a side it covers sampling within the two runs only, and says so; with
replicates it includes the variation between runs: the wider of a hierarchical bootstrap with
a fixed seed and a t interval on the runs' log medians, so the same runs give the same bytes); a cell whose warm series is unstable reads
"unstable timing" (one the rules cannot classify, too short or every sample one value: "timing not classified"), with the ratio of its medians and no interval, and decides nothing; cold first call and compile time ratios; the geometric mean (with how many cells it
covers); compiled-over-eager speedup per shape on each side. Cells with CPU fallback, a hit
recompile limit or a different timing scope are flagged and left out of the geometric mean; so
is every cell when a timing criterion (timing scope, warm repetitions, re-measure rounds) or the
host's torch threads or CPU affinity changed, as in `reportgen diff`.

Refused: runs of different workloads, model revisions or weights, and pairs where no cell has
the same saved inputs on both sides. Weights and inputs are the same by their content sha256
(schema 1.2 logs: the tensors, however the file was written), else by the file sha256; logs
that predate content hashes and whose files differ in bytes are compared by declaration (the
same model revision, the same planned cell), and the pages say which was used. Cells whose
inputs differ are listed as not comparable and the rest are compared.

\b
Exit codes:
  0  comparison written (compare.html, compare.md, compare.json as asked; with either page,
     compare-details.csv: every cell, as the pages show at most 300 rows per table)
  1  a log or its annotations are invalid (problems printed as FILE:LINE: message)
  2  the pair is refused (the reason is printed), a usage error (such as a location that
     does not hold exactly one run log), an object store that cannot be reached, or --out
     or standard output that cannot be written (a full disk; one line says why)
  141  standard output's reader went away (`| head`): the comparison is written
\b
Example:
  reportgen compare runs/<cuda-run>/ runs/<neuron-run>/ --out cmp/
  reportgen compare base/events.jsonl cand/events.jsonl --out cmp/ --format json
  reportgen compare --baseline cuda-1/ --baseline cuda-2/ --baseline cuda-3/ \\
                    --candidate neuron-1/ --candidate neuron-2/ --candidate neuron-3/ --out cmp/
"""


@main.command(help=COMPARE_HELP)
@click.argument("runs", nargs=-1, type=Location())
@click.option("--baseline", "baselines", multiple=True, type=Location(), help="A baseline run (repeat for replicates).")
@click.option(
    "--candidate", "candidates", multiple=True, type=Location(), help="A candidate run (repeat for replicates)."
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=WritePath(file_okay=False),
    help="Directory for compare.html (with its assets/), compare.md, compare.json and compare-details.csv.",
)
@click.option(
    "--format",
    "formats",
    default="html,md",
    show_default=True,
    callback=_compare_formats,
    help="Comma-separated: html, md, json.",
)
@_max_log_size
@_follow_symlinks
def compare(
    runs: tuple[Path | str, ...],
    baselines: tuple[Path | str, ...],
    candidates: tuple[Path | str, ...],
    out_dir: Path,
    formats: tuple[str, ...],
    max_bytes: int,
    follow_symlinks: bool,
) -> None:
    from reportgen.render.compare import EXIT_INVALID, EXIT_REFUSED, CompareRefused, LocationError, build_comparison
    from reportgen.render.report import ReportInputError
    from reportgen.storage.sources import RemoteError
    from reportgen.storage.local import UnsafeOutput, shown

    from reportgen.storage.local import OutputBusy, folder_lock

    baseline, candidate = _sides("compare", runs, baselines, candidates, ("baseline", "candidate"))
    try:
        with folder_lock(out_dir):  # one command at a time writes a folder, as a report
            result = build_comparison(baseline, candidate, out_dir, formats, follow_symlinks, max_bytes)
    except OutputBusy as exc:
        echo(f"reportgen compare: {exc}", err=True)
        sys.exit(2)
    except RemoteError as exc:
        _remote_failed("compare", exc)
    except ReportInputError as exc:
        echo(str(exc), err=True)
        echo("reportgen compare: no comparison written", err=True)
        sys.exit(EXIT_INVALID)
    except CompareRefused as exc:
        echo(f"reportgen compare: refused: {exc}", err=True)
        sys.exit(EXIT_REFUSED)
    except LocationError as exc:
        echo(f"reportgen compare: {exc}", err=True)
        sys.exit(2)
    except (UnsafeOutput, OSError) as exc:
        _write_failed("compare", exc)
    echo_line(result.comparison.headline)
    for path in result.written:
        echo(f"wrote {shown(path)}")


PUBLISH_HELP = """Upload a built site (or any folder, such as a run directory) to s3://bucket/prefix.

Only files whose bytes differ from the stored objects are uploaded (an object whose ETag is
the MD5 of the local file and whose size matches is left alone), each with its content type
(text/html, text/css, ...). Hidden files and links are not uploaded, except a site's
.reportgen-state.json, which goes last, once every page it lists is up: `reportgen site
--published` reads it there, so a build on any machine continues from it. With --delete, the
pages that state lists stay even when FOLDER (built with --published) does not hold them.
Credentials come from the standard AWS chain; AWS_ENDPOINT_URL_S3 selects an S3-compatible
endpoint.

\b
Exit codes: 0 published, 2 usage error, the store could not be reached or standard output
cannot be written (a full disk), 141 standard output's reader went away (`| head`).
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
    from reportgen.storage.remote import bucket_problem, publish as publish_folder

    if not is_remote(destination):
        raise click.BadParameter("an s3://bucket/prefix location", param_hint="DESTINATION")
    if (problem := bucket_problem(destination)) is not None:
        raise click.BadParameter(problem, param_hint="DESTINATION")
    if delete and not destination[len("s3://") :].partition("/")[2].strip("/"):
        raise click.BadParameter(
            "--delete needs a prefix (s3://bucket/prefix): at the bucket root it would delete every other object",
            param_hint="DESTINATION",
        )
    from reportgen.storage import SITE_STATE_NAME

    # A site's state goes up last (a build with --published trusts the pages it lists), and only
    # when it checks out; with --delete, the pages it lists stay even if this folder lacks them.
    # (A run folder has no state: a campaign task's publish imports nothing of the site.)
    pages = None
    state_file = folder / SITE_STATE_NAME
    if state_file.exists() or state_file.is_symlink():
        from reportgen.publish.site import state_pages

        pages = state_pages(folder)
        if pages is None:
            echo(f"reportgen publish: warning: {state_file} does not check out; not uploaded", err=True)
    try:
        result = publish_folder(
            folder, destination, Store(), delete=delete, last=SITE_STATE_NAME if pages is not None else None, keep=pages
        )
    except RemoteError as exc:
        _remote_failed("publish", exc)
    for url in result.uploaded:
        echo(f"uploaded {url}", err=True)
    for url in result.deleted:
        echo(f"deleted {url}", err=True)
    for url in result.undeletable:
        echo(
            f"reportgen publish: warning: {url} not deleted: the S3 client reads '?versionId=' in a key as a version of"
            " another key; remove it with another tool",
            err=True,
        )
    echo(f"{len(result.uploaded)} uploaded, {result.unchanged} unchanged, {len(result.deleted)} deleted: {destination}")


MANIFEST_HELP = """Close folders of runs in S3: write each one's manifest, so site builds stop listing it.

Each FOLDER (s3://bucket/runs/2026-11-30: a campaign's dated prefix whose runs are all in) is
listed once, and every object under it, with its ETag and size, goes into
s3://bucket/runs/_manifests/2026-11-30.json. A command reading s3://bucket/runs then lists
runs/_manifests/ and the folder names under runs/, reads one small manifest per closed folder
(in parallel) and lists only the folders without one: at 100,000 runs in daily folders, a few
LIST requests instead of hundreds. An object added to a closed folder later is not seen until
its manifest is written again (run this again); a manifest that does not check out is ignored
with a warning and its folder listed. A folder that holds nothing (a typo, or runs not yet
delivered) is refused: its manifest would hide every run delivered there later.

\b
Exit codes: 0 written, 2 usage error, an empty folder, the store could not be reached or
standard output cannot be written (a full disk), 141 standard output's reader went away.
\b
Example:
  reportgen manifest s3://fleet-runs/nightly/2026-11-30 s3://fleet-runs/nightly/2026-12-01
"""


@main.command(help=MANIFEST_HELP)
@click.argument("folders", nargs=-1, required=True)
def manifest(folders: tuple[str, ...]) -> None:
    from reportgen.storage import is_remote
    from reportgen.storage.remote import RemoteError, Store, write_manifest

    for folder in folders:
        if not is_remote(folder):
            raise click.BadParameter(f"{folder}: an s3://bucket/prefix/folder location", param_hint="FOLDERS")
    try:
        store = Store()  # without s3fs: one line saying how to install it
    except RemoteError as exc:
        _remote_failed("manifest", exc)
    for folder in folders:
        try:
            url, count = write_manifest(folder, store)  # as given: an error names what the user typed
        except RemoteError as exc:
            _remote_failed("manifest", exc)
        echo(f"{url}: {count} objects under {folder.rstrip('/')}/")


PLAN_CHECK_HELP = """Review a workload plan against the target backend's documented limits, before hardware time.

Classifies the plan as compatible as specified, needing a revised test plan, or blocked by a
precision requirement. Each finding names the documented constraint and its source, and says
what to change or verify first. The constraint files are in reportgen/judge/constraints/.

\b
Exit codes:
  0  compatible as specified
  1  unreadable plan: not TOML, not UTF-8, or not the plan schema (collector/PLAN.md);
     one line names the file, line and key; or an unreadable --inspection log
  2  usage error, or the --write-revised file or standard output cannot be written (one
     line says why)
  3  needs a revised test plan (--write-revised writes one; its proposed values,
     marked proposed = true or UNDECIDED, keep exit 3 and the collector refuses the
     plan until a person replaces them)
  4  blocked by a precision requirement
  141  standard output's reader went away (`| head`)
\b
Example:
  reportgen plan-check plan.toml --target neuron --write-revised plan.revised.toml
  python -m collector inspect --workload plan.toml --out plan.inspection.jsonl
  reportgen plan-check plan.toml --inspection plan.inspection.jsonl --target neuron
"""


@main.command("plan-check", help=PLAN_CHECK_HELP)
@click.argument("plan", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--target",
    type=click.Choice(_target_choices()),
    default=None,
    help=f"Backend whose documented limits apply, by name or alias (default: the plan's [workload] target, else {_default_target()}, the first target the collector's --target auto tries).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "md"]),
    default="text",
    show_default=True,
    help="Output: text, JSON, or Markdown for a review thread.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option(
    "--write-revised",
    type=WritePath(dir_okay=False),
    help="Write the revised plan here (when one is needed): a new file, or a revised plan plan-check wrote before, which is replaced. Any other file (the plan itself, its workload module, the inspection log), a link, folder, device or FIFO is refused (never written through).",
)
@click.option(
    "--inspection",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An inspection log of this plan (python -m collector inspect): its operators, graph breaks and wide dtypes joined with the target's constraint data, each finding labelled as predicted from the graph, not measured on the device.",
)
def plan_check(
    plan: Path, target: str | None, fmt: str, as_json: bool, write_revised: Path | None, inspection: Path | None
) -> None:
    from collector.descriptors import resolve_target
    from collector.plan import PlanError
    from reportgen.contract.inspection import InspectionError, read_inspection
    from reportgen.judge import plancheck
    from reportgen.storage.local import same_file, shown

    fmt = _output_format(fmt, as_json)
    if write_revised is not None and same_file(write_revised, plan):
        # Replacing it would lose the owner's plan (its comments and values) to the proposals.
        echo(
            f"reportgen plan-check: --write-revised {shown(write_revised)} is the plan under review: name another file",
            err=True,
        )
        sys.exit(2)
    if write_revised is not None and _owners_file(write_revised):
        # The workload module, the inspection log or any file of the owner's: replacing it with
        # the revised plan would lose it.
        echo(
            f"reportgen plan-check: --write-revised {shown(write_revised)} exists and is not a plan that plan-check "
            "revised (it would be replaced): name a new file, or move it away first",
            err=True,
        )
        sys.exit(2)
    if write_revised is not None and not write_revised.absolute().parent.is_dir():
        # Said before the review, not after it is printed (the file is written last).
        folder = write_revised.absolute().parent
        what = (
            "is not a folder" if os.path.lexists(folder) else "does not exist: make it first, or name a file in another"
        )
        echo(
            f"reportgen plan-check: --write-revised {shown(write_revised)}: its folder {shown(folder)} {what}", err=True
        )
        sys.exit(2)
    try:
        inspected = read_inspection(inspection) if inspection is not None else None
    except InspectionError as exc:
        echo(f"reportgen plan-check: unreadable inspection: {shown(exc)}", err=True)
        sys.exit(1)
    try:
        review = plancheck.review_plan(plan, resolve_target(target) if target else None, inspected)
    except PlanError as exc:
        echo(f"reportgen plan-check: unreadable plan: {shown(exc)}", err=True)
        sys.exit(1)
    except InspectionError as exc:
        echo(f"reportgen plan-check: the inspection does not belong to this plan: {shown(exc)}", err=True)
        sys.exit(1)
    if fmt == "json":
        echo(plancheck.format_json(review))
    elif fmt == "md":
        from reportgen.render.templating import render_md

        echo(render_md("plancheck.md.j2", review=review), nl=False)
    else:
        echo(plancheck.format_text(review))
    if write_revised is not None:
        if review.revised is None:
            echo(f"no revised plan written: the plan is {review.headline.lower()}", err=True)
        else:
            try:
                plancheck.write_revised(review, plan, write_revised)
            except OSError as exc:
                _write_failed("plan-check", exc)
            echo(f"wrote {shown(write_revised)}", err=True)
            # What the revised plan proposes no value for stays for the owner to write: said
            # here, so that a revised plan is not taken for a complete one.
            try:
                again = plancheck.review_plan(write_revised, review.target, None)
            except (PlanError, InspectionError) as exc:
                # A revision the plan schema refuses is a fault of the revision: said, not kept quiet.
                said = " ".join(str(exc).split())
                echo(f"  the revised plan does not pass the plan schema, revise it by hand: {said}", err=True)
                again = None
            left = [
                f for f in (again.findings if again else []) if f.severity != "note" and f.id != "proposals-pending"
            ]
            # The inspection is of the plan given, not of the revision: what it predicted (a float64
            # value the graph computes, an int64 id beyond int32) the revision does not change.
            left += [f for f in review.findings if f.basis == plancheck.PREDICTED and f.severity != "note"]
            for finding in left:
                where = f" ({finding.key})" if finding.key else ""
                echo(f"  not revised, for the owner to write: {finding.title}{where}", err=True)
    sys.exit(plancheck.EXIT_CODES[review.classification])


# How many entries of a folder that holds no site are looked through for a run log.
MOST_LOOKED_AT = 20_000


def _foreign_output(out_dir: Path, runs: list[Path]) -> str | None:
    """Why a build may not write into ``out_dir`` (None where it may): a folder that reportgen
    never wrote (no state file, no lock file: a build that failed part-way leaves its lock) but
    that holds files the site would replace (index.html, runs/, ...), or run logs that are not
    in ``runs`` (a Pages root may hold the runs it is built from), which the site's state file
    would then mark as its copies: validate and later builds would skip the user's own runs.
    A link there is left to the checks that refuse to write through it."""
    from reportgen.storage import SITE_STATE_NAME
    from reportgen.storage.local import LOCK_NAME, shown

    if not out_dir.is_dir() or any(os.path.lexists(out_dir / name) for name in (SITE_STATE_NAME, LOCK_NAME)):
        return None
    from reportgen.publish.site import ROWS_NAME, SITE_FILES  # a first build imports them anyway

    taken = sorted(
        name
        for name in os.listdir(out_dir)
        if (name in SITE_FILES or name in SITE_FOLDERS or ROWS_NAME.fullmatch(name))
        and not os.path.islink(out_dir / name)
    )
    if taken:
        more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        return (
            f"{shown(out_dir)} holds {taken[0]}{more}, which the site would replace, and no site reportgen "
            "built: give --out an empty or new folder"
        )
    given = [os.path.realpath(w).rstrip(os.sep) + (os.sep if w.is_dir() else "") for w in runs]
    looked = 0
    for folder, dirs, names in os.walk(out_dir):
        # A RUNS folder below --out (a Pages root's data/) is the runs given: not looked through.
        dirs[:] = [d for d in dirs if os.path.realpath(os.path.join(folder, d)) + os.sep not in given]
        for name in names:
            path = os.path.join(folder, name)
            real = os.path.realpath(path)
            if (
                name.endswith(".jsonl")
                and os.path.isfile(path)
                and not any(real == g or (g.endswith(os.sep) and real.startswith(g)) for g in given)
            ):
                return (
                    f"{shown(out_dir)} holds run logs ({shown(Path(path))}, ...): a site written there would take "
                    "them for its own copies and later builds and validate would skip them; give --out a "
                    "folder outside your runs"
                )
        looked += len(names) + len(dirs)
        if looked > MOST_LOOKED_AT:  # not looked through: whether it holds runs is not known
            return (
                f"{shown(out_dir)} holds more than {MOST_LOOKED_AT:,} entries and no site reportgen built: "
                "give --out an empty or new folder"
            )
    return None


def _owners_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link) other than a revised plan that plan-check
    wrote (judge/plancheck.write_revised's first line), which a later review may replace; what
    is no regular file is refused where it is written."""
    from reportgen.storage.local import NotReadable, read_bounded

    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:  # an empty file holds nothing to lose (mktemp's)
            return False
        return not read_bounded(path, 1 << 20).startswith(b"# Revised by `reportgen plan-check")
    except (FileNotFoundError, NotADirectoryError):
        return False  # not there (a path through a file names nothing): said where it is written
    except OSError as exc:
        # A name too long, say: not the owner's file, since none can be there (said when written).
        if exc.errno == errno.ENAMETOOLONG:
            return False
        return True
    except NotReadable:
        return True


if __name__ == "__main__":  # `python -m reportgen.cli ...` runs the command, as `python -m reportgen` does
    main()
