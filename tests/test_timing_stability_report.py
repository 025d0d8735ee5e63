"""Unstable warm timings on the run page, in diff and in the history: classified from the kept
samples with the collector's classifier, flagged with their figures, deciding nothing."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.judge.timing_stability import SYMBOL, timed_cells, undecided_cells, unstable_cells
from reportgen.model.runmodel import read_run
from reportgen.publish.diff import diff_runs
from reportgen.publish.frame import history_frame
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from reportgen.render.view import build_view
from tests.conftest import REPO
from tests.logbuilder import _cells, _warm, dumps, timing_log, with_envelope

NOISY = REPO / "sample_runs" / "tiny-encoder-cpu-20261130T101022Z-393b16"
QUIET = REPO / "sample_runs" / "tiny-encoder-cpu-20261129T225221Z-23a8e6"


def _run(path: Path) -> Any:
    reading, builder = read_run(path)
    return builder.build(reading)


def _steady(rng: random.Random, n: int = 30) -> list[float]:
    return [0.001 * (1 + 0.02 * rng.gauss(0, 1)) for _ in range(n)]


def _planted(tmp_path: Path) -> Path:
    """A synthetic log whose four timed cells hold a steady, a bimodal, a drifting and a steady series."""
    events = timing_log("synthetic-planted", noise=0.01)
    rng = random.Random(7)
    series = {
        0: _steady(rng),
        1: [s * (25 if i % 4 == 0 else 1) for i, s in enumerate(_steady(rng))],  # bimodal: every fourth call slow
        2: [s * (1 + 0.6 * i / 29) for i, s in enumerate(_steady(rng))],  # drifting: 60% slower by the end
        3: _steady(rng),
    }
    for n, timing in enumerate(t for t in _cells(events, "timing") if t.get("warm")):
        timing["warm"] = _warm(series[n])
    path = tmp_path / "planted" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def test_planted_series_in_a_log_are_classified_as_planted(tmp_path: Path) -> None:
    run = _run(_planted(tmp_path))
    judged = {j.case: j for j in timed_cells(run)}
    cases = list(judged)
    assert len(cases) == 4
    verdicts = [judged[c].stability.verdict for c in cases]
    assert verdicts == ["stable", "unstable", "unstable", "stable"]
    assert "bimodality" in {r.name for r in judged[cases[1]].stability.reasons}
    assert "drift" in {r.name for r in judged[cases[2]].stability.reasons}
    assert [j.case for j in unstable_cells(run)] == cases[1:3]


def test_the_shipped_noisy_run_is_flagged_on_its_page(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", str(NOISY), "--out", str(out)])
    assert result.exit_code == 0, result.output
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    top = md.split("## 1. Disposition")[0]
    assert "**Unstable timing.** 9 of 14 timed cells have an unstable warm timing" in top
    assert "Unstable timing.</strong> 9 of 14 timed cells" in html.split('id="disposition"')[0]
    # The disposition is not a plain "Suitable": it says performance is undecided, and so does the scope.
    assert "Suitable for the tested fixed-shape path: 14 cell(s)" in md
    assert "performance undecided for 9 of 14 timed cells, whose warm timing is unstable" in md
    assert "| performance | undecided for 9 of 14 timed cells" in md
    # The cell the issue names (8 samples at 0.4 ms, 22 near 124 ms) carries the symbol and its figures.
    row = next(
        line for line in md.splitlines() if line.startswith("| `b1-l32-noncontiguous-float32-eager`") and "ms" in line
    )
    assert (
        f"{SYMBOL} unstable timing" in row
        and "IQR is 88% of the median" in row
        and "the fastest sample is 0% of the median" in row
    )
    assert html.count(f"{SYMBOL} unstable timing") == 9


def test_a_stable_run_has_no_banner_and_reads_suitable_alone(tmp_path: Path) -> None:
    events = timing_log("synthetic-steady", noise=0.01)
    path = tmp_path / "steady" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    judged = judge_log(path, beside=False)
    assert undecided_cells(judged.run) == []
    assert "performance undecided" not in judged.disposition.headline
    assert judged.view.unstable_timing == ""
    assert not any(r.rule == "timing-stability" for r in judged.disposition.reasons)


def test_a_remeasured_cell_is_judged_by_its_last_series(tmp_path: Path) -> None:
    events = timing_log("synthetic-remeasured", noise=0.01)
    rng = random.Random(3)
    first = next(t for t in _cells(events, "timing") if t.get("warm"))
    bimodal = [s * (25 if i % 3 == 0 else 1) for i, s in enumerate(_steady(rng))]
    first["warm"] = _warm(bimodal)
    first["attempt"] = 1
    first["stability"] = {
        "verdict": "unstable",
        "samples": 30,
        "reasons": ["bimodality"],
        "checks": {},
        "attempt": 1,
        "attempts_allowed": 3,
    }
    first["host"] = {
        "load_avg_before": {"value": "3.10 2.00 1.00", "source": "os.getloadavg()"},
        "cpu_governor": {"value": None, "unknown_reason": "not readable"},
    }
    second = json.loads(json.dumps(first))
    second["warm"] = _warm(_steady(rng))
    second.update(
        attempt=2,
        stability={
            "verdict": "stable",
            "samples": 30,
            "reasons": [],
            "checks": {},
            "attempt": 2,
            "attempts_allowed": 3,
        },
    )
    events.insert(events.index(first) + 1, second)
    events = with_envelope([{k: v for k, v in e.items() if k not in ("schema_version", "seq", "time")} for e in events])
    path = tmp_path / "remeasured" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    judged = judge_log(path, beside=False)
    (cell,) = [j for j in timed_cells(judged.run) if j.case == first["case"]]
    assert cell.attempts == 2 and cell.stability.verdict == "stable"
    assert undecided_cells(judged.run) == []
    row = next(t for t in judged.view.timings if t.case == first["case"])
    assert "stable after 2 warm series" in row.flagged
    # The flag is the judgement's: the page formats ``timing_flags`` and works out none itself.
    assert judged.judgement is not None and judged.judgement.timing_flags[first["case"]] == "stable after 2 warm series"
    planted = dataclasses.replace(judged.judgement, timing_flags={first["case"]: "planted flag"})
    row = next(t for t in build_view(judged.run, planted, judged.annotations).timings if t.case == first["case"])
    assert row.flagged.startswith("planted flag") and "stable after" not in row.flagged


def test_diff_names_unstable_cells_first_and_gives_them_no_verdict() -> None:
    before, after = (summarize(judge_log(p / "events.jsonl", beside=False)) for p in (QUIET, NOISY))
    diff = diff_runs(before, after)
    assert "b1-l32-noncontiguous-float32-eager" in diff.unstable and len(diff.unstable) == 9
    change = next(t for t in diff.timings if t.case == "b1-l32-noncontiguous-float32-eager")
    assert change.ratio > 100 and change.verdict == "no verdict: unstable timing" and change.low is None
    assert any(f.startswith("unstable timing: ") and f.endswith("(after)") for f in change.flags)
    result = CliRunner().invoke(main, ["diff", str(QUIET), str(NOISY)])
    assert result.exit_code == 0, result.output
    # First the changes of criteria, then the unstable count, both above every result.
    lines = result.output.splitlines()
    unstable_at = next(
        i for i, line in enumerate(lines) if line.startswith("unstable timing: 9 cell(s), no timing verdict: ")
    )
    assert unstable_at < next(i for i, line in enumerate(lines) if line.startswith("disposition: "))
    md = CliRunner().invoke(main, ["diff", str(QUIET), str(NOISY), "--format", "md"]).output
    assert "**Unstable timing: 9 cell(s)**" in md.split("| change | cells |")[0]


def test_the_history_trend_leaves_unstable_points_out_and_names_them() -> None:
    summary = summarize(judge_log(NOISY / "events.jsonl", beside=False))
    frame = history_frame([summary])
    row = frame[frame["case"] == "b1-l32-noncontiguous-float32-eager"].iloc[0]
    assert row["warm_median_s"] != row["warm_median_s"]  # NaN: no point in the chart
    assert "unstable timing" in row["caveats"] and "left out" in row["caveats"]
    steady = frame[frame["case"] == "b1-l16-noncontiguous-float32-eager"].iloc[0]
    assert steady["warm_median_s"] > 0 and "unstable" not in (steady["caveats"] or "")


def test_the_host_around_a_series_is_said_in_words() -> None:
    from types import SimpleNamespace

    from reportgen.judge.timing_stability import host_text

    fact = lambda value: SimpleNamespace(value=value, unknown_reason=None if value else "not readable")  # noqa: E731
    host = {
        "load_avg_before": fact("5.18 2.81 1.17"),
        "load_avg_after": fact("6.02 3.00 1.20"),
        "cpu_affinity": fact("2 CPUs: 0-1"),
        "cpu_governor": fact(None),
        "gpu_sm_clock_mhz_before": fact("1980"),
        "gpu_sm_clock_mhz_after": fact("1755"),
        "gpu_temperature_c_before": fact("41"),
        "gpu_temperature_c_after": fact("67"),
    }
    text = host_text(host)
    assert (
        text
        == "load average 5.18 → 6.02 (1 min); SM clock 1980 → 1755 MHz; GPU temperature 41 → 67 °C; affinity 2 CPUs: 0-1"
    )
    assert host_text(None) == "" and host_text({}) == ""


def test_the_workload_history_names_unstable_cells_and_leaves_their_trend_points_out(tmp_path: Path) -> None:
    import shutil

    from reportgen.publish.site import build_site

    runs = tmp_path / "runs"
    for run in (QUIET, NOISY):
        shutil.copytree(run, runs / run.name, ignore=shutil.ignore_patterns("*.pt", "*.json", "profiles", "traces"))
    # Charts follow the cells that changed most and were stable; the site configuration names this
    # unstable one so that its trend is drawn, with the gap.
    (runs / "site.toml").write_text('[history]\ncases = ["b2-l16-contiguous-float32-eager"]\n', encoding="utf-8")
    build_site([runs], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("tiny-encoder*/index.html")).read_text(encoding="utf-8")
    assert "<strong>Unstable timing: 9 cell(s)</strong>, no timing verdict for them" in page
    from tests.chartsvg import page_charts

    warm = next(chart for fid, chart in page_charts(page).items() if fid.endswith("-trend-warm"))
    assert len(warm.x_ticks) == 2, "one place per run"
    points = [p for p in warm.points if p.title.startswith("b2-l16-contiguous-float32-eager: ")]
    # The quiet run's median is drawn; the noisy run's unstable series is no trend point.
    assert [p.x for p in points] == [warm.x_ticks[0][0]], points


def test_the_index_row_of_a_run_whose_timing_decides_nothing_says_so(tmp_path: Path) -> None:
    """Before: the index's row read "Suitable, 14/14, cpu" in green for a run with bimodal and
    drifting warm series as for a steady one, with no flag; only its folded headline said
    performance was undecided. Now the row carries a "timing undecided" tag beside the run, as
    a synthetic or incomplete run does, and index.csv/json count such timings."""
    import re

    from reportgen.publish.site import build_site

    _planted(tmp_path / "runs")
    steady = tmp_path / "runs" / "steady" / "events.jsonl"
    steady.parent.mkdir(parents=True)
    steady.write_text(dumps(timing_log("synthetic-steady", noise=0.01)), encoding="utf-8")
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    cells = dict(re.findall(r'<td><a href="runs/[^"]+" title="([^"]+)">(.*?)</td>', page))
    assert set(cells) == {"synthetic-planted", "synthetic-steady"}, cells
    assert ">timing undecided</span>" in cells["synthetic-planted"], cells
    assert "undecided" not in cells["synthetic-steady"], cells
    assert 'A run marked "timing undecided"' in page  # the legend says what the tag means
    records = {r["run_id"]: r["timing_undecided"] for r in json.loads((tmp_path / "site" / "index.json").read_text())}
    assert records["synthetic-planted"] > 0 and records["synthetic-steady"] == 0, records
    # The script that draws the rows past the first page reads the same from the row data.
    script = next((tmp_path / "site").glob("index-rows-*.js")).read_text(encoding="utf-8")
    rows = json.loads(script[script.index("{") : script.rindex("}") + 1])
    assert {r[2]: bool(r[4] & 16) for r in rows["rows"]} == {"synthetic-planted": True, "synthetic-steady": False}


def test_the_page_classifies_the_samples_not_the_logs_claim(tmp_path: Path) -> None:
    events = timing_log("synthetic-claims", noise=0.01)
    rng = random.Random(5)
    timing = next(t for t in _cells(events, "timing") if t.get("warm"))
    timing["warm"] = _warm([s * (25 if i % 3 == 0 else 1) for i, s in enumerate(_steady(rng))])
    timing["stability"] = {
        "verdict": "stable",
        "samples": 30,
        "reasons": [],
        "checks": {},
        "attempt": 1,
        "attempts_allowed": 1,
    }
    timing["host"] = {"cpu_governor": {"value": "<b>performance</b> | x", "source": "test"}}
    md, html = _report_of(tmp_path, events)
    assert "**Unstable timing.** 1 of 4 timed cells" in md
    assert "governor &lt;b&gt;performance&lt;/b&gt; | x" in html and "<b>performance</b>" not in html
    row = next(
        line for line in md.splitlines() if line.startswith(f"| `{timing['case']}`") and "unstable timing" in line
    )
    assert "governor \\<b\\>performance\\</b\\> \\| x" in row


def test_stable_timed_cells_are_classified_without_reading_their_lines_again(tmp_path: Path, monkeypatch: Any) -> None:
    """A long log has tens of thousands of timed cells: the judge classifies each from the facts the
    reader kept, and reads a timing line again only for an unstable series (to name its host)."""
    from reportgen.storage.local import Reread

    events = timing_log("synthetic-steady", noise=0.01)
    path = tmp_path / "steady" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    run = _run(path)
    reads: list[int] = []
    real = Reread.read
    monkeypatch.setattr(Reread, "read", lambda self, offset, length: reads.append(offset) or real(self, offset, length))
    judged = timed_cells(run)
    assert judged and all(j.decides for j in judged)
    assert reads == []
    # What is kept of a stable series is its verdict, its figures and the cell's own samples (no
    # copy); its six checks (figures and notes) are not built unless asked for (time and memory).
    samples = {c.case: c.warm_samples for c in run.cells}
    assert all("checks" not in vars(j.stability) and j.stability.median_s for j in judged)
    assert all(j.stability.series is samples[j.case] for j in judged)
    assert [c.name for c in judged[0].stability.checks] == [
        "outliers",
        "bimodality",
        "drift",
        "hump",
        "spread",
        "min_median",
    ]
    # An unstable series is still flagged with the host around it, read from its line.
    planted = _run(_planted(tmp_path))
    reads.clear()
    assert [j.case for j in unstable_cells(planted)] and len(reads) == 2


def _report_of(tmp_path: Path, events: list[dict[str, Any]]) -> tuple[str, str]:
    path = tmp_path / "run" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return (out / "report.md").read_text(encoding="utf-8"), (out / "report.html").read_text(encoding="utf-8")


def test_a_series_too_short_to_classify_is_not_called_unstable(tmp_path: Path) -> None:
    """Before: warm series of 3 samples (none unstable) put a banner titled 'Unstable timing.'
    over 'have too few warm samples', and the headline called its timing 'unstable or too short
    to classify'. (The run planned 3 warm repetitions: every series has 3 samples.)"""
    events = timing_log("synthetic-short", samples=3)
    md, html = _report_of(tmp_path, events)
    top = md + html.split('id="timings"')[0]  # the charts' caption names every reason a figure may have
    assert "Unstable timing" not in top and "unstable or too short" not in top
    why = "have a warm series the rules cannot classify (too few samples, or every sample one value)"
    assert f"> **Timing not classified.** 4 of 4 timed cells {why}." in md
    assert f"<strong>Timing not classified.</strong> 4 of 4 timed cells {why}" in html
    assert "performance undecided for 4 of 4 timed cells, whose warm timing is not classified" in md
    assert f"- 4 of 4 timed cells {why}: their timings decide nothing" in md
    assert "| performance | undecided for 4 of 4 timed cells (warm timing not classified: flagged in" in md
    assert "not classified: 3 sample(s); at least 5 are needed to judge stability |" in md, "the cell says why"


