"""What a reader of compare, diff and the site's history may take from them (review 4): a run is
evidence only for the backend it ran on, and what changed is named before any verdict."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.publish.diff import diff_runs
from reportgen.publish.site import build_site
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from tests.logbuilder import _warm, dumps, timing_log

RUNNER = CliRunner()


def _log(path: Path, events: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _neuron_then_cpu(root: Path) -> tuple[Path, Path]:
    """Two synthetic runs of one plan for neuron: the first on Neuron, the second on the host CPU
    (half the time), started a day later."""
    first = _log(
        root / "neuron" / "events.jsonl", timing_log("plan-neuron-on-neuron", "neuron", "neuron-native", seed=1)
    )
    later = timing_log("plan-neuron-on-cpu", "neuron", "cpu", scale=0.5, seed=2)
    later[0]["started_at"] = "2026-01-02T00:00:00Z"
    return first, _log(root / "cpu" / "events.jsonl", later)


def test_diff_of_a_run_on_another_backend_of_one_planned_target_judges_no_ratio(tmp_path: Path) -> None:
    a, b = _neuron_then_cpu(tmp_path)
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    assert diff.targets_differ and diff.targets == ("neuron", "neuron (ran on cpu)")
    assert diff.timings and all(any("different targets" in f for f in t.flags) for t in diff.timings)
    assert diff.geomean is None and not any(diff.verdict_counts().values())
    text = RUNNER.invoke(main, ["diff", str(a), str(b)]).output
    assert "targets differ: neuron -> neuron (ran on cpu)" in text
    assert "geometric mean:" not in text and ": faster" not in text
    md = RUNNER.invoke(main, ["diff", str(a), str(b), "--format", "md"]).output
    assert "Targets differ: neuron → neuron (ran on cpu)" in md
    data = json.loads(RUNNER.invoke(main, ["diff", str(a), str(b), "--format", "json"]).output)
    assert data["geomean"] is None and all(t["verdict"] == "no verdict: flagged" for t in data["timings"])


def test_the_history_keeps_a_run_on_another_backend_apart(tmp_path: Path) -> None:
    _neuron_then_cpu(tmp_path / "runs")
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert "<h2>On neuron</h2>" in page and "<h2>On neuron (ran on cpu)</h2>" in page
    assert "Latest run against the previous one" not in page, "two histories of one run each: nothing compared"
    assert "faster" not in page


def test_a_run_on_another_backend_is_no_replicate_in_compare_or_diff(tmp_path: Path) -> None:
    on_neuron, on_cpu = _neuron_then_cpu(tmp_path)
    again = _log(tmp_path / "again" / "events.jsonl", timing_log("neuron-again", "neuron", "neuron-native", seed=3))
    result = RUNNER.invoke(
        main,
        ["compare", "--baseline", str(again), "--candidate", str(on_neuron), "--candidate", str(on_cpu)]
        + ["--out", str(tmp_path / "cmp")],
    )
    assert result.exit_code == 2 and "replicates are runs on one backend" in result.output, result.output
    result = RUNNER.invoke(main, ["diff", "--before", str(again), "--after", str(on_neuron), "--after", str(on_cpu)])
    assert result.exit_code == 2 and "neuron (ran on cpu)" in result.output, result.output


def _cpu_run(root: Path, run_id: str, scale: float, seed: int, torch: str = "", threads: str = "") -> Path:
    events = timing_log(run_id, scale=scale, seed=seed)
    for event in events:
        if event["kind"] == "environment" and torch:
            event["versions"]["torch"] = {"value": torch, "source": "synthetic fixture"}
        if event["kind"] == "timing" and threads:
            event["host"] = {"torch_threads": {"value": threads, "source": "synthetic fixture"}}
    return _log(root / run_id / "events.jsonl", events)


def test_a_replicate_on_another_torch_or_thread_count_is_refused_not_folded_in(tmp_path: Path) -> None:
    """Before: the interval of the after side folded in a run on another torch, and the diff said
    'version changes: 0 ... 4 faster'."""
    before = _cpu_run(tmp_path, "before", 1.0, 1, threads="2 intra-op, 2 inter-op")
    after = _cpu_run(tmp_path, "after", 0.5, 2, threads="2 intra-op, 2 inter-op")
    newer = _cpu_run(tmp_path, "newer-torch", 0.5, 3, torch="2.14.0", threads="2 intra-op, 2 inter-op")
    fewer = _cpu_run(tmp_path, "one-thread", 0.5, 4, threads="1 intra-op, 1 inter-op")
    for other, said in ((newer, "torch 2.13.0 -> 2.14.0"), (fewer, "torch threads 2 intra-op")):
        result = RUNNER.invoke(main, ["diff", "--before", str(before), "--after", str(after), "--after", str(other)])
        assert result.exit_code == 2 and "is no replicate of" in result.output and said in result.output, result.output
        result = RUNNER.invoke(
            main,
            ["compare", "--baseline", str(before), "--candidate", str(after), "--candidate", str(other)]
            + ["--out", str(tmp_path / "cmp")],
        )
        assert result.exit_code == 2 and said in result.output, result.output
    same = _cpu_run(tmp_path, "same", 0.5, 5, threads="2 intra-op, 2 inter-op")
    result = RUNNER.invoke(main, ["diff", "--before", str(before), "--after", str(after), "--after", str(same)])
    assert result.exit_code == 0, result.output


def test_compare_names_a_torch_change_before_its_answer_in_every_format(tmp_path: Path) -> None:
    """Before: the headline said '2x faster' and the torch change stood only in section 4."""
    before = _cpu_run(tmp_path, "before", 1.0, 1)
    after = _cpu_run(tmp_path, "after", 0.5, 2, torch="2.14.0")
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "html,md,json"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert data["versions"] == [["torch", "2.13.0", "2.14.0"]]
    assert data["headline"].index("1 version change") < data["headline"].index("faster")
    md = (out / "compare.md").read_text(encoding="utf-8")
    answer = md[md.index("## 1. Answer") : md.index("## 2.")]
    assert "**Versions differ (1):**" in answer and "| torch | `2.13.0` | `2.14.0` |" in answer
    html = (out / "compare.html").read_text(encoding="utf-8")
    answer = html[html.index('<section id="headline">') : html.index('<section id="versions">')]
    assert "Versions differ (1):" in answer and "torch: 2.13.0 (baseline) → 2.14.0 (candidate)" in answer


def _drifting(events: list[dict], case_prefix: str) -> list[dict]:
    """The warm series of the cells starting with ``case_prefix`` drift upwards by 300%: unstable."""
    for event in events:
        if event["kind"] == "timing" and event["case"].startswith(case_prefix):
            samples = event["warm"]["samples_s"]
            event["warm"] = _warm([x * (1 + 3.0 * i / len(samples)) for i, x in enumerate(samples)])
    return events


def test_the_ratio_chart_draws_a_ratio_that_decides_nothing_hollow(tmp_path: Path) -> None:
    """Before: the unstable cell was a filled dot like the others, placed by the chart's own rule
    ('left of the dashed line: faster')."""
    before = _log(tmp_path / "a" / "events.jsonl", timing_log("steady", seed=1))
    after = _log(
        tmp_path / "b" / "events.jsonl",
        _drifting(timing_log("drifting", scale=0.5, seed=2), "b1-l16-contiguous-float32-eager"),
    )
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "html,json"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "compare.json").read_text(encoding="utf-8"))["unstable_cells"] == [
        "b1-l16-contiguous-float32-eager"
    ]
    html = (out / "compare.html").read_text(encoding="utf-8")
    eager = html[html.index('id="fig-ratio-eager"') : html.index('id="fig-ratio-compiled"')]
    assert eager.count('class="ring"') == 1 and "unstable timing: decides nothing</title>" in eager
    compiled = html[html.index('id="fig-ratio-compiled"') :]
    assert 'class="ring"' not in compiled.split("</figure>")[0]


def _measured_then_synthetic(tmp_path: Path) -> str:
    """The workload page of a site holding a run labelled measured (made here, in a temporary
    folder, to stand for one) and a later synthetic run twice as fast."""
    measured = timing_log("measured-first", seed=1)
    measured[0]["origin"] = "measured"
    measured[0].pop("origin_note", None)
    synthetic = timing_log("synthetic-second", scale=0.5, seed=2)
    synthetic[0]["started_at"] = "2026-01-02T00:00:00Z"
    _log(tmp_path / "runs" / "a" / "events.jsonl", measured)
    _log(tmp_path / "runs" / "b" / "events.jsonl", synthetic)
    build_site([tmp_path / "runs"], tmp_path / "site")
    return next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")


def test_the_history_names_a_synthetic_run_before_its_speed_words(tmp_path: Path) -> None:
    """Before: a measured run followed by a synthetic one read 'no criteria ... changed; 4 faster'
    on the latest-run line, '2x faster' in the geometric-mean column and in the change section,
    with only a 'synthetic' tag beside the run id in the table."""
    page = _measured_then_synthetic(tmp_path)
    note = "synthetic fixture on the after side: evidence of nothing"
    latest = page[page.index("Latest run against the previous one") :]
    assert latest.index(note) < latest.index("faster")
    row = page[page.index('title="synthetic-second"') :]
    assert row.index(note) < row.index("faster")
    change = page[page.index("What changed between consecutive runs") :]
    assert change.index("Synthetic fixture on the after side") < change.index("faster")


def test_the_latest_run_on_a_target_is_one_that_ran_there(tmp_path: Path) -> None:
    """Before: compare_latest picked the latest run *planned* for neuron: a later rerun on the
    host CPU hid the run on Neuron, and the site's comparison 'against neuron' was a cpu run."""
    from reportgen.publish.site_compare import SiteConfig, plan_pairs

    root = tmp_path / "runs"
    cuda = _log(root / "cuda" / "events.jsonl", timing_log("cuda-run", "cuda", "cuda", seed=5))
    on_neuron, on_cpu = _neuron_then_cpu(root)
    summaries = [summarize(judge_log(p)) for p in (cuda, on_neuron, on_cpu)]
    config = SiteConfig.model_validate({"compare_latest": [{"baseline_target": "cuda", "candidate_target": "neuron"}]})
    pairs, problems, _ = plan_pairs(config, summaries)
    assert not problems and [(p.baseline.run_id, p.candidate.run_id) for p in pairs] == [
        ("cuda-run", "plan-neuron-on-neuron")
    ]


