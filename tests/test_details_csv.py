"""details.csv: every cell's row, written exactly as csv_text writes ``detail_rows``.

csv_text writes what csv.writer writes, except that a bare carriage return is quoted too and
text that starts like a spreadsheet formula takes a leading '. The report writes plain rows by
joining their fields (twice as fast); these tests hold it to csv_text's bytes for free text
that needs quoting or marking, wherever it sits in a row, and for numbers of every size and
type (NaN, Inf, bools and huge integers); csv_text is held to csv.writer, and read back.
"""

from __future__ import annotations

import msgspec

import csv
import io
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.contract.events import PlannedCell
from reportgen.model.runmodel import RunModel, build_run
from reportgen.contract.validation import read_log
from reportgen.render import report
from reportgen.render.report import _details_bytes
from reportgen.render.templating import FORMULA_START, csv_text
from reportgen.render.view import DETAIL_COLUMNS, detail_rows
from tests.conftest import FIXTURES
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


def _reference(run: RunModel) -> str:
    return csv_text([DETAIL_COLUMNS, *detail_rows(run)])


def _details_text(run: RunModel) -> str:
    return _details_bytes(run).decode("utf-8")


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


def test_every_fixture_writes_what_csv_writer_writes() -> None:
    for path in sorted(FIXTURES.glob("*.jsonl")):
        reading = read_log(path)
        if reading.valid:
            run = build_run(reading)
            assert _details_text(run) == _reference(run), path.name


CELL = st.fixed_dictionaries(
    {
        "case": st.one_of(st.none(), AWKWARD),
        "dtype": st.one_of(st.none(), AWKWARD),
        "failure": st.one_of(st.none(), AWKWARD),
        "warnings": st.lists(AWKWARD, max_size=2),
        "figures": st.tuples(NUMBER, NUMBER, NUMBER, NUMBER, NUMBER, NUMBER),
    }
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(CELL, min_size=1, max_size=6))
def test_awkward_text_and_missing_figures_are_written_as_csv_writer_writes_them(
    tmp_path_factory: Any, changes: list[dict[str, Any]]
) -> None:
    run = _run(tmp_path_factory, 8)
    for index, (cell, change) in enumerate(zip(run.cells, changes)):
        planned = msgspec.convert(
            {
                "case": change["case"] if change["case"] is not None else cell.planned.case + f"-{index}",
                "batch": cell.planned.batch,
                "length": cell.planned.length,
                "layout": cell.planned.layout,
                "dtype": change["dtype"] if change["dtype"] is not None else cell.planned.dtype,
                "mode": cell.planned.mode,
            },
            PlannedCell,
        )
        cell.planned, cell.case = planned, planned.case
        cell.failure_text, cell.warnings = change["failure"], tuple(change["warnings"])
        cell.mismatched, cell.total, cell.max_abs, cell.cold_s, cell.warm_median_s, cell.result_line = change["figures"]
    assert _details_text(run) == _reference(run)


# Where msgspec's notation and repr's part: the decimal/exponent boundaries at 1e-5, 1e-4 and
# 1e16, one- to three-digit exponents, subnormals, the largest float, signed zeros.
EDGES = (
    0.0,
    -0.0,
    1.0,
    0.1,
    0.5,
    1e-4,
    9.999999999999999e-05,
    0.00010000000000000002,
    1e-5,
    1.0000000000000001e-05,
    9.99999999999999e-06,
    1e-6,
    1e-7,
    1e-9,
    1e-10,
    1e-99,
    1e-100,
    5e-324,
    2.2250738585072014e-308,
    9999999999999998.0,
    1e16,
    1.0000000000000002e16,
    1e22,
    1e23,
    1e99,
    1e100,
    1.7976931348623157e308,
    123456789.0,
)


def _floats(count: int, seed: int) -> list[float]:
    """Any finite float: random bit patterns, and short decimals at every exponent."""
    rng = random.Random(seed)
    bits = struct.unpack(f"{count}d", struct.pack(f"{count}Q", *(rng.getrandbits(64) for _ in range(count))))
    short = [float(f"{rng.randint(1, 99999)}e{rng.randint(-330, 310)}") for _ in range(count)]
    return [x for x in (*bits, *short, *EDGES, *(-x for x in EDGES)) if x - x == 0]


def test_a_chunk_with_nan_a_bool_or_a_huge_integer_is_written_as_csv_writer_writes_it(tmp_path_factory: Any) -> None:
    run = _run(tmp_path_factory, 3 * report._CHUNK + 5)
    floats = _floats(len(run.cells), seed=3)
    for cell, a in zip(run.cells, floats):
        cell.max_abs, cell.cold_s, cell.warm_median_s = a, abs(a), a / 3
    run.cells[report._CHUNK + 1].max_abs = float("nan")
    run.cells[2 * report._CHUNK + 2].mismatched = True
    run.cells[3 * report._CHUNK + 3].total = 10**400
    assert _details_text(run) == _reference(run)


