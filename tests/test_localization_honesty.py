"""What a localisation may not claim: the log measures each module's first call only, the bounds
leave modules out, and generation cells are never localised. Where the error may lie in what was
not measured, the sentence says so instead of naming a place the log did not measure.

The logs are synthetic (tests/logbuilder.py marks their run_start so); the figures mirror small
models run by hand: a shared layer called twice that goes wrong on its second call only, and a
block's own code that goes wrong in a block the plan's max_modules left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from reportgen.contract.events import Localization
from reportgen.judge.localization import Localized, judge_localization
from reportgen.render.report import build_report
from tests.logbuilder import dumps, generation_log, localized_log

ALLOWED = 1e-5  # the allowance at every module's worst element, as the log's atol


def _stats(ratio: float) -> dict[str, Any]:
    diff = ratio * ALLOWED
    return {
        "max_abs": diff,
        "max_rel": diff * 10,
        "mismatched": 16 if ratio > 1 else 0,
        "total": 16,
        "worst_index": [0, 1],
        "worst_output": "out",
        "allowed_at_worst": ALLOWED,
        "diff_at_worst": diff,
    }


def _modules(*rows: tuple[str, str, float, float, int]) -> list[dict[str, Any]]:
    """Localised modules in execution order: (name, type, accumulated, local, calls); the figures
    are worst |diff| / allowance (above 1: beyond it)."""
    return [
        {
            "name": name,
            "type": kind,
            "depth": sum(1 for p in name.split(".") if not p.isdigit()),
            "order": order,
            "calls": calls,
            "accumulated": _stats(accumulated),
            "local": _stats(local),
            "local_compiled": True,  # the localised cell is a compiled one
            "operators": ["aten::addmm"],
        }
        for order, (name, kind, accumulated, local, calls) in enumerate(rows)
    ]


def _log(modules: list[dict[str, Any]], skipped: list[dict[str, str]], **bounds: int) -> list[dict[str, Any]]:
    """The synthetic localised log (a mismatching cell) with its localization event's modules replaced."""
    events = localized_log()
    event = next(e for e in events if e["kind"] == "localization")
    event.update(modules=modules, skipped=skipped, skipped_more=0, **bounds)
    return events


def _judge(modules: list[dict[str, Any]], skipped: list[dict[str, str]] = [], **bounds: int) -> Localized:
    event = next(e for e in _log(modules, skipped, **bounds) if e["kind"] == "localization")
    return judge_localization(msgspec.convert(event, Localization))


def _report(tmp_path: Path, events: list[dict[str, Any]]) -> dict[str, str]:
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(events), encoding="utf-8")
    assert json.loads(log.read_text(encoding="utf-8").splitlines()[0])["origin"] == "synthetic"
    build_report(log, tmp_path / "out", formats=("md", "html"))
    return {name: (tmp_path / "out" / name).read_text(encoding="utf-8") for name in ("report.md", "report.html")}


def _shared(calls: int) -> list[dict[str, Any]]:
    """The model calls shared twice, then head: shared's first call is within the tolerance, and
    head is far beyond it end to end but within it on its own (a gap before head)."""
    return _modules(
        ("blocks.0", "Block", 0.1, 0.1, 1),
        ("shared", "Leaf", 0.11, 0.08, calls),
        ("shared.lin", "Linear", 0.11, 0.08, calls),
        ("head", "Linear", 17.3, 0.03, 1),
    )


