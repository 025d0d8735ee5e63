"""How long a run page takes to show in headless Chromium, with its charts against without them.

    python tests/benchmarks/bench_page_load.py [--rounds 7] [--log sample_runs/<run>/events.jsonl]

Each round loads the same report four times, interleaved (the order turns each round): with
the chart bundle blocked (the page without charts), the same with every folded section opened
as when printing (the page without charts, laid out as the next one), as written until every
chart on the page is drawn (drawn as when printing: every folded section opened, so the two
charts folded away are drawn too), and as written until the charts in the first window are
drawn. The figure, with its goal: every chart drawn / the same opened page without charts,
median of the per-round ratios (target <= 2), the exit code 1 when above. Also printed: the
first-window ratio (against the page as it opens), the bundle alone (loaded and evaluated,
nothing drawn) over the opened page without charts, the bundle's size and the report
folder's. Wall time in a browser on this
machine: on a shared machine read the range before the median.

``--other-bundle FILE`` also serves a copy of the page with FILE in place of the shipped
plotly bundle, and each round loads it until every chart is drawn too: printed as the ratio
shipped/other (what the choice of bundle does, the charts' data left the same).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from reportgen.render.report import build_report  # noqa: E402
from tests.browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TARGET = 2.0
DEFAULT_LOG = next(iter(sorted((REPO / "sample_runs").glob("all-MiniLM*/events.jsonl"))), None)
VISIBLE_DRAWN = """() => {
  const charts = [...document.querySelectorAll('div.chart')];
  const near = charts.filter(c => c.getBoundingClientRect().top < window.innerHeight + 100);
  return near.every(c => c.classList.contains('js-plotly-plot'));
}"""


LOAD_BUNDLE = """() => new Promise(done => {
  const script = document.createElement('script');
  script.src = document.querySelector('script[data-plotly]').getAttribute('data-plotly');
  script.onload = done;
  document.body.appendChild(script);
})"""


def shown_s(
    browser, url: str, charts: bool, all_charts: bool = False, opened: bool = False, bundle_only: bool = False
) -> float:
    """Seconds until the page is shown: ``opened`` every folded section opened as when printing
    (with charts blocked); ``bundle_only`` that too, then the chart bundle loaded, nothing drawn."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    if not charts or opened:
        page.route("**/plotly-*", lambda route: route.abort())
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_load_state("load")
    if opened:
        page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
        page.evaluate("document.body.offsetHeight")  # the layout of the opened page
    if bundle_only:
        page.unroute("**/plotly-*")
        page.evaluate(LOAD_BUNDLE)
    elif charts:
        if all_charts:
            page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
            page.wait_for_function(
                "() => [...document.querySelectorAll('div.chart')].every(c => c.classList.contains('js-plotly-plot'))",
                timeout=60_000,
            )
        else:
            page.wait_for_function(VISIBLE_DRAWN, timeout=60_000)
    elapsed = time.perf_counter() - start
    page.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG)
    parser.add_argument("--other-bundle", type=Path, help="another plotly.js bundle to compare with the shipped one")
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
        other_url = None
        if args.other_bundle:
            other = Path(tmp) / "other"
            shutil.copytree(out, other)
            shipped = next((other / "assets").glob("plotly-*.min.js"))
            shipped.write_bytes(args.other_bundle.read_bytes())
            other_url = (other / "report.html").as_uri()
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        shown_s(browser, url, charts=True)  # warm the browser's caches once
        ratios, with_all, bundles, parse = [], [], [], []
        kinds = ("bare", "opened", "bundle", "all", "first") + (("other",) if other_url else ())
        for i in range(args.rounds):
            took = {}
            for kind in kinds[i % len(kinds) :] + kinds[: i % len(kinds)]:
                took[kind] = shown_s(
                    browser,
                    other_url if kind == "other" else url,
                    charts=kind != "bare",
                    all_charts=kind in ("all", "other"),
                    opened=kind in ("opened", "bundle"),
                    bundle_only=kind == "bundle",
                )
            if other_url:
                bundles.append(took["all"] / took["other"])
            with_all.append(took["all"] / took["opened"])
            ratios.append(took["first"] / took["bare"])
            parse.append(took["bundle"] / took["opened"])
            print(
                f"  round {i + 1}: " + ", ".join(f"{kind} {seconds:.2f} s" for kind, seconds in took.items()),
                flush=True,
            )
        browser.close()
    bundle = next(p for p in (REPO / "templates" / "assets" / "vendor").glob("plotly-*.min.js"))
    print(
        f"report folder: {size / 1e6:.2f} MB (target < 2 MB); chart bundle {bundle.name}, {bundle.stat().st_size / 1e6:.2f} MB"
    )
    print(
        f"charts in the first window drawn / page without charts: median {statistics.median(ratios):.2f} "
        f"(range {min(ratios):.2f}-{max(ratios):.2f}) over {args.rounds} rounds"
    )
    print(
        f"the chart bundle alone loaded and evaluated, nothing drawn / the opened page without charts: median {statistics.median(parse):.2f} "
        f"(range {min(parse):.2f}-{max(parse):.2f})"
    )
    median = statistics.median(with_all)
    print(
        f"every chart drawn / the same opened page without charts: median {median:.2f} "
        f"(range {min(with_all):.2f}-{max(with_all):.2f}) over {args.rounds} rounds; target <= {TARGET}  <- the figure the README quotes"
    )
    if bundles:
        print(
            f"every chart drawn, shipped bundle / {args.other_bundle.name} ({args.other_bundle.stat().st_size / 1e6:.2f} MB): median {statistics.median(bundles):.2f} "
            f"(range {min(bundles):.2f}-{max(bundles):.2f})"
        )
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    return 0 if median <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