def test_free_text_or_a_key_that_needs_quoting_in_a_later_chunk_is_written_as_csv_writer_writes_it(
    tmp_path_factory: Any,
) -> None:
    """The table is made a chunk at a time: a failure text in a later chunk takes csv.writer for
    its row, and a case key that needs quoting there sends the whole table through it."""
    run = _run(tmp_path_factory, 3 * report._CHUNK + 7)
    run.cells[report._CHUNK + 3].failure_text = 'run: RuntimeError: "bad", then\nmore'
    run.cells[2 * report._CHUNK + 1].warnings = ("a, b",)
    assert _details_text(run) == _reference(run)
    quoted = run.cells[3 * report._CHUNK + 2]
    planned = quoted.planned
    quoted.planned = msgspec.convert(
        {
            "case": "a,b",
            "batch": planned.batch,
            "length": planned.length,
            "layout": planned.layout,
            "dtype": planned.dtype,
            "mode": planned.mode,
        },
        PlannedCell,
    )
    assert _details_text(run) == _reference(run)
    assert report._details_bytes(run) == _reference(run).encode("utf-8")


FIELD = st.one_of(st.none(), AWKWARD, st.integers(-(10**30), 10**30), st.floats(allow_nan=False), st.booleans())


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.lists(FIELD, max_size=5), max_size=6))
def test_csv_text_writes_what_csv_writer_writes_and_reads_back_as_the_fields(rows: list[list[Any]]) -> None:
    """csv_text and csv.writer agree on every field but a bare carriage return (csv.writer
    before Python 3.11.9 leaves it unquoted, splitting the row) and text that starts like a
    formula (marked with a leading '); csv.reader gives every field back, marked."""
    text = csv_text(rows)
    plain = [
        row for row in rows if not any(isinstance(v, str) and ("\r" in v or v.startswith(FORMULA_START)) for v in row)
    ]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(plain)
    assert csv_text(plain) == buffer.getvalue()
    expected = [
        [
            "" if v is None else ("'" + v if v.startswith(FORMULA_START) else v) if isinstance(v, str) else str(v)
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
    assert rows[1][0] == '\'=HYPERLINK("http://x")' and rows[2][failure] == "run: Error: a\rb"
    assert rows[3][warnings] == "@SUM(1)\n-2+3".replace("@", "'@", 1) and rows[4][4] == "'+float"
    assert _details_text(run) == _reference(run)


@pytest.mark.parametrize(
    ("field", "value"), [("case", "=1+2"), ("case", "-b1"), ("case", "@x"), ("dtype", "+float32"), ("dtype", "=bf16")]
)
def test_a_plain_row_whose_key_or_dtype_starts_like_a_formula_is_marked(
    tmp_path_factory: Any, field: str, value: str
) -> None:
    """The fast path's rows are plain text: a case key or dtype that needs no quoting but starts
    like a formula still sends the table through csv_text, which marks it."""
    run = _run(tmp_path_factory, report._CHUNK + 20)
    cell = run.cells[report._CHUNK + 3]
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
    assert _details_text(run) == _reference(run)
    row = list(csv.reader(io.StringIO(_details_text(run), newline="")))[report._CHUNK + 4]
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
    # The fast writer and csv.writer agree with the column filled in.
    from reportgen.render.report import judge_log, warm_stability

    judged = judge_log(tmp_path / "run" / "events.jsonl")
    stability = warm_stability(judged)
    assert _details_bytes(judged.run, stability).decode("utf-8") == csv_text(
        [DETAIL_COLUMNS, *detail_rows(judged.run, stability)]
    )


def test_every_row_says_whether_the_runs_performance_acceptance_is_stopped(tmp_path: Path) -> None:
    """Before: a run whose mismatching cells have no verdict (its performance acceptance stopped,
    so none of its timings is a performance result) wrote its passing cells' warm medians as
    'stable' with nothing beside them: a script reading details.csv took them as results. The
    last column says so on every row; a verdict for the mismatch lifts it."""
    from reportgen.render.report import build_report, details_table, judge_log
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
        judged = judge_log(log, notes)
        # The fast writer and csv.writer agree with the column filled in.
        assert details_table(judged).decode("utf-8") == csv_text(
            [DETAIL_COLUMNS, *detail_rows(judged.run, report.warm_stability(judged), name == "stopped")]
        )
    stopped, explained = read["stopped"], read["explained"]
    assert {row["warm_stability"] for row in stopped.values() if row["warm_median_s"]} == {"stable"}
    assert {row["performance_stopped"] for row in stopped.values()} == {"True"}
    assert {row["performance_stopped"] for row in explained.values()} == {"False"}
    assert [{k: v for k, v in row.items() if k != "performance_stopped"} for row in stopped.values()] == [
        {k: v for k, v in row.items() if k != "performance_stopped"} for row in explained.values()
    ]
