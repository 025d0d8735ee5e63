"""A log names the torch version it ran on three times: torch.__version__ and the installed
distribution's metadata in the environment line, and the workload's packages (1.6 logs) read from
the same metadata. Two versions there leave unknown what the run ran on, and a comparison of two
runs would name a torch change that never happened (or hide one): validate refuses such a log at
its line. A real CUDA wheel's __version__ carries a local label its metadata lacks
(2.11.0+cu130 against 2.11.0): that is one version. The logs are synthetic (tests/logbuilder)
edited by hand, and say so in their run_start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.logbuilder import complete_log, generation_log
from tests.test_validation_contradictions_r3 import _errors, _line

NOTE = "Synthetic log for the torch version checks of validate; not a measurement."


def _marked(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert events[0]["kind"] == "run_start" and events[0]["origin"] == "synthetic"
    events[0]["origin_note"] = NOTE
    return events


def _environment(events: list[dict[str, Any]], told: str, installed: str | None) -> int:
    line = _line(events, "environment")
    environment = events[line - 1]
    environment["versions"]["torch"] = {"value": told, "source": "torch.__version__"}
    if installed is not None:
        environment["artifacts"] = [{"name": "torch", "version": installed, "installer": "pip"}]
    return line


def test_a_torch_version_that_is_not_the_installed_one_is_refused_at_the_environment_line(tmp_path: Path) -> None:
    events = _marked(complete_log())
    line = _environment(events, told="2.14.0", installed="2.13.0+cpu")
    errors = _errors(tmp_path, events)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{line}: environment: versions.torch is '2.14.0'")
    assert "'2.13.0+cpu'" in errors[0] and "two torch versions" in errors[0]


def test_a_cuda_wheel_s_local_label_is_the_same_version(tmp_path: Path) -> None:
    events = _marked(complete_log())
    _environment(events, told="2.11.0+cu130", installed="2.11.0")
    assert _errors(tmp_path, events) == []


def test_the_workload_s_torch_package_must_be_the_environment_s(tmp_path: Path) -> None:
    events = _marked(generation_log())
    _environment(events, told="2.13.0+cpu", installed="2.13.0+cpu")
    line = _line(events, "workload_reads")
    events[line - 1]["packages"]["torch"] = "2.12.1"
    errors = _errors(tmp_path, events)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{line}: workload_reads: packages names torch '2.12.1'")
    assert f"(line {_line(events, 'environment')})" in errors[0] and "'2.13.0+cpu'" in errors[0]


def test_without_an_installed_artifact_the_packages_are_held_to_torch_version(tmp_path: Path) -> None:
    events = _marked(generation_log())
    _environment(events, told="2.13.0", installed=None)
    line = _line(events, "workload_reads")
    assert _errors(tmp_path, events) == []  # 2.13.0+cpu in the packages: the same public version
    events[line - 1]["packages"]["torch"] = "2.14.0"
    errors = _errors(tmp_path, events)
    assert [e.split(":")[0] for e in errors] == [str(line)], errors
