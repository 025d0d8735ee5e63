"""A generation cell's warm series (time to first token, decode per token) are judged as a warm
series is: flagged on the run page when the classifier does not call them stable, and compared
by `reportgen compare` and `reportgen diff` as ratios under the rules of a cell's warm ratio.
Read from synthetic generation logs (tests/logbuilder.py)."""

from __future__ import annotations

import re

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.publish.diff import diff_runs
from reportgen.publish.summary import summarize
from reportgen.render.report import build_report, judge_log
from tests.logbuilder import bimodal, dumps, generation_timing_log, planned_repetitions, scaled_warm, tokens_per_s

RUNNER = CliRunner()
CASE = "b1-l96-contiguous-float32-eager"
SERIES = ("ttft_warm", "decode_token")


def _log(path: Path, events: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _generation(events: list[dict[str, Any]], case: str) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == "generation" and e["case"] == case)


def _pair(tmp_path: Path, unsteady: str | None = None) -> tuple[Path, Path]:
    """Two generation runs, the after one 1.2x slower; ``unsteady``: a series of CASE drawn
    bimodal in the after run."""
    before = _log(tmp_path / "a" / "events.jsonl", generation_timing_log("before", seed=1))
    events = generation_timing_log("after", scale=1.2, seed=2)
    if unsteady:
        bimodal(_generation(events, CASE), unsteady)
    return before, _log(tmp_path / "b" / "events.jsonl", events)


def _compare(tmp_path: Path, before: Path, after: Path) -> tuple[dict[str, Any], str, str]:
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "html,md,json"])
    assert result.exit_code == 0, result.output
    return (
        json.loads((out / "compare.json").read_text(encoding="utf-8")),
        (out / "compare.html").read_text(encoding="utf-8"),
        (out / "compare.md").read_text(encoding="utf-8"),
    )


def _series_verdicts(data: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["case"], s["words"]): s for c in data["cells"] for s in c.get("generation", [])}


