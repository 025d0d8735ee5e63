"""Command-line paper cuts: run folders accepted, empty inputs refused, help that teaches."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from tests.conftest import FIXTURES, REPO

PLANS = REPO / "tests" / "plans"


def test_report_accepts_a_run_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIXTURES / "synthetic_complete.jsonl", run / "events.jsonl")
    result = CliRunner().invoke(main, ["report", str(run), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "out" / "report.md").is_file()


def test_report_on_a_folder_without_one_log_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "expected one run log, found 0" in result.output
    assert not (tmp_path / "out").exists()


def test_report_on_a_folder_of_several_runs_names_them_and_asks_for_one(tmp_path: Path) -> None:
    """A review: after two collector runs, `report runs --out r` said 'expected one run log, found
    2' without naming them or what to give."""
    for name in ("run-a", "run-b"):
        (tmp_path / "runs" / name).mkdir(parents=True)
        shutil.copy(FIXTURES / "synthetic_complete.jsonl", tmp_path / "runs" / name / "events.jsonl")
    result = CliRunner().invoke(main, ["report", str(tmp_path / "runs"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    runs = tmp_path / "runs"
    assert (
        f"expected one run log, found 2: {runs / 'run-a' / 'events.jsonl'}, {runs / 'run-b' / 'events.jsonl'}; "
        "name one run folder" in " ".join(result.output.split())
    ), result.output


def test_site_on_folders_without_a_log_says_so_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "notes.txt").write_text("no log here", encoding="utf-8")
    result = CliRunner().invoke(main, ["site", str(tmp_path / "runs"), "--out", str(tmp_path / "site")])
    assert result.exit_code == 2, "a usage error, as `reportgen validate` of such a folder (it exited 1)"
    assert "no run log" in result.output and "nothing written" in result.output
    assert not (tmp_path / "site").exists()


def test_diff_help_has_exit_codes_and_an_example() -> None:
    result = CliRunner().invoke(main, ["diff", "--help"])
    assert result.exit_code == 0
    assert "Exit codes:" in result.output and "Example" in result.output


SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"


def _two_targets(tmp_path: Path) -> tuple[Path, Path]:
    from tests.logbuilder import base_events, dumps, finish, with_envelope

    paths = []
    for target in ("cpu", "cuda"):
        events = base_events(target, target)
        events[0]["run_id"] = f"two-{target}"
        path = tmp_path / target / "events.jsonl"
        path.parent.mkdir()
        path.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def test_diff_refuses_two_workloads_with_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["diff", str(FIXTURES / "synthetic_complete.jsonl"), str(FIXTURES / "synthetic_float64.jsonl")]
    )
    assert result.exit_code == 2
    assert "diff compares two runs of one workload" in result.output


def test_diff_says_when_targets_differ_and_flags_every_ratio(tmp_path: Path) -> None:
    import json

    a, b = _two_targets(tmp_path)
    text = CliRunner().invoke(main, ["diff", str(a), str(b)])
    assert text.exit_code == 0 and "targets differ: cpu -> cuda" in text.output
    data = json.loads(CliRunner().invoke(main, ["diff", str(a), str(b), "--format", "json"]).output)
    assert data["targets"] == ["cpu", "cuda"]
    assert data["timings"] and all(any("different targets" in f for f in t["flags"]) for t in data["timings"])


def test_diff_markdown_is_a_pr_comment_with_code_spans(tmp_path: Path) -> None:
    a, b = _two_targets(tmp_path)
    result = CliRunner().invoke(main, ["diff", str(a), str(b), "--format", "md"])
    assert result.exit_code == 0
    md = result.output
    assert md.startswith("### ") and "`two-cpu`" in md and "Targets differ" in md
    assert "\\-" not in md and "\\_" not in md, "identifiers are code spans, not backslash-escaped"
    assert len(md) < 60_000


EMPTY_PATHS = [
    (["report", "LOG", "--out", ""], "--out"),
    (["report", "LOG", "--out", "OUT", "--annotations", ""], "--annotations"),
    (["report", "LOG", "--out", "OUT", "--inspection", ""], "--inspection"),
    (["site", "LOG", "--out", ""], "--out"),
    (["site", "LOG", "--out", "OUT", "--config", ""], "--config"),
    (["compare", "LOG", "LOG", "--out", ""], "--out"),
    (["annotate", "FAILED", "--out", ""], "--out"),
    (["plan-check", "PLAN", "--target", "neuron", "--write-revised", ""], "--write-revised"),
    (["plan-check", "PLAN", "--inspection", ""], "--inspection"),
]


@pytest.mark.parametrize(("argv", "option"), EMPTY_PATHS, ids=[" ".join(a[:1] + a[-2:-1]) for a, _ in EMPTY_PATHS])
def test_an_empty_path_is_a_usage_error_and_nothing_is_written_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], option: str
) -> None:
    """Path("") is the current folder: --out "" wrote a report, a site or a comparison into
    wherever the command ran."""
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    shutil.copy(FIXTURES / "synthetic_complete.jsonl", log)
    failed = tmp_path / "failed" / "events.jsonl"
    failed.parent.mkdir()
    shutil.copy(FIXTURES / "synthetic_mismatch.jsonl", failed)
    words = {
        "LOG": str(log),
        "FAILED": str(failed),
        "OUT": str(tmp_path / "out"),
        "PLAN": str(PLANS / "scenario_a.toml"),
    }
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    result = CliRunner().invoke(main, [words.get(word, word) for word in argv])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output and "Traceback" not in result.output
    assert not any(here.iterdir()) and not (tmp_path / "out").exists()
    assert sorted(p.name for p in failed.parent.iterdir()) == ["events.jsonl"]


