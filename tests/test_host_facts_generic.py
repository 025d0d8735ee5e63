"""The accelerator's readings around the warm loops are compared whatever backend's adapter
logged them (collector/hostcondition.py writes each key of ``Backend.accelerator_condition``
as ``<key>_before`` and ``<key>_after``), not only the keys CUDA's adapter chooses."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.judge.changes import host_facts, replicate_changes
from reportgen.model.runmodel import RunModel, read_run
from tests.logbuilder import dumps, timing_log

RUNNER = CliRunner()
HIP_LABEL = "HIP temperature (°C) around the warm loops"
# The host facts the collector reads around every warm loop, alike in every run here.
HOST = {
    key: {"value": value, "source": "synthetic"}
    for key, value in (
        ("load_avg_before", "0.50 0.40 0.30"),
        ("load_avg_after", "0.50 0.40 0.30"),
        ("cpu_count", "8"),
        ("cpu_affinity", "8 CPUs: 0-7"),
        ("torch_threads", "8 intra-op, 8 inter-op"),
        ("cpu_governor", "performance"),
        ("cpu_run_s", "0.010000"),
        ("cpu_wait_s", "0.000010"),
        ("loop_wall_s", "0.010000"),
    )
}


def _log(tmp_path: Path, name: str, readings: dict[str, str], scale: float, seed: int) -> Path:
    """A synthetic timing run whose timing events' host facts carry ``readings`` (adapter key ->
    value), before and after each warm loop, as the collector writes them; everything else alike."""
    events = timing_log(f"host-{name}", scale=scale, seed=seed)
    events[0]["started_at"] = f"2026-01-0{seed}T00:00:00Z"
    for timing in (e for e in events if e["kind"] == "timing"):
        timing["host"] = {
            **HOST,
            **{
                f"{key}_{when}": {"value": value, "source": "stand-in adapter"}
                for key, value in readings.items()
                for when in ("before", "after")
            },
        }
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _run(path: Path) -> RunModel:
    reading, builder = read_run(path)
    assert reading.valid, [p.format() for p in reading.problems]
    return builder.build(reading)


def _diff(before: Path, after: Path, *options: str) -> str:
    result = RUNNER.invoke(main, ["diff", str(before), str(after), *options])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_non_cuda_accelerator_reading_that_changed_is_a_host_change(tmp_path: Path) -> None:
    """Before: only CUDA's key names were compared, so a plugin adapter's temperature going from
    40 to 85 °C was named by no comparison (only the load average and CPU wait were)."""
    a = _log(tmp_path, "a", {"hip_temperature_c": "40"}, 1.0, 1)
    b = _log(tmp_path, "b", {"hip_temperature_c": "85"}, 1.3, 2)
    text = _diff(a, b)
    assert f"  {HIP_LABEL}: 40 to 40 -> 85 to 85" in text
    assert text.index("host changes: 1") < text.index(HIP_LABEL) < text.index("slower")
    host = [tuple(h) for h in json.loads(_diff(a, b, "--format", "json"))["host"]]
    assert host == [(HIP_LABEL, "40 to 40", "85 to 85")]
    assert not any(key.startswith("accelerator") for key, _, _ in host)


def test_a_non_cuda_reading_is_a_reading_that_splits_no_replicates(tmp_path: Path) -> None:
    """Like the load average, an accelerator reading varies from run to run: named between two
    runs, but no reason two runs of one side are not replicates of each other."""
    first = _run(_log(tmp_path, "a", {"hip_temperature_c": "40", "hip_memory_clock_mhz": "2100"}, 1.0, 1))
    other = _run(_log(tmp_path, "b", {"hip_temperature_c": "85", "hip_memory_clock_mhz": "1500"}, 1.0, 2))
    facts = host_facts(first)
    assert facts[HIP_LABEL] == "40 to 40"
    assert facts["HIP memory clock (MHz) around the warm loops"] == "2100 to 2100"
    assert replicate_changes(({}, {}, {}, facts), ({}, {}, {}, host_facts(other))) == []


def test_cuda_readings_keep_their_names(tmp_path: Path) -> None:
    """CUDA's clocks and temperature are named in the words they always were."""
    cuda = {"gpu_sm_clock_mhz": "1980", "gpu_memory_clock_mhz": "2619", "gpu_temperature_c": "41"}
    a = _log(tmp_path, "a", cuda, 1.0, 1)
    b = _log(tmp_path, "b", {**cuda, "gpu_sm_clock_mhz": "1005", "gpu_temperature_c": "83"}, 1.0, 2)
    text = _diff(a, b)
    assert "  GPU SM clock (MHz) around the warm loops: 1980 to 1980 -> 1005 to 1005" in text
    assert "  GPU temperature (°C) around the warm loops: 41 to 41 -> 83 to 83" in text
    assert "host changes: 2" in text
    labels = list(host_facts(_run(a)))
    assert labels[-3:] == [
        "GPU SM clock (MHz) around the warm loops",
        "GPU memory clock (MHz) around the warm loops",
        "GPU temperature (°C) around the warm loops",
    ]


def test_a_log_with_very_many_readings_names_the_first_hundred_and_a_digest(tmp_path: Path) -> None:
    """A log is untrusted: 150 reading keys make 100 facts and one digest of the rest, and a key
    that is no lower-case words is named as it is."""
    readings = {f"npu_sensor_{i:03d}_c": "40" for i in range(149)} | {"Bad-Key": "7"}
    facts = host_facts(_run(_log(tmp_path, "many", readings, 1.0, 1)))
    named = [label for label in facts if label.startswith(("NPU sensor", "Bad-Key", "accelerator readings"))]
    assert len(named) == 101
    assert facts["Bad-Key around the warm loops"] == "7 to 7"
    assert facts["accelerator readings (all 150; the first 100 by name listed) around the warm loops"].startswith(
        "sha256 "
    )


def test_the_pages_say_the_host_check_covers_any_accelerator(tmp_path: Path) -> None:
    """Two runs whose host is alike: the compare page names what was checked without naming one
    kind of accelerator."""
    a = _log(tmp_path, "a", {"hip_temperature_c": "40"}, 1.0, 1)
    b = _log(tmp_path, "b", {"hip_temperature_c": "40"}, 1.0, 2)
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(a), str(b), "--out", str(out), "--format", "html"])
    assert result.exit_code == 0, result.output
    page = "".join(p.read_text(encoding="utf-8") for p in out.rglob("*.html"))
    assert "Host facts: the same on both runs" in page
    assert "load average, and the accelerator&#39;s readings its adapter logs around the warm loops" in page
    assert "GPU clocks" not in page
