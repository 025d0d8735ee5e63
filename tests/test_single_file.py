"""`reportgen report --single-file`: one HTML file with its assets inside, nothing local to fetch."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from click.testing import CliRunner

from reportgen.cli import main
from tests.logbuilder import dumps, mismatch_log

LOCAL_REF = re.compile(r"""\b(?:src|href)\s*=\s*["']?(?!#|https?:|mailto:|data:)([^"'\s>]+)""", re.IGNORECASE)


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(dumps(mismatch_log()), encoding="utf-8")
    return log


def test_single_file_report_has_no_local_asset_and_writes_one_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", str(_log(tmp_path)), "--out", str(out), "--single-file"])
    assert result.exit_code == 0, result.output
    assert [p.name for p in out.iterdir()] == ["report.html"], "one file, no assets/ folder beside it"
    page = (out / "report.html").read_text(encoding="utf-8")
    refs = LOCAL_REF.findall(page)
    assert not [r for r in refs if r.startswith(("assets/", "../")) or r.endswith((".css", ".js"))], refs
    assert '<link rel="stylesheet"' not in page and "<style>" in page
    # The charts are inline SVG, drawn with no script; the one script (opening folded sections
    # before printing) is allowed by its hash and nothing else (no 'self', no 'unsafe-inline').
    assert '<svg class="chart" id="fig-error-allowance"' in page
    scripts = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    assert len(scripts) == 1 and len(re.findall(r"<script", page)) == 1 and "beforeprint" in scripts[0]
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    script_src = next(part for part in policy.split(";") if part.strip().startswith("script-src"))
    assert "'self'" not in script_src and "unsafe-inline" not in script_src
    for text in scripts:
        digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
        assert f"'sha256-{digest}'" in script_src


def test_the_full_table_travels_inside_the_page(tmp_path: Path) -> None:
    out, log = tmp_path / "out", _log(tmp_path)
    assert CliRunner().invoke(main, ["report", str(log), "--out", str(out), "--single-file"]).exit_code == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert 'href="details.csv"' not in page
    links = re.findall(r'href="data:text/csv;charset=utf-8;base64,([A-Za-z0-9+/=]+)" download="details.csv"', page)
    assert links, "the details link downloads the table from the page itself"
    reference = tmp_path / "ref"
    assert CliRunner().invoke(main, ["report", str(log), "--out", str(reference)]).exit_code == 0
    assert base64.b64decode(links[0]) == (reference / "details.csv").read_bytes()


def test_single_file_refuses_a_format_list(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["report", str(_log(tmp_path)), "--out", str(out), "--single-file", "--format", "md"]
    )
    assert result.exit_code == 2 and "leave out --format" in result.output
    assert not out.exists()


def test_the_ordinary_report_still_links_its_assets(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["report", str(_log(tmp_path)), "--out", str(out)]).exit_code == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert re.search(r'<link rel="stylesheet" href="assets/report-[0-9a-f]{10}\.css">', page) and "<style>" not in page


@pytest.mark.browser
def test_single_file_draws_its_charts_with_nothing_fetched(tmp_path: Path, browser: Any) -> None:
    from tests.browser import open_page

    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["report", str(_log(tmp_path)), "--out", str(out), "--single-file"]).exit_code == 0
    page, log = open_page(browser, (out / "report.html").as_uri())
    assert log.errors == [] and log.failed == [], (
        log.errors,
        log.failed,
    )  # a script the policy refused would log an error
    assert log.requests == [(out / "report.html").as_uri()], "nothing but the page itself"
    chart = page.locator("#fig-error-allowance")
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 100, box
    assert page.locator("#fig-error-allowance rect.bar").count() > 0
    page.close()
