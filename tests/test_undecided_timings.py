"""Timings that decide nothing, and runs that measured nothing anew, between runs: a decode
ratio whose throughput is unstable, a gate that passes over unstable regressions, a copy of a
run compared with its original, and a cold call that compiled from nothing faster than a warm
call. Every log here is a synthetic fixture (tests/logbuilder.py, origin "synthetic"), but the
copy of a shipped run, which is the hostile input under test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.contract.validation import read_log
from tests.logbuilder import _warm, dumps, generation_timing_log, timing_log, tokens_per_s
from tests.test_diff_compare_agree import _sides

RUNNER = CliRunner()
SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"
SAMPLE = SAMPLES / "tiny-encoder-cpu-20261205T124447Z-43ef64"
DECODE = "decode per token"


def _log(path: Path, events: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _slow_last_steps(events: list[dict[str, Any]]) -> None:
    """Every decode step 10% faster, and the last step of every other repetition 15 times as
    long: the per-step median falls while tokens/s (steps over the median repetition) falls too."""
    for event in events:
        timing = event.get("timing") if event["kind"] == "generation" else None
        if timing is None:
            continue
        samples = [x * 0.9 for x in timing["decode_token"]["samples_s"]]
        steps = len(samples) // timing["repetitions"]
        for rep in range(0, timing["repetitions"], 2):
            samples[rep * steps + steps - 1] *= 15
        timing["decode_token"] = _warm(samples)
        timing["tokens_per_s"] = tokens_per_s(timing)


def test_a_decode_ratio_whose_repetitions_are_unstable_decides_nothing_in_diff_and_compare(tmp_path: Path) -> None:
    """Before: diff called decode per token 1.11x faster (and counted it in the geometric mean)
    where tokens/s fell 21% and the run's own report said its throughput decides nothing."""
    before = _log(tmp_path / "a" / "events.jsonl", generation_timing_log("gen-before", seed=1))
    events = generation_timing_log("gen-after", seed=1)
    _slow_last_steps(events)
    after = _log(tmp_path / "b" / "events.jsonl", events)
    fell = [(e["timing"]["tokens_per_s"], e["case"]) for e in events if e["kind"] == "generation" and e.get("timing")]
    assert fell, "the fixture has timed generation cells"

    found = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    decode = [t for t in found["timings"] if t["series"] == DECODE]
    assert decode and all(t["ratio"] < 1 for t in decode), "each step's median is faster"
    for timing in decode:
        assert timing["verdict"] == "no verdict: unstable timing", timing
        assert any("repetitions' decode times (tokens/s)" in f for f in timing["flags"]), timing["flags"]
    assert "faster" not in found["summary"].split(";")[-1]

    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    series = [s for c in data["cells"] for s in c.get("generation") or () if s["words"] == DECODE]
    assert series and all(s["verdict"] == "unstable timing" for s in series), series
    assert all(any("repetitions' decode times" in f for f in s["flags"]) for s in series)


def test_a_gate_with_replicates_names_the_unstable_timings_it_did_not_gate(tmp_path: Path) -> None:
    """Three runs a side, one cell 14 times slower in every later run but bimodal. Before:
    `--fail-on worse` exited 0 with nothing on stderr, under a headline of 'no clear change'."""
    slow = "b1-l16-contiguous-float32-eager"

    def run(name: str, seed: int, regress: bool) -> Path:
        events = timing_log(name, seed=seed)
        if regress:
            for event in events:
                if event["kind"] == "timing" and event["case"] == slow:
                    samples = event["warm"]["samples_s"]
                    event["warm"] = _warm([x * (14 if i % 2 else 9) for i, x in enumerate(samples)])
        return _log(tmp_path / name / "events.jsonl", events)

    before = [run(f"b{n}", n, False) for n in range(3)]
    after = [run(f"a{n}", 50 + n, True) for n in range(3)]
    result = RUNNER.invoke(main, ["diff", *_sides(before, after), "--fail-on", "worse"])
    assert result.exit_code == 0, result.output  # unstable: it decides nothing, and no gate fails on it
    assert "speed not gated for 1 timing(s) that decide nothing" in result.output and f"{slow} 1" in result.output
    summary = json.loads(RUNNER.invoke(main, ["diff", *_sides(before, after), "--format", "json"]).output)["summary"]
    assert summary.endswith("no clear change among the 3 judged, and 1 decide nothing"), summary

    steady = RUNNER.invoke(main, ["diff", *_sides(before, [run(f"c{n}", 20 + n, False) for n in range(3)])])
    assert steady.exit_code == 0 and "decide nothing" not in steady.output, "the control: all judged"


