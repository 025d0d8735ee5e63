"""A plan whose matrix is huge: the collector says how many cells before it starts and how long
is left after the first ones, takes a cap (--max-cells, [matrix] max_cells), refuses what one run
log cannot hold, and writes only logs that `reportgen validate` accepts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collector import eventlog, planschema
from collector.__main__ import main as collector_main
from collector.plan import MAX_PLANNED_CELLS, PlanError, expand_matrix, load_plan
from collector.run.state import Progress
from reportgen.cli import main as reportgen_main
from reportgen.contract import validation
from reportgen.contract.validation import read_log
from tests.conftest import REPO

FAULTY = REPO / "tests" / "workloads" / "faulty.toml"


def _plan(
    folder: Path, shapes: list[tuple[int, int]], extra: str = "", dtype: str = "float32", layout: str = "contiguous"
) -> Path:
    """The faulty test workload with another matrix (2 modes per shape)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FAULTY.with_suffix(".py"), folder / "faulty.py")
    text = FAULTY.read_text(encoding="utf-8").replace(
        "shapes = [[1, 4], [2, 4]]", "shapes = [" + ", ".join(f"[{b}, {l}]" for b, l in shapes) + "]" + extra
    )
    text = text.replace('dtypes = ["float32"]', f'dtypes = ["{dtype}"]').replace(
        'layouts = ["contiguous"]', f'layouts = ["{layout}"]'
    )
    path = folder / "plan.toml"
    path.write_text(text, encoding="utf-8")
    return path


# 100,000 cells: 500 batches x 100 lengths x 2 modes.
HUGE = [(b, l) for b in range(1, 501) for l in range(4, 404, 4)]


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _plan(tmp_path_factory.mktemp("huge"), HUGE)


def _one_log(out: Path) -> Path:
    logs = list(out.glob("*/events.jsonl"))
    assert len(logs) == 1, logs
    return logs[0]


