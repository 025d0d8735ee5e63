"""Uniform contention: other work that holds the CPUs slows every sample of a warm loop alike,
so the samples look stable. The collector records what the process's threads waited for a CPU
over each loop (schema 1.4), and the stability rule "contention" makes such a series decide
nothing, in the collector (which measures it again), the report, diff, compare and the site."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from collector import hostcondition
from collector.stability import STABLE, UNSTABLE, WAIT_PER_SECOND_MAX, classify
from reportgen.judge.judgement import judge
from reportgen.judge.timing_stability import series_flag, stability_word, timed_cells
from reportgen.model.runmodel import read_run, waited_of
from reportgen.publish.diff import diff_runs
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from tests import logbuilder
from tests.test_collector_stability import STEADY, fake_run, planted, run_cells

# --- the rule ------------------------------------------------------------------------------------


def test_a_steady_series_whose_threads_waited_is_unstable_for_contention_alone() -> None:
    busy = classify(STEADY, (0.5, 1.0))  # half a second waited in a loop of one second
    assert busy.verdict == UNSTABLE and [c.name for c in busy.reasons] == ["contention"]
    assert "waited for a CPU 0.50 s per second of the loop" in busy.reasons[0].note
    assert busy.to_dict()["checks"]["contention"]["wait_per_s"] == pytest.approx(0.5)
    quiet = classify(STEADY, (0.001, 1.0))
    assert quiet.verdict == STABLE and [c.name for c in quiet.checks][-1] == "contention"
    assert classify(STEADY).verdict == STABLE and "contention" not in [c.name for c in classify(STEADY).checks]


def test_the_threshold_is_a_tenth_of_a_second_waited_per_second_of_the_loop() -> None:
    wall = 2.0
    assert classify(STEADY, (WAIT_PER_SECOND_MAX * 0.99 * wall, wall)).verdict == STABLE
    assert classify(STEADY, (WAIT_PER_SECOND_MAX * 1.01 * wall, wall)).verdict == UNSTABLE
    # Many threads each waiting a little add up: 16 threads on 16 CPUs beside one busy process.
    assert classify(STEADY, (16 * wall / 17, wall)).verdict == UNSTABLE
    assert classify(STEADY, (0.5, 0.0)).verdict == UNSTABLE, "a wait with no loop time is no quiet loop"


# --- the collector's measurement -----------------------------------------------------------------


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or not Path("/proc/self/task").is_dir(), reason="Linux only")
def test_threads_waiting_behind_other_work_on_their_cpu_are_measured() -> None:
    """This process and two busy processes on one CPU: it waits about two thirds of the time."""
    cpu = min(os.sched_getaffinity(0))
    allowed = os.sched_getaffinity(0)
    code = f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\nend = time.perf_counter() + 3\nwhile time.perf_counter() < end: pass\n"
    busy = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.3)  # both are spinning by now
        before = hostcondition.thread_times()
        _spin(0.6)
        facts = hostcondition.cpu_time(before, hostcondition.thread_times())
    finally:
        os.sched_setaffinity(0, allowed)
        for process in busy:
            process.kill()
            process.wait()
    figures = hostcondition.waited(facts)
    assert figures is not None, facts
    wait, wall = figures
    assert 0.5 <= wall < 5 and wait / wall > WAIT_PER_SECOND_MAX, facts
    assert classify(STEADY, figures).verdict == UNSTABLE


def test_unreadable_scheduler_times_are_unknown_with_the_reason() -> None:
    facts = hostcondition.cpu_time("/proc/self/task not readable (No such file): not Linux", (0, {"1": (5, 0)}))
    assert set(facts) == {"cpu_run_s", "cpu_wait_s", "loop_wall_s"}
    assert all(f["value"] is None and "not Linux" in f["unknown_reason"] for f in facts.values())
    assert hostcondition.waited(facts) is None
    # A loop shorter than a scheduler tick that no switch interrupted: it ran, and schedstat
    # read nothing (the reason said the kernel does not account it).
    none_ran = hostcondition.cpu_time((0, {"1": (5, 0)}), (500_000, {"1": (5, 0)}))
    assert none_ran["cpu_run_s"]["unknown_reason"] == (
        "schedstat counted no time on a CPU over the loop (0.5 ms): the kernel adds a running "
        "thread's time at a scheduler tick or a switch, and the loop saw neither"
    )


def test_a_thread_started_during_the_loop_counts_from_its_start_and_one_gone_is_dropped() -> None:
    before = (1_000_000_000, {"1": (1_000, 10), "2": (500, 500), "4": (9_000, 900)})
    after = (3_000_000_000, {"1": (3_000_000, 20), "3": (1_000_000, 1_000), "4": (40, 4)})  # 4: a reused id
    facts = hostcondition.cpu_time(before, after)
    assert facts["cpu_run_s"]["value"] == f"{(2_999_000 + 1_000_000 + 40) / 1e9:.6f}"
    assert facts["cpu_wait_s"]["value"] == f"{(10 + 1_000 + 4) / 1e9:.6f}"
    assert facts["loop_wall_s"]["value"] == "2.000000"


def test_the_collector_measures_a_contended_series_again_and_flags_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    from collector.run import timings
    from collector.run.timings import WarmSeries

    contended = {"cpu_wait_s": {"value": "0.5", "source": "test"}, "loop_wall_s": {"value": "1.0", "source": "test"}}
    calls: list[str] = []

    def fake(run: Any, cell: Any, outcome: Any) -> WarmSeries:
        calls.append(cell.case)
        return WarmSeries(list(STEADY), ["model_call"], [], {}, False, dict(contended))

    monkeypatch.setattr(timings, "warm_series", fake)
    run = fake_run(rounds=2)
    run_cells(run, ["a"])
    assert calls == ["a", "a", "a"]
    stabilities = [e["stability"] for e in run.log.events]
    assert all(s["verdict"] == "unstable" and s["reasons"] == ["contention"] for s in stabilities)
    assert stabilities[-1]["flag"] == "unstable timing"


def test_a_quiet_loop_is_not_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    order = planted(monkeypatch, {"a": [STEADY]})
    run = fake_run(rounds=2)
    run_cells(run, ["a"])
    assert order == ["a"] and run.log.events[0]["stability"]["verdict"] == "stable"


# --- reportgen: every reader judges it alike ----------------------------------------------------


def _host(wait: str) -> dict[str, Any]:
    """A loop's CPU time figures: ``wait`` seconds waited in a loop of one second."""
    fact = {"source": "synthetic fixture"}
    return {
        "cpu_run_s": {"value": "0.900000", **fact},
        "cpu_wait_s": {"value": wait, **fact},
        "loop_wall_s": {"value": "1.000000", **fact},
    }


