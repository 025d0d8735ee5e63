"""A careless workload or plan on the device host, and pages a hurried reader takes alone.

From an outside review: a workload that changed the working directory moved the run's weights,
inputs and reference out of its folder; a workload's prints landed on the collector's standard
output, which holds the run folder alone; an unbounded warm-up hung every cell; a plan none of
whose cells can be judged ran and exited 0; and on the pages, a cell failing only its task
criterion read "differs beyond tolerance", a synthetic fixture spoke for its workload's plan and
stood untagged in the index, and a history's line said "faster" before "synthetic weights"."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from collector.__main__ import main as collector_main
from collector.plan import PlanError, load_plan
from reportgen.contract.validation import read_log
from reportgen.judge.disposition import SYNTHETIC_LEAD
from tests.conftest import FIXTURES, REPO
from tests.hostile import invoke
from tests.logbuilder import base_events, dumps, with_envelope, write_synthetic_neuron

FAULTY = REPO / "tests" / "workloads" / "faulty.toml"
SAMPLES = REPO / "sample_runs"


def test_a_workload_that_changes_directory_and_prints_moves_no_file_and_no_line_of_stdout(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "FAULTY": "chdir@0", "FAULTY_CHDIR": str(elsewhere), "FAULTY_PRINT": "1"}
    command = [sys.executable, "-m", "collector", "--workload", str(FAULTY), "--target", "cpu"]
    proc = subprocess.run(
        [*command, "--out", "runs", "--modes", "eager", "--cold", "off", "--warm", "2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Standard output: the run folder alone; the workload's prints went to standard error.
    assert proc.stdout.count("\n") == 1, proc.stdout[:2000]
    run = Path(proc.stdout.strip())
    assert run.parent == tmp_path / "runs" and run.is_dir()
    assert "faulty: build_model" in proc.stderr and "faulty: run_model" in proc.stderr
    assert (run / "artifacts" / "weights.pt").is_file()
    assert list(elsewhere.iterdir()) == [], "nothing of the run left the --out folder"


def _faulty_plan(folder: Path, old: str, new: str) -> Path:
    """The faulty workload's plan in ``folder`` (its module where it is), ``old`` made ``new``."""
    plan = folder / "faulty.toml"
    text = FAULTY.read_text(encoding="utf-8").replace(
        'module = "faulty.py"', f'module = "{FAULTY.parent / "faulty.py"}"'
    )
    assert old in text
    plan.write_text(text.replace(old, new), encoding="utf-8")
    return plan


def test_a_warm_up_past_the_largest_warm_count_is_a_plan_error(tmp_path: Path) -> None:
    plan = _faulty_plan(tmp_path, "warmup = 1", "warmup = 1000000000")
    with pytest.raises(PlanError, match=r"timing\.warmup.*at most 10000"):
        load_plan(plan)


def test_a_plan_none_of_whose_chosen_cells_has_criteria_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: every cell was skipped ('the plan declares no tolerance for bfloat16') and the
    run exited 0; plan-check said the plan needs revising."""
    plan = _faulty_plan(tmp_path, 'dtypes = ["float32"]', 'dtypes = ["bfloat16"]')
    for extra in (["--list"], ["--out", str(tmp_path / "runs")]):
        assert collector_main(["--workload", str(plan), "--target", "cpu", *extra]) == 2
        assert "no chosen cell has criteria to be judged by" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
    assert collector_main(["--workload", str(FAULTY), "--target", "cpu", "--list"]) == 0, "the control"


def test_a_cell_failing_only_its_task_criterion_is_not_said_to_differ_beyond_tolerance(tmp_path: Path) -> None:
    """The scenario-a sample's bfloat16 eager cell: no element outside the tolerance, 3 greedy
    steps agreeing against 8 asked. Before, its first screen read '1 cell(s) differ from the
    reference beyond tolerance'."""
    run = SAMPLES / "scenario-a-text-service-cpu-20261205T124743Z-42589b"
    assert invoke(["report", run, "--out", tmp_path, "--format", "md-summary"]).code == 0
    text = (tmp_path / "report-summary.md").read_text(encoding="utf-8")
    assert "1 cell(s) fail their task criterion with no element beyond tolerance (eager/bfloat16: 1)" in text
    assert "beyond tolerance (eager" not in text.replace("with no element beyond tolerance (eager", "")


