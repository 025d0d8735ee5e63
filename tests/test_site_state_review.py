"""The site's state is a cache of the build that wrote it: a slug not made from its run's id is
refused, a cached summary keeps the order a fresh one has, an edited state (or one without the
no-op record beside it) is not reused, a comparison folder left empty is removed, a run whose
start cannot be placed is never the latest, and a long history shows its newest pairs in full.

Every log here is built by tests/logbuilder.py and says in its run_start that it is synthetic."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from reportgen.publish.site import HISTORY_PAIRS, STATE_NAME, build_site
from reportgen.publish.site_quick import QUICK_NAME
from reportgen.storage.local import signature
from tests.logbuilder import dumps, timing_log


def _log(runs: Path, name: str, run_id: str, started_at: str, seed: int = 0, target: str = "cpu") -> Path:
    events = timing_log(run_id, target=target, family=target, seed=seed)
    events[0]["started_at"] = started_at
    path = runs / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _state(site: Path) -> dict[str, Any]:
    return json.loads((site / STATE_NAME).read_text(encoding="utf-8"))


def _summary(site: Path, run_id: str) -> dict[str, Any]:
    return next(run for run in _state(site)["runs"].values() if run["run_id"] == run_id)


def _plant(site: Path, state: dict[str, Any]) -> None:
    """Write a state file, and have the no-op record vouch for it as the last build's (as one
    who edits both files would): what the state itself holds must then be checked."""
    (site / STATE_NAME).write_text(json.dumps(state), encoding="utf-8")
    record = json.loads((site / QUICK_NAME).read_text(encoding="utf-8"))
    record["state"] = list(signature(os.lstat(site / STATE_NAME)))
    (site / QUICK_NAME).write_text(json.dumps(record), encoding="utf-8")


def _files(root: Path) -> dict[str, bytes]:
    """Every file and folder of a site but the no-op record (it holds this folder's own stat)."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"/"
        for p in sorted(root.rglob("*"))
        if p.name != QUICK_NAME
    }


