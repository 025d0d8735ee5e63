"""`reportgen diff` and `reportgen compare` answer one question about one pair of runs: where
they both speak of a timing they give the same answer, and a timing that decides nothing in one
decides nothing, with its reason, in the other."""

from __future__ import annotations

import json
import math
from dataclasses import replace
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from tests.logbuilder import _warm, bimodal, dumps, generation_timing_log, scaled_warm, timing_log
from tests.test_run_changes import _mismatch

RUNNER = CliRunner()
BAD = "b2-l16-contiguous-float32-compiled"
# A ratio as diff writes it, with its interval: "(0.497x, 95% interval ...)" or "| 0.497× |".
RATIO = re.compile(r"\d\.\d{3}[x×]")


def _log(path: Path, events: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _stopped_pair(root: Path) -> tuple[Path, Path]:
    """Before: every cell passes. After: twice as fast, and one cell mismatches with no verdict
    (its performance acceptance is stopped)."""
    before = _log(root / "before" / "events.jsonl", timing_log("all-pass", seed=1))
    events = timing_log("one-mismatch", scale=0.5, seed=2)
    _mismatch(events, BAD)
    events[0]["started_at"] = "2026-01-02T00:00:00Z"  # a history pairs runs whose starts it can order
    return before, _log(root / "after" / "events.jsonl", events)


def _sides(before: list[Path], after: list[Path], first: str = "--before", second: str = "--after") -> list[str]:
    """The replicates of each side as command-line options: ``first`` before each of ``before``."""
    return [x for p in before for x in (first, str(p))] + [x for p in after for x in (second, str(p))]


def _diff(*args: str) -> str:
    result = RUNNER.invoke(main, ["diff", *args])
    assert result.exit_code == 0, result.output
    return result.output


def _compare(root: Path, *args: str) -> dict[str, Any]:
    out = root / "cmp"
    result = RUNNER.invoke(main, ["compare", *args, "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    return data


def test_a_stopped_acceptance_compares_no_timing_in_diff_as_in_compare(tmp_path: Path) -> None:
    """Before: compare said 'not compared: performance acceptance is stopped on the candidate'
    for each cell, while diff, of the same two logs, listed each cell's ratio and interval
    (0.497x, 95% interval 0.494 to 0.500) as 'no verdict: flagged'."""
    before, after = _stopped_pair(tmp_path)
    data = _compare(tmp_path, str(before), str(after))
    stopped = "not compared: performance acceptance is stopped on the candidate"
    not_timed = {c["case"] for c in data["cells"] if c["timing_note"] == stopped}
    assert not_timed == {c["case"] for c in data["cells"]} - {BAD} and data["geomean"] is None
    assert all(c["timing"] is None for c in data["cells"])

    found = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert found["timings"] == [] and found["geomean"] is None
    assert found["timing_stopped"] == "not compared: performance acceptance is stopped on the after"
    assert set(found["not_timed"]) == not_timed
    assert "faster" not in found["summary"] and "no clear" not in found["summary"], found["summary"]
    for fmt in ("text", "md"):
        text = _diff(str(before), str(after), "--format", fmt)
        assert not RATIO.search(text), text
        assert "performance acceptance is stopped on the after" in text, text
        assert not re.search(r"\b(faster|slower|no clear)\b", text), text
        assert all(case in text for case in not_timed), text


def test_with_a_verdict_on_the_mismatch_both_compare_the_timings_alike(tmp_path: Path) -> None:
    """The stop ends with the owner's verdict: then both commands time the same cells and call
    them faster."""
    before, after = _stopped_pair(tmp_path)
    (after.parent / "annotations.toml").write_text(
        f'["{BAD}"]\nexplanation = "checked"\nverdict = "accepted"\nreason = "task metric holds"\n', encoding="utf-8"
    )
    data = _compare(tmp_path, str(before), str(after))
    timed = {c["case"]: c["timing"]["verdict"] for c in data["cells"] if c["timing"] is not None}
    found = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert found["timing_stopped"] == "" and found["not_timed"] == []
    assert {t["case"]: t["verdict"] for t in found["timings"]} == timed == dict.fromkeys(timed, "faster")
    assert len(timed) == 3


def test_the_history_compares_no_timing_of_a_stopped_pair(tmp_path: Path) -> None:
    """Before: the workload page listed each cell's ratio against the previous run (flagged) and
    chose its timing columns by the largest of those ratios, although they decide nothing."""
    from reportgen.publish.site import build_site

    _stopped_pair(tmp_path / "runs")
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert "Timing not compared: performance acceptance is stopped on the after until" in page
    assert '<table class="ratios">' not in page and not RATIO.search(page)
    assert "the cells with the largest change against the previous run" not in page
    assert "not compared: performance acceptance is stopped on the after" in page  # the geometric mean column


def _unstable(events: list[dict[str, Any]]) -> None:
    """Every warm series bimodal: every other sample three times as long."""

    for event in events:
        if event["kind"] == "timing":
            event["warm"] = _warm([x * (3 if i % 2 else 1) for i, x in enumerate(event["warm"]["samples_s"])])


def _decided(log: Path, cases: list[str]) -> None:
    """An annotations.toml beside the log giving each errored case a verdict."""
    (log.parent / "annotations.toml").write_text(
        "".join(
            f'[{case}]\nexplanation = "Synthetic error."\nverdict = "change-needed"\nchange = "operator"\nreason = "test"\n'
            for case in cases
        ),
        encoding="utf-8",
    )


def test_where_no_ratio_decides_anything_diff_says_so_as_compare_does(tmp_path: Path) -> None:
    """Before: with every warm series unstable, compare said 'no unflagged, stable timing to
    summarise' and diff '0 faster, 0 slower, 0 no clear difference, 4 unstable; no clear change',
    a verdict drawn from timings that decide nothing (and so where no cell passed at all)."""
    before = _log(tmp_path / "a" / "events.jsonl", timing_log("steady", seed=1))
    events = timing_log("bimodal", seed=2)
    _unstable(events)
    after = _log(tmp_path / "b" / "events.jsonl", events)
    data = _compare(tmp_path, str(before), str(after))
    assert "no unflagged, stable timing to summarise" in data["headline"]
    summary = json.loads(_diff(str(before), str(after), "--format", "json"))["summary"]
    assert summary.endswith("4 unstable; no unflagged, stable timing to summarise"), summary
    assert "no clear change" not in _diff(str(before), str(after))

    failing = timing_log("all-error", seed=3)
    for event in failing:
        if event["kind"] == "case_result":
            event["status"] = "error"
    broken = _log(tmp_path / "c" / "events.jsonl", failing)
    # Explained and decided: an error without a verdict would stop the side's performance acceptance.
    _decided(broken, [e["case"] for e in failing if e["kind"] == "case_result"])
    assert "no timing comparable" in _compare(tmp_path / "c", str(before), str(broken))["headline"]
    summary = json.loads(_diff(str(before), str(broken), "--format", "json"))["summary"]
    assert summary.endswith("0 unstable; no timing comparable"), summary


def test_a_judged_ratio_without_a_clear_change_still_says_so(tmp_path: Path) -> None:
    """The control: where ratios were judged and none is clearly faster or slower."""
    before = _log(tmp_path / "a" / "events.jsonl", timing_log("same-a", seed=4, noise=0.05))
    after = _log(tmp_path / "b" / "events.jsonl", timing_log("same-b", seed=14, noise=0.05))
    found = json.loads(_diff(str(before), str(after), "--format", "json"))
    judged = [t for t in found["timings"] if t["verdict"] == "no clear difference" and not t["flags"]]
    assert judged and found["summary"].endswith("; no clear change"), found


def test_a_stopped_side_gives_no_compile_cost_or_speedup_either(tmp_path: Path) -> None:
    """Before: compare's answer read 'timing not compared: performance acceptance is stopped on
    the candidate ...; compile + first result per new shape on a cache miss: candidate (cpu) 4.5 s
    against baseline (cpu) 4.5 s', and its compiled-over-eager table gave the stopped candidate a
    speedup (1.25x): timings whose acceptance is stopped, compared all the same."""
    before, after = _stopped_pair(tmp_path)
    data = _compare(tmp_path, str(before), str(after))
    assert "performance acceptance is stopped on the candidate" in data["headline"]
    assert "compile + first result" not in data["headline"], data["headline"]
    assert all(s["candidate"] is None for s in data["speedups"])
    flags = {s["shape"]: s["candidate_flag"] for s in data["speedups"]}
    # (2, 16): its compiled cell mismatches, so there is no speedup to give at all.
    assert flags == {"(1, 16)": "not compared: performance acceptance is stopped on the candidate", "(2, 16)": None}
    assert all(s["baseline"] is not None for s in data["speedups"])  # the baseline's own figures stand
    out = tmp_path / "md"
    assert RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "md"]).exit_code == 0
    page = (out / "compare.md").read_text(encoding="utf-8")
    for row in ("geometric mean of warm ratios", "compile + first result per new shape"):
        assert f"| {row} | not compared: performance acceptance is stopped on the candidate |" in page, page
    speedups = page[page.index("Compiled over eager, per shape") :]
    assert "| not compared: performance acceptance is stopped on the candidate |" in speedups


def test_the_history_names_a_synthetic_run_by_its_own_id(tmp_path: Path) -> None:
    """Before: the history's synthetic banner went through Jinja's capitalize, which lowercases
    all but the first letter: run 'Tiny-B-20261202T0553Z' was named 'tiny-b-20261202t0553z'."""
    from reportgen.publish.site import build_site

    for run_id, seed in (("Tiny-A-20261201T0553Z", 1), ("Tiny-B-20261202T0553Z", 2)):
        events = timing_log(run_id, seed=seed)
        events[0]["started_at"] = f"2026-12-0{seed}T05:53:00Z"
        _log(tmp_path / "runs" / run_id / "events.jsonl", events)
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    banner = page[page.index('class="banner banner-synthetic"') :]
    banner = banner[: banner.index("</p>")]
    assert "Synthetic fixture on the before side (Tiny-A-20261201T0553Z)" in banner, banner
    assert "the after side (Tiny-B-20261202T0553Z)" in banner, banner


def test_a_series_too_short_to_classify_is_not_called_unstable(tmp_path: Path) -> None:
    """Three warm samples are too few for the stability rules: the log measured no instability.
    Before, diff said "no verdict: unstable timing" and counted the cells among the unstable,
    and compare said "≋ unstable timing" and "4 cells with unstable timing", while their flags
    said "timing not classified: 3 sample(s)". Both now say not classified, and decide nothing."""
    before = _log(tmp_path / "before" / "events.jsonl", timing_log("thirty", seed=1))
    after = _log(tmp_path / "after" / "events.jsonl", timing_log("three", scale=0.5, seed=2, samples=3))
    text = _diff(str(before), str(after))
    data = json.loads(_diff(str(before), str(after), "--format", "json"))
    cells = [t["case"] for t in data["timings"]]
    assert cells and data["unstable_timing"] == [] and data["timing_not_classified"] == cells
    assert {t["verdict"] for t in data["timings"]} == {"no verdict: timing not classified"}
    assert "unstable" not in text.replace(", 0 unstable", ""), text
    assert f"timing not classified: {len(cells)} cell(s), no timing verdict" in text
    assert "faster" not in text.replace("0 faster", "")

    compared = _compare(tmp_path, str(before), str(after))
    assert compared["unstable_cells"] == [] and sorted(compared["unclassified_cells"]) == sorted(cells)
    assert compared["verdict_counts"]["timing not classified"] == len(cells)
    assert compared["verdict_counts"]["unstable timing"] == 0
    assert "unstable" not in compared["headline"] and "with timing not classified left out" in compared["headline"]


def test_a_replicate_that_hit_its_recompile_limit_flags_the_ratio_in_diff_as_in_compare(tmp_path: Path) -> None:
    """Before: with replicates, compare flagged a cell whose compile hit its recompile limit in
    a further run of a side ('recompile limit hit on the candidate replicate a2': its samples,
    maybe of an eager fallback, are in the interval) and left it out of the geometric mean,
    while diff of the same runs called the cell 'slower' and counted it (4 cells against 3)."""

    def run(name: str, scale: float, seed: int, limit: bool = False) -> Path:
        events = timing_log(name, scale=scale, seed=seed)
        if limit:
            next(e for e in events if e["kind"] == "compile" and e["case"] == BAD)["recompile_limit_hit"] = True
        return _log(tmp_path / name / "events.jsonl", events)

    before = [run("b1", 1.0, 1), run("b2", 1.0, 2)]
    after = [run("a1", 1.3, 3), run("a2", 1.3, 4, limit=True)]
    data = _compare(tmp_path, *_sides(before, after, "--baseline", "--candidate"))
    timing = next(c["timing"] for c in data["cells"] if c["case"] == BAD)
    assert timing["flags"] == ["recompile limit hit on the candidate replicate a2"] and not timing["in_geomean"]

    sides = _sides(before, after)
    found = json.loads(_diff(*sides, "--format", "json"))
    change = next(t for t in found["timings"] if t["case"] == BAD)
    assert change["flags"] == ["recompile limit hit (after replicate a2)"], change
    assert change["verdict"] == "no verdict: flagged"
    assert found["geomean"]["cells"] == data["geomean"]["cells"] == 3
    assert "3 slower" in found["summary"] and "1 flagged (not judged)" in found["summary"], found["summary"]


def _renamed(events: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    """The log with one case key renamed everywhere (a name not in the collector's form, which
    the validator would check against the cell's fields)."""
    return [json.loads(line) for line in dumps(events).replace(old, new).splitlines() if line.strip()]


def _redefined_pair(root: Path, fixed: bool = False) -> tuple[Path, Path]:
    """Case 'small' is batch 1 before and batch 8 after: another cell under the same key, six
    times as slow (or, with ``fixed``, mismatching before and passing after)."""
    small = "b1-l16-contiguous-float32-eager"
    before = _renamed(timing_log("redefined-before", seed=1), small, "small")
    after = _renamed(timing_log("redefined-after", seed=2), small, "small")
    next(e for e in after if e["kind"] == "run_start")["started_at"] = "2026-01-02T00:00:00Z"
    next(c for c in next(e for e in after if e["kind"] == "plan")["matrix"] if c["case"] == "small")["batch"] = 8
    timing = next(e for e in after if e["kind"] == "timing" and e["case"] == "small")
    timing["warm"] = scaled_warm(timing["warm"], 6)
    if fixed:
        _mismatch(before, "small")
    return _log(root / "before" / "events.jsonl", before), _log(root / "after" / "events.jsonl", after)


REDEFINED_WHY = "the same case key names different cells in the two plans (batch 1 on the before, 8 on the after)"


def test_a_case_key_that_names_another_cell_is_not_timed_by_diff_as_compare_lists_it(tmp_path: Path) -> None:
    """Before: compare listed 'small' as not comparable (the same case key names different cells
    in the two plans), while diff of the same logs matched it by name and said '5.98x slower',
    the largest change, counted in the geometric mean and in the history's charts."""
    before, after = _redefined_pair(tmp_path)
    data = _compare(tmp_path, str(before), str(after))
    assert data["not_comparable"] == [
        {"case": "small", "reason": REDEFINED_WHY.replace("before", "baseline").replace("after", "candidate")}
    ]
    assert data["geomean"]["cells"] == 3

    found = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert "small" not in {t["case"] for t in found["timings"]} and found["geomean"]["cells"] == 3
    assert found["redefined"] == [["small", REDEFINED_WHY]]
    assert "small" not in found["summary"], found["summary"]
    text = _diff(str(before), str(after))
    assert f"  small: {REDEFINED_WHY}" in text and not re.search(r"small: .*slower", text), text
    md = _diff(str(before), str(after), "--format", "md")
    assert "| cells redefined under the same case key (not compared) | 1 |" in md and REDEFINED_WHY in md, md
    assert not re.search(r"small.*slower", md), md

    result = RUNNER.invoke(
        main, ["site", str(tmp_path / "before"), str(tmp_path / "after"), "--out", str(tmp_path / "site")]
    )
    assert result.exit_code == 0, result.output
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert "Cells redefined under the same case key (not compared): 1" in page and REDEFINED_WHY in page
    assert "largest 1.01x slower on b2-l16-contiguous-float32-compiled" in page  # not 'small'


def test_a_case_key_that_names_another_cell_is_not_fixed(tmp_path: Path) -> None:
    """Before: 'small' mismatching at batch 1 and passing at batch 8 read 'fixed: 1'."""
    before, after = _redefined_pair(tmp_path, fixed=True)
    found = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert found["fixed"] == [] and found["other_changes"] == [] and found["redefined"] == [["small", REDEFINED_WHY]]
    assert "fixed: 0" in _diff(str(before), str(after))


def test_a_cell_a_replicate_did_not_pass_is_named_by_diff_not_left_out_quietly(tmp_path: Path) -> None:
    """Two runs a side; the after side's second run errors on one cell its first run passes.
    Before: diff said 'new failures: 0' and left the cell out of its timing list with no word
    (3 ratios, no reason), while compare said 'not compared: a replicate did not pass this cell'."""

    def run(name: str, scale: float, seed: int, error: bool = False) -> Path:
        events = timing_log(name, scale=scale, seed=seed)
        if error:
            result = next(e for e in events if e["kind"] == "case_result" and e["case"] == BAD)
            for key in ("outputs", "error_stats", "task_metric"):
                result.pop(key)
            result.update(status="error", failure={"phase": "run", "type": "RuntimeError", "message": "boom"})
            events[:] = [e for e in events if not (e["kind"] == "timing" and e.get("case") == BAD)]
        log = _log(tmp_path / name / "events.jsonl", events)
        if error:  # decided: an error without a verdict would stop the side's performance acceptance
            _decided(log, [BAD])
        return log

    before = [run("b1", 1.0, 1), run("b2", 1.0, 2)]
    after = [run("a1", 1.3, 3), run("a2", 1.3, 4, error=True)]
    statuses = "after: pass in a1, error in a2"
    data = _compare(tmp_path, *_sides(before, after, "--baseline", "--candidate"))
    note = next(c["timing_note"] for c in data["cells"] if c["case"] == BAD)
    assert note == "not compared: a replicate did not pass this cell (candidate: pass in a1, error in a2)"
    # Nor does compare's headline say 'all 4 correct on both' of the first runs alone.
    assert "all 4 correct on both" not in data["headline"], data["headline"]
    assert (
        "4 correct on both in each side's first run; 1 cell with another status in another run of a side"
        in (data["headline"])
    )
    assert (
        next(c for c in data["cells"] if c["case"] == BAD)["replicate_statuses"] == "candidate: pass in a1, error in a2"
    )

    sides = _sides(before, after)
    found = json.loads(_diff(*sides, "--format", "json"))
    assert found["replicate_statuses"] == [[BAD, statuses]]
    assert found["replicate_not_timed"] == [[BAD, f"a replicate did not pass this cell ({statuses})"]]
    assert "1 not compared (not passed with positive warm samples in every run)" in found["summary"], found["summary"]
    text = _diff(*sides)
    assert f"  {BAD}: {statuses}" in text and f"  {BAD}: not compared: a replicate did not pass" in text, text
    assert text.index(statuses) < text.index("timing (")
    md = _diff(*sides, "--format", "md")
    assert "| statuses that differ between the runs of a side | 1 |" in md and statuses in md, md


@pytest.mark.parametrize("replicated", [True, False], ids=["replicates", "one-run-a-side"])
def test_a_cell_a_run_kept_no_warm_samples_of_is_named_alike_by_diff_and_compare(
    tmp_path: Path, replicated: bool
) -> None:
    """A run of the after side passed a cell and kept no warm samples of it (its timing line has
    no warm series). Before, with replicates: compare said 'a replicate did not pass this cell or
    kept no positive warm samples' (all had passed) and diff 'a replicate kept no warm timing of
    this cell'; with one run a side, compare said 'not measured: no warm samples on the
    candidate' and diff left the cell out of its timing list with no word at all. Both now give
    the judge's words (judge.comparison.untimed_words), naming the run."""
    cut = "b1-l16-contiguous-float32-compiled"

    def run(name: str, scale: float, seed: int, untimed: bool = False) -> Path:
        events = timing_log(name, scale=scale, seed=seed)
        if untimed:
            next(e for e in events if e["kind"] == "timing" and e.get("case") == cut)["warm"] = None
        return _log(tmp_path / name / "events.jsonl", events)

    if replicated:
        before = [run("b1", 1.0, 1), run("b2", 1.0, 2)]
        after = [run("a1", 1.3, 3), run("a2", 1.3, 4, untimed=True)]
        untimed = "a2"
    else:
        before, after, untimed = [run("b1", 1.0, 1)], [run("a1", 1.3, 3, untimed=True)], "a1"
    data = _compare(tmp_path, *_sides(before, after, "--baseline", "--candidate"))
    note = next(c["timing_note"] for c in data["cells"] if c["case"] == cut)
    assert note == f"not compared: no warm samples kept (candidate: {untimed})"
    assert data["geomean"]["cells"] == 3

    sides = _sides(before, after)
    found = json.loads(_diff(*sides, "--format", "json"))
    assert cut not in {t["case"] for t in found["timings"]}
    assert found["replicate_not_timed"] == [[cut, f"no warm samples kept (after: {untimed})"]]
    assert found["replicate_statuses"] == [] and found["geomean"]["cells"] == 3
    assert "1 not compared (not passed with positive warm samples in every run)" in found["summary"], found["summary"]
    text = _diff(*sides)
    assert f"  {cut}: not compared: no warm samples kept (after: {untimed})" in text, text
    md = _diff(*sides, "--format", "md")
    assert (
        "positive warm samples in every run, timing not compared (1)" in md
        and f"no warm samples kept (after: {untimed})" in md
    )


def test_a_zero_warm_sample_is_no_time_to_diff_as_to_compare(tmp_path: Path) -> None:
    """A run kept a warm sample of 0.0 s (the contract refuses a negative time, not a zero: a
    timer that could not resolve the call). Before: compare left the cell's timing out ('a warm
    sample is zero or negative, which is no time', naming no run), while diff gave it a ratio
    and called the zero a sign of instability. Both now leave it out in the judge's words,
    naming the run."""
    cut = "b1-l16-contiguous-float32-compiled"

    def run(name: str, scale: float, seed: int, zero: bool = False) -> Path:
        events = timing_log(name, scale=scale, seed=seed)
        if zero:
            timing = next(e for e in events if e["kind"] == "timing" and e.get("case") == cut)
            timing["warm"] = _warm([0.0 if i == 3 else s for i, s in enumerate(timing["warm"]["samples_s"])])
        return _log(tmp_path / name / "events.jsonl", events)

    before, after = [run("b1", 1.0, 1)], [run("a1", 1.3, 3, zero=True)]
    words = "a warm sample is zero or negative, which is no time (after: a1)"
    data = _compare(tmp_path, *_sides(before, after, "--baseline", "--candidate"))
    note = next(c["timing_note"] for c in data["cells"] if c["case"] == cut)
    assert note == "not compared: " + words.replace("after:", "candidate:")
    found = json.loads(_diff(*_sides(before, after), "--format", "json"))
    assert cut not in {t["case"] for t in found["timings"]}
    assert found["replicate_not_timed"] == [[cut, words]]
    assert found["geomean"]["cells"] == data["geomean"]["cells"] == 3
    # The summary does not say the cell failed to pass: it passed, with a sample that is no time.
    assert "1 not compared (not passed with positive warm samples in every run)" in found["summary"]


def test_a_generation_cell_a_replicate_kept_no_timing_of_is_named_by_both(tmp_path: Path) -> None:
    """The after side's second run logged one generation cell without its timing. Before: diff
    left both of its series out of the timing list with no word, and compare said only 'not
    measured: no warm samples on the baseline and candidate' (a generation cell has none)."""
    untimed = "b1-l96-contiguous-float32-eager"

    def run(name: str, scale: float, seed: int, drop: bool = False) -> Path:
        events = generation_timing_log(name, scale=scale, seed=seed)
        if drop:
            next(e for e in events if e["kind"] == "generation" and e["case"] == untimed).pop("timing")
        return _log(tmp_path / name / "events.jsonl", events)

    before = [run("b1", 1.0, 1), run("b2", 1.0, 2)]
    after = [run("a1", 1.2, 3), run("a2", 1.2, 4, drop=True)]
    data = _compare(tmp_path, *_sides(before, after, "--baseline", "--candidate"))
    note = next(c["timing_note"] for c in data["cells"] if c["case"] == untimed)
    assert note == "not compared: no generation timing kept (candidate: a2)"

    sides = _sides(before, after)
    found = json.loads(_diff(*sides, "--format", "json"))
    assert untimed not in {t["case"] for t in found["timings"]}
    assert found["replicate_not_timed"] == [
        [f"{untimed} (first token, warm)", "no generation timing kept (after: a2)"],
        [f"{untimed} (decode per token)", "no generation timing kept (after: a2)"],
    ]
    # The two series are not pooled; each has 3 ratios, the untimed cell's left out of both.
    assert found["geomean"] is None and data["geomean"] is None
    assert (
        found["geomean_unpooled"] == data["geomean_unpooled"] and found["geomean_unpooled"].count("over 3 ratios") == 2
    )


def test_replicates_whose_timing_decides_nothing_show_the_same_medians_and_ratio_in_both(tmp_path: Path) -> None:
    """Three runs a side, the after side's series bimodal. Before: diff gave each side the
    median of its runs' medians (1.096 ms -> 2.375 ms, 2.17x) and compare its first run's
    (1.002 ms -> 2.375 ms, 2.37x), for the same cell of the same logs. Both now give diff's."""

    def run(name: str, scale: float, seed: int, unsteady: bool) -> Path:
        events = timing_log(name, scale=scale, seed=seed)
        if unsteady:
            _unstable(events)
        return _log(tmp_path / name / "events.jsonl", events)

    before = [run("b1", 1.0, 1, False), run("b2", 1.1, 2, False), run("b3", 1.3, 5, False)]
    after = [run("a1", 1.2, 3, True), run("a2", 1.6, 4, True), run("a3", 0.9, 6, True)]
    found = {t["case"]: t for t in json.loads(_diff(*_sides(before, after), "--format", "json"))["timings"]}
    cells = {c["case"]: c for c in _compare(tmp_path, *_sides(before, after, "--baseline", "--candidate"))["cells"]}
    assert set(found) == set(cells) and len(found) == 4
    for case, cell in cells.items():
        timing = cell["timing"]
        assert timing["verdict"] == "unstable timing" and timing["warm"]["low"] is None
        assert timing["medians"] == pytest.approx([found[case]["before_s"], found[case]["after_s"]], rel=1e-12)
        assert timing["warm"]["ratio"] == pytest.approx(found[case]["ratio"], rel=1e-5)
        assert timing["medians"][0] != cell["baseline"]["warm_median_s"], "the side's median, not its first run's"


def test_generation_replicates_show_the_same_series_medians_in_both(tmp_path: Path) -> None:
    """As for a cell's warm series, for each generation series: each side's median of its runs'
    medians (before, compare gave its first run's)."""

    def run(name: str, scale: float, seed: int, unsteady: bool) -> Path:
        events = generation_timing_log(name, scale=scale, seed=seed)
        if unsteady:
            for event in events:
                if event["kind"] == "generation" and event.get("timing"):
                    bimodal(event, "decode_token")
        return _log(tmp_path / name / "events.jsonl", events)

    before = [run("b1", 1.0, 1, False), run("b2", 1.1, 2, False), run("b3", 1.3, 5, False)]
    after = [run("a1", 1.2, 3, True), run("a2", 1.6, 4, True), run("a3", 0.9, 6, True)]
    found = {
        (t["case"], t["series"]): t
        for t in json.loads(_diff(*_sides(before, after), "--format", "json"))["timings"]
        if t["series"]
    }
    data = _compare(tmp_path, *_sides(before, after, "--baseline", "--candidate"))
    shown = {(c["case"], s["words"]): s for c in data["cells"] for s in c.get("generation") or ()}
    assert set(shown) == set(found) and len(found) == 8, (sorted(shown), sorted(found))
    for key, series in shown.items():
        assert [series["baseline_median_s"], series["candidate_median_s"]] == pytest.approx(
            [found[key]["before_s"], found[key]["after_s"]], rel=1e-12
        )
        assert series["warm"]["ratio"] == pytest.approx(found[key]["ratio"], rel=1e-5)


def test_compare_s_compiled_speedup_with_replicates_is_of_the_medians_it_shows(tmp_path: Path) -> None:
    """Baseline runs whose compiled cells ran 3.0, 3.3 and 3.5 times slower than the candidate's.
    Before, the speedup table gave the first run's eager/compiled ratio beside a timing table
    whose side medians gave another: now it is the ratio of the side medians shown (each side's
    geometric mean of its runs' medians). Runs that disagree (one of three at 1x, two at 3x)
    leave the side's speedup undecided."""

    def run(name: str, seed: int, slow_compiled: float) -> Path:
        events = timing_log(name, seed=seed)
        for event in events:
            if event["kind"] == "timing" and event["case"].endswith("compiled"):
                event["warm"] = scaled_warm(event["warm"], slow_compiled)
        return _log(tmp_path / name / "events.jsonl", events)

    before = [run("b1", 1, 3.0), run("b2", 2, 3.5), run("b3", 3, 3.3)]
    after = [run("a1", 4, 1.0), run("a2", 5, 1.0)]
    data = _compare(tmp_path, *_sides(before, after, "--baseline", "--candidate"))
    medians = {c["case"]: c["timing"]["medians"] for c in data["cells"]}
    assert len(data["speedups"]) == 2
    for speedup in data["speedups"]:
        b = speedup["shape"].strip("()").replace(", ", "-l")
        eager, compiled = medians[f"b{b}-contiguous-float32-eager"], medians[f"b{b}-contiguous-float32-compiled"]
        assert speedup["baseline"] == pytest.approx(eager[0] / compiled[0], rel=1e-12)
        assert speedup["candidate"] == pytest.approx(eager[1] / compiled[1], rel=1e-12)
        assert speedup["baseline"] < 0.5 < 1 < speedup["candidate"]

    split = [run("s1", 6, 1.0), run("s2", 7, 3.0), run("s3", 8, 3.0)]
    data = _compare(tmp_path / "split", *_sides(split, after, "--baseline", "--candidate"))
    for speedup in data["speedups"]:
        assert speedup["baseline"] is None and speedup["candidate"] is not None
    for cell in data["cells"]:
        if cell["case"].endswith("compiled"):
            assert any("the runs disagree" in f and "(baseline, 3 runs)" in f for f in cell["timing"]["flags"])


def test_with_replicates_the_ratio_is_of_the_figures_shown_and_split_runs_decide_nothing(tmp_path: Path) -> None:
    """Before: diff showed each side's median of its runs' medians but built the ratio on their
    geometric mean, so 4 runs at 1x and 3 at 2x against 7 at 1x read '0.1562 ms -> 0.1555 ms
    (0.743x ...): faster', the ratio outside what the figures give. Now each side's figure is the
    geometric mean the ratio is built on, and a side whose runs disagree decides nothing."""

    def run(name: str, scale: float, seed: int) -> Path:
        return _log(tmp_path / name / "events.jsonl", timing_log(name, scale=scale, seed=seed))

    steady = [run(f"b{i}", 1.0 + 0.03 * i, i) for i in range(3)]
    after = [run(f"a{i}", 1.5 + 0.03 * i, 10 + i) for i in range(3)]
    for t in json.loads(_diff(*_sides(steady, after), "--format", "json"))["timings"]:
        assert t["ratio"] == pytest.approx(t["after_s"] / t["before_s"], rel=1e-5)
        assert t["low"] <= t["ratio"] <= t["high"] and t["verdict"] == "slower"

    split = [run(f"s{i}", 1.0 if i < 4 else 2.0, 20 + i) for i in range(7)]
    same = [run(f"q{i}", 1.0, 30 + i) for i in range(7)]
    text = _diff(*_sides(split, same))
    timings = json.loads(_diff(*_sides(split, same), "--format", "json"))["timings"]
    assert timings and all(t["verdict"] not in ("faster", "slower") for t in timings), timings
    assert all(any("the runs disagree" in f for f in t["flags"]) for t in timings)
    assert "0 faster, 0 slower" in text and "no verdict: unstable timing" in text
    cells = _compare(tmp_path, *_sides(split, same, "--baseline", "--candidate"))["cells"]
    assert all(c["timing"]["verdict"] == "unstable timing" for c in cells)


@pytest.mark.parametrize(
    ("region", "synchronized", "words"),
    [
        # A region other than the model call whose scope flags are the same (validate refuses a
        # scope that is not its region's): one full training step.
        (["training_step"], True, "training_step"),
        (["model_call"], False, "model_call, not synchronised"),
    ],
    ids=["another-region", "not-synchronised"],
)
def test_a_warm_clock_that_covered_other_stages_flags_the_ratio(
    tmp_path: Path, region: list[str], synchronized: bool, words: str
) -> None:
    """Two runs whose warm clocks covered different stages (the inputs' copy timed too), or one
    whose samples did not end on a device synchronisation, time different things, whatever
    their declared scope says: before, diff read the after run as 14 faster and compare as
    2x faster, with nothing named."""
    before_events, after_events = timing_log("model-call", seed=1), timing_log("other-region", scale=0.5, seed=2)
    for events, timed, synced in ((before_events, ["model_call"], True), (after_events, region, synchronized)):
        for event in events:
            if event["kind"] == "timing":
                event.update(timed_region=timed, synchronized=synced)
    before = _log(tmp_path / "before" / "events.jsonl", before_events)
    after = _log(tmp_path / "after" / "events.jsonl", after_events)
    text = _diff(str(before), str(after))
    assert "0 faster, 0 slower" in text and f"different timed region (before: model_call; after: {words})" in text, text
    data = _compare(tmp_path, str(before), str(after))
    flag = f"different timed region (baseline: model_call; candidate: {words})"
    timings = [cell["timing"] for cell in data["cells"]]
    assert timings and all(flag in timing["flags"] for timing in timings), timings


def test_a_mean_of_first_token_ratios_alone_says_so(tmp_path: Path) -> None:
    """Every decode series unstable, every first-token series stable: the headline's geometric
    mean was of first-token ratios alone and read as the request's ('1.25x faster over 13
    ratios'), though a request's decode time, the larger part, decided nothing."""
    before = _log(tmp_path / "a" / "events.jsonl", generation_timing_log("steady", seed=1))
    events = generation_timing_log("decode-unsteady", scale=0.8, seed=2)
    for event in events:
        if event["kind"] == "generation" and event.get("timing"):
            bimodal(event, "decode_token")
    after = _log(tmp_path / "b" / "events.jsonl", events)
    text = _diff(str(before), str(after))
    (line,) = [line for line in text.splitlines() if line.startswith("geometric mean:")]
    assert line.removesuffix(", within-run sampling only").endswith("ratios of first token, warm only"), line
    data = _compare(tmp_path, str(before), str(after))
    assert data["geomean"]["quantity"] == "first token, warm"


def test_compare_gives_no_ratio_of_a_cache_hit_to_a_miss_nor_of_an_eager_call_in_another_process(
    tmp_path: Path,
) -> None:
    """The shipped CPU-vs-H200 comparison divided a CPU compile that hit a cache by an H200
    compile from scratch ('1.22x (3.517 s -> 4.29 s)'), and an eager first call inside a running
    process by one in a fresh process ('1.2x'), with no word of either."""
    before = timing_log("fresh", seed=1)
    after = timing_log("warm-cache", seed=2)
    for event in after:
        if event["kind"] == "compile":
            event.update(cache_condition="persistent_cache", cache_hits=1, cache_misses=0)
        if event["kind"] == "timing" and event["case"].endswith("eager"):
            event["cold"]["fresh_process"] = False
    data = _compare(
        tmp_path, str(_log(tmp_path / "a" / "events.jsonl", before)), str(_log(tmp_path / "b" / "events.jsonl", after))
    )
    compiled = [c for c in data["cells"] if c["mode"] == "compiled" and c["timing"]]
    eager = [c for c in data["cells"] if c["mode"] == "eager" and c["timing"]]
    assert compiled and all(c["timing"]["compile_ratio"] is None for c in compiled)
    assert eager and all(
        c["timing"]["cold_note"].startswith("not compared: the baseline's first call in a fresh process") for c in eager
    )


def test_a_ratio_against_a_log_that_did_not_record_its_timed_region_decides_nothing(tmp_path: Path) -> None:
    """The sample history read '2.74x slower' from a log that recorded neither what its warm
    clock covered nor the host around it, against one that did."""
    before = timing_log("no-region", seed=1)  # a collector before schema 1.1 recorded no timed_region
    after = timing_log("region", scale=2.0, seed=2)
    for event in after:
        if event["kind"] == "timing":
            event["timed_region"] = ["model_call"]
    text = _diff(str(_log(tmp_path / "a" / "events.jsonl", before)), str(_log(tmp_path / "b" / "events.jsonl", after)))
    assert "0 faster, 0 slower" in text and "timed region not recorded on the before" in text


def _edited(log: Path, edit: Any) -> Path:
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    for event in events:
        edit(event)
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return log


def test_compare_of_two_runs_on_one_backend_flags_a_machine_recorded_differently_as_diff_does(
    tmp_path: Path,
) -> None:
    """compare left a device name or CPU count recorded differently unflagged (two targets are
    other machines by design), so on one backend it called 2x 'slower' where diff of the same two
    logs flagged every ratio 'machine recorded differently'."""
    from tests.test_contention import _timing_log

    def other_machine(event: dict[str, Any]) -> None:
        if event["kind"] == "environment":
            event["device"]["device_name"] = {"value": "Another CPU model", "source": "synthetic fixture"}
        if event["kind"] == "timing" and event.get("warm"):
            event["warm"] = scaled_warm(event["warm"], 2.0)

    before = _timing_log(tmp_path, "before", "0.001000", "run-before")
    after = _edited(_timing_log(tmp_path, "after", "0.001000", "run-after", seed=1), other_machine)
    done = CliRunner().invoke(main, ["diff", str(before), str(after), "--format", "json"])
    assert done.exit_code == 0, done.output
    diffed = json.loads(done.output)
    assert diffed["timings"] and all("machine recorded differently" in " ".join(t["flags"]) for t in diffed["timings"])
    out = tmp_path / "cmp"
    done = CliRunner().invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "json"])
    assert done.exit_code == 0, done.output
    compared = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    timed = [c["timing"] for c in compared["cells"] if c["timing"]]
    assert timed and all(any("machine recorded differently" in f for f in t["flags"]) for t in timed)
    assert not any(t["in_geomean"] for t in timed) and compared["geomean"] is None


