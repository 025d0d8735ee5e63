"""A careless user's commands, as a review ran them: two reports into one --out at once, inputs
that an output would overwrite, Ctrl-C before the tool has started. The logs are the shipped
sample runs (measurements) or copies of them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from tests.conftest import REPO

SAMPLE = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183"
OTHER = REPO / "sample_runs" / "tiny-encoder-cpu-20261205T124447Z-43ef64"


def test_a_report_or_compare_into_a_folder_another_command_writes_is_refused(tmp_path: Path) -> None:
    """Two reports into one --out at once left one run's details.csv beside the other's pages,
    both exiting 0. A report (or compare) holds the folder while it writes; another is refused
    at once (exit 2, one line), writes nothing, and leaves no lock file behind either way."""
    from reportgen.storage.local import folder_lock

    out = tmp_path / "out"
    with folder_lock(out):  # another report, in the middle of writing
        for args in (["report", str(SAMPLE)], ["compare", str(OTHER), str(SAMPLE)]):
            busy = CliRunner().invoke(main, [*args, "--out", str(out)])
            assert busy.exit_code == 2, busy.output
            assert "is being written by another command now" in busy.output
            assert list(out.iterdir()) == []
    assert not out.exists(), "a folder the lock made for nothing is removed again"
    done = CliRunner().invoke(main, ["report", str(SAMPLE), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [".reportgen-report.json"]


def test_a_report_never_writes_over_its_annotations_or_inspection_log(tmp_path: Path) -> None:
    """`report --annotations Y/report.md --out Y` printed "wrote Y/report.md": the owner's
    verdicts were gone; `--inspection Y/report.html` did the same to the inspection log (the log
    itself was refused already). Each input is refused as the log is, with nothing written, and
    so with --single-file."""
    out = tmp_path / "Y"
    out.mkdir()
    notes = out / "report.md"
    notes.write_text('[[explain]]\nmode = "eager"\nexplanation = "x"\n', encoding="utf-8")
    before = notes.read_bytes()
    result = CliRunner().invoke(main, ["report", str(SAMPLE), "--annotations", str(notes), "--out", str(out)])
    assert result.exit_code == 2 and "is the input" in result.output, result.output
    assert notes.read_bytes() == before and sorted(p.name for p in out.iterdir()) == ["report.md"]
    inspection = out / "report.html"
    shutil.copy(REPO / "sample_inspections" / "tiny-encoder.inspection.jsonl", inspection)
    for extra in ([], ["--single-file"]):
        result = CliRunner().invoke(
            main, ["report", str(SAMPLE), "--inspection", str(inspection), "--out", str(out), *extra]
        )
        assert result.exit_code == 2 and "is the input" in result.output, result.output
        assert inspection.read_bytes() == (REPO / "sample_inspections" / "tiny-encoder.inspection.jsonl").read_bytes()


HOOK = """
import os
import signal
import sys