def test_the_report_help_s_first_example_runs_on_this_checkout(tmp_path: Path) -> None:
    """Before: `report --help` began with `reportgen report runs/tiny-encoder-cpu-*/events.jsonl`,
    a glob that matches four shipped runs and stops with 'Got unexpected extra arguments'; and
    the top-level help's usual order left out `diff`."""
    text = CliRunner().invoke(main, ["report", "--help"]).output
    example = text.split("Examples:")[1].strip().splitlines()[0].split()
    assert example[:2] == ["reportgen", "report"] and "*" not in " ".join(example), example
    out = {"report/": str(tmp_path / "out")}
    args = [out.get(a, str(REPO / a) if a.startswith("sample_runs/") else a) for a in example[2:]]
    result = CliRunner().invoke(main, ["report", *args])
    assert result.exit_code == 0 and (tmp_path / "out" / "report.html").is_file(), result.output
    assert "reportgen diff runs/<old>/ runs/<new>/" in CliRunner().invoke(main, ["--help"]).output


@pytest.mark.parametrize("command", ["report", "compare"])
def test_an_output_that_cannot_be_written_stops_before_anything_is_written(tmp_path: Path, command: str) -> None:
    """Before: with compare.md a folder in --out, compare wrote compare.html and assets/ and then
    stopped with 'cannot write /out/compare.md is a folder' (report likewise). Every page is made
    and every place checked first: one line, and nothing beside the folder that was there."""
    sample = REPO / "sample_runs" / "tiny-encoder-cpu-20261202T053312Z-ecd07d"
    out = tmp_path / "out"
    (out / f"{command}.md").mkdir(parents=True)
    other = REPO / "sample_runs" / "tiny-encoder-cuda-20261129T225259Z-866a85"
    args = [command, str(sample), *([str(other)] if command == "compare" else []), "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert (
        result.output
        == f"reportgen {command}: cannot write: {out / (command + '.md')} is a folder; refusing to replace it\n"
    )
    assert [p.name for p in out.iterdir()] == [f"{command}.md"]