def test_a_bimodal_decode_series_is_flagged_on_the_run_page(tmp_path: Path) -> None:
    """Before: the row read '2 ms median, 4 ms p90 per token' like any other, with no flag."""
    events = generation_timing_log("bimodal-decode")
    bimodal(_generation(events, CASE), "decode_token")
    log = _log(tmp_path / "events.jsonl", events)
    rows = {r.case: r for r in judge_log(log).view.generation}
    assert "≋ unstable timing: two modes" in rows[CASE].decode, rows[CASE].decode
    assert "unstable" not in rows[CASE].ttft_warm and "not classified" not in rows[CASE].ttft_warm
    short = generation_timing_log("short")
    planned_repetitions(short, 3)  # too few to classify: the run planned 3 warm repetitions
    short_rows = {r.case: r for r in judge_log(_log(tmp_path / "short" / "events.jsonl", short)).view.generation}
    assert "not classified: 3 sample(s)" in short_rows["b1-l240-contiguous-float32-eager"].ttft_warm
    steady = rows["b1-l96-contiguous-float32-compiled"]
    assert "unstable" not in steady.decode + steady.ttft_warm and "classified" not in steady.decode + steady.ttft_warm
    build_report(log, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    table = html[html.index('<table class="generation">') :].split("</table>")[0]
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    section = md[md.index("### Generation per bucket") :].split("\n\n|", 1)[1]
    for row in (
        next(r for r in table.split("<tr>") if f"<code>{CASE}</code>" in r),
        next(r for r in section.splitlines() if f"`{CASE}`" in r),
    ):
        assert "per token; ≋ unstable timing: two modes" in row, row


def test_a_generation_series_that_decides_nothing_is_counted_in_the_disposition(tmp_path: Path) -> None:
    """Before: a run whose decode series was bimodal had the flag in its table only; the
    headline and the disposition's notes counted timed cells alone, so its performance read as
    decided. One series bimodal and one too short to classify: both are counted, a steady
    run's headline says nothing of it."""
    steady = judge_log(_log(tmp_path / "steady" / "events.jsonl", generation_timing_log("steady")))
    assert "generation series" not in steady.disposition.headline
    assert not [r for r in steady.disposition.reasons if r.rule == "timing-stability"]
    events = generation_timing_log("bimodal-decode")
    bimodal(_generation(events, CASE), "decode_token")
    bimodal(_generation(events, "b1-l240-contiguous-float32-eager"), "ttft_warm")
    judged = judge_log(_log(tmp_path / "mixed" / "events.jsonl", events))
    total = 2 * sum(1 for e in events if e["kind"] == "generation" and e.get("timing"))
    assert f"performance undecided for 2 of {total} generation series" in judged.disposition.headline
    (note,) = [r for r in judged.disposition.reasons if r.rule == "timing-stability"]
    assert note.message.startswith(f"2 of {total} generation series (time to first token or decode per token)")
    assert set(note.cases) == {CASE, "b1-l240-contiguous-float32-eager"}
    # Series too short to classify (the run planned 3 warm repetitions: 3 times to first token
    # per cell; the decode series keep 3 repetitions' steps) are counted too.
    short = generation_timing_log("short")
    planned_repetitions(short, 3)
    judged = judge_log(_log(tmp_path / "short" / "events.jsonl", short))
    # Three repetitions are too few to classify the decode series' repetitions either (tokens/s is
    # read from them), so both series of each cell decide nothing, as diff and the exports say.
    assert f"performance undecided for {total} of {total} generation series" in judged.disposition.headline
    assert "generation series (time to first token or decode per token), not classified" in judged.disposition.headline


def test_the_exports_carry_each_generation_series_median_and_its_stability(tmp_path: Path) -> None:
    """load_cells and the site's index.parquet had warm_stability for timed cells only: a
    generation cell's series, flagged on its page, were in neither export."""
    import pyarrow.parquet as pq

    import reportgen
    from reportgen.publish.site import build_site

    events = generation_timing_log("exports")
    bimodal(_generation(events, CASE), "decode_token")
    _log(tmp_path / "runs" / "gen" / "events.jsonl", events)
    timings = {e["case"]: e["timing"] for e in events if e["kind"] == "generation" and e.get("timing")}
    build_site([tmp_path / "runs"], tmp_path / "site")
    index = {r["cell"]: r for r in pq.read_table(tmp_path / "site" / "index.parquet").to_pylist()}
    frame = reportgen.load_cells([tmp_path / "runs"]).set_index("case")
    for case, timing in timings.items():
        for prefix, series in (("first_token", "ttft_warm"), ("decode_token", "decode_token")):
            expected = "unstable" if (case, series) == (CASE, "decode_token") else "stable"
            for row in (index[case], frame.loc[case]):
                assert row[f"{prefix}_median_s"] == pytest.approx(timing[series]["median_s"], rel=1e-12)
                assert row[f"{prefix}_stability"] == expected, (case, series)
    others = [case for case in index if case not in timings]
    assert others and all(index[c]["decode_token_stability"] is None for c in others)
    assert frame.loc[others].first_token_median_s.isna().all()


def test_compare_of_two_generation_logs_gives_both_ratios_after_what_changed(tmp_path: Path) -> None:
    """Before: every generation cell was 'not measured: no warm samples on the baseline and
    candidate' and the headline said 'no timing comparable'."""
    before = _log(tmp_path / "a" / "events.jsonl", generation_timing_log("before", seed=1))
    events = generation_timing_log("after", scale=1.2, seed=2)
    next(e for e in events if e["kind"] == "environment")["versions"]["torch"] = {
        "value": "2.14.0",
        "source": "fixture",
    }
    next(e for e in events if e["kind"] == "workload_reads")["packages"]["torch"] = "2.14.0"  # the same install
    after = _log(tmp_path / "b" / "events.jsonl", events)
    data, html, md = _compare(tmp_path, before, after)
    verdicts = _series_verdicts(data)
    passing = [c["case"] for c in data["cells"] if c["baseline"]["status"] == c["candidate"]["status"] == "pass"]
    assert len(passing) == 4
    assert set(verdicts) == {(c, w) for c in passing for w in ("first token, warm", "decode per token")}
    for (case, words), series in verdicts.items():
        assert series["verdict"] == "slower" and series["in_geomean"], (case, words, series)
        assert series["warm"]["low"] > 1.1 and series["warm"]["high"] < 1.3
    # Two quantities are not averaged into one figure: each series has its own mean.
    assert data["verdict_counts"]["slower"] == 8 and data["geomean"] is None
    unpooled = data["geomean_unpooled"]
    assert unpooled.startswith("not pooled, the ratios being of different quantities; each: decode per token ")
    # Each with its interval (before: a direction word alone, no interval on any surface).
    assert re.search(r"slower over 4 ratios, 95% interval [0-9.]+x to [0-9.]+x slower; first token, warm ", unpooled)
    assert re.search(r"slower over 4 ratios, 95% interval [0-9.]+x to [0-9.]+x slower$", unpooled), unpooled
    assert data["headline"].index("1 version change") < data["headline"].index("geometric mean not pooled")
    assert "not measured: no warm samples" not in html + md
    for text in (html, md):
        section = text[text.index("Generation: time to first token and decode per token") :]
        assert "first token, warm" in section and "decode per token" in section and "slower" in section


def test_an_unstable_side_flags_the_generation_ratio_and_leaves_it_out_of_the_tally(tmp_path: Path) -> None:
    before, after = _pair(tmp_path, "decode_token")
    data, html, md = _compare(tmp_path, before, after)
    verdicts = _series_verdicts(data)
    flagged = verdicts[(CASE, "decode per token")]
    assert flagged["verdict"] == "unstable timing" and not flagged["in_geomean"]
    assert any(f.startswith("unstable timing: ") and f.endswith("on the candidate") for f in flagged["flags"])
    assert verdicts[(CASE, "first token, warm")]["verdict"] == "slower", "the other series still decides"
    assert data["verdict_counts"]["slower"] == 7 and data["verdict_counts"]["unstable timing"] == 1
    assert data["geomean"] is None and data["unstable_cells"] == [CASE]
    assert "first token, warm " in data["geomean_unpooled"] and "over 3 ratios" in data["geomean_unpooled"]
    # The cell's first-token ratio still counts: the cell is not left out of every verdict, its series is.
    assert "cell with unstable timing" not in data["headline"]
    assert (
        "1 generation series with unstable timing left out of every verdict (the other series of its cell is judged on its own)"
        in data["headline"]
    )
    row = next(line for line in md.splitlines() if line.startswith(f"| {CASE} | decode per token"))
    assert "≋ unstable timing" in row and "(left out of the geometric mean)" in row


def test_compare_details_csv_holds_each_generation_ratio_as_compare_json_does(tmp_path: Path) -> None:
    """compare-details.csv, 'every compared cell with every figure the pages show', had no
    generation ratio at all: a generation cell's row now carries both series, as the JSON does."""
    import csv

    before, after = _pair(tmp_path, "decode_token")
    data, _, _ = _compare(tmp_path, before, after)
    with (tmp_path / "cmp" / "compare-details.csv").open(encoding="utf-8", newline="") as stream:
        rows = {row["case"]: row for row in csv.DictReader(stream)}
    checked = 0
    for cell in data["cells"]:
        for series in cell.get("generation", []):
            prefix = "first_token" if series["series"] == "ttft_warm" else "decode_token"
            row = rows[cell["case"]]
            assert float(row[f"{prefix}_ratio"]) == pytest.approx(series["warm"]["ratio"], rel=1e-12)
            low = series["warm"]["low"]  # None for a series that decides nothing: it has no interval
            assert (
                (row[f"{prefix}_interval_low"] == "")
                if low is None
                else float(row[f"{prefix}_interval_low"]) == pytest.approx(low, rel=1e-12)
            )
            assert float(row[f"{prefix}_baseline_median_s"]) == pytest.approx(series["baseline_median_s"], rel=1e-12)
            assert row[f"{prefix}_verdict"] == series["verdict"]
            assert row[f"{prefix}_in_geomean"] == str(series["in_geomean"])
            assert row[f"{prefix}_flags"] == "; ".join(series["flags"])
            checked += 1
    assert checked == 8
    assert rows[CASE]["decode_token_verdict"] == "unstable timing" and rows[CASE]["first_token_verdict"] == "slower"
    assert rows[CASE]["decode_token_in_geomean"] == "False"


def test_a_changed_generation_scope_flags_the_ratio(tmp_path: Path) -> None:
    before = _log(tmp_path / "a" / "events.jsonl", generation_timing_log("before", seed=1))
    events = generation_timing_log("after", scale=1.2, seed=2)
    _generation(events, CASE)["timing"]["scope"] = "the whole request: tokenising, padding and the copy to the device"
    after = _log(tmp_path / "b" / "events.jsonl", events)
    data, _, _ = _compare(tmp_path, before, after)
    verdicts = _series_verdicts(data)
    for words in ("first token, warm", "decode per token"):
        assert verdicts[(CASE, words)]["verdict"] == "flagged, not judged"
        assert "different timing scope" in verdicts[(CASE, words)]["flags"]
    assert data["verdict_counts"]["slower"] == 6 and data["geomean"] is None
    assert data["geomean_unpooled"].count("over 3 ratios") == 2
    diff = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    scoped = [t for t in diff["timings"] if t["case"] == CASE]
    assert len(scoped) == 2 and all(t["verdict"] == "no verdict: flagged" for t in scoped)
    assert all(any(f.startswith("different timing scope") for f in t["flags"]) for t in scoped)


@pytest.mark.parametrize("unsteady", [False, True])
def test_diff_agrees_with_compare_on_generation_ratios(tmp_path: Path, unsteady: bool) -> None:
    before, after = _pair(tmp_path, "ttft_warm" if unsteady else None)
    data, _, _ = _compare(tmp_path, before, after)
    diff = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    said = {"slower": "slower", "faster": "faster", "no clear difference": "no clear difference"}
    said |= {"unstable timing": "no verdict: unstable timing", "flagged, not judged": "no verdict: flagged"}
    compared = {key: said[s["verdict"]] for key, s in _series_verdicts(data).items()}
    diffed = {(t["case"], t["series"]): t["verdict"] for t in diff["timings"] if t["series"]}
    assert compared == diffed and len(diffed) == 8
    counts = diff_runs(summarize(judge_log(before)), summarize(judge_log(after))).verdict_counts()
    assert counts == {w: data["verdict_counts"][w] for w in ("faster", "slower", "no clear difference")}
    assert diff["unstable_timing"] == data["unstable_cells"] == ([CASE] if unsteady else [])
    # Neither pools the two series: each gives the same per-series means.
    assert diff["geomean"] is None and data["geomean"] is None
    assert diff["geomean_unpooled"] == data["geomean_unpooled"] != ""
    assert f"first token, warm 1.2x slower over {3 if unsteady else 4} ratios" in diff["geomean_unpooled"]
    text = RUNNER.invoke(main, ["diff", str(before), str(after)]).output
    assert f"{CASE} (decode per token): " in text and f"geometric mean: {diff['geomean_unpooled']}" in text


def test_a_generation_cell_with_both_series_unsteady_is_left_out_as_a_cell(tmp_path: Path) -> None:
    """Only a cell none of whose ratios decides is a cell 'left out of every verdict'; a second
    cell with one series unstable is counted apart, as a series."""
    before = _log(tmp_path / "a" / "events.jsonl", generation_timing_log("before", seed=1))
    events = generation_timing_log("after", scale=1.2, seed=2)
    for series in SERIES:
        bimodal(_generation(events, CASE), series)
    bimodal(_generation(events, "b1-l240-contiguous-float32-eager"), "decode_token")
    after = _log(tmp_path / "b" / "events.jsonl", events)
    data, _, md = _compare(tmp_path, before, after)
    assert "1 cell with unstable timing left out of every verdict" in data["headline"]
    assert "; 1 generation series with unstable timing left out of every verdict" in data["headline"]
    assert data["headline"] in md


def test_diff_names_the_unstable_series_not_its_cell_as_without_a_verdict(tmp_path: Path) -> None:
    """Before: diff (text, Markdown, the workload page) said 'unstable timing: 1 cell(s), no
    timing verdict' of a generation cell whose first-token ratio still had its verdict."""
    before, after = _pair(tmp_path, "decode_token")
    text = RUNNER.invoke(main, ["diff", str(before), str(after)]).output
    md = RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "md"]).output
    assert "1 cell(s), no timing verdict" not in text + md
    assert (
        f"unstable timing: 1 generation series, no timing verdict (the other series of each such cell is judged on its own): {CASE} (decode per token)"
        in text
    )
    assert (
        f"> **Unstable timing: 1 generation series**, no timing verdict for them (the other series of each such cell is judged on its own): `{CASE} (decode per token)`."
        in md
    )
    diff = diff_runs(summarize(judge_log(before)), summarize(judge_log(after)))
    assert diff.unstable == [CASE], "the JSON's list of cells with an unstable ratio is unchanged"