def test_a_matrix_too_large_for_one_log_is_refused_with_its_count(
    huge: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = collector_main(
        ["--workload", str(huge), "--target", "cpu", "--out", str(tmp_path / "runs"), "--cold", "off"]
    )
    err = capfd.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert (
        len(lines) == 1
        and "100,000 cells" in lines[0]
        and f"{MAX_PLANNED_CELLS:,}" in lines[0]
        and "--max-cells" in lines[0]
    ), err
    assert not (tmp_path / "runs").exists(), "nothing is written"


def test_a_capped_huge_plan_says_its_count_estimates_and_writes_a_valid_log(
    huge: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Progress, "ESTIMATE_EVERY_S", 0.0)  # every cell, not once a minute
    out = tmp_path / "runs"
    code = collector_main(
        [
            "--workload",
            str(huge),
            "--target",
            "cpu",
            "--out",
            str(out),
            "--cold",
            "off",
            "--modes",
            "eager",
            "--max-cells",
            "5",
            "--warm",
            "1",
        ]
    )
    err = capfd.readouterr().err
    assert code == 0, err[-3000:]
    said = err.splitlines()
    count = [line for line in said if "planned cells" in line]
    assert count == [
        "collector plan: 5 planned cells (the first of the matrix's 100,000: --max-cells 5); this run runs 3 of them (an estimate of the time left follows the first cells)"
    ]
    first_cell = next(i for i, line in enumerate(said) if "[1/3]" in line)
    assert said.index(count[0]) < first_cell, "the count comes before any cell"
    assert any("estimate: about" in line and "left for 2 cell(s)" in line for line in said), err
    log = _one_log(out)
    done = CliRunner().invoke(reportgen_main, ["validate", str(log)])
    assert done.exit_code == 0, done.output
    plan = next(e for e in read_log(log).events if e.kind == "plan")
    assert len(plan.matrix) == 5 and plan.matrix_cells == 100_000
    report = CliRunner().invoke(
        reportgen_main, ["report", str(log), "--out", str(tmp_path / "report"), "--format", "md"]
    )
    assert report.exit_code == 0, report.output
    text = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "the plan's matrix has 100,000 cells; this run planned the first 5" in text
    # The cells past the cap are untested, as deselected ones are (a review: a run of one cell of
    # three, capped, read "Suitable", where the same cell chosen with --only read "Blocked").
    said = "99,995 of the plan's 100,000 cells are past its cap ([matrix] max_cells or --max-cells): not run, and untested."
    assert said in text.replace("\\", "")  # (Markdown escapes the brackets and underscore)
    assert "Suitable" not in text.split("\n## ")[0]


def test_the_plan_key_caps_and_the_option_only_lowers_it(tmp_path: Path) -> None:
    path = _plan(tmp_path, HUGE[:30], extra="\nmax_cells = 7")
    plan = load_plan(path)
    assert (len(plan.cells), plan.matrix_cells) == (7, 60)
    plan.cap(100)
    assert len(plan.cells) == 7
    plan.cap(3)
    assert [c.case for c in plan.cells] == [c.case for c in load_plan(path).cells[:3]]
    fields = plan.event_fields(plan.cells)
    assert fields["matrix_cells"] == 60 and len(fields["matrix"]) == 3
    assert (
        load_plan(_plan(tmp_path / "whole", HUGE[:3])).event_fields(
            load_plan(_plan(tmp_path / "whole", HUGE[:3])).cells
        )["matrix_cells"]
        is None
    )


def test_the_collector_and_the_contract_agree_on_the_line_limit_and_the_largest_plan_fits(tmp_path: Path) -> None:
    assert eventlog.MAX_LINE_BYTES == validation.MAX_LINE_BYTES
    # The longest case keys a plan can make: a 10-digit batch (batch x length is at most 2^31 - 1),
    # the longest dtype and layout names.
    path = _plan(
        tmp_path,
        [(planschema.MAX_SHAPE_POSITIONS - i, 1) for i in range(MAX_PLANNED_CELLS // 2)],
        dtype="bfloat16",
        layout="noncontiguous",
    )
    plan = load_plan(path)
    assert len(plan.cells) == MAX_PLANNED_CELLS and plan.size_problem() is None
    event = {
        "schema_version": eventlog.SCHEMA_VERSION,
        "seq": 1,
        "time": eventlog.utc_now(),
        "kind": "plan",
        **plan.event_fields(plan.cells),
    }
    event["selection"] = {"only": ["*"], "modes": ["eager"], "cases": [c.case for c in plan.cells]}
    event.update(model_revision="x" * 1000, weights_sha256="0" * 64, target="cpu")
    assert len(json.dumps(event, ensure_ascii=False).encode("utf-8")) < eventlog.MAX_LINE_BYTES


def test_the_log_writer_refuses_a_line_the_contract_would_skip(tmp_path: Path) -> None:
    log = eventlog.EventLog(tmp_path / "events.jsonl")
    with pytest.raises(ValueError, match="line limit"):
        log.write("warning", message="x" * eventlog.MAX_LINE_BYTES)
    log.write("warning", message="short")
    log.close()
    lines = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["seq"] == 0


def test_plan_check_blocks_a_matrix_too_large_for_one_log(huge: Path) -> None:
    done = CliRunner().invoke(reportgen_main, ["plan-check", str(huge), "--target", "cpu"])
    assert done.exit_code == 3, done.output  # needs a revised plan
    assert "100,000 cells: more than one run log holds (20,000)" in done.output, done.output
    assert "[matrix] max_cells" in done.output


class _NoScan(list):  # type: ignore[type-arg]
    """A shape list that refuses to be scanned: a scan per cache check is quadratic in shapes."""

    def __contains__(self, item: object) -> bool:
        raise AssertionError("matrix.shapes scanned for a cache check")


def test_cache_checks_are_looked_up_not_scanned_in_the_shape_list() -> None:
    check = planschema.Checker("plan.toml")
    shapes = _NoScan([[1, n] for n in range(1, 50)])
    planschema._matrix_shapes(check, {"matrix": {"shapes": shapes, "cache_checks": [[1, 3], [1, 49]]}})
    with pytest.raises(PlanError, match=r"\[2, 3\] is not one of matrix.shapes"):
        planschema._matrix_shapes(check, {"matrix": {"shapes": shapes, "cache_checks": [[2, 3]]}})


def test_the_cell_count_is_known_before_the_matrix_is_built(tmp_path: Path) -> None:
    """A plan of a megabyte names a million cells: only one cell past what a log holds is built,
    and the count (arithmetic, not the length of a list) still says how many the matrix has."""
    plan = load_plan(_plan(tmp_path, HUGE))
    assert plan.matrix_cells == 100_000 and len(plan.cells) == MAX_PLANNED_CELLS + 1
    problem = plan.size_problem()
    assert problem is not None and "expands to 100,000 cells" in problem
    plan.cap(30_000)  # a cap above what a log holds is still refused, with its own count
    problem = plan.size_problem()
    assert problem is not None and "expands to 30,000 cells" in problem
    plan.cap(MAX_PLANNED_CELLS)
    assert plan.size_problem() is None and len(plan.cells) == MAX_PLANNED_CELLS
    assert plan.cells == expand_matrix(plan.checked["matrix"])[:MAX_PLANNED_CELLS]


@pytest.mark.parametrize("modes", [["eager", "compiled"], ["eager"], ["compiled"]])
def test_the_counted_cells_are_the_expanded_cells(modes: list[str]) -> None:
    matrix = planschema.check_table(
        "matrix",
        {
            "shapes": [[1, 8], [2, 8], [1, 16]],
            "cache_checks": [[1, 8], [2, 8]],
            "dtypes": ["float32", "bfloat16"],
            "layouts": ["contiguous", "noncontiguous"],
            "modes": modes,
        },
    )
    assert planschema.matrix_cells(matrix) == len(expand_matrix(matrix))
    assert expand_matrix(matrix, 5) == expand_matrix(matrix)[:5]


def test_a_loaded_plan_checks_its_matrix_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The schema checks the matrix (each shape, each cache check) when the plan is validated; the
    expansion takes it as checked rather than checking a megabyte of shapes again."""
    checked: list[str] = []
    table = planschema.check_table

    def counted(path: str, data: Any, file: str = "plan") -> dict[str, Any]:
        checked.append(path)
        return table(path, data, file)

    monkeypatch.setattr(planschema, "check_table", counted)
    plan = load_plan(_plan(tmp_path, HUGE[:30], extra="\ncache_checks = [[1, 4]]"))
    assert len(plan.cells) == 30 * 2 + 1 and "matrix" not in checked, checked


def test_the_time_left_counts_the_cells_done_not_the_number_of_the_cell_announced(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiled cells run first (in fresh processes), numbered from the end of the matrix: the
    first estimate took cell 14's number as 13 cells done and said 'about 0 s left for 0 cell(s)'
    on a run with 13 cells to go."""
    monkeypatch.setattr(Progress, "ESTIMATE_EVERY_S", 0.0)
    progress = Progress(14)
    progress.say("compiled cell", 14)
    progress.say("compiled cell", 13)
    progress.say("compiled cell", 13)  # the same cell said again: not another one done
    progress.say("eager cell", 1)
    estimates = [line for line in capfd.readouterr().err.splitlines() if "estimate: about" in line]
    assert len(estimates) == 2 and "left for 13 cell(s)" in estimates[0] and "left for 12 cell(s)" in estimates[1]


def test_a_skipped_cell_takes_no_part_in_the_rate_of_the_time_left(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: a cache-check repeat said skipped first (at 0.7 s) made the first compiled cell's
    start read as a cell done: "about 1 s left for 1 cell(s) at 0.813 s a cell", then the cell
    took 22 s. A skipped cell is counted out of the cells left and of the rate."""
    monkeypatch.setattr(Progress, "ESTIMATE_EVERY_S", 0.0)
    progress = Progress(3)
    progress.say("repeat: skipped", 3, ran=False)
    progress.say("compiled cell", 1)
    assert "estimate: about" not in capfd.readouterr().err, "nothing has run yet"
    progress.say("eager cell", 2)
    estimates = [line for line in capfd.readouterr().err.splitlines() if "estimate: about" in line]
    assert len(estimates) == 1 and "left for 1 cell(s)" in estimates[0], estimates
