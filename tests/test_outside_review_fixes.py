"""What outside reviews of the commands found, each fixed: an output that would replace its own
input, a forged field printing lines of its own, a target change named after the results, a side
whose weights' origin is unknown read as trained, next steps that could not be run as written,
help without exit codes, and accelerator readings of other backends left out of a flag. Logs are
the shipped sample runs (read, or copied as the input under test) or synthetic fixtures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.judge.timing_stability import host_text
from reportgen.publish.site import build_site
from tests.logbuilder import dumps, timing_log

RUNNER = CliRunner()
SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"
FAILED_RUN = SAMPLES / "all-MiniLM-L6-v2-cpu-20261129T225806Z-4b4a2f"
CPU = SAMPLES / "tiny-encoder-cpu-20261205T124447Z-43ef64"
CUDA = SAMPLES / "tiny-encoder-cuda-20261129T225259Z-866a85"
AWAITING = SAMPLES / "scenario-a-text-service-cpu-20261205T124743Z-42589b"


def test_annotate_and_report_refuse_to_write_over_the_log_they_read(tmp_path: Path) -> None:
    """Before: `annotate LOG --out LOG --force` replaced the run's log with the skeleton, and a
    log named report.md reported into its own folder was replaced by the report (exit 0 both)."""
    run = tmp_path / "r"
    shutil.copytree(FAILED_RUN, run)
    (run / "annotations.toml").unlink()
    log = run / "events.jsonl"
    before = log.read_bytes()
    result = RUNNER.invoke(main, ["annotate", str(log), "--out", str(log), "--force"])
    assert result.exit_code == 2 and "is the run log being annotated" in result.stderr, result.output
    assert log.read_bytes() == before
    named = run / "report.md"
    shutil.copy(log, named)
    result = RUNNER.invoke(main, ["report", str(named), "--out", str(run)])
    assert result.exit_code == 2 and "is the input" in result.stderr, result.output
    assert named.read_bytes() == before and not (run / "report.html").exists(), "nothing written"


def test_a_forged_target_with_a_line_break_prints_one_headline_line(tmp_path: Path) -> None:
    events = [json.loads(line) for line in (CUDA / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    for event in events:  # run_start and the plan name one target (validate holds them to it)
        if event["kind"] in ("plan", "run_start"):
            event["target"] = "cuda\n# FORGED line"
        if event["kind"] == "run_start" and event.get("target_choice"):
            event["target_choice"]["resolved"] = "cuda\n# FORGED line"
    forged = tmp_path / "c" / "events.jsonl"
    forged.parent.mkdir()
    forged.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    result = RUNNER.invoke(main, ["compare", str(CPU), str(forged), "--out", str(tmp_path / "out")])
    assert result.exit_code in (0, 1), result.output
    assert not any(line.startswith("# FORGED") for line in result.stdout.splitlines()), result.stdout
    assert "<U+000A># FORGED line" in result.stdout


def test_diff_names_a_change_of_target_before_any_result_and_an_unrecorded_weights_origin(tmp_path: Path) -> None:
    """Before: 'targets differ' came after the disposition line, and the first line said only
    'synthetic weights on the after side', as if the before side's were trained."""
    lines = RUNNER.invoke(main, ["diff", str(CUDA), str(CPU)]).output.splitlines()
    assert lines[1].startswith("targets differ: cuda -> cpu")
    assert "weights origin not recorded on the before side" in lines[0]
    result = RUNNER.invoke(main, ["compare", str(CPU), str(CUDA), "--out", str(tmp_path / "c"), "--format", "json"])
    assert "Synthetic weights on the baseline; weights origin not recorded on the candidate" in result.output


