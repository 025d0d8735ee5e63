"""The comparison page as a reader meets it: sides named in every figure, cache misses and hits
apart, both runs and the page's files linked, per-cell ratios charted."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.render.compare import gather
from tests.chartsvg import chart_markup, page_charts, parse_chart
from tests.logbuilder import dumps, timing_log

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _hits_on(events: list[dict[str, Any]], cases: set[str], seconds: float) -> list[dict[str, Any]]:
    """The named cells' compiles met a filled cache: hits, no misses, fast."""
    for event in events:
        if event["kind"] == "compile" and event["case"] in cases:
            event.update(
                cache_hits=1, cache_misses=0, cache_condition="persistent_cache", compile_first_result_s=seconds
            )
    return events


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    base = timing_log("synthetic-base", scale=1.0, noise=0.01, seed=0)
    cand = timing_log("synthetic-cand", target="cuda", family="cuda", scale=1.1, noise=0.01, seed=1)
    hit = {"b2-l16-contiguous-float32-compiled"}
    return _write(tmp_path, "base", _hits_on(base, hit, 0.2)), _write(tmp_path, "cand", _hits_on(cand, hit, 0.1))


def test_compile_cost_keeps_cache_misses_and_hits_apart(tmp_path: Path) -> None:
    comparison = gather(*_pair(tmp_path))
    groups = {g.cache: g for g in comparison.compile_cost.by_cache}
    assert set(groups) == {"cache miss", "cache hit"}
    # The miss (b1-l16: 4.5 s in the fixture) and the hit apart; one median over both shapes
    # would have read 2.35 s on the baseline, a time no compile took.
    assert groups["cache miss"].baseline_s == 4.5 and groups["cache miss"].baseline_shapes == 1
    assert groups["cache hit"].baseline_s == 0.2 and groups["cache hit"].candidate_s == 0.1
    assert "on a cache miss: candidate (cuda) 4.5 s against baseline (cpu) 4.5 s" in comparison.headline
    assert "on a cache hit: candidate (cuda) 0.1 s against baseline (cpu) 0.2 s" in comparison.headline


def test_the_sample_pair_separates_the_cuda_misses_from_the_cpu_hits() -> None:
    """The real tiny-encoder pair: the CPU run's compiles hit a persistent cache, the H200 run's
    missed. Before, one row said 0.667 s against 2.24 s as if like for like."""
    runs = sorted(p for p in SAMPLES.glob("tiny-encoder-cpu-*") if p.is_dir())
    comparison = gather(runs[-1], next(SAMPLES.glob("tiny-encoder-cuda-*")))
    groups = {g.cache: g for g in comparison.compile_cost.by_cache}
    # The CPU side's cache misses are its empty-cache cold calls in fresh processes, said so; the
    # CUDA side's, like with like, its own cold calls of that condition (a review: its in-process
    # compile, 2.24 s, had been set against the CPU's fresh process's whole first call).
    miss = groups["cache miss"]
    assert miss.baseline_cold and miss.candidate_cold and miss.candidate_s is not None
    assert groups["cache hit"].candidate_s is None and groups["cache hit"].baseline_s is not None
    cuda = [
        json.loads(line)
        for line in next(SAMPLES.glob("tiny-encoder-cuda-*/events.jsonl")).read_text(encoding="utf-8").splitlines()
    ]
    colds = [
        e["cold"]["seconds"]
        for e in cuda
        if e["kind"] == "timing"
        and (e.get("cold") or {}).get("cache_condition") == "fresh_process_empty_cache"
        and e["case"]
        in {c.case for c in comparison.cells if c.mode == "compiled" and c.repeat_of is None and c.correct_on_both}
    ]
    assert colds and groups["cache miss"].candidate_s == statistics.median(colds)


