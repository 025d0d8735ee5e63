"""Hostile pages in headless Chromium: a report and a whole site built from a log and annotations
that try to load remote images, link out and put links in chart labels. Every request is
intercepted; none may leave the machine, no inline handler runs, nothing outside --out changes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.hostile import invoke, snapshot
from tests.test_hostile_markup import hostile_run

pytestmark = pytest.mark.browser


def _visit(browser: Any, page_path: Path) -> tuple[Any, list[str]]:
    """Open a page with every request routed through a guard: file:// goes on, anything else is
    recorded and aborted."""
    page = browser.new_page()
    off_machine: list[str] = []

    def guard(route: Any) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:
            off_machine.append(url)
            route.abort()

    page.route("**/*", guard)
    page.goto(page_path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    return page, off_machine


def _check_page(browser: Any, page_path: Path) -> None:
    page, off_machine = _visit(browser, page_path)
    # What a bypass would try: a remote image and an inline handler added to the page. The
    # Content-Security-Policy must stop both before any request is made.
    page.evaluate(
        """() => {
            const img = document.createElement('img');
            img.src = 'https://evil.example/injected.png';
            document.body.append(img);
            document.body.insertAdjacentHTML('beforeend', '<img src="missing.png" onerror="window.__handler_ran = 1">');
        }"""
    )
    page.wait_for_timeout(300)
    assert off_machine == [], f"{page_path}: requests left the machine: {off_machine}"
    assert page.evaluate("() => typeof window.__handler_ran") == "undefined", f"{page_path}: an inline handler ran"
    assert page.locator("svg a, svg script, svg foreignObject").count() == 0, f"{page_path}: live markup in a chart"
    page.close()


def test_report_with_hostile_annotations_requests_nothing_off_machine(tmp_path: Path, browser: Any) -> None:
    log = hostile_run(tmp_path / "area" / "run")
    before = snapshot(tmp_path / "area")
    assert invoke(["report", log, "--out", tmp_path / "out"]).code == 0
    assert snapshot(tmp_path / "area") == before
    page, _ = _visit(browser, tmp_path / "out" / "report.html")
    page.locator("#fig-error-allowance").scroll_into_view_if_needed()
    ticks = " ".join(page.locator("#fig-error-allowance text.tick").all_text_contents())
    assert '<a href="http' in ticks, "the case key is shown as the text it is (long labels are shortened)"
    explanation = page.locator(".explanation").first.inner_text()
    assert "image not shown: pixel, https://evil.example/pixel.png" in explanation
    page.close()
    _check_page(browser, tmp_path / "out" / "report.html")


def test_site_pages_request_nothing_off_machine_and_out_is_the_only_change(tmp_path: Path, browser: Any) -> None:
    area = tmp_path / "area"
    runs = area / "runs"
    hostile_run(runs / "hostile")
    for name in ("synthetic_complete", "synthetic_mismatch"):
        (runs / name).mkdir(parents=True)
        shutil.copy(FIXTURES / f"{name}.jsonl", runs / name / "events.jsonl")
    (runs / "site.toml").write_text(
        '[[compare]]\nbaseline = "synthetic-complete"\ncandidate = "synthetic-mismatch"\n', encoding="utf-8"
    )
    before = snapshot(area)
    out = invoke(["site", runs, "--out", area / "site"])
    assert out.code == 0, out.output
    after = snapshot(area)
    changed = {key for key in set(before) | set(after) if before.get(key) != after.get(key)}
    assert changed and all(key == "site" or key.startswith("site/") for key in changed), sorted(changed - {"site"})[:5]
    pages = sorted((area / "site").rglob("*.html"))
    assert len(pages) >= 6
    for page_path in pages:
        _check_page(browser, page_path)
