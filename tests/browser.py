"""Headless Chromium through playwright, for the real-browser checks."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Any


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageLog:
    """What a page did while loading: console errors, failed requests, dialogs, requests."""

    errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def open_page(browser: Any, url: str, wait_ms: int = 800) -> tuple[Any, PageLog]:
    page = browser.new_page()
    log = PageLog()
    page.on("console", lambda m: log.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log.errors.append(str(e)))
    page.on("requestfailed", lambda r: log.failed.append(r.url))
    page.on("request", lambda r: log.requests.append(r.url))
    page.on("dialog", lambda d: (log.dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_timeout(wait_ms)
    return page, log
