"""Hostile and careless input, fourth round: messages that misstate what happened, paths that
break a line, files that start with a byte-order mark, and numbers no run can reach."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.hostile import invoke


@pytest.mark.parametrize("inside", [False, True], ids=["out-is-runs", "out-is-a-run-folder"])
def test_site_says_the_logs_it_left_out_lie_inside_out(tmp_path: Path, inside: bool) -> None:
    runs = tmp_path / "runs"
    (runs / "run-a").mkdir(parents=True)
    shutil.copy(FIXTURES / "synthetic_complete.jsonl", runs / "run-a" / "events.jsonl")
    out_dir = runs / "run-a" if inside else runs
    before = sorted(p.name for p in runs.rglob("*"))
    result = invoke(["site", runs, "--out", out_dir])
    assert result.code == 1, result.output
    line = result.line_with("no run log")
    assert f"outside --out {out_dir}" in line and "never searched" in line, line
    assert sorted(p.name for p in runs.rglob("*")) == before  # nothing written


def test_site_with_no_log_anywhere_says_only_that(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    result = invoke(["site", runs, "--out", tmp_path / "site"])
    assert result.code == 1, result.output
    assert "--out" not in result.line_with("no run log")