def test_a_side_s_host_readings_are_named_whatever_the_order_of_its_runs(tmp_path: Path) -> None:
    """With replicates, diff and compare named the host of each side's first run only: a busy or
    an unrecorded replicate listed second read 'host changes: 0', listed first it was named."""
    from tests.test_contention import _timing_log

    befores = [_timing_log(tmp_path, f"b{n}", "0.001000", f"run-b{n}", seed=n) for n in range(2)]
    quiet, busy = (
        _timing_log(tmp_path, name, wait, f"run-{name}", seed=seed)
        for name, wait, seed in (("q", "0.001000", 5), ("w", "0.500000", 6))
    )
    hosts = []
    for afters in ([quiet, busy], [busy, quiet]):
        args = [
            "diff",
            *(a for b in befores for a in ("--before", str(b))),
            *(a for b in afters for a in ("--after", str(b))),
            "--format",
            "json",
        ]
        done = CliRunner().invoke(main, args)
        assert done.exit_code == 0, done.output
        hosts.append({tuple(change) for change in json.loads(done.output)["host"]})
    assert hosts[0] == hosts[1]
    (wait,) = [(key, a, b) for key, a, b in hosts[0] if key.startswith("time the threads waited")]
    assert "0.500 to 0.500 s (run-w)" in wait[2] and "(run-q)" in wait[2], wait