def _aborted_before_its_plan(tmp_path: Path, reason: str) -> str:
    """The report (Markdown) of a synthetic run that ended, aborted for ``reason``, before its plan."""
    events = [e for e in base_events() if e["kind"] in ("run_start", "environment")]
    events.append(
        {
            "kind": "run_end",
            "finished_at": "2026-01-01T00:10:00Z",
            "status": "aborted",
            "reason": reason,
            "cells_planned": 4,
            "cells_recorded": 0,
        }
    )
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(with_envelope(events)), encoding="utf-8")
    invoke(["report", log, "--out", tmp_path / "out", "--format", "md"])
    return (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_a_log_with_no_planned_cell_says_nothing_was_measured(tmp_path: Path) -> None:
    text = _aborted_before_its_plan(tmp_path, "workload error: the module did not load (synthetic)")
    assert "No planned cell in the log: nothing was measured." in text and "All 0 planned" not in text
    assert "| none | no planned cell in the log |" in text and "every planned cell passed" not in text
    # It stopped before its plan event: its tolerances were never written, not left out of a plan.
    # A later review: the step read "collect the missing cells again with the same plan", which a
    # module lacking a function stops the same way again. Now: fix what the error names, or
    # collect again where it may not repeat (build_model() timing out).
    assert "Next: fix what the workload error under Disposition names" in text, text
    # The command leaves out options that chose cells or outputs (--modes, --max-cells, --out)
    # and adds --only for untested cells: "as it is", then "the plan again", promised what it
    # is not (two reviews).
    assert "an error that may not repeat (a timeout, a file that could not be read), collect again (" in text
    assert "as it is" not in text and "the plan again" not in text
    assert "same plan" not in text
    assert "Next: declare tolerances" not in text and "change the plan" not in text


@pytest.mark.parametrize(
    "reason,step",
    [
        ("received SIGINT", "Next: collect the missing cells again with the same plan"),
        ("workload code called sys.exit(3)", "Next: fix what the workload error under Disposition names"),
        ("plan error: the model (synthetic)", "Next: change the plan as the reason under Disposition says"),
    ],
)
def test_an_aborted_run_s_next_step_follows_why_it_stopped(tmp_path: Path, reason: str, step: str) -> None:
    """An interrupted run is collected again as it is; one its workload or its plan stopped is
    fixed first (as it is, the collector stops it the same way)."""
    text = _aborted_before_its_plan(tmp_path, reason)
    assert step in text, text
    assert f"Incomplete run: the run was aborted: {reason}." in text, text


def test_a_synthetic_fixture_neither_speaks_for_its_workload_nor_stands_untagged_in_the_index(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    measured = SAMPLES / "tiny-encoder-cpu-20261205T124447Z-43ef64"
    shutil.copytree(measured, runs / measured.name)
    write_synthetic_neuron(runs / "synthetic")
    assert invoke(["site", runs, "--out", tmp_path / "site"]).code == 0
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert f"Reviewed from the plan logged by {measured.name}" in index or measured.name in index
    assert "logged by synthetic-neuron" not in index
    grid = index.split('id="versions"', 1)[1].split("</section>", 1)[0]
    assert "synthetic</span>" in grid, grid
    with open(tmp_path / "site" / "index.csv", encoding="utf-8", newline="") as handle:
        rows = {row["run_id"]: row for row in csv.DictReader(handle)}
    assert rows["synthetic-neuron"]["headline"].startswith(SYNTHETIC_LEAD)
    assert not rows[measured.name]["headline"].startswith(SYNTHETIC_LEAD)


def test_a_history_line_names_synthetic_weights_and_an_incomplete_run_before_faster_or_slower(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("tiny-encoder-cpu-20261205T073819Z-87bab8", "tiny-encoder-cpu-20261205T124447Z-43ef64"):
        shutil.copytree(SAMPLES / name, runs / name)
    later = runs / "tiny-encoder-cpu-20261205T124447Z-43ef64" / "events.jsonl"
    lines = later.read_text(encoding="utf-8").splitlines(keepends=True)
    later.write_text("".join(lines[: len(lines) * 2 // 3]), encoding="utf-8")  # cut: no run_end
    result = invoke(["site", runs, "--out", tmp_path / "site"])
    assert result.code == 0, result.output
    (page,) = (tmp_path / "site" / "workloads").glob("*/index.html")
    line = page.read_text(encoding="utf-8").split("Latest run against the previous one", 1)[1].split("</p>", 1)[0]
    first = line.index("incomplete run on the after side")
    assert first < line.index("synthetic weights on the before and after sides") < line.index(" faster")


def _faulty_run(
    tmp_path: Path, env: dict[str, str], warm: str = "2", timeout: int = 180
) -> subprocess.CompletedProcess[str]:
    """The collector on the faulty workload's eager cells (no cold call), ``env`` added to this
    process's: it must exit 0."""
    command = [sys.executable, "-m", "collector", "--workload", str(FAULTY), "--target", "cpu"]
    proc = subprocess.run(
        [*command, "--out", str(tmp_path / "runs"), "--modes", "eager", "--cold", "off", "--warm", warm],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@contextlib.contextmanager
def _left_processes(tmp_path: Path, fault: str) -> Iterator[tuple[subprocess.CompletedProcess[str], list[int]]]:
    """The collector run with ``fault`` (a workload that starts processes and writes their pids
    to a file), and those pids; whatever is still running is killed after the test."""
    pidfile = tmp_path / "pids"
    try:
        proc = _faulty_run(tmp_path, {"FAULTY": fault, "FAULTY_PIDFILE": str(pidfile)})
        pids = [int(p) for p in pidfile.read_text(encoding="utf-8").split()]
        yield proc, pids
        assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == [], "left running"
    finally:
        for pid in (int(p) for p in (pidfile.read_text(encoding="utf-8").split() if pidfile.exists() else ())):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_processes_a_workload_starts_in_the_collector_s_process_are_ended_with_the_run(tmp_path: Path) -> None:
    """Before: a plain child and a child in a session of its own, started by build_model in the
    collector's own process, outlived the run (re-parented to init); holding the collector's
    standard output, they kept `RUN=$(python -m collector ...)` waiting until they ended."""
    with _left_processes(tmp_path, "spawn@0") as (proc, pids):
        assert len(pids) >= 2
        assert f"process(es) the workload started and left running: {pids[0]} (sleep 600)" in proc.stderr


def test_a_training_cell_whose_parameters_are_outside_is_not_said_to_fail_only_its_task(tmp_path: Path) -> None:
    """A review of the wording above: a training cell counts its loss's elements only, and its
    parameters may be outside their tolerance with its task metric met."""
    case = "b1-l16-contiguous-float32-compiled"
    events = [json.loads(line) for line in (FIXTURES / "synthetic_training.jsonl").read_text().splitlines()]
    for event in events:
        if event.get("case") != case:
            continue
        if event["kind"] == "train_result":
            event["params"][-1].update(max_abs=0.5, max_rel=0.5, mismatched=5, norm_ratio=1.2, worst_ratio=50.0)
        elif event["kind"] == "case_result":
            event["status"] = "mismatch"
    events = [e for e in events if not (e["kind"] == "timing" and e.get("case") == case)]
    for seq, event in enumerate(events):
        event["seq"] = seq
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    assert invoke(["report", log, "--out", tmp_path / "out", "--format", "md"]).code == 0
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "1 cell(s) differ from the reference beyond tolerance (compiled/float32: 1)" in text
    assert "fail their task criterion" not in text


def test_the_collector_runs_with_its_standard_output_closed(tmp_path: Path) -> None:
    """A job started with `>&-` (cron, a daemon wrapper): the redirect of standard output had
    raised before the run, where it had run before."""
    command = [sys.executable, "-m", "collector", "--workload", str(FAULTY), "--target", "cpu"]
    args = [*command, "--out", str(tmp_path / "runs"), "--modes", "eager", "--cold", "off", "--warm", "2"]
    proc = subprocess.run(["sh", "-c", '"$@" >&-', "sh", *args], stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert len(list((tmp_path / "runs").iterdir())) == 1


def test_a_run_whose_progress_reader_went_away_goes_on_and_completes(tmp_path: Path) -> None:
    """`collector ... 2>&1 >/dev/null | head -2`: the first progress line after the reader went
    away had raised BrokenPipeError, and the run ended aborted as a collector error (exit 141)."""
    read, write = os.pipe()
    os.close(read)  # every write to standard error now fails with EPIPE
    try:
        args = ["--workload", str(FAULTY), "--target", "cpu", "--out", str(tmp_path / "runs")]
        proc = subprocess.run(
            [sys.executable, "-m", "collector", *args, "--modes", "eager", "--cold", "off", "--warm", "2"],
            stdout=subprocess.PIPE,
            stderr=write,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert proc.returncode == 0
    (run,) = (tmp_path / "runs").iterdir()
    assert proc.stdout.strip().splitlines()[-1] == str(run)
    reading = read_log(run / "events.jsonl")
    assert reading.complete and not reading.problems and reading.end_status == "complete"
    assert not (run / "collector-error.txt").exists()


def test_processes_a_workload_leaves_in_the_background_are_ended_with_the_run(tmp_path: Path) -> None:
    """A review: `sleep 302 &` in a shell that ended, and the sleep of a shell the collector then
    ended, outlived the run (re-parented to init): only the collector's own children were ended.
    The collector adopts its orphaned descendants for the run and ends every one left."""
    with _left_processes(tmp_path, "background@0") as (proc, pids):
        assert len(pids) == 2
        assert "(sleep 602)" in proc.stderr and "(sleep 603)" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize("fault", ["thread", "pool"])
def test_a_thread_the_workload_leaves_running_does_not_hold_the_collector_open(tmp_path: Path, fault: str) -> None:
    """A review: a workload's thread that is no daemon kept the collector's process waiting after
    its run_end for as long as the thread ran (for ever, for a heartbeat). It is named, and the
    collector ends with the run's exit code, its cache folders removed."""
    proc = _faulty_run(tmp_path, {"FAULTY": f"{fault}@0", "TMPDIR": str(tmp_path)}, timeout=120)
    # A pool's worker busy with a task holds the process as a thread does (a second review: left
    # out as a pool's worker, it hung the collector again).
    name = "'faulty-heartbeat'" if fault == "thread" else "'faulty-pool_0'"
    assert f"1 thread(s) still running after the run ({name}: the workload's" in proc.stderr, proc.stderr[-1500:]
    assert read_log(Path(proc.stdout.strip()) / "events.jsonl").complete
    assert not list(tmp_path.glob("collector-cache-*")), "the exit handlers ran"


def test_a_warm_loop_whose_calls_wrote_into_their_inputs_keeps_no_timing(tmp_path: Path) -> None:
    """A review: a model that wrote into its input on a cell's dtype only (not the reference's)
    passed the reference's check, its warm loop timed inputs that ran to Inf (the timing event's
    inputs_fed said so), and the report gave a clean, stable median. The loop's inputs are
    checked after it: such a timing is not kept, and a warning says why."""
    proc = _faulty_run(tmp_path, {"FAULTY": "write@2"}, warm="5")
    reading = read_log(Path(proc.stdout.strip()) / "events.jsonl")
    assert reading.valid and reading.complete, [p.format() for p in reading.problems]
    timed = {e.case for e in reading.events if e.kind == "timing" and e.warm}
    assert timed == {"b1-l4-contiguous-float32-eager"}, timed
    (warning,) = [e for e in reading.events if e.kind == "warning" and e.category == "InputWritten"]
    assert warning.case == "b2-l4-contiguous-float32-eager"
    assert "warm timing not kept: the cell's calls wrote into its input(s) x" in warning.message


NAN_OUTSIDE = """\
import torch
MODEL_REVISION = "nan outside v1 (synthetic test workload)"
WEIGHTS_ORIGIN = "synthetic"
TASK_METRIC = "min_cosine"


def build_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16)).eval()


def make_inputs(batch, length, layout):
    return {"x": torch.randn(batch, length, 16, generator=torch.Generator().manual_seed(batch * 1000 + length))}


def run_model(model, inputs):
    y = model(inputs["x"])
    if y.dtype != torch.float64:  # the cells', not the reference's: NaN past the judged positions
        y = y.clone()
        y[:, 6:, :] = float("nan")
    return {"y": y}


def task_metric(outputs, reference, inputs):
    o, r = outputs["y"][:, :4].float(), reference["y"][:, :4].float()
    return float(torch.nn.functional.cosine_similarity(o, r, dim=-1).min())
"""

NAN_OUTSIDE_PLAN = """\
[workload]
name = "nan-outside"
module = "nan_outside.py"
target = "cpu"

[matrix]
shapes = [[1, 8]]
dtypes = ["float32"]
layouts = ["contiguous"]
modes = ["eager"]

[tolerances.float32]
atol = 1e-4
rtol = 1e-3
task = { metric = "min_cosine", op = ">=", threshold = 0.99 }

[compare.outputs.y]
region = [":", "0:4"]

[timing]
warm_repetitions = 5
"""


def test_non_finite_outputs_where_a_cell_is_not_judged_are_not_said_to_be_none(tmp_path: Path) -> None:
    """A review: NaN past a plan's judged region read 'cells with non-finite outputs: 1' at the
    head of the matrix, and 'No cell mismatched, produced non-finite values, errored or was
    skipped' in the section of failed cells. That section now says where the cell is judged, and
    counts the cells whose NaN or Inf lies where they are not."""
    (tmp_path / "nan_outside.py").write_text(NAN_OUTSIDE, encoding="utf-8")
    (tmp_path / "nan_outside.toml").write_text(NAN_OUTSIDE_PLAN, encoding="utf-8")
    command = [sys.executable, "-m", "collector", "--workload", str(tmp_path / "nan_outside.toml"), "--target", "cpu"]
    proc = subprocess.run(
        [*command, "--out", str(tmp_path / "runs"), "--cold", "off"], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "report"
    assert invoke(["report", proc.stdout.strip(), "--out", out]).code == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "∞ cells with non-finite outputs: 1" in md
    assert (
        "No cell mismatched, produced non-finite values where it is judged, errored or was skipped. 1 cell(s) hold "
        "NaN or Inf output elements where they are not judged" in md
    )
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "1 cell(s) hold NaN or Inf output elements where they are not judged" in html