def test_every_figure_names_its_side(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["compare", str(base.parent), str(cand.parent), "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = (out / "compare.html").read_text(encoding="utf-8")
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert "Candidate cuda (run synthetic-cand) vs baseline cpu (run synthetic-base)" in result.output
    for page in (html, md):
        assert "warm median, baseline (cpu)" in page and "warm median, candidate (cuda)" in page
        assert "geometric mean of warm ratios (candidate (cuda) / baseline (cpu))" in page
        assert "compile + first result per new shape, cache hit" in page
        assert "| baseline | candidate |" not in page and '>baseline</th><th scope="col">candidate<' not in page


def test_standalone_page_names_its_runs_and_links_its_files(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["compare", str(base.parent), str(cand.parent), "--out", str(out), "--format", "html,md,json"]
    )
    assert result.exit_code == 0, result.output
    html = (out / "compare.html").read_text(encoding="utf-8")
    for name in ("compare.md", "compare.json", "compare-details.csv"):
        assert f'href="{name}" download' in html and (out / name).is_file()
    assert "Baseline (cpu): <code>synthetic-base</code>" in html  # no run page to link outside a site
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert "[compare-details.csv](compare-details.csv)" in md
    # A review: the runs' line and the files' line ran into one paragraph (no blank line between).
    from markdown_it import MarkdownIt

    paragraphs = [t.content for t in MarkdownIt("commonmark").parse(md) if t.type == "inline"]
    assert any(p.startswith("Baseline (cpu):") and "Files:" not in p for p in paragraphs), paragraphs[:4]
    assert any(p.startswith("Files:") for p in paragraphs), paragraphs[:4]


def test_site_comparison_links_both_runs_and_its_files(tmp_path: Path) -> None:
    from reportgen.publish.site import build_site
    from tests.test_compare import _site_runs

    runs = _site_runs(tmp_path)
    (runs / "site.toml").write_text(
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n', encoding="utf-8"
    )
    site = tmp_path / "site"
    assert build_site([runs], site).rejected == []
    (page_dir,) = (site / "comparisons").iterdir()
    page = (page_dir / "index.html").read_text(encoding="utf-8")
    for run_id in ("synthetic-cpu-new", "synthetic-cuda"):
        (run_page,) = [p for p in (site / "runs").iterdir() if p.name.startswith(run_id + "-")]
        assert f'<a href="../../runs/{run_page.name}/index.html"><code>{run_id}</code></a>' in page
        assert (page_dir / f"../../runs/{run_page.name}/index.html").resolve().is_file()
    for name in ("compare.md", "compare-details.csv"):
        assert f'href="{name}" download' in page and (page_dir / name).is_file()
    assert 'href="compare.json"' not in page  # not written on a site: never linked


def test_site_comparison_reads_its_logs_under_the_sites_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A comparison page read its logs again with the default 1 GiB limit, not the site's
    --max-log-size: a log that grew past the site's limit after its run page was judged was still
    compared. Its comparison is now refused, under the same limit as the run pages."""
    import reportgen.publish.site as site_module
    from reportgen.publish.site import build_site
    from tests.test_compare import _site_runs

    runs = _site_runs(tmp_path)
    (runs / "site.toml").write_text(
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n', encoding="utf-8"
    )
    limit = max(p.stat().st_size for p in runs.rglob("events.jsonl")) + 100
    write_assets = site_module.write_assets

    def grow_then_write(out_dir: Path) -> Any:  # between the run pages' reading and the comparison's
        with (runs / "c" / "events.jsonl").open("a", encoding="utf-8") as log:
            log.write("\n" * 200)
        return write_assets(out_dir)

    monkeypatch.setattr(site_module, "write_assets", grow_then_write)
    result = build_site([runs], tmp_path / "site", max_bytes=limit)
    (refused,) = [r for r in result.rejected if r.startswith("comparison ")]
    assert "synthetic-cuda" in refused and "larger than the limit" in refused and "--max-log-size" in refused
    assert not (tmp_path / "site" / "comparisons").exists() or not any((tmp_path / "site" / "comparisons").iterdir())


def test_site_comparison_of_a_log_gone_since_its_page_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log removed after its run page was judged stopped the whole build with an exception
    from the comparison; the comparison is now refused with the reason, and the pages are kept."""
    import reportgen.publish.site as site_module
    from reportgen.publish.site import build_site
    from tests.test_compare import _site_runs

    runs = _site_runs(tmp_path)
    (runs / "site.toml").write_text(
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n', encoding="utf-8"
    )
    write_assets = site_module.write_assets

    def remove_then_write(out_dir: Path) -> Any:
        (runs / "c" / "events.jsonl").unlink()
        return write_assets(out_dir)

    monkeypatch.setattr(site_module, "write_assets", remove_then_write)
    result = build_site([runs], tmp_path / "site")
    (refused,) = [r for r in result.rejected if r.startswith("comparison ")]
    assert "synthetic-cuda" in refused and "runs/c/events.jsonl" in refused
    assert (tmp_path / "site" / "index.html").is_file()


def test_site_comparison_of_replicates_links_every_run(tmp_path: Path) -> None:
    from reportgen.publish.site import build_site
    from tests.test_compare import _site_runs

    runs = _site_runs(tmp_path)
    (runs / "site.toml").write_text(
        '[[compare]]\nbaseline = ["synthetic-cpu-old", "synthetic-cpu-new"]\ncandidate = "synthetic-cuda"\n',
        encoding="utf-8",
    )
    site = tmp_path / "site"
    assert build_site([runs], site).rejected == []
    (page_dir,) = (site / "comparisons").iterdir()
    html = (page_dir / "index.html").read_text(encoding="utf-8")
    md = (page_dir / "compare.md").read_text(encoding="utf-8")
    replicates_html = html[html.index("Replicates:") :].split("</p>")[0]
    replicates_md = md[md.index("**Replicates:**") :].splitlines()[0]
    for run_id in ("synthetic-cpu-old", "synthetic-cpu-new", "synthetic-cuda"):
        (run_page,) = [p for p in (site / "runs").iterdir() if p.name.startswith(run_id + "-")]
        assert f'<a href="../../runs/{run_page.name}/index.html"><code>{run_id}</code></a>' in replicates_html
        assert f"](../../runs/{run_page.name}/report.md)" in replicates_md


def test_ratio_charts_sorted_with_intervals_eager_and_compiled_apart(tmp_path: Path) -> None:
    from reportgen.render.compare_view import build_compare_view

    comparison = gather(*_pair(tmp_path))
    view = build_compare_view(comparison)
    by_mode = {f.id: f for f in view.figures}
    assert set(by_mode) == {"fig-ratio-eager", "fig-ratio-compiled"}
    for mode, figure in (("eager", by_mode["fig-ratio-eager"]), ("compiled", by_mode["fig-ratio-compiled"])):
        chart = parse_chart(chart_markup(figure))
        cells = [c for c in comparison.timed if c.mode == mode]
        assert len(chart.points) == len(cells), "one point per timed cell of the mode"
        top_down = sorted(chart.points, key=lambda p: p.y)
        assert [p.x for p in top_down] == sorted(p.x for p in top_down), "smallest ratio first, at the top"
        expected = sorted((c.timing.warm.ratio, c.timing.warm.low, c.timing.warm.high, c.case) for c in cells)  # type: ignore[union-attr]
        for point, (ratio, low, high, case) in zip(top_down, expected):
            assert point.title.startswith(f"{case}: candidate (cuda) / baseline (cpu) ")
            shown = float(point.title.split(" / baseline (cpu) ")[1].split(",")[0])
            assert shown == pytest.approx(ratio, rel=5e-3)
            if low is not None and high is not None:
                assert point.whisker is not None and point.whisker[0] <= point.x <= point.whisker[1]
        assert "candidate (cuda) / baseline (cpu)" in figure.title and mode in figure.title


def test_compare_page_draws_its_charts_with_no_script(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path)
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["compare", str(base.parent), str(cand.parent), "--out", str(out)]).exit_code == 0
    html = (out / "compare.html").read_text(encoding="utf-8")
    charts = page_charts(html)
    assert {"fig-ratio-eager", "fig-ratio-compiled"} <= set(charts)
    assert all(chart.points for chart in charts.values())
    assert re.findall(r"<script[^>]*>", html) == [
        f'<script src="{name}">' for name in re.findall(r'<script src="(assets/print-[0-9a-f]{10}\.js)">', html)
    ], "no chart library, no chart script"


def test_cache_conditions_in_plain_words(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path)
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["compare", str(base.parent), str(cand.parent), "--out", str(out)]).exit_code == 0
    for name in ("compare.html", "compare.md"):
        page = (out / name).read_text(encoding="utf-8")
        assert "fresh process, empty compile cache" in page and "eager (no torch.compile)" in page
        assert not re.search(r"fresh_process_empty_cache|eager_no_compile|fresh\\_process|eager\\_no", page), name


