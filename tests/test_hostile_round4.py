"""Hostile and careless input, fourth round: messages that misstate what happened, paths that
break a line, files that start with a byte-order mark, and numbers no run can reach."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO
from tests.hostile import invoke


@pytest.mark.parametrize(
    "inside", ["runs", "runs/run-a", "runs/site"], ids=["out-is-runs", "out-is-a-run-folder", "out-below-runs"]
)
def test_site_refuses_an_output_folder_inside_runs(tmp_path: Path, inside: str) -> None:
    """A site built below RUNS (runs/site) held a copy of each run's log there: every later
    build of RUNS to another --out, and validate, read the copies as runs (a duplicate run id
    each, exit 1, and the copy, with no annotations beside it, kept)."""
    runs = tmp_path / "runs"
    (runs / "run-a").mkdir(parents=True)
    shutil.copy(FIXTURES / "synthetic_complete.jsonl", runs / "run-a" / "events.jsonl")
    out_dir = tmp_path / inside
    before = sorted(p.name for p in runs.rglob("*"))
    result = invoke(["site", runs, "--out", out_dir])
    assert result.code == 2, result.output
    assert f"{out_dir} is inside RUNS {runs}" in result.output and "outside RUNS" in result.output
    assert sorted(p.name for p in runs.rglob("*")) == before  # nothing written


def test_site_refuses_an_output_folder_inside_the_folder_of_a_log_named_directly(tmp_path: Path) -> None:
    """`reportgen site runs/run-a/events.jsonl --out runs/run-a/site` wrote the site into the run
    folder: a later validate of runs/ read the run twice (careless user review, finding 3)."""
    log = tmp_path / "runs" / "run-a" / "events.jsonl"
    log.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "synthetic_complete.jsonl", log)
    result = invoke(["site", log, "--out", log.parent / "site"])
    assert result.code == 2, result.output
    assert f"is inside RUNS {log.parent} (the folder of {log})" in result.output
    assert sorted(p.name for p in log.parent.iterdir()) == ["events.jsonl"]  # nothing written


def test_site_says_the_logs_it_left_out_lie_inside_out(tmp_path: Path) -> None:
    """RUNS reaching --out through a link it follows: the output folder is never searched."""
    out_dir = tmp_path / "out"
    (out_dir / "run-a").mkdir(parents=True)
    shutil.copy(FIXTURES / "synthetic_complete.jsonl", out_dir / "run-a" / "events.jsonl")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "elsewhere").symlink_to(out_dir)
    result = invoke(["site", runs, "--out", out_dir, "--follow-symlinks"])
    assert result.code == 2, result.output
    # An --out that holds run logs, and no site reportgen built, is refused before any search.
    line = result.line_with("holds run logs")
    assert f"{out_dir} holds run logs ({out_dir}/run-a/events.jsonl, ...)" in line, line
    assert "give --out a folder outside your runs" in line
    # Once a site was built there, the output folder is still never searched.
    (out_dir / ".reportgen-lock").touch()
    result = invoke(["site", runs, "--out", out_dir, "--follow-symlinks"])
    assert result.code == 2, result.output
    line = result.line_with("no run log")
    assert f"outside --out {out_dir}" in line and "never searched" in line, line


def test_site_with_no_log_anywhere_says_only_that(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    result = invoke(["site", runs, "--out", tmp_path / "site"])
    assert result.code == 2, result.output
    assert "--out" not in result.line_with("no run log")


FORGED = "forged.jsonl:1: error: a line the tool never printed"


def _no_forged_line(output: str) -> None:
    assert not any(line.startswith("forged") for line in output.splitlines()), output


def test_report_and_compare_write_lines_keep_a_newline_in_the_path_on_one_line(tmp_path: Path) -> None:
    out_dir = tmp_path / f"out\n{FORGED}"
    report = invoke(["report", FIXTURES / "synthetic_complete.jsonl", "--out", out_dir])
    assert (out_dir / "report.html").is_file(), report.output
    assert "wrote " in report.output
    _no_forged_line(report.output)
    compare = invoke(
        [
            "compare",
            FIXTURES / "synthetic_complete.jsonl",
            FIXTURES / "synthetic_mismatch.jsonl",
            "--out",
            tmp_path / f"cmp\n{FORGED}",
        ]
    )
    assert "wrote " in compare.output, compare.output
    _no_forged_line(compare.output)


def test_annotate_lines_keep_a_newline_in_the_path_on_one_line(tmp_path: Path) -> None:
    clean = tmp_path / f"clean\n{FORGED}"
    clean.mkdir()
    shutil.copy(FIXTURES / "synthetic_complete.jsonl", clean / "events.jsonl")
    nothing = invoke(["annotate", clean])
    assert nothing.code == 0 and "no failed cell" in nothing.output, nothing.output
    _no_forged_line(nothing.output)
    failed = tmp_path / f"failed\n{FORGED}"
    failed.mkdir()
    shutil.copy(FIXTURES / "synthetic_mismatch.jsonl", failed / "events.jsonl")
    wrote = invoke(["annotate", failed])
    assert wrote.code == 0 and (failed / "annotations.toml").is_file(), wrote.output
    _no_forged_line(wrote.output)


def test_plan_check_write_revised_line_keeps_a_newline_in_the_path_on_one_line(tmp_path: Path) -> None:
    out = tmp_path / f"revised\n{FORGED}"
    result = invoke(
        ["plan-check", REPO / "tests" / "plans" / "scenario_a.toml", "--target", "neuron", "--write-revised", out]
    )
    assert out.is_file(), result.output
    _no_forged_line(result.output)


def test_site_lines_keep_a_newline_in_the_path_on_one_line(tmp_path: Path) -> None:
    built = invoke(["site", FIXTURES / "synthetic_complete.jsonl", "--out", tmp_path / f"site\n{FORGED}"])
    assert built.code == 0, built.output
    _no_forged_line(built.output)
    runs = tmp_path / f"runs\n{FORGED}"
    runs.mkdir()
    empty = invoke(["site", runs, "--out", tmp_path / "site2"])
    assert empty.code == 2, empty.output
    _no_forged_line(empty.output)


def test_an_unreadable_inspection_is_named_on_one_line_with_hidden_characters_shown(tmp_path: Path) -> None:
    inspection = tmp_path / f"inspection\u202e\n{FORGED}"
    inspection.write_text("{\n", encoding="utf-8")
    result = invoke(["plan-check", REPO / "tests" / "plans" / "scenario_a.toml", "--inspection", inspection])
    assert result.code == 1, result.output
    line = result.line_with("unreadable inspection")
    assert "inspection<U+202E><U+000A>forged.jsonl" in line, line
    _no_forged_line(result.output)


BOM = "\ufeff"
CAMPAIGN = """\
[campaign]
name = "nightly"
destination = "/fsx/runs"