def _timing_log(tmp_path: Path, name: str, wait: str | None, run_id: str, seed: int = 0) -> Path:
    """A synthetic passing run of steady warm series (1% noise), each loop's threads having
    waited ``wait`` seconds for a CPU in a loop of 1 s (None: a 1.3 log, which records none)."""
    events = logbuilder.timing_log(run_id, seed=seed)
    for event in events:
        event["schema_version"] = "1.4" if wait is not None else "1.3"
        if event["kind"] == "timing" and event.get("warm") and wait is not None:
            event["host"] = _host(wait)
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def _run(path: Path) -> Any:
    reading, builder = read_run(path)
    assert reading.valid, [p.format() for p in reading.problems]
    return builder.build(reading)


def test_a_contended_run_decides_no_timing_in_its_report(tmp_path: Path) -> None:
    run = _run(_timing_log(tmp_path, "busy", "0.500000", "busy-run"))
    judged = timed_cells(run)
    assert judged and all(j.unstable and [c.name for c in j.stability.reasons] == ["contention"] for j in judged)
    headline = judge(run).disposition.headline
    assert f"performance undecided for {len(judged)} of {len(judged)} timed cells" in headline


def test_a_quiet_run_and_an_older_log_decide_as_before(tmp_path: Path) -> None:
    quiet = _run(_timing_log(tmp_path, "quiet", "0.001000", "quiet-run"))
    assert all(j.decides for j in timed_cells(quiet))
    unrecorded = _run(_timing_log(tmp_path, "old", None, "old-run"))
    assert all(j.decides for j in timed_cells(unrecorded))


@pytest.mark.parametrize("hostile", ["nan", "-1", "lots", "inf"])
def test_a_wait_that_is_no_figure_is_not_read(hostile: str) -> None:
    assert waited_of({"cpu_wait_s": hostile, "loop_wall_s": "1.0"}) is None
    assert waited_of({"cpu_wait_s": "0.1", "loop_wall_s": hostile}) is None


