"""Localising a mismatch to a module: the judge, the report (HTML, Markdown), compare, and the
collector end to end on a workload whose third block differs only when compiled."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reportgen.contract.events import Localization
from reportgen.judge.localization import judge_localization
from reportgen.render.report import build_report, judge_log
from tests.conftest import FIXTURES, REPO

LOCALIZED = FIXTURES / "synthetic_localized.jsonl"
CASE = "b2-l16-contiguous-float32-compiled"


def _event(path: Path, case: str) -> Localization:
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if data["kind"] == "localization" and data["case"] == case:
            return Localization.model_validate(data)
    raise AssertionError(f"no localization event for {case} in {path}")


def test_the_first_module_whose_own_error_is_beyond_the_tolerance_is_named_and_later_ones_inherit() -> None:
    found = judge_localization(_event(LOCALIZED, CASE))
    assert found.first is not None and found.first.name == "blocks.2" and found.first.type == "Block"
    assert found.first.operators is not None and "aten::sin" in found.first.operators
    assert found.first.local == pytest.approx(1000.0)
    assert found.inherited == ("blocks.3", "head")
    roles = {v.name: v.role for v in found.modules}
    # blocks.1 is off by less than its allowance in both views: within, not inherited.
    assert roles == {"blocks.0": "within", "blocks.1": "within", "blocks.2": "diverges", "blocks.3": "inherited", "head": "inherited"}


def test_a_diverging_module_inside_a_diverging_block_is_the_one_named() -> None:
    data = _event(LOCALIZED, CASE).model_dump()
    inner = dict(data["modules"][2], name="blocks.2.lin", type="Linear", depth=3, order=3)
    for m in data["modules"][3:]:
        m["order"] += 1
    data["modules"].insert(3, inner)
    found = judge_localization(Localization.model_validate(data))
    assert found.first is not None and found.first.name == "blocks.2.lin"
    assert {v.name: v.role for v in found.modules}["blocks.2"] == "own error"


def test_the_report_names_the_module_in_html_and_markdown(tmp_path: Path) -> None:
    build_report(LOCALIZED, tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "First diverging module: blocks.2 (Block), local error 1e+03 × the allowance" in md
    assert "after it, blocks.3, head only inherit the error" in md
    assert "| `blocks.3` | Block | 1.1e+03 ✘ | 0 (compiled alone) | inherited error |" in md
    assert "First diverging module: blocks.2 (Block)" in html and "<table class=\"modules\">" in html
    rows = [html.index(f'<th scope="row"><code>{name}</code></th>') for name in ("blocks.0", "blocks.1", "blocks.2", "blocks.3", "head")]
    assert rows == sorted(rows)  # in execution order


def test_an_operator_change_names_the_module_in_the_disposition(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    shutil.copy(LOCALIZED, log)
    (tmp_path / "annotations.toml").write_text(f'[{CASE}]\nexplanation = "the drifting block"\nverdict = "change-needed"\nchange = "operator"\n', encoding="utf-8")
    judged = judge_log(log)
    change = next(r for r in judged.disposition.reasons if r.outcome == "change" and r.category == "operator")
    assert f"{CASE}: blocks.2 (Block; operators aten::add, aten::addmm, aten::tanh, aten::sin)" in change.message


def test_compare_names_the_module_on_the_side_that_mismatches(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from reportgen.cli import main

    out = tmp_path / "c"
    result = CliRunner().invoke(main, ["compare", str(FIXTURES / "synthetic_complete.jsonl"), str(LOCALIZED), "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    for name in ("compare.md", "compare.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert "first diverging module blocks.2 (Block), local 1e+03 × the allowance, 2 after it inherit" in text, name


@pytest.mark.slow
def test_a_block_that_differs_only_when_compiled_is_named_in_both_views(tmp_path: Path) -> None:
    """The collector on the CPU: the eager cell passes, the compiled one mismatches, and its
    localisation names blocks.2 in the local view while blocks.3 and head only inherit."""
    from collector.backends import Backend
    from collector.plan import load_plan
    from collector.runner import Options, execute

    run_dir, code = execute(load_plan(REPO / "tests" / "workloads" / "drifting.toml"), Backend(), Options(target="cpu", out_dir=tmp_path, warm_repetitions=1, cold="off"))
    assert code == 0 and run_dir is not None
    log = run_dir / "events.jsonl"
    compiled = judge_localization(_event(log, "b1-l4-contiguous-float32-compiled"))
    eager = judge_localization(_event(log, "b1-l4-contiguous-float32-eager"))
    assert eager.first is None and all(v.role == "within" for v in eager.modules), eager  # [localize] always: a passing cell too
    assert compiled.first is not None and compiled.first.name == "blocks.2", compiled
    assert compiled.inherited == ("blocks.3", "head")
    by_name = {v.name: v for v in compiled.modules}
    assert by_name["blocks.2"].local_compiled is True
    assert by_name["blocks.3"].accumulated is not None and by_name["blocks.3"].accumulated > 1 >= by_name["blocks.3"].local  # type: ignore[operator]
    assert by_name["blocks.1"].accumulated is not None and by_name["blocks.1"].accumulated <= 1
    out = tmp_path / "report"
    build_report(log, out)
    for name in ("report.md", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert "First diverging module: blocks.2 (Block)" in text and "only inherit the error" in text, name