def _judged(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The logs a build read and judged (each says so on stderr as it goes)."""
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("reportgen site: [")]


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    runs = tmp_path / "runs"
    _log(runs, "a", "synthetic-cpu-old", "2026-01-01T00:00:00Z", seed=1)
    _log(runs, "b", "synthetic-cpu-new", "2026-01-02T00:00:00Z", seed=2)
    site = tmp_path / "site"
    assert build_site([runs], site).warnings == []
    return runs, site


def test_a_cached_slug_that_is_not_its_run_s_is_refused(two_runs: tuple[Path, Path]) -> None:
    """One run's cached slug set to another's had a rebuild write the other run's page with
    this run's report (no warning)."""
    runs, site = two_runs
    old, new = _summary(site, "synthetic-cpu-old")["slug"], _summary(site, "synthetic-cpu-new")["slug"]
    state = _state(site)
    next(run for run in state["runs"].values() if run["run_id"] == "synthetic-cpu-old")["slug"] = new
    _plant(site, state)
    (runs / "a" / "events.jsonl").touch()  # not the no-op: the careful way reads the state
    result = build_site([runs], site)
    assert any(
        f"ignoring {site / STATE_NAME} (runs." in w and ".slug: not the page name of run 'synthetic-cpu-old'" in w
        for w in result.warnings
    ), result.warnings
    assert "synthetic-cpu-new" in (site / "runs" / new / "index.html").read_text(encoding="utf-8")
    assert "synthetic-cpu-old" in (site / "runs" / old / "index.html").read_text(encoding="utf-8")
    assert _summary(site, "synthetic-cpu-old")["slug"] == old


def test_an_incremental_build_is_the_fresh_build(tmp_path: Path) -> None:
    """Cached summaries came back with their cells in alphabetical order, fresh ones in plan
    order: a history page built incrementally named another first cell and listed its timings
    in another order than the same site built afresh."""
    runs = tmp_path / "runs"
    _log(runs, "a", "synthetic-cpu-a", "2026-01-01T00:00:00Z", seed=1)
    _log(runs, "b", "synthetic-cpu-b", "2026-01-02T00:00:00Z", seed=1)  # the same samples: a copy
    build_site([runs], tmp_path / "incremental")
    _log(runs, "c", "synthetic-cpu-c", "2026-01-03T00:00:00Z", seed=3)
    build_site([runs], tmp_path / "incremental")
    build_site([runs], tmp_path / "fresh")
    plan = [json.loads(line) for line in (runs / "a" / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    planned = [cell["case"] for cell in next(e for e in plan if e["kind"] == "plan")["matrix"]]
    assert planned != sorted(planned), "the fixture's plan order is not alphabetical"
    assert list(_summary(tmp_path / "incremental", "synthetic-cpu-a")["cells"]) == planned
    assert _files(tmp_path / "incremental") == _files(tmp_path / "fresh")


def test_an_edited_state_is_not_reused(two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A summary edited in the state (outcome, headline) was published on the index with rc 0,
    and deleting the no-op record kept it. A rebuild that changes nothing still reuses every
    summary."""
    runs, site = two_runs
    capsys.readouterr()
    (runs / "a" / "events.jsonl").touch()
    assert build_site([runs], site).warnings == []
    assert _judged(capsys) == [], "an unchanged state is reused: no log is judged again"
    for drop_record in (False, True):
        state = _state(site)
        run = next(run for run in state["runs"].values() if run["run_id"] == "synthetic-cpu-old")
        run.update(outcome="blocked", headline="Blocked: a verdict written by hand")
        (site / STATE_NAME).write_text(json.dumps(state), encoding="utf-8")
        if drop_record:
            (site / QUICK_NAME).unlink()
        result = build_site([runs], site)
        assert [w for w in result.warnings if "not the one the last build left" in w] == [
            f"reportgen site: warning: {site / STATE_NAME} is not the one the last build left "
            f"(changed since, or no {QUICK_NAME} beside it); judging every log again"
        ]
        assert len(_judged(capsys)) == 2, "every log is judged again"
        index = (site / "index.json").read_text(encoding="utf-8")
        assert "written by hand" not in index and '"outcome": "blocked"' not in index
        assert _summary(site, "synthetic-cpu-old")["outcome"] == "suitable"
        assert build_site([runs], site).warnings == [], "the next build trusts the state it wrote"


def test_a_comparison_removed_leaves_no_empty_folder(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _log(runs, "a", "synthetic-cpu-old", "2026-01-01T00:00:00Z", seed=1)
    _log(runs, "c", "synthetic-cuda", "2026-01-01T00:00:00Z", seed=3, target="cuda")
    config = runs / "site.toml"
    config.write_text('[[compare]]\nbaseline = "synthetic-cpu-old"\ncandidate = "synthetic-cuda"\n', encoding="utf-8")
    site = tmp_path / "site"
    build_site([runs], site)
    assert len(list((site / "comparisons").iterdir())) == 1
    config.unlink()
    build_site([runs], site)
    assert not (site / "comparisons").exists()
    build_site([runs], tmp_path / "fresh")
    assert _files(site) == _files(tmp_path / "fresh")


def test_a_run_whose_start_cannot_be_placed_is_never_the_latest(tmp_path: Path) -> None:
    """A run started in the year 9999 (validate warns: outside 1678-2261) sorted last and so
    became the latest for compare_latest and for the history's line, unsaid."""
    runs = tmp_path / "runs"
    _log(runs, "a", "synthetic-cpu-old", "2026-01-01T00:00:00Z", seed=1)
    _log(runs, "b", "synthetic-cpu-new", "2026-01-02T00:00:00Z", seed=2)
    far = _log(runs, "z", "synthetic-cpu-far", "9999-01-01T00:00:00Z", seed=4)
    _log(runs, "c", "synthetic-cuda", "2026-01-01T00:00:00Z", seed=3, target="cuda")
    (runs / "site.toml").write_text(
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n', encoding="utf-8"
    )
    site = tmp_path / "site"
    result = build_site([runs], site)
    assert result.warnings == [
        f"reportgen site: warning: {far}: run_start started_at '9999-01-01T00:00:00Z' is not an ISO 8601 time "
        "between the years 1678 and 2261: never taken as its workload's latest run"
    ]
    assert [p.name.split("-vs-")[0] for p in (site / "comparisons").iterdir()] == ["synthetic-cpu-new"]
    page = (site / "workloads" / _summary(site, "synthetic-cpu-new")["workload_slug"] / "index.html").read_text(
        encoding="utf-8"
    )
    assert (
        "<strong>Latest run against the previous one</strong> (<code>synthetic-cpu-new</code> against "
        "<code>synthetic-cpu-old</code>)" in page
    )
    assert "<strong>Start time not placed:</strong> <code>synthetic-cpu-far</code>" in page


def test_a_long_history_shows_its_newest_pairs_in_full(tmp_path: Path) -> None:
    """300 runs made a 3.2 MB history page: every consecutive pair's changes in full."""
    runs = tmp_path / "runs"
    total = HISTORY_PAIRS + 3
    for n in range(total):
        _log(runs, f"r{n:02d}", f"synthetic-run-{n:02d}", f"2026-01-{n // 24 + 1:02d}T{n % 24:02d}:00:00Z", seed=n)
    site = tmp_path / "site"
    build_site([runs], site)
    page = (site / "workloads" / _summary(site, "synthetic-run-00")["workload_slug"] / "index.html").read_text(
        encoding="utf-8"
    )
    assert page.count('<section class="change">') == HISTORY_PAIRS
    assert f"the {total - 1 - HISTORY_PAIRS} older pairs are left out of this page" in page
    assert '<a href="../../index.json">index.json</a>' in page
    newest = f"<code>synthetic-run-{total - 2:02d}</code> → <code>synthetic-run-{total - 1:02d}</code>"
    oldest_shown = f"<code>synthetic-run-{total - 1 - HISTORY_PAIRS:02d}</code> → "
    assert newest in page and oldest_shown in page
    assert "<code>synthetic-run-00</code> → " not in page


def test_a_site_folder_copied_elsewhere_is_built_again_in_full(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    """The record vouches for one state file: a copy (another inode) is not the last build's."""
    runs, site = two_runs
    copy = tmp_path / "copy"
    shutil.copytree(site, copy)
    result = build_site([runs], copy)
    assert any("not the one the last build left" in w for w in result.warnings)
    assert _state(copy)["runs"] == _state(site)["runs"]
