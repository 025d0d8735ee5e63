"""A run whose start cannot be placed in time (validate warns: a year outside 1678-2261) sorts
where its text falls, and the site says it is never taken as its workload's latest run. The
index's two other "latest" picks keep that: the run whose logged plan plan-check reviews, and
the run each package version links in the version grid. Every log here is built by
tests/logbuilder.py and says in its run_start that it is synthetic."""

from __future__ import annotations

import json
from pathlib import Path

from reportgen.publish.site import build_site
from tests.test_site_state_review import _log, _summary


def test_the_index_never_takes_a_run_that_cannot_be_placed_as_latest(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _log(runs, "a", "synthetic-cpu-old", "2026-01-01T00:00:00Z", seed=1)
    _log(runs, "b", "synthetic-cpu-new", "2026-01-02T00:00:00Z", seed=2)
    _log(runs, "z", "synthetic-cpu-far", "9999-01-01T00:00:00Z", seed=4)
    site = tmp_path / "site"
    build_site([runs], site)
    index = (site / "index.html").read_text(encoding="utf-8")
    new, far = (f"runs/{_summary(site, run)['slug']}/index.html" for run in ("synthetic-cpu-new", "synthetic-cpu-far"))
    assert f'Reviewed from the plan logged by <a href="{new}"><code>synthetic-cpu-new</code></a>' in index
    grid = index[index.index("<ul>", index.index("2.13.0") - 400) :]
    grid = grid[: grid.index("</ul>")]
    assert " 2.13.0 " in grid and f'<a href="{new}">' in grid, grid
    assert far not in grid and "synthetic-cpu-far</code></a>; keys" not in index


def test_index_rows_say_where_the_weights_come_from_beside_synthetic(sample_site: Path) -> None:
    """`synthetic` says a log is a hand-written fixture; a measured run of made-up weights read
    `synthetic: false` and nothing else. Each row now names the plan's weights origin."""
    rows = json.loads((sample_site / "index.json").read_text(encoding="utf-8"))
    rows = rows["runs"] if isinstance(rows, dict) else rows
    origin: dict[str, str] = {}
    for row in rows:  # newest first: each workload's latest run
        if not row["synthetic"]:
            origin.setdefault(row["run_id"].rsplit("-", 2)[0], row["weights_origin"])
    assert origin["tiny-encoder-cpu"] == "synthetic"
    assert origin["all-MiniLM-L6-v2-cpu"] == "pretrained"
    assert origin["heat-solver-cpu"] == "none"
    assert "" in {row["weights_origin"] for row in rows}  # runs from before the plan said it
    header = (sample_site / "index.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[header.index("synthetic") + 1] == "weights_origin"


def test_a_run_dated_after_this_machines_clock_is_no_latest_and_in_no_pair(tmp_path: Path) -> None:
    """A review: a run dated 2099 by a host whose clock was wrong validated with no warning, was
    every later run's "latest", and its pair with the real newest run read "Fixed" (that run's new
    failure against it). A start after this machine's clock (with an hour's slack) is not placed:
    validate warns, the site never takes it as the latest and pairs it with no run."""
    from reportgen.contract.validation import read_log

    runs = tmp_path / "runs"
    _log(runs, "a", "synthetic-cpu-old", "2026-01-01T00:00:00Z", seed=1)
    _log(runs, "b", "synthetic-cpu-new", "2026-01-02T00:00:00Z", seed=2)
    future = _log(runs, "z", "synthetic-cpu-clock-wrong", "2099-01-01T00:00:00Z", seed=4)
    warnings = [p.message for p in read_log(future).problems if p.severity == "warning"]
    assert any("is later than this machine's clock" in w and "places this run last" in w for w in warnings), warnings
    site = tmp_path / "site"
    result = build_site([runs], site)
    assert [w for w in result.warnings if "later than this machine's clock" in w] == [
        f"reportgen site: warning: {future}: run_start started_at '2099-01-01T00:00:00Z' is later than this machine's "
        "clock (the writing host's clock was wrong): never taken as its workload's latest run"
    ]
    page = (site / "workloads" / _summary(site, "synthetic-cpu-new")["workload_slug"] / "index.html").read_text(
        encoding="utf-8"
    )
    assert (
        "<strong>Latest run against the previous one</strong> (<code>synthetic-cpu-new</code> against "
        "<code>synthetic-cpu-old</code>)" in page
    )
    assert "<strong>Start time not placed:</strong> <code>synthetic-cpu-clock-wrong</code>" in page
    pairs = page[page.index("What changed between consecutive runs") :]
    assert "synthetic-cpu-clock-wrong" not in pairs, "a run whose start is not placed is in no pair"
    assert "not compared: its start time is not placed" in page
    # An hour's slack: a run started a minute from now (a clock a little fast) is placed.
    from datetime import datetime, timedelta, timezone

    from reportgen.contract.times import placeable

    assert placeable((datetime.now(timezone.utc) + timedelta(minutes=1)).isoformat())
    assert not placeable((datetime.now(timezone.utc) + timedelta(hours=2)).isoformat())


def test_two_runs_that_started_at_the_same_instant_are_not_compared(tmp_path: Path) -> None:
    """A review: two runs started at the same second (two hosts started together) were ordered
    by run id, and the page said "14 slower" one way round and "14 faster" with the ids renamed.
    Which came first is not known: the pair is not compared, and the column says why."""
    runs = tmp_path / "runs"
    _log(runs, "a", "synthetic-cpu-first", "2026-01-01T00:00:00Z", seed=1)
    _log(runs, "b", "synthetic-cpu-host-a", "2026-01-02T10:00:00Z", seed=2)
    _log(runs, "c", "synthetic-cpu-host-b", "2026-01-02T10:00:00+00:00", seed=3)  # the same instant, spelt otherwise
    site = tmp_path / "site"
    build_site([runs], site)
    page = (site / "workloads" / _summary(site, "synthetic-cpu-first")["workload_slug"] / "index.html").read_text(
        encoding="utf-8"
    )
    assert "not compared: started at the same instant as synthetic-cpu-host-a (which came first is not known)" in page
    assert "Latest run against the previous one" not in page
    pairs = page[page.index("What changed between consecutive runs") :]
    assert "synthetic-cpu-host-a" in pairs and "synthetic-cpu-host-b" not in pairs  # first -> host-a only
    # Nor is either called the latest on its own (a review: the ids' spelling picked it).
    assert (
        "(started at the same instant as <code>synthetic-cpu-host-a</code>: which is the latest is not known)" in page
    )