@pytest.mark.parametrize("unstable", [False, True], ids=["all-stable", "one-series-unstable"])
def test_the_summary_row_gives_each_series_its_own_mean(tmp_path: Path, unstable: bool) -> None:
    """Before: the geometric mean pooled time to first token and decode per token ('1.01x faster'
    over 26 ratios for a first token 0.70x and a decode 1.40x, a request about 1.25x slower):
    a figure of neither quantity. Each series now has its own, and the row says why."""
    before, after = _pair(tmp_path, "decode_token" if unstable else None)
    data, html, md = _compare(tmp_path, before, after)
    diff = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    assert data["geomean"] is None and diff["geomean"] is None
    said = data["geomean_unpooled"]
    assert f"| geometric mean of warm ratios | {said} |" in md, md
    assert f"<td>{said}</td>" in html.replace("\n", "")
    assert "decode per token " in said and f"over {3 if unstable else 4} ratios" in said


def test_a_series_that_decides_nothing_has_the_ratio_of_its_medians_and_no_interval_in_compare_as_in_diff(
    tmp_path: Path,
) -> None:
    """Before: compare gave an unstable series an interval and an estimate around it that could
    contradict the medians beside it (a row read '60.65 ms, 0.5241 ms, 0.731, 0.00644 to 1.13'),
    while diff gave the same cell the ratio of its medians (0.009x) and no interval."""
    before, after = _pair(tmp_path, "decode_token")
    data, _, md = _compare(tmp_path, before, after)
    series = _series_verdicts(data)[(CASE, "decode per token")]
    assert series["verdict"] == "unstable timing" and series["warm"]["low"] is None and series["warm"]["high"] is None
    assert series["warm"]["ratio"] == pytest.approx(
        series["candidate_median_s"] / series["baseline_median_s"], rel=1e-9
    )
    diff = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    change = next(t for t in diff["timings"] if t["case"] == CASE and t["series"] == "decode per token")
    assert change["ratio"] == pytest.approx(series["warm"]["ratio"], rel=1e-5) and change["low"] is None  # (rounded)
    assert "none: the timing decides nothing" in md


