"""The settings a warm loop ran under (torch threads, CPU affinity, CPU count, governor) are
compared cell by cell, and the diff gate says why a cell that passed before is untested.

Before: the host facts of a run were one string over its cells ('2 threads then 1'), so two runs
that each ran one cell on one thread, another cell in each, read 'no host change' and the cell
measured on fewer threads read 'slower', in the geometric mean and through `--fail-on worse`; a
thread count recorded unknown on both sides was not mentioned and every ratio kept its verdict;
and the gate said 'the later run did not select them' of cells an older log ran and could not
tell the layout of. Every log here is a synthetic fixture (tests/logbuilder.py) and says so.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.publish.diff import FLAGGED, diff_runs
from reportgen.publish.summary import RunSummary, summarize
from reportgen.render.report import judge_log
from tests.logbuilder import dumps, scaled_warm, timing_log

RUNNER = CliRunner()
SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"
TWO = "2 intra-op, 2 inter-op"
ONE = "1 intra-op, 1 inter-op"
# Each side runs one cell on one thread, after the cells on two: both runs' cells ran on '2 then 1'.
FEWER = "b2-l16-contiguous-float32-compiled"  # the before runs ran it on one thread
SLOWER = "b2-l16-contiguous-float32-eager"  # the after runs ran it on one thread, 1.8 times slower


def _fact(value: str | None) -> dict[str, Any]:
    if value is None:
        return {"value": None, "unknown_reason": "not readable (synthetic fixture)"}
    return {"value": value, "source": "synthetic fixture"}


def _log(
    tmp_path: Path,
    run_id: str,
    seed: int,
    threads: dict[str, str | None] | None = None,
    known: bool = True,
    load: str = "1.00",
    slower: str = "",
    governor: str | None = None,
) -> Path:
    """A synthetic run (logbuilder.timing_log) whose every warm loop recorded its host: two torch
    threads but where ``threads`` names another value for a cell; affinity and CPU count recorded
    (unknown where not ``known``); the governor unknown, as a VM hides it, unless ``governor``
    names it. ``slower``: a cell whose warm series is 1.8 times slower."""
    events = timing_log(run_id, seed=seed)
    events[0]["origin_note"] = "Synthetic fixture: per-cell host settings; not a measurement."
    for timing in (e for e in events if e["kind"] == "timing" and e.get("warm")):
        case = timing["case"]
        timing["host"] = {
            "load_avg_before": _fact(f"{load} 1.00 1.00"),
            "load_avg_after": _fact(f"{load} 1.00 1.00"),
            "cpu_count": _fact("2" if known else None),
            "cpu_affinity": _fact("2 CPUs: 0-1" if known else None),
            "torch_threads": _fact((threads or {}).get(case, TWO) if known else None),
            "cpu_governor": _fact(governor),
        }
        if case == slower:
            timing["warm"] = scaled_warm(timing["warm"], 1.8)
    path = tmp_path / run_id / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _mixed(tmp_path: Path, runs: int) -> tuple[list[Path], list[Path]]:
    """``runs`` replicates a side: before, FEWER on one thread; after, SLOWER on one thread (and slower)."""
    befores = [_log(tmp_path, f"mix-before-{i}", i, {FEWER: ONE}) for i in range(runs)]
    afters = [_log(tmp_path, f"mix-after-{i}", 10 + i, {SLOWER: ONE}, slower=SLOWER) for i in range(runs)]
    return befores, afters


def test_threads_changed_for_one_cell_flag_that_cell_and_keep_it_out_of_the_mean_and_the_gate(tmp_path: Path) -> None:
    befores, afters = _mixed(tmp_path, 3)
    sides = [[summarize(judge_log(p)) for p in side] for side in (befores, afters)]
    diff = diff_runs(*sides)
    by_case = {t.case: t for t in diff.timings}
    assert by_case[SLOWER].flags == [f"host changed: torch threads {TWO} -> {ONE}"]
    assert by_case[FEWER].flags == [f"host changed: torch threads {ONE} -> {TWO}"]
    assert by_case[SLOWER].verdict == FLAGGED and not by_case[SLOWER].in_geomean
    # The cells that ran on the same threads on both sides keep their verdicts.
    others = [t for case, t in by_case.items() if case not in (FEWER, SLOWER)]
    assert others and all(t.judged and t.in_geomean for t in others), others
    assert diff.geomean is not None and diff.geomean.ratios == len(others)
    # Both runs mix settings, each in another cell: named first, as a host change.
    (threads,) = [(a, b) for key, a, b in diff.host if key == "torch threads"]
    assert threads == (f"{TWO} (3 cells); {ONE} ({FEWER})", f"{TWO} (3 cells); {ONE} ({SLOWER})")
    assert diff.timing_unlike == []  # the change is not run-wide: the other cells are like-for-like
    # The site keeps summaries in its state: read back, they flag the same cells.
    kept = [[RunSummary.from_dict(json.loads(json.dumps(s.to_dict()))) for s in side] for side in sides]
    assert {t.case: t.flags for t in diff_runs(*kept).timings} == {t.case: t.flags for t in diff.timings}
    # The gate judges no slower cell among them: the one cell measured on fewer threads decides nothing.
    args = [
        "diff",
        *(x for p in befores for x in ("--before", str(p))),
        *(x for p in afters for x in ("--after", str(p))),
    ]
    result = RUNNER.invoke(main, [*args, "--fail-on", "worse"])
    assert result.exit_code == 0, result.output
    assert f"{SLOWER} 1.8" in result.stderr  # named as a timing that decides nothing whose median is higher


def test_compare_flags_the_cell_whose_threads_changed_in_its_details(tmp_path: Path) -> None:
    (before,), (after,) = _mixed(tmp_path, 1)
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "md,json"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    timing = {c["case"]: c["timing"] for c in data["cells"]}
    assert timing[SLOWER]["flags"] == [f"host changed: torch threads {TWO} -> {ONE}"]
    assert timing[SLOWER]["verdict"] == "flagged, not judged" and timing[SLOWER]["in_geomean"] is False
    assert all(not t["flags"] for case, t in timing.items() if case not in (FEWER, SLOWER))
    with (out / "compare-details.csv").open(encoding="utf-8", newline="") as stream:
        rows = {row["case"]: row for row in csv.DictReader(stream)}
    assert rows[SLOWER]["verdict"] == "flagged, not judged" and rows[SLOWER]["in_geomean"] == "False"
    assert f"torch threads {TWO} -> {ONE}" in rows[SLOWER]["flags"]
    assert any(key == "torch threads" for key, _, _ in (tuple(h) for h in data["host"]))


def test_threads_recorded_unknown_flag_every_ratio_and_an_unknown_governor_is_named_once(tmp_path: Path) -> None:
    # Threads, affinity and CPU count unknown on both sides: no ratio decides anything.
    before, after = _log(tmp_path, "unknown-before", 1, known=False), _log(tmp_path, "unknown-after", 2, known=False)
    diff = diff_runs(summarize(judge_log(before)), summarize(judge_log(after)))
    said = "torch threads, CPU affinity and CPU count not recorded on the before and after: not known to be the same"
    assert diff.timings and all(said in t.flags and not t.judged for t in diff.timings)
    assert diff.geomean is None
    assert "torch threads, CPU affinity, CPU count and CPU governor not recorded on either side" in diff.host_unknown
    # Unknown on one side only: its ratios are flagged all the same.
    known = _log(tmp_path, "known-before", 3)
    one_side = diff_runs(summarize(judge_log(known)), summarize(judge_log(after)))
    flag = "torch threads, CPU affinity and CPU count not recorded on the after: not known to be the same"
    assert one_side.timings and all(flag in t.flags for t in one_side.timings)
    # The governor, unknown on both sides (every CPU sample: a VM hides cpufreq), flags no ratio
    # and is named once, beside a load that changed.
    busier = _log(tmp_path, "busier-after", 4, load="3.00")
    governed = diff_runs(summarize(judge_log(known)), summarize(judge_log(busier)))
    assert ("load average (1 min) around the warm loops", "1.00 to 1.00", "3.00 to 3.00") in governed.host
    assert "CPU governor not recorded on either side: a governor change cannot be ruled out" in governed.host_unknown
    assert not any("governor" in f for t in governed.timings for f in t.flags)
    assert any(t.judged for t in governed.timings)
    # So do two real sample runs (schema 1.5 and 1.6, whose every loop recorded the governor unknown).
    real = RUNNER.invoke(
        main,
        [
            "diff",
            str(SAMPLES / "tiny-encoder-cpu-20261205T073819Z-87bab8"),
            str(SAMPLES / "tiny-encoder-cpu-20261205T124447Z-43ef64"),
        ],
    )
    assert real.exit_code == 0, real.output
    assert "; not known: CPU governor not recorded on either side: a governor change cannot be ruled out\n" in (
        real.output
    )
    assert "not known to be the same" not in real.output  # their threads, affinity and CPU count are recorded


def test_a_governor_read_on_one_side_only_flags_every_ratio_and_the_gate_does_not_gate_on_it(tmp_path: Path) -> None:
    # Unknown before (a VM hides cpufreq), read after: a governor change cannot be ruled out, so
    # the 1.8 times slower cell is no slowdown; before this, only threads, affinity and CPU count
    # flagged a ratio when unknown, and `--fail-on worse` gated on it.
    before = [_log(tmp_path, f"vm-before-{i}", i) for i in range(3)]
    after = [_log(tmp_path, f"read-after-{i}", 10 + i, slower=SLOWER, governor="powersave") for i in range(3)]
    diff = diff_runs([summarize(judge_log(p)) for p in before], [summarize(judge_log(p)) for p in after])
    flag = "CPU governor not recorded on the before: not known to be the same"
    assert diff.timings and all(flag in t.flags and not t.judged for t in diff.timings)
    argv = ["diff", "--fail-on", "worse"]
    argv += [x for p in before for x in ("--before", str(p.parent))] + [
        x for p in after for x in ("--after", str(p.parent))
    ]
    gated = RUNNER.invoke(main, argv)
    assert gated.exit_code == 0, gated.output
    assert "speed not gated" in gated.stderr and SLOWER in gated.stderr


def test_the_gate_gives_the_later_runs_own_reason_for_an_untested_cell_and_names_a_target_change() -> None:
    # The later log (schema 1.0) ran these cells and could not tell the layout they were fed.
    older = SAMPLES / "heat-solver-cpu-20261129T225430Z-4f1eea"
    result = RUNNER.invoke(
        main,
        ["diff", str(SAMPLES / "heat-solver-cpu-20261130T101309Z-ee0d40"), str(older), "--fail-on", "new-failures"],
    )
    assert result.exit_code == 3, result.output
    assert "5 cell(s) that passed before went untested (layout not measured in the later run)" in result.stderr
    assert "did not select them" not in result.stderr
    # Across targets the gate says what it gates: a change of target, a migration question.
    cpu, cuda = (
        SAMPLES / "tiny-encoder-cpu-20261129T225221Z-23a8e6",
        SAMPLES / "tiny-encoder-cuda-20261129T225259Z-866a85",
    )
    result = RUNNER.invoke(main, ["diff", str(cpu), str(cuda), "--fail-on", "worse"])
    assert result.exit_code == 3, result.output
    refused = next(line for line in result.stderr.splitlines() if "disposition suitable -> blocked" in line)
    assert refused.startswith(
        "reportgen diff: --fail-on worse: this diff gates a change of target (cpu -> cuda), not an upgrade on one target"
    )
    assert "did not select them" not in refused


def test_the_history_does_not_join_a_cell_across_a_run_that_ran_it_on_other_threads(tmp_path: Path) -> None:
    """The site's trend line of the cell that ran on one thread in the later run breaks there,
    and its point says why; the other cells stay joined. Before, only a run-wide change broke it."""
    from reportgen.publish.site import _target_history

    befores, afters = _mixed(tmp_path, 1)
    later = afters[0].read_text(encoding="utf-8").replace("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", 1)
    afters[0].write_text(later, encoding="utf-8")  # the later run starts a day later: the history's order
    runs = [summarize(judge_log(p)) for p in (*befores, *afters)]
    assert runs[0].started_at < runs[1].started_at
    history = _target_history("cpu", runs, (SLOWER, FEWER))  # named, as a site configuration names a cell
    assert history["key_cases"][:2] == [SLOWER, FEWER] and len(history["key_cases"]) > 2, history["key_cases"]
    warm = next(f for f in history["figures"] if f.id.endswith("-trend-warm"))
    for n, series in enumerate(warm.chart.series):  # one series a key case, in their order
        alone = n < 2  # SLOWER and FEWER ran on other threads in one of the two runs
        assert (not series.lines) == alone, (series.name, [len(line) for line in series.lines])
        if alone:
            last = max(series.points, key=lambda p: p.x)
            assert "not joined to the run before it (host changed: torch threads" in last.title, last.title