def test_the_site_summary_and_diff_carry_the_wait_and_flag_the_contended_side(tmp_path: Path) -> None:
    busy = summarize(judge_log(_timing_log(tmp_path, "busy", "0.500000", "busy-run")))
    quiet = summarize(judge_log(_timing_log(tmp_path, "quiet", "0.001000", "quiet-run")))
    cell = next(c for c in busy.cells.values() if c.warm_samples_s)
    assert cell.warm_waited == [0.5, 1.0]
    assert series_flag(cell.warm_samples_s, cell.warm_waited).startswith("unstable timing: threads waited for a CPU")
    assert stability_word(cell.warm_samples_s, cell.warm_waited) == "unstable"
    diff = diff_runs(quiet, busy)
    flagged = [t for t in diff.timings if any("threads waited for a CPU" in f and "(after)" in f for f in t.flags)]
    assert flagged and len(flagged) == len(diff.timings)


def test_the_history_marks_a_warm_point_whose_wait_was_not_recorded(tmp_path: Path) -> None:
    """A ratio against a log that recorded no CPU wait is flagged, but the site's warm trend drew
    that log's points filled, as judged results, and its caption did not say contention went
    unjudged there. Its points are hollow now, with the reason on hover; a quiet 1.4 run's and
    a contended one's (left out as unstable) are not called unjudged."""
    from reportgen.publish.frame import UNJUDGED_WAIT, history_frame
    from reportgen.render.charts import trend_figures

    logs = [
        _timing_log(tmp_path, "old", None, "old-run"),
        _timing_log(tmp_path, "quiet", "0.001000", "quiet-run", seed=1),
        _timing_log(tmp_path, "busy", "0.500000", "busy-run", seed=2),
    ]
    for day, log in enumerate(logs, start=1):  # oldest first, as the history orders them
        text = log.read_text(encoding="utf-8")
        first = json.loads(text.splitlines()[0])
        log.write_text(
            text.replace(json.dumps(first["started_at"]), json.dumps(f"2026-01-0{day}T00:00:00Z"), 1), encoding="utf-8"
        )
    frame = history_frame([summarize(judge_log(log)) for log in logs])
    caveats = {(r.run_id, r.case): r.caveats for r in frame.itertuples() if r.warm_median_s == r.warm_median_s}
    assert caveats and {run for run, _ in caveats} == {"old-run", "quiet-run"}, "the contended run's points left out"
    assert all(UNJUDGED_WAIT in text for (run, _), text in caveats.items() if run == "old-run")
    assert not any(UNJUDGED_WAIT in text for (run, _), text in caveats.items() if run == "quiet-run")
    case = next(case for run, case in caveats if run == "old-run")
    (warm,) = [f for f in trend_figures(frame, [case], "p") if f.id == "p-trend-warm"]
    points = {p.title.split(", ")[0].split(": ", 1)[1][:10]: p for s in warm.chart.series for p in s.points}
    assert points["2026-01-01"].hollow and UNJUDGED_WAIT in points["2026-01-01"].title
    assert UNJUDGED_WAIT not in points["2026-01-02"].title  # hollow as a synthetic fixture only
    assert "its log did not record the loop's CPU wait, so contention was not judged" in warm.caption


def test_compare_flags_the_contended_side_and_decides_nothing_from_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from reportgen.cli import main

    quiet = _timing_log(tmp_path, "quiet", "0.001000", "quiet-run")
    busy = _timing_log(tmp_path, "busy", "0.500000", "busy-run")
    out = tmp_path / "cmp"
    done = CliRunner().invoke(main, ["compare", str(quiet), str(busy), "--out", str(out), "--format", "json"])
    assert done.exit_code == 0, done.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    timed = [c for c in data["cells"] if c["candidate"]["warm_median_s"] is not None]
    assert timed and all(c["candidate"]["timing_flag"].startswith("unstable timing: threads waited") for c in timed)
    assert all(c["baseline"]["timing_flag"] is None for c in timed)
    assert len(data["unstable_cells"]) == len(timed)


