"""Special files: FIFOs, devices, folders named *.jsonl, dangling symlinks, symlinks out of the
folders given, oversize logs. Each is refused with one line and an exit code, never read, never
a hang (every command runs under a deadline) or a traceback."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Callable

import pytest

from tests.conftest import FIXTURES, REPO
from tests.hostile import invoke, snapshot
from tests.logbuilder import complete_log, dumps

GOOD = FIXTURES / "synthetic_complete.jsonl"
OUTSIDE = FIXTURES / "synthetic_mismatch.jsonl"  # run id synthetic-mismatch: must never be published unless asked


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _folder(path: Path) -> None:
    path.mkdir()


def _dangling(path: Path) -> None:
    path.symlink_to(path.parent / "no-such-file.jsonl")


def _outside_link(path: Path) -> None:
    outside = path.parent.parent.parent / "outside"
    outside.mkdir(exist_ok=True)
    shutil.copy(OUTSIDE, outside / "elsewhere.jsonl")
    path.symlink_to(outside / "elsewhere.jsonl")


def _big(path: Path) -> None:
    path.write_bytes(GOOD.read_bytes() + b"\n" * 4096)


# (name, how to make the entry, message for a log named directly, message in a site build)
ENTRIES: list[tuple[str, Callable[[Path], None], str, str]] = [
    (
        "fifo",
        _fifo,
        "not read: a FIFO (named pipe), not a regular file",
        "skipped: a FIFO (named pipe), not a regular file",
    ),
    (
        "symlink to /dev/zero",
        _dev_zero,
        "not read: a character device, not a regular file",
        "skipped: a symlink to /dev/zero, outside",
    ),
    ("folder named x.jsonl", _folder, "", "skipped: a folder, not a file"),
    ("dangling symlink", _dangling, "", "skipped: a dangling symlink"),
    ("symlink out of the folder", _outside_link, "", "skipped: a symlink to"),
    (
        "larger than --max-log-size",
        _big,
        "larger than the limit of 12 KiB (--max-log-size)",
        "larger than the limit of 12 KiB (--max-log-size)",
    ),
]
IDS = [e[0] for e in ENTRIES]


def _runs(tmp_path: Path, name: str, make: Callable[[Path], None]) -> tuple[Path, Path]:
    runs = tmp_path / "area" / "runs"
    (runs / "good").mkdir(parents=True)
    shutil.copy(GOOD, runs / "good" / "events.jsonl")
    entry = runs / "x.jsonl"
    make(entry)
    return runs, entry


@pytest.mark.parametrize("name,make,direct,in_site", ENTRIES, ids=IDS)
def test_site_skips_the_entry_says_why_and_builds_the_rest(
    tmp_path: Path, name: str, make, direct: str, in_site: str
) -> None:
    runs, entry = _runs(tmp_path, name, make)
    before = snapshot(tmp_path / "area")
    out = invoke(["site", runs, "--out", tmp_path / "site", "--max-log-size", "12K"])
    assert out.code == 1, out.output
    line = out.line_with(f"{entry}: skipped: ")
    assert in_site in line
    assert "1 run," in out.stdout and "1 entry skipped" in out.stdout
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "synthetic-complete" in index and "synthetic-mismatch" not in index, "only the good run is published"
    assert snapshot(tmp_path / "area") == before, "the runs folder is left as it was"


@pytest.mark.parametrize("name,make,direct,in_site", [e for e in ENTRIES if e[2]], ids=[e[0] for e in ENTRIES if e[2]])
@pytest.mark.parametrize("command", ["validate", "report", "diff"])
def test_named_entry_is_refused_in_one_line(
    tmp_path: Path, command: str, name: str, make, direct: str, in_site: str
) -> None:
    _, entry = _runs(tmp_path, name, make)
    args = {
        "validate": ["validate", entry],
        "report": ["report", entry, "--out", tmp_path / "out"],
        "diff": ["diff", GOOD, entry],
    }[command]
    out = invoke(args + ["--max-log-size", "12K"])
    # validate reads what it is given (an unreadable log is an invalid one); report and diff
    # first look for one run log at the location, and finding none is a usage error.
    assert out.code == (1 if command == "validate" else 2), out.output
    out.line_with(direct)
    assert not (tmp_path / "out" / "report.html").exists()


def test_a_file_with_a_fixed_limit_is_refused_without_naming_the_log_option(tmp_path: Path) -> None:
    """--max-log-size sets a run log's limit only: an annotations file past its own fixed limit
    is refused by its size without sending the user to an option that would not change it."""
    runs = tmp_path / "runs"
    (runs / "good").mkdir(parents=True)
    shutil.copy(GOOD, runs / "good" / "events.jsonl")
    notes = runs / "good" / "annotations.toml"
    notes.touch()
    os.truncate(notes, (16 << 20) + 1)  # sparse: past the limit without writing 16 MiB
    limit = "16,777,217 bytes, larger than the limit of 16,777,216 bytes"  # not "16 MiB ... 16 MiB"
    out = invoke(["site", runs, "--out", tmp_path / "site"])
    line = out.line_with(str(notes))
    assert limit in line and "--max-log-size" not in line, out.output
    # A report is not made without the explanations beside the log as if there were none.
    report = invoke(["report", runs / "good" / "events.jsonl", "--out", tmp_path / "out"])
    assert report.code == 1 and not (tmp_path / "out" / "report.html").exists(), report.output
    line = report.line_with(f"{notes}: not read: ")
    assert limit in line and "--max-log-size" not in line, report.output


def test_symlinks_out_of_the_folder_are_read_when_asked(tmp_path: Path) -> None:
    runs, _ = _runs(tmp_path, "link", _outside_link)
    out = invoke(["site", runs, "--out", tmp_path / "site", "--follow-symlinks"])
    assert out.code == 0, out.output
    assert "synthetic-mismatch" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_symlink_inside_the_folder_is_read_once(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    shutil.copy(GOOD, runs / "a" / "events.jsonl")
    (runs / "alias.jsonl").symlink_to(runs / "a" / "events.jsonl")
    (runs / "loop").symlink_to(runs, target_is_directory=True)
    out = invoke(["site", runs, "--out", tmp_path / "site", "--follow-symlinks"])
    assert out.code == 0, out.output
    assert "1 run," in out.stdout


@pytest.mark.parametrize(
    "make,fragment",
    [(_fifo, "a FIFO"), (_dev_zero, "a character device"), (_big, "larger than the limit")],
    ids=["fifo", "dev-zero", "oversize"],
)
def test_annotations_that_are_not_regular_files_are_not_read(tmp_path: Path, make, fragment: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(GOOD, run / "events.jsonl")
    notes = tmp_path / "notes.toml"
    if make is _big:
        notes.write_text("# padding\n" * 2_000_000, encoding="utf-8")
    else:
        make(notes)
    named = invoke(["report", run / "events.jsonl", "--out", tmp_path / "out", "--annotations", notes])
    assert named.code == 1
    assert fragment in named.line_with(f"{notes}: not read: ")
    (run / "annotations.toml").symlink_to(notes)
    beside = invoke(["site", run, "--out", tmp_path / "site"])
    assert beside.code == 1 and "1 run," in beside.stdout
    beside.line_with(f"{run / 'annotations.toml'}: skipped: ")


def _dev_null(path: Path) -> None:
    path.symlink_to("/dev/null")  # a device like /dev/zero, without the endless read if it is read


@pytest.mark.parametrize(
    "make,fragment",
    [(_fifo, "a FIFO (named pipe), not a regular file"), (_dev_null, "a character device")],
    ids=["fifo", "device"],
)
@pytest.mark.parametrize("command", ["report", "plan-check"])
def test_an_inspection_log_that_is_not_a_regular_file_is_not_read(
    tmp_path: Path, command: str, make, fragment: str
) -> None:
    """--inspection is read like every other input: a FIFO is not opened (it would wait for a
    writer for ever) and a device is not read (/dev/zero would never end); one line, exit 1
    (an unreadable inspection log, as both commands document)."""
    inspection = tmp_path / "plan.inspection.jsonl"
    make(inspection)
    args = {
        "report": ["report", GOOD, "--out", tmp_path / "out"],
        "plan-check": ["plan-check", REPO / "tests" / "plans" / "scenario_a.toml", "--target", "neuron"],
    }[command]
    out = invoke(args + ["--inspection", inspection])
    assert out.code == 1, out.output
    assert fragment in out.line_with(f"unreadable inspection: {inspection}: not read: ")
    assert not (tmp_path / "out" / "report.html").exists()


def test_size_option_takes_units_and_refuses_nonsense(tmp_path: Path) -> None:
    assert invoke(["validate", GOOD, "--max-log-size", "2M"]).code == 0
    bad = invoke(["validate", GOOD, "--max-log-size", "lots"])
    assert bad.code == 2 and "is not a size like 200M or 2G" in bad.output


@pytest.mark.parametrize("size", ["9000000000G", "1025T", "1" + "0" * 400])
@pytest.mark.parametrize("command", ["site", "report", "validate"])
def test_size_option_refuses_a_limit_past_the_largest(tmp_path: Path, command: str, size: str) -> None:
    """A usage error, as for any size that is not one: a limit past 1024T would not fit the
    read it bounds (9000000000G raised OverflowError), and no log is that large."""
    runs, _ = _runs(tmp_path, "folder", _folder)
    args = {
        "site": ["site", runs, "--out", tmp_path / "site"],
        "report": ["report", GOOD, "--out", tmp_path / "out"],
        "validate": ["validate", GOOD],
    }[command]
    out = invoke(args + ["--max-log-size", size])
    assert out.code == 2 and "is larger than the largest limit, 1024T" in out.line_with("--max-log-size"), out.output


def test_the_largest_size_limit_reads_a_small_log(tmp_path: Path) -> None:
    """A limit far above the file (1024T) costs nothing: the log is read as large as it is,
    not with a read of the limit that reserves that much memory first."""
    from reportgen.storage.local import MAX_SIZE_LIMIT, read_bounded

    assert read_bounded(GOOD, MAX_SIZE_LIMIT) == GOOD.read_bytes()
    run = tmp_path / "runs" / "good"
    run.mkdir(parents=True)
    shutil.copy(GOOD, run / "events.jsonl")
    out = invoke(["site", tmp_path / "runs", "--out", tmp_path / "site", "--max-log-size", "1024T"])
    assert out.code == 0 and "1 run," in out.stdout, out.output


def test_many_traces_of_one_name_are_all_copied(tmp_path: Path) -> None:
    """Traces in folders of their own may share a file name: each gets a numbered name of a
    length any file system takes (a prefix added per clash made a name past 255 bytes after
    about 120 of them, and the whole run was left out of the site)."""
    run = tmp_path / "runs" / "traced"
    data = b"{}"
    digest = hashlib.sha256(data).hexdigest()
    traces = []
    for i in range(150):
        (run / f"cell{i}").mkdir(parents=True)
        (run / f"cell{i}" / "trace.json").write_bytes(data)
        traces.append({"path": f"cell{i}/trace.json", "kind": "chrome_trace", "bytes": len(data), "sha256": digest})
    events = complete_log()
    next(e for e in events if e["kind"] == "profile")["traces"] = traces
    (run / "events.jsonl").write_text(dumps(events), encoding="utf-8")
    out = invoke(["site", tmp_path / "runs", "--out", tmp_path / "site"])
    assert out.code == 0, out.output
    copied = list((tmp_path / "site" / "runs").glob("*/traces/*"))
    assert len(copied) == 150 and all(len(p.name) < 120 for p in copied)


def _link_to_victim(path: Path) -> None:
    victim = path.parent / "victim.toml"
    victim.write_text("precious\n", encoding="utf-8")
    path.symlink_to(victim)


@pytest.mark.parametrize("make", [_fifo, _dev_null, _link_to_victim], ids=["fifo", "device", "symlink"])
def test_a_revised_plan_replaces_only_a_regular_file(tmp_path: Path, make) -> None:
    """--write-revised onto a FIFO waited for a reader for ever; onto a device or a link it
    wrote through it. Now one line, exit 2, and nothing there changes."""
    out = tmp_path / "revised.toml"
    make(out)
    before = snapshot(tmp_path)
    args = ["plan-check", REPO / "tests" / "plans" / "scenario_a.toml", "--target", "neuron", "--write-revised", out]
    result = invoke(args, seconds=20)
    assert result.code == 2, result.output
    assert "only a file is replaced" in result.line_with(
        f"reportgen plan-check: cannot write {out}: not a regular file"
    )
    assert snapshot(tmp_path) == before


def test_a_revised_plan_replaces_a_regular_file_whole(tmp_path: Path) -> None:
    out = tmp_path / "revised.toml"  # a revision plan-check wrote before (it replaces no other file)
    out.write_text("# Revised by `reportgen plan-check --target neuron` from an older plan.\nold\n", encoding="utf-8")
    out.chmod(0o640)
    args = ["plan-check", REPO / "tests" / "plans" / "scenario_a.toml", "--target", "neuron", "--write-revised", out]
    assert invoke(args).code == 3
    assert out.read_text(encoding="utf-8").startswith(
        '# Revised by `reportgen plan-check --target neuron` from "scenario'
    )
    assert oct(out.stat().st_mode & 0o777) == oct(0o640)
    assert [p.name for p in tmp_path.iterdir()] == ["revised.toml"]


@pytest.mark.parametrize("how", ["same path", "hard link"])
def test_a_revised_plan_never_replaces_the_plan_under_review(tmp_path: Path, how: str) -> None:
    """--write-revised naming the plan itself (or a hard link to it) replaced the owner's plan,
    comments and values, with the proposals. Now one line, exit 2, and the plan is as it was."""
    plan = tmp_path / "plan.toml"
    shutil.copy(REPO / "tests" / "plans" / "scenario_a.toml", plan)
    target = plan
    if how == "hard link":
        target = tmp_path / "linked.toml"
        os.link(plan, target)
    before = snapshot(tmp_path)
    result = invoke(["plan-check", plan, "--target", "neuron", "--write-revised", target], seconds=20)
    assert result.code == 2, result.output
    result.line_with(f"reportgen plan-check: --write-revised {target} is the plan under review")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["validate", "report", "annotate", "compare", "diff", "site"])
def test_every_command_that_says_follow_symlinks_reads_it_has_the_option(tmp_path: Path, command: str) -> None:
    # Before: report, validate and compare said "(--follow-symlinks reads it)" and refused the
    # option, and annotate read through the link that report refused.
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").symlink_to(GOOD)
    other = FIXTURES / "synthetic_mismatch.jsonl"
    args = {
        "validate": ["validate", run],
        "report": ["report", run, "--out", tmp_path / "out"],
        "annotate": ["annotate", run, "--out", tmp_path / "annotations.toml"],
        "compare": ["compare", run, other, "--out", tmp_path / "out"],
        "diff": ["diff", run, other],
        "site": ["site", run, "--out", tmp_path / "out"],
    }[command]
    refused = invoke(args)
    if command not in ("validate", "site"):  # those list the entry they skip and go on
        assert refused.code == 2 and "not followed (--follow-symlinks reads it)" in refused.output, refused.output
    else:
        assert "not followed (--follow-symlinks reads it)" in refused.output, refused.output
    followed = invoke([*args, "--follow-symlinks"])
    assert followed.code == 0 and "not followed" not in followed.output, followed.output


def test_a_log_followed_through_a_link_is_judged_with_the_annotations_beside_the_link(tmp_path: Path) -> None:
    # Before: report and compare judged a linked log with the annotations beside its target
    # (outside the folder given), diff with those beside the link, so one run read 'Suitable'
    # in one command and 'Requires a change' in another.
    real, given = tmp_path / "real", tmp_path / "given"
    real.mkdir()
    given.mkdir()
    shutil.copy(FIXTURES / "synthetic_mismatch.jsonl", real / "events.jsonl")
    (given / "events.jsonl").symlink_to(real / "events.jsonl")
    entry = '[[explain]]\nmode = ["eager", "compiled"]\nexplanation = "drift"\nreason = "r"\n'
    (real / "annotations.toml").write_text(entry + 'verdict = "accepted"\n', encoding="utf-8")
    (given / "annotations.toml").write_text(
        entry + 'verdict = "change-needed"\nchange = "precision"\n', encoding="utf-8"
    )
    other = FIXTURES / "synthetic_complete.jsonl"
    report = invoke(["report", given, "--out", tmp_path / "out", "--follow-symlinks"])
    assert "Requires" in report.output and "Suitable" not in report.output, report.output
    compare = invoke(["compare", given, other, "--out", tmp_path / "cmp", "--follow-symlinks", "--format", "json"])
    assert compare.code == 0, compare.output
    import json

    data = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert data["baseline"]["disposition"].startswith("Requires"), data["baseline"]
    # With no annotations beside the link, neither reads the target's: the mismatch awaits a verdict.
    (given / "annotations.toml").unlink()
    report = invoke(["report", given, "--out", tmp_path / "out2", "--follow-symlinks"])
    assert "Suitable" not in report.output and "Blocked" in report.output, report.output
