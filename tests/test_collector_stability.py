"""The collector's warm-series stability: host condition around each loop, re-measurement of an
unstable series in interleaved rounds, the "unstable timing" flag, and the plan key that bounds it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from collector import hostcondition
from collector.__main__ import main as collector_main
from collector.backends import Backend
from collector.backends.cuda import nvidia_smi
from collector.backends.neuron import NeuronBackend
from collector.plan import PlanError, load_plan
from collector.run import timings
from collector.run.timings import UNSTABLE_FLAG, WarmSeries, remeasure, time_warm_cell
from reportgen.contract.validation import read_log
from tests.conftest import REPO

SLEEPY = REPO / "tests" / "workloads" / "sleepy.toml"
SLEEPY_MODULE = "collector_workload_sleepy"  # the name collector.workload imports it under
HOST_KEYS = {
    "load_avg_before",
    "load_avg_after",
    "cpu_count",
    "cpu_affinity",
    "torch_threads",
    "cpu_governor",
    "accelerator_before",
    "accelerator_after",
    "cpu_run_s",
    "cpu_wait_s",
    "loop_wall_s",
}

STEADY = [0.010, 0.0101, 0.0099, 0.0100, 0.0102, 0.0098, 0.0100, 0.0101, 0.0099, 0.0100]
BIMODAL = [0.001, 0.001, 0.030, 0.001, 0.0011, 0.031, 0.001, 0.001, 0.030, 0.001]


class Log:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def write(self, kind: str, **fields: Any) -> None:
        self.events.append({"kind": kind, **fields})


def fake_run(rounds: int) -> Any:
    plan = SimpleNamespace(remeasure_rounds=rounds, training=None, warmup=0)
    return SimpleNamespace(
        plan=plan,
        unsteady={},
        passed={},
        log=Log(),
        progress=SimpleNamespace(say=lambda *a, **k: None),
        warm_repetitions=10,
        backend=Backend(),
    )


def planted(monkeypatch: pytest.MonkeyPatch, series: dict[str, list[list[float]]]) -> list[str]:
    """warm_series returns each cell's planted series in turn; the order of the loops is kept."""
    order: list[str] = []

    def fake(run: Any, cell: Any, outcome: Any) -> WarmSeries:
        order.append(cell.case)
        return WarmSeries(
            series[cell.case].pop(0), ["model_call"], [], {}, False, {"cpu_count": {"value": "2", "source": "test"}}
        )

    monkeypatch.setattr(timings, "warm_series", fake)
    return order


def run_cells(run: Any, cases: list[str]) -> None:
    for case in cases:
        cell = SimpleNamespace(case=case)
        outcome = SimpleNamespace(call=lambda: None)
        assert time_warm_cell(run, cell, outcome)  # type: ignore[arg-type]
        run.passed[case] = outcome
    remeasure(run, cases)


def test_unstable_series_are_measured_again_in_interleaved_rounds_until_stable_or_flagged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order = planted(monkeypatch, {"a": [BIMODAL] * 3, "b": [BIMODAL, STEADY], "c": [STEADY]})
    run = fake_run(rounds=2)
    run_cells(run, ["a", "b", "c"])
    # Round 1 takes a and b again one after the other; b is then stable, a gets round 2.
    assert order == ["a", "b", "c", "a", "b", "a"]
    by_case: dict[str, list[dict[str, Any]]] = {}
    for event in run.log.events:
        by_case.setdefault(event["case"], []).append(event)
    assert [e["attempt"] for e in by_case["a"]] == [1, 2, 3]
    assert [e["stability"]["verdict"] for e in by_case["a"]] == ["unstable"] * 3
    assert [e["stability"].get("flag") for e in by_case["a"]] == [None, None, UNSTABLE_FLAG]
    assert "bimodality" in by_case["a"][-1]["stability"]["reasons"]
    assert all(e["stability"]["attempts_allowed"] == 3 and e["warm"]["samples_s"] for e in run.log.events)
    assert [e["stability"]["verdict"] for e in by_case["b"]] == ["unstable", "stable"]
    assert all("flag" not in e["stability"] for e in by_case["b"] + by_case["c"])
    assert [e["attempt"] for e in by_case["c"]] == [1]
    assert run.unsteady == {}


def test_with_no_rounds_the_first_unstable_series_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    order = planted(monkeypatch, {"a": [BIMODAL]})
    run = fake_run(rounds=0)
    run_cells(run, ["a"])
    assert order == ["a"]
    assert run.log.events[0]["stability"]["flag"] == UNSTABLE_FLAG


def test_a_series_too_short_to_classify_is_final(monkeypatch: pytest.MonkeyPatch) -> None:
    order = planted(monkeypatch, {"a": [[0.01, 0.03]]})
    run = fake_run(rounds=3)
    run_cells(run, ["a"])
    assert order == ["a"]
    assert run.log.events[0]["stability"]["verdict"] == "unclassified"
    assert "flag" not in run.log.events[0]["stability"]


