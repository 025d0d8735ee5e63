"""The site at scale: a rebuild with nothing changed reads no log and renders nothing (a stat
check), a changed log is never hidden by it, adding one run renders only what it touches, and
the no-op record in the output folder is untrusted input like the state file."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import jinja2
import pytest

from reportgen.publish import site as site_module
from reportgen.publish.site import STATE_NAME, build_site
from reportgen.publish.site_quick import QUICK_NAME
from tests.conftest import FIXTURES
from tests.hostile import invoke, snapshot

_WATCH: dict[str, list[Any]] = {}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    opened = _WATCH.get("opened")
    if opened is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # an audit hook cannot be removed; it records only inside _watching()


class _Watch:
    def __init__(self) -> None:
        self.opened: list[str] = []
        self.rendered: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture
def watching(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Watch]:
    """Every file opened (by any means) and every template rendered while the test runs."""
    watch = _Watch()
    real = jinja2.Template.render

    def render(self: jinja2.Template, *args: Any, **kwargs: Any) -> str:
        watch.rendered.append((self.name or "", dict(*args, **kwargs)))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(jinja2.Template, "render", render)
    _WATCH["opened"] = watch.opened
    try:
        yield watch
    finally:
        _WATCH.pop("opened", None)


def _backdate(root: Path, seconds: int = 120) -> None:
    """Logs written a while ago, as a collector's are by the time a site is built."""
    then = time.time_ns() - seconds * 1_000_000_000
    for path in [root, *root.rglob("*")]:
        os.utime(path, ns=(then, then), follow_symlinks=False)


def _runs(tmp_path: Path, names: list[str]) -> Path:
    runs = tmp_path / "runs"
    for name in names:
        (runs / name).mkdir(parents=True)
        shutil.copy(FIXTURES / f"{name}.jsonl", runs / name / "events.jsonl")
    _backdate(runs)
    return runs


def _record(site: Path) -> dict[str, Any]:
    return json.loads((site / QUICK_NAME).read_text(encoding="utf-8"))


def test_noop_rebuild_reads_no_log_and_renders_nothing(tmp_path: Path, watching: _Watch) -> None:
    runs = _runs(tmp_path, ["synthetic_complete", "synthetic_mismatch", "synthetic_fallback"])
    bad = runs / "broken" / "events.jsonl"
    bad.parent.mkdir()
    bad.write_text("not json\n", encoding="utf-8")
    _backdate(runs)
    site = tmp_path / "site"
    first = build_site([runs], site)
    assert first.runs == 3 and len(first.rejected) == 1
    assert _record(site)["signature"], "logs older than the clock's tick: the next build may skip"
    pages = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    watching.opened.clear()
    watching.rendered.clear()
    again = build_site([runs], site)
    assert watching.rendered == []
    assert [p for p in watching.opened if p.startswith(str(runs)) or "templates" in p] == [], (
        "no log, annotation or template read"
    )
    assert again.written == [] and again.runs == 3
    assert again.rejected == first.rejected, "the invalid log is still reported"
    assert {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()} == pages, "nothing touched"


def test_a_changed_log_is_never_hidden_by_its_stat(tmp_path: Path) -> None:
    runs = _runs(tmp_path, ["synthetic_complete", "synthetic_mismatch"])
    site = tmp_path / "site"
    build_site([runs], site)
    log = runs / "synthetic_mismatch" / "events.jsonl"
    before = log.stat()
    # Same size, same mtime: only ctime (which no program can set) tells the rewrite apart.
    data = log.read_bytes().replace(b'"synthetic-mismatch"', b'"synthetic-mismatcX"')
    assert len(data) == before.st_size
    log.write_bytes(data)
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    result = build_site([runs], site)
    assert "synthetic-mismatcX" in (site / "index.json").read_text(encoding="utf-8")
    assert any("synthetic-mismatcX" in p.read_text(encoding="utf-8") for p in (site / "runs").glob("*/index.html"))
    assert result.written


def test_annotations_added_beside_a_log_are_seen(tmp_path: Path) -> None:
    runs = _runs(tmp_path, ["synthetic_complete", "synthetic_mismatch"])
    site = tmp_path / "site"
    build_site([runs], site)
    notes = runs / "synthetic_mismatch" / "annotations.toml"
    notes.write_text(
        '[b2-l16-contiguous-float32-compiled]\nexplanation = "a known rounding difference"\nverdict = "accepted"\nreason = "owner reviewed"\n',
        encoding="utf-8",
    )
    result = build_site([runs], site)
    assert result.rejected == []
    assert any(p.parent.parent == site / "runs" and p.name == "index.html" for p in result.written), result.written


