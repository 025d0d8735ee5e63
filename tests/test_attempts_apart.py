"""A cell the collector measured again: its last, stable series decides nothing when its median
lies far outside every sample of its earlier attempts (the cell ran at two speeds). Every log
here is a synthetic fixture (tests/logbuilder.py, origin "synthetic"), but the shipped sample
run read as it is."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.judge.judgement import judge
from reportgen.judge.timing_stability import attempts_apart, cell_stability, series_flag, stability_word
from reportgen.model.runmodel import read_run
from reportgen.publish.site import build_site
from tests.logbuilder import _warm, dumps, timing_log
from collector.stability import classify

RUNNER = CliRunner()
SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"
# Its cache-check cell: attempt 1 took 0.18-12.8 ms a call (median 0.28 ms), attempt 2 took
# 95-108 ms a call, steadily, and was the one the report showed as "stable after 2 warm series".
SAMPLE = SAMPLES / "tiny-encoder-cpu-20261202T021258Z-677058"
REPEAT = "b1-l16-contiguous-float32-compiled-repeat"
CELL = "b1-l16-contiguous-float32-compiled"


def _remeasured(run_id: str, last: float, seed: int = 0) -> list[dict[str, Any]]:
    """timing_log's run with CELL measured twice: a first series that is unstable (one call in
    three 60% slower) around 0.8 ms, then its logged series with every sample times ``last``."""
    events = timing_log(run_id, seed=seed)
    at = next(i for i, e in enumerate(events) if e["kind"] == "timing" and e["case"] == CELL)
    first = json.loads(json.dumps(events[at]))
    base = first["warm"]["samples_s"]
    first["warm"] = _warm([s * (1.6 if i % 3 == 0 else 1.0) for i, s in enumerate(base)])
    first["attempt"] = 1
    events[at]["warm"] = _warm([s * last for s in base])
    events[at]["attempt"] = 2
    events.insert(at, first)
    for seq, event in enumerate(events):
        event["seq"] = seq
    assert classify(first["warm"]["samples_s"]).verdict == "unstable", "the first attempt is unstable"
    return events


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def test_the_shipped_cache_check_cell_that_jumped_340x_between_attempts_decides_nothing(tmp_path: Path) -> None:
    """Before: its 96 ms read 'stable after 2 warm series' on the page, 'stable' in details.csv,
    and a plain trend point in the history."""
    reading, builder = read_run(SAMPLE / "events.jsonl")
    run = builder.build(reading)
    cell = next(c for c in run.cells if c.case == REPEAT)
    judged = cell_stability(cell)
    assert judged is not None and judged.stability.verdict == "stable", "the last series alone is stable"
    assert not judged.decides and judged.unstable and "the attempts disagree" in judged.apart
    judgement = judge(run)
    assert "the attempts disagree" in judgement.timing_flags[REPEAT]
    assert REPEAT in {j.case for j in judgement.undecided}

    result = RUNNER.invoke(main, ["report", str(SAMPLE), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    rows = {r["case"]: r for r in csv.DictReader((tmp_path / "r" / "details.csv").open(encoding="utf-8"))}
    assert rows[REPEAT]["warm_stability"] == "unstable"
    # A cell measured again whose last series sits among its earlier samples still decides.
    steady = [c for c in run.cells if c.warm_series > 1 and (j := cell_stability(c)) is not None and j.decides]
    assert steady, "the same run has re-measured cells that decide"


def test_a_last_series_inside_the_earlier_samples_decides_and_one_far_outside_does_not() -> None:
    stable = classify([1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.0])
    assert stable.verdict == "stable"
    assert attempts_apart(stable, None) == "", "one series: nothing to disagree with"
    assert attempts_apart(stable, (0.95, 1.6)) == ""
    assert attempts_apart(stable, (0.7, 0.92)) == "", "within the 10% floor for two speeds"
    assert "1.25x the third quartile" in attempts_apart(stable, (0.5, 0.8))
    assert "0.50x the fastest" in attempts_apart(stable, (2.0, 3.0))
    samples = list(stable.series)
    assert series_flag(samples, before=(0.95, 1.6)) is None
    assert series_flag(samples, before=(2.0, 3.0)).startswith("unstable timing: the attempts disagree")
    assert stability_word(samples, before=(2.0, 3.0)) == "unstable"
    assert stability_word(samples, before=[0.95, 1.6]) == "stable"


def test_diff_and_the_site_history_call_no_change_of_a_cell_whose_attempts_disagree(tmp_path: Path) -> None:
    """The later run's cell ran at 0.8 ms in its first attempt and steadily at 8 ms in its second:
    neither diff nor the history may call it 10x slower."""
    before = _write(tmp_path / "runs" / "a" / "events.jsonl", timing_log("apart-before"))
    after = _write(tmp_path / "runs" / "b" / "events.jsonl", _remeasured("apart-after", 10.0, seed=1))
    control = _write(tmp_path / "control" / "events.jsonl", _remeasured("apart-control", 1.0, seed=1))

    def timing(path: Path) -> dict[str, Any]:
        found = json.loads(RUNNER.invoke(main, ["diff", str(before), str(path), "--format", "json"]).output)
        return next(t for t in found["timings"] if t["case"] == CELL)

    apart = timing(after)
    assert any("the attempts disagree" in f for f in apart["flags"]), apart
    gate = RUNNER.invoke(main, ["diff", str(before), str(after), "--fail-on", "worse"])
    assert CELL in gate.stderr and "decide nothing" in gate.stderr, gate.stderr
    assert gate.exit_code == 0, "worse gates on judged timings only"
    # A review: exit 0 read as 'not worse' for a cell ten times slower that decides nothing. The
    # strict gate refuses what read slower and could not be judged.
    strict = RUNNER.invoke(main, ["diff", str(before), str(after), "--fail-on", "undecided"])
    assert strict.exit_code == 3 and CELL in strict.stderr and "decide nothing" in strict.stderr, strict.stderr
    assert "not gated" not in strict.stderr, "the refusal says why it refuses, not that it did not gate"
    faster = _write(tmp_path / "faster" / "events.jsonl", timing_log("apart-faster", scale=0.5, seed=2))
    passed = RUNNER.invoke(main, ["diff", str(before), str(faster), "--fail-on", "undecided"])
    assert passed.exit_code == 0 and "reportgen diff: --fail-on" not in passed.stderr, passed.stderr
    assert not any("attempts disagree" in f for f in timing(control)["flags"]), "the same attempts, one speed"

    site = tmp_path / "site"
    build_site([tmp_path / "runs"], site)
    state = json.loads((site / ".reportgen-state.json").read_text(encoding="utf-8"))
    kept = [r["cells"][CELL].get("warm_before") for r in state["runs"].values()]
    assert sorted(map(bool, kept)) == [False, True], "the state keeps the earlier attempts' range"
    history = next((site / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert "the attempts disagree" in history


def _cell(first: list[float], last: list[float]) -> Any:
    """A run whose CELL logged ``first`` (attempt 1) and then ``last`` (attempt 2), read as a run."""
    events = timing_log("apart-window")
    at = next(i for i, e in enumerate(events) if e["kind"] == "timing" and e["case"] == CELL)
    earlier = json.loads(json.dumps(events[at]))
    earlier["warm"], earlier["attempt"] = _warm(first), 1
    events[at]["warm"], events[at]["attempt"] = _warm(last), 2
    events.insert(at, earlier)
    for seq, event in enumerate(events):
        event["seq"] = seq
    return events


def test_slow_outliers_of_the_earlier_series_do_not_admit_a_slower_last_series(tmp_path: Path) -> None:
    """Before: a first attempt of 26 calls near 0.2 ms and 4 at 2 ms (unstable for its outliers),
    then a steady last attempt at 0.5 ms, read 'stable after 2 warm series': 0.5 ms lay between
    the earlier fastest and slowest samples, though no more than 4 of 30 earlier calls came near."""
    first = [0.0002 * (1 + 0.001 * (i % 7)) for i in range(26)] + [0.002] * 4
    last = [0.0005 * (1 + 0.001 * (i % 5)) for i in range(30)]
    assert classify(first).verdict == "unstable" and classify(last).verdict == "stable"
    log = _write(tmp_path / "apart" / "events.jsonl", _cell(first, last))
    reading, builder = read_run(log)
    judged = cell_stability(next(c for c in builder.build(reading).cells if c.case == CELL))
    assert judged is not None and not judged.decides
    assert "the third quartile of the earlier ones" in judged.apart


def test_a_quiet_last_series_as_fast_as_the_contended_ones_fastest_decides(tmp_path: Path) -> None:
    """The purpose of measuring again: a first attempt slowed by contention across its range (1 to
    2 ms), a quiet last one at its fastest sample's speed. It decides."""
    first = [0.001 * (1 + ((i * 7) % 30) / 29) for i in range(30)]
    last = [0.001 * (1 + 0.002 * (i % 5)) for i in range(30)]
    assert classify(first).verdict == "unstable" and classify(last).verdict == "stable"
    log = _write(tmp_path / "quiet" / "events.jsonl", _cell(first, last))
    reading, builder = read_run(log)
    judged = cell_stability(next(c for c in builder.build(reading).cells if c.case == CELL))
    assert judged is not None and judged.decides, judged


