"""`reportgen site` and `reportgen diff`: pages, incremental writes, byte-identical rebuilds."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.publish.site import STATE_NAME, build_site
from reportgen.publish.site_quick import QUICK_NAME
from tests.chartsvg import page_charts
from tests.conftest import FIXTURES


def _fixture_dir(tmp_path: Path, names: list[str] | None = None) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir(exist_ok=True)
    for path in sorted(FIXTURES.glob("*.jsonl")):
        if names is None or path.name in names:
            target = runs / path.stem / "events.jsonl"
            target.parent.mkdir(exist_ok=True)
            shutil.copy(path, target)
    return runs


def _all_bytes(root: Path) -> dict[str, bytes]:
    """Every file of a site but the no-op record, which holds this folder's own stat results."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != QUICK_NAME
    }


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The site of every fixture log and what build_site returned, built once for the tests
    that only read it."""
    root = tmp_path_factory.mktemp("fixture-site")
    return root / "site", build_site([_fixture_dir(root)], root / "site")


def test_site_pages_and_index(fixture_site: tuple[Path, Any]) -> None:
    site, result = fixture_site
    assert result.rejected == [] and result.runs == len(list(FIXTURES.glob("*.jsonl")))
    index = (site / "index.html").read_text(encoding="utf-8")
    for row in ("synthetic-complete", "synthetic-fallback", "cg-solver", "Requires a change: operator", "2.13.3.0.1"):
        assert row in index
    run_pages = sorted((site / "runs").iterdir())
    assert len(run_pages) == result.runs
    for page in run_pages:
        assert (page / "index.html").is_file() and (page / "report.md").is_file()
        assert re.fullmatch(r"[A-Za-z0-9._-]+", page.name), "run directories never take raw log text"
    workloads = sorted(p.name for p in (site / "workloads").iterdir())
    expected = {json.loads(p.read_text(encoding="utf-8").splitlines()[0])["workload"] for p in FIXTURES.glob("*.jsonl")}
    assert len(workloads) == len(expected)
    assets = sorted(p.name.split("-")[0] for p in (site / "assets").iterdir())
    assert assets == ["print", "report", "site"], "one shared copy of each asset, and no chart library"


def test_only_relative_links(fixture_site: tuple[Path, Any]) -> None:
    for page in fixture_site[0].rglob("*.html"):
        for ref in re.findall(r'(?:href|src)="([^"]*)"', page.read_text(encoding="utf-8")):
            assert not re.match(r"^(?:[a-z]+:|/)", ref), f"{page}: {ref}"
            if not ref.startswith("#"):
                assert (page.parent / ref.split("#")[0]).exists(), f"{page}: broken link {ref}"


def test_only_the_site_s_own_row_scripts_are_removed(tmp_path: Path) -> None:
    """A file named like the row data but for a trailing newline or one more letter is not the
    site's own, and a rebuild leaves it where it is."""
    names = [p.name for p in sorted(FIXTURES.glob("*.jsonl"))]
    runs = _fixture_dir(tmp_path, [n for n in names if n != "synthetic_mismatch.jsonl"])
    site = tmp_path / "site"
    build_site([runs], site)
    others = ["index-rows-0123456789.js\n", "index-rows-0123456789.jsx"]
    for name in others:
        (site / name).write_text("not the site's", encoding="utf-8")
    _fixture_dir(tmp_path, ["synthetic_mismatch.jsonl"])
    build_site([runs], site)
    rows = re.search(r'src="(index-rows-[0-9a-f]{10}\.js)"', (site / "index.html").read_text(encoding="utf-8")).group(1)
    assert sorted(p.name for p in site.glob("index-rows-*")) == sorted([rows, *others])


def test_index_times_are_shown_as_the_page_script_tests_them() -> None:
    from reportgen.publish.site_rows import shown_stamp

    assert shown_stamp("2026-11-29T22:52:21Z") == "2026-11-29 22:52:21"
    for odd in (
        "2026-11-29T22:52:21Z\n",
        "\u0662\u0660\u0662\u0666-11-29T22:52:21Z",
    ):  # the page's /^...$/ and \d refuse both
        assert shown_stamp(odd) == odd