def test_the_run_page_gives_the_range_of_the_loops_wait_and_it_splits_no_replicates(tmp_path: Path) -> None:
    from reportgen.judge.changes import FLAGGING_HOST_KEYS, WAIT_LABEL, host_facts, replicate_changes

    busy = _run(_timing_log(tmp_path, "busy", "0.500000", "busy-run"))
    quiet = _run(_timing_log(tmp_path, "quiet", "0.001000", "quiet-run"))
    assert host_facts(busy)[WAIT_LABEL] == "0.500 to 0.500 s"
    assert host_facts(quiet)[WAIT_LABEL] == "0.001 to 0.001 s"
    assert WAIT_LABEL not in host_facts(_run(_timing_log(tmp_path, "old", None, "old-run")))
    # A reading of the loops, like the load average: no host change between two runs of one host.
    assert WAIT_LABEL not in FLAGGING_HOST_KEYS
    assert replicate_changes(({}, {}, {}, host_facts(quiet)), ({}, {}, {}, host_facts(busy))) == []


# --- generation series: both come from one loop of warm generations -------------------------------


def _generation_log(tmp_path: Path, name: str, wait: str | None) -> Path:
    events = logbuilder.generation_timing_log(name)
    for event in events:
        event["schema_version"] = "1.4" if wait is not None else "1.3"
        if event["kind"] == "generation" and event.get("timing") and wait is not None:
            event["timing"]["host"] = _host(wait)
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def test_a_contended_generation_decides_no_series_and_no_throughput(tmp_path: Path) -> None:
    from reportgen.judge.timing_stability import generation_flags, throughput_flags

    busy = _run(_generation_log(tmp_path, "busy", "0.500000"))
    flags = generation_flags(busy)
    passing = [c.case for c in busy.cells_with("generation") if c.status == "pass"]
    assert passing and set(flags) == set(passing)
    assert all("threads waited for a CPU" in text for cell in flags.values() for text in cell.values())
    assert set(throughput_flags(busy)) == set(passing)
    quiet = _run(_generation_log(tmp_path, "quiet", "0.001000"))
    assert not any("waited for a CPU" in t for cell in generation_flags(quiet).values() for t in cell.values())


def test_diff_and_compare_flag_a_contended_generation_series(tmp_path: Path) -> None:
    from reportgen.judge.comparison import JudgedSide, compare_runs

    quiet, busy = _generation_log(tmp_path, "quiet", "0.001000"), _generation_log(tmp_path, "busy", "0.500000")
    summary = summarize(judge_log(busy))
    waited = [c.generation_waited for c in summary.cells.values() if c.generation]
    assert waited and all(w == [0.5, 1.0] for w in waited)
    diff = diff_runs(summarize(judge_log(quiet)), summary)
    series = [t for t in diff.timings if t.series]
    assert series and all(any("threads waited for a CPU" in f and "(after)" in f for f in t.flags) for t in series)
    comparison = compare_runs(*(JudgedSide(j.run, j.notes, j.disposition) for j in map(judge_log, (quiet, busy))))
    compared = [s for c in comparison.cells for s in c.generation]
    assert compared and all(any("threads waited for a CPU" in f for f in s.flags) for s in compared)


def test_a_changed_thread_count_around_generation_loops_is_named_and_flags_their_ratios(tmp_path: Path) -> None:
    """A generation run's host facts are read around its warm generations only (no timed cell):
    diff read the host from timed cells alone, so two generation runs whose threads changed read
    'threads ... not recorded: a host change cannot be ruled out' and gave every series a verdict."""
    from reportgen.judge.comparison import JudgedSide, compare_runs

    logs = []
    for name, threads in (("two", "2 intra-op, 2 inter-op"), ("one", "1 intra-op, 1 inter-op")):
        log = _generation_log(tmp_path, name, "0.001000")
        events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        for event in events:
            if event["kind"] == "generation" and event.get("timing"):
                event["timing"]["host"]["torch_threads"] = {"value": threads, "source": "synthetic fixture"}
        log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
        logs.append(log)
    before, after = (summarize(judge_log(log)) for log in logs)
    diff = diff_runs(before, after)
    assert ("torch threads", "2 intra-op, 2 inter-op", "1 intra-op, 1 inter-op") in diff.host
    series = [t for t in diff.timings if t.series]
    assert series and all(any("host changed: torch threads" in f for f in t.flags) for t in series)
    comparison = compare_runs(*(JudgedSide(j.run, j.notes, j.disposition) for j in map(judge_log, logs)))
    assert any(key == "torch threads" for key, *_ in comparison.host)


