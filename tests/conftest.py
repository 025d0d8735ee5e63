"""Shared fixtures, and the guard that makes a run that executes no test a failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # pytest exits 5 when nothing ran (a bad -k, a broken collection path). CI must never
    # mistake that for success, so it becomes an ordinary failure with a reason.
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("ERROR: no tests ran; refusing to report success", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def write_jsonl(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


@pytest.fixture
def complete_events() -> list[dict]:
    from tests.logbuilder import complete_log

    return complete_log()
