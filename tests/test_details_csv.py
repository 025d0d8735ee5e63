"""details.csv: every cell's row (``detail_rows``) as csv_text writes it.

csv_text writes what csv.writer writes, except that a bare carriage return is quoted too and
text that starts like a spreadsheet formula takes a leading '; it is held to csv.writer, and
read back. A hostile case key, dtype, failure or warning cannot split a row or run as a formula.
"""

from __future__ import annotations

from collector.visible import visible

import msgspec

import csv
import json
import io
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reportgen.contract.events import PlannedCell
from reportgen.model.runmodel import RunModel, build_run
from reportgen.contract.validation import read_log
from reportgen.render.templating import FORMULA_START, csv_text
from reportgen.render.view import DETAIL_COLUMNS, detail_rows
from tests.logbuilder import dumps, large_log

# Text that csv.writer must quote (comma, quote, line breaks), and text it writes as it is.
AWKWARD = st.text(alphabet=st.sampled_from(list(',"\r\n\x00 ab1é€\t;|\u2028=+-@')), max_size=8)
NUMBER = st.one_of(
    st.none(),
    st.integers(-5, 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.integers(-(10**400), 10**400),
)


def _details_text(run: RunModel) -> str:
    return csv_text([DETAIL_COLUMNS, *detail_rows(run)])


_LOGS: dict[int, Path] = {}


def _run(tmp_path_factory: Any, cells: int) -> RunModel:
    """A run of ``cells`` cells, read and built anew on each call (the tests change its cells);
    its log is written once, not once per Hypothesis example."""
    path = _LOGS.get(cells)
    if path is None:
        path = tmp_path_factory.mktemp("csv") / "events.jsonl"
        path.write_text(dumps(large_log(cells, mismatch_every=2)), encoding="utf-8")
        _LOGS[cells] = path
    return build_run(read_log(path))


FIELD = st.one_of(st.none(), AWKWARD, st.integers(-(10**30), 10**30), st.floats(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.lists(FIELD, max_size=5), max_size=6))
def test_csv_text_writes_what_csv_writer_writes_and_reads_back_as_the_fields(rows: list[list[Any]]) -> None:
    """csv_text and csv.writer agree on every field but a bare carriage return (csv.writer
    before Python 3.11.9 leaves it unquoted, splitting the row), text that starts like a
    formula (marked with a leading ') and a float that is not finite (left empty, as the JSON
    exports write null); csv.reader gives every field back, marked."""
    text = csv_text(rows)
    plain = [
        row
        for row in rows
        if not any(
            (isinstance(v, str) and (visible(v) != v or v.startswith(FORMULA_START)))
            or (isinstance(v, float) and not math.isfinite(v))
            for v in row
        )
    ]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(plain)
    assert csv_text(plain) == buffer.getvalue()
    expected = [
        [
            ""
            if v is None or (isinstance(v, float) and not math.isfinite(v))
            else visible("'" + v if v.startswith(FORMULA_START) else v)
            if isinstance(v, str)
            else str(v)
            for v in row
        ]
        for row in rows
    ]
    assert list(csv.reader(io.StringIO(text, newline=""))) == expected


def test_a_hostile_case_failure_or_warning_cannot_split_a_row_or_run_as_a_formula(tmp_path_factory: Any) -> None:
    run = _run(tmp_path_factory, 8)
    cells = run.cells
    cells[0].planned = msgspec.convert(
        {
            "case": '=HYPERLINK("http://x")',
            "batch": 1,
            "length": 1,
            "layout": "contiguous",
            "dtype": "float32",
            "mode": "eager",
        },
        PlannedCell,
    )
    cells[0].case = cells[0].planned.case
    cells[1].failure_text = "run: Error: a\rb"
    cells[2].warnings = ("@SUM(1)", "-2+3")
    cells[3].planned = msgspec.convert(
        {"case": "b1-x", "batch": 1, "length": 1, "layout": "contiguous", "dtype": "+float", "mode": "eager"},
        PlannedCell,
    )
    rows = list(csv.reader(io.StringIO(_details_text(run), newline="")))
    assert len(rows) == len(cells) + 1 and all(len(row) == len(DETAIL_COLUMNS) for row in rows)
    failure, warnings = DETAIL_COLUMNS.index("failure"), DETAIL_COLUMNS.index("warnings")
    assert rows[1][0] == '\'=HYPERLINK("http://x")' and rows[2][failure] == "run: Error: a<U+000D>b"
    assert rows[3][warnings] == "@SUM(1)\n-2+3".replace("@", "'@", 1) and rows[4][4] == "'+float"


@pytest.mark.parametrize(
    ("field", "value"), [("case", "=1+2"), ("case", "-b1"), ("case", "@x"), ("dtype", "+float32"), ("dtype", "=bf16")]
)
def test_a_plain_row_whose_key_or_dtype_starts_like_a_formula_is_marked(
    tmp_path_factory: Any, field: str, value: str
) -> None:
    """A case key or dtype that needs no quoting but starts like a formula is marked."""
    run = _run(tmp_path_factory, 20)
    cell = run.cells[3]
    p = cell.planned
    values = {
        "case": p.case,
        "batch": p.batch,
        "length": p.length,
        "layout": p.layout,
        "dtype": p.dtype,
        "mode": p.mode,
        field: value,
    }
    cell.planned = msgspec.convert(values, PlannedCell)
    cell.case = cell.planned.case
    row = list(csv.reader(io.StringIO(_details_text(run), newline="")))[4]
    assert row[0 if field == "case" else 4] == "'" + value


def test_each_timing_stands_beside_its_scope_cache_condition_and_stability(tmp_path: Path) -> None:
    """Before: details.csv gave a cell's cold_s without the cache condition it was measured in,
    and its warm_median_s without a word that the series was unstable (or too short to
    classify), so a spreadsheet read a median that decides nothing as any other."""
    import csv

    from click.testing import CliRunner

    from reportgen.cli import main
    from tests.logbuilder import _warm, timing_log

    def rows_of(name: str, events: list[dict[str, object]]) -> dict[str, dict[str, str]]:
        log = tmp_path / name / "events.jsonl"
        log.parent.mkdir()
        log.write_text(dumps(events), encoding="utf-8")
        result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / name / "out")])
        assert result.exit_code == 0, result.output
        with (tmp_path / name / "out" / "details.csv").open(encoding="utf-8", newline="") as stream:
            return {row["case"]: row for row in csv.DictReader(stream)}

    events = timing_log("synthetic-details-stability")
    timings = [e for e in events if e["kind"] == "timing" and e.get("warm")]
    bimodal = timings[0]
    bimodal["warm"] = _warm([s * (2 if i % 2 else 1) for i, s in enumerate(bimodal["warm"]["samples_s"])])
    rows = rows_of("run", events)
    assert rows[bimodal["case"]]["warm_stability"] == "unstable"
    assert {rows[t["case"]]["warm_stability"] for t in timings[1:]} == {"stable"}
    # A run that planned 3 warm repetitions: every series too short to classify.
    short = rows_of("short", timing_log("synthetic-details-short", samples=3))
    assert {row["warm_stability"] for row in short.values() if row["warm_median_s"]} == {"unclassified"}
    for t in timings:
        assert rows[t["case"]]["cold_cache_condition"] == t["cold"]["cache_condition"]


