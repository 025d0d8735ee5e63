"""The site pairs runs of one workload on one target across versions of its stack (an SDK
upgrade) and shows a workload x version grid on the index. Synthetic logs, marked synthetic."""

from __future__ import annotations

import re
from pathlib import Path

from reportgen.publish.site import build_site, version_latest
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from tests.logbuilder import dumps, timing_log, with_envelope


def _run(folder: Path, run_id: str, torch: str, started: str, scale: float = 1.0) -> Path:
    events = timing_log(run_id, scale=scale, seed=hash(run_id) % 1000)
    events[0]["started_at"] = started
    env = next(e for e in events if e["kind"] == "environment")
    env["versions"]["torch"] = {"value": torch, "source": "synthetic fixture"}
    path = folder / run_id / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(with_envelope(events)), encoding="utf-8")
    return path


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_latest_run_of_each_version_in_release_order(tmp_path: Path) -> None:
    paths = [
        _run(tmp_path, "run-a", "2.13.0+cpu", "2026-01-01T00:00:00Z"),
        _run(tmp_path, "run-b", "2.9.1", "2026-01-02T00:00:00Z"),
        _run(tmp_path, "run-c", "2.13.0+cpu", "2026-01-03T00:00:00Z"),
    ]
    history = sorted((summarize(judge_log(p)) for p in paths), key=lambda s: s.sort_key)
    package, latest = version_latest("cpu", history)
    # 2.9.1 before 2.13.0 (release order, not text order); run-c replaces run-a for 2.13.0.
    assert package == "torch" and [(v, s.run_id) for v, s in latest] == [("2.9.1", "run-b"), ("2.13.0+cpu", "run-c")]


def test_workload_page_compares_consecutive_versions_and_index_shows_the_grid(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _run(runs, "old-sdk", "2.13.0", "2026-01-01T00:00:00Z")
    _run(runs, "new-sdk", "2.14.0", "2026-01-02T00:00:00Z", scale=1.5)
    _run(runs, "old-sdk-again", "2.13.0", "2026-01-03T00:00:00Z")  # interleaved replicates of a campaign
    out = tmp_path / "site"
    result = build_site([runs], out)
    assert result.runs == 3
    index = _text((out / "index.html").read_text(encoding="utf-8"))
    assert "Workloads by version" in index and "cpu (torch 2.13.0" in index and "2.14.0" in index
    page = _text(next((out / "workloads").glob("*/index.html")).read_text(encoding="utf-8"))
    across = page[page.index("Across torch versions on cpu") :]
    # The latest run of 2.13.0 (old-sdk-again, not the consecutive old-sdk) against 2.14.0's.
    assert "2.13.0 ( old-sdk-again ) → 2.14.0 ( new-sdk )" in across
    assert "old-sdk-again → new-sdk" in across and "Versions: torch 2.13.0 → 2.14.0" in across
    assert across.index("Criteria") < across.index("Disposition:")


def test_one_version_has_no_pairs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _run(runs, "a", "2.13.0", "2026-01-01T00:00:00Z")
    _run(runs, "b", "2.13.0", "2026-01-02T00:00:00Z")
    build_site([runs], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert "Across torch versions" not in page


def test_a_history_change_names_code_and_data_changes_before_results(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _run(runs, "a", "2.13.0", "2026-01-01T00:00:00Z")
    path = _run(runs, "b", "2.13.0", "2026-01-02T00:00:00Z")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"collector": "hand-written fixture"', '"collector": "hand-written fixture v2"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_site([runs], tmp_path / "site")
    page = _text(next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8"))
    change = page[page.index("What changed between consecutive runs") :]
    assert "Code and data changed" in change and "hand-written fixture v2" in change
    assert change.index("Code and data changed") < change.index("Disposition:")