def test_a_failing_remeasurement_ends_that_cells_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake(run: Any, cell: Any, outcome: Any) -> WarmSeries | None:
        calls.append(cell.case)
        return WarmSeries(list(BIMODAL), ["model_call"], [], {}, False, {}) if len(calls) == 1 else None

    monkeypatch.setattr(timings, "warm_series", fake)
    run = fake_run(rounds=3)
    run_cells(run, ["a"])
    assert calls == ["a", "a"] and run.unsteady == {}


def test_the_collector_remeasures_a_workload_that_sleeps_on_some_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # The collector's command line in this process: the cells are eager, so the run starts no
    # fresh process either way (and importing torch again in one would cost seconds of CPU).
    # The workload module is loaded anew, so its call counts start at zero.
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, SLEEPY_MODULE, raising=False)
    try:
        code = collector_main(["--workload", str(SLEEPY), "--target", "cpu", "--out", str(tmp_path)])
    finally:
        sys.modules.pop(SLEEPY_MODULE, None)
    stderr = capfd.readouterr().err
    assert code == 0, stderr[-3000:]
    assert "re-measuring" in stderr and "unstable timing after 4 warm series" in stderr
    (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    reading = read_log(run_dir / "events.jsonl")
    assert reading.problems == [], [p.format() for p in reading.problems]
    plan = next(e for e in reading.events if e.kind == "plan")
    assert plan.remeasure_rounds == 3
    warm = [e for e in reading.events if e.kind == "timing" and e.warm]
    always = [e for e in warm if e.case.startswith("b1-")]
    # Every third call sleeps: each of the 1 + 3 allowed series is bimodal, the last is flagged.
    assert [e.attempt for e in always] == [1, 2, 3, 4]
    # Unstable every time; which rules say so depends on this host's noise around the sleeps (on a
    # loaded host the fast calls spread too), so bimodality is asked of one series, not of each.
    assert all(e.stability.verdict == "unstable" and e.stability.reasons for e in always)
    assert any("bimodality" in e.stability.reasons for e in always)
    assert all(len(e.warm.samples_s) == 10 for e in always)
    assert [e.stability.flag for e in always] == [None, None, None, "unstable timing"]
    # Batch 2 sleeps in its first series only: that one is unstable; the rounds stop at the
    # first series that is not (how soon depends on this host's own noise).
    settles = [e for e in warm if e.case.startswith("b2-")]
    assert settles[0].stability.verdict == "unstable"
    assert all(e.stability.verdict == "unstable" for e in settles[:-1])
    assert (settles[-1].stability.flag == "unstable timing") == (settles[-1].stability.verdict == "unstable")
    for event in warm:
        assert set(event.host) == HOST_KEYS
        assert all((f.value is None) != (f.unknown_reason is None) for f in event.host.values())
    assert warm[0].host["accelerator_before"].unknown_reason.startswith("target cpu")


def test_each_host_fact_is_a_value_or_an_unknown_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    condition = hostcondition.after_loop(Backend(), hostcondition.before_loop(Backend()), hostcondition.thread_times())
    assert set(condition) == HOST_KEYS
    for fact in condition.values():
        assert (fact["value"] is None) == bool(fact.get("unknown_reason"))
    monkeypatch.setattr(os, "getloadavg", lambda: (_ for _ in ()).throw(OSError("no load average here")))
    assert "no load average here" in hostcondition.load_average()["unknown_reason"]


def test_the_governor_reads_each_allowed_cpu_and_says_why_when_it_cannot() -> None:
    def hidden(path: str) -> str:
        raise FileNotFoundError(2, "No such file or directory")

    fact = hostcondition.governor([0, 1], hidden)
    assert (
        fact["value"] is None
        and "cpu0/cpufreq/scaling_governor" in fact["unknown_reason"]
        and "1 more" in fact["unknown_reason"]
    )
    assert hostcondition.governor([0, 1, 2], lambda p: "performance")["value"] == "performance"
    mixed = hostcondition.governor([0, 1, 2, 3], lambda p: "powersave" if "cpu3" in p else "performance")
    assert mixed["value"] == "performance on CPUs 0-2; powersave on CPUs 3"
    assert hostcondition.cpu_ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def test_gpu_clocks_and_temperature_from_nvidia_smi_or_why_not() -> None:
    ok = nvidia_smi("GPU-x", lambda: SimpleNamespace(returncode=0, stdout="1980, 2619, 41\n", stderr=""))
    assert isinstance(ok, dict)
    assert {k: f["value"] for k, f in ok.items()} == {
        "gpu_sm_clock_mhz": "1980",
        "gpu_memory_clock_mhz": "2619",
        "gpu_temperature_c": "41",
    }
    partial = nvidia_smi("0", lambda: SimpleNamespace(returncode=0, stdout="[N/A], 2619, 41\n", stderr=""))
    assert (
        isinstance(partial, dict)
        and partial["gpu_sm_clock_mhz"]["value"] is None
        and "N/A" in partial["gpu_sm_clock_mhz"]["unknown_reason"]
    )

    def missing() -> Any:
        raise FileNotFoundError("nvidia-smi")

    assert nvidia_smi("0", missing) == "nvidia-smi not found"
    failed = nvidia_smi("0", lambda: SimpleNamespace(returncode=6, stdout="", stderr="No devices were found"))
    assert isinstance(failed, str) and "exited 6" in failed and "No devices" in failed


def test_neuron_says_its_accelerator_condition_is_not_measured() -> None:
    fact = NeuronBackend.accelerator_condition(object())  # type: ignore[arg-type]
    assert fact["accelerator"]["value"] is None and fact["accelerator"]["unknown_reason"].startswith("not measured")


def _plan_with(folder: Path, line: str) -> Path:
    folder.mkdir()
    (folder / "sleepy.py").write_text((REPO / "tests" / "workloads" / "sleepy.py").read_text())
    (folder / "sleepy.toml").write_text(SLEEPY.read_text().replace("remeasure_rounds = 3\n", line))
    return folder / "sleepy.toml"


def test_the_plan_declares_the_remeasure_budget_with_a_default_and_bounds(tmp_path: Path) -> None:
    plan = load_plan(_plan_with(tmp_path / "default", ""))
    assert plan.remeasure_rounds == 2 and plan.event_fields(plan.cells)["remeasure_rounds"] == 2
    assert load_plan(_plan_with(tmp_path / "none", "remeasure_rounds = 0\n")).remeasure_rounds == 0
    bad = {
        "over": ("remeasure_rounds = 11\n", "expected at most 10"),
        "negative": ("remeasure_rounds = -1\n", "expected at least 0"),
        "text": ('remeasure_rounds = "2"\n', "expected an integer"),
    }
    for name, (line, message) in bad.items():
        with pytest.raises(PlanError, match=message) as caught:
            load_plan(_plan_with(tmp_path / name, line))
        assert "sleepy.toml:22: timing.remeasure_rounds:" in str(caught.value)


def test_a_failing_nvidia_smi_is_asked_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from collector.backends import cuda

    asked: list[str] = []

    def failing(selector: str) -> str:
        asked.append(selector)
        return "nvidia-smi failed: timed out after 10 s"

    monkeypatch.setattr(cuda, "nvidia_smi", failing)
    monkeypatch.setattr(cuda, "gpu_selector", lambda index: "0")
    monkeypatch.setattr(cuda.torch.cuda, "current_device", lambda: 0)
    backend = object.__new__(cuda.CudaBackend)  # no GPU here: the adapter without its constructor
    first, second = backend.accelerator_condition(), backend.accelerator_condition()
    assert asked == ["0"]
    for reading in (first, second):
        assert set(reading) == {"gpu_sm_clock_mhz", "gpu_memory_clock_mhz", "gpu_temperature_c"}
        assert all(f["value"] is None and "timed out" in f["unknown_reason"] for f in reading.values())


@pytest.mark.slow
def test_a_compiled_cell_is_remeasured_in_its_fresh_process(tmp_path: Path) -> None:
    # Compiled cells are checked, timed and re-measured in a fresh child process; its later
    # attempts come back with the child's last flush.
    folder = tmp_path / "plan"
    folder.mkdir()
    (folder / "sleepy.py").write_text((REPO / "tests" / "workloads" / "sleepy.py").read_text())
    text = (
        SLEEPY.read_text()
        .replace('modes = ["eager"]', 'modes = ["compiled"]')
        .replace("shapes = [[1, 4], [2, 4]]", "shapes = [[1, 4]]")
    )
    (folder / "sleepy.toml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "collector",
            "--workload",
            str(folder / "sleepy.toml"),
            "--target",
            "cpu",
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = [d for d in (tmp_path / "out").iterdir() if d.is_dir()]
    reading = read_log(run_dir / "events.jsonl")
    assert reading.problems == [], [p.format() for p in reading.problems]
    warm = [e for e in reading.events if e.kind == "timing" and e.warm]
    assert [e.attempt for e in warm] == [1, 2, 3, 4]
    assert warm[-1].stability.flag == "unstable timing" and all(set(e.host) == HOST_KEYS for e in warm)


def test_a_share_just_past_its_bar_is_not_printed_equal_to_it() -> None:
    """A review: '21 of 200 samples beyond the outer Tukey fences (10% > 10%)'."""
    from collector import stability

    verdict = stability.classify([1.0] * 150 + [1.001] * 29 + [50.0] * 21)
    said = str(verdict.to_dict())
    assert "21 of 200 samples beyond the outer Tukey fences (10.5% > 10%)" in said, said
