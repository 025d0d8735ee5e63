"""Hostile input, fifth round (outside review): memory that grew with a log's bad lines, a
full disk blamed on the log, two site builds into one folder, a site.toml linked from outside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import reportgen.contract.validation as validation
from reportgen.cli import main
from reportgen.contract.validation import read_log
from tests.conftest import REPO

SAMPLE = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl"


def _first_line() -> str:
    return SAMPLE.read_text(encoding="utf-8").splitlines()[0] + "\n"


def test_reading_stops_past_the_kept_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bad line's finding was kept: 3 million lines of `{}` (9 MB) took 500 MB, and a
    20 MB file of `x` lines 2.5 GB (11.8 GB with --json). Then the first MAX_KEPT_PROBLEMS were
    kept and the rest counted, but every line was still read: a 15 MB file of `{}` lines kept
    `validate` busy 30 s, 35 minutes at the 1 GiB limit. Reading now stops at the error past
    the kept ones and says where; the verdict stays invalid."""
    monkeypatch.setattr(validation, "MAX_KEPT_PROBLEMS", 50)
    log = tmp_path / "many.jsonl"
    log.write_text(_first_line() + "{}\n" * 120 + "x\n" * 80, encoding="utf-8")
    reading = read_log(log)
    assert len(reading.errors) == 51 and not reading.valid and reading.more_errors == 0
    assert reading.errors[-1].line == 52 and reading.errors[-1].message == (
        "more than 50 errors: the rest of the file is not read"
    )
    assert not any("x" in p.message and "JSON" in p.message for p in reading.errors)  # line 122 on: not read
    text = CliRunner().invoke(main, ["validate", str(log)])
    assert text.exit_code == 1
    assert text.output.splitlines()[-1].endswith("INVALID, incomplete, 1 events, 51 errors, 0 warnings"), text.output
    data = json.loads(CliRunner().invoke(main, ["validate", "--json", str(log)]).output)
    assert len([p for p in data[0]["problems"] if p["severity"] == "error"]) == 51 and "more_errors" not in data[0]


def test_reading_stops_past_the_kept_blank_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid log followed by 100 million blank lines (100 MB, under the size limit) took 72 s
    to report, where the log alone took 0.7 s: a blank line is only a warning, so nothing
    stopped the reading. A collector writes none; past MAX_BLANK_LINES of them the file is not
    one it wrote, and reading stops with an error that says so."""
    monkeypatch.setattr(validation, "MAX_BLANK_LINES", 20)
    log = tmp_path / "padded.jsonl"
    log.write_text(SAMPLE.read_text(encoding="utf-8") + "\n" * 1000, encoding="utf-8")
    lines = len(SAMPLE.read_text(encoding="utf-8").splitlines())
    reading = read_log(log)
    assert not reading.valid
    (stop,) = reading.errors
    assert stop.line == lines + 21
    assert stop.message == "more than 20 blank lines, not a log the collector wrote: the rest of the file is not read"
    assert sum(p.message == "blank line ignored" for p in reading.problems) == 20


def test_a_finding_quoting_a_huge_value_is_cut(tmp_path: Path) -> None:
    """Three lines whose kind was a megabyte printed three million-character 'one-line' errors."""
    log = tmp_path / "long.jsonl"
    line = {"kind": "k" * 1_000_000, "seq": 1, "schema_version": "1.7", "run_id": "x", "t": "2026-01-01T00:00:00Z"}
    log.write_text(_first_line() + json.dumps(line) + "\n", encoding="utf-8")
    (problem,) = [p for p in read_log(log).problems if p.line == 2 and "kkk" in p.message]
    assert len(problem.message) < validation.MAX_MESSAGE_CHARS + 100
    assert problem.message.endswith("characters)") and "(cut: " in problem.message


@pytest.mark.parametrize("where", ["events.jsonl", "runs"])
def test_a_full_disk_while_a_site_copies_a_log_is_an_output_failure_not_the_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A full disk while the site copied a log said the log 'could not be rendered: OSError',
    exit 1, and the no-change record kept that: with space again, the next build still left the
    run out. It is now the output's failure (exit 2, one line), and the next build writes it."""
    import errno

    import reportgen.publish.files as files

    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "a" / "events.jsonl").write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "site"
    real = files.write_bytes_if_changed

    def full(path: Path, data: bytes, root: Path) -> bool:
        if path.name == "events.jsonl":  # the copy itself, or the folder the site makes for it
            failed = path if where == "events.jsonl" else out / "runs"
            raise OSError(errno.ENOSPC, "No space left on device", str(failed))
        return real(path, data, root)

    monkeypatch.setattr(files, "write_bytes_if_changed", full)
    failed = CliRunner().invoke(main, ["site", str(runs), "--out", str(out)])
    assert failed.exit_code == 2, failed.output
    (line,) = [line for line in failed.output.splitlines() if "No space left" in line]
    assert line.startswith("reportgen site: cannot write ") and "could not be rendered" not in failed.output
    monkeypatch.setattr(files, "write_bytes_if_changed", real)
    again = CliRunner().invoke(main, ["site", str(runs), "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert "1 run," in again.output and len(list((out / "runs").iterdir())) == 1


def test_a_second_site_build_into_a_folder_being_written_is_refused(tmp_path: Path) -> None:
    """Four builds of different runs into one --out at once left 20 run folders beside an index
    of 6, which no later build removed. A build holds the folder's lock; another is refused
    at once (exit 2, one line) and writes nothing; once the first ends, a build goes ahead."""
    from reportgen.storage.local import LOCK_NAME, output_lock

    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "a" / "events.jsonl").write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "site"
    with output_lock(out):  # another build, in the middle of writing
        busy = CliRunner().invoke(main, ["site", str(runs), "--out", str(out)])
        assert busy.exit_code == 2, busy.output
        assert f"is being written by another command now (it holds {LOCK_NAME} there)" in busy.output
        assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]
    done = CliRunner().invoke(main, ["site", str(runs), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert (out / "index.html").is_file()


def test_the_lock_is_never_taken_through_a_link(tmp_path: Path) -> None:
    from reportgen.storage.local import LOCK_NAME

    out = tmp_path / "site"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    (out / LOCK_NAME).symlink_to(elsewhere)
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "a" / "events.jsonl").write_bytes(SAMPLE.read_bytes())
    done = CliRunner().invoke(main, ["site", str(runs), "--out", str(out)])
    assert done.exit_code == 2 and "cannot write" in done.output and LOCK_NAME in done.output, done.output
    assert not elsewhere.exists()


def test_a_site_toml_linked_from_outside_the_runs_folder_is_not_read(tmp_path: Path) -> None:
    """A site.toml in RUNS that links to a file outside it was read (/etc/passwd: 'not valid
    TOML'), where a log or an annotations.toml linked the same way is not."""
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "a" / "events.jsonl").write_bytes(SAMPLE.read_bytes())
    outside = tmp_path / "outside.toml"
    outside.write_text('[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n', encoding="utf-8")
    (runs / "site.toml").symlink_to(outside)
    refused = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site")])
    assert refused.exit_code == 2, refused.output
    assert f"a symlink to {outside}, outside {runs}; not followed (--follow-symlinks reads it" in refused.output
    assert not (tmp_path / "site").exists()
    followed = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site"), "--follow-symlinks"])
    assert followed.exit_code == 0, followed.output