def test_a_ratio_against_a_log_without_the_wait_is_flagged_in_diff_and_compare(tmp_path: Path) -> None:
    """A 1.3 log's loops may have waited unseen: a ratio against it decides nothing, as one
    against a log that did not record its timed region does."""
    from reportgen.judge.comparison import JudgedSide, compare_runs

    old, quiet = _timing_log(tmp_path, "old", None, "old-run"), _timing_log(tmp_path, "quiet", "0.001000", "quiet-run")
    diff = diff_runs(summarize(judge_log(old)), summarize(judge_log(quiet)))
    assert diff.timings and all(
        "CPU wait not recorded on the before: contention not judged there" in t.flags for t in diff.timings
    )
    comparison = compare_runs(*(JudgedSide(j.run, j.notes, j.disposition) for j in map(judge_log, (quiet, old))))
    timed = [c.timing for c in comparison.cells if c.timing is not None]
    assert timed and all(
        "CPU wait not recorded on the candidate: contention not judged there" in t.flags for t in timed
    )
    both = diff_runs(summarize(judge_log(quiet)), summarize(judge_log(_timing_log(tmp_path, "q2", "0.002000", "q2"))))
    assert not any("CPU wait not recorded" in f for t in both.timings for f in t.flags)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("nan", "host.cpu_wait_s is 'nan', not seconds written as digits with at most one point"),
        ("-0.5", "host.cpu_wait_s is '-0.5', not seconds"),
        ("1e400", "host.cpu_wait_s is '1e400', not seconds"),
        ("0_02", "host.cpu_wait_s is '0_02', not seconds"),
        (None, None),  # unknown with its reason: valid, and the page says contention was not judged
    ],
)
def test_a_14_log_whose_wait_is_no_plain_figure_is_refused_at_its_line(
    tmp_path: Path, value: str | None, expected: str | None
) -> None:
    from reportgen.contract.validation import read_log
    from reportgen.judge.changes import WAIT_LABEL, host_facts

    path = _timing_log(tmp_path, "bad", "0.001000", "bad-run")
    lines = path.read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines) if '"kind": "timing"' in line and '"warm"' in line)
    event = json.loads(lines[number])
    event["host"]["cpu_wait_s"] = (
        {"value": value, "source": "x"} if value is not None else {"value": None, "unknown_reason": "not Linux"}
    )
    lines[number] = json.dumps(event)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    reading = read_log(path)
    errors = [p.format() for p in reading.problems if p.severity == "error"]
    if expected is None:
        assert errors == []
        assert "not read for 1 loop(s): contention not judged there" in host_facts(_run(path))[WAIT_LABEL]
    else:
        assert len(errors) == 1 and f":{number + 1}: " in errors[0] and expected in errors[0], errors


def test_a_14_log_without_the_figures_is_refused(tmp_path: Path) -> None:
    from reportgen.contract.validation import read_log

    path = _timing_log(tmp_path, "bare", "0.001000", "bare-run")
    text = path.read_text(encoding="utf-8").replace(
        '"loop_wall_s": {"value": "1.000000", "source": "synthetic fixture"}', '"x": {"value": "1", "source": "y"}'
    )
    path.write_text(text, encoding="utf-8")
    errors = [p.format() for p in read_log(path).problems if p.severity == "error"]
    assert errors and all("host lacks loop_wall_s" in e for e in errors)


def test_the_wait_flag_reads_every_replicate_whatever_their_order(tmp_path: Path) -> None:
    """Only the first run of a side was read: listed second, a replicate without the wait let a
    ratio decide; listed first, it flagged every one. (The replicate without it reads it as
    unknown in a 1.4 log: a 1.3 log is another collector generation, no replicate of a 1.4 one.)"""
    quiet = summarize(judge_log(_timing_log(tmp_path, "quiet", "0.001000", "quiet-run", seed=1)))
    old_log = _timing_log(tmp_path, "old", "0.001000", "old-run", seed=2)
    events = [json.loads(line) for line in old_log.read_text(encoding="utf-8").splitlines()]
    for event in events:
        if event["kind"] == "timing" and event.get("warm"):
            event["host"]["cpu_wait_s"] = {"value": None, "unknown_reason": "schedstat is not readable (synthetic)"}
    old_log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    old = summarize(judge_log(old_log))
    after = summarize(judge_log(_timing_log(tmp_path, "after", "0.001000", "after-run", seed=3)))
    for before in ([quiet, old], [old, quiet]):
        diff = diff_runs(before, after)
        assert diff.timings and all(
            "CPU wait not recorded on the before: contention not judged there" in t.flags for t in diff.timings
        ), [t.flags for t in diff.timings][:2]