def test_compare_and_diff_agree_that_a_changed_timing_criterion_judges_no_ratio(tmp_path: Path) -> None:
    """Before: with warm repetitions 5 -> 30, diff said 'no verdict: flagged' for every cell and
    compare, of the same two logs, '2x faster'."""
    before = _log(tmp_path / "a" / "events.jsonl", timing_log("five-reps", seed=1, samples=5))
    after = _log(tmp_path / "b" / "events.jsonl", timing_log("thirty-reps", scale=0.5, seed=2, samples=30))
    diff = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    assert diff["geomean"] is None and {t["verdict"] for t in diff["timings"]} == {"no verdict: flagged"}
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "json,md"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert data["geomean"] is None and "faster" not in data["headline"]
    assert {c["timing"]["verdict"] for c in data["cells"]} == {"flagged, not judged"}
    assert all("changed criterion: warm repetitions now 30 (was 5)" in c["timing"]["flags"] for c in data["cells"])


def test_a_cpu_run_relabelled_as_neuron_counts_for_no_target(tmp_path: Path) -> None:
    """Before: a cpu log whose environment claimed backend_family neuron-native validated with a
    warning, and the site's index read 'Runs per target: neuron 1 ... every disposition here is
    for neuron'."""
    events = timing_log("relabelled", "neuron", "cpu", seed=1)
    next(e for e in events if e["kind"] == "environment")["backend_family"] = "neuron-native"
    _log(tmp_path / "runs" / "x" / "events.jsonl", events)
    result = build_site([tmp_path / "runs"], tmp_path / "site")
    assert any("the log contradicts itself" in p for p in result.rejected), result.rejected
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "neuron 0" in index and "neuron 1" not in index