def test_an_owner_s_verdict_that_turns_the_disposition_is_named_before_it(tmp_path: Path) -> None:
    """The same mismatch in both runs, accepted in the annotations beside the later one only: diff
    said 0 of every change and then 'disposition: blocked -> suitable', as if the run had got
    better. The cell whose verdict changed is named before the disposition line, in text,
    Markdown, JSON and on the workload's history page."""
    from tests.logbuilder import case_key, mismatch_log, with_envelope

    case = case_key(2, 16, "compiled")
    logs = []
    for name in ("before", "after"):
        events = mismatch_log()
        events[0].update(run_id=f"run-{name}", started_at=f"2026-01-0{len(logs) + 1}T00:00:00Z")
        log = tmp_path / "runs" / name / "events.jsonl"
        log.parent.mkdir(parents=True)
        log.write_text(dumps(with_envelope(events)), encoding="utf-8")
        logs.append(log)
    (logs[1].parent / "annotations.toml").write_text(
        f'[{case}]\nexplanation = "checked by hand"\nverdict = "accepted"\nreason = "within what the service needs"\n',
        encoding="utf-8",
    )
    text = CliRunner().invoke(main, ["diff", str(logs[0]), str(logs[1])])
    assert text.exit_code == 0, text.output
    said = text.output.index("status the same, said differently")
    assert said < text.output.index("disposition: blocked -> suitable")
    assert (
        f"  {case}: mismatch in outputs, task metric, not explained -> mismatch in outputs, task metric, accepted"
        in text.output
    )
    md = CliRunner().invoke(main, ["diff", str(logs[0]), str(logs[1]), "--format", "md"]).output
    assert md.index("Status the same, said differently") < md.index("**Disposition:**")
    data = json.loads(CliRunner().invoke(main, ["diff", str(logs[0]), str(logs[1]), "--format", "json"]).output)
    assert data["restated"] == [
        [case, "mismatch in outputs, task metric, not explained", "mismatch in outputs, task metric, accepted"]
    ]
    out = tmp_path / "site"
    done = CliRunner().invoke(main, ["site", str(tmp_path / "runs"), "--out", str(out)])
    assert done.exit_code == 0, done.output
    (page,) = (out / "workloads").glob("*/index.html")
    html = page.read_text(encoding="utf-8")
    assert html.index("Status the same, said differently") < html.index("Disposition:")


