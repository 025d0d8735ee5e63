"""Peak device memory per cell: recorded by the collector where the backend exposes it (schema
1.3), read by the report beside the timings, "not measured" for CPU runs and older logs."""

from __future__ import annotations

import msgspec

import csv

from pathlib import Path
from typing import Any

import pytest
from msgspec import ValidationError

from reportgen.contract.events import SCHEMA_VERSION, DeviceMemory
from reportgen.render.memory import bytes_text
from reportgen.render.report import build_report
from tests.logbuilder import complete_log, dumps


def test_both_halves_are_at_a_schema_that_has_device_memory() -> None:
    from collector.eventlog import SCHEMA_VERSION as WRITTEN

    assert SCHEMA_VERSION == WRITTEN and tuple(map(int, WRITTEN.split("."))) >= (1, 3)


def test_the_field_is_checked() -> None:
    msgspec.convert(
        {"status": "measured", "peak_allocated_bytes": 10, "source": "torch.cuda.max_memory_allocated"}, DeviceMemory
    )
    msgspec.convert({"status": "not_measured", "reason": "cpu"}, DeviceMemory)
    for bad in (
        {"status": "guessed"},
        {"status": "measured", "peak_allocated_bytes": -1},
        {"status": "measured", "peak_allocated_bytes": 1.5},
        {"status": "measured", "extra": 1},
    ):
        with pytest.raises(ValidationError):
            msgspec.convert(bad, DeviceMemory)


def test_bytes_in_binary_units() -> None:
    assert [bytes_text(n) for n in (812, 1536, 254_912_102, 3 << 30, 5000 << 30)] == [
        "812 B",
        "1.5 KiB",
        "243.1 MiB",
        "3 GiB",
        "5000 GiB",
    ]


def test_cpu_backend_says_not_measured_and_cuda_reads_the_peak_since_its_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from collector.backends.base import Backend
    from collector.backends.cuda import CudaBackend

    assert Backend().peak_memory()["status"] == "not_measured"
    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: calls.append("reset"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: calls.append("read") or 4096)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append("sync"))
    cuda = object.__new__(CudaBackend)  # no GPU here: the adapter's two calls, not the device
    cuda.device = torch.device("cuda")
    cuda.reset_peak_memory()
    memory = cuda.peak_memory()
    assert calls == ["reset", "sync", "read"]
    assert memory == {"status": "measured", "peak_allocated_bytes": 4096, "source": "torch.cuda.max_memory_allocated"}
    msgspec.convert(memory, DeviceMemory)


def test_the_warm_series_resets_before_its_loop_and_records_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """warm_series asks the backend for a new peak before the loop and reads it after (the
    order in its code; tests/test_collector_run.py checks the field a real CPU run writes)."""
    import inspect

    from collector.run import timings

    source = inspect.getsource(timings.warm_series)
    assert (
        source.index("backend.reset_peak_memory()") < source.index("time_warm(") < source.index("backend.peak_memory()")
    )
    assert "device_memory=series.memory" in inspect.getsource(timings.record_series)


def _report(tmp_path: Path, events: list[dict[str, Any]]) -> tuple[str, str]:
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(dumps(events), encoding="utf-8")
    build_report(log, tmp_path / "out")
    return (tmp_path / "out" / "report.html").read_text(encoding="utf-8"), (tmp_path / "out" / "report.md").read_text(
        encoding="utf-8"
    )


def test_report_shows_the_peak_beside_the_timings_and_not_measured_for_old_logs(tmp_path: Path) -> None:
    events = complete_log()
    timed = [e for e in events if e["kind"] == "timing" and e.get("warm")]
    timed[0]["device_memory"] = {
        "status": "measured",
        "peak_allocated_bytes": 254_912_102,
        "source": "torch.cuda.max_memory_allocated",
    }
    timed[1]["device_memory"] = {"status": "not_measured", "reason": "the cpu target has no device allocator"}
    for event in events:
        event["schema_version"] = "1.3"
    html, md = _report(tmp_path / "new", events)
    for page in (html, md):
        assert "peak device memory" in page and "243.1 MiB" in page
    row = next(
        line for line in md.splitlines() if line.startswith("| ") and timed[0]["case"] in line and "243.1 MiB" in line
    )
    assert "ms" in row, "the peak sits in the timing row of its cell"
    # details.csv holds the exact bytes where measured, and nothing where not.
    with open(tmp_path / "new" / "out" / "details.csv", newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    peaks = {r["case"]: r["peak_device_memory_bytes"] for r in rows}
    assert peaks[timed[0]["case"]] == "254912102"
    assert peaks[timed[1]["case"]] == ""
    old = complete_log()  # before 1.3: no field anywhere
    assert not any("device_memory" in e for e in old)
    html, md = _report(tmp_path / "old", old)
    assert "MiB" not in md and "| not measured |" in md