def test_every_row_says_whether_the_runs_performance_acceptance_is_stopped(tmp_path: Path) -> None:
    """Before: a run whose mismatching cells have no verdict (its performance acceptance stopped,
    so none of its timings is a performance result) wrote its passing cells' warm medians as
    'stable' with nothing beside them: a script reading details.csv took them as results. The
    last column says so on every row; a verdict for the mismatch lifts it."""
    from reportgen.render.report import build_report, judge_log
    from tests.logbuilder import mismatch_log

    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(mismatch_log()), encoding="utf-8")
    failed = [c.case for c in judge_log(log).run.cells if c.status == "mismatch"]
    assert judge_log(log).disposition.performance_stopped == tuple(failed) and failed
    verdict = tmp_path / "annotations.toml"
    verdict.write_text(
        f'[{failed[0]}]\nexplanation = "Reduction order."\nverdict = "accepted"\nreason = "owner reviewed"\n',
        encoding="utf-8",
    )
    read: dict[str, dict[str, dict[str, str]]] = {}
    for name, notes in (("stopped", None), ("explained", verdict)):
        build_report(log, tmp_path / name, annotations=notes)
        with (tmp_path / name / "details.csv").open(encoding="utf-8", newline="") as stream:
            reader = csv.DictReader(stream)
            assert reader.fieldnames is not None and reader.fieldnames[-1] == "performance_stopped"
            read[name] = {row["case"]: row for row in reader}
    stopped, explained = read["stopped"], read["explained"]
    assert {row["warm_stability"] for row in stopped.values() if row["warm_median_s"]} == {"stable"}
    assert {row["performance_stopped"] for row in stopped.values()} == {"True"}
    assert {row["performance_stopped"] for row in explained.values()} == {"False"}
    assert [{k: v for k, v in row.items() if k != "performance_stopped"} for row in stopped.values()] == [
        {k: v for k, v in row.items() if k != "performance_stopped"} for row in explained.values()
    ]


