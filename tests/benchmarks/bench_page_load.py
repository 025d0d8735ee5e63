"""How long a run page takes to show in headless Chromium, with its charts against without them.

    python tests/benchmarks/bench_page_load.py [--rounds 7] [--log sample_runs/<run>/events.jsonl]

The charts are inline SVG in the page (no script draws them), so "without charts" is the same
report.html with every chart's <svg> and legend cut out, written beside it. Each round loads
four pages, interleaved (the order turns each round): with and without charts, each as it opens
(folded sections closed) and with every folded section opened as when printing (so the charts
folded away are laid out and painted too). A load is timed from navigation until the page has
loaded, laid out and painted twice (two animation frames).

The figure, with its goal: every chart shown / the same opened page without charts, median of
the per-round ratios (target <= 2), exit code 1 when above. Also printed: the same ratio for
the page as it opens, the page's size with and without its charts, and the report folder's.
Wall time in a browser on this machine: on a shared machine read the range before the median.
"""

from __future__ import annotations

import argparse
import os
import re
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
# What the charts add to a page: each chart's <svg> and the legend under it.
CHART_MARKUP = re.compile(r'<svg class="chart".*?</svg>\s*(?:<ul class="legend">.*?</ul>)?', re.DOTALL)
PAINTED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def without_charts(page: Path) -> tuple[Path, int]:
    """A copy of the page with every chart cut out, beside it (same assets); and how many were cut."""
    text, count = CHART_MARKUP.subn("", page.read_text(encoding="utf-8"))
    bare = page.with_name("report-without-charts.html")
    bare.write_text(text, encoding="utf-8")
    return bare, count


def shown_s(browser, url: str, opened: bool) -> float:  # type: ignore[no-untyped-def]
    """Seconds from navigation until the page is loaded, laid out and painted; ``opened``: with
    every folded section opened first, as when printing."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_load_state("load")
    if opened:
        page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    page.evaluate("document.body.offsetHeight")  # the layout, forced
    page.evaluate(PAINTED)
    elapsed = time.perf_counter() - start
    page.close()
    return elapsed


def _line(name: str, values: list[float], rounds: int) -> str:
    return f"{name}: median {statistics.median(values):.2f} (range {min(values):.2f}-{max(values):.2f}) over {rounds} rounds"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG)
    args = parser.parse_args()
    if args.log is None or not args.log.is_file():
        print("no log to render: pass --log", file=sys.stderr)
        return 2
    if chromium_path() is None:
        print("no Chromium found: install it (Debian: apt-get install chromium) or set CHROMIUM", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        out = Path(tmp)
        build_report(args.log, out)
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        page = out / "report.html"
        bare, count = without_charts(page)
        if count == 0:
            print(f"{args.log}: the report has no chart to measure", file=sys.stderr)
            return 2
        urls = {"charts": page.as_uri(), "bare": bare.as_uri()}
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for url in urls.values():
            shown_s(browser, url, opened=True)  # warm the browser's caches once
        kinds = [(which, opened) for opened in (False, True) for which in ("charts", "bare")]
        first, opened_all = [], []
        for i in range(args.rounds):
            took = {}
            for which, opened in kinds[i % len(kinds) :] + kinds[: i % len(kinds)]:
                took[(which, opened)] = shown_s(browser, urls[which], opened)
            first.append(took[("charts", False)] / took[("bare", False)])
            opened_all.append(took[("charts", True)] / took[("bare", True)])
            print(
                f"  round {i + 1}: "
                + ", ".join(
                    f"{which}{' opened' if opened else ''} {seconds:.3f} s" for (which, opened), seconds in took.items()
                ),
                flush=True,
            )
        browser.close()
        print(
            f"{count} charts; report.html {page.stat().st_size / 1e6:.2f} MB, without its charts "
            f"{bare.stat().st_size / 1e6:.2f} MB; report folder {size / 1e6:.2f} MB"
        )
    print(_line("page as it opens, with its charts / without", first, args.rounds))
    median = statistics.median(opened_all)
    print(
        _line(
            "every chart shown (folded sections opened) / the same opened page without charts", opened_all, args.rounds
        )
        + f"; target <= {TARGET}  <- the figure the README quotes"
    )
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    return 0 if median <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
