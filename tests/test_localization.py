"""Localising a mismatch to a module: the judge, the report (HTML, Markdown), compare, and the
collector end to end on a workload whose third block differs only when compiled."""

from __future__ import annotations

import msgspec

import json
import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from reportgen.contract.events import Localization
from reportgen.judge.localization import judge_localization
from reportgen.render.report import build_report, judge_log
from reportgen.render.view import build_view
from tests.conftest import FIXTURES, REPO

LOCALIZED = FIXTURES / "synthetic_localized.jsonl"
CASE = "b2-l16-contiguous-float32-compiled"


def _event(path: Path, case: str) -> Localization:
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if data["kind"] == "localization" and data["case"] == case:
            return msgspec.convert(data, Localization)
    raise AssertionError(f"no localization event for {case} in {path}")


def test_the_first_module_whose_own_error_is_beyond_the_tolerance_is_named_and_later_ones_inherit() -> None:
    found = judge_localization(_event(LOCALIZED, CASE))
    assert found.first is not None and found.first.name == "blocks.2" and found.first.type == "Block"
    assert found.first.operators is not None and "aten::sin" in found.first.operators
    assert found.first.local == pytest.approx(1000.0)
    assert found.inherited == ("blocks.3", "head")
    roles = {v.name: v.role for v in found.modules}
    # blocks.1 is off by less than its allowance in both views: within, not inherited.
    assert roles == {
        "blocks.0": "within",
        "blocks.1": "within",
        "blocks.2": "diverges",
        "blocks.3": "inherited",
        "head": "inherited",
    }


def test_a_diverging_module_inside_a_diverging_block_is_the_one_named() -> None:
    data = msgspec.to_builtins(_event(LOCALIZED, CASE))
    inner = dict(data["modules"][2], name="blocks.2.lin", type="Linear", depth=3, order=3)
    for m in data["modules"][3:]:
        m["order"] += 1
    data["modules"].insert(3, inner)
    found = judge_localization(msgspec.convert(data, Localization))
    assert found.first is not None and found.first.name == "blocks.2.lin"
    assert {v.name: v.role for v in found.modules}["blocks.2"] == "own error"


def test_a_module_not_measured_before_the_one_named_qualifies_it_everywhere(tmp_path: Path) -> None:
    """Before: with blocks.0 left out by the bounds (max_bytes) or listed without a local figure,
    the report, the disposition and compare said "First diverging module: blocks.2", while the
    module that diverged first may be the one not measured. The module named is now the first
    among those measured, and the ones not measured are named with it."""
    data = msgspec.to_builtins(_event(LOCALIZED, CASE))
    data["modules"][1].pop("local")  # blocks.1: no local figure (as a module that could not run alone)
    data["skipped"] = [{"name": "blocks.0", "reason": "max_bytes"}]
    data["modules"] = [m | {"order": i} for i, m in enumerate(m for m in data["modules"] if m["name"] != "blocks.0")]
    found = judge_localization(msgspec.convert(data, Localization))
    assert found.first is not None and found.first.name == "blocks.2"
    assert found.unmeasured == ("blocks.1", "blocks.0")
    assert found.sentence.startswith("First diverging module among those measured: blocks.2 (Block)")
    assert found.sentence.endswith("; not measured, and possibly before it: blocks.1, blocks.0.")
    # The same event with every module before it measured says what it said before.
    plain = judge_localization(_event(LOCALIZED, CASE))
    assert plain.unmeasured == () and plain.sentence.startswith("First diverging module: blocks.2 (Block)")
    lines = LOCALIZED.read_text(encoding="utf-8").splitlines()
    edited = [
        json.dumps({**data, "seq": json.loads(line)["seq"], "time": json.loads(line)["time"]})
        if json.loads(line)["kind"] == "localization" and json.loads(line)["case"] == CASE
        else line
        for line in lines
    ]
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(edited) + "\n", encoding="utf-8")
    build_report(log, tmp_path / "out", formats=("md",))
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert (
        "blocks.2 (Block; operators" in text
        and "(among those measured; not measured, and possibly before it: blocks.1, blocks.0)" in text
    )
    assert "First diverging module: blocks.2" not in text