def test_a_replicate_awaiting_a_verdict_stops_timing_as_a_first_run_does(tmp_path: Path) -> None:
    """Before: a candidate replicate with a mismatching cell and no verdict (its performance
    acceptance stopped) lent its timings to the side's interval: compare said '1.99x faster',
    diff '3 faster'; as the first run of the side it stopped every timing."""
    from tests.test_run_changes import _mismatch

    before = _cpu_run(tmp_path, "before", 1.0, 1)
    after = _cpu_run(tmp_path, "after", 0.5, 2)
    events = timing_log("after-mismatching", scale=0.5, seed=3)
    _mismatch(events, "b2-l16-contiguous-float32-compiled")
    stopped = _log(tmp_path / "stopped" / "events.jsonl", events)
    result = RUNNER.invoke(
        main,
        ["compare", "--baseline", str(before), "--candidate", str(after), "--candidate", str(stopped)]
        + ["--out", str(tmp_path / "cmp"), "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert data["geomean"] is None and "performance acceptance is stopped on the candidate" in data["headline"]
    assert data["candidate"]["perf_stopped"] == ["b2-l16-contiguous-float32-compiled"]
    diff = RUNNER.invoke(main, ["diff", "--before", str(before), "--after", str(after), "--after", str(stopped)])
    assert "geometric mean:" not in diff.output and ": faster" not in diff.output, diff.output
    assert "performance acceptance is stopped on the after until" in diff.output, diff.output
    assert "after run after-mismatching: 1 mismatching or errored cell(s) without a verdict" in diff.output


def test_cpu_fallback_in_a_replicate_flags_the_ratio_in_compare_and_diff(tmp_path: Path) -> None:
    """Before: fallback in a cell of a side's second run was not flagged (only the first run's
    cell was read), and its samples, timing the CPU, were in the side's interval."""
    case = "b1-l16-contiguous-float32-eager"
    runs = []
    for run_id, seed, fell in (("n1", 1, False), ("n2", 2, False), ("n3", 3, True)):
        events = timing_log(run_id, "neuron", "neuron-native", seed=seed)
        if fell:
            operators = next(e for e in events if e["kind"] == "operators" and e["case"] == case)
            operators["fallback"] = {"status": "measured", "items": ["aten::_softmax"]}
        runs.append(_log(tmp_path / run_id / "events.jsonl", events))
    first, second, fell = runs
    result = RUNNER.invoke(
        main,
        ["compare", "--baseline", str(first), "--candidate", str(second), "--candidate", str(fell)]
        + ["--out", str(tmp_path / "cmp"), "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    cells = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))["cells"]
    flagged = {c["case"]: c["timing"]["flags"] for c in cells}
    assert "includes CPU fallback on the candidate replicate n3" in flagged[case]
    assert not any("fallback" in f for c, flags in flagged.items() if c != case for f in flags)
    data = json.loads(
        RUNNER.invoke(
            main, ["diff", "--before", str(first), "--after", str(second), "--after", str(fell), "--format", "json"]
        ).output
    )
    flags = {t["case"]: t["flags"] for t in data["timings"]}
    assert "includes CPU fallback (after replicate n3)" in flags[case]


def test_diff_flags_a_cell_timed_under_another_scope_as_compare_does(tmp_path: Path) -> None:
    """Before: with preprocessing, the copy to the device and output retrieval newly inside one
    cell's clock, compare flagged that ratio and diff called it 'faster'."""
    case = "b1-l16-contiguous-float32-eager"
    before = _log(tmp_path / "a" / "events.jsonl", timing_log("model-call-only", seed=1))
    events = timing_log("whole-request", scale=0.5, seed=2)
    timing = next(e for e in events if e["kind"] == "timing" and e["case"] == case)
    timing["scope"] = dict(timing["scope"], preprocessing=True, host_to_device=True, output_retrieval=True)
    after = _log(tmp_path / "b" / "events.jsonl", events)
    data = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    verdicts = {t["case"]: (t["verdict"], " ".join(t["flags"])) for t in data["timings"]}
    assert verdicts[case][0] == "no verdict: flagged" and "different timing scope" in verdicts[case][1]
    assert {v for c, (v, _) in verdicts.items() if c != case} == {"faster"}
    result = RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(tmp_path / "c"), "--format", "json"])
    assert result.exit_code == 0, result.output
    cells = json.loads((tmp_path / "c" / "compare.json").read_text(encoding="utf-8"))["cells"]
    assert next(c for c in cells if c["case"] == case)["timing"]["verdict"] == "flagged, not judged"


def test_diff_flags_a_compiled_cell_that_ran_eager_as_compare_does(tmp_path: Path) -> None:
    """Before: a 'compiled' cell that hit its recompile limit and really ran eager was flagged by
    compare and called 'slower' or 'faster' by diff."""
    case = "b1-l16-contiguous-float32-compiled"
    before = _log(tmp_path / "a" / "events.jsonl", timing_log("compiled", seed=1))
    events = timing_log("ran-eager", scale=1.5, seed=2)
    next(e for e in events if e["kind"] == "timing" and e["case"] == case)["eager_after_recompile_limit"] = True
    after = _log(tmp_path / "b" / "events.jsonl", events)
    data = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    found = next(t for t in data["timings"] if t["case"] == case)
    assert found["verdict"] == "no verdict: flagged" and "recompile limit hit (after)" in found["flags"]


def test_the_trend_chart_draws_a_synthetic_run_hollow(tmp_path: Path) -> None:
    """Before: a synthetic run's warm medians were filled markers on the workload's trend chart,
    like measured ones."""
    page = _measured_then_synthetic(tmp_path)
    trend = page[page.index("Trend") :]
    marks = trend.count("synthetic fixture, not a measurement")
    assert marks >= 1 and trend.count('class="ring"') >= marks, (marks, trend.count('class="ring"'))


def test_the_workload_page_tags_a_comparison_of_a_synthetic_run(tmp_path: Path) -> None:
    """Before: the workload page linked 'cuda against cpu' with no word that a side was synthetic."""
    root = tmp_path / "runs"
    _log(root / "cpu" / "events.jsonl", timing_log("on-cpu", seed=1))
    _log(root / "cuda" / "events.jsonl", timing_log("on-cuda", "cuda", "cuda", seed=2))
    (root / "site.toml").write_text(
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n', encoding="utf-8"
    )
    build_site([root], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    links = page[page.index("Comparisons between targets") :].split("</p>", 1)[0]
    assert "cuda against cpu</a>" in links and '<span class="tag">synthetic</span>' in links


def test_compare_says_a_native_neuron_run_is_evidence_for_neuron_and_a_cpu_one_is_not(tmp_path: Path) -> None:
    """Before: a run with target neuron that ran on neuron-native (neuron's evidence family) got
    the note 'The candidate planned target neuron but ran on neuron-native: it is evidence for
    neuron-native only', as the family string differs from the target's. Now: no such note for
    it; a run with target neuron on the host CPU is noted as not evidence for neuron, named as the
    target it ran with (the plan's resolved target, not an intended one)."""
    base = _log(tmp_path / "cuda" / "events.jsonl", timing_log("on-cuda", "cuda", "cuda", seed=0))
    native = _log(tmp_path / "native" / "events.jsonl", timing_log("on-neuron", "neuron", "neuron-native", seed=1))
    on_cpu = _log(tmp_path / "cpu" / "events.jsonl", timing_log("neuron-on-cpu", "neuron", "cpu", seed=2))
    notes = {}
    for name, cand in (("native", native), ("cpu", on_cpu)):
        out = tmp_path / f"cmp-{name}"
        result = RUNNER.invoke(main, ["compare", str(base), str(cand), "--out", str(out), "--format", "json,md"])
        assert result.exit_code == 0, result.output
        notes[name] = json.loads((out / "compare.json").read_text(encoding="utf-8"))["notes"]
        md = (out / "compare.md").read_text(encoding="utf-8")
        assert ("evidence for neuron-native only" in md, "not evidence for neuron" in md) == (False, name == "cpu")
    assert not [n for n in notes["native"] if "evidence for" in n and "synthetic" not in n], notes["native"]
    assert (
        "The candidate ran with target neuron (as its collector resolved it) but on cpu: it is not evidence for neuron."
        in notes["cpu"]
    )