def test_next_steps_name_a_runnable_collector_command_and_on_a_site_the_source_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 'python -m collector ... --only X' (no plan, a literal ...), and a site page's step
    annotated the page's own copy of the log and said to run `reportgen report` again."""
    events = timing_log("untested-cells")
    start = events[0]
    start["command"] = ["/usr/bin/python3", "-m", "collector", "--workload", "plans/my plan.toml", "--target", "cpu"]
    start["command"] += ["--warm", "10", "--out", "/tmp/runs", "--profile", "b1-*"]
    cut = next(i for i, e in enumerate(events) if e["kind"] == "case_result")
    kept = [e for e in events[: cut + 4]]  # the first cell's events; the run stopped there
    log = tmp_path / "runs" / "u" / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(dumps(kept), encoding="utf-8")
    result = RUNNER.invoke(main, ["report", str(log), "--out", str(tmp_path / "rep"), "--format", "md"])
    text = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "python -m collector --workload 'plans/my plan.toml' --target cpu --warm 10" in text, result.output
    step = next(line for line in text.splitlines() if "python -m collector --workload" in line)
    assert "/tmp/runs" not in step and "--profile" not in step, step
    assert "collector ..." not in text

    # Built from the folder that holds the runs: the source named from there, quoted for a shell
    # (a folder name is text from wherever the runs came from).
    folder = "runs $(touch PWNED) x"
    shutil.copytree(AWAITING, tmp_path / "awaiting" / folder)
    monkeypatch.chdir(tmp_path)
    build_site([Path("awaiting")], Path("site"))
    page = next((tmp_path / "site" / "runs").glob("scenario-a-*/index.html")).read_text(encoding="utf-8")
    assert "<code>reportgen annotate &#39;awaiting/runs $(touch PWNED) x/events.jsonl&#39;</code>" in page, page
    assert "<code>reportgen site</code> again" in page
    # Built from elsewhere: the file name only, no path of the builder's machine on the page.
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(outside)
    build_site([tmp_path / "awaiting"], outside / "site")
    page = next((outside / "site" / "runs").glob("scenario-a-*/index.html")).read_text(encoding="utf-8")
    assert "<code>reportgen annotate events.jsonl</code>" in page and str(tmp_path) not in page


def test_inspect_and_campaign_resume_help_state_their_exit_codes() -> None:
    for argv in (["-m", "collector", "inspect", "--help"], ["-m", "campaign", "resume", "--help"]):
        out = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=60, check=True).stdout
        assert "xit codes" in out and " 2 " in out.replace("\n", " "), out


def test_a_flag_names_any_backend_s_accelerator_readings() -> None:
    class Fact:
        def __init__(self, value: str) -> None:
            self.value = value

    host = {
        "load_avg_before": Fact("1.0 0.9 0.8"),
        "load_avg_after": Fact("2.0 1.0 0.9"),
        "hip_temperature_c_before": Fact("40"),
        "hip_temperature_c_after": Fact("85"),
        "gpu_sm_clock_mhz_before": Fact("1980"),
        "gpu_sm_clock_mhz_after": Fact("1005"),
    }
    text = host_text(host)
    assert "SM clock 1980 → 1005 MHz" in text and "hip_temperature_c 40 → 85" in text, text


def _side(tmp_path: Path, side: str, scale: float, rounds: int | None = None) -> list[str]:
    options = []
    for n in range(3):
        events = timing_log(f"synthetic-{side}-{n}", scale=scale, seed=ord(side) * 10 + n)
        if rounds is not None:
            next(e for e in events if e["kind"] == "plan")["remeasure_rounds"] = rounds
        path = tmp_path / f"{side}{n}" / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(events), encoding="utf-8")
        options += [f"--{'before' if side == 'a' else 'after'}", str(path)]
    return options


