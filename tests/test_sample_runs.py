"""The shipped sample runs: real runs, valid, complete, judged by the rules, never Neuron."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.model.runmodel import LAYOUT_NOT_MEASURED
from reportgen.render.report import judge_log
from reportgen.storage.local import find_logs
from tests.conftest import REPO

SAMPLES = REPO / "sample_runs"
LOGS = find_logs([SAMPLES]).paths


def test_there_are_sample_runs() -> None:
    workloads = {judge_log(log).run.start.workload for log in LOGS}
    assert {
        "tiny-encoder",
        "all-MiniLM-L6-v2",
        "heat-solver",
        "tiny-classifier-training",
        "scenario-a-text-service",
    } <= workloads


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name for p in LOGS])
def test_sample_run_is_a_real_cpu_run(log: Path) -> None:
    judged = judge_log(log)
    run = judged.run
    assert run.start.origin == "measured"
    # Each run is evidence for the machine it ran on and nothing else: never for Neuron.
    assert run.environment.backend_family == run.plan.target
    assert run.plan.target in ("cpu", "cuda")
    assert run.complete
    assert run.start.run_id in (SAMPLES / "README.md").read_text(encoding="utf-8"), (
        "README gives the command for every run"
    )
    # Only a log written before layouts were measured may hold untested cells: planned
    # non-contiguous cells whose layout it did not measure (tests/test_old_layouts.py).
    untested = [c.case for c in run.cells if c.status == "untested" and c.untested_reason != LAYOUT_NOT_MEASURED]
    assert untested == []
    unexplained = [
        c.case for c in run.cells if c.status in ("mismatch", "nonfinite", "error") and c.case not in judged.notes
    ]
    if unexplained:
        assert judged.disposition.outcome == "blocked"