def test_a_generation_run_says_its_series_are_classified_and_names_an_unstable_one(tmp_path: Path) -> None:
    """Before: a generation run's scope said its series 'are not classified for stability' (they
    are, and flagged in section 7); one unstable decode series put no banner at the top of the
    page; and the cell's tokens/s, worked out from that series, carried no flag."""
    from tests.logbuilder import bimodal, generation_timing_log

    events = generation_timing_log("synthetic-generation-unstable")
    case = "b1-l96-contiguous-float32-eager"
    bimodal(next(e for e in events if e["kind"] == "generation" and e["case"] == case), "decode_token")
    md, html = _report_of(tmp_path, events)
    assert "not classified for stability" not in md + html
    assert (
        "| performance | undecided for 1 of 8 generation series (time to first token or decode per token: unstable,"
        in md
    )
    assert (
        "> **Unstable timing.** 1 of 8 generation series (time to first token or decode per token) are unstable" in md
    )
    assert (
        "performance undecided for 1 of 8 generation series (time to first token or decode per token), unstable (" in md
    )
    row = next(line for line in md.splitlines() if line.startswith("| 128 | 96 tokens | `" + case))
    assert "/s; from the decode series flagged beside it: decides nothing" in row
    other = next(
        line for line in md.splitlines() if line.startswith("| 256 | 240 tokens | `b1-l240-contiguous-float32-eager")
    )
    assert "decides nothing" not in other
    steady, _ = _report_of(tmp_path / "steady", generation_timing_log("synthetic-generation-steady"))
    assert "| performance | warm timing of all 8 generation series" in steady and "Unstable timing" not in steady