def test_a_refused_build_leaves_the_lock_and_folder_of_the_build_that_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that found no folder, then lost the race for its lock, removed the folder and the
    lock of the build that had won it (second review of this round, finding 1)."""
    import reportgen.storage.local as local

    out = tmp_path / "site"
    with local.output_lock(out):  # the build that made the folder and holds its lock
        monkeypatch.setattr(local, "_first_missing", lambda path: out)  # the other saw no folder
        with pytest.raises(local.OutputBusy):
            with local.output_lock(out):
                pass
        assert (out / local.LOCK_NAME).is_file()


def test_a_build_that_writes_nothing_removes_every_folder_it_made(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    done = CliRunner().invoke(main, ["site", str(tmp_path / "runs"), "--out", str(tmp_path / "a" / "b" / "c")])
    assert done.exit_code == 2 and "nothing written" in done.output, done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_a_lock_file_that_is_a_link_is_named_as_one(tmp_path: Path) -> None:
    from reportgen.storage.local import LOCK_NAME

    out = tmp_path / "site"
    out.mkdir()
    (out / LOCK_NAME).symlink_to(tmp_path / "elsewhere")
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "events.jsonl").write_bytes(SAMPLE.read_bytes())
    done = CliRunner().invoke(main, ["site", str(tmp_path / "runs"), "--out", str(out)])
    assert done.exit_code == 2 and f"cannot write {out / LOCK_NAME}: a symlink; never followed" in done.output


def test_an_up_to_date_site_on_read_only_storage_still_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock was opened for writing: a site on read-only storage that needs no file written
    stopped with 'cannot write .reportgen-lock: Read-only file system' (exit 2)."""
    import errno
    import os

    from reportgen.storage.local import LOCK_NAME

    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "events.jsonl").write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "site"
    assert CliRunner().invoke(main, ["site", str(tmp_path / "runs"), "--out", str(out)]).exit_code == 0
    (out / LOCK_NAME).unlink()  # a site published before the lock, now on read-only storage
    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any) -> int:
        if str(path).endswith(LOCK_NAME):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    done = CliRunner().invoke(main, ["site", str(tmp_path / "runs"), "--out", str(out)])
    assert done.exit_code == 0 and "0 files written" in done.output, done.output


