"""What a careless user's command line did wrong, and an attacker's file name: a site written
over its own runs folder, Ctrl-C read as an invalid input, a revised plan whose header a file
name could extend, a site configuration's unknown key without its line, and a summary line
that counted only some of the problems behind its exit code."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import INTERRUPTED, main
from tests.conftest import REPO
from tests.hostile import invoke, snapshot

SAMPLES = REPO / "sample_runs"
RUN = SAMPLES / "heat-solver-cpu-20261205T122551Z-af7feb"


def test_a_site_whose_output_holds_the_runs_folder_is_refused_before_it_writes(tmp_path: Path) -> None:
    """Before: `site work/runs --out work` wrote the site's runs/<id>-<hash>/ folders into the
    user's runs folder; every later build of it then failed on runs given twice."""
    runs = tmp_path / "work" / "runs"
    runs.mkdir(parents=True)
    shutil.copytree(RUN, runs / RUN.name)
    before = snapshot(tmp_path)
    result = invoke(["site", runs, "--out", tmp_path / "work"])
    assert result.code == 2 and "work/runs, a folder the site writes" in result.line_with("do not hold RUNS")
    result = invoke(["site", runs / RUN.name / "events.jsonl", "--out", tmp_path / "work"])
    assert result.code == 2
    assert snapshot(tmp_path) == before, "nothing written"
    assert invoke(["site", runs, "--out", tmp_path / "site"]).code == 0, "the control: a folder beside RUNS"


def test_ctrl_c_ends_a_command_with_130_not_the_invalid_input_code(tmp_path: Path) -> None:
    """Before: Ctrl-C printed 'Aborted!' and exited 1, which `site` and `validate` give for an
    invalid input. A real process, interrupted after its first progress line."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, "-m", "reportgen", "site", str(SAMPLES), "--out", str(tmp_path / "site")]
    # As a terminal's foreground command has it: a test suite started as a shell's background
    # job (`pytest &`) passes SIGINT on ignored, and Python then leaves it ignored, as it should.
    proc = subprocess.Popen(
        args,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL) and None,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert "[1/" in first, first
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == INTERRUPTED == 130, (code, rest[-2000:])
    assert "reportgen site: interrupted" in rest and "Traceback" not in rest and "Aborted!" not in rest


def test_ctrl_c_in_any_command_exits_130(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("reportgen.contract.validation.validate_files", interrupted)
    result = CliRunner().invoke(main, ["validate", str(RUN)])
    assert result.exit_code == 130 and "reportgen validate: interrupted" in result.output
    assert "130" in CliRunner().invoke(main, ["--help"]).output


def test_a_revised_plan_s_header_keeps_a_file_name_inside_its_comment(tmp_path: Path) -> None:
    """Before: a plan named 'needs\\n[matrix.evil]\\n#.toml' wrote '[matrix.evil]' as a line of
    TOML into the revised plan, which then failed to parse."""
    plan = tmp_path / "needs\n[matrix.evil]\nx = 1\n#.toml"
    source = REPO / "tests" / "plans" / "scenario_a.toml"
    text = source.read_text(encoding="utf-8").replace('module = "', f'module = "{source.parent}/', 1)
    plan.write_text(text, encoding="utf-8")
    out = tmp_path / "revised.toml"
    result = invoke(["plan-check", plan, "--target", "neuron", "--write-revised", out])
    assert result.code == 3, result.output
    written = out.read_text(encoding="utf-8")
    assert "evil" not in tomllib.loads(written).get("matrix", {})
    header = [line for line in written.splitlines() if "evil" in line]
    assert header and all(line.startswith("#") for line in header), header
    assert invoke(["plan-check", out, "--target", "neuron"]).code in (0, 3), "the revised plan reads as a plan"


def test_an_unknown_key_in_a_site_configuration_is_named_at_its_line(tmp_path: Path) -> None:
    """Before: 'site.toml: unknown: Extra inputs are not permitted', no line, a library's words."""
    config = tmp_path / "site.toml"
    config.write_text("compare_latest = []\n\n[unknown]\nx = 1\n\n[history]\ncases = []\nbogus = 2\n", encoding="utf-8")
    result = invoke(["site", RUN, "--out", tmp_path / "site", "--config", config])
    assert result.code == 2
    line = result.line_with("unknown key")
    assert "line 8: history.bogus: unknown key" in line and "line 3: unknown: unknown key (a site configuration" in line
    assert "Extra inputs" not in line