def test_a_file_where_the_assets_folder_goes_is_named_a_file(tmp_path: Path) -> None:
    """Before: 'cannot write: OUT/assets is not a regular file where a folder is needed' (of a
    regular file); and nothing is written beside it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "assets").write_text("x", encoding="utf-8")
    sample = REPO / "sample_runs" / "tiny-encoder-cpu-20261202T053312Z-ecd07d"
    result = CliRunner().invoke(main, ["report", str(sample), "--out", str(out)])
    assert result.exit_code == 2
    assert result.output == f"reportgen report: cannot write: {out / 'assets'} is a file where a folder is needed\n"
    assert [p.name for p in out.iterdir()] == ["assets"]


def test_compare_reads_logs_up_to_the_limit_every_command_takes(tmp_path: Path) -> None:
    """compare had no --max-log-size: its limit could be neither raised nor lowered."""
    samples = Path(__file__).resolve().parent.parent / "sample_runs"
    pair = [
        str(samples / "heat-solver-cpu-20261205T122551Z-af7feb"),
        str(samples / "heat-solver-cpu-20261205T074106Z-bcfcd4"),
    ]
    small = CliRunner().invoke(main, ["compare", *pair, "--out", str(tmp_path / "small"), "--max-log-size", "1K"])
    assert small.exit_code == 2, small.output
    assert "larger than the limit of 1 KiB (--max-log-size)" in small.output and not (tmp_path / "small").exists()
    large = CliRunner().invoke(main, ["compare", *pair, "--out", str(tmp_path / "large"), "--max-log-size", "64M"])
    assert large.exit_code == 0, large.output
    assert (tmp_path / "large" / "compare.html").is_file()


def test_report_of_a_log_over_the_limit_exits_as_its_help_says(tmp_path: Path) -> None:
    """A log over --max-log-size exited 2 while report's help listed "unreadable" under 1 only."""
    run = REPO / "sample_runs" / "heat-solver-cpu-20261205T122551Z-af7feb"
    done = CliRunner().invoke(main, ["report", str(run), "--out", str(tmp_path / "r"), "--max-log-size", "1K"])
    assert done.exit_code == 2 and "larger than the limit of 1 KiB (--max-log-size)" in done.output
    help_text = " ".join(CliRunner().invoke(main, ["report", "--help"]).output.split())
    assert (
        "2 usage error (such as a location that does not hold exactly one run log, or a log larger than --max-log-size)"
        in help_text
    )


def test_report_refuses_an_inspection_of_another_workload_as_plan_check_does(tmp_path: Path) -> None:
    """It wrote the report (exit 0) with a row saying the prediction compares nothing."""
    run = REPO / "sample_runs" / "heat-solver-cpu-20261205T122551Z-af7feb"
    inspection = REPO / "sample_inspections" / "minilm.inspection.jsonl"
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", str(run), "--inspection", str(inspection), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert "inspects the workload 'all-MiniLM-L6-v2', not this run's 'heat-solver'" in result.output
    assert not (out / "report.html").exists()


@pytest.mark.parametrize("command", ["diff", "plan-check"])
def test_json_beside_another_format_is_a_usage_error(command: str) -> None:
    """`diff A B --json --format md` printed JSON and said nothing of the --format it ignored."""
    samples = REPO / "sample_runs"
    args = (
        [
            str(samples / "heat-solver-cpu-20261205T122551Z-af7feb"),
            str(samples / "heat-solver-cpu-20261205T074106Z-bcfcd4"),
        ]
        if command == "diff"
        else [str(REPO / "tests" / "plans" / "scenario_a.toml")]
    )
    refused = CliRunner().invoke(main, [command, *args, "--json", "--format", "md"])
    assert refused.exit_code == 2 and "--json and --format md ask for two outputs: give one" in refused.output
    agreed = CliRunner().invoke(main, [command, *args, "--json", "--format", "json"])
    assert agreed.exit_code in (0, 3) and agreed.output.lstrip().startswith("{"), agreed.output


def test_publish_refuses_a_bucket_name_the_store_cannot_have_before_any_connection(tmp_path: Path) -> None:
    """`publish site s3://Bad_Bucket/x` answered with the store's credentials or endpoint error,
    which does not name the bucket; campaign submit refused the same name with its reason."""
    (tmp_path / "site").mkdir()
    done = CliRunner().invoke(main, ["publish", str(tmp_path / "site"), "s3://Bad_Bucket/x"])
    assert done.exit_code == 2, done.output
    assert "'Bad_Bucket' is no valid bucket name" in done.output
    assert "Credentials" not in done.output and "Endpoint" not in done.output


def test_an_unknown_format_is_named(tmp_path: Path) -> None:
    """A review: `--format html,pdf` said only which formats there are, not which one was wrong."""
    result = CliRunner().invoke(
        main, ["report", str(FIXTURES / "synthetic_complete.jsonl"), "--out", str(tmp_path), "--format", "html,pdf"]
    )
    assert result.exit_code == 2
    assert "'pdf' is not a format: use a comma-separated list of html, md, md-summary" in result.output, result.output