def test_an_errored_cell_without_a_verdict_stops_performance_acceptance_as_its_reason_says(tmp_path: Path) -> None:
    """A review: the blocking reason read '2 errored cell(s) not explained; performance acceptance
    is stopped until they are', while details.csv said False on every row, section 7 had no stop,
    the scope called the run's timing stable, and diff compared its timings. An error is a result
    not compared (a wrong output shape among them): it stops performance as a mismatch does."""
    from click.testing import CliRunner

    from reportgen.cli import main
    from reportgen.render.report import build_report, judge_log
    from tests.logbuilder import compile_failure_log

    logs = []
    for run_id in ("errored-before", "errored-after"):
        events = compile_failure_log()
        for event in events:
            if event["kind"] == "run_start":
                event["run_id"] = run_id
        logs.append(tmp_path / run_id / "events.jsonl")
        logs[-1].parent.mkdir()
        logs[-1].write_text(dumps(events), encoding="utf-8")
    judged = judge_log(logs[0])
    errored = [c.case for c in judged.run.cells if c.status == "error"]
    assert errored and judged.disposition.performance_stopped == tuple(errored)
    build_report(logs[0], tmp_path / "out")
    with (tmp_path / "out" / "details.csv").open(encoding="utf-8", newline="") as stream:
        assert {row["performance_stopped"] for row in csv.DictReader(stream)} == {"True"}
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "**Performance acceptance stopped** until these errored cells have a verdict" in md
    assert "| performance | stopped: 2 errored cell(s) have no verdict" in md
    assert "is stable by the collector's rules" not in md
    assert "2 errored cell(s) not explained; performance acceptance is stopped until they have a verdict." in md
    # The history row of a site says the stop in the same words (it read "2 mismatching cell(s)").
    from reportgen.publish.site import build_site

    build_site([logs[0].parent], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert "performance acceptance stopped: 2 mismatching or errored cell(s) awaiting a verdict" in page
    diff = CliRunner().invoke(main, ["diff", str(logs[0]), str(logs[1])])
    assert "timing not compared: performance acceptance is stopped on the before and after" in diff.output, diff.output
    # A verdict lifts the stop, as it does a mismatch's.
    notes = tmp_path / "annotations.toml"
    notes.write_text(
        "".join(
            f'[{case}]\nexplanation = "No such op."\nverdict = "change-needed"\nchange = "operator"\nreason = "owner"\n'
            for case in errored
        ),
        encoding="utf-8",
    )
    assert judge_log(logs[0], annotations=notes).disposition.performance_stopped == ()


def test_an_untested_cells_timings_are_no_row_figures_as_the_page_and_the_index_give_none(tmp_path: Path) -> None:
    """A review: details.csv gave warm and cold timings (and a blank stability word) to cells the
    page calls untested (their layout not measured, in a CUDA sample run), load_cells gave them
    with a stability word, and index.parquet left them empty: a reader filtering on
    warm_median_s got timings of cells the report leaves out. A passing cell's timings only."""
    import pandas as pd
    from click.testing import CliRunner

    from reportgen.cli import main
    from reportgen.publish.frame import load_cells
    from reportgen.publish.site import build_site
    from tests.conftest import REPO

    run = REPO / "sample_runs" / "tiny-encoder-cuda-20261129T225259Z-866a85"
    case = "b1-l16-noncontiguous-float32-eager"
    assert '"case": "' + case + '"' in (run / "events.jsonl").read_text(encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(run), "--out", str(tmp_path / "out"), "--format", "md"])
    assert result.exit_code == 0, result.output
    with (tmp_path / "out" / "details.csv").open(encoding="utf-8", newline="") as stream:
        rows = {r["case"]: r for r in csv.DictReader(stream)}
    untested = [r for r in rows.values() if r["status"] == "untested"]
    assert rows[case]["status"] == "untested" and len(untested) == 7
    assert all(not r["warm_median_s"] and not r["cold_s"] and not r["warm_stability"] for r in untested)
    passing = [r for r in rows.values() if r["status"] == "pass"]
    assert passing and all(r["warm_median_s"] and r["warm_stability"] for r in passing)
    cells = load_cells(run / "events.jsonl").set_index("case")
    assert cells.loc[case, ["warm_median_s", "cold_s", "warm_stability"]].isna().all()
    build_site([run], tmp_path / "site")
    index = pd.read_parquet(tmp_path / "site" / "index.parquet").set_index("cell")
    assert index.loc[case, ["warm_median_s", "cold_s"]].isna().all()
    # compare-details.csv too (a second review: its candidate columns still carried them).
    cpu = REPO / "sample_runs" / "tiny-encoder-cpu-20261129T225221Z-23a8e6"
    result = CliRunner().invoke(main, ["compare", str(cpu), str(run), "--out", str(tmp_path / "cmp"), "--format", "md"])
    assert result.exit_code == 0, result.output
    with (tmp_path / "cmp" / "compare-details.csv").open(encoding="utf-8", newline="") as stream:
        compared = [r for r in csv.DictReader(stream) if r["candidate_status"] == "untested"]
    assert len(compared) == 7
    columns = ("candidate_warm_median_s", "candidate_cold_s", "candidate_compile_s")
    assert all(not r[c] for r in compared for c in columns), compared[0]
    # And compare.json (a third review: it still gave them).
    result = CliRunner().invoke(main, ["compare", str(cpu), str(run), "--out", str(tmp_path / "j"), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "j" / "compare.json").read_text(encoding="utf-8"))
    sides = [c["candidate"] for c in data["cells"] if c["candidate"]["status"] == "untested"]
    assert len(sides) == 7 and all(s[f] is None for s in sides for f in ("warm_median_s", "cold_s", "compile_s"))