def test_a_14_warm_loop_without_its_host_or_shorter_than_its_samples_is_refused(tmp_path: Path) -> None:
    from reportgen.contract.validation import read_log

    for name, change, expected in (
        ("nohost", lambda e: e.pop("host"), "host is not recorded: a 1.4 warm loop records its host"),
        ("nullhost", lambda e: e.update(host=None), "host is not recorded"),
        ("wall0", lambda e: e["host"]["loop_wall_s"].update(value="0"), "host.loop_wall_s is 0.000000 s, shorter than"),
    ):
        path = _timing_log(tmp_path, name, "0.001000", f"{name}-run")
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        timing = next(e for e in events if e["kind"] == "timing" and e.get("warm"))
        change(timing)
        path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
        errors = [p.format() for p in read_log(path).problems if p.severity == "error"]
        assert len(errors) == 1 and expected in errors[0], (name, errors)


def test_a_generation_only_run_page_gives_the_wait_of_its_loops(tmp_path: Path) -> None:
    from reportgen.judge.changes import WAIT_LABEL

    judged = judge_log(_generation_log(tmp_path, "gen", "0.001000"))
    assert judged.judgement is not None
    assert dict(judged.judgement.loop_host)[WAIT_LABEL] == "0.001 to 0.001 s"


def _unread_wait_log(tmp_path: Path, name: str, schema: str, scale: float, seed: int, started: str) -> Path:
    """A synthetic passing run whose every warm loop recorded its host (threads, affinity, CPU
    count and governor alike in every run) but not the CPU wait: null with its reason in a log of
    ``schema`` 1.4 on, which records it where the host can read it; absent in an older one."""
    fact = {"source": "synthetic fixture"}
    events = logbuilder.timing_log(name, scale=scale, seed=seed)
    events[0]["started_at"] = started
    for event in events:
        event["schema_version"] = schema
        if event["kind"] == "timing" and event.get("warm"):
            host = {
                key: {"value": value, **fact}
                for key, value in (
                    ("torch_threads", "2 intra-op, 2 inter-op"),
                    ("cpu_affinity", "0-1"),
                    ("cpu_count", "2"),
                    ("cpu_governor", "performance"),
                )
            }
            if schema != "1.3":
                host["cpu_run_s"] = {"value": "0.900000", **fact}
                host["cpu_wait_s"] = {
                    "value": None,
                    "unknown_reason": "the host's scheduler statistics are not readable",
                }
                host["loop_wall_s"] = {"value": "1.000000", **fact}
            event["host"] = host
    path = tmp_path / "runs" / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def test_a_pair_whose_logs_could_record_the_wait_but_neither_did_is_flagged_in_diff_compare_and_history(
    tmp_path: Path,
) -> None:
    """Before: two 1.7 logs whose warm loops both recorded cpu_wait_s as unknown gave diff a bare
    'slower' on every cell (and compare and the site's history alike), while a pair with one side
    lacking it was flagged: wait_flag said nothing 'when none recorded it', meant for logs that
    predate the figure. Now: every ratio of such a pair carries 'CPU wait not recorded on the
    before and after' and decides nothing; two 1.3 logs, which cannot record it, decide as before."""
    from click.testing import CliRunner

    from reportgen.cli import main
    from reportgen.publish.site import build_site

    a = _unread_wait_log(tmp_path, "unread-a", "1.7", 1.0, 1, "2026-01-01T00:00:00Z")
    b = _unread_wait_log(tmp_path, "unread-b", "1.7", 1.5, 2, "2026-01-02T00:00:00Z")
    flag = "CPU wait not recorded on the before and after: contention not judged there"
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    assert len(diff.timings) == 4 and all(flag in t.flags for t in diff.timings), [t.flags for t in diff.timings]
    assert not any(diff.verdict_counts().values()) and diff.geomean is None
    text = CliRunner().invoke(main, ["diff", str(a), str(b)]).output
    assert text.count(f"no verdict: flagged [{flag}]") == 4 and ": slower" not in text, text[-1200:]
    out = tmp_path / "cmp"
    assert CliRunner().invoke(main, ["compare", str(a), str(b), "--out", str(out), "--format", "json"]).exit_code == 0
    cells = json.loads((out / "compare.json").read_text(encoding="utf-8"))["cells"]
    assert len(cells) == 4 and all(
        "CPU wait not recorded on the baseline and candidate: contention not judged there" in c["timing"]["flags"]
        and c["timing"]["verdict"] == "flagged, not judged"
        for c in cells
    )
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert flag in page
    old = [
        _unread_wait_log(tmp_path / "old", f"old-{n}", "1.3", s, n, f"2026-01-0{n}T00:00:00Z")
        for n, s in ((1, 1.0), (2, 1.5))
    ]
    before = diff_runs(*(summarize(judge_log(log)) for log in old))
    assert before.verdict_counts()["slower"] == 4 and not any("CPU wait" in f for t in before.timings for f in t.flags)