def test_the_run_pages_charts_say_which_warm_figure_decides_nothing(tmp_path: Path) -> None:
    """Before: the warm latency chart drew an unstable cell's median as a plain bar, and both it
    and the cold-vs-warm chart gave that median on hover with no word that it decides nothing
    (the timing table beside them flagged it); a compiled cell that ran eager after its
    recompile limit read the same."""
    from tests.chartsvg import chart_markup, parse_chart

    events = timing_log("synthetic-chart-flags")
    timings = [t for t in _cells(events, "timing") if t.get("warm")]
    bimodal, eager = timings[0], timings[-1]
    bimodal["warm"] = _warm([s * (2 if i % 2 else 1) for i, s in enumerate(bimodal["warm"]["samples_s"])])
    eager["eager_after_recompile_limit"] = True
    path = tmp_path / "run" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    figures = {f.id: f for f in judge_log(path).view.timing_figures}
    warm, both = figures["fig-warm-latency"], figures["fig-cold-warm"]
    medians = {p.title.split(":")[0]: p for s in warm.chart.series if s.mark == "dash" for p in s.points}
    assert medians[bimodal["case"]].hollow and medians[bimodal["case"]].title.endswith(
        "; unstable timing: decides nothing"
    )
    assert medians[eager["case"]].hollow and "recompile limit hit: decides nothing" in medians[eager["case"]].title
    assert {case for case, p in medians.items() if p.hollow} == {bimodal["case"], eager["case"]}
    assert "decides nothing" in warm.caption and "decides nothing" in both.caption
    bars = {b.title.split(":")[0]: b.title for s in both.chart.series if s.name == "warm median" for b in s.bars}
    assert bars[bimodal["case"]].endswith("; unstable timing: decides nothing")
    assert all("decides nothing" not in t for case, t in bars.items() if case not in (bimodal["case"], eager["case"]))
    drawn = parse_chart(chart_markup(warm))
    assert len(drawn.points) > 0  # the open median is still read back as a point in its place
    # A run whose every warm series is stable draws no open median and says nothing of it.
    steady = tmp_path / "steady" / "events.jsonl"
    steady.parent.mkdir()
    steady.write_text(dumps(timing_log("synthetic-chart-steady")), encoding="utf-8")
    quiet = {f.id: f for f in judge_log(steady).view.timing_figures}
    assert not any(p.hollow for s in quiet["fig-warm-latency"].chart.series for p in s.points)
    assert "decides nothing" not in quiet["fig-warm-latency"].caption + quiet["fig-cold-warm"].caption


