"""The report's generation section: per bucket, compiles, time to first token, decode latency,
tokens per second, token agreement and the first divergent step; the scope names buckets and
decode steps. Read from the synthetic generation fixture (tests/logbuilder.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reportgen.render.report import build_report, judge_log
from tests.conftest import FIXTURES, REPO
from tests.logbuilder import dumps, generation_log

LOG = FIXTURES / "synthetic_generation.jsonl"


def _report(log: Path, out: Path) -> tuple[str, str]:
    build_report(log, out)
    return (out / "report.html").read_text(encoding="utf-8"), (out / "report.md").read_text(encoding="utf-8")


def _lines(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_the_section_shows_each_bucket_with_what_the_log_recorded(tmp_path: Path) -> None:
    html, md = _report(LOG, tmp_path)
    view = judge_log(LOG).view
    rows = {r.case: r for r in view.generation}
    assert [r.bucket for r in view.generation] == ["128", "128", "256", "256"], "grouped by bucket"
    compiles = [e for e in _lines(LOG) if e["kind"] == "compile"]
    for case, row in rows.items():
        logged = {e["generation_graph"]: e["graphs"] for e in compiles if e["case"] == case}
        # The compile count per graph the section states is the log's, bucket by bucket.
        stated = {graph: int(n) for graph, n in re.findall(r"(prefill|decode): (\d+) graph", row.compiles)}
        assert stated == logged, (case, row.compiles)
    assert rows["b1-l96-contiguous-float32-compiled"].compiles.startswith(
        "prefill: 1 graph, first call 22 s; decode: 1 graph"
    )
    assert "decode: 0 graphs (compiled earlier" in rows["b1-l240-contiguous-float32-compiled"].compiles
    assert rows["b1-l96-contiguous-float32-eager"].compiles == "eager: nothing compiled"
    passed = rows["b1-l96-contiguous-float32-compiled"]
    assert (
        passed.ttft_cold == "22 s"
        and passed.ttft_warm.startswith("1.5")
        and "per token" in passed.decode
        and passed.tokens_per_s
        == (
            "873.4/s; from the decode series flagged beside it: decides nothing"
            if "unstable timing" in passed.decode
            else "873.4/s"
        )
    )
    assert passed.agreement.startswith("7 of 7 steps agree") and passed.divergent == "none"
    assert view.timing_scope.startswith("generation cells: model calls only"), (
        "the scope as the generation events recorded it"
    )
    for text in (html, md):
        assert "Generation per bucket" in text
        assert "600 tokens are above the largest bucket 512: refused" in text
        assert "first divergent step" in text and "decode latency" in text and "decode tokens/s" in text
        # A review: tokens/s read as a request's rate; it is the decode steps' alone, and says so.
        assert "the prefill and its first token left out (not a whole request" in text


def test_a_divergence_planted_at_step_k_is_shown_as_step_k(tmp_path: Path) -> None:
    for k in (1, 4):
        log = tmp_path / f"k{k}.jsonl"
        log.write_text(dumps(generation_log(("compiled", k))), encoding="utf-8")
        html, md = _report(log, tmp_path / f"out{k}")
        row = next(r for r in judge_log(log).view.generation if r.case == "b1-l240-contiguous-float32-compiled")
        assert row.divergent == f"step {k}" and row.agreement.startswith(f"{k} of 7 steps agree")
        assert row.ttft_warm == "not timed", "a cell that did not pass is not timed"
        for text in (html, md):
            assert f"first divergent step: {k}" in text, "the problem entry names the step"
        assert re.search(rf"\|\s*step {k}\s*\|", md)


def test_the_scope_names_the_buckets_and_the_decode_steps(tmp_path: Path) -> None:
    log = tmp_path / "clean.jsonl"
    log.write_text(dumps(generation_log(None)), encoding="utf-8")
    judged = judge_log(log)
    facts = {r.label: r.value for r in judged.view.scope.facts}
    assert facts["buckets (request length → bucket)"] == "96 → bucket 128; 240 → bucket 256; 600 tokens refused"
    assert facts["decode steps"].startswith(
        "prefill then 6 greedy decode steps per request, static KV cache of 520 positions"
    )
    # Its timings are generation series, classified as warm series are: the scope counts those
    # that decide nothing and says where they are flagged (never "performance not measured").
    assert facts["performance"].startswith(
        "undecided for 4 of 8 generation series (time to first token or decode per token"
    )
    assert "flagged beside their figures in section 7" in facts["performance"]
    html, md = _report(log, tmp_path / "out")
    assert "96 → bucket 128" in html and "96 → bucket 128" in md


@pytest.mark.parametrize("fixture", ["synthetic_complete.jsonl", "synthetic_training.jsonl"])
def test_other_runs_have_no_generation_section(tmp_path: Path, fixture: str) -> None:
    html, md = _report(FIXTURES / fixture, tmp_path)
    assert "Generation per bucket" not in html and "Generation per bucket" not in md
    assert "buckets (request length" not in md


def test_a_request_the_declared_policy_refuses_is_said_and_does_not_block(tmp_path: Path) -> None:
    log = tmp_path / "clean.jsonl"
    log.write_text(dumps(generation_log(None)), encoding="utf-8")
    disposition = judge_log(log).disposition
    rules = {r.rule: r for r in disposition.reasons}
    assert rules["refused-requests"].outcome == "note" and "600 tokens" in rules["refused-requests"].message
    assert set(rules["refused-requests"].cases) == {
        "b1-l600-contiguous-float32-eager",
        "b1-l600-contiguous-float32-compiled",
    }
    assert "skipped-cells" not in rules and disposition.outcome == "suitable"
    # Without the request event the same skips are a gap in the evidence again.
    lines = [line for line in log.read_text(encoding="utf-8").splitlines() if '"kind": "request"' not in line]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rules = {r.rule: r for r in judge_log(bare).disposition.reasons}
    assert rules["skipped-cells"].outcome == "blocked" and "refused-requests" not in rules


def test_a_cell_that_failed_on_its_top_k_overlap_says_so(tmp_path: Path) -> None:
    """A cell whose greedy tokens met their criterion but whose top-k overlap fell below the
    plan's least read 'failed on: not recorded' (or 'greedy tokens', when the tokens diverged
    after the criterion's steps) beside a met token criterion."""
    events = generation_log(None)
    event = next(e for e in events if e["kind"] == "generation" and e["case"].endswith("compiled"))
    event["top_k_overlap"] = [0.6, *event["top_k_overlap"][1:]]
    event["top_k_passed"] = False
    del event["timing"]  # the collector times a passing cell only
    result = next(e for e in events if e["kind"] == "case_result" and e["case"] == event["case"])
    result["status"] = "mismatch"
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    judged = judge_log(log)
    cell = next(c for c in judged.run.cells if c.case == event["case"])
    from reportgen.judge.judgement import failing_quantity

    assert failing_quantity(cell) == "top-k overlap"
    html, _ = _report(log, tmp_path / "report")
    assert "top-k overlap" in html and "not recorded" not in html.split(event["case"])[1][:300]


