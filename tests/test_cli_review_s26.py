"""Review fixes: standard output that cannot be written, a report folder reused for another
run, and inspection logs met where run logs are looked for.

The logs are the repository's sample runs and sample inspections (sample_runs/,
sample_inspections/), read as they are; nothing here is measured.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.render.report import RECORD_NAME

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_runs"
TINY = SAMPLES / "tiny-encoder-cpu-20261205T124447Z-43ef64"
TINY_EARLIER = SAMPLES / "tiny-encoder-cpu-20261205T073819Z-87bab8"
HEAT = SAMPLES / "heat-solver-cpu-20261205T122551Z-af7feb"
INSPECTIONS = ROOT / "sample_inspections"
FULL_LINE = "reportgen: cannot write to standard output: No space left on device\n"
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")


def _run(args: list[str], stdout: object, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=cwd, timeout=300, check=False)


def _into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run with standard output a pipe whose reader is already gone: every write fails (EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return _run(args, write)
    finally:
        os.close(write)


def _only_start(tmp_path: Path) -> Path:
    """The sample run's first line alone: a log without cells, so its report is blocked."""
    log = tmp_path / "onlystart.jsonl"
    log.write_text((TINY / "events.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    return log


REPORTGEN = [sys.executable, "-m", "reportgen"]


def test_closed_pipe_exits_141_not_1(tmp_path: Path) -> None:
    """`reportgen report ... --fail-on blocked | true` exited 1 (an invalid log, says --help)
    after writing the report; it exits 141, as the collector and the campaign tool do."""
    log = _only_start(tmp_path)
    out = tmp_path / "r"
    done = _into_closed_pipe([*REPORTGEN, "report", str(log), "--out", str(out), "--fail-on", "blocked"])
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""
    assert (out / "report.html").is_file()  # everything was written before the headline
    done = _into_closed_pipe([*REPORTGEN, "validate", str(TINY)])
    assert done.returncode == 141 and done.stderr == ""
    done = _into_closed_pipe(
        [
            *REPORTGEN,
            "compare",
            str(TINY),
            str(SAMPLES / "tiny-encoder-cuda-20261129T225259Z-866a85"),
            "--out",
            str(tmp_path / "c"),
        ]
    )
    assert done.returncode == 141 and done.stderr == ""
    done = _into_closed_pipe([*REPORTGEN, "report", "--help"])
    assert done.returncode == 141 and done.stderr == ""


@needs_dev_full
def test_full_disk_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Standard output on a full disk printed a traceback; now one line and exit 2."""
    with open("/dev/full", "w") as full:
        for args in (
            ["validate", str(TINY)],
            ["report", str(TINY), "--out", str(tmp_path / "r")],
            ["diff", str(TINY_EARLIER), str(TINY), "--format", "md"],
            ["--help"],
        ):
            done = _run([*REPORTGEN, *args], full)
            assert (done.returncode, done.stderr) == (2, FULL_LINE), args


@needs_dev_full
def test_collector_list_on_a_full_disk_is_one_line() -> None:
    with open("/dev/full", "w") as full:
        done = _run(
            [
                sys.executable,
                "-m",
                "collector",
                "--workload",
                "collector/workloads/tiny_encoder.toml",
                "--target",
                "cpu",
                "--list",
            ],
            full,
        )
    assert done.returncode == 4
    assert done.stderr == "collector: cannot write to standard output: No space left on device\n"


@needs_dev_full
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["inspect", "--help"]], ids=" ".join)
def test_collector_help_on_a_full_disk_is_one_line(args: list[str], unbuffered: bool) -> None:
    """Before: Python's own two lines ('Exception ignored in: <_io.TextIOWrapper ...>') and exit
    120, as argparse prints the help and exits before its flush fails (buffered stdout); with
    PYTHONUNBUFFERED=1, exit 0 and nothing said (argparse drops the write's error)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "collector", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
    assert done.returncode == 4
    assert done.stderr == "collector: cannot write to standard output: No space left on device\n"


@pytest.mark.parametrize("word", ["bogus", "plan.toml", "pl\nan.toml"])
def test_a_word_the_collector_does_not_know_is_named(word: str) -> None:
    """Before: 'the following arguments are required: --workload', the word given never named.
    A line break in it is shown, on the message's one line."""
    done = _run([sys.executable, "-m", "collector", word], subprocess.PIPE)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    shown = word.replace("\n", "<U+000A>")
    assert done.stderr.startswith(f"collector: '{shown}' is no command or option")
    assert (f"did you mean --workload {shown}?" in done.stderr) == word.endswith(".toml")


@pytest.mark.parametrize(
    "command", ["validate", "report", "annotate", "site", "diff", "compare", "publish", "manifest", "plan-check"]
)
def test_help_documents_141(command: str) -> None:
    text = CliRunner().invoke(main, [command, "--help"], terminal_width=200).output
    assert "Exit codes" in text and "141" in text.split("Exit codes", 1)[1]


def test_report_into_a_used_folder_removes_the_earlier_reports_files(tmp_path: Path) -> None:
    """A second run's report into the same --out left the first run's report.html (and its
    assets) beside the second's report.md; now they are removed and listed, and nothing else."""
    out = tmp_path / "rr"
    runner = CliRunner()
    first = runner.invoke(main, ["report", str(TINY), "--out", str(out)])
    assert first.exit_code == 0, first.output
    assets = sorted(p.name for p in (out / "assets").iterdir())
    assert assets
    (out / "notes.txt").write_text("the owner's own notes\n", encoding="utf-8")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("not ours\n", encoding="utf-8")
    os.symlink(outside, out / "report-summary.md")  # a link by one of our names: never followed
    second = runner.invoke(main, ["report", str(HEAT), "--out", str(out), "--format", "md"])
    assert second.exit_code == 0, second.output
    assert not (out / "report.html").exists()
    assert not (out / "assets").exists()
    assert f"removed {out / 'report.html'}" in second.output
    assert "heat-solver" in (out / "report.md").read_text(encoding="utf-8")
    assert "tiny-encoder" not in (out / "details.csv").read_text(encoding="utf-8")
    assert (out / "notes.txt").read_text(encoding="utf-8") == "the owner's own notes\n"
    assert os.path.islink(out / "report-summary.md") and outside.read_text(encoding="utf-8") == "not ours\n"
    single = runner.invoke(main, ["report", str(HEAT), "--out", str(out), "--single-file"])
    assert single.exit_code == 0, single.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "report-summary.md", "report.html"]


def test_a_file_by_a_report_s_name_that_no_report_wrote_here_stays(tmp_path: Path) -> None:
    """Before: a user's own report.md in --out was removed ('an earlier report's') by a report
    that wrote no Markdown, as the removal went by name alone. A file is removed only where the
    earlier report's record holds it as it is; the others are named and left."""
    out = tmp_path / "mydocs"
    out.mkdir()
    (out / "report.md").write_text("# my notes\n", encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(main, ["report", str(TINY), "--out", str(out), "--format", "html"])
    assert done.exit_code == 0, done.output
    assert (out / "report.md").read_text(encoding="utf-8") == "# my notes\n"
    assert f"left {out / 'report.md'}: not written this time" in done.output
    # A report's own file, edited since, stays too; one left as written goes.
    assert runner.invoke(main, ["report", str(TINY), "--out", str(out), "--format", "md"]).exit_code == 0
    done = runner.invoke(main, ["report", str(TINY), "--out", str(out), "--format", "html"])
    assert not (out / "report.md").exists() and f"removed {out / 'report.md'}" in done.output
    assert runner.invoke(main, ["report", str(TINY), "--out", str(out), "--format", "md"]).exit_code == 0
    edited = (out / "report.md").read_text(encoding="utf-8") + "my remark\n"
    (out / "report.md").write_text(edited, encoding="utf-8")
    done = runner.invoke(main, ["report", str(TINY), "--out", str(out), "--format", "html"])
    assert (out / "report.md").read_text(encoding="utf-8") == edited and "left" in done.output
    # A record that is a link, or names a file by another content, removes nothing.
    (out / RECORD_NAME).unlink()
    os.symlink(tmp_path / "elsewhere.json", out / RECORD_NAME)
    (out / "report.md").write_text("# mine again\n", encoding="utf-8")
    (tmp_path / "elsewhere.json").write_text(json.dumps({"files": {"report.md": "0" * 64}}), encoding="utf-8")
    assert runner.invoke(main, ["report", str(TINY), "--out", str(out), "--format", "html"]).exit_code == 0
    assert (out / "report.md").read_text(encoding="utf-8") == "# mine again\n"


def test_stale_assets_behind_a_link_or_linked_by_another_page_stay(tmp_path: Path) -> None:
    out = tmp_path / "rr"
    runner = CliRunner()
    assert runner.invoke(main, ["report", str(TINY), "--out", str(out)]).exit_code == 0
    names = sorted(p.name for p in (out / "assets").iterdir())
    (out / "compare.html").write_text(
        f'<link rel="stylesheet" href="assets/{names[1]}">', encoding="utf-8"
    )  # a page of another command, written into the same folder
    assert runner.invoke(main, ["report", str(HEAT), "--out", str(out), "--format", "md"]).exit_code == 0
    assert sorted(p.name for p in (out / "assets").iterdir()) == [names[1]]
    # assets/ as a link to another folder: nothing in that folder is looked at or removed
    shared = tmp_path / "shared"
    shutil.move(str(out / "assets"), shared)
    os.symlink(shared, out / "assets")
    (shared / names[0]).write_text("kept", encoding="utf-8")
    assert runner.invoke(main, ["report", str(HEAT), "--out", str(out), "--single-file"]).exit_code == 0
    assert sorted(p.name for p in shared.iterdir()) == sorted([names[0], names[1]])


def _runs_and_inspections(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(TINY, runs / TINY.name)
    shutil.copy(INSPECTIONS / "tiny-encoder.inspection.jsonl", runs)
    shutil.copy(INSPECTIONS / "minilm.inspection.jsonl", runs / "minilm.jsonl")  # another name: known by its content
    return runs


def test_validate_skips_inspection_logs_in_a_folder_with_one_line(tmp_path: Path) -> None:
    runs = _runs_and_inspections(tmp_path)
    result = CliRunner().invoke(main, ["validate", str(runs)])
    assert result.exit_code == 0, result.output
    assert "unknown event kind" not in result.output
    notes = [line for line in result.output.splitlines() if "an inspection log" in line]
    assert len(notes) == 2
    assert all("plan-check --inspection" in line and "report --inspection" in line for line in notes)
    # Said as the help says it (left out), not as a skipped entry, which exits 1 (a careless user
    # read "skipped" beside exit 0 as a contradiction of the help).
    assert all(line.endswith("; left out (not counted as skipped)") for line in notes), notes
    assert "valid, complete" in result.output


def test_an_inspection_log_named_directly_is_one_line_and_exit_1(tmp_path: Path) -> None:
    log = INSPECTIONS / "tiny-encoder.inspection.jsonl"
    result = CliRunner().invoke(main, ["validate", str(log)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"{log}: an inspection log (python -m collector inspect), not a run log: "
        "give it to reportgen plan-check --inspection or reportgen report --inspection"
    ]
    report = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "r")])
    assert report.exit_code == 1 and "unknown event kind" not in report.output
    assert "an inspection log" in report.output


def test_site_leaves_an_inspection_log_out(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(TINY, runs / TINY.name)
    shutil.copy(INSPECTIONS / "tiny-encoder.inspection.jsonl", runs)
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    assert "unknown event kind" not in result.output and any(
        line.startswith("1 run, ") for line in result.output.splitlines()
    )
    notes = [line for line in result.stderr.splitlines() if "an inspection log" in line]
    assert len(notes) == 1 and "tiny-encoder.inspection.jsonl" in notes[0] and notes[0].endswith("; left out"), (
        result.stderr
    )


def test_site_leaves_out_an_inspection_log_of_any_name_as_validate_does(tmp_path: Path) -> None:
    """`collector inspect --out` takes any name. Before, one named other.jsonl in a folder was
    left out by validate (exit 0) but counted as a problem by site (exit 1)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(TINY, runs / TINY.name)
    shutil.copy(INSPECTIONS / "tiny-encoder.inspection.jsonl", runs / "other.jsonl")
    assert CliRunner().invoke(main, ["validate", str(runs)]).exit_code == 0
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "an inspection log" in line]
    assert len(notes) == 1 and "other.jsonl" in notes[0] and notes[0].endswith("; left out"), result.stderr


@pytest.mark.parametrize("stderr", ["closed pipe", pytest.param("full disk", marks=needs_dev_full)])
def test_a_site_whose_progress_cannot_be_written_is_built(tmp_path: Path, stderr: str) -> None:
    """`reportgen site RUNS 2>&1 | head -3` exited 141 with no site: the progress line after the
    reader went away stopped the build. The build goes on; its exit code says how it ended (141:
    the summary line could not be written to the same closed pipe; 0 with only stderr full)."""
    runs = tmp_path / "runs"
    for run in (TINY, TINY_EARLIER):
        shutil.copytree(run, runs / run.name)
    out = tmp_path / "site"
    args = [*REPORTGEN, "site", str(runs), "--out", str(out)]
    if stderr == "full disk":
        with open("/dev/full", "w") as full:
            done = subprocess.run(args, stderr=full, stdout=subprocess.PIPE, text=True, timeout=120)
        assert done.returncode == 0 and "2 runs" in done.stdout
    else:
        read, write = os.pipe()
        os.close(read)
        try:
            done = subprocess.run(args, stdout=write, stderr=write, timeout=120)
        finally:
            os.close(write)
        assert done.returncode == 141
    assert len(list((out / "runs").iterdir())) == 2 and (out / "index.html").is_file()


def test_a_record_place_that_cannot_be_written_is_refused_before_any_page(tmp_path: Path) -> None:
    """A FIFO where the report's record goes: the pages were written, then 'cannot write' and
    exit 2. Its place is checked with the pages', before anything is written."""
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / RECORD_NAME)
    result = CliRunner().invoke(main, ["report", str(TINY), "--out", str(out)])
    assert result.exit_code == 2 and "FIFO" in result.output, result.output
    assert sorted(p.name for p in out.iterdir()) == [RECORD_NAME]


def test_python_m_reportgen_cli_runs_the_command_as_python_m_reportgen_does(tmp_path: Path) -> None:
    """A review: `python -m reportgen.cli validate bad.jsonl` defined the commands and ran none:
    nothing printed, exit 0, so a CI job that called it so passed on an invalid log."""
    log = tmp_path / "bad.jsonl"
    log.write_text("{}\n", encoding="utf-8")
    for module in ("reportgen", "reportgen.cli"):
        done = subprocess.run(
            [sys.executable, "-m", module, "validate", str(log)],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
            timeout=120,
            check=False,
        )
        assert done.returncode == 1 and "INVALID" in done.stdout, (module, done.stdout, done.stderr)
