"""A warm loop fed another layout than its cell's (the timing event's layout_achieved false) is
not the cell's timing. The run's report flagged it in its row, but diff, compare, the gate and
the site's trend read its figure as the cell's speed (outside review of comparisons, finding 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.publish.diff import FLAGGED, diff_runs
from reportgen.publish.frame import history_frame
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from tests.logbuilder import _cells, dumps, scaled_warm, timing_log

RUNNER = CliRunner()
CASE_WORD = "another layout than the cell's"


def _run(
    tmp_path: Path,
    name: str,
    day: int,
    slower: float = 1.0,
    missed: tuple[str, ...] = (),
    slowed: tuple[str, ...] | None = None,
) -> Path:
    """A synthetic timing run; ``missed`` cells' warm loops were fed another layout, and its
    ``slowed`` cells (None: all) are ``slower`` times slower."""
    events: list[dict[str, Any]] = timing_log(f"synthetic-{name}", seed=day)
    events[0]["started_at"] = f"2026-01-0{day}T00:00:00Z"
    for timing in _cells(events, "timing"):
        if slowed is None or timing["case"] in slowed:
            timing["warm"] = scaled_warm(timing["warm"], slower)
        if timing["case"] in missed:
            timing["layout_achieved"] = False
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def replicate_args(head: list[str], befores: list[Path], afters: list[Path], flags: tuple[str, str]) -> list[str]:
    """``head`` then each run of a side after its flag (--before/--after, --baseline/--candidate)."""
    args = list(head)
    for flag, side in zip(flags, (befores, afters)):
        for path in side:
            args += [flag, str(path)]
    return args


def _cold_missed(tmp_path: Path, case: str) -> tuple[Path, Path]:
    """Two runs; the candidate's cold call of ``case`` was fed another layout."""
    base = _run(tmp_path, "base", 1)
    cand = _run(tmp_path, "cand", 2)
    events = [json.loads(line) for line in cand.read_text(encoding="utf-8").splitlines()]
    for event in events:
        if event["kind"] == "timing" and event.get("case") == case:
            event["cold"]["layout_achieved"] = False
    cand.write_text(dumps(events), encoding="utf-8")
    return base, cand


def _first_case(tmp_path: Path) -> str:
    return str(_cells(timing_log("synthetic-probe"), "timing")[0]["case"])


def test_diff_flags_a_warm_loop_fed_another_layout_and_the_gate_ignores_it(tmp_path: Path) -> None:
    case = _first_case(tmp_path)
    before = _run(tmp_path, "before", 1)
    after = _run(tmp_path, "after", 2, slower=1.5, missed=(case,))
    diff = diff_runs(summarize(judge_log(before)), summarize(judge_log(after)))
    (change,) = [t for t in diff.timings if t.case == case]
    assert change.verdict == FLAGGED and not change.in_geomean
    assert any(CASE_WORD in flag and "(after)" in flag for flag in change.flags), change.flags
    others = [t for t in diff.timings if t.case != case]
    assert others and all(t.judged for t in others)  # the other cells are judged as before


def test_replicates_whose_only_slowdown_has_a_loop_fed_another_layout_do_not_gate(tmp_path: Path) -> None:
    """Three runs a side; in each after run one cell ran 1.5x slower, in one of them on another
    layout: that replicate's samples are in the interval, so the ratio is not the cell's speed.
    Without the flag the gate read a slowdown (exit 3)."""
    case = _first_case(tmp_path)
    befores = [_run(tmp_path, f"b{i}", i) for i in (1, 2, 3)]
    afters = [
        _run(tmp_path, "a1", 4, 1.5, slowed=(case,)),
        _run(tmp_path, "a2", 5, 1.5, missed=(case,), slowed=(case,)),
        _run(tmp_path, "a3", 6, 1.5, slowed=(case,)),
    ]
    result = RUNNER.invoke(
        main, replicate_args(["diff", "--fail-on", "worse"], befores, afters, ("--before", "--after"))
    )
    assert f"{CASE_WORD} (after replicate synthetic-a2)" in result.output, result.output
    assert result.exit_code == 0, result.output


def test_compare_flags_it_on_the_side_whose_loop_missed_its_layout(tmp_path: Path) -> None:
    case = _first_case(tmp_path)
    base = _run(tmp_path, "base", 1)
    cand = _run(tmp_path, "cand", 2, slower=0.5, missed=(case,))
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(base), str(cand), "--out", str(out), "--format", "md"])
    assert result.exit_code == 0, result.output
    row = next(
        line
        for line in (out / "compare.md").read_text(encoding="utf-8").splitlines()
        if line.startswith(f"| {case} | ") and " ms | " in line
    )
    assert f"{CASE_WORD} on the candidate" in row, row


