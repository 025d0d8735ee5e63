"""The suite's machine-facing settings (tests/conftest.py) hold here and in the processes tests
start, and the times reportgen shows are UTC under them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from tests.conftest import REPO


def test_local_time_is_far_from_utc_here_and_in_children() -> None:
    assert time.localtime(0).tm_gmtoff == 12 * 3600 + 45 * 60
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, shutil, time; print(time.localtime(0).tm_gmtoff, shutil.get_terminal_size().columns)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.stdout.split() == [str(12 * 3600 + 45 * 60), "80"]
    assert os.environ["COLUMNS"] == "80"


def test_a_report_shows_the_log_s_utc_times_whatever_the_local_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    log = sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*"))[0] / "events.jsonl"
    end = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    stamp = end["finished_at"]  # e.g. 2026-11-29T22:52:59.123456Z
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert f"{stamp[:10]} {stamp[11:19]} UTC" in md
