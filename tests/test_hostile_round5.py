"""Hostile input, fifth round (outside review): memory that grew with a log's bad lines, a
full disk blamed on the log, two site builds into one folder, a site.toml linked from outside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import reportgen.contract.validation as validation
from reportgen.cli import main
from reportgen.contract.validation import read_log
from tests.conftest import REPO

SAMPLE = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl"


def _first_line() -> str:
    return SAMPLE.read_text(encoding="utf-8").splitlines()[0] + "\n"


def test_findings_past_the_kept_ones_are_counted_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bad line's finding was kept: 3 million lines of `{}` (9 MB) took 500 MB, and a
    20 MB file of `x` lines 2.5 GB (11.8 GB with --json). The first MAX_KEPT_PROBLEMS are kept
    now, the rest counted; the counts and the verdict stay whole."""
    monkeypatch.setattr(validation, "MAX_KEPT_PROBLEMS", 50)
    log = tmp_path / "many.jsonl"
    log.write_text(_first_line() + "{}\n" * 120 + "x\n" * 80, encoding="utf-8")
    reading = read_log(log)
    assert len(reading.problems) == 50 and not reading.valid
    assert reading.error_count == 200 and reading.more_errors == 150
    text = CliRunner().invoke(main, ["validate", str(log)])
    assert text.exit_code == 1
    assert text.output.splitlines()[-1].endswith("INVALID, incomplete, 1 events, 200 errors, 1 warnings"), text.output
    assert "... and 181 more problems (--max-problems 0 shows the first 50)" in text.output
    data = json.loads(CliRunner().invoke(main, ["validate", "--json", str(log)]).output)
    assert len(data[0]["problems"]) == 50 and data[0]["more_errors"] == 150


def test_a_finding_quoting_a_huge_value_is_cut(tmp_path: Path) -> None:
    """Three lines whose kind was a megabyte printed three million-character 'one-line' errors."""
    log = tmp_path / "long.jsonl"
    line = {"kind": "k" * 1_000_000, "seq": 1, "schema_version": "1.7", "run_id": "x", "t": "2026-01-01T00:00:00Z"}
    log.write_text(_first_line() + json.dumps(line) + "\n", encoding="utf-8")
    (problem,) = [p for p in read_log(log).problems if p.line == 2 and "kkk" in p.message]
    assert len(problem.message) < validation.MAX_MESSAGE_CHARS + 100
    assert problem.message.endswith("characters)") and "(cut: " in problem.message