def test_a_changed_re_measure_budget_flags_only_the_cells_measured_again(tmp_path: Path) -> None:
    """Before: `[timing] remeasure_rounds` 2 -> 3 flagged every ratio, so a uniform 1.5x
    slowdown over three replicates a side passed `--fail-on worse` (exit 0), though no cell was
    measured again and the budget never applied."""
    from tests.test_attempts_apart import CELL, _remeasured

    options = _side(tmp_path, "a", 1.0) + _side(tmp_path, "b", 1.5, rounds=3)
    gate = RUNNER.invoke(main, ["diff", *options, "--fail-on", "worse"])
    assert gate.exit_code == 3, gate.output
    assert "re-measure rounds" in gate.output, "the change is still named among the criteria"

    before = tmp_path / "one" / "a" / "events.jsonl"
    before.parent.mkdir(parents=True)
    before.write_text(dumps(timing_log("budget-before")), encoding="utf-8")
    events = _remeasured("budget-after", 1.0, seed=1)
    next(e for e in events if e["kind"] == "plan")["remeasure_rounds"] = 3
    after = tmp_path / "one" / "b" / "events.jsonl"
    after.parent.mkdir(parents=True)
    after.write_text(dumps(events), encoding="utf-8")
    found = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    flagged = {t["case"] for t in found["timings"] if any("re-measure rounds" in f for f in t["flags"])}
    assert flagged == {CELL}, flagged


def test_a_cache_miss_measured_only_as_a_fresh_process_cold_call_is_not_called_unmeasured(tmp_path: Path) -> None:
    """Before: 'on a cache miss: candidate (cuda) 2.24 s against baseline (cpu) not measured',
    while the same page's table gave the CPU cells' empty-cache cold calls (16.5 s and more)."""
    result = RUNNER.invoke(main, ["compare", str(CPU), str(CUDA), "--out", str(tmp_path / "c"), "--format", "md"])
    miss = result.stdout.split("on a cache miss: ", 1)[1].split(", on a cache hit", 1)[0]
    assert "against baseline (cpu) not measured" not in miss, miss
    assert "its cold call in a fresh process, empty compile cache" in miss, miss