def test_adding_one_run_rewrites_only_its_pages(tmp_path: Path) -> None:
    names = [p.name for p in sorted(FIXTURES.glob("*.jsonl"))]
    runs = _fixture_dir(tmp_path, [n for n in names if n != "synthetic_mismatch.jsonl"])
    site = tmp_path / "site"
    build_site([runs], site)
    _fixture_dir(tmp_path, ["synthetic_mismatch.jsonl"])
    result = build_site([runs], site)
    written = sorted(str(p.relative_to(site)) for p in result.written)
    state = json.loads((site / STATE_NAME).read_text(encoding="utf-8"))
    slug = next(r["slug"] for r in state["runs"].values() if r["run_id"] == "synthetic-mismatch")
    wslug = next(r["workload_slug"] for r in state["runs"].values() if r["run_id"] == "synthetic-mismatch")
    rows = re.search(r'src="(index-rows-[0-9a-f]{10}\.js)"', (site / "index.html").read_text(encoding="utf-8")).group(1)
    assert [p.name for p in site.glob("index-rows-*.js")] == [rows], "the previous row data is removed"
    # Its neighbours in the same workload and target link to it (previous/next run): their
    # pages are rendered again, and only those.
    added = next(r for r in state["runs"].values() if r["run_id"] == "synthetic-mismatch")
    history = sorted(
        (r for r in state["runs"].values() if (r["workload"], r["target"]) == (added["workload"], added["target"])),
        key=lambda r: (r["started_at"], r["run_id"]),
    )
    at = history.index(added)
    neighbours = [r["slug"] for r in history[max(at - 1, 0) : at + 2] if r is not added]
    assert written == sorted(
        [
            STATE_NAME,
            "index.csv",
            "index.html",
            "index.json",
            "index.parquet",
            rows,
            f"runs/{slug}/details.csv",
            f"runs/{slug}/events.jsonl",
            f"runs/{slug}/index.html",
            f"runs/{slug}/report.md",
            f"workloads/{wslug}/index.html",
            *(f"runs/{n}/index.html" for n in neighbours),
        ]
    )


def test_full_rebuild_is_byte_identical(tmp_path: Path) -> None:
    runs = _fixture_dir(tmp_path)
    build_site([runs], tmp_path / "a")
    before = _all_bytes(tmp_path / "a")
    (tmp_path / "a" / STATE_NAME).unlink()  # forget everything: a full rebuild
    result = build_site([runs], tmp_path / "a")
    assert [str(p) for p in result.written] == [str(tmp_path / "a" / STATE_NAME)]
    assert _all_bytes(tmp_path / "a") == before
    build_site([runs], tmp_path / "b")
    assert _all_bytes(tmp_path / "b") == before