def test_the_strict_gate_refuses_cells_whose_timing_was_not_compared(tmp_path: Path) -> None:
    """A second review: `--fail-on undecided` passed (exit 0) on a later run every timing of which
    was three times slower, because its model revision changed and no timing was compared; its
    help said a pass means no timing read slower at all."""
    before = _write(tmp_path / "a" / "events.jsonl", timing_log("strict-before"))
    events = timing_log("strict-after", scale=3.0, seed=1)
    next(e for e in events if e["kind"] == "plan")["model_revision"] = "another revision"
    after = _write(tmp_path / "b" / "events.jsonl", events)
    worse = RUNNER.invoke(main, ["diff", str(before), str(after), "--fail-on", "worse"])
    strict = RUNNER.invoke(main, ["diff", str(before), str(after), "--fail-on", "undecided"])
    assert worse.exit_code == 0, worse.stderr
    assert strict.exit_code == 3 and "that passed on both sides not compared" in strict.stderr, strict.stderr


def test_the_strict_gate_says_it_refuses_a_cell_judged_slower_with_one_run_a_side() -> None:
    """A docs review: the strict gate's refusal read 'slower, and could not be judged: 1 cell(s)
    judged slower ... to gate on speed', which says a cell was judged and not judged, and tells the
    user how to gate on speed while refusing on it."""
    from tests.logbuilder import SAMPLE_RUNS

    before, after = (
        SAMPLE_RUNS / name
        for name in ("heat-solver-cpu-20261205T074106Z-bcfcd4", "heat-solver-cpu-20261205T122551Z-af7feb")
    )
    strict = RUNNER.invoke(main, ["diff", str(before), str(after), "--fail-on", "undecided"])
    assert strict.exit_code == 3, strict.stderr
    assert "judged slower with one run a side, whose intervals cover sampling within the two runs only" in strict.stderr
    assert "could not be judged" not in strict.stderr and "to gate on speed" not in strict.stderr