class Interrupt:
    # Ctrl-C arriving while the named module is imported, every time (a timing test would be flaky).
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
"""


def test_ctrl_c_while_the_command_is_still_loading_is_one_line_and_130(tmp_path: Path) -> None:
    """Ctrl-C in the first tenth of a second gave a traceback out of `import click` (reportgen)
    or out of the collector's own imports; once running, both said one line and exited 130."""
    import os
    import subprocess
    import sys

    for command, module, said in (
        ("reportgen", "click", "reportgen: interrupted\n"),
        (
            "collector",
            "collector.arguments",
            "collector: interrupted before the run started (SIGINT); nothing was written\n",
        ),
    ):
        hook = tmp_path / command
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(HOOK.format(module=module), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), str(REPO)])}
        done = subprocess.run(
            [sys.executable, "-m", command, "--help"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (done.returncode, done.stderr) == (130, said), done.stderr[-2000:]


def test_annotate_force_never_replaces_another_runs_log(tmp_path: Path) -> None:
    """`annotate RUN --out OTHER/events.jsonl --force` replaced that run's log, its only evidence,
    with a TOML skeleton (exit 0). --force replaces an annotations file; a file that reads as a
    JSON-lines log is refused (exit 2) and left as it was."""
    failing = REPO / "sample_runs" / "scenario-a-text-service-cpu-20261202T061519Z-d2acc0"
    other = tmp_path / "other"
    shutil.copytree(REPO / "sample_runs" / "heat-solver-cpu-20261202T021648Z-fc81c6", other)
    before = (other / "events.jsonl").read_bytes()
    result = CliRunner().invoke(main, ["annotate", str(failing), "--out", str(other / "events.jsonl"), "--force"])
    assert result.exit_code == 2 and "reads as a JSON-lines log" in result.output, result.output
    assert (other / "events.jsonl").read_bytes() == before
    # An annotations file is still replaced with --force.
    notes = tmp_path / "notes.toml"
    notes.write_text("# an older skeleton\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["annotate", str(failing), "--out", str(notes), "--force"])
    assert result.exit_code == 0, result.output
    assert notes.read_text(encoding="utf-8") != "# an older skeleton\n"


def test_a_usage_error_exits_2_though_standard_error_cannot_be_written(tmp_path: Path) -> None:
    """`reportgen validate nonexist 2>/dev/full` exited 1, which a CI job reads as an invalid log;
    every help text says a usage error is 2. An invalid log is still 1."""
    import subprocess
    import sys

    (tmp_path / "bad.jsonl").write_text("not json\n", encoding="utf-8")
    with open("/dev/full", "w") as full:
        for args, code in ((["validate", "nonexist"], 2), (["frob"], 2), (["validate", "bad.jsonl"], 1)):
            done = subprocess.run(
                [sys.executable, "-m", "reportgen", *args],
                cwd=tmp_path,
                stderr=full,
                stdout=subprocess.DEVNULL,
                timeout=120,
            )
            assert done.returncode == code, (args, done.returncode)


def test_a_site_build_and_a_report_into_one_folder_at_once_exclude_each_other(tmp_path: Path) -> None:
    """A site build holds its folder as a report does: neither writes into a folder the other is
    writing (the site's lock file alone let a report in)."""
    from reportgen.storage.local import folder_lock, output_lock

    out = tmp_path / "out"
    runs = tmp_path / "runs"
    shutil.copytree(SAMPLE, runs / SAMPLE.name)
    with folder_lock(out):  # a report, in the middle of writing
        busy = CliRunner().invoke(main, ["site", str(runs), "--out", str(out)])
        assert busy.exit_code == 2 and "is being written by another command now" in busy.output, busy.output
    with output_lock(out):  # a site build, in the middle of writing
        busy = CliRunner().invoke(main, ["report", str(SAMPLE), "--out", str(out)])
        assert busy.exit_code == 2 and "is being written by another command now" in busy.output, busy.output


def test_the_next_step_names_the_report_command_with_its_log_and_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next step said "then run `reportgen report` again": no log, no --out, so a careless
    user reran a command that wrote nowhere they looked. Paths are named relative to where the
    command ran, never as a path of the builder's machine."""
    run = tmp_path / "runs" / "a"
    shutil.copytree(REPO / "sample_runs" / "scenario-a-text-service-cpu-20261202T061519Z-d2acc0", run)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["report", "runs/a", "--out", "pages", "--format", "md"])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "pages" / "report.md").read_text(encoding="utf-8")
    assert "then run `reportgen report runs/a/events.jsonl --out pages` again" in page
    assert str(tmp_path) not in page


def test_a_report_into_a_linked_folder_works_and_a_refused_command_leaves_the_holders_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review of the lock: a --out that is a link to a folder was refused ("Not a directory";
    it worked before and a site still takes it); and a command refused the lock removed the
    folder the holder had just made for itself, when it had found it missing a moment before."""
    import reportgen.storage.local as local

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    done = CliRunner().invoke(main, ["report", str(SAMPLE), "--out", str(tmp_path / "link")])
    assert done.exit_code == 0, done.output
    assert (real / "report.html").is_file()
    out = tmp_path / "out"
    with local.folder_lock(out):  # the holder made out
        monkeypatch.setattr(local, "_first_missing", lambda path: path)  # missing when the other looked
        for lock in (local.folder_lock, local.output_lock):
            try:
                with lock(out):
                    raise AssertionError("the folder is held")
            except local.OutputBusy:
                pass
            assert out.is_dir(), lock.__name__


def test_a_report_never_reads_a_huge_file_its_record_names_into_memory(tmp_path: Path) -> None:
    """A forged record naming report-summary.md beside a 2 GB sparse file of that name: the
    report read it whole to hash it (2.1 GB of memory, 23 s). A file larger than any page a
    report writes is left, unread: here under a 1.5 GB address-space limit."""
    import os
    import resource
    import subprocess
    import sys

    out = tmp_path / "rep"
    out.mkdir()
    with open(out / "report-summary.md", "wb") as handle:
        handle.truncate(2 << 30)
    (out / ".reportgen-report.json").write_text('{"files":{"report-summary.md":"00"}}', encoding="utf-8")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))

    done = subprocess.run(
        [sys.executable, "-m", "reportgen", "report", str(SAMPLE), "--out", str(out), "--format", "html"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limited,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert os.path.getsize(out / "report-summary.md") == 2 << 30
    assert "left " in done.stdout and "report-summary.md" in done.stdout


def test_csv_exports_show_hidden_characters_as_every_page_does() -> None:
    """details.csv and index.csv kept a log's raw ESC, BEL and U+202E: `cat details.csv` cleared
    the terminal. Tabs and line breaks stay (quoted), as on the pages."""
    from reportgen.render.templating import csv_text

    text = csv_text([["AMD\u202eDCBA\x1b[2J\x07 =1+1", "two\nlines"]])
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert text == 'AMD<U+202E>DCBA<U+001B>[2J<U+0007> =1+1,"two\nlines"\n'


def test_markdown_from_a_log_decodes_no_character_reference() -> None:
    """A failure message 'compile failed &rlm;&ZeroWidthSpace;&amp;lt;' reached report.md as is:
    rendered, it held U+200F and U+200B (hidden) and '&amp;lt;' read '&lt;'. An ampersand is
    escaped, so each reads as typed."""
    from markdown_it import MarkdownIt

    from reportgen.render.templating import md_escape

    text = md_escape("compile failed &rlm;&ZeroWidthSpace;&amp;lt;")
    rendered = MarkdownIt("commonmark", {"html": False}).render(text)
    assert "\u200f" not in rendered and "\u200b" not in rendered
    assert rendered == "<p>compile failed &amp;rlm;&amp;ZeroWidthSpace;&amp;amp;lt;</p>\n", rendered


def test_diff_refuses_an_annotations_file_it_cannot_read_as_report_does(tmp_path: Path) -> None:
    """`diff` left out a FIFO (or a folder) named annotations.toml beside a run, unsaid (exit 0),
    and so the owner's verdicts; report, compare and annotate refuse it in one line."""
    import os

    run = tmp_path / "r"
    shutil.copytree(SAMPLE, run)
    os.mkfifo(run / "annotations.toml")
    result = CliRunner().invoke(main, ["diff", str(run), str(OTHER)])
    assert result.exit_code == 1, result.output
    assert "annotations.toml: not read: a FIFO" in result.output
    # Annotations that load are still read beside the log.
    (run / "annotations.toml").unlink()
    (run / "annotations.toml").write_text('[[explain]]\nmode = "eager"\nexplanation = "x"\n', encoding="utf-8")
    assert CliRunner().invoke(main, ["diff", str(run), str(OTHER)]).exit_code == 0


def test_a_compare_rule_naming_unknown_ids_is_one_bounded_line(tmp_path: Path) -> None:
    """A [[compare]] rule of fifty 19,000-character ids printed one line of 1.9 MB (every id twice,
    whole); other configuration messages cut theirs."""
    runs = tmp_path / "runs"
    shutil.copytree(SAMPLE, runs / SAMPLE.name)
    ids = ", ".join(f'"{"x" * 19_000}{i}"' for i in range(50))
    config = tmp_path / "site.toml"
    config.write_text(f'[[compare]]\nbaseline = [{ids}]\ncandidate = "y"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "s"), "--config", str(config)])
    assert "no run with id" in result.output, result.output[:500]
    assert max(len(line) for line in result.output.splitlines()) < 2_000
    assert "and 46 more" in result.output


def test_a_forged_state_or_quick_record_of_empty_lists_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    """A 250 MB state of nested empty lists (an unknown key) took a rebuild to 6.5 GB of memory, a
    quick record the same to 6.7 GB: a file of more lists and objects than one a build writes
    could hold is ignored with a warning (a full build) before it is decoded. Here 40 MB each,
    under a 1 GB address-space limit, beside a build's real files."""
    import json
    import resource
    import subprocess
    import sys

    runs = tmp_path / "runs"
    shutil.copytree(SAMPLE, runs / SAMPLE.name)
    out = tmp_path / "s"
    assert CliRunner().invoke(main, ["site", str(runs), "--out", str(out)]).exit_code == 0
    junk = b"[" + b"[]," * ((40 << 20) // 3) + b"[]]"
    for name in (".reportgen-state.json", ".reportgen-quick.json"):
        real = json.loads((out / name).read_text(encoding="utf-8"))
        (out / name).write_bytes(
            json.dumps({**real, "junk": None}).encode()[:-1].replace(b'"junk": null', b'"junk": ' + junk) + b"}"
        )

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run(
        [sys.executable, "-m", "reportgen", "site", str(runs), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limited,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "more than a file this tool writes holds" in done.stderr, done.stderr[-2000:]
