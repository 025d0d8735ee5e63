"""Screenshots of the pages a reader sees first, to look at them (not committed, not a test).

    python tests/screenshots.py [--out screenshots/]

Builds the site from sample_runs/ into a temporary folder and saves, at 1400 px and at 390 px
(a phone), in light and dark mode: the index, a blocked run (the first MiniLM run), a training
run, the tiny-encoder workload history and the cpu-against-cuda comparison. Needs Chromium (the
browser tests' CHROMIUM or a chromium on PATH).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reportgen.publish.site import build_site  # noqa: E402
from tests.browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

WIDTHS = (1400, 390)


def pages(site: Path) -> dict[str, Path]:
    return {
        "index": site / "index.html",
        "minilm-blocked-report": min(site.glob("runs/all-MiniLM*/index.html")),
        "training-report": max(site.glob("runs/tiny-classifier-training-*/index.html")),
        "tiny-encoder-history": next(site.glob("workloads/tiny-encoder-*/index.html")),
        "comparison": min(site.glob("comparisons/tiny-encoder-*/index.html")),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "screenshots")
    parser.add_argument("--full-page", action="store_true", help="capture the whole page, not the first screen")
    args = parser.parse_args()
    if chromium_path() is None:
        print("no Chromium found: install it (Debian: apt-get install chromium) or set CHROMIUM", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        site = Path(tmp) / "site"
        build_site([REPO / "sample_runs"], site)
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for scheme in ("light", "dark"):
            for width in WIDTHS:
                context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
                page = context.new_page()
                for name, path in pages(site).items():
                    page.goto(path.as_uri())
                    page.wait_for_load_state("load")
                    page.wait_for_timeout(600)
                    target = args.out / f"{name}-{width}-{scheme}.png"
                    page.screenshot(path=str(target), full_page=args.full_page)
                    print(target)
                context.close()
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