def test_a_copy_of_a_measured_run_under_another_id_is_no_later_run(tmp_path: Path) -> None:
    """A shipped (measured) run copied under a new run id, the attack: the copy is the hostile
    input here, not a fixture. Before: diff and compare read the pair as a measurement ('no
    clear difference', the gate passed), while the same copy given as a replicate of one side
    was refused."""
    lines = (SAMPLE / "events.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    start = json.loads(lines[0])
    start["run_id"] = "copied-run"
    start["started_at"] = "2026-12-06T00:00:00Z"
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "events.jsonl").write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n", encoding="utf-8")
    original, copy = tmp_path / "a", tmp_path / "b"

    result = RUNNER.invoke(main, ["diff", str(original), str(copy), "--fail-on", "worse"])
    assert result.exit_code == 2, result.output
    assert f"copied-run holds the same warm samples as {SAMPLE.name}" in result.output
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(original), str(copy), "--out", str(out)])
    assert result.exit_code == 2 and "one measurement given twice" in result.output, result.output

    # A site holding both still builds; its history joins no timing across the copy.
    site = tmp_path / "site"
    result = RUNNER.invoke(main, ["site", str(original), str(copy), "--out", str(site)])
    assert result.exit_code == 0, result.output
    (page,) = site.glob("workloads/*/index.html")
    text = page.read_text(encoding="utf-8")
    assert "not joined to the run before it" in text and "one measurement given twice" in text

    # The control: two measured runs of the same workload are compared.
    other = SAMPLES / "tiny-encoder-cpu-20261205T073819Z-87bab8"
    assert RUNNER.invoke(main, ["diff", str(other), str(original)]).exit_code == 0


def test_a_cold_call_that_compiled_from_nothing_faster_than_a_warm_call_contradicts_its_log(tmp_path: Path) -> None:
    """Before: every cold second set to 1e-6 validated, and compare printed a cold ratio of 6e-8."""
    events = timing_log("cold-forged", seed=5)
    colds = [e for e in events if e["kind"] == "timing" and e.get("cold")]
    empty = [e for e in colds if e["cold"]["cache_condition"] == "fresh_process_empty_cache"]
    assert empty, "the fixture has compiled cells with an empty-cache first call"
    for event in colds:
        event["cold"]["seconds"] = 1e-6
    reading = read_log(_log(tmp_path / "events.jsonl", events))
    errors = [p.message for p in reading.errors]
    assert len(errors) == len(empty), errors
    assert all(
        "compiled from an empty cache in a fresh process, is less than the fastest warm call" in m for m in errors
    )
    # The eager first calls, far below their warm calls too, are not held to it: on a contended
    # host a warm loop's fastest call was 5 times one first call.
    assert not any("eager" in m for m in errors)
    assert read_log(_log(tmp_path / "ok" / "events.jsonl", timing_log("cold-real", seed=5))).valid


