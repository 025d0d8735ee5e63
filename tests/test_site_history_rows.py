"""A target's history table and trend charts show its newest HISTORY_ROWS runs, each against
the run before it, and say so: 300 runs made a 1.5 MB workload page, two thirds of it chart
points two pixels apart, and the page grew with every run. index.json, index.csv and
index.parquet still list every run. Every log here is built by tests/logbuilder.py and says in
its run_start that it is synthetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.publish import site as site_module
from reportgen.publish.site import build_site
from tests.test_site_state_review import _log, _summary

RUNS = 7
SHOWN = 4


def _history(tmp_path: Path, count: int) -> tuple[Path, str, str]:
    """A site of ``count`` runs an hour apart: its folder, the workload page and its table."""
    runs = tmp_path / "runs"
    for n in range(count):
        _log(runs, f"r{n}", f"synthetic-run-{n}", f"2026-01-01T{n:02d}:00:00Z", seed=n)
    site = tmp_path / "site"
    build_site([runs], site)
    page = (site / "workloads" / _summary(site, "synthetic-run-0")["workload_slug"] / "index.html").read_text(
        encoding="utf-8"
    )
    return site, page, page[page.index('<table class="history">') : page.index("</table>")]


def test_the_history_shows_the_newest_runs_and_says_where_the_rest_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(site_module, "HISTORY_ROWS", SHOWN)
    monkeypatch.setattr(site_module, "HISTORY_PAIRS", 2)
    site, page, table = _history(tmp_path, RUNS)
    shown = [n for n in range(RUNS) if f'title="synthetic-run-{n}"' in table]
    assert shown == list(range(RUNS - SHOWN, RUNS))
    # The oldest row shown is compared with the run before it, which the table leaves out.
    assert table.count("first run on this target") == 0
    assert f"They show the newest {SHOWN} of the {RUNS} runs on cpu, each against the run before it" in page
    # The pairs left out are not said to be in a table that leaves out runs too.
    assert "the 4 older pairs are left out of this page" in page and "every run's geometric mean" not in page
    assert "The table above gives the geometric mean of each run it shows against the previous run" in page
    trends = page[page.index("Trends on cpu") : page.index("What changed between")]
    assert "2026-01-01 02:00:00" not in trends and "2026-01-01 03:00:00" in trends
    assert len(json.loads((site / "index.json").read_text(encoding="utf-8"))) == RUNS


def test_a_short_history_shows_every_run_and_no_such_sentence(tmp_path: Path) -> None:
    _, page, table = _history(tmp_path, 3)
    assert all(f'title="synthetic-run-{n}"' in table for n in range(3))
    assert table.count("first run on this target") == 1
    assert "They show the newest" not in page