def test_the_trend_names_the_warm_point_fed_another_layout(tmp_path: Path) -> None:
    case = _first_case(tmp_path)
    logs = [_run(tmp_path, "one", 1), _run(tmp_path, "two", 2, missed=(case,))]
    frame = history_frame([summarize(judge_log(log)) for log in logs])
    caveats = {(r.run_id, r.case): r.caveats for r in frame.itertuples()}
    assert "warm loop fed another layout than the cell's" in caveats[("synthetic-two", case)]
    assert "another layout" not in caveats[("synthetic-one", case)]


def test_compare_takes_no_ratio_of_a_cold_call_fed_another_layout(tmp_path: Path) -> None:
    """A cold first call fed another layout was compared as the cell's first call."""
    case = _first_case(tmp_path)
    base, cand = _cold_missed(tmp_path, case)
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(base), str(cand), "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    (cell,) = [c for c in json.loads((out / "compare.json").read_text(encoding="utf-8"))["cells"] if c["case"] == case]
    assert cell["timing"]["cold_ratio"] is None
    assert (
        cell["timing"]["cold_note"] == "not compared: the cold call fed another layout than the cell's on the candidate"
    )
    assert not any("another layout" in f for f in cell["timing"]["flags"])  # the warm loop was the cell's


def test_compiled_over_eager_takes_no_speedup_of_a_loop_fed_another_layout(tmp_path: Path) -> None:
    """The timing row was flagged, but the 'compiled over eager' table still gave the speedup of
    the eager loop fed another layout (second review of this round, finding 1)."""
    eager = _first_case(tmp_path)
    assert eager.endswith("-eager")
    base = _run(tmp_path, "base", 1)
    cand = _run(tmp_path, "cand", 2, missed=(eager,))
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(base), str(cand), "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    speedups = json.loads((out / "compare.json").read_text(encoding="utf-8"))["speedups"]
    shape = next(s for s in speedups if s["candidate_flag"] is not None)
    assert shape["candidate"] is None and CASE_WORD in shape["candidate_flag"]
    assert shape["baseline"] is not None and shape["baseline_flag"] is None


def test_a_cold_call_fed_another_layout_is_no_compile_figure_of_its_side(tmp_path: Path) -> None:
    """The headline's compile + first result median counted a cold call fed another layout
    (second review of this round, finding 2)."""
    from reportgen.judge.comparison import _empty_cache_colds
    from reportgen.render.compare import gather

    base, cand = _cold_missed(tmp_path, "b1-l16-contiguous-float32-compiled")
    comparison = gather(base, cand)
    assert sorted(_empty_cache_colds(comparison.cells, "baseline")) == [4.5, 5.5]
    assert _empty_cache_colds(comparison.cells, "candidate") == [5.5]


def test_the_exports_say_which_timed_calls_were_fed_another_layout(tmp_path: Path) -> None:
    """details.csv, the site's index.parquet and the notebook frame said 'stable' beside a warm
    loop fed another layout, with no column to filter it out (second review of this round,
    finding 3)."""
    import csv

    import pyarrow.parquet as pq

    from reportgen.publish.frame import load_cells

    case = _first_case(tmp_path)
    runs = tmp_path / "runs"
    log = _run(runs, "missed", 1, missed=(case,))
    out = tmp_path / "report"
    assert RUNNER.invoke(main, ["report", str(log), "--out", str(out), "--format", "md"]).exit_code == 0
    with (out / "details.csv").open(encoding="utf-8", newline="") as handle:
        rows = {row["case"]: row for row in csv.DictReader(handle)}
    assert rows[case]["timing_layout_missed"] == "warm" and rows[case]["warm_stability"] == "stable"
    assert {row["timing_layout_missed"] for c, row in rows.items() if c != case} == {""}
    site = tmp_path / "site"
    assert RUNNER.invoke(main, ["site", str(runs), "--out", str(site)]).exit_code == 0
    index = pq.read_table(site / "index.parquet").to_pylist()
    assert {r["cell"]: r["timing_layout_missed"] for r in index}[case] == "warm"
    assert [r["timing_layout_missed"] for r in index if r["cell"] != case] == [None] * (len(index) - 1)
    frame = load_cells([log])
    assert dict(zip(frame["case"], frame["timing_layout_missed"]))[case] == "warm"