def test_two_measured_runs_on_a_coarse_clock_are_no_copy(tmp_path: Path) -> None:
    """A review of the copy rule: two runs of a fast workload whose clock ticks coarser than a
    call draw every series alike (one repeated value); they are two runs, compared, as the rule
    for replicates already allowed. Edited copies of two shipped runs, every warm sample one tick."""
    from collector.timing import warm_stats

    for name, run in (("a", SAMPLES / "tiny-encoder-cpu-20261205T073819Z-87bab8"), ("b", SAMPLE)):
        events = [json.loads(line) for line in (run / "events.jsonl").read_text(encoding="utf-8").splitlines()]
        for event in events:
            if event["kind"] == "timing" and event.get("warm"):
                event["warm"].update(warm_stats([1e-4] * len(event["warm"]["samples_s"])))
                event["warm"]["samples_s"] = [1e-4] * len(event["warm"]["samples_s"])
        (tmp_path / name).mkdir()
        (tmp_path / name / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    result = RUNNER.invoke(main, ["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert "one measurement given twice" not in result.output


def test_a_throughput_of_fewer_repetitions_than_the_classifier_needs_decides_nothing(tmp_path: Path) -> None:
    """tokens/s is one repetition's steps over the median repetition's decode time: with fewer
    repetitions than the classifier needs (one here), nothing says they ran at one speed. Before:
    the run page showed tokens/s unflagged, and diff called decode per token 1.43x faster."""
    from reportgen.judge.timing_stability import generation_flags, throughput_flags
    from reportgen.render.report import judge_log
    from tests.logbuilder import planned_repetitions

    def one_repetition(name: str, scale: float) -> Path:
        events = generation_timing_log(name, seed=1)
        planned_repetitions(events, 1)
        for event in events:
            timing = event.get("timing") if event["kind"] == "generation" else None
            if timing:
                timing["decode_token"] = _warm([x * scale for x in timing["decode_token"]["samples_s"]])
                timing["tokens_per_s"] = tokens_per_s(timing)
        return _log(tmp_path / name / "events.jsonl", events)

    before, after = one_repetition("one-rep-before", 1.0), one_repetition("one-rep-after", 0.7)
    assert read_log(before).errors == [] and read_log(after).errors == []
    run = judge_log(after).run
    passing = [c.case for c in run.cells_with("generation") if c.status == "pass"]
    flags = throughput_flags(run)
    assert passing and set(flags) == set(passing)
    assert all(f == "from the decode series flagged beside it: decides nothing" for f in flags.values()), flags
    decode_flags = {case: series["decode_token"] for case, series in generation_flags(run).items()}
    assert set(decode_flags) == set(passing)
    assert all("timing not classified across the 1 repetitions' decode times" in f for f in decode_flags.values())
    found = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    decode = [t for t in found["timings"] if t["series"] == DECODE]
    assert decode and all(t["ratio"] < 1 for t in decode), "each step is faster"
    assert all(not t["verdict"].endswith(("faster", "slower")) for t in decode), decode
    assert all(any("repetitions' decode times (tokens/s)" in f for f in t["flags"]) for t in decode)


def test_a_copy_of_a_run_whose_samples_bunch_now_and_then_is_still_a_copy() -> None:
    """A review: a CPU run of README's first plan (200 warm repetitions) repeats 2 to 17 of its
    values in every cell, though its timer resolves far finer: the copy rule, which took a series
    with any repeated value for a coarse timer's, checked no cell, and the run copied under
    another id read 'no clear change' (both gates passed), and as a replicate of each side turned
    'no clear difference' into '8 slower' (exit 3). A series of mostly distinct values tells a
    copy; one of a few values again and again (a coarse timer) still does not."""
    from reportgen.judge.identity import copied_run

    cells = {}
    for line in (SAMPLE / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["kind"] == "timing" and event.get("warm"):
            samples = list(event["warm"]["samples_s"])
            samples[1], samples[3] = samples[0], samples[2]  # two values drawn twice, as a fine timer bunches
            cells[event["case"]] = samples
    assert cells and all(len(set(s)) < len(s) for s in cells.values())
    rounded = {case: [float(f"{x:.7g}") for x in s] for case, s in cells.items()}
    for copy in (cells, rounded):
        found = copied_run([("measured", cells), ("copied-run", copy)], whole_run=False)
        assert found is not None and found.startswith("copied-run holds the same warm samples as measured")
        assert f"in {len(cells)} of its {len(cells)} timed cells" in found and "mostly distinct" in found
    # Two runs on a coarse clock: a few values each, drawn alike; no copy.
    ticks = {case: [1e-4] * (len(s) - 2) + [2e-4, 3e-4] for case, s in cells.items()}
    assert copied_run([("a", ticks), ("b", ticks)], whole_run=False) is None


def test_a_flag_of_a_sides_first_run_names_that_run_where_the_side_has_replicates(tmp_path: Path) -> None:
    """A review: with replicates, the first run's flag read '(after)', as if the whole side were
    unstable, while each further run's read '(after replicate <id>)'. It names its run; with one
    run a side, the side alone. And the ratio table says it counts the cells whose timing was
    compared (it said 'cells that passed in both runs: 0 cells' where 8 had passed)."""
    slow = "b1-l16-contiguous-float32-eager"

    def run(name: str, seed: int, bimodal: bool) -> Path:
        events = timing_log(name, seed=seed)
        if bimodal:
            for event in events:
                if event["kind"] == "timing" and event["case"] == slow:
                    samples = event["warm"]["samples_s"]
                    event["warm"] = _warm([x * (3 if i % 2 else 1) for i, x in enumerate(samples)])
        return _log(tmp_path / name / "events.jsonl", events)

    before = [run(f"b{n}", n, False) for n in range(2)]
    after = [run("a0", 50, True), run("a1", 51, False)]
    text = RUNNER.invoke(main, ["diff", *_sides(before, after)]).output
    line = next(x for x in text.splitlines() if x.strip().startswith(slow + ":"))
    assert "(after run a0)]" in line and "(after)]" not in line, line
    assert "cells that passed in both runs with their timing compared:" in text
    one = RUNNER.invoke(main, ["diff", str(before[0]), str(after[0])]).output
    line = next(x for x in one.splitlines() if x.strip().startswith(slow + ":"))
    assert "(after)]" in line and "after run" not in line, line
