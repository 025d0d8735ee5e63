"""Run pages are no dead end: the log, the Markdown, the CSV and the traces are linked and honest."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

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
    files, _, _ = copy_run_files(judged, tmp_path / "small-cap", trace_cap=10)
    assert all(f.href == "" and "over the" in f.note for f in files if f.label.startswith("Trace"))
    trace = next((log.parent / "traces").iterdir())
    data = trace.read_bytes()
    trace.write_bytes(bytes([data[0] ^ 1]) + data[1:])  # the same size, other bytes
    files, _, _ = copy_run_files(judge_log(log), tmp_path / "tampered")
    assert any("no longer has the sha256" in f.note for f in files)
    assert not (tmp_path / "tampered" / "traces" / trace.name).exists()


def test_a_log_that_under_states_its_traces_sizes_copies_none_of_them(tmp_path: Path) -> None:
    """A review: the caps (200 MB a run, 2 GB a build) were held to the sizes the log claimed,
    so a log that said 1 byte for each 24 MB trace had all of them copied; only the 25 MB cap of
    one trace looked at the file. Each trace is now taken at its size on disk."""
    log = _copy_run(tmp_path)
    lines = []
    for line in log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["kind"] == "profile":
            for trace in event["traces"]:
                trace["bytes"] = 1
        lines.append(json.dumps(event))
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    files, written, traced = copy_run_files(judge_log(log), tmp_path / "page")
    notes = [f.note for f in files if f.label.startswith("Trace")]
    assert notes and all(note.startswith("not copied:") and "not the 1 the log recorded" in note for note in notes)
    assert traced == 0 and not (tmp_path / "page" / "traces").exists()
    assert [p.name for p in written] == ["events.jsonl"]


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
    files, written, _ = copy_run_files(judge_log(log), tmp_path / "page")
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


def _listed(log: Path, entries: list[dict[str, object]]) -> None:
    """The log's first profile event lists ``entries`` as its traces."""
    lines = []
    for line in log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["kind"] == "profile" and entries:
            event["traces"], entries = entries, []
        lines.append(json.dumps(event))
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_trace_a_browser_would_run_as_a_page_is_copied_under_an_inert_name(tmp_path: Path) -> None:
    """A review: a run folder's traces/evil.html, listed as a trace with its sha256, validated and
    was copied as it was into the site and linked from the run page: served from the site's own
    origin as text/html (a local server, or `reportgen publish` by its ending), its script ran
    outside the pages' content security policy. Its copy now ends in .bin; a JSON trace keeps its name."""
    log = _copy_run(tmp_path)
    page = b"<script>document.title='XSS'</script>"
    names = ("evil.html", "evil.svg", "b.JSON", "evil.html.gz", "c.json.gz", "host_1.17.pt.trace.json")
    for name in names:
        (log.parent / "traces" / name).write_bytes(page)
    digest = hashlib.sha256(page).hexdigest()
    _listed(
        log,
        [{"path": f"traces/{name}", "kind": "chrome_trace", "bytes": len(page), "sha256": digest} for name in names],
    )
    files, written, _ = copy_run_files(judge_log(log), tmp_path / "page")
    copied = sorted(p.name for p in written if p.parent.name == "traces")
    # Every ending counts (a second review: 'evil.html.gz' kept its name, typed text/html by its inner one).
    # A name with other inner endings (torch's own 'host_1.17.pt.trace.json') keeps it (a third review).
    assert copied == [
        "b.JSON",
        "c.json.gz",
        "evil.html.bin",
        "evil.html.gz.bin",
        "evil.svg.bin",
        "host_1.17.pt.trace.json",
    ], copied
    links = {f.href for f in files if f.label.startswith("Trace")}
    assert links == {f"traces/{name}" for name in copied}
    assert not list((tmp_path / "page" / "traces").glob("*.html"))
    from reportgen.storage.remote import content_type

    assert content_type("x.html.gz") == content_type("x.html.gz.bin") == "application/octet-stream"
    assert content_type("index.html") == "text/html; charset=utf-8" and content_type("a.json") == "application/json"