def test_a_stopped_run_says_no_timing_below_is_a_performance_result(tmp_path: Path) -> None:
    """Before: the banner said the mismatching cells' 'timings below decide nothing'; those cells
    have no timing, and the stop holds every timing of the run (Disposition.performance_stopped)."""
    from tests.logbuilder import mismatch_log

    md, html = _report_of(tmp_path, mismatch_log())
    said = "until then no timing below is a performance result (here, in comparisons or in the history)"
    assert said in md and said in html and "their timings" not in md + html


def test_a_stopped_run_says_performance_is_not_judged_not_how_much_is_undecided(tmp_path: Path) -> None:
    """A review: the first MiniLM sample's headline and first-screen banner said "performance
    undecided for 3 of 15 timed cells" beside a section 7 saying no timing is a performance
    result at all (7 mismatching cells have no verdict). The headline and the banner say the stop."""
    from click.testing import CliRunner

    from reportgen.cli import main

    run = REPO / "sample_runs" / "all-MiniLM-L6-v2-cpu-20261129T225806Z-4b4a2f"
    result = CliRunner().invoke(main, ["report", str(run), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    headline = result.output.splitlines()[0]
    # "mismatching": the run's 7 stopping cells are all mismatches (no errored cell among them).
    assert "; performance not judged: acceptance is stopped until 7 mismatching cell(s) have a verdict" in headline
    assert "undecided" not in headline
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    first_screen = md[: md.index("## 1. Disposition")]
    assert "**Performance acceptance stopped.** 7 mismatching cell(s) have no verdict" in first_screen
    assert "Unstable timing" not in first_screen
    # The unstable series are still named where the timings are.
    assert "3 of 15 timed cells have an unstable warm timing" in md


def test_the_timings_section_names_the_host_around_the_warm_loops(tmp_path: Path) -> None:
    # Before: the load average (and threads, CPUs) around the loops were shown only beside an
    # unstable series, so a run on a busy host with steady series read as any other.
    import json

    from click.testing import CliRunner

    from reportgen.cli import main

    run = REPO / "sample_runs" / "tiny-encoder-cpu-20261202T053312Z-ecd07d"
    loads = [
        float(event["host"][key]["value"].split()[0])
        for event in map(json.loads, (run / "events.jsonl").read_text(encoding="utf-8").splitlines())
        if event["kind"] == "timing" and event.get("host")
        for key in ("load_avg_before", "load_avg_after")
        if event["host"].get(key, {}).get("value")
    ]
    assert loads, "the sample run recorded the load around its loops"
    result = CliRunner().invoke(main, ["report", str(run), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    for name, heading in (("report.md", "## 7. Timings"), ("report.html", '<section id="timings">')):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        section = text[text.index(heading) :]
        assert f"load average (1 min) {min(loads):.2f} to {max(loads):.2f}" in section[:3000], name
        assert "CPU count 2" in section[:3000]


def test_a_loop_whose_cpu_wait_was_not_read_decides_nothing_in_the_run_report_too(tmp_path: Path) -> None:
    """A review: a warm loop shorter than the host's scheduler tick reads no CPU wait, so
    contention was not judged; diff and compare said so and gave its ratios no verdict, while the
    run's report, details.csv and load_cells called the same series stable and performance decided."""
    import csv

    from reportgen.publish.frame import load_cells

    from tests.logbuilder import edited_sample

    events = edited_sample(
        "tiny-encoder-cpu-20261206T150111Z-1dd183",
        "synthetic-unread-wait",
        "A sample run's log with one warm loop's CPU wait made unread; not a measurement.",
    )
    case = "b1-l32-contiguous-float32-eager"
    loop = [e for e in events if e["kind"] == "timing" and e["case"] == case and e.get("warm")][-1]["host"]
    for key in ("cpu_run_s", "cpu_wait_s", "loop_wall_s"):
        loop[key] = {"value": None, "unknown_reason": "schedstat counted no time on a CPU over the loop (0.4 ms)"}
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(events), encoding="utf-8")
    judged = judge_log(log)
    assert [j.case for j in undecided_cells(judged.run)] == [case]
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(out)])
    assert result.exit_code == 0, result.output
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "1 of 14 timed cells have a warm loop whose threads' CPU wait the collector could not read" in md
    assert "| performance | undecided for 1 of 14 timed cells" in md
    with (out / "details.csv").open(encoding="utf-8", newline="") as stream:
        rows = {row["case"]: row for row in csv.DictReader(stream)}
    assert rows[case]["warm_stability"] == "unclassified"
    assert rows["b1-l16-contiguous-float32-eager"]["warm_stability"] == "stable"
    cells = load_cells(log)
    assert cells.set_index("case").loc[case, "warm_stability"] == "unclassified"
    # The site's cell index too (a second review: its summaries kept no such fact, and said 'stable').
    import pandas as pd

    from reportgen.publish.site import build_site

    build_site([log.parent], tmp_path / "site")
    index = pd.read_parquet(tmp_path / "site" / "index.parquet").set_index("cell")
    assert index.loc[case, "warm_stability"] == "unclassified"
    assert index.loc["b1-l16-contiguous-float32-eager", "warm_stability"] == "stable"


def test_a_generation_loop_whose_cpu_wait_was_not_read_decides_nothing_either(tmp_path: Path) -> None:
    """A generation cell's warm loop whose CPU wait its collector could not read was still called
    stable on its run page, in details.csv, load_cells and index.parquet, where a timed cell's
    is 'not classified' (diff and compare already gave its ratios no verdict)."""
    import csv

    import pandas as pd

    from reportgen.publish.frame import load_cells
    from reportgen.publish.site import build_site
    from tests.logbuilder import edited_sample

    events = edited_sample(
        "scenario-a-text-service-cpu-20261206T152740Z-a6ae00",
        "synthetic-generation-unread-wait",
        "A sample run's log with one generation loop's CPU wait made unread; not a measurement.",
    )
    case = "b1-l96-contiguous-float32-eager"
    timing = next(e for e in events if e["kind"] == "generation" and e["case"] == case)["timing"]
    for key in ("cpu_run_s", "cpu_wait_s", "loop_wall_s"):
        timing["host"][key] = {"value": None, "unknown_reason": "schedstat counted no time on a CPU over the loop"}
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(events), encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(out)])
    assert result.exit_code == 0, result.output
    md = (out / "report.md").read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| 128 | 96 tokens | `" + case))
    assert "not classified: the CPU wait of its threads over the loop was not read" in row, row
    assert "decides nothing" in row, "tokens/s is read from the decode series"
    with (out / "details.csv").open(encoding="utf-8", newline="") as stream:
        rows = {r["case"]: r for r in csv.DictReader(stream)}
    other = "b1-l240-contiguous-float32-eager"
    assert rows[case]["first_token_stability"] == rows[case]["decode_token_stability"] == "unclassified"
    assert rows[other]["first_token_stability"] == "stable"
    cells = load_cells(log).set_index("case")
    assert cells.loc[case, "decode_token_stability"] == "unclassified"
    assert cells.loc[other, "decode_token_stability"] == "stable"
    build_site([log.parent], tmp_path / "site")
    index = pd.read_parquet(tmp_path / "site" / "index.parquet").set_index("cell")
    assert index.loc[case, "first_token_stability"] == "unclassified"
    assert index.loc[other, "first_token_stability"] == "stable"


def test_the_index_row_of_a_stopped_run_says_performance_not_judged(sample_site: Path) -> None:
    """A review: the index tagged the first MiniLM sample "timing undecided" beside a headline
    saying its performance is not judged at all (7 mismatching cells without a verdict). The
    row's tag says the stronger fact, in the page and in the rows a script draws."""
    import re

    page = (sample_site / "index.html").read_text(encoding="utf-8")
    cells = dict(re.findall(r'<td><a href="runs/[^"]+" title="([^"]+)">(.*?)</td>', page))
    stopped = cells["all-MiniLM-L6-v2-cpu-20261129T225806Z-4b4a2f"]
    assert ">performance not judged</span>" in stopped and "timing undecided" not in stopped, stopped
    # The rows a script draws past the first page carry it as flag 32, one a stopped run.
    script = next(sample_site.glob("index-rows-*.js")).read_text(encoding="utf-8")
    rows = json.loads(script[script.index("{") : script.rindex("}") + 1])["rows"]
    records = json.loads((sample_site / "index.json").read_text(encoding="utf-8"))
    records = records["runs"] if isinstance(records, dict) else records
    assert sum(bool(r[4] & 32) for r in rows) == sum(r["performance_stopped"] > 0 for r in records) > 0


def test_a_restart_that_read_no_cache_is_said_to_have_recompiled(tmp_path: Path) -> None:
    """A review: under TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 the restart given the populated cache
    counted no hit and wrote 31 entries of its own (a recompile), and the timing table showed it
    as a restart from the cache, unsaid. A restart that read its cache (a hit, no entry written)
    is shown as before."""
    import json

    sample = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl"
    events = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
    restarts = [
        e
        for e in events
        if e["kind"] == "timing" and (e.get("cold") or {}).get("cache_condition") == "restart_populated_cache"
    ]
    unread = restarts[0]
    unread["cold"].update(cache_hits=0, cache_misses=0, cache_entries_after=unread["cold"]["cache_entries_before"] + 31)
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    judged = judge_log(log)
    said = "the populated cache was not read: no cache hit, and the restart wrote 31 entries of its own"
    assert judged.judgement is not None and list(judged.judgement.restart_unread) == [unread["case"]]
    rows = {t.case: t.restart for t in judged.view.timings}
    assert said in rows[unread["case"]]
    assert not [case for case, text in rows.items() if case != unread["case"] and "not read" in text]