def test_a_generation_workload_s_history_says_its_series_are_not_charted(tmp_path: Path) -> None:
    """A review: a generation workload's history said '4 slower' in its pair table, then that its
    timing columns showed 'the first cells with a warm median (no stable ratio against the
    previous run to rank them by)', and drew no first-token or decode chart."""
    from reportgen.publish.site import build_site

    for day, scale in ((1, 1.0), (2, 1.5)):
        events = generation_timing_log(f"history-{day}")
        events[0]["started_at"] = f"2026-01-0{day}T00:00:00Z"
        for event in events:
            timing = event.get("timing") if event["kind"] == "generation" else None
            if timing:
                for series in ("ttft_warm", "decode_token"):
                    timing[series] = scaled_warm(timing[series], scale)
                timing["tokens_per_s"] = tokens_per_s(timing)
        _log(tmp_path / "runs" / str(day) / "events.jsonl", events)
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert (
        "generation series (first token, decode per token) are judged in the table of pairs, not charted here" in page
    )


def test_a_divergence_gone_because_the_reference_tokens_changed_is_no_fix(tmp_path: Path) -> None:
    """A review: in logs without a saved reference file, a compiled cell that diverged passed in a
    later run whose reference model chose other tokens; diff said 'criteria changes: 0' and
    'fixed: 1'. The reference tokens both logs carry differ: a pass against other reference
    outputs, not a fix."""
    from tests.logbuilder import generation_log

    diverged = generation_log(("compiled", 3))
    moved = generation_log(None)
    moved[0]["run_id"] = "synthetic-moved-reference"
    for event in moved:
        if event["kind"] == "generation" and event["case"].startswith("b1-l240-"):
            other = [[token + 1 for token in row] for row in event["reference_tokens"]]
            event.update(reference_tokens=other, tokens=other)
    before = _log(tmp_path / "a" / "events.jsonl", diverged)
    after = _log(tmp_path / "b" / "events.jsonl", moved)
    text = CliRunner().invoke(main, ["diff", str(before), str(after)]).output
    assert "fixed: 0" in text and "other reference tokens" in text, text