def test_the_report_names_the_module_in_html_and_markdown(tmp_path: Path) -> None:
    build_report(LOCALIZED, tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "First diverging module: blocks.2 (Block), local error 1e+03 × the allowance" in md
    assert "after it, blocks.3, head only inherit the error" in md
    assert "| `blocks.3` | Block | 1.1e+03 ✘ | 0 (compiled alone) | inherited error |" in md
    assert "First diverging module: blocks.2 (Block)" in html and '<table class="modules">' in html
    rows = [
        html.index(f'<th scope="row"><code>{name}</code></th>')
        for name in ("blocks.0", "blocks.1", "blocks.2", "blocks.3", "head")
    ]
    assert rows == sorted(rows)  # in execution order


def test_the_judgement_holds_the_localisation_and_the_page_only_formats_it() -> None:
    judged = judge_log(LOCALIZED)
    judgement = judged.judgement
    assert judgement is not None and [c.case for c in judgement.problems] == [CASE]
    found = judgement.localized[CASE]
    assert found.first is not None and found.first.name == "blocks.2"
    assert found.sentence.startswith("First diverging module: blocks.2 (Block), local error 1e+03 × the allowance")
    # The view shows the judgement's words: a sentence planted in the judgement is what the page says.
    planted = dataclasses.replace(judgement, localized={CASE: dataclasses.replace(found, sentence="planted sentence")})
    (problem,) = build_view(judged.run, planted, judged.annotations).problems
    assert problem.where is not None and problem.where.sentence == "planted sentence"
    # A cell the judgement did not localise shows no localisation (the view works none out).
    (bare,) = build_view(judged.run, dataclasses.replace(judgement, localized={}), judged.annotations).problems
    assert bare.where is None


def test_an_operator_change_names_the_module_in_the_disposition(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    shutil.copy(LOCALIZED, log)
    (tmp_path / "annotations.toml").write_text(
        f'[{CASE}]\nexplanation = "the drifting block"\nverdict = "change-needed"\nchange = "operator"\n',
        encoding="utf-8",
    )
    judged = judge_log(log)
    change = next(r for r in judged.disposition.reasons if r.outcome == "change" and r.category == "operator")
    assert (
        f"{CASE}: blocks.2 (Block; operators of an eager call aten::add, aten::addmm, aten::tanh, aten::sin)"
        in change.message
    )


def test_an_unexplained_mismatch_says_where_to_look() -> None:
    judged = judge_log(LOCALIZED)
    blocked = next(r for r in judged.disposition.reasons if r.rule == "mismatch" and r.outcome == "blocked")
    assert "not explained" in blocked.message and f"{CASE}: blocks.2 (Block;" in blocked.message
    plain = judge_log(FIXTURES / "synthetic_mismatch.jsonl")
    assert "diverging" not in next(r for r in plain.disposition.reasons if r.rule == "mismatch").message


def test_compare_names_the_module_on_the_side_that_mismatches(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from reportgen.cli import main

    out = tmp_path / "c"
    result = CliRunner().invoke(
        main, ["compare", str(FIXTURES / "synthetic_complete.jsonl"), str(LOCALIZED), "--out", str(out)]
    )
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

    # The default cold mode: the compiled cell, and its localisation, run in a fresh process whose events the run relays.
    run_dir, code = execute(
        load_plan(REPO / "tests" / "workloads" / "drifting.toml"),
        Backend(),
        Options(target="cpu", out_dir=tmp_path, warm_repetitions=1),
    )
    assert code == 0 and run_dir is not None
    log = run_dir / "events.jsonl"
    compiled = judge_localization(_event(log, "b1-l4-contiguous-float32-compiled"))
    eager = judge_localization(_event(log, "b1-l4-contiguous-float32-eager"))
    assert eager.first is None and all(v.role == "within" for v in eager.modules), (
        eager
    )  # [localize] always: a passing cell too
    assert compiled.first is not None and compiled.first.name == "blocks.2", compiled
    assert compiled.inherited == ("blocks.3", "head")
    by_name = {v.name: v for v in compiled.modules}
    assert by_name["blocks.2"].local_compiled is True
    assert (
        by_name["blocks.3"].accumulated is not None and by_name["blocks.3"].accumulated > 1 >= by_name["blocks.3"].local
    )  # type: ignore[operator]
    assert by_name["blocks.1"].accumulated is not None and by_name["blocks.1"].accumulated <= 1
    out = tmp_path / "report"
    build_report(log, out)
    for name in ("report.md", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert "First diverging module: blocks.2 (Block)" in text and "only inherit the error" in text, name


class _Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, object]]] = []

    def write(self, kind: str, **fields: object) -> None:
        self.events.append((kind, fields))


class _Quiet:
    def say(self, message: str, index: int | None = None) -> None:
        pass


class _NoCompile:
    """A backend whose compiler refuses everything: no compile runs in these fast tests."""

    import torch as _torch

    device = _torch.device("cpu")

    def compile(self, model: object, options: object) -> object:
        raise RuntimeError("this backend cannot compile a module alone")

    def synchronize(self) -> None:
        pass


def localized_fields(plan: Any, cell: Any, candidate: Any = None, reason: str = "mismatch") -> dict[str, object]:
    """The localization event's fields the collector writes for one cell of a loaded plan, run in
    this process on the CPU with a backend that compiles nothing; ``candidate``: a function of
    the reference model giving the candidate (the reference model itself by default)."""
    import types

    from collector import localize
    from collector.workload import build_model, input_key, load_workload

    workload = load_workload(plan)
    model = build_model(workload)
    key = input_key(cell.batch, cell.length, cell.layout)
    log = _Log()
    run = types.SimpleNamespace(
        plan=plan,
        model=model,
        workload=workload,
        backend=_NoCompile(),
        log=log,
        progress=_Quiet(),
        inputs={key: workload.make_inputs(cell.batch, cell.length, cell.layout)},
    )
    localize.localize(run, cell, model if candidate is None else candidate(model), reason)  # type: ignore[arg-type]
    ((kind, fields),) = log.events
    assert kind == "localization"
    return fields


def _localize(mode: str, **bounds: int) -> dict[str, object]:
    from collector.plan import load_plan

    plan = load_plan(REPO / "tests" / "workloads" / "drifting.toml")
    plan.checked["localize"] = {**plan.localize, **bounds}
    kind = "localization"
    fields = localized_fields(plan, next(c for c in plan.cells if c.mode == mode))
    msgspec.convert(
        {
            "schema_version": "1.2",
            "seq": 0,
            "time": "2026-01-01T00:00:00Z",
            "kind": kind,
            **{k: v for k, v in fields.items() if v is not None},
        },
        Localization,
    )
    return fields


def test_a_module_that_cannot_be_compiled_alone_is_said_so_and_has_no_local_figure() -> None:
    fields = _localize("compiled", max_depth=1)
    modules = fields["modules"]
    assert [m["name"] for m in modules] == ["blocks.0", "blocks.1", "blocks.2", "blocks.3", "head"]  # type: ignore[index]
    for m in modules:  # type: ignore[attr-defined]
        assert (
            "local" not in m and "could not be compiled alone: RuntimeError: this backend cannot compile" in m["note"]
        )
    assert "did not run end to end" in fields["accumulated_note"]  # type: ignore[operator]


def test_the_bounds_leave_modules_out_and_say_which() -> None:
    fields = _localize("eager", max_depth=2, max_modules=3, max_bytes=1_000_000)
    names = [m["name"] for m in fields["modules"]]  # type: ignore[attr-defined]
    assert names == ["blocks.0", "blocks.0.lin", "blocks.1"]
    skipped = {(s["name"], s["reason"]) for s in fields["skipped"]}  # type: ignore[attr-defined]
    assert ("blocks.1.lin", "max_modules") in skipped and ("head", "max_modules") in skipped
    tight = _localize("eager", max_depth=1, max_bytes=400)
    kept = [m["name"] for m in tight["modules"]]  # type: ignore[attr-defined]
    assert len(kept) < 5 and {s["reason"] for s in tight["skipped"]} >= {"max_bytes"}  # type: ignore[attr-defined]
    assert all(m["local"]["mismatched"] == 0 for m in tight["modules"])  # type: ignore[attr-defined]  # eager: the same values


def test_a_module_with_no_finite_allowance_at_its_worst_element_is_beyond_tolerance() -> None:
    """Schema 1.2 writes allowed_at_worst as null where the reference holds a NaN or Inf at the
    worst element; the module's ratio is then unbounded, not a TypeError on None."""
    from reportgen.contract.events import ErrorStats
    from reportgen.judge.allowance import ratio

    stats = ErrorStats(
        max_abs=1.0, max_rel=None, mismatched=1, total=4, worst_index=[2], allowed_at_worst=None, diff_at_worst=1.0
    )
    assert ratio(stats) == float("inf")
    assert ratio(msgspec.structs.replace(stats, **{"allowed_at_worst": 0.5})) == 2.0


def test_a_localised_passing_cell_is_shown_from_the_judgement(tmp_path: Path) -> None:
    """A cell localised because the plan asks for every cell, not listed as a problem: the
    judgement names it among the localised others and holds its localisation; the page shows it."""
    lines = [json.loads(line) for line in LOCALIZED.read_text(encoding="utf-8").splitlines()]
    passing = "b1-l16-contiguous-float32-eager"
    template = next(d for d in lines if d["kind"] == "localization")
    extra = {
        **template,
        "case": passing,
        "reason": "plan",
        "mode": "eager",
        "modules": [m | {"local_compiled": False} for m in template["modules"]],  # run eager, as the cell
    }
    at = next(i for i, d in enumerate(lines) if d["kind"] == "timing" and d["case"] == passing) + 1
    lines.insert(at, extra)
    for seq, line in enumerate(lines):
        line["seq"] = seq
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    judged = judge_log(log, beside=False)
    assert judged.judgement is not None
    assert [c.case for c in judged.judgement.localized_others] == [passing]
    assert set(judged.judgement.localized) == {CASE, passing}
    ((case, _, view),) = judged.view.localized_passing
    assert case == passing and view.sentence == judged.judgement.localized[passing].sentence
    assert "Localised because the plan asks for every cell" in " ".join(view.notes)


def test_a_module_after_the_one_named_called_again_is_not_said_to_only_inherit() -> None:
    """Before: 'after it, blocks.3, head only inherit the error' was said of a module whose event
    counts two calls, though only its first was measured: a real run of a shared module called
    twice, whose second call added error of its own, read as inheriting it (the fixture is
    synthetic, edited the same way)."""
    event = _event(LOCALIZED, CASE)
    modules = [msgspec.structs.replace(m, calls=2) if m.name == "blocks.3" else m for m in event.modules]
    found = judge_localization(msgspec.structs.replace(event, modules=modules))
    assert found.inherited == ("head",)
    assert found.again_after == (("blocks.3", 2),)
    assert "after it, head only inherit the error" in found.sentence
    assert (
        "after it, blocks.3 was measured in its first of 2 calls only: its later calls may add error of their own"
        in found.sentence
    ), found.sentence
    unchanged = judge_localization(event)
    assert unchanged.again_after == () and "only inherit the error" in unchanged.sentence


def _every_cell_localised(tmp_path: Path) -> Path:
    """The localised log with each of its four cells mismatching and localised alike."""
    from tests.logbuilder import localized_log

    events = localized_log()
    template = next(e for e in events if e["kind"] == "localization")
    for result in [e for e in events if e["kind"] == "case_result" and e["case"] != CASE]:
        result["status"] = "mismatch"
        result["error_stats"].update(
            dict(next(e for e in events if e.get("case") == CASE and e["kind"] == "case_result")["error_stats"])
        )
        mode = result["case"].rsplit("-", 1)[1]
        modules = [{**m, "local_compiled": mode == "compiled"} for m in template["modules"]]
        events.append({**template, "case": result["case"], "mode": mode, "modules": modules})
    cases = {e["case"] for e in events if e["kind"] == "case_result"}
    events = [e for e in events if not (e["kind"] == "timing" and e["case"] in cases)]
    end = next(e for e in events if e["kind"] == "run_end")
    events = [e for e in events if e is not end] + [end]
    for seq, event in enumerate(events):
        event["seq"] = seq
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def test_the_blocking_line_says_how_many_localised_cells_it_names_of_how_many(tmp_path: Path) -> None:
    """Before: with four mismatching cells localised, the blocking line named the first diverging
    module of three and said nothing of the fourth. Now: it says it names the first 3 of 4
    localised cells and where every cell's is; with one localised cell it adds no count."""
    judged = judge_log(_every_cell_localised(tmp_path))
    blocked = next(r for r in judged.disposition.reasons if r.rule == "mismatch" and r.outcome == "blocked")
    assert blocked.message.startswith("4 mismatching cell(s) not explained"), blocked.message
    assert (
        " First diverging module, from the localisation (the first 3 of 4 localised cells; every cell's own is under"
        " 5. Mismatches and errors in the run's report): "
    ) in blocked.message, blocked.message
    assert blocked.message.count(": blocks.2 (Block;") == 3
    one = next(r for r in judge_log(LOCALIZED).disposition.reasons if r.rule == "mismatch" and r.outcome == "blocked")
    assert " First diverging module, from the localisation: " in one.message and "localised cell" not in one.message


def test_a_blocking_line_that_looked_at_some_failed_cells_only_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: past the cells it looks at (50 of a long log's thousands), the line named what it
    found as if no other cell were localised. Now: it says how many cells it looked at of how many
    (here 2 of 4, the bound lowered for a small log)."""
    from reportgen.judge import disposition

    monkeypatch.setattr(disposition, "LOCALISED_LOOKED", 2)
    judged = judge_log(_every_cell_localised(tmp_path))
    blocked = next(r for r in judged.disposition.reasons if r.rule == "mismatch" and r.outcome == "blocked")
    assert (
        " First diverging module, from the localisation (2 localised cells in the first 2 of the 4 cells with a"
        " localisation, the rest not looked at; every cell's own is under 5. Mismatches and errors in the run's report): "
    ) in blocked.message, blocked.message


def test_localised_cells_after_the_first_failed_ones_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review: a log of 60 mismatching cells whose localised ones were the 55th and 56th read no
    word of localisation, since only the first 50 failed cells were looked at. Now the cells the
    log localised are the ones looked at (here the bound lowered to 2, the first two failed cells
    not localised)."""
    from reportgen.judge import disposition

    monkeypatch.setattr(disposition, "LOCALISED_LOOKED", 2)
    path = _every_cell_localised(tmp_path)
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    failed = [e["case"] for e in events if e["kind"] == "case_result" and e["status"] == "mismatch"]
    dropped = set(failed[:2])
    events = [e for e in events if not (e["kind"] == "localization" and e["case"] in dropped)]
    for seq, event in enumerate(events):
        event["seq"] = seq
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    judged = judge_log(path)
    blocked = next(r for r in judged.disposition.reasons if r.rule == "mismatch" and r.outcome == "blocked")
    assert " First diverging module, from the localisation" in blocked.message, blocked.message
    assert all(f"{case}: blocks.2" in blocked.message for case in failed[2:]), blocked.message