def test_the_site_summary_counts_every_problem_behind_its_exit_code(tmp_path: Path) -> None:
    """Before: two copies of one run gave exit 1 and '1 run, 12 files written', no word of a skip."""
    runs = tmp_path / "runs"
    for name in ("a", "b"):
        shutil.copytree(RUN, runs / name)
    result = invoke(["site", runs, "--out", tmp_path / "site"])
    assert result.code == 1
    assert "1 problem (listed above)" in result.line_with("files written")
    assert "is also in" in result.output


def test_runs_kept_in_a_folder_of_their_own_below_the_site_are_built(tmp_path: Path) -> None:
    """A Pages root with data/ in it: the site writes nothing there, and builds (the refusal is
    for RUNS in the folders the site writes)."""
    data = tmp_path / "data"
    shutil.copytree(RUN, data / RUN.name)
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    assert invoke(["site", data, "--out", tmp_path]).code == 0
    assert (tmp_path / "index.html").is_file()
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before
    assert invoke(["site", data, "--out", tmp_path]).code == 0, "a rebuild reads no copy as a run"


def test_ctrl_c_that_lands_in_a_weakref_callback_still_ends_the_command_with_130(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: a SIGINT that Python delivered inside a weakref callback (a run model leaving a
    per-run cache) was printed as 'Exception ignored' and dropped; `site` built every run and
    exited 0 (seen once in the real-process test above, under load)."""
    import weakref

    from reportgen.contract import validation

    real = validation.validate_files

    class Held:
        pass

    def interrupted_in_a_callback(*args: object, **kwargs: object) -> object:
        def callback(ref: object) -> None:
            raise KeyboardInterrupt

        held = Held()
        ref = weakref.ref(held, callback)
        del held  # the callback runs here: its KeyboardInterrupt goes to sys.unraisablehook
        assert ref() is None
        return real(*args, **kwargs)

    monkeypatch.setattr("reportgen.contract.validation.validate_files", interrupted_in_a_callback)
    before = sys.unraisablehook
    result = CliRunner().invoke(main, ["validate", str(RUN)])
    assert result.exit_code == 130, result.output
    assert "reportgen validate: interrupted" in result.output and "Traceback" not in result.output
    assert sys.unraisablehook is before, "the hook is given back after the command"


def test_a_misspelled_key_of_a_site_configuration_or_an_annotation_names_the_key_meant(tmp_path: Path) -> None:
    """`candiate_target` in site.toml and `reasn` in annotations.toml were 'unknown key' and
    'Extra inputs are not permitted', with no word of the key meant (careless user review,
    finding 9); plan keys had said it."""
    from reportgen.model.annotations import AnnotationError, parse_annotations
    from reportgen.publish.site_compare import SiteConfigError, load_site_config

    config = tmp_path / "site.toml"
    config.write_text('[[compare_latest]]\nbaseline_target = "cpu"\ncandiate_target = "cuda"\n', encoding="utf-8")
    with pytest.raises(SiteConfigError) as site_error:
        load_site_config(config)
    assert "line 3: compare_latest.0.candiate_target: unknown key; did you mean 'candidate_target'?" in str(
        site_error.value
    )
    with pytest.raises(AnnotationError) as note_error:
        parse_annotations('[[explain]]\ncases = "b1-*"\nexplanation = "x"\nreasn = "y"\n', "annotations.toml")
    assert str(note_error.value) == "annotations.toml:4: [[explain]] #1 reasn: unknown key; did you mean 'reason'?"


def test_a_site_is_not_written_over_a_users_files_or_runs(tmp_path: Path) -> None:
    """A review: `site X --out myruns` (the arguments swapped) wrote a site into a folder of runs,
    after which validate and every later build skipped those runs as 'copies' of a site; and
    `site X --out proj` replaced the user's own proj/index.html without a word. A folder no
    reportgen command wrote is refused where it holds either, before anything is written."""
    myruns = tmp_path / "myruns"
    shutil.copytree(RUN, myruns / RUN.name)
    before = sorted(p.relative_to(myruns) for p in myruns.rglob("*"))
    result = invoke(["site", RUN, "--out", myruns])
    assert result.code == 2, result.output
    line = result.line_with("holds run logs")
    assert f"{myruns} holds run logs ({myruns / RUN.name / 'events.jsonl'}, ...)" in line
    assert sorted(p.relative_to(myruns) for p in myruns.rglob("*")) == before
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "index.html").write_text("<h1>my page</h1>\n", encoding="utf-8")
    (proj / "CNAME").write_text("runs.example.org\n", encoding="utf-8")
    result = invoke(["site", RUN, "--out", proj])
    assert result.code == 2, result.output
    assert f"{proj} holds index.html, which the site would replace, and no site reportgen built" in result.line_with(
        "which the site would replace"
    )
    assert sorted(p.name for p in proj.iterdir()) == ["CNAME", "index.html"]
    (proj / "index.html").unlink()
    assert invoke(["site", RUN, "--out", proj]).code == 0, "a folder of other files takes a site"
    assert (proj / "CNAME").read_text(encoding="utf-8") == "runs.example.org\n"
    assert invoke(["site", RUN, "--out", proj]).code == 0, "and a site it built is built again"


def test_a_site_whose_every_log_was_skipped_does_not_say_there_was_none(tmp_path: Path) -> None:
    """A review: with --max-log-size below every log's size, site listed each log as skipped, then
    said 'no run log (*.jsonl) in runs': there were two. It says each was skipped; exit 1."""
    runs = tmp_path / "runs"
    shutil.copytree(RUN, runs / RUN.name)
    result = invoke(["site", runs, "--out", tmp_path / "site", "--max-log-size", "10K"])
    assert result.code == 1, result.output
    assert "larger than the limit" in result.output
    line = result.line_with("nothing written")
    assert f"no run log (*.jsonl) read in {runs}: each entry found was skipped (listed above)" in line, line


def test_an_out_folder_too_large_to_look_through_is_refused_not_built_into(tmp_path: Path) -> None:
    """A review: the look for run logs in --out stopped after 20,000 entries and let the build
    write its site beside runs it had not reached (a .venv walked first)."""
    import reportgen.cli as cli

    proj = tmp_path / "proj"
    (proj / "many").mkdir(parents=True)
    for n in range(30):
        (proj / "many" / f"f{n}").touch()
    before = sorted(p.relative_to(proj) for p in proj.rglob("*"))
    old = cli.MOST_LOOKED_AT
    cli.MOST_LOOKED_AT = 20
    try:
        result = CliRunner().invoke(main, ["site", str(RUN), "--out", str(proj)])
    finally:
        cli.MOST_LOOKED_AT = old
    assert result.exit_code == 2, result.output
    assert f"{proj} holds more than 20 entries and no site reportgen built" in " ".join(result.output.split())
    assert sorted(p.relative_to(proj) for p in proj.rglob("*")) == before
    # The RUNS folder given below --out (a Pages root's data/) is not counted (a third review).
    shutil.rmtree(proj / "many")
    shutil.copytree(RUN, proj / "data" / RUN.name)
    for n in range(30):
        (proj / "data" / f"f{n}").touch()
    cli.MOST_LOOKED_AT = 20
    try:
        result = CliRunner().invoke(main, ["site", str(proj / "data"), "--out", str(proj)])
    finally:
        cli.MOST_LOOKED_AT = old
    assert result.exit_code == 0, result.output
