"""A log names the torch version it ran on three times: torch.__version__ and the installed
distribution's metadata in the environment line, and the workload's packages (1.6 logs), read
from installed metadata after the workload loaded. When they differ, validate warns at the line:
a comparison of two runs would name a torch change that never happened (or hide one). It does
not refuse the log: a workload that puts another torch's metadata on sys.path (a vendored
folder) or a build from source whose version file was made again without installing it again
makes them differ in an honest log. A wheel's local label (2.11.0+cu130 against 2.11.0) is one
release. The logs are synthetic (tests/logbuilder) edited by hand, and say so in their
run_start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reportgen.contract.validation import read_log
from tests.logbuilder import complete_log, generation_log, noted
from tests.test_validation_contradictions_r3 import _errors, _line

NOTE = "Synthetic log for the torch version checks of validate; not a measurement."
Lines = list[dict[str, Any]]


def _marked(events: Lines) -> Lines:
    return noted(events, NOTE)


def _environment(events: Lines, told: str | None, *installed: str) -> int:
    line = _line(events, "environment")
    environment = events[line - 1]
    environment["versions"]["torch"] = (
        {"value": told, "source": "torch.__version__"} if told is not None else {"unknown_reason": "not importable"}
    )
    environment["artifacts"] = [{"name": "torch", "version": v, "installer": "pip"} for v in installed]
    return line


def _warnings(tmp_path: Path, events: Lines) -> list[str]:
    """The log's warnings as "line: message" (written as _errors writes it)."""
    _errors(tmp_path, events)
    return [f"{p.line}: {p.message}" for p in read_log(tmp_path / "events.jsonl").problems if p.severity == "warning"]


def test_packages_naming_another_torch_than_the_install_are_a_warning_at_their_line(tmp_path: Path) -> None:
    events = _marked(generation_log())
    _environment(events, "2.13.0+cpu", "2.13.0+cpu")
    line = _line(events, "workload_reads")
    events[line - 1]["packages"]["torch"] = "2.12.1"
    assert _errors(tmp_path, events) == []
    warnings = _warnings(tmp_path, events)
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"{line}: workload_reads: packages names torch '2.12.1'")
    assert f"(line {_line(events, 'environment')})" in warnings[0] and "'2.13.0+cpu'" in warnings[0]
    assert "a vendored folder" in warnings[0]


def test_packages_before_the_environment_line_are_held_to_it_all_the_same(tmp_path: Path) -> None:
    events = _marked(generation_log())
    _environment(events, "2.13.0+cpu", "2.13.0+cpu")
    reads = events.pop(_line(events, "workload_reads") - 1)
    reads["packages"]["torch"] = "9.9.9"
    events.insert(_line(events, "environment") - 1, reads)
    warnings = _warnings(tmp_path, events)
    line = _line(events, "workload_reads")
    assert len(warnings) == 1 and warnings[0].startswith(f"{line}: workload_reads: packages names torch '9.9.9'")


def test_a_second_torch_install_listed_may_be_the_one_the_packages_name(tmp_path: Path) -> None:
    events = _marked(generation_log())
    _environment(events, "2.13.0+cpu", "2.12.0", "2.13.0+cpu")
    assert _errors(tmp_path, events) == [] and _warnings(tmp_path, events) == []


@pytest.mark.parametrize(
    ("told", "installed"),
    [
        ("2.11.0+cu130", "2.11.0"),  # a CUDA wheel's local label
        ("2.11", "2.11.0"),
        ("2.0.0-rc1", "2.0.0rc1"),
        ("2.13.0a0+gitabc1234", "2.13.0a0+gitdef5678"),  # a source build, rebuilt at another commit
        ("unknown", "2.13.0"),
        (None, "2.13.0"),
    ],
)
def test_one_release_written_two_ways_or_no_version_is_no_warning(
    tmp_path: Path, told: str | None, installed: str
) -> None:
    events = _marked(complete_log())
    _environment(events, told, installed)
    assert _errors(tmp_path, events) == [] and _warnings(tmp_path, events) == []


def test_a_torch_version_of_another_release_than_the_install_is_a_warning(tmp_path: Path) -> None:
    events = _marked(complete_log())
    line = _environment(events, "2.14.0", "2.13.0+cpu")
    assert _errors(tmp_path, events) == []
    warnings = _warnings(tmp_path, events)
    assert len(warnings) == 1 and warnings[0].startswith(f"{line}: environment: versions.torch is '2.14.0'")
    assert "metadata says '2.13.0+cpu'" in warnings[0]