def test_a_changed_tool_renders_every_page_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change to the tool's code (not only its version or templates) re-renders every page;
    its bytecode caches do not; the fingerprint is the same for the same files elsewhere."""
    from reportgen.publish.site import _fingerprint
    from reportgen.publish.site_quick import tool_folders

    runs = _fixture_dir(tmp_path)
    site = tmp_path / "site"
    code = tmp_path / "tool"
    code.mkdir()
    (code / "judge.py").write_text("RULE = 1\n", encoding="utf-8")
    folders = [*tool_folders(), code]
    for module in ("site", "site_quick"):
        monkeypatch.setattr(f"reportgen.publish.{module}.tool_folders", lambda: folders)
    build_site([runs], site)

    import reportgen.publish.site as site_module

    rendered: list[str] = []  # the run pages rendered (a page written unchanged is not "written")
    render = site_module.render_report

    def counted(judged: Any, page_dir: Path, *args: Any, **kwargs: Any) -> Any:
        rendered.append(page_dir.name)
        return render(judged, page_dir, *args, **kwargs)

    monkeypatch.setattr(site_module, "render_report", counted)

    def run_pages_rendered() -> int:
        rendered.clear()
        build_site([runs], site)
        return len(rendered)

    assert run_pages_rendered() == 0
    (code / "__pycache__").mkdir()
    (code / "__pycache__" / "judge.cpython-311.pyc").write_bytes(b"cache")
    assert run_pages_rendered() == 0
    (code / "judge.py").write_text("RULE = 2\n", encoding="utf-8")
    assert run_pages_rendered() == len(list((site / "runs").iterdir())) > 0
    elsewhere = tmp_path / "elsewhere" / "tool"
    shutil.copytree(code, elsewhere)
    assert _fingerprint([code]) == _fingerprint([elsewhere]) != _fingerprint([tmp_path / "runs"])


def test_the_collector_code_reportgen_judges_with_is_part_of_the_tool() -> None:
    """A change to the warm-series classifier (collector/stability.py) left a rebuilt site with
    the old verdicts ("12 slower" where a fresh build and diff said 13 unstable): only reportgen,
    the templates and the descriptors counted as the tool."""
    import collector.stability
    import collector.planschema
    from reportgen.publish.site_quick import tool_files, tool_folders

    files = {Path(entry.path).resolve() for folder in tool_folders() for entry in tool_files(folder)}
    for module in (collector.stability, collector.planschema):
        assert Path(module.__file__ or "").resolve() in files, module.__name__
    named = [Path(entry.path).resolve() for folder in tool_folders() for entry in tool_files(folder)]
    assert len(named) == len(set(named)), "no file is counted twice (the descriptors lie in the collector)"


def test_invalid_log_is_reported_and_the_rest_built(tmp_path: Path) -> None:
    runs = _fixture_dir(tmp_path, ["synthetic_complete.jsonl"])
    bad = runs / "broken" / "events.jsonl"
    bad.parent.mkdir()
    bad.write_text("not json\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site")])
    assert result.exit_code == 1
    assert "broken/events.jsonl:1: error: not a JSON-lines event log: its first line is not valid JSON" in result.output
    assert "1 run," in result.output


def test_workload_history_shows_what_changed(tmp_path: Path) -> None:
    runs = _fixture_dir(tmp_path, ["synthetic_complete.jsonl", "synthetic_mismatch.jsonl"])
    # The fixtures start at the same instant, so a history compares them in no order: started later.
    later = runs / "synthetic_mismatch" / "events.jsonl"
    lines = later.read_text(encoding="utf-8").splitlines()
    start = json.loads(lines[0])
    lines[0] = json.dumps({**start, "started_at": start["started_at"].replace("00:00:00", "01:00:00")})
    assert lines[0] != json.dumps(start)
    later.write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_site([runs], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("tiny-encoder-*/index.html")).read_text(encoding="utf-8")
    assert "What changed between consecutive runs" in page
    assert "New failures: 1" in page and "b2-l16-contiguous-float32-compiled" in page


def test_diff_command_text_and_json(tmp_path: Path) -> None:
    runner = CliRunner()
    a, b = str(FIXTURES / "synthetic_complete.jsonl"), str(FIXTURES / "synthetic_mismatch.jsonl")
    text = runner.invoke(main, ["diff", a, b])
    assert text.exit_code == 0
    assert "new failures: 1" in text.output and "b2-l16-contiguous-float32-compiled: pass -> mismatch" in text.output
    assert "disposition: suitable -> blocked" in text.output
    data = json.loads(runner.invoke(main, ["diff", "--json", b, a]).output)
    assert data["fixed"] == [["b2-l16-contiguous-float32-compiled", "mismatch", "pass"]]
    # The before run's mismatch has no verdict: its performance acceptance is stopped, no timing compared.
    assert data["timings"] == [] and "b1-l16-contiguous-float32-eager" in data["not_timed"]
    assert data["timing_stopped"] == "not compared: performance acceptance is stopped on the before"
    versions = runner.invoke(main, ["diff", a, str(FIXTURES / "synthetic_fallback.jsonl")])
    assert "torch_neuronx: unknown -> 2.13.3.0.1" in versions.output


def test_index_downloads_hold_every_run_with_its_counts(fixture_site: tuple[Path, Any]) -> None:
    site, result = fixture_site
    records = json.loads((site / "index.json").read_text(encoding="utf-8"))
    assert len(records) == result.runs
    state = json.loads((site / STATE_NAME).read_text(encoding="utf-8"))
    by_id = {r["run_id"]: r for r in state["runs"].values()}
    for record in records:
        summary = by_id[record["run_id"]]
        assert record["outcome"] == summary["outcome"]
        assert {k: record[f"cells_{k}"] for k in summary["counts"]} == summary["counts"]
        assert (site / record["page"]).is_file()
    rows = list(csv.DictReader((site / "index.csv").open(encoding="utf-8")))
    assert [r["run_id"] for r in rows] == [r["run_id"] for r in records]
    assert [r["started_at"] for r in records] == sorted((r["started_at"] for r in records), reverse=True)


def test_index_csv_never_starts_a_cell_with_a_formula() -> None:
    from reportgen.publish.site import INDEX_COLUMNS, _index_csv

    record = dict.fromkeys(INDEX_COLUMNS, "")
    record.update(run_id='=HYPERLINK("http://x")', workload="+1", headline="-2", target="\tx", outcome="a\rb")
    text = _index_csv([record])
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == 1, "a carriage return in a field does not split its row"
    row = rows[0]
    assert row["run_id"].startswith("'=") and row["workload"] == "'+1" and row["headline"] == "'-2"
    assert row["target"] == "'\tx" and row["outcome"] == "a<U+000D>b"  # shown, as on every page


def _history_runs(root: Path) -> Path:
    """Three synthetic runs of one workload on cpu (getting slower) and one on cuda."""
    from tests.logbuilder import base_events, dumps, finish, with_envelope

    runs = root / "runs"
    for n, (target, family, stamp, factor) in enumerate(
        [
            ("cpu", "cpu", "2026-01-01T00:00:00Z", 1.0),
            ("cuda", "cuda", "2026-01-01T12:00:00Z", 0.2),
            ("cpu", "cpu", "2026-01-02T00:00:00Z", 1.1),
            ("cpu", "cpu", "2026-01-03T00:00:00Z", 1.2),
        ]
    ):
        events = base_events(target, family)
        events[0].update(run_id=f"hist-{n}-{target}", started_at=stamp)
        for event in events:
            if event["kind"] == "timing" and event.get("warm"):
                warm = event["warm"]
                warm["samples_s"] = [s * factor for s in warm["samples_s"]]
                for key in ("min_s", "median_s", "p90_s", "iqr_s"):
                    warm[key] *= factor
        path = runs / f"hist-{n}" / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    return runs


def test_history_is_per_target_and_trends_plot_the_stored_medians(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build_site([_history_runs(tmp_path)], site)
    state = json.loads((site / STATE_NAME).read_text(encoding="utf-8"))
    summaries = {r["run_id"]: r for r in state["runs"].values()}
    page = next((site / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert page.count('<section id="target-') == 2
    # Consecutive changes only within one target: cpu 0 -> 2 -> 3, never cpu -> cuda.
    pairs = re.findall(r"<h4><code>([^<]+)</code> → <code>([^<]+)</code></h4>", page)
    assert sorted(pairs) == [("hist-0-cpu", "hist-2-cpu"), ("hist-2-cpu", "hist-3-cpu")]
    figures = page_charts(page)
    warm = next(chart for fid, chart in figures.items() if fid.endswith("-trend-warm"))
    lines: dict[str, list[float]] = {}
    for point in warm.points:  # "<case>: <run started>, median <time>, quartiles ..."
        case, rest = point.title.split(": ", 1)
        number, unit = rest.split("median ")[1].split(",")[0].split(" ")
        lines.setdefault(case, []).append(float(number) * (1e3 if unit == "s" else 1.0))
    assert lines, "one median line per key cell"
    for case, shown in lines.items():
        expected = [
            summaries[r]["cells"][case]["warm_median_s"] * 1e3 for r in ("hist-0-cpu", "hist-2-cpu", "hist-3-cpu")
        ]
        assert shown == pytest.approx(expected, rel=1e-3)
    assert not any(fid.startswith("fig-cuda") for fid in figures), "one cuda run: no trend yet"
    assert any(fid.endswith("-trend-passed") for fid in figures)


@pytest.mark.parametrize("later", ["2026-12-05T00:30:00-03:00", "2026-12-05 03:30:00Z"])
def test_runs_are_ordered_by_the_instant_they_started_not_by_its_text(tmp_path: Path, later: str) -> None:
    """A run started at 03:30Z, its time written with an offset or with a space (both valid ISO
    8601), is the later run: before, the text ordered it first, so the history read a faster
    run as slower, and the previous/next links ran backwards."""
    from tests import logbuilder

    for run_id, started in (("run-a", "2026-12-05T01:00:00Z"), ("run-b", later)):
        events = logbuilder.complete_log()
        events[0] = {**events[0], "run_id": run_id, "started_at": started}
        (tmp_path / "runs" / run_id).mkdir(parents=True)
        (tmp_path / "runs" / run_id / "events.jsonl").write_text(logbuilder.dumps(events))
    result = build_site([tmp_path / "runs"], tmp_path / "site")
    assert result.runs == 2 and not result.rejected
    (first,) = (tmp_path / "site" / "runs").glob("run-a*/index.html")
    (second,) = (tmp_path / "site" / "runs").glob("run-b*/index.html")
    assert "no earlier run" in first.read_text() and "no earlier run" not in second.read_text()
    assert "previous run" in second.read_text()


def test_the_history_says_what_diff_says_of_an_incomplete_run_and_names_its_ratio(tmp_path: Path) -> None:
    """The history's change section printed neither diff's 'incomplete' note nor said that its
    ratio is estimated from the samples, not the ratio of the two medians beside it."""
    from tests import logbuilder

    for run_id, started, events in (
        ("run-a", "2026-12-05T01:00:00Z", logbuilder.incomplete_log()),
        ("run-b", "2026-12-05T02:00:00Z", logbuilder.complete_log()),
    ):
        events[0] = {**events[0], "run_id": run_id, "started_at": started}
        (tmp_path / "runs" / run_id).mkdir(parents=True)
        (tmp_path / "runs" / run_id / "events.jsonl").write_text(logbuilder.dumps(events))
    build_site([tmp_path / "runs"], tmp_path / "site")
    (page,) = (tmp_path / "site" / "workloads").glob("*/index.html")
    html = page.read_text()
    assert "<strong>Incomplete:</strong> incomplete run on the before side" in html
    assert "not the ratio of the medians shown" in html


def test_a_latest_run_whose_series_all_decide_nothing_keeps_the_trend_columns(tmp_path: Path) -> None:
    """The history's columns and charts follow the cells that changed most against the previous
    run; when the latest run's every series was unstable (so no ratio ranks them), they fell
    away altogether, hiding a real change two runs before."""
    from tests.logbuilder import _warm, dumps, timing_log

    for n, (scale, unsteady) in enumerate(((1.0, False), (1.5, False), (1.5, True))):
        events = timing_log(f"run-{n}", scale=scale, seed=n)
        events[0]["started_at"] = f"2026-12-05T0{n}:00:00Z"
        for event in events:
            if unsteady and event["kind"] == "timing" and event.get("warm"):
                samples = event["warm"]["samples_s"]
                event["warm"] = _warm([x * (3 if i % 2 else 1) for i, x in enumerate(samples)])  # bimodal
        (tmp_path / "runs" / f"run-{n}").mkdir(parents=True)
        (tmp_path / "runs" / f"run-{n}" / "events.jsonl").write_text(dumps(events))
    build_site([tmp_path / "runs"], tmp_path / "site")
    (page,) = (tmp_path / "site" / "workloads").glob("*/index.html")
    html = page.read_text()
    assert html.count("warm median<br><code>") >= 1, "no trend column"
    assert "no stable ratio of a warm call against the previous run to rank them by" in html


def test_a_run_of_year_999_is_earlier_and_a_time_past_year_9999_in_utc_is_no_time() -> None:
    """Years below 1000 are not zero-padded by strftime, so 999 sorted after 2026; and a time
    whose UTC instant is past year 9999 made utc_time raise (validate printed a traceback)."""
    from reportgen.contract.times import utc_time
    from reportgen.publish.summary import RunSummary

    def summary(started: str) -> RunSummary:
        return RunSummary(started, started, "w", "w", "cpu", "cpu", started, True, True, "blocked", "", {}, {})

    assert summary("0999-01-01T00:00:00Z").sort_key < summary("2026-01-01T00:00:00Z").sort_key
    assert utc_time("9999-12-31T23:00:00-03:00") is None
