"""Long logs: the fast line check, compact cells, lazily built events, the capped page."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import to_builtins as to_plain  # a Struct as the dict the line held (UNSET fields left out)
from msgspec import DecodeError, ValidationError
from msgspec.json import encode

from reportgen.judge.disposition import Disposition, ScopeGroup, decide, scope_label
from reportgen.judge.judgement import judge
from reportgen.contract.events import CASE_KINDS, SCHEMA_MAJOR, SCHEMA_MINOR
from reportgen.render.report import build_report
from reportgen.model.runmodel import CELL_FACTS, CellRecord, build_run, read_run
from reportgen.contract import validation
from reportgen.contract.validation import _FAST_ERRORS, read_log
from reportgen.render.view import DETAIL_CAP, DETAIL_COLUMNS, build_view, detail_rows
from tests.conftest import FIXTURES
from tests.logbuilder import dumps, large_log
from tests.mutations import mutate

MIRRORED = validation._LINE  # the mirrors the reader uses (derived in contract/fast.py)
DEFINED = validation._EVENT  # a line as the definition's Struct (contract/events.py)
CELL_LINES = [
    line
    for path in sorted(FIXTURES.glob("*.jsonl"))
    for line in path.read_text(encoding="utf-8").splitlines()
    if json.loads(line).get("kind") in CASE_KINDS
]


def _plain(value: Any) -> Any:
    return to_plain(value) if isinstance(value, (list, tuple, set)) or hasattr(value, "__struct_fields__") else value


def test_fixtures_hold_every_per_cell_kind() -> None:
    assert {json.loads(line)["kind"] for line in CELL_LINES} == CASE_KINDS


@st.composite
def mutated_cell_lines(draw: st.DrawFn) -> str:
    """A per-cell line from the fixtures with one change somewhere in its nested fields."""
    return mutate(draw, json.loads(draw(st.sampled_from(CELL_LINES))), ("set", "alike", "drop", "extra"))


def _defined(line: str) -> Any:
    try:
        return DEFINED(line.encode("utf-8", "surrogatepass"))
    except (ValidationError, DecodeError, UnicodeDecodeError, RecursionError):
        return None


def _fast(line: str) -> Any:
    try:
        return MIRRORED(line.encode("utf-8", "surrogatepass"))
    except _FAST_ERRORS:
        return None


def _typed(value: Any) -> Any:
    """A value with the type of every part kept: 1 and 1.0 and True differ."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_cell_lines())
def test_mirrors_accept_exactly_what_the_definitions_accept(line: str) -> None:
    """The mirror derived from each Struct (contract/fast.py) accepts a line exactly when its
    definition does, with the same values: the mirror's fields, written out and read as the
    definition, are the definition's; it writes only the keys the line had."""
    fast, defined = _fast(line), _defined(line)
    assert (fast is None) == (defined is None), line
    if fast is not None:
        assert _typed(to_plain(DEFINED(encode(fast)))) == _typed(to_plain(defined)), line
        assert set(to_plain(fast)) == set(json.loads(line)), line


def test_unmutated_cell_lines_pass_both_ways() -> None:
    for line in CELL_LINES:
        assert set(to_plain(_fast(line))) == set(json.loads(line))
        assert _typed(to_plain(DEFINED(encode(_fast(line))))) == _typed(to_plain(_defined(line)))


def test_every_per_cell_kind_feeds_the_cell_facts() -> None:
    assert set(CELL_FACTS) == CASE_KINDS


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.jsonl")))
def test_reading_and_gathering_in_one_pass_equals_gathering_afterwards(name: str) -> None:
    reading, builder = read_run(FIXTURES / name)
    if not reading.valid:
        pytest.skip("an invalid log is never gathered")
    streamed = builder.build(reading)
    replayed = build_run(read_log(FIXTURES / name))
    assert detail_rows(streamed) == detail_rows(replayed)
    facts = [f for f in CellRecord.__dataclass_fields__ if f not in ("lines", "source")]
    for one, other in zip(streamed.cells, replayed.cells, strict=True):
        assert {f: _plain(getattr(one, f)) for f in facts} == {f: _plain(getattr(other, f)) for f in facts}, one.case
        assert [r.line for r in one.logged] == [r.line for r in other.logged]
    assert [c.warnings for c in streamed.cells] == [c.warnings for c in replayed.cells]
    assert _in_words(decide(streamed, {})) == _in_words(decide(replayed, {}))