def test_a_module_called_twice_before_the_gap_is_named_as_a_possible_place(tmp_path: Path) -> None:
    """Before: "The error arises before head (Linear), in code no localised module covers (the
    model's own forward, between shared and head)", while only shared's first call was measured
    and its second went wrong."""
    found = _judge(_shared(2))
    assert found.gap is not None and found.gap.before.name == "head"
    assert found.repeated == (("shared", 2),)  # shared.lin runs inside shared: not listed apart
    assert found.sentence.startswith(
        "The error arises before head (Linear), in a later call of shared (only its first of 2 calls was measured)"
        " or in code no localised module covers (the model's own forward, between shared and head):"
    )
    # The one phrase a Blocking line and a comparison's cell give hedges alike (a review: it read
    # "arises before head (Linear), in code no localised module covers", a place stated as found).
    assert found.brief.startswith(
        "arises before head (Linear), in a later call of shared (only its first of 2 calls was measured)"
        " or in code no localised module covers"
    )
    # Called once, the module's only call was measured: the gap is the one place left.
    once = _judge(_shared(1))
    assert once.repeated == () and once.sentence.startswith(
        "The error arises before head (Linear), in code no localised module covers"
    )
    assert once.brief.startswith("arises before head (Linear), in code no localised module covers")
    for name, text in _report(tmp_path, _log(_shared(2), [])).items():
        assert "in a later call of shared (only its first of 2 calls was measured)" in text, name
        assert "The error arises before head (Linear), in code no localised module covers" not in text, name
        assert (
            "error arises before it, in a later call of an earlier module or in code no localised module covers" in text
        ), name


def test_a_module_called_twice_before_the_first_diverging_one_qualifies_it() -> None:
    found = _judge(
        _modules(
            ("shared", "Leaf", 0.2, 0.2, 3),
            ("blocks.0", "Block", 9.0, 8.0, 1),
            ("head", "Linear", 9.5, 0.1, 1),
        )
    )
    assert found.first is not None and found.first.name == "blocks.0"
    assert found.sentence.startswith("First diverging module among those measured: blocks.0 (Block)")
    assert found.sentence.endswith(
        "; not measured, and possibly before it: later calls of shared (only its first of 3 was measured)."
    )
    # A module called more than once only after the one named cannot come before it.
    after = _judge(_modules(("blocks.0", "Block", 9.0, 8.0, 1), ("shared", "Leaf", 9.0, 0.1, 2)))
    assert after.repeated == () and after.sentence.startswith("First diverging module: blocks.0 (Block)")


def test_a_mismatch_no_measured_module_holds_names_the_later_calls() -> None:
    found = _judge(_modules(("blocks.0", "Block", 0.1, 0.1, 1), ("shared", "Leaf", 0.2, 0.1, 2)))
    assert found.sentence == (
        "Every localised module is within the tolerance, end to end too, yet the cell did not match the reference:"
        " the error arises in a later call of shared (only its first of 2 calls was measured)"
        " or in code no localised module covers, or localisation's own run of the model did not reproduce the"
        " mismatch (an error on a first call only, or one that varies from run to run): the log does not say which."
    )


def test_a_mismatch_past_the_modules_measured_points_at_the_bound_that_skipped_the_rest(tmp_path: Path) -> None:
    """Before: "No localised module's own (local) error is beyond the tolerance." with max_modules = 4
    leaving out the blocks where the error arose, and every module measured within it end to end."""
    measured = _modules(
        ("blocks.0", "Block", 0.15, 0.15, 1),
        ("blocks.0.a", "Leaf", 0.07, 0.07, 1),
        ("blocks.0.b", "Leaf", 0.05, 0.06, 1),
        ("blocks.0.norm", "LayerNorm", 0.15, 0.06, 1),
    )
    skipped = [
        {"name": "8 module(s) below depth 2", "reason": "max_depth"},
        {"name": "blocks", "reason": "not called by the reference"},
    ] + [
        {"name": n, "reason": "max_modules"} for n in ("blocks.1", "blocks.1.a", "blocks.1.b", "blocks.1.norm", "head")
    ]
    found = _judge(measured, skipped, max_modules=4)
    assert found.sentence == (
        "Every localised module is within the tolerance, end to end too, yet the cell did not match the reference:"
        " the error arises in a module the bounds skipped (blocks.1, blocks.1.a, blocks.1.b and 2 more)"
        " or in code no localised module covers, or localisation's own run of the model did not reproduce the"
        " mismatch (an error on a first call only, or one that varies from run to run): the log does not say which;"
        " raise [localize] max_modules to measure them."
    )
    text = _report(tmp_path, _log(measured, skipped, max_modules=4))
    assert "raise \\[localize\\] max\\_modules to measure them" in text["report.md"]
    assert "raise [localize] max_modules to measure them" in text["report.html"]
    assert "No localised module&#39;s own" not in text["report.html"]