[[workload]]
plan = "collector/workloads/tiny_encoder.toml"

[[environment]]
name = "cpu-host"
target = "cpu"
python = "/usr/bin/python3"
"""
SITE_CONFIG = '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n'


def _twice(tmp_path: Path, name: str, text: str) -> tuple[Path, Path]:
    """The same file, as written and with a byte-order mark first, under the same name."""
    plain, marked = tmp_path / "plain" / name, tmp_path / "marked" / name
    for path, body in ((plain, text), (marked, BOM + text)):
        path.parent.mkdir(exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return plain, marked


def test_every_toml_reader_reads_a_file_with_a_byte_order_mark_as_without(tmp_path: Path) -> None:
    from campaign.spec import load_campaign
    from collector.descriptors import read_descriptor
    from collector.plan import read_plan_file
    from reportgen.judge.backend_docs import read_docs_file
    from reportgen.model.annotations import parse_annotations
    from reportgen.publish.site_compare import load_site_config

    plain, marked = _twice(tmp_path, "campaign.toml", CAMPAIGN)
    assert load_campaign(marked).tasks() == load_campaign(plain).tasks()
    plain, marked = _twice(tmp_path, "site.toml", SITE_CONFIG)
    assert load_site_config(marked) == load_site_config(plain)
    text = (REPO / "collector" / "backends" / "cpu.toml").read_text(encoding="utf-8")
    plain, marked = _twice(tmp_path, "cpu.toml", text)
    assert read_descriptor(marked).name == read_descriptor(plain).name == "cpu"
    text = (REPO / "reportgen" / "judge" / "constraints" / "cpu.toml").read_text(encoding="utf-8")
    plain, marked = _twice(tmp_path, "constraints.toml", text)
    assert read_docs_file(marked) == read_docs_file(plain)
    # The plan and annotation readers already dropped it; they stay as they were.
    plan = (REPO / "tests" / "plans" / "scenario_a.toml").read_text(encoding="utf-8")
    plain, marked = _twice(tmp_path, "plan.toml", plan)
    assert read_plan_file(marked) == read_plan_file(plain)
    notes = '[[explain]]\ncases = ["*"]\nexplanation = "x"\n'
    assert parse_annotations(BOM + notes, "a.toml").entries == parse_annotations(notes, "a.toml").entries


def test_site_builds_with_a_site_configuration_that_starts_with_a_byte_order_mark(tmp_path: Path) -> None:
    config = tmp_path / "site.toml"
    config.write_text(BOM + SITE_CONFIG, encoding="utf-8")
    result = invoke(["site", FIXTURES / "synthetic_complete.jsonl", "--out", tmp_path / "site", "--config", config])
    assert result.code == 0, result.output
    assert "Invalid statement" not in result.output


@pytest.mark.parametrize("folder", ["s3://", "s3:///", "s3://bucket//day"])
def test_manifest_names_the_location_as_given(folder: str) -> None:
    pytest.importorskip("s3fs")
    result = invoke(["manifest", folder])
    assert result.code == 2, result.output
    assert result.line_with("reportgen manifest:").startswith(f"reportgen manifest: {folder}: "), result.output


TINY_PLAN = REPO / "collector" / "workloads" / "tiny_encoder.toml"


def test_collector_list_with_an_only_that_matches_nothing_is_the_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from collector.__main__ import main
    from collector.plan import load_plan

    assert main(["--workload", str(TINY_PLAN), "--only", "zzz", "--list"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--only 'zzz' matches none of the" in captured.err, captured
    # Under --max-cells, the --list it suggests lists the cells --only chose among (it left the cap out).
    assert main(["--workload", str(TINY_PLAN), "--max-cells", "3", "--only", "*-noncontiguous-*", "--list"]) == 2
    hint = capsys.readouterr().err
    assert (
        "matches none of the 3 planned cells" in hint
        and f"--workload {TINY_PLAN} --list --max-cells 3 shows them" in hint
    )
    # A selection that matches lists the cells it chooses, not every planned one.
    assert main(["--workload", str(TINY_PLAN), "--only", "b1-*", "--modes", "eager", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    planned = [c.case for c in load_plan(TINY_PLAN).cells]
    assert listed and len(listed) < len(planned)
    assert listed == [c for c in planned if c.startswith("b1-") and c.endswith("-eager")]


@pytest.mark.parametrize("warm", [2**63 - 1, 10_001])
def test_warm_repetitions_past_the_bound_are_refused_on_the_command_line_and_in_a_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], warm: int
) -> None:
    from collector.__main__ import main
    from collector.plan import PlanError, load_plan

    assert main(["--workload", str(TINY_PLAN), "--warm", str(warm), "--list"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and f"--warm takes a count from 1 to 10000, got {warm}" in captured.err, captured
    text = TINY_PLAN.read_text(encoding="utf-8")
    assert "warm_repetitions = 30\n" in text
    plan = tmp_path / "plan.toml"
    plan.write_text(
        text.replace("warm_repetitions = 30\n", f"warm_repetitions = {warm}\n").replace(
            'module = "', f'module = "{TINY_PLAN.parent}/'
        ),
        encoding="utf-8",
    )
    with pytest.raises(PlanError, match=f"timing.warm_repetitions: expected at most 10000, got {warm}"):
        load_plan(plan)
    # The bound itself is a run the plan may ask for.
    plan.write_text(plan.read_text(encoding="utf-8").replace(f"= {warm}\n", "= 10000\n"), encoding="utf-8")
    assert load_plan(plan).warm_repetitions == 10_000
    assert main(["--workload", str(TINY_PLAN), "--warm", "10000", "--list"]) == 0


def test_collector_list_into_a_reader_that_goes_away_stops_quietly(tmp_path: Path) -> None:
    """`collector --list | head -1` ended in a BrokenPipeError traceback once the listing
    outgrew the pipe; it stops quietly with 141, as a shell reports SIGPIPE."""
    import subprocess
    import sys

    from tests.test_huge_plans import _plan

    plan = _plan(tmp_path / "plan", [(b, 4) for b in range(1, 3001)])  # 6,000 cells, ~200 kB listed
    child = subprocess.Popen(
        [sys.executable, "-m", "collector", "--workload", str(plan), "--list"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.readline().strip()
    child.stdout.close()
    err = child.stderr.read().decode("utf-8", "replace")
    assert child.wait(timeout=120) == 141, err
    assert "Traceback" not in err, err


def test_refusals_keep_a_newline_in_the_path_on_one_line(tmp_path: Path) -> None:
    """The refusals that name the user's own path: validate's empty folder, report's invalid
    log, annotate's folder without a log, plan-check's plan under review and unreadable plan."""
    empty = tmp_path / f"empty\n{FORGED}"
    empty.mkdir()
    result = invoke(["validate", empty])
    assert result.code == 2 and "no run log in this folder" in result.output, result.output
    _no_forged_line(result.output)

    bad = tmp_path / f"bad\n{FORGED}"
    bad.mkdir()
    (bad / "events.jsonl").write_text('{"kind": "run_start"}\n', encoding="utf-8")
    result = invoke(["report", bad / "events.jsonl", "--out", tmp_path / "out"])
    assert result.code != 0 and "no report written" in result.output, result.output
    _no_forged_line(result.output)

    result = invoke(["annotate", empty])
    assert result.code == 2 and "no events.jsonl in this folder" in result.output, result.output
    _no_forged_line(result.output)

    plan = tmp_path / f"plan\n{FORGED}" / "plan.toml"
    plan.parent.mkdir()
    shutil.copy(REPO / "tests" / "plans" / "scenario_a.toml", plan)
    result = invoke(["plan-check", plan, "--target", "neuron", "--write-revised", plan])
    assert result.code == 2 and "is the plan under review" in result.output, result.output
    _no_forged_line(result.output)

    plan.write_text("not = [toml\n", encoding="utf-8")
    result = invoke(["plan-check", plan, "--target", "neuron"])
    assert result.code == 1 and "unreadable plan" in result.output, result.output
    _no_forged_line(result.output)


def test_manifest_without_s3fs_is_one_line_saying_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """s3fs is an optional extra: manifest made its store outside the error handling, so a
    machine without it got a traceback."""
    import sys

    monkeypatch.setitem(sys.modules, "s3fs", None)  # import s3fs now raises ImportError
    result = invoke(["manifest", "s3://bucket/day"])
    assert result.code == 2, result.output
    assert "needs s3fs" in result.line_with("reportgen manifest:"), result.output


def test_a_decode_series_too_long_for_one_log_line_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A generation cell's decode series holds warm_repetitions x decode_steps samples on one log
    line: 10,000 x 16 was accepted by the plan and the command line, and failed only during the
    run, when the log writer refused the line."""
    from collector.__main__ import main
    from collector.plan import PlanError, load_plan

    scenario = REPO / "collector" / "workloads" / "scenario_a.toml"
    text = scenario.read_text(encoding="utf-8")
    assert "decode_steps = 16\n" in text and "warm_repetitions = 10\n" in text
    assert main(["--workload", str(scenario), "--warm", "10000", "--list"]) == 2
    err = capsys.readouterr().err
    # Each of the 1 + remeasure_rounds (2 by default) series of a cell is kept on its one line.
    assert "--warm 10000: warm_repetitions 10000 x decode_steps 16 x (1 + remeasure_rounds 2) = 480,000" in err, err
    assert main(["--workload", str(scenario), "--warm", "2084", "--list"]) == 2  # 100,032
    capsys.readouterr()
    assert main(["--workload", str(scenario), "--warm", "2083", "--list"]) == 0  # 99,984: within the bound
    capsys.readouterr()
    plan = tmp_path / "plan.toml"
    plan.write_text(
        text.replace("warm_repetitions = 10\n", "warm_repetitions = 7000\n").replace(
            'module = "', f'module = "{scenario.parent}/'
        ),
        encoding="utf-8",
    )
    with pytest.raises(PlanError, match="generation.decode_steps: warm_repetitions 7000 x decode_steps 16"):
        load_plan(plan)