def test_a_site_built_inside_its_folder_of_runs_is_not_read_as_runs(tmp_path: Path) -> None:
    """--out inside the runs folder: the site's copies of the logs are never taken for runs, so
    each rebuild reads the originals (annotations added beside one are seen) and rejects nothing."""
    runs = _runs(tmp_path, ["synthetic_complete", "synthetic_mismatch"])
    site = runs / "site"
    for _ in range(2):
        result = build_site([runs], site)
        assert result.rejected == [] and result.skipped == [], result.rejected + result.skipped
    assert result.runs == 2
    (runs / "synthetic_mismatch" / "annotations.toml").write_text(
        '[b2-l16-contiguous-float32-compiled]\nexplanation = "a known rounding difference"\nverdict = "accepted"\nreason = "owner reviewed"\n',
        encoding="utf-8",
    )
    result = build_site([runs], site)
    assert result.rejected == [] and result.skipped == [] and result.runs == 2
    pages = [p for p in result.written if p.parent.parent == site / "runs" and p.name == "index.html"]
    assert any("a known rounding difference" in p.read_text(encoding="utf-8") for p in pages)


def test_recently_changed_logs_are_hashed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(tmp_path, ["synthetic_complete", "synthetic_mismatch"])
    fresh = runs / "synthetic_complete" / "events.jsonl"
    os.utime(fresh)  # changed just now: within one tick of a coarse clock
    site = tmp_path / "site"
    build_site([runs], site)
    record = _record(site)
    assert record["signature"] is None, "a build that saw a fresh file cannot be skipped next time"
    assert [path for path, *_ in record["logs"]] == [str((runs / "synthetic_mismatch" / "events.jsonl").resolve())]
    hashed: list[str] = []
    real = site_module.change_key
    monkeypatch.setattr(site_module, "change_key", lambda entry, *a: hashed.append(str(entry.path)) or real(entry, *a))
    build_site([runs], site)
    assert hashed == [str(fresh.resolve())], "only the log whose stat could not be trusted is read again"