def test_details_csv_carries_each_generation_series_as_load_cells_does(tmp_path: Path) -> None:
    """A review: details.csv gave a generation cell no timing at all (every warm column empty),
    while report.md showed its first token and decode per token and load_cells had both series'
    medians and stability words."""
    import csv

    from reportgen.publish.frame import load_cells

    events = generation_timing_log("details-generation")
    bimodal(_generation(events, CASE), "decode_token")
    log = _log(tmp_path / "run" / "events.jsonl", events)
    build_report(log, tmp_path / "out")
    with (tmp_path / "out" / "details.csv").open(encoding="utf-8", newline="") as stream:
        rows = {row["case"]: row for row in csv.DictReader(stream)}
    frame = load_cells(log).set_index("case")
    checked = 0
    for case, row in rows.items():
        for series in ("first_token", "decode_token"):
            median, word = frame.loc[case, f"{series}_median_s"], frame.loc[case, f"{series}_stability"]
            if isinstance(word, str):
                assert row[f"{series}_stability"] == word and float(row[f"{series}_median_s"]) == median, (case, series)
                checked += 1
            else:
                assert row[f"{series}_stability"] == "" and row[f"{series}_median_s"] == "", (case, series)
    assert checked and rows[CASE]["decode_token_stability"] == "unstable"