def test_the_collector_logs_a_loop_whose_wait_was_not_read_unclassified_as_the_report_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A review: with the CPU wait recorded unknown over a short loop, the collector logged the
    series 'stable' (no contention rule could fail) and the report called it not classified:
    the page and the collector disagreed about one series. Now the log says unclassified, why."""
    from collector.run.timings import WarmSeries, record_series
    from collector.stability import UNCLASSIFIED, WAIT_NOT_READ

    host = {
        "cpu_count": {"value": "2", "source": "test"},
        "cpu_wait_s": {"value": None, "unknown_reason": "schedstat counted no time on a CPU over the loop"},
        "loop_wall_s": {"value": "0.003650", "source": "test"},
    }
    run = fake_run(rounds=2)
    verdict = record_series(
        run, SimpleNamespace(case="a"), WarmSeries(list(STEADY), ["model_call"], [], {}, False, host), 1
    )
    (event,) = run.log.events
    assert verdict.verdict == UNCLASSIFIED and event["stability"]["verdict"] == "unclassified"
    assert event["stability"]["note"] == WAIT_NOT_READ and "a" not in run.unsteady, "final: not measured again"
    # Read (or not recorded at all, as before 1.4): classified as before.
    read = dict(host, cpu_wait_s={"value": "0.000001", "source": "test"})
    assert (
        record_series(
            run, SimpleNamespace(case="b"), WarmSeries(list(STEADY), ["model_call"], [], {}, False, read), 1
        ).verdict
        == STABLE
    )
    older = {"cpu_count": host["cpu_count"]}
    assert (
        record_series(
            run, SimpleNamespace(case="c"), WarmSeries(list(STEADY), ["model_call"], [], {}, False, older), 1
        ).verdict
        == STABLE
    )


def test_the_banner_names_an_unread_wait_as_the_reason_a_timing_is_not_classified(tmp_path: Path) -> None:
    """A review: the banner said 'a warm series the rules cannot classify (too few samples, or
    every sample one value)' of series of distinct samples whose CPU wait was not read."""
    log = _unread_wait_log(tmp_path, "unread", "1.7", 1.0, 1, "2026-01-01T00:00:00Z")
    judged = judge_log(log)
    assert judged.judgement is not None and judged.judgement.undecided_unread == 4
    from reportgen.render.sections.disposition import unstable_timing_text

    title, text = unstable_timing_text(judged.judgement)
    assert "4 of 4 timed cells have a warm loop whose threads' CPU wait the collector could not read" in text
    assert "too few samples" not in text


def test_diff_and_compare_give_an_unread_wait_as_the_reason_a_series_is_not_classified() -> None:
    """A third review: with the collector's own verdict now 'unclassified' for an unread wait,
    diff and compare said 'the collector that measured it could not classify it (...); these rules
    call its samples stable', where the report gives the unread wait as the reason."""
    from collector.stability import WAIT_NOT_READ
    from reportgen.judge.timing_stability import UNCLASSIFIED_FLAG, UNREAD_WAIT, series_flag

    flag = series_flag(list(STEADY), None, logged=("unclassified", WAIT_NOT_READ), unread=True)
    assert flag == f"{UNCLASSIFIED_FLAG}: {UNREAD_WAIT}"
