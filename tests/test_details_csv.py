"""details.csv: every cell's row, written exactly as csv.writer writes ``detail_rows``.

The report writes plain rows by joining their fields (twice as fast); these tests hold it to
csv.writer's bytes for free text that needs quoting, wherever it sits in a row.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.contract.events import PlannedCell
from reportgen.model.runmodel import RunModel, build_run
from reportgen.contract.validation import read_log
from reportgen.render.report import _details_text
from reportgen.render.view import DETAIL_COLUMNS, detail_rows
from tests.conftest import FIXTURES
from tests.logbuilder import dumps, large_log

# Text that csv.writer must quote (comma, quote, line breaks), and text it writes as it is.
AWKWARD = st.text(alphabet=st.sampled_from(list(',"\r\n\x00 ab1é€\t;|\u2028')), max_size=8)
NUMBER = st.one_of(st.none(), st.integers(-5, 10**12), st.floats(allow_nan=True, allow_infinity=True))


def _reference(run: RunModel) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(DETAIL_COLUMNS)
    writer.writerows(detail_rows(run))
    return buffer.getvalue()


def _run(tmp_path_factory: Any, cells: int) -> RunModel:
    path = tmp_path_factory.mktemp("csv") / "events.jsonl"
    path.write_text(dumps(large_log(cells, mismatch_every=2)), encoding="utf-8")
    return build_run(read_log(path))


def test_every_fixture_writes_what_csv_writer_writes() -> None:
    for path in sorted(FIXTURES.glob("*.jsonl")):
        reading = read_log(path)
        if reading.valid:
            run = build_run(reading)
            assert _details_text(run) == _reference(run), path.name


CELL = st.fixed_dictionaries({
    "case": st.one_of(st.none(), AWKWARD),
    "dtype": st.one_of(st.none(), AWKWARD),
    "failure": st.one_of(st.none(), AWKWARD),
    "warnings": st.lists(AWKWARD, max_size=2),
    "figures": st.tuples(NUMBER, NUMBER, NUMBER, NUMBER, NUMBER, NUMBER),
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(CELL, min_size=1, max_size=6))
def test_awkward_text_and_missing_figures_are_written_as_csv_writer_writes_them(tmp_path_factory: Any, changes: list[dict[str, Any]]) -> None:
    run = _run(tmp_path_factory, 8)
    for index, (cell, change) in enumerate(zip(run.cells, changes)):
        planned = PlannedCell.model_validate({
            "case": change["case"] if change["case"] is not None else cell.planned.case + f"-{index}",
            "batch": cell.planned.batch, "length": cell.planned.length, "layout": cell.planned.layout,
            "dtype": change["dtype"] if change["dtype"] is not None else cell.planned.dtype, "mode": cell.planned.mode,
        })
        cell.planned, cell.case = planned, planned.case
        cell.failure_text, cell.warnings = change["failure"], tuple(change["warnings"])
        cell.mismatched, cell.total, cell.max_abs, cell.cold_s, cell.warm_median_s, cell.result_line = change["figures"]
    assert _details_text(run) == _reference(run)