def test_a_read_that_would_wait_is_refused_not_a_traceback() -> None:
    """A kernel file can look regular and have nothing to read yet (/proc/kmsg): opened without
    blocking, its read gave None, and every reader of a 'regular' file raised TypeError (a
    review). The reader says it would wait, as NotReadable, which every command reports in a line."""
    import io
    import os

    from reportgen.storage.local import WOULD_WAIT, NotReadable, _RegularReader

    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    try:
        with pytest.raises(NotReadable, match="would wait"):
            _RegularReader(io.FileIO(read_end, "rb", closefd=False)).read(10)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert "would wait" in WOULD_WAIT


KMSG = Path("/proc/kmsg")


@pytest.mark.skipif(not os.access(KMSG, os.R_OK), reason="/proc/kmsg is readable by root only")
def test_proc_kmsg_named_anywhere_is_one_line_and_plan_check_does_not_hang(tmp_path: Path) -> None:
    """A review, as root: plan-check of a plan whose module is /proc/kmsg waited for ever (the
    module's source was read with a blocking read); validate, a site with a log linked to it,
    --annotations, --config and --inspection raised a TypeError."""
    plan = tmp_path / "plan.toml"
    source = (REPO / "collector" / "workloads" / "tiny_encoder.toml").read_text(encoding="utf-8")
    plan.write_text(
        "\n".join('module = "/proc/kmsg"' if line.startswith("module =") else line for line in source.splitlines()),
        encoding="utf-8",
    )
    checked = invoke(["plan-check", plan], seconds=30)
    assert checked.code == 3 and "/proc/kmsg cannot be read (its reads would wait" in checked.output
    assert invoke(["validate", KMSG]).code == 1
    # A second review: the plan itself, and the collector given either (it read both blocking).
    as_plan = invoke(["plan-check", KMSG], seconds=30)
    assert as_plan.code == 1 and "its reads would wait" in as_plan.output, as_plan.output
    import subprocess
    import sys

    for workload in (KMSG, plan):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "collector",
                "--workload",
                str(workload),
                "--target",
                "cpu",
                "--out",
                str(tmp_path / "c"),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2 and "its reads would wait" in done.stderr, (workload, done.stderr[-2000:])
    runs = tmp_path / "runs"
    (runs / "r1").mkdir(parents=True)
    (runs / "r1" / "events.jsonl").symlink_to(KMSG)
    shutil.copytree(REPO / "sample_runs" / "heat-solver-cpu-20261206T150437Z-d2f898", runs / "heat")
    built = invoke(["site", "--follow-symlinks", runs, "--out", tmp_path / "site"])
    # The other run is built; the skipped entry is named and makes the exit code 1, as any skip does.
    assert built.code == 1 and "1 run," in built.output and "skipped: its reads would wait" in built.output
    for args in (
        ["report", runs / "heat", "--out", tmp_path / "r", "--annotations", KMSG],
        ["site", runs / "heat", "--out", tmp_path / "s", "--config", KMSG],
        ["plan-check", REPO / "collector" / "workloads" / "tiny_encoder.toml", "--inspection", KMSG],
    ):
        outcome = invoke(args)
        assert outcome.code != 0 and "would wait" in outcome.output, (args, outcome.output)