@pytest.mark.browser
def test_compare_page_charts_draw_offline(tmp_path: Path, browser: Any) -> None:
    from tests.browser import open_page

    base, cand = _pair(tmp_path)
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["compare", str(base.parent), str(cand.parent), "--out", str(out)]).exit_code == 0
    page, log = open_page(browser, (out / "compare.html").as_uri())
    assert log.errors == [] and log.failed == []
    assert all(url.startswith("file://") for url in log.requests), log.requests
    for mode in ("eager", "compiled"):
        chart = page.locator(f"#fig-ratio-{mode}")
        chart.scroll_into_view_if_needed()
        box = chart.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 100, box
        assert "candidate (cuda) / baseline (cpu)" in page.text_content(f"#fig-ratio-{mode}")  # type: ignore[operator]
    page.close()


def test_compiles_without_counters_are_a_group_of_their_own(tmp_path: Path) -> None:
    base = timing_log("synthetic-base", scale=1.0, noise=0.01, seed=0)
    cand = timing_log("synthetic-cand", target="cuda", family="cuda", scale=1.1, noise=0.01, seed=1)
    for event in cand:
        if event["kind"] == "compile" and event["case"].startswith("b2-"):
            event.update(cache_hits=None, cache_misses=None, cache_condition="compiled_in_process")
    comparison = gather(_write(tmp_path, "base", base), _write(tmp_path, "cand", cand))
    groups = {g.cache: g for g in comparison.compile_cost.by_cache}
    assert (
        groups["cache outcome not recorded"].candidate_shapes == 1
        and groups["cache outcome not recorded"].baseline_s is None
    )
    assert groups["cache miss"].candidate_shapes == 1 and groups["cache miss"].baseline_shapes == 2
    assert (
        "where the cache outcome was not recorded: candidate (cuda) 5.5 s against baseline (cpu) not measured"
        in comparison.headline
    )