def test_a_batch_of_several_sequences_says_its_decode_figures_are_a_sequences(tmp_path: Path) -> None:
    """A decode call of a batch of 4 gives 4 tokens: the page read '1.019 ms per token | 957.2/s'
    of a batch that made about 3,830 tokens a second."""
    from tests.logbuilder import generation_timing_log

    case = "b1-l96-contiguous-float32-eager"
    events = json.loads(json.dumps(generation_timing_log("batch-two")).replace(case, case.replace("b1-", "b2-")))
    for event in events:
        if event["kind"] == "plan":
            next(c for c in event["matrix"] if c["case"] == case.replace("b1-", "b2-"))["batch"] = 2
        if event["kind"] == "generation" and event["case"] == case.replace("b1-", "b2-"):
            event["tokens"], event["reference_tokens"] = event["tokens"] * 2, event["reference_tokens"] * 2
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    _, md = _report(log, tmp_path / "report")
    (row,) = [line for line in md.splitlines() if line.startswith("| 128 | 96 tokens | `b2-")]
    assert (
        "per token of each of 2 sequences (a decode step)" in row
        and "a sequence," in row
        and "for the batch of 2" in row
    )
    (single,) = [
        line for line in md.splitlines() if "`b1-l96-contiguous-float32-compiled`" in line and line.startswith("| 128")
    ]
    assert "a sequence" not in single