@pytest.mark.parametrize("command", ["site", "report", "compare"])
def test_an_out_that_is_a_url_is_refused_not_written_as_a_local_folder(tmp_path: Path, command: str) -> None:
    """A review: `--out s3://bucket/site` wrote a local folder named 's3:' and exited 0: a CI job
    read it as published. It is a usage error that names `reportgen publish`."""
    run = REPO / "sample_runs" / "heat-solver-cpu-20261206T150437Z-d2f898"
    for url in ("s3://bucket/site", "s3:/bucket/site", "S3://b/x", "https://example.com/x"):
        args = [command, run, *([run] if command == "compare" else []), "--out", url]
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(tmp_path)
            outcome = invoke(args)
        assert outcome.code == 2 and "is a URL" in outcome.output and "reportgen publish" in outcome.output, url
        assert list(tmp_path.iterdir()) == []


def test_an_out_that_is_a_device_says_it_is_no_folder(tmp_path: Path) -> None:
    """A review: `site --out /dev/null` said "cannot write /dev/null: File exists"."""
    run = REPO / "sample_runs" / "heat-solver-cpu-20261206T150437Z-d2f898"
    outcome = invoke(["site", run, "--out", "/dev/null"])
    assert outcome.code == 2 and "cannot write /dev/null: it exists and is not a folder" in outcome.output, (
        outcome.output
    )


def test_a_cpu_time_fact_with_no_value_key_is_read_as_unknown_not_a_traceback(tmp_path: Path) -> None:
    """A second review: a 1.7 warm loop's cpu_wait_s written {"unknown_reason": ...} with no
    "value" key raised TypeError ('UnsetType' object is not subscriptable) in validate and report."""
    import json

    from tests.logbuilder import edited_sample

    events = edited_sample(
        "tiny-encoder-cpu-20261206T150111Z-1dd183",
        "synthetic-no-value-key",
        "A sample log with one host fact's value key removed.",
    )
    timing = next(e for e in events if e["kind"] == "timing" and e.get("warm"))
    timing["host"]["cpu_wait_s"] = {"unknown_reason": "not read"}
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    assert invoke(["validate", log]).code == 0
    assert invoke(["report", log, "--out", tmp_path / "out"]).code == 0