def test_members_of_a_container_below_max_depth_point_at_max_depth() -> None:
    """encoder is never called itself (the model calls its members): with max_depth 1 no measured
    module holds them. Where a measured module holds every deeper one, max_depth is not suggested."""
    rows = _modules(("embed", "Embedding", 0.1, 0.1, 1), ("head", "Linear", 0.2, 0.2, 1))
    container = [
        {"name": "3 module(s) below depth 1", "reason": "max_depth"},
        {"name": "encoder", "reason": "not called by the reference"},
    ]
    found = _judge(rows, container, max_depth=1)
    assert "in a module below depth 1 that no measured module holds" in found.sentence
    assert found.sentence.endswith("; raise [localize] max_depth to measure them.")
    held = _judge(rows, container[:1], max_depth=1)
    assert "the error arises in code no localised module covers, or localisation's own run" in held.sentence
    assert "max_depth" not in held.sentence


def test_a_mismatching_generation_cell_says_it_was_not_localised(tmp_path: Path) -> None:
    """Before: the mismatch section said nothing of localisation for a generation cell, which the
    collector never localises, so its silence could be read as no module diverging."""
    events = generation_log()
    assert not any(e["kind"] == "localization" for e in events)
    assert any(e["kind"] == "case_result" and e["status"] == "mismatch" for e in events)
    text = _report(tmp_path, events)
    md = text["report.md"]
    assert (
        "| where it diverges | not localised: the collector does not localise generation cells, so no module is named |"
        in md
    )
    assert "the collector does not localise generation cells" in text["report.html"]
    # A passing generation run says nothing of it.
    passing = tmp_path / "passing"
    passing.mkdir()
    assert "does not localise generation cells" not in _report(passing, generation_log(divergent=None))["report.md"]


def test_a_parents_own_code_is_named_where_a_later_childs_small_error_does_not_account_for_it() -> None:
    """A review: p's forward added a large error between p.c1 and p.c2 (p local 43.8 x), and p.c2
    a small one of its own (3.02 x): the report named p.c2 the first diverging module. A child is
    named in the parent's place only where its own error is at least half the parent's."""

    def parent_and_child(child_own: float) -> Localized:
        return _judge(
            _modules(
                ("p", "Parent", 43.8, 43.8, 1),
                ("p.c1", "Linear", 0.2, 0.2, 1),
                ("p.c2", "Linear", 43.8, child_own, 1),
                ("head", "Linear", 44.0, 0.1, 1),
            )
        )

    found = parent_and_child(3.02)
    assert found.first is not None and found.first.name == "p"
    assert found.sentence.startswith("First diverging module: p (Parent), local error 43.8 × the allowance")
    # Where the child's own error is the parent's (its layer is the place), the child is named.
    inner = parent_and_child(40.0)
    assert inner.first is not None and inner.first.name == "p.c2"


