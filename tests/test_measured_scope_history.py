"""The disposition's scope is the set of cells that passed; history and diffs compare only
timings of passing cells, and say when a ratio comes from a stopped run or a CPU fallback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.judge.disposition import scope_label
from reportgen.publish.diff import diff_runs, format_diff
from reportgen.publish.site import build_site
from reportgen.publish.summary import summarize
from reportgen.render.report import build_report, judge_log
from tests.logbuilder import base_events, case_key, dumps, finish, with_envelope

Events = list[dict[str, Any]]
BIG_COMPILED = case_key(2, 16, "compiled")
BIG_EAGER = case_key(2, 16, "eager")


def _write(path: Path, events: Events, run_id: str, started: str = "2026-01-01T00:00:00Z") -> Path:
    events[0].update(run_id=run_id, started_at=started)
    path.mkdir(parents=True, exist_ok=True)
    log = path / "events.jsonl"
    log.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    return log


def _edit(events: Events, kind: str, case: str, **fields: Any) -> dict[str, Any]:
    event = next(e for e in events if e["kind"] == kind and e.get("case") == case)
    event.update(fields)
    return event


def _mismatch(events: Events, case: str, keep_timing: bool = False) -> None:
    result = _edit(events, "case_result", case, status="mismatch")
    result["error_stats"].update(mismatched=5, max_abs=1e-2, diff_at_worst=1e-2)
    if not keep_timing:
        events[:] = [e for e in events if not (e["kind"] == "timing" and e.get("case") == case)]


# --- point 3: the scope is per cell ----------------------------------------------------------


def test_scope_names_passing_cells_not_flattened_lists(tmp_path: Path) -> None:
    """(2, 16) passed eager but not compiled: the scope must not read '(2, 16) ... compiled'."""
    events = base_events()
    _mismatch(events, BIG_COMPILED)
    log = _write(tmp_path / "run", events, "scope-run")
    judged = judge_log(log, annotations=None)
    scope = judged.disposition.scope
    compiled = next(g for g in scope.passed if g.mode == "compiled")
    assert [scope_label(c) for c in compiled.cells] == ["(1, 16)"]
    eager = next(g for g in scope.passed if g.mode == "eager")
    assert [scope_label(c) for c in eager.cells] == ["(1, 16)", "(2, 16)"]
    assert [(g.mode, [(scope_label(c), c.status) for c in g.cells]) for g in scope.not_passed] == [
        ("compiled", [("(2, 16)", "mismatch")])
    ]
    assert scope.passed_count == 3 and scope.not_passed_count == 1

    build_report(log, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    for text in (html, md):
        assert "float32 · contiguous · compiled" in text
        assert "mismatch: (2, 16)" in text
        assert "Cells that passed (3)" in text and "did not pass (1)" in text
    # the passed line for compiled names only (1, 16)
    assert "| float32 · contiguous · compiled | (1, 16) |" in md
    assert "| float32 · contiguous · compiled | mismatch: (2, 16) |" in md


def test_scope_with_no_passing_cell_says_it_covers_nothing(tmp_path: Path) -> None:
    events = base_events()
    for b, l in ((1, 16), (2, 16)):
        for mode in ("eager", "compiled"):
            _mismatch(events, case_key(b, l, mode))
    log = _write(tmp_path / "run", events, "nothing-passed")
    build_report(log, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "No cell passed: the disposition covers nothing." in md
    assert "mismatch: (1, 16), (2, 16)" in md


def test_site_index_shows_the_scope_per_cell(tmp_path: Path) -> None:
    events = base_events()
    _mismatch(events, BIG_COMPILED)
    _write(tmp_path / "runs" / "a", events, "scope-site")
    build_site([tmp_path / "runs"], tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert ", 3/4, cpu</span></summary>" in index, "the row's short label: outcome, cells passed of all, ran on"
    assert "passed float32 · contiguous · compiled: (1, 16)<" in index
    assert "not passed float32 · contiguous · compiled: mismatch: (2, 16)" in index


# --- point 9: only passing timings are compared, with their caveats ---------------------------


def _pair(tmp_path: Path, edit_after: Callable[[Events], None]) -> tuple[Path, Path]:
    before = _write(tmp_path / "runs" / "before", base_events(), "run-before", "2026-01-01T00:00:00Z")
    events = base_events()
    edit_after(events)
    after = _write(tmp_path / "runs" / "after", events, "run-after", "2026-01-02T00:00:00Z")
    return before, after


def _accepted(log: Path, case: str) -> None:
    """The owner's verdict on a mismatching cell: the run's performance acceptance is not stopped."""
    (log.parent / "annotations.toml").write_text(
        f'["{case}"]\nexplanation = "checked"\nverdict = "accepted"\nreason = "task metric holds"\n', encoding="utf-8"
    )


def test_diff_ignores_timings_of_cells_that_did_not_pass(tmp_path: Path) -> None:
    # A hand-written log may time a mismatching cell: its timing is still not compared (with a
    # verdict on it, so that the other cells' timings are).
    before, after = _pair(tmp_path, lambda ev: _mismatch(ev, BIG_COMPILED, keep_timing=True))
    _accepted(after, BIG_COMPILED)
    a, b = summarize(judge_log(before)), summarize(judge_log(after))
    assert b.cells[BIG_COMPILED].warm_median_s is None, "no timing is kept for a mismatching cell"
    diff = diff_runs(a, b)
    assert BIG_COMPILED not in {t.case for t in diff.timings}
    assert {t.case for t in diff.timings} == {case_key(1, 16, "eager"), case_key(1, 16, "compiled"), BIG_EAGER}


def test_a_stopped_run_gives_no_ratio_and_says_why(tmp_path: Path) -> None:
    before, after = _pair(tmp_path, lambda ev: _mismatch(ev, BIG_COMPILED))
    diff = diff_runs(summarize(judge_log(before)), summarize(judge_log(after)))
    assert diff.timings == [] and diff.not_timed == [case_key(1, 16, "compiled"), case_key(1, 16, "eager"), BIG_EAGER]
    text = format_diff(diff)
    assert (
        "timing not compared: performance acceptance is stopped on the after until the mismatching or errored cells"
        " have a verdict (after run run-after: 1 mismatching or errored cell(s) without a verdict)"
    ) in text
    data = json.loads(CliRunner().invoke(main, ["diff", "--json", str(before), str(after)]).output)
    assert (
        data["timings"] == []
        and data["timing_stopped"] == "not compared: performance acceptance is stopped on the after"
    )


def test_ratio_with_cpu_fallback_is_labelled(tmp_path: Path) -> None:
    def fallback(events: Events) -> None:
        _edit(
            events,
            "operators",
            BIG_EAGER,
            fallback={"status": "measured", "items": ["aten::_scaled_dot_product_flash_attention_for_cpu"]},
        )

    before, after = _pair(tmp_path, fallback)
    diff = diff_runs(summarize(judge_log(before)), summarize(judge_log(after)))
    flags = {t.case: t.flags for t in diff.timings}
    assert flags[BIG_EAGER] == ["includes CPU fallback (after)"]
    assert flags[case_key(1, 16, "eager")] == []
    assert "includes CPU fallback (after)" in format_diff(diff)


def test_workload_history_compares_only_passing_timings(tmp_path: Path) -> None:
    def edit(events: Events) -> None:
        _mismatch(events, BIG_COMPILED, keep_timing=True)
        _edit(events, "operators", BIG_EAGER, fallback={"status": "measured", "items": ["aten::mul"]})

    _pair(tmp_path, edit)
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").iterdir()) / "index.html"
    html = page.read_text(encoding="utf-8")
    # The mismatch has no verdict: no timing is compared against the previous run, and the page says why.
    assert '<table class="ratios">' not in html
    assert "Timing not compared: performance acceptance is stopped on the after until" in html
    # the trend chart marks those points (hover text and a hollow marker)
    assert "performance acceptance stopped in this run" in html
    # The history table says it once in the stopped run's row, not in each of its timing cells.
    history = html.split('<table class="history">', 1)[1].split("</table>", 1)[0]
    rows = history.split("<tbody>", 1)[1].split("</tr>")
    stopped = [row for row in rows if "run-after" in row]
    assert len(stopped) == 1 and stopped[0].count("performance acceptance stopped") == 1
    assert "performance acceptance stopped" not in "".join(row for row in rows if "run-before" in row)


def test_history_frame_carries_the_caveats(tmp_path: Path) -> None:
    from reportgen.publish.frame import history_frame

    def edit(events: Events) -> None:
        _mismatch(events, BIG_COMPILED)
        _edit(events, "operators", BIG_EAGER, fallback={"status": "measured", "items": ["aten::mul"]})

    before, after = _pair(tmp_path, edit)
    frame = history_frame([summarize(judge_log(before)), summarize(judge_log(after))])
    caveats = {(r.run_id, r.case): r.caveats for r in frame.itertuples()}
    # Both fixtures are synthetic: each timed point says so first. Schema 1.0 recorded no CPU
    # wait, so contention was not judged.
    unjudged = "CPU wait not recorded: contention not judged"
    assert caveats[("run-before", BIG_EAGER)] == f"synthetic fixture, not a measurement; {unjudged}"
    assert (
        caveats[("run-after", BIG_EAGER)]
        == f"synthetic fixture, not a measurement; performance acceptance stopped in this run; includes CPU fallback; {unjudged}"
    )
    assert caveats[("run-after", BIG_COMPILED)] == "", "a cell that did not pass has no timing to qualify"


def test_a_start_time_a_history_cannot_hold_places_the_run_last_and_builds_the_site(tmp_path: Path) -> None:
    """started_at is untrusted text: not ISO, empty, or outside pandas' years 1677-2262, the run
    keeps its page, has no time in the history (placed last, named so), and validate says why."""
    import reportgen
    from reportgen.contract.validation import read_log
    from reportgen.render.charts import UNKNOWN_START

    stamps = ["3000-01-01T00:00:00Z", "not a time", "", "2026-13-45T99:99:99Z"]
    _write(tmp_path / "runs" / "good", base_events(), "run-good", "2026-01-01T00:00:00Z")
    for n, stamp in enumerate(stamps):
        log = _write(tmp_path / "runs" / f"odd{n}", base_events(), f"run-odd{n}", stamp)
        warnings = [p.message for p in read_log(log).problems if p.severity == "warning"]
        assert any("started_at" in w and "places this run last" in w for w in warnings), (stamp, warnings)
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").iterdir()) / "index.html"
    html = page.read_text(encoding="utf-8")
    assert UNKNOWN_START in html and "2026-01-01 00:00:00" in html
    frame = reportgen.load_cells([tmp_path / "runs"])
    times = frame.drop_duplicates("run_id").set_index("run_id")["started_at"]
    assert times["run-good"].year == 2026
    assert times.drop("run-good").isna().all()


def test_with_a_verdict_the_history_compares_only_passing_timings(tmp_path: Path) -> None:
    def edit(events: Events) -> None:
        _mismatch(events, BIG_COMPILED, keep_timing=True)
        _edit(events, "operators", BIG_EAGER, fallback={"status": "measured", "items": ["aten::mul"]})

    _, after = _pair(tmp_path, edit)
    _accepted(after, BIG_COMPILED)
    build_site([tmp_path / "runs"], tmp_path / "site")
    html = (next((tmp_path / "site" / "workloads").iterdir()) / "index.html").read_text(encoding="utf-8")
    ratios = html.split('<table class="ratios">', 1)[1].split("</table>", 1)[0]
    assert BIG_COMPILED not in ratios, "a mismatching cell's timing is never compared"
    assert BIG_EAGER in ratios and "includes CPU fallback (after)" in ratios
    assert "performance acceptance stopped:" not in html and "performance acceptance is stopped" not in html


def test_a_version_change_is_not_hidden_by_code_and_data_none_changed(tmp_path: Path) -> None:
    """A review: after torch changed between two runs, the pair on the history page said "Code
    and data: none changed (...)", though its scope counts the packages loaded as code (torch is
    listed apart, under Versions, further down). The sentence names the version change."""
    runs = tmp_path / "runs"
    _write(runs / "a", base_events(), "run-torch-a", "2026-01-01T00:00:00Z")
    events = base_events()
    events[1]["versions"]["torch"]["value"] = "2.12.0"
    _write(runs / "b", events, "run-torch-b", "2026-01-02T00:00:00Z")
    build_site([runs], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert (
        "Code and data: none changed (collector, its git state, the files it read, weights and inputs); the package versions below changed."
        in page
    )
    assert "Versions: torch 2.13.0 → 2.12.0" in page
    md = CliRunner().invoke(main, ["diff", str(runs / "a"), str(runs / "b"), "--format", "md"]).output
    assert "**Code and data:** none changed but the versions above." in md, md