def _batch_two(run_id: str, scale: float = 1.0) -> list[dict]:
    """The generation timing fixture with its b1-l96 eager cell made a batch of 2 sequences."""
    from tests.logbuilder import generation_timing_log

    case = "b1-l96-contiguous-float32-eager"
    events = json.loads(
        json.dumps(generation_timing_log(run_id, scale=scale)).replace(case, case.replace("b1-", "b2-"))
    )
    for event in events:
        if event["kind"] == "plan":
            next(c for c in event["matrix"] if c["case"] == case.replace("b1-", "b2-"))["batch"] = 2
        if event["kind"] == "generation" and event["case"] == case.replace("b1-", "b2-"):
            event["tokens"], event["reference_tokens"] = event["tokens"] * 2, event["reference_tokens"] * 2
    return events


def test_diff_and_compare_call_a_batchs_decode_series_a_decode_step(tmp_path: Path) -> None:
    """diff and compare named a batch of 2's decode series 'decode per token', as a single
    sequence's: a step gives a token to each sequence."""
    from reportgen.judge.comparison import JudgedSide, compare_runs
    from reportgen.publish.diff import diff_runs
    from reportgen.publish.summary import summarize

    logs = []
    for name, scale in (("before", 1.0), ("after", 1.2)):
        log = tmp_path / name / "events.jsonl"
        log.parent.mkdir()
        log.write_text(dumps(_batch_two(name, scale)), encoding="utf-8")
        logs.append(log)
    diff = diff_runs(*(summarize(judge_log(log)) for log in logs))
    words = {t.case: t.series for t in diff.timings if t.series and t.series != "first token, warm"}
    assert words["b2-l96-contiguous-float32-eager"] == "decode step (a token to each of 2 sequences)"
    assert words["b1-l96-contiguous-float32-compiled"] == "decode per token"
    comparison = compare_runs(*(JudgedSide(j.run, j.notes, j.disposition) for j in map(judge_log, logs)))
    series = {
        (c.case, s.words) for c in comparison.cells for s in getattr(c, "generation", ()) if s.series == "decode_token"
    }
    assert ("b2-l96-contiguous-float32-eager", "decode step (a token to each of 2 sequences)") in series
    assert ("b1-l96-contiguous-float32-compiled", "decode per token") in series


def test_tokens_per_second_decides_nothing_when_the_repetitions_decode_times_split(tmp_path: Path) -> None:
    """One slow step in half the repetitions passes the per-step rules (a few outliers among
    many steps), yet those steps decide the throughput: tokens/s, one repetition's steps over the
    median repetition's decode time, sat between two groups no repetition ran at, unflagged."""
    from collector.stability import STABLE, classify
    from tests.logbuilder import _warm, generation_timing_log, tokens_per_s

    events = generation_timing_log("split-repetitions", seed=3)
    event = next(e for e in events if e["kind"] == "generation" and e.get("timing"))
    timing = event["timing"]
    reps = timing["repetitions"]
    steps = len(timing["decode_token"]["samples_s"]) // reps
    samples = [0.002 * (1 + 0.001 * (i % 7)) for i in range(reps * steps)]
    for r in range(0, reps, 2):  # every other repetition: one step ten times as long
        samples[r * steps] *= 10
    assert classify(samples).verdict == STABLE, "the per-step series passes its rules"
    timing["decode_token"] = _warm(samples)
    timing["tokens_per_s"] = tokens_per_s(timing)
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    _, md = _report(log, tmp_path / "report")
    (row,) = [line for line in md.splitlines() if f"`{event['case']}`" in line and line.startswith("| ")][-1:]
    assert "unstable timing across the" in row and "repetitions' decode times" in row


def test_the_criteria_say_what_a_generation_cell_judges(tmp_path: Path) -> None:
    """Before: a generation run's criteria section said "none declared: every element of every
    output and parameter is judged elementwise", while padded positions are not judged, and the
    tokens and decode-step logits are judged by other rules. It now says what is judged."""
    run = REPO / "sample_runs" / "scenario-a-text-service-cpu-20261205T075639Z-e9a837"
    build_report(run / "events.jsonl", tmp_path, formats=("md",))
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "every element of every output and parameter is judged elementwise" not in text
    assert "the prefill's logits at the real (unpadded) positions, elementwise" in text
    assert "top-5 overlap with the reference's" in text