def test_a_file_listed_as_many_traces_is_copied_once_and_all_copies_are_capped(tmp_path: Path) -> None:
    """A review: a sparse 20 MB file (nothing on disk) listed 200 times made `reportgen site` write
    4 GB of dense copies in 51 s from a 31 KB archive (a cap per trace only). Each file is copied
    once, linked from every entry naming it, and a run's copies together stay within their cap."""
    log = _copy_run(tmp_path)
    sparse = log.parent / "traces" / "big.json"
    with open(sparse, "wb") as stream:
        stream.truncate(3_000_000)
    digest = hashlib.sha256(sparse.read_bytes()).hexdigest()
    entry = {"path": "traces/big.json", "kind": "chrome_trace", "bytes": 3_000_000, "sha256": digest}
    _listed(log, [dict(entry) for _ in range(50)])
    files, written, _ = copy_run_files(judge_log(log), tmp_path / "page")
    assert [p.name for p in written if p.parent.name == "traces"] == ["big.json"]
    traces = [f for f in files if f.label.startswith("Trace")]
    assert len(traces) == 50 and {f.href for f in traces} == {"traces/big.json"}
    # Other files past what a run may copy are named, not copied.
    others = []
    for n in range(4):
        path = log.parent / "traces" / f"other{n}.json"
        with open(path, "wb") as stream:
            stream.truncate(3_000_000 + n)
        others.append(
            {
                "path": f"traces/{path.name}",
                "kind": "chrome_trace",
                "bytes": 3_000_000 + n,
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            }
        )
    _listed(log, others)
    files, written, _ = copy_run_files(judge_log(log), tmp_path / "capped", run_cap=7_000_000)
    assert sorted(p.name for p in written if p.parent.name == "traces") == ["other0.json", "other1.json"]
    refused = [f for f in files if f.label.startswith("Trace") and not f.href]
    assert len(refused) == 2 and all("would take the traces copied over their cap" in f.note for f in refused)


def test_a_site_build_copies_traces_within_one_cap_for_all_its_runs(tmp_path: Path, monkeypatch: Any) -> None:
    """Each run's cap alone would let many runs of sparse traces fill a disk: a build's copies of
    all runs together stay within SITE_TRACES_CAP_BYTES, and a trace past it is named on its page."""
    import reportgen.publish.site as site

    traced = [p.parent for p in sorted((REPO / "sample_runs").glob("*/events.jsonl")) if (p.parent / "traces").is_dir()]
    for run in traced[:2]:
        shutil.copytree(run, tmp_path / "runs" / run.name)
    first = next((traced[0] / "traces").iterdir()).stat().st_size
    monkeypatch.setattr(site, "SITE_TRACES_CAP_BYTES", first + 1)
    build_site([tmp_path / "runs"], tmp_path / "site")
    copied = list((tmp_path / "site" / "runs").glob("*/traces/*"))
    assert len(copied) == 1, copied
    pages = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "site" / "runs").glob("*/index.html"))
    assert "would take the traces copied over their cap" in pages


def test_copying_again_into_the_same_page_writes_nothing_and_says_so(tmp_path: Path) -> None:
    """A review: a re-judged run's unchanged traces were counted among the files written ("9
    files written" where one file changed)."""
    log = _copy_run(tmp_path)
    files, written, traced = copy_run_files(judge_log(log), tmp_path / "page")
    assert any(p.parent.name == "traces" for p in written) and traced > 0
    again, rewritten, traced_again = copy_run_files(judge_log(log), tmp_path / "page")
    assert rewritten == [] and traced_again == traced and again == files


def test_a_second_entry_naming_a_copied_file_with_other_bytes_is_not_linked(tmp_path: Path) -> None:
    """A second review: an entry that named a file copied for an earlier entry was linked with
    the earlier entry's size and sha256, its own (1 byte, sha256 0...) never compared."""
    log = _copy_run(tmp_path)
    data = b'{"traceEvents": []}'
    (log.parent / "traces" / "a.json").write_bytes(data)
    right = {
        "path": "traces/a.json",
        "kind": "chrome_trace",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    _listed(log, [right, dict(right), dict(right, bytes=1, sha256="0" * 64)])
    files, _, _ = copy_run_files(judge_log(log), tmp_path / "page")
    traces = [f for f in files if f.label.startswith("Trace")]
    assert [bool(f.href) for f in traces] == [True, True, False]
    assert "this entry records 1 bytes, sha256 " + "0" * 64 in traces[2].note