def test_a_plan_that_judges_part_of_the_outputs_says_what_module_figures_cannot(tmp_path: Path) -> None:
    """A review: with [compare.outputs.y] mask = "mask", a layer that wrote garbage only at masked
    positions was named the first diverging module (local 1.99e+03 x) over the later layer whose
    error the cell judged; module outputs have no mask to apply. Where the plan judges part of
    the outputs, the section 5 sentence and the Blocking line say the figures cover whole outputs."""
    events = localized_log()
    plan = next(e for e in events if e["kind"] == "plan")
    plan["compare"] = {"outputs": [{"output": "out", "mask": "mask", "description": "mask != 0"}], "params": []}
    said = "Module figures cover each module's whole output, while this cell judges only part of its outputs (out: mask != 0)"
    md = _report(tmp_path, events)["report.md"].replace("\\!", "!")
    blocking = md[md.index("## 1. Disposition") : md.index("### Scope")]
    assert said in blocking and "operators of an eager call" in blocking, blocking
    assert md.count(said) >= 2  # and in section 5, beside where it diverges
    # The line naming the operator change an owner decided says it too (a review: it did not).
    notes_file = tmp_path / "run" / "annotations.toml"
    case = next(e["case"] for e in events if e["kind"] == "localization")
    notes_file.write_text(
        f'[{case}]\nexplanation = "x"\nverdict = "change-needed"\nchange = "operator"\nreason = "owner"\n',
        encoding="utf-8",
    )
    from reportgen.render.report import judge_log

    change = next(
        r for r in judge_log(tmp_path / "run" / "events.jsonl").disposition.reasons if r.category == "operator"
    )
    assert said in change.message, change.message
    # A plan that judges every element says nothing of it.
    (tmp_path / "plain").mkdir()
    plain = _report(tmp_path / "plain", localized_log())["report.md"].replace("\\!", "!")
    assert "Module figures cover each module's whole output" not in plain


def test_a_module_whose_output_was_not_measured_is_named_before_a_jump_not_builds_up() -> None:
    """A review: the diverging module returned a dataclass (its row 'not measured'), the next
    module jumped from 0.06 x to 6.5 x end to end, and the report said "the error builds up
    across modules". The unmeasured module before the first one beyond the tolerance is named."""
    modules = _modules(
        ("a", "Linear", 0.06, 0.06, 1),
        ("t", "ReturnsDataclass", 0.0, 0.0, 1),
        ("b9", "Block", 6.52, 0.3, 1),
        ("head", "Linear", 6.6, 0.1, 1),
    )
    modules[1].update(accumulated=None, local=None, note="its output holds no tensor")
    found = _judge(modules)
    assert found.first is None
    assert "b9 is the first beyond it end to end (6.52 × the allowance), after t, whose output was not measured" in (
        found.sentence
    )
    assert "builds up across modules" not in found.sentence


def test_a_module_beyond_a_zero_allowance_is_not_called_not_finite(tmp_path: Path) -> None:
    """A finite difference where the allowance is zero (atol 0, a reference of 0 there) has no
    ratio, but it is not a NaN or an Inf either: the table and the sentence say which it is."""
    modules = _modules(("blocks.0", "Block", 0.1, 0.1, 1), ("head", "Linear", 3.0, 3.0, 1))
    zero = dict(modules[1]["local"], allowed_at_worst=0.0, diff_at_worst=2e-5)
    modules[1].update(accumulated=dict(zero), local=dict(zero))
    nan = dict(modules[0]["local"], diff_at_worst=None, max_abs=None, max_rel=None, mismatched=16)
    modules[0].update(local=nan)
    found = _judge(modules)
    head = next(v for v in found.modules if v.name == "head")
    assert (head.accumulated_text, head.local_text) == ("beyond a zero allowance", "beyond a zero allowance")
    block = next(v for v in found.modules if v.name == "blocks.0")
    assert block.local_text == "not finite"
    pages = _report(tmp_path, _log(modules, []))
    assert "beyond a zero allowance" in pages["report.md"]
    row = next(line for line in pages["report.md"].splitlines() if line.startswith("| `head`"))
    assert "not finite" not in row, row
    # No figure reads as a multiple of the allowance where no number states it.
    assert "local error not finite;" in pages["report.md"]
    assert "finite ×" not in pages["report.md"] and "allowance ×" not in pages["report.md"]