def _in_words(disposition: Disposition) -> Disposition:
    """The disposition with its scope's cells as (shape, status): the two runs' cells are
    different records (their planned cells are a mirror Struct and a model)."""

    def words(groups: tuple[ScopeGroup, ...]) -> tuple[Any, ...]:
        return tuple((g.dtype, g.layout, g.mode, [(scope_label(c), c.case, c.status) for c in g.cells]) for g in groups)

    scope = replace(
        disposition.scope, passed=words(disposition.scope.passed), not_passed=words(disposition.scope.not_passed)
    )
    return replace(disposition, scope=scope)


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("large") / "events.jsonl"
    path.write_text(dumps(large_log(DETAIL_CAP * 4, mismatch_every=2)), encoding="utf-8")
    return path


def test_a_large_run_builds_only_the_events_it_shows(large: Path) -> None:
    reading, builder = read_run(large)
    run = builder.build(reading)
    build_view(run, judge(run))
    per_cell = [r for r in reading.records if r.kind in CASE_KINDS]
    built = [r for r in per_cell if r.parsed is not None]
    assert built, "the cells shown in full are built"
    assert len(built) < len(per_cell) / 2
    assert all(r.raw is None for r in built) and all(r.raw for r in per_cell if r.parsed is None)


def test_a_large_run_caps_the_page_and_puts_every_cell_in_details_csv(large: Path, tmp_path: Path) -> None:
    result = build_report(large, tmp_path)
    cells = DETAIL_CAP * 4
    mismatch = next(r for r in result.disposition.reasons if r.rule == "mismatch")
    assert len(mismatch.cases) == cells // 2
    with open(tmp_path / "details.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == DETAIL_COLUMNS and len(rows) == cells
    log = large.read_text(encoding="utf-8").splitlines()
    for row in rows:
        event = json.loads(log[int(row["log_line"]) - 1])
        assert (event["kind"], event["case"], event["status"]) == ("case_result", row["case"], row["status"])
        assert int(row["mismatched"]) == event["error_stats"]["mismatched"]
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert 'href="details.csv"' in html and "details.csv" in md
    assert f"{cells // 2} cell(s)" in html
    assert f"{cells // 2 - DETAIL_CAP} more: every cell is in" in html
    banner = html.split('class="banner banner-stopped"', 1)[1].split("</ul>", 1)[0]
    assert (
        banner.count("<li>") == DETAIL_CAP
        and "performance acceptance stopped" not in banner.lower().split("</strong>", 1)[1]
    )
    assert f"{len(rows) - DETAIL_CAP} more shape rows" in html
    assert "more (1200 in all; every cell is in details.csv)" in html
    assert len(html) < 1_000_000
    # The inputs table shows the first cells and counts every cell with a result.
    reading, builder = read_run(large)
    run = builder.build(reading)
    view = build_view(run, judge(run))
    # (cells fed the same are one row, which names them all)
    assert (sum(r.count for r in view.inputs), view.inputs_total) == (DETAIL_CAP, cells)
    # report.md fits a pull request (65,536 characters): shorter tables, each saying how many more
    # and linking details.csv.
    assert len(md) < 65_536
    shown = re.search(r"(\d+) more: every cell is in details.csv", md)
    assert shown is not None and int(shown.group(1)) >= cells - DETAIL_CAP
    assert (
        "more not shown in this file, which stays under a pull request's 65,536 characters: every cell is in [details.csv](details.csv)"
        in md
    )


def test_newer_minor_cell_lines_take_the_careful_path_and_still_feed_the_cells(tmp_path: Path) -> None:
    events = [
        json.loads(line) for line in (FIXTURES / "synthetic_fallback.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    for event in events:
        if event["kind"] in ("case_result", "operators"):
            event.update(schema_version=f"{SCHEMA_MAJOR}.{SCHEMA_MINOR + 1}", future_field=1)
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    reading, builder = read_run(path)
    assert reading.valid and any("future_field" in p.message for p in reading.problems)
    run = builder.build(reading)
    expected = build_run(read_log(FIXTURES / "synthetic_fallback.jsonl"))
    assert detail_rows(run) == detail_rows(expected)
    assert [c.fallback_items for c in run.cells] == [c.fallback_items for c in expected.cells]
    assert any(c.fallback_items for c in run.cells)


def _errored_log(cells: int, chars: int) -> list[dict[str, Any]]:
    """Every cell errored with a long message of its own and a long warning of its own."""
    events = large_log(cells)
    for index, event in enumerate(e for e in events if e["kind"] == "case_result"):
        event.update(
            status="error", failure={"phase": "run", "type": "RuntimeError", "message": f"cell {index}: " + "x" * chars}
        )
        event["warnings"] = [f"warning of cell {index}: " + "w" * chars]
        event.pop("error_stats", None)
        event.pop("task_metric", None)
    return events


def test_a_page_is_bounded_in_bytes_and_the_full_texts_are_in_details_csv(tmp_path: Path) -> None:
    """1,000 errored cells with 4 KB messages and 4 KB warnings: report.html under 1 MB, the
    Markdown summary under 60,000 characters, every full text in details.csv."""
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(_errored_log(1000, 4096)), encoding="utf-8")
    out = tmp_path / "out"
    build_report(log, out, formats=("html", "md", "md-summary"))
    html = (out / "report.html").read_bytes()
    md = (out / "report.md").read_bytes()
    assert len(html) < 1_000_000, len(html)
    assert len(md) < 1_000_000, len(md)
    assert len((out / "report-summary.md").read_text(encoding="utf-8")) < 60_000
    text = html.decode("utf-8")
    assert "cell 0: " + "x" * 400 in text and "x" * 4096 not in text, "the first problem is shown, its text cut"
    assert "characters in all; the full text is in details.csv" in text
    assert "more: every cell is in" in text, "the problems section stops at its budget and says where the rest is"
    with open(out / "details.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 1000
    for index, row in enumerate(rows):
        assert row["failure"] == f"run: RuntimeError: cell {index}: " + "x" * 4096
        assert row["warnings"] == f"warning of cell {index}: " + "w" * 4096


def test_a_short_failure_is_shown_whole(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(_errored_log(3, 40)), encoding="utf-8")
    build_report(log, tmp_path / "out")
    text = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "cell 2: " + "x" * 40 + "</code>" in text and "cut here" not in text


def test_every_record_of_a_long_log_points_at_its_own_line(large: Path) -> None:
    """Records of a local log keep their place, not their bytes: each still gives its line."""
    reading = read_log(large)
    lines = large.read_bytes().split(b"\n")
    assert reading.valid and len(reading.records) == len(lines) - 1
    for record in reading.records:
        raw = record.raw if record.parsed is None else None
        if raw is not None:
            assert raw == lines[record.line - 1]
            assert json.loads(raw)["kind"] == record.kind


def test_bad_lines_deep_in_a_long_log_are_located_as_in_a_short_one(large: Path, tmp_path: Path) -> None:
    lines = large.read_bytes().split(b"\n")
    assert len(lines) > 4000
    repeated = next(i for i, line in enumerate(lines) if i > 2500 and b'"status": "pass"' in line) + 1
    disordered, surrogate = 3500, len(lines) - 40
    lines[repeated - 1] = lines[repeated - 1].replace(b'"status": "pass"', b'"status": "mismatch", "status": "pass"', 1)
    previous = json.loads(lines[disordered - 2])["seq"]
    lines[disordered - 1] = lines[disordered - 1].replace(b'"seq": %d' % (previous + 1), b'"seq": %d' % previous, 1)
    lines[surrogate - 1] = lines[surrogate - 1].replace(b'"case": "', b'"case": "\\ud800', 1)
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines))
    reading = read_log(path)
    errors = [(p.line, p.message) for p in reading.errors]
    assert (
        repeated,
        "duplicate key 'status' in one JSON object: the line is ambiguous (a reader could take either value)",
    ) in errors, errors
    assert (disordered, f"duplicate seq {previous} (also on line {disordered - 1})") in errors, errors
    assert any(line == surrogate and "lone surrogate" in message for line, message in errors), errors
    assert {line for line, _ in errors} == {repeated, disordered, surrogate}, errors


def test_a_line_gives_one_record_however_it_is_reached(large: Path, tmp_path: Path) -> None:
    """EventLines: a cell, a lookup by line and the reading's own list hand out the same
    record; a refused line has none."""
    lines = large.read_bytes().split(b"\n")
    bad = 3000
    lines[bad - 1] = b"{not json"
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines))
    reading, builder = read_run(path)
    run = builder.build(reading)
    records = reading.records
    assert len(records) == len(lines) - 2 and [r.line for r in records] == [n for n in range(1, len(lines)) if n != bad]
    cell = run.cells[len(run.cells) // 2]
    assert cell.lines and [r.line for r in cell.logged] == cell.lines
    assert all(records.at(r.line) is r for r in cell.logged)
    assert all(any(r is listed for listed in records) for r in cell.logged[:1])
    assert json.loads(cell.logged[0].raw)["case"] == cell.case
    with pytest.raises(KeyError):
        records.at(bad)
    with pytest.raises(KeyError):
        records.at(len(lines) + 5)


@pytest.mark.parametrize(
    "log",
    [
        *sorted(FIXTURES.glob("*.jsonl")),
        *sorted(Path(__file__).resolve().parents[1].glob("sample_runs/*/events.jsonl")),
    ],
    ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.name,
)
def test_the_cells_with_a_kind_are_those_whose_own_events_include_it(log: Path) -> None:
    reading, builder = read_run(log)
    if not reading.valid:
        pytest.skip("an invalid log is never gathered")
    run = builder.build(reading)
    for kind in sorted(CASE_KINDS):
        assert run.cells_with(kind) == [c for c in run.cells if any(r.kind == kind for r in c.logged)], kind


def test_finding_the_one_profiled_cell_of_a_long_log_builds_no_other_cell_s_events(tmp_path: Path) -> None:
    """cells_with looks cases up in the records' kinds and cases: it builds no cell's events."""
    events = large_log(3000, mismatch_every=0)
    profile = next(
        json.loads(line)
        for line in (FIXTURES / "synthetic_complete.jsonl").read_text(encoding="utf-8").splitlines()
        if '"kind": "profile"' in line
    )
    end = events[-1]
    profiled = events[-2]["case"]
    events[-1:] = [
        {**profile, "case": profiled, "seq": end["seq"], "time": end["time"]},
        {**end, "seq": end["seq"] + 1},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(events), encoding="utf-8")
    reading, builder = read_run(path)
    assert reading.valid, reading.problems
    run = builder.build(reading)
    before = [r.line for r in reading.records if r.parsed is not None]
    assert [c.case for c in run.cells_with("profile")] == [profiled]
    assert [r.line for r in reading.records if r.parsed is not None] == before, "no event built"
    assert len(run.cells_with("profile")[0].profiles) == 1


def test_a_long_log_keeps_no_string_of_its_own_per_line(large: Path) -> None:
    """What reading keeps for every line is shared: a record's case is one string per planned
    case (not each line's decoded copy), and an untrained cell's parameter figures one shared
    empty mapping."""
    reading, builder = read_run(large)
    run = builder.build(reading)
    cases = [r.case for r in reading.records if r.case is not None]
    assert len(cases) > 4000 and len({id(case) for case in cases}) == len(set(cases)) == len(run.cells)
    assert len({id(c.params_off) for c in run.cells}) == 1 and not run.cells[0].params_off
