"""How long a run page takes to show in headless Chromium, with its charts against without them.

    python tests/benchmarks/bench_page_load.py [--rounds 7] [--log sample_runs/<run>/events.jsonl]

Each round loads the same report twice, interleaved: once as written, once with the chart
bundle blocked (the page without charts). "Shown" is the load event plus every chart in the
first window drawn. Printed: the median and range of the per-round ratios (target <= 2), and
for information the time until every chart on the page is drawn (as before printing).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from reportgen.render.report import build_report  # noqa: E402
from tests.browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DEFAULT_LOG = next(iter(sorted((REPO / "sample_runs").glob("all-MiniLM*/events.jsonl"))), None)
VISIBLE_DRAWN = """() => {
  const charts = [...document.querySelectorAll('div.chart')];
  const near = charts.filter(c => c.getBoundingClientRect().top < window.innerHeight + 100);
  return near.every(c => c.classList.contains('js-plotly-plot'));
}"""


def shown_s(browser, url: str, charts: bool, all_charts: bool = False) -> float:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    if not charts:
        page.route("**/plotly-*", lambda route: route.abort())
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_load_state("load")
    if charts:
        if all_charts:
            page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
            page.wait_for_function("() => [...document.querySelectorAll('div.chart')].every(c => c.classList.contains('js-plotly-plot'))", timeout=60_000)
        else:
            page.wait_for_function(VISIBLE_DRAWN, timeout=60_000)
    elapsed = time.perf_counter() - start
    page.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG)
    args = parser.parse_args()
    if args.log is None or not args.log.is_file():
        print("no log to render: pass --log", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        out = Path(tmp)
        build_report(args.log, out)
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        url = (out / "report.html").as_uri()
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        shown_s(browser, url, charts=True)  # warm the browser's caches once
        ratios, with_all = [], []
        for _ in range(args.rounds):
            bare = shown_s(browser, url, charts=False)
            drawn = shown_s(browser, url, charts=True)
            ratios.append(drawn / bare)
            with_all.append(shown_s(browser, url, charts=True, all_charts=True) / bare)
        browser.close()
    print(f"report folder: {size / 1e6:.2f} MB (target < 2 MB)")
    print(f"page shown with charts / without: median {statistics.median(ratios):.2f} "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}) over {args.rounds} rounds (target <= 2)")
    print(f"every chart drawn / page without charts: median {statistics.median(with_all):.2f} "
          f"(range {min(with_all):.2f}-{max(with_all):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