def test_adding_one_run_renders_only_its_pages(
    tmp_path: Path, watching: _Watch, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs(tmp_path, ["synthetic_complete", "synthetic_float64", "synthetic_training"])
    site = tmp_path / "site"
    build_site([runs], site)
    build_site([runs], site)
    added = runs / "synthetic_mismatch"
    added.mkdir()
    shutil.copy(FIXTURES / "synthetic_mismatch.jsonl", added / "events.jsonl")
    hashed: list[str] = []
    real = site_module.change_key
    monkeypatch.setattr(site_module, "change_key", lambda entry, *a: hashed.append(str(entry.path)) or real(entry, *a))
    watching.rendered.clear()
    build_site([runs], site)
    assert hashed == [str((added / "events.jsonl").resolve())], "the other logs keep their recorded keys"
    names = [name for name, _ in watching.rendered]
    workloads = [context["workload"] for name, context in watching.rendered if name == "workload.html.j2"]
    assert names.count("site_index.html.j2") == 1
    assert workloads == [
        json.loads((FIXTURES / "synthetic_mismatch.jsonl").read_text(encoding="utf-8").splitlines()[0])["workload"]
    ]
    reports = [context["view"] for name, context in watching.rendered if name.startswith("report")]
    # The added run's page, and the pages of its neighbours on the same workload and target
    # (their previous/next links now name it): no other run's report.
    ids = {view.run_id for view in reports}
    assert "synthetic-mismatch" in ids, ids
    assert ids <= {"synthetic-mismatch", "synthetic-complete"}, ids
    others = {n for n in names if n not in ("site_index.html.j2", "workload.html.j2") and not n.startswith("report")}
    assert not others - {"_macros.html.j2", "base.html.j2"}, others


def test_a_deleted_page_is_written_again(tmp_path: Path) -> None:
    runs = _runs(tmp_path, ["synthetic_complete", "synthetic_mismatch"])
    site = tmp_path / "site"
    build_site([runs], site)
    page = next((site / "runs").glob("*/index.html"))
    page.unlink()
    result = build_site([runs], site)
    assert page in result.written and page.is_file()


def test_a_removed_workload_loses_its_page(tmp_path: Path) -> None:
    runs = _runs(tmp_path, ["synthetic_complete", "synthetic_float64"])
    site = tmp_path / "site"
    build_site([runs], site)
    assert len(list((site / "workloads").iterdir())) == 2
    shutil.rmtree(runs / "synthetic_float64")
    build_site([runs], site)
    assert len(list((site / "workloads").iterdir())) == 1


def _area(tmp_path: Path) -> tuple[Path, Path, Path]:
    runs = _runs(tmp_path / "area", ["synthetic_complete", "synthetic_mismatch"])
    victim = tmp_path / "area" / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious\n", encoding="utf-8")
    out = tmp_path / "area" / "site"
    assert invoke(["site", runs, "--out", out]).code == 0
    return runs, out, victim


def _edit(**changes: Any) -> Any:
    def build(out: Path) -> bytes:
        record = _record(out)
        record.update(changes)
        return json.dumps(record).encode()

    return build


RECORDS: list[tuple[str, Any, str]] = [
    ("not JSON", lambda out: b"{nope", "Invalid JSON"),
    ("page climbs out", _edit(pages=["../victim/keep.txt"]), "pages.0"),
    ("page is absolute", _edit(pages=["/etc/passwd"]), "pages.0"),
    ("terminal escape in a message", _edit(messages=["\x1b]0;owned\x07"]), "messages.0"),
    ("negative run count", _edit(runs=-1), "runs"),
    ("stat is text", _edit(watched=[["/", "x"]]), "watched.0"),
    ("unknown field", _edit(extra=1), "extra"),
    ("key is not a hash", _edit(logs=[["/x", "../..", [0, 0, 0, 0, 0], "/y", None]]), "logs.0.1"),
    ("stat holds a float", _edit(watched=[["/", [0, 0, 0, 0.5, 0]]]), "watched.0.1.3"),
    ("log row too short", _edit(logs=[["/x", ""]]), "logs.0"),
    ("not an object", lambda out: b"[1, 2]", "top level"),
    ("true for a count", _edit(runs=True), "runs"),
]


@pytest.mark.parametrize("name,plant,fragment", RECORDS, ids=[r[0] for r in RECORDS])
def test_planted_record_is_ignored_with_a_warning(tmp_path: Path, name: str, plant: Any, fragment: str) -> None:
    runs, out, victim = _area(tmp_path)
    (out / QUICK_NAME).write_bytes(plant(out))
    before = snapshot(victim), snapshot(runs)
    result = invoke(["site", runs, "--out", out])
    assert result.code == 0, result.output
    warning = result.line_with(f"warning: ignoring {out / QUICK_NAME}")
    assert fragment in warning and "\x1b" not in result.output
    assert (snapshot(victim), snapshot(runs)) == before
    assert _record(out)["signature"], "a good record is written again"
    assert invoke(["site", runs, "--out", out]).stderr.count("warning") == 0


def test_record_that_is_a_symlink_is_not_read(tmp_path: Path) -> None:
    runs, out, victim = _area(tmp_path)
    (out / QUICK_NAME).unlink()
    (out / QUICK_NAME).symlink_to(victim / "keep.txt")
    result = invoke(["site", runs, "--out", out])
    assert result.code == 0 and "a symlink" in result.line_with("warning: ignoring")
    assert (victim / "keep.txt").read_text(encoding="utf-8") == "precious\n"
    assert not (out / QUICK_NAME).is_symlink()


def test_planted_state_is_still_noticed_after_a_skippable_build(tmp_path: Path) -> None:
    runs, out, _ = _area(tmp_path)
    assert _record(out)["signature"]
    state = json.loads((out / STATE_NAME).read_text(encoding="utf-8"))
    next(iter(state["runs"].values()))["slug"] = "../../victim"
    (out / STATE_NAME).write_text(json.dumps(state), encoding="utf-8")
    result = invoke(["site", runs, "--out", out])
    assert "slug: String should match pattern" in result.line_with(f"warning: ignoring {out / STATE_NAME}")


# --- the index at 10,000 runs ------------------------------------------------------------------


def many_summaries(count: int) -> list[Any]:
    """``count`` summaries shaped like real ones (run ids as the collector makes them, a
    hundred workloads, three targets, headlines and scopes that vary), from one judged fixture."""
    import dataclasses

    from reportgen.publish.summary import slug, summarize
    from reportgen.render.report import judge_log

    base = summarize(judge_log(FIXTURES / "synthetic_mismatch.jsonl"))
    out = []
    for n in range(count):
        workload = f"workload-{n % 100:03d}"
        target = ("cpu", "cuda", "neuron")[n % 3]
        stamp = f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:{(n * 7) % 60:02d}.{n:06d}Z"
        run_id = f"{workload}-{target}-{stamp[:19].replace('-', '').replace(':', '')}Z-{n:06x}"
        mismatches = n % 5
        counts = {**base.counts, "pass": 12 - mismatches, "mismatch": mismatches}
        out.append(
            dataclasses.replace(
                base,
                run_id=run_id,
                slug=slug(run_id),
                workload=workload,
                workload_slug=slug(workload),
                target=target,
                family=target,
                started_at=stamp,
                counts=counts,
                outcome="blocked" if mismatches else "suitable",
                headline=f"Blocked: {mismatches} mismatches need the owner's verdict (on {target}; intended target not recorded)"
                if mismatches
                else base.headline,
                versions={"torch": f"2.{9 + n % 5}.0", "python": "3.12.3"},
                timing_undecided=3 if n % 11 == 3 else 0,  # a run whose timing decides nothing, now and then
                # A neuron run's adapter has met only a stand-in: its row says so (a quote in the
                # note, as a title attribute must escape it).
                adapter_note='the neuron adapter was exercised only against a "stand-in", never on Trainium'
                if target == "neuron"
                else "",
            )
        )
    return out


def _write_index(out: Path, summaries: list[Any]) -> Path:
    from reportgen.render.templating import write_assets

    site_module.write_index(summaries, out, write_assets(out), [])
    return out


def test_index_stays_under_a_megabyte_at_ten_thousand_runs(tmp_path: Path) -> None:
    out = _write_index(tmp_path / "site", many_summaries(10_000))
    index = (out / "index.html").read_bytes()
    rows = next(out.glob("index-rows-*.js"))
    assert len(index) < 1_000_000, len(index)
    assert len(rows.read_bytes()) < 1_000_000, "the row data the page's script reads stays under a megabyte too"
    runs_table = index[
        index.index(b'<table class="runs">') : index.index(b"</table>", index.index(b'<table class="runs">'))
    ]
    assert runs_table.count(b"<tr>") == 1 + site_module.FIRST_ROWS, "the header and the newest rows only"
    workloads_table = index[
        index.index(b'<table class="workloads">') : index.index(b"</table>", index.index(b'<table class="workloads">'))
    ]
    assert workloads_table.count(b"<tr>") <= 1 + site_module.FIRST_ROWS, "the header and at most FIRST_ROWS workloads"
    assert b"The newest 100 of 10000 runs" in index
    data = json.loads(rows.read_text(encoding="utf-8").split("=", 1)[1].rstrip().rstrip(";"))
    records = json.loads((out / "index.json").read_text(encoding="utf-8"))
    strings = data["strings"]
    ids = []
    for row in data["rows"]:
        prefix = {8: f"{strings[row[0]]}-{strings[row[6]]}-", 4: f"{strings[row[0]]}-"}
        ids.append(next((p for bit, p in prefix.items() if row[4] & bit), "") + row[2])
    assert ids == [r["run_id"] for r in records], "every run, newest first"


def test_annotations_beside_a_log_named_directly_are_seen(tmp_path: Path) -> None:
    runs = _runs(tmp_path, ["synthetic_mismatch"])
    log = runs / "synthetic_mismatch" / "events.jsonl"
    site = tmp_path / "site"
    build_site([log], site)
    assert _record(site)["signature"]
    (log.parent / "annotations.toml").write_text(
        '[b2-l16-contiguous-float32-compiled]\nexplanation = "known"\nverdict = "accepted"\nreason = "owner reviewed"\n',
        encoding="utf-8",
    )
    result = build_site([log], site)
    assert any(p.parent.parent == site / "runs" for p in result.written), "the run page is rendered again"


def test_a_long_run_s_summary_and_trend_rows_build_no_cell_event_and_cost_a_few_calls_a_cell(tmp_path: Path) -> None:
    """The site keeps every cell of every run in its summaries, its cell index and its trend
    charts: from the facts the reader kept, not from each cell's events made again (a pydantic
    model per timing and compile line), and the trend's warm quartiles for all series at once
    (pandas per series made a site of two 50,000-cell runs take two minutes)."""
    from reportgen.publish.frame import cell_rows, history_frame
    from reportgen.publish.summary import summarize
    from reportgen.render.report import judge_log
    from tests.logbuilder import dumps, large_log

    log = tmp_path / "events.jsonl"
    log.write_text(dumps(large_log(900, mismatch_every=3)), encoding="utf-8")
    judged = judge_log(log)
    records = judged.run.cells[0].source
    assert records is not None
    built = {r.line for r in records if r.parsed is not None}
    summary = summarize(judged)
    rows = cell_rows(judged)
    assert {r.line for r in records if r.parsed is not None} == built, "a cell's event was built again"
    timed = [c for c in judged.run.cells if c.warm_median_s is not None]
    assert len(timed) == 600 and all(summary.cells[c.case].warm_samples_s == list(c.warm_samples) for c in timed)
    assert all(r["warm_samples"] == len(c.warm_samples) for r, c in zip(rows, judged.run.cells) if c in timed)

    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        calls += event in ("call", "c_call")

    history_frame([summary])  # once first: pandas' own imports and caches are no cell's cost
    sys.setprofile(count)
    try:
        frame = history_frame([summary])
    finally:
        sys.setprofile(None)
    assert frame["warm_q1_s"].notna().sum() == 600
    # About 60 calls a cell (most of them classifying its warm series); a pandas Series and its
    # quantiles per series made about 1,000.
    assert calls < 200 * len(judged.run.cells), calls
