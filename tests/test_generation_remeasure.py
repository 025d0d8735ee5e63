"""A generation cell's warm generations are taken again while a series of them is unstable
(collector 0.18.0, event schema 1.7), the earlier series kept in its generation event, and
reportgen judges the reported series against them and refuses an earlier series that was stable.

The collector here is the real one on the tiny decoder; the seconds of its warm generations are
planted (``_planted``), so that which loop is unstable does not depend on this shared host's
load: a test of the re-measuring, not a measurement.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Callable

import pytest
import tomli_w

from collector.backends import select_backend
from collector.plan import load_plan
from collector.run import generation_cells
from collector.runner import Options, execute
from collector.timing import warm_stats
from reportgen.contract.validation import read_log
from reportgen.judge.changes import AGAIN_LABEL, GENERATION_ONCE, host_facts
from reportgen.judge.timing_stability import generation_flags
from reportgen.publish.diff import diff_runs
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from tests.conftest import REPO

TINY = REPO / "collector" / "workloads" / "decoder_lm.toml"
CASE = "b1-l6-contiguous-float32-eager"
REPS, STEPS = 10, 4  # warm repetitions asked for here, and the tiny plan's decode steps
Seconds = Callable[[int, int], float]  # (repetition, call of it: 0 the prefill, 1.. decode) -> seconds


def two_speeds(i: int, call: int) -> float:
    """Every other generation five times slower: two modes, unstable."""
    return (5e-4 if i % 2 else 1e-4) * (1 if call == 0 else 0.5)


def steady(i: int, call: int) -> float:
    return 1.05e-4 * (1 + 0.01 * ((i + call) % 3)) * (1 if call == 0 else 0.5)


def slower(i: int, call: int) -> float:
    """Steady, but above the middle half of ``two_speeds``: a speed the cell did not run at before."""
    return 8e-4 * (1 + 0.01 * ((i + call) % 3)) * (1 if call == 0 else 0.5)


def _planted(monkeypatch: pytest.MonkeyPatch, loops: list[Seconds]) -> list[int]:
    """Each loop of warm generations the collector takes gets the next seconds of ``loops``, its
    host no CPU wait (the contention rule would read this host's load); returns the loops taken."""
    real = generation_cells._generation_loop
    taken: list[int] = []

    def loop(*args: Any) -> Any:
        found = real(*args)
        if found is None:
            return None
        traces, host = found
        seconds = loops[len(taken)]
        taken.append(len(taken) + 1)
        for i, trace in enumerate(traces):
            trace.prefill_s = seconds(i, 0)
            trace.decode_s = [seconds(i, step) for step in range(1, len(trace.decode_s) + 1)]
        host["cpu_wait_s"] = {**host["cpu_wait_s"], "value": "0.000000"}
        return traces, host

    monkeypatch.setattr(generation_cells, "_generation_loop", loop)
    return taken


def _plan(tmp_path: Path, rounds: int) -> Path:
    data = tomllib.loads(TINY.read_text(encoding="utf-8"))
    data["workload"]["module"] = str(TINY.parent / data["workload"]["module"])
    data["timing"]["remeasure_rounds"] = rounds
    out = tmp_path / "plan.toml"
    out.write_text(tomli_w.dumps(data), encoding="utf-8")
    return out


def _run(tmp_path: Path, rounds: int, name: str = "runs") -> Path:
    run_dir, code = execute(
        load_plan(_plan(tmp_path, rounds)),
        select_backend("cpu"),
        Options(
            target="cpu",
            out_dir=tmp_path / name,
            cold="off",
            modes=["eager"],
            only=["b1-l6-*"],
            warm_repetitions=REPS,
        ),
    )
    assert code == 0 and run_dir is not None
    return run_dir / "events.jsonl"


def _timing(log: Path) -> dict[str, Any]:
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return next(e for e in lines if e["kind"] == "generation" and e["case"] == CASE)["timing"]


def _problems(log: Path) -> list[str]:
    return [p.format() for p in read_log(log).problems]


@pytest.fixture(scope="module")
def remeasured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    """One run whose first loop of warm generations was unstable and its second stable; the loops taken."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        taken = _planted(monkeypatch, [two_speeds, steady, steady])
        return _run(tmp_path_factory.mktemp("remeasured"), rounds=2), taken


def test_an_unstable_loop_is_taken_again_and_kept_beside_the_stable_one(remeasured: tuple[Path, list[int]]) -> None:
    log, taken = remeasured
    assert taken == [1, 2], "the first loop was unstable: one more, which was stable, and no third"
    timing = _timing(log)
    assert (timing["attempt"], timing["attempts_allowed"]) == (2, 3)
    assert len(timing["earlier"]) == 1
    assert timing["earlier"][0]["ttft_warm"]["samples_s"] == [two_speeds(i, 0) for i in range(REPS)]
    assert timing["ttft_warm"]["samples_s"] == [steady(i, 0) for i in range(REPS)]
    assert "cpu_wait_s" in timing["earlier"][0]["host"], "each earlier series keeps the host around it"
    assert _problems(log) == []
    run = judge_log(log).run
    assert CASE not in generation_flags(run), "stable after a second series, within the first's speeds: it decides"
    assert host_facts(run)[AGAIN_LABEL].startswith("1, of 1 cell(s)")
    assert GENERATION_ONCE not in host_facts(run)[AGAIN_LABEL]
    performance = next(f.value for f in judge_log(log).view.scope.facts if f.label == "performance")
    assert performance.startswith("warm timing of all 2 generation series"), performance
    assert "(1 of those cells only when measured again, after an unstable series" in performance


def test_a_last_series_at_a_speed_the_earlier_did_not_run_at_decides_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _planted(monkeypatch, [two_speeds, slower])
    log = _run(tmp_path, rounds=2)
    assert _timing(log)["attempt"] == 2 and _problems(log) == []
    flags = generation_flags(judge_log(log).run)[CASE]
    assert set(flags) == {"ttft_warm", "decode_token"}
    assert all("after 2 warm series" in f and "the attempts disagree" in f for f in flags.values()), flags


def test_the_last_allowed_series_is_reported_unstable_and_none_is_taken_past_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = _planted(monkeypatch, [two_speeds, two_speeds, two_speeds])
    log = _run(tmp_path, rounds=1)
    assert taken == [1, 2]
    timing = _timing(log)
    assert (timing["attempt"], timing["attempts_allowed"], len(timing["earlier"])) == (2, 2, 1)
    assert "unstable timing after 2 warm series" in generation_flags(judge_log(log).run)[CASE]["ttft_warm"]


def test_no_rounds_means_one_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _planted(monkeypatch, [two_speeds, steady])
    timing = _timing(_run(tmp_path, rounds=0))
    assert taken == [1] and (timing["attempt"], timing["attempts_allowed"], timing["earlier"]) == (1, 1, [])


def _edited(log: Path, edit: Callable[[dict[str, Any]], None], tmp_path: Path) -> Path:
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    for event in lines:
        if event["kind"] == "generation" and event["case"] == CASE:
            edit(event["timing"])
    out = tmp_path / "edited.jsonl"
    out.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    return out


def _series(seconds: Seconds) -> dict[str, Any]:
    return {
        "ttft_warm": warm_stats([seconds(i, 0) for i in range(REPS)]),
        "decode_token": warm_stats([seconds(i, s) for i in range(REPS) for s in range(1, STEPS + 1)]),
    }


@pytest.mark.parametrize(
    "edit,message",
    [
        # A stable series measured again until one read otherwise: a figure chosen, not measured.
        (lambda t: t["earlier"][0].update(_series(steady)), "is stable by the classifier's rules"),
        (lambda t: t.update(attempt=3), "earlier holds 1 series, but attempt 3 follows 2"),
        (lambda t: t.update(attempts_allowed=5), "the plan's remeasure_rounds 2 allows 3 series"),
        (lambda t: t.update(attempt=4, attempts_allowed=3), "attempt 4 is past attempts_allowed 3"),
        (lambda t: t.pop("attempts_allowed"), "given together or not at all"),
        (
            lambda t: t["earlier"][0].update(ttft_warm=warm_stats([1e-4] * 3 + [5e-4] * 3)),
            "holds 6 first-token and 40 decode samples",
        ),
        (lambda t: t["earlier"][0]["ttft_warm"].update(median_s=1.0), "timing.earlier[0].ttft_warm.median_s"),
    ],
)
def test_a_log_whose_series_were_not_taken_as_the_collector_takes_them_is_refused(
    tmp_path: Path, remeasured: tuple[Path, list[int]], edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    problems = _problems(_edited(remeasured[0], edit, tmp_path))
    assert len(problems) == 1 and message in problems[0], problems


def _measured_once_then_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: list[Seconds]
) -> tuple[Path, Path]:
    """Two runs: the first steady at once, the second taken with the seconds of ``after`` in turn."""
    _planted(monkeypatch, [steady, *after])
    runs = _run(tmp_path, rounds=2, name="before"), _run(tmp_path, rounds=2, name="after")
    assert [_timing(log)["attempt"] for log in runs] == [1, len(after)]
    return runs


def test_diff_judges_each_run_s_reported_series_against_its_earlier_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, after = _measured_once_then_again(tmp_path, monkeypatch, [two_speeds, slower])
    result = diff_runs(summarize(judge_log(before)), summarize(judge_log(after)))
    changes = [t for t in result.timings if t.case == CASE and t.series]
    assert changes, "each generation series is compared"
    for change in changes:
        assert any("the attempts disagree" in f and "(after)" in f for f in change.flags), change.flags


def _reported(timing: dict[str, Any], seconds: Seconds) -> None:
    """The reported series replaced by ``seconds``, its figures and tokens/s as the collector writes them."""
    timing.update(_series(seconds))
    totals = sorted(sum(seconds(i, s) for s in range(1, STEPS + 1)) for i in range(REPS))
    timing["tokens_per_s"] = STEPS / ((totals[REPS // 2 - 1] + totals[REPS // 2]) / 2)


@pytest.mark.parametrize(
    "edit,plan_edit,message",
    [
        # An unstable series reported while the budget allowed another: the collector stops only
        # at a stable one or at the last allowed.
        (lambda t: _reported(t, two_speeds), None, "the reported series (attempt 2 of 3) is unstable"),
        # A 1.7 collector numbers every series it takes.
        (
            lambda t: [t.pop(k) for k in ("attempt", "attempts_allowed", "earlier")],
            None,
            "timing.attempt is not recorded: a 1.7 collector numbers every series",
        ),
        # With no remeasure_rounds in the plan event, the bound every plan keeps (at most 10 rounds).
        (
            lambda t: t.update(attempts_allowed=50),
            lambda plan: plan.pop("remeasure_rounds"),
            "timing.attempts_allowed is 50, but a plan allows at most 11 series",
        ),
    ],
)
def test_a_reported_series_the_collector_would_have_measured_again_is_refused(
    tmp_path: Path,
    remeasured: tuple[Path, list[int]],
    edit: Callable[[dict[str, Any]], None],
    plan_edit: Callable[[dict[str, Any]], None] | None,
    message: str,
) -> None:
    lines = [json.loads(line) for line in remeasured[0].read_text(encoding="utf-8").splitlines()]
    for event in lines:
        if event["kind"] == "generation" and event["case"] == CASE:
            edit(event["timing"])
        if event["kind"] == "plan" and plan_edit is not None:
            plan_edit(event)
    out = tmp_path / "edited.jsonl"
    out.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    problems = _problems(out)
    assert len(problems) == 1 and message in problems[0], problems


def test_the_fields_of_1_7_on_an_older_line_are_refused(tmp_path: Path, remeasured: tuple[Path, list[int]]) -> None:
    lines = [json.loads(line) for line in remeasured[0].read_text(encoding="utf-8").splitlines()]
    for event in lines:
        event["schema_version"] = "1.6"
    out = tmp_path / "older.jsonl"
    out.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    problems = _problems(out)
    assert len(problems) == 1, problems
    assert "timing.attempt, attempts_allowed and earlier are fields of schema 1.7, on a 1.6 line" in problems[0]


def alternating_steps(i: int, call: int) -> float:
    """First token at two speeds (unstable); decode steps alternating 0.7 and 1.15 (x 1e-4 s)
    within each repetition, so every repetition's whole decode time is the same."""
    return two_speeds(i, 0) if call == 0 else (0.7e-4 if call % 2 else 1.15e-4)


def slower_totals(i: int, call: int) -> float:
    """Steady, each decode step 1.2e-4 s: inside the earlier steps' window (0.7 to 1.15, +10%),
    but each repetition's whole decode time 30% above the earlier ones'."""
    return steady(i, 0) if call == 0 else 1.2e-4 * (1 + 0.01 * ((i + call) % 3))


def test_tokens_per_s_from_repetitions_at_a_speed_the_earlier_did_not_run_at_decides_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _planted(monkeypatch, [alternating_steps, slower_totals])
    log = _run(tmp_path, rounds=2)
    assert _timing(log)["attempt"] == 2 and _problems(log) == []
    judged = judge_log(log)
    # Step by step both series agree with the earlier ones; the repetitions' whole decode times
    # (tokens/s) do not, so the decode series is flagged for them (as diff and the exports flag it),
    # and tokens/s names that series.
    (flag,) = generation_flags(judged.run)[CASE].values()
    assert "repetitions' decode times" in flag and "the attempts disagree" in flag, flag
    assert "ttft_warm" not in generation_flags(judged.run)[CASE]
    assert judged.judgement.throughput_flags[CASE] == "from the decode series flagged beside it: decides nothing"
    assert "performance undecided for 1 of 2 generation series" in judged.disposition.headline


def test_a_plan_whose_series_measured_again_would_not_fit_on_one_line_is_refused(tmp_path: Path) -> None:
    from collector.plan import PlanError

    data = tomllib.loads(TINY.read_text(encoding="utf-8"))
    data["workload"]["module"] = str(TINY.parent / data["workload"]["module"])
    data["timing"].update(warm_repetitions=10_000, remeasure_rounds=2)  # 10,000 x 4 steps x 3 series
    plan = tmp_path / "plan.toml"
    plan.write_text(tomli_w.dumps(data), encoding="utf-8")
    with pytest.raises(PlanError, match=r"x \(1 \+ remeasure_rounds 2\) = 120,000 decode samples"):
        load_plan(plan)
    data["timing"]["remeasure_rounds"] = 0  # one series: 40,000 fit, as before
    plan.write_text(tomli_w.dumps(data), encoding="utf-8")
    assert load_plan(plan).remeasure_rounds == 0


def test_diff_and_compare_judge_tokens_per_s_against_the_earlier_repetitions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportgen.render.compare import gather

    before, after = _measured_once_then_again(tmp_path, monkeypatch, [alternating_steps, slower_totals])
    said = "repetitions' decode times (tokens/s): the attempts disagree"
    result = diff_runs(summarize(judge_log(before)), summarize(judge_log(after)))
    (decode,) = [t for t in result.timings if t.case == CASE and t.series.startswith("decode")]
    assert any(said in f and "(after)" in f for f in decode.flags), decode.flags
    compared = gather(before, after)
    (cell,) = [c for c in compared.cells if c.case == CASE]
    series = {s.series: s for s in cell.generation}
    assert any(said in f for f in series["decode_token"].flags), series["decode_token"].flags