def test_artifacts_are_said_to_be_listed_by_the_log_not_shipped_with_the_page(tmp_path: Path) -> None:
    """Before: 'Artifacts saved with the run' over weights.pt and the rest, which neither the
    sample runs nor the site hold."""
    result = RUNNER.invoke(main, ["report", str(CPU), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert not (CPU / "artifacts").exists(), "the shipped run keeps no artifact files"
    for name in ("report.md", "report.html"):
        text = (tmp_path / "r" / name).read_text(encoding="utf-8")
        assert "Artifacts saved with the run" not in text
        assert "as the log lists them (the files are not part of this report" in text


def test_the_geometric_mean_of_one_cell_is_that_cell_s_interval_and_verdict() -> None:
    """Two real 30-sample series (microseconds) whose bootstrap interval is lopsided: the cell
    read slower (1.0002 to 1.063) and the mean over that one cell 'no clear difference'
    (0.9985 to 1.061), a symmetric interval about the estimate; with replicates, --fail-on worse
    gates on the mean."""
    from reportgen.judge.intervals import geometric_mean, ratio_intervals

    before = [559.3, 567.7, 558.1, 535.3, 560.5, 525.9, 557.3, 552.7, 552.7, 526.7, 545.5, 525.4, 552.7, 549.6, 566.9]
    before += [556.4, 524.2, 550.7, 525.5, 546.0, 525.9, 575.8, 542.3, 528.2, 552.7, 526.8, 548.8, 521.0, 545.6, 553.0]
    after = [526.2, 584.8, 607.2, 558.2, 524.1, 607.1, 548.7, 520.5, 669.3, 572.3, 548.9, 515.0, 550.1, 571.1, 552.4]
    after += [591.4, 639.0, 593.0, 523.3, 540.1, 526.7, 937.1, 812.3, 564.1, 565.6, 558.8, 533.8, 546.9, 546.7, 774.0]
    (cell,) = ratio_intervals([([x / 1e6 for x in before], [x / 1e6 for x in after])])
    mean = geometric_mean([cell])
    assert mean is not None and cell.low is not None and cell.high is not None
    assert mean.verdict == cell.verdict
    assert abs(mean.low / cell.low - 1) < 1e-9 and abs(mean.high / cell.high - 1) < 1e-9


def test_a_run_stable_only_when_measured_again_says_so_with_its_earlier_waits(tmp_path: Path) -> None:
    """Before: 'warm timing of all 4 timed cells is stable' and host figures of the reported
    series alone, for a run whose first two attempts of every cell waited up to 1.4 s for a CPU
    per second of loop."""
    from reportgen.judge.changes import AGAIN_LABEL

    run = SAMPLES / "heat-solver-cpu-20261205T122551Z-af7feb"  # two cells stable at a later attempt
    result = RUNNER.invoke(main, ["report", str(run), "--out", str(tmp_path / "r"), "--format", "md"])
    text = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "(2 of them only when measured again, after an unstable series: see the host facts)" in text, result.output
    assert f"{AGAIN_LABEL} 3, of 2 cell(s); their threads waited up to" in text
    # Against a run whose every first series was stable, the difference is a host change.
    quiet = SAMPLES / "heat-solver-cpu-20261205T074106Z-bcfcd4"
    found = json.loads(RUNNER.invoke(main, ["diff", str(quiet), str(run), "--format", "json"]).output)
    assert any(AGAIN_LABEL in change[0] for change in found["host"]), found["host"]


def test_compare_says_its_cold_and_compile_ratios_are_one_call_each_with_no_host_figures(tmp_path: Path) -> None:
    """Before: 'cold first call ratio 0.021x' beside warm ratios with stability flags and host
    checks, though a cold call is one sample with no host figure read around it."""
    RUNNER.invoke(main, ["compare", str(CPU), str(CUDA), "--out", str(tmp_path / "c")])
    for name in ("compare.html", "compare.md"):
        text = (tmp_path / "c" / name).read_text(encoding="utf-8")
        assert "cold first call ratio" in text and "one call on each side, with no host figures" in text


def test_diff_names_where_the_compiled_cells_were_compiled_and_timed(tmp_path: Path) -> None:
    """Before: a run made with --cold off (compiled cells compiled and timed in the collector's
    own process) against one with a fresh process per compiled cell read 0 criteria changes."""
    before = timing_log("fresh-process-cells")
    after = timing_log("in-process-cells", seed=1)
    compiles = [e for e in after if e["kind"] == "compile"]
    assert compiles, "the fixture has compiled cells"
    for event in compiles:
        event["cache_condition"] = "compiled_in_process"
    for event in after:
        if event["kind"] == "timing" and event.get("cold") and event["case"].endswith("compiled"):
            event["cold"]["cache_condition"] = "compiled_in_process"
    paths = []
    for name, events in (("a", before), ("b", after)):
        path = tmp_path / name / "events.jsonl"
        path.parent.mkdir()
        path.write_text(dumps(events), encoding="utf-8")
        paths.append(str(path))
    text = RUNNER.invoke(main, ["diff", *paths]).output
    assert "where compiled cells were compiled and timed now compiled: in a process already running" in text, text


def test_a_site_configuration_entry_naming_no_run_says_which_file_and_entry(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(CPU, runs / CPU.name)
    config = tmp_path / "site.toml"
    config.write_text('[[compare]]\nbaseline = "../../../etc"\ncandidate = "x"\n', encoding="utf-8")
    result = RUNNER.invoke(main, ["site", str(runs), "--out", str(tmp_path / "site"), "--config", str(config)])
    assert f"site configuration {config}: [[compare]] #1: comparison '../../../etc'" in result.stderr, result.output


def test_review_of_this_round_s_own_changes() -> None:
    """A second look at this round's changes: a run that measured no cell again says 'none', not
    'not recorded'; a side that timed no compiled cell names no change of where compiled cells
    were measured; a forged sample's ratio prints bounded; the one-call note is a paragraph."""
    from markdown_it import MarkdownIt

    from collector.stability import classify
    from reportgen.judge.changes import AGAIN_LABEL
    from reportgen.judge.criteria import NOT_RECORDED, Declared, criteria_changes
    from reportgen.judge.timing_stability import attempts_apart

    before = SAMPLES / "heat-solver-cpu-20261205T023923Z-f19dd4"  # one cell measured again
    after = SAMPLES / "heat-solver-cpu-20261205T074106Z-bcfcd4"  # none, and its log numbers attempts
    found = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    (row,) = [h for h in found["host"] if h[0] == AGAIN_LABEL]
    assert row[2] == "none", row

    def measured(value: str) -> dict[str, Declared]:
        key = "compiled_measurement"
        return {key: Declared(key, "where compiled cells were compiled and timed", value, "record")}

    timed = measured("compiled: persistent compile cache with entries; cold call: fresh process, empty compile cache")
    assert criteria_changes(timed, measured(NOT_RECORDED)) == []
    assert len(criteria_changes(timed, measured("compiled: in a process already running; cold call: none"))) == 1

    stable = classify([1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.0])
    assert "under 10^-6 times the fastest" in attempts_apart(stable, (1e300, 2e300))
    assert "over 10^6 times the third quartile" in attempts_apart(stable, (5e-324, 1e-323))

    md = (SAMPLES / "comparisons" / "tiny-encoder-cpu-vs-cuda" / "compare.md").read_text(encoding="utf-8")
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<p>The cold first call and compile ratios are of one call on each side" in html


def test_a_generation_run_says_its_series_are_not_measured_again() -> None:
    """Before: 'warm series taken before the reported ones (unstable, measured again): none' on a
    generation run whose every series was unstable, as if each had been stable the first time;
    the collector never re-measures a generation series."""
    from reportgen.judge.changes import AGAIN_LABEL, GENERATION_ONCE, loop_host_facts
    from reportgen.model.runmodel import build_run, read_run

    def facts(name: str) -> dict[str, str]:
        reading, _ = read_run(SAMPLES / name / "events.jsonl")
        return loop_host_facts(build_run(reading))

    assert facts("scenario-a-text-service-cpu-20261205T025456Z-10cfa5")[AGAIN_LABEL].endswith(f"; {GENERATION_ONCE}")
    assert facts("heat-solver-cpu-20261205T074106Z-bcfcd4")[AGAIN_LABEL] == "none"


def test_the_first_screen_names_the_hardware_the_log_recorded(tmp_path: Path) -> None:
    """Before: a run page's title said 'on cuda' or 'on cpu'; the device (NVIDIA H200, the
    instance type) was only inside the folded compatibility record."""
    run = SAMPLES / "tiny-encoder-cuda-20261129T225259Z-866a85"
    RUNNER.invoke(main, ["report", str(run), "--out", str(tmp_path / "r"), "--format", "md"])
    first = (tmp_path / "r" / "report.md").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# Migration report: tiny-encoder on cuda (NVIDIA H200)", first
    # A forged device name is one line, bounded.
    lines = (run / "events.jsonl").read_text(encoding="utf-8").splitlines()
    forged = []
    for line in lines:
        event = json.loads(line)
        if event["kind"] == "environment":
            event["device"]["device_name"]["value"] = "NVIDIA\nH200 " + "x" * 500
        forged.append(json.dumps(event))
    log = tmp_path / "forged" / "events.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(forged) + "\n", encoding="utf-8")
    RUNNER.invoke(main, ["report", str(log), "--out", str(tmp_path / "f"), "--format", "md"])
    first = (tmp_path / "f" / "report.md").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# Migration report: tiny-encoder on cuda (NVIDIA H200 xxx") and first.endswith("…)")
    assert len(first) < 120
    # The device the cells ran on, not the host's instance type: a CPU run on a Trainium host
    # is no Trainium result.
    relabelled = []
    for line in lines:
        event = json.loads(line)
        if event["kind"] == "environment":
            event["device"]["instance_type"] = {"value": "trn1.2xlarge", "source": "dmi product_name"}
        relabelled.append(json.dumps(event))
    log.write_text("\n".join(relabelled) + "\n", encoding="utf-8")
    RUNNER.invoke(main, ["report", str(log), "--out", str(tmp_path / "i"), "--format", "md"])
    first = (tmp_path / "i" / "report.md").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# Migration report: tiny-encoder on cuda (NVIDIA H200)", first