def test_peak_device_memory_beside_the_timings_per_side(tmp_path: Path) -> None:
    base = timing_log("synthetic-base", scale=1.0, noise=0.01, seed=0)
    cand = timing_log("synthetic-cand", target="cuda", family="cuda", scale=1.1, noise=0.01, seed=1)
    for event in cand:
        event["schema_version"] = "1.3"
        if event["kind"] == "timing" and event.get("warm"):
            event["device_memory"] = {
                "status": "measured",
                "peak_allocated_bytes": 3 << 20,
                "source": "torch.cuda.max_memory_allocated",
            }
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "compare",
            str(_write(tmp_path, "base", base).parent),
            str(_write(tmp_path, "cand", cand).parent),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert "peak device memory, baseline (cpu) → candidate (cuda)" in md
    rows = [line for line in md.splitlines() if line.startswith("| b1-l16-contiguous-float32-")]
    assert any("| not measured → 3 MiB |" in line for line in rows), rows


def test_a_cold_call_set_against_a_compile_names_each_sides_condition() -> None:
    """Where one side's miss is its fresh process's cold call and the other has no such cold
    call, each figure says what it is (the compile's side said nothing of its condition)."""
    from types import SimpleNamespace

    from reportgen.judge.comparison import (
        COLD_AS_MISS,
        IN_PROCESS_COMPILE,
        CompileCost,
        CompileMedian,
        compile_cost_text,
    )

    cost = CompileCost(3, (CompileMedian("cache miss", 16.9, 2.24, 3, 3, True, False),))
    base, cand = SimpleNamespace(short_name="baseline (cpu)"), SimpleNamespace(short_name="candidate (cuda)")
    (phrase,) = compile_cost_text(cost, base, cand)  # type: ignore[arg-type]
    assert phrase == (
        f"on a cache miss: candidate (cuda) 2.24 s (median of 3 shapes; {IN_PROCESS_COMPILE}) against baseline (cpu) "
        f"16.9 s (median of 3 shapes; {COLD_AS_MISS[2:]})"
    )
    alike = CompileCost(3, (CompileMedian("cache miss", 16.9, 2.24, 3, 3, False, False),))
    assert IN_PROCESS_COMPILE not in compile_cost_text(alike, base, cand)[0]  # type: ignore[arg-type]