def test_one_slow_replicate_does_not_make_the_geometric_mean_slower_than_any_cell_can_say(tmp_path: Path) -> None:
    """Three runs a side at one speed, but one after-run 15% slower in every cell (within the
    runs-disagree limit): the cells read 'no clear difference' (or one barely 'slower'), yet the
    geometric mean read
    '1.05x slower (1.03x to 1.07x)', its interval narrowed by the number of cells as if a slow run
    were slow in one cell only. A run is slow in every cell: the mean is no surer than its cells."""
    from reportgen.judge.intervals import RatioInterval, geometric_mean

    logs: dict[str, list[Path]] = {"before": [], "after": []}
    for n, (side, scale) in enumerate(
        (("before", 1.0), ("before", 1.0), ("before", 1.0), ("after", 1.0), ("after", 1.0), ("after", 1.15))
    ):
        events = timing_log(f"run-{n}", scale=scale, seed=n)
        events[0]["started_at"] = f"2026-01-0{n + 1}T00:00:00Z"
        log = tmp_path / f"r{n}" / "events.jsonl"
        log.parent.mkdir()
        log.write_text(dumps(events), encoding="utf-8")
        logs[side].append(log)
    args = [a for side, found in logs.items() for log in found for a in (f"--{side}", str(log))]
    data = json.loads(CliRunner().invoke(main, ["diff", *args, "--format", "json"]).output)
    assert any(t["verdict"] == "no clear difference" for t in data["timings"])
    geomean = data["geomean"]
    assert geomean["runs"] == [3, 3] and geomean["low"] < 1 < geomean["high"], geomean
    # One run a side: each cell's error is its own run's sampling, and the cells' errors still
    # add in quadrature (four cells of equal error: half the width of one).
    one = [RatioInterval(1.0, math.exp(-0.1), math.exp(0.1), 30, 30) for _ in range(4)]
    geo = geometric_mean(one)
    assert geo is not None and geo.high is not None and math.isclose(math.log(geo.high), 0.05)
    replicated = geometric_mean([replace(r, runs=(3, 3)) for r in one])
    assert replicated is not None and replicated.high is not None and math.isclose(math.log(replicated.high), 0.1)
