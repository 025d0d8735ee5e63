"""Run pages are no dead end: the log, the Markdown, the CSV and the traces are linked and honest."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from reportgen.publish.files import copy_run_files
from reportgen.publish.site import build_site
from reportgen.render.report import judge_log
from tests.conftest import REPO

TRACED = next(p for p in sorted((REPO / "sample_runs").glob("*/events.jsonl")) if (p.parent / "traces").is_dir())


def _copy_run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / TRACED.parent.name
    shutil.copytree(TRACED.parent, run)
    return run / "events.jsonl"


def test_site_run_page_links_its_files_and_they_exist(tmp_path: Path) -> None:
    log = _copy_run(tmp_path)
    build_site([tmp_path / "runs"], tmp_path / "site")
    page_dir = next((tmp_path / "site" / "runs").iterdir())
    html = (page_dir / "index.html").read_text(encoding="utf-8")
    for name in ("report.md", "events.jsonl", "details.csv"):
        assert f'href="{name}"' in html and (page_dir / name).is_file()
    assert (page_dir / "events.jsonl").read_bytes() == log.read_bytes()
    traces = sorted((page_dir / "traces").iterdir())
    assert traces and all(f'href="traces/{t.name}"' in html for t in traces)
    logged = {
        t["sha256"]
        for line in log.read_text(encoding="utf-8").splitlines()
        if (e := json.loads(line))["kind"] == "profile"
        for t in e["traces"]
    }
    assert {hashlib.sha256(t.read_bytes()).hexdigest() for t in traces} <= logged


def test_traces_not_copied_say_why(tmp_path: Path) -> None:
    log = _copy_run(tmp_path)
    judged = judge_log(log)
    files, _ = copy_run_files(judged, tmp_path / "small-cap", trace_cap=10)
    assert all(f.href == "" and "over the" in f.note for f in files if f.label.startswith("Trace"))
    trace = next((log.parent / "traces").iterdir())
    trace.write_bytes(trace.read_bytes() + b" ")
    files, _ = copy_run_files(judge_log(log), tmp_path / "tampered")
    assert any("no longer has the sha256" in f.note for f in files)
    assert not (tmp_path / "tampered" / "traces" / trace.name).exists()


def test_a_trace_path_outside_the_run_is_never_read(tmp_path: Path) -> None:
    log = _copy_run(tmp_path)
    secret = tmp_path / "secret.json"
    secret.write_text("{}", encoding="utf-8")
    digest = hashlib.sha256(secret.read_bytes()).hexdigest()
    lines = []
    for line in log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["kind"] == "profile":
            event["traces"][0].update(path="../../secret.json", bytes=2, sha256=digest)
        lines.append(json.dumps(event))
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    files, written = copy_run_files(judge_log(log), tmp_path / "page")
    assert any("not a regular file inside the run folder" in f.note for f in files)
    assert all("secret" not in str(p) for p in written)


def test_cell_anchors_are_readable_case_keys_when_safe() -> None:
    from reportgen.render.view import anchor

    assert anchor("b4-l512-contiguous-float32-compiled") == "b4-l512-contiguous-float32-compiled"
    for hostile in (
        '"><script>x</script>',
        "b1 l2",
        "../b1",
        "matrix",
        "fig-1",
        "b1-l2/../../x",
        "é1",
        "b1-l2\n",
        "b1-l2\r",
        "b1-l2\n\n",
        "b1-\u212a",
    ):
        assert anchor(hostile).startswith("case-") and len(anchor(hostile)) == 17


def test_a_report_links_cells_by_their_case_key(tmp_path: Path) -> None:
    from reportgen.render.report import build_report
    from tests.conftest import FIXTURES

    build_report(FIXTURES / "synthetic_mismatch.jsonl", tmp_path)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    judged = judge_log(FIXTURES / "synthetic_mismatch.jsonl")
    failed = next(c.case for c in judged.run.cells if c.status == "mismatch")
    assert f'id="{failed}"' in html and f'href="#{failed}"' in html


def test_a_report_says_its_traces_are_as_logged_and_not_checked(tmp_path: Path) -> None:
    """Before: `reportgen report` listed a trace whose file was deleted or replaced with its
    logged path and sha256 and no word that nothing had checked it; the site checks them."""
    from reportgen.render.report import build_report

    log = _copy_run(tmp_path)
    shutil.rmtree(log.parent / "traces")
    build_report(log, tmp_path / "report")
    for name in ("report.md", "report.html"):
        text = (tmp_path / "report" / name).read_text(encoding="utf-8")
        assert "Traces as the log lists them" in text and "not checked against the run folder here" in text
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "runs").iterdir()) / "index.html"
    html = page.read_text(encoding="utf-8")
    assert "Traces as the log lists them" in html and "not checked against the run folder here" not in html
    assert "not copied" in html, "the site's files table says why the missing traces are not there"