def test_a_log_swapped_for_a_fifo_after_it_was_judged_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The site read each log again to copy it with no bound: a log swapped for a FIFO after it
    was judged hung the build, and one linked to /dev/zero took memory until none was left
    (second review of this round, finding 2). It is read as every log is: refused, that run
    left out with the reason."""
    import os

    import reportgen.publish.site as site_module

    (tmp_path / "runs" / "a").mkdir(parents=True)
    log = tmp_path / "runs" / "a" / "events.jsonl"
    log.write_bytes(SAMPLE.read_bytes())
    write_assets = site_module.write_assets

    def swap_then_write(out_dir: Path) -> Any:
        log.unlink()
        os.mkfifo(log)
        return write_assets(out_dir)

    monkeypatch.setattr(site_module, "write_assets", swap_then_write)
    done = CliRunner().invoke(main, ["site", str(tmp_path / "runs"), "--out", str(tmp_path / "site")])
    assert done.exit_code == 1, done.output
    assert f"{log}: skipped, could not be rendered:" in done.output and "not a regular file" in done.output


def test_a_logs_warnings_never_crowd_out_its_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 blank lines (a warning each) then one broken line: the cap was full of warnings,
    and validate said 'INVALID, 1 errors' without printing the error, even with --max-problems
    0; report printed only '... and 1 more errors' (second review of this round, finding 8)."""
    monkeypatch.setattr(validation, "MAX_KEPT_PROBLEMS", 30)
    log = tmp_path / "blank.jsonl"
    log.write_text(_first_line() + "\n" * 40 + "{not json\n", encoding="utf-8")
    reading = read_log(log)
    (error,) = reading.errors
    assert error.line == 42 and reading.more_warnings == reading.warning_count - 30 > 0
    shown = CliRunner().invoke(main, ["validate", str(log)])
    assert shown.output.splitlines()[0].startswith(f"{log}:42: error:"), shown.output
    report = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "r")])
    assert report.exit_code == 1 and f"{log}:42: error:" in report.output, report.output


def test_validate_holds_one_logs_findings_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--json of a folder kept every log's findings and built the whole text at once: memory grew
    with the number of logs, to a MemoryError traceback. Each log is read, printed and let go."""
    import gc

    import reportgen.contract.validation as module

    for name in ("a", "b", "c"):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "events.jsonl").write_text(_first_line() + "x\n" * 20, encoding="utf-8")
    alive: list[int] = []
    real = module.read_log

    def counted(path: Any, **options: Any) -> Any:
        gc.collect()
        alive.append(sum(isinstance(o, module.LogReading) for o in gc.get_objects()))
        return real(path, **options)

    monkeypatch.setattr(module, "read_log", counted)
    done = CliRunner().invoke(main, ["validate", "--json", str(tmp_path / "runs")])
    assert done.exit_code == 1, done.output
    assert [entry["valid"] for entry in json.loads(done.output)] == [False, False, False]
    assert alive == [0, 0, 0], alive  # no earlier log's reading still held when the next is read


def test_a_hostile_key_or_bucket_is_shown_on_one_line_with_no_escape(tmp_path: Path) -> None:
    """An unknown annotation or site configuration key holding a newline and an escape printed
    them raw (a forged second line, a colour), and a 2 MB key a 2 MB line; publish printed a
    bucket's escapes to the terminal (second review of this round, finding 8)."""
    from reportgen.model.annotations import AnnotationError, parse_annotations
    from reportgen.publish.site_compare import SiteConfigError, load_site_config

    hostile = "verdikt\\n\\u001b[31mERR: fake"
    with pytest.raises(AnnotationError) as note_error:
        parse_annotations(f'[[explain]]\ncases = "b1-*"\nexplanation = "x"\n"{hostile}" = "y"\n', "annotations.toml")
    with pytest.raises(AnnotationError) as long_error:
        parse_annotations(f'[[explain]]\ncases = "b1-*"\nexplanation = "x"\n"{"k" * 100_000}" = "y"\n', "a.toml")
    config = tmp_path / "site.toml"
    config.write_text(f'[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n"{hostile}" = 1\n')
    with pytest.raises(SiteConfigError) as site_error:
        load_site_config(config)
    published = CliRunner().invoke(main, ["publish", str(tmp_path), "s3://BAD/\x1b[2J\x1b]0;pwned\x07X"])
    (refusal,) = [line for line in published.output.splitlines() if line.startswith("Error: ")]
    assert published.exit_code == 2 and "is no valid bucket name" in refusal
    for said in (str(note_error.value), str(long_error.value), str(site_error.value), refusal):
        assert "\n" not in said and "\x1b" not in said and "\x07" not in said, said
        assert len(said) < 2_000, len(said)
    assert "<U+001B>" in str(note_error.value) and "<U+000A>" in str(site_error.value)


def test_reading_stops_past_a_run_of_lines_that_hold_no_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines that each raise only a warning (an unknown kind of a newer schema) were read to the
    end: 3 million of them (108 MB) kept validate busy 26 s, minutes at the size limit. Past
    MAX_BLANK_LINES of them in a row, with no event between, reading stops and says where."""
    monkeypatch.setattr(validation, "MAX_BLANK_LINES", 30)
    log = tmp_path / "unknown.jsonl"
    unknown = json.dumps({"schema_version": "1.9", "kind": "z"}) + "\n"
    first, second = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:2]
    log.write_text(first + unknown * 25 + second + unknown * 100, encoding="utf-8")
    reading = read_log(log)
    (stop,) = reading.errors
    assert stop.line == 1 + 25 + 1 + 31  # an event between two runs of such lines starts the count again
    assert (
        stop.message
        == "more than 30 lines in a row hold no event this reportgen reads: the rest of the file is not read"
    )
