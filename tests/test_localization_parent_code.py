"""Error that arises in a parent module's own code (an operation written in its forward, not in
a submodule): the localisation names the two modules around it instead of saying the error
builds up, and a container never called itself is not said to be skipped by the bounds.

The logs are synthetic (tests/logbuilder.py marks their run_start so); the modules' figures
mirror a tiny encoder whose forward scales the embeddings by 1.25 in bfloat16 only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from reportgen.contract.events import Localization
from reportgen.judge.localization import judge_localization
from reportgen.render.report import build_report
from tests.logbuilder import dumps, localized_log

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


def _module(name: str, kind: str, accumulated: float, local: float) -> dict[str, Any]:
    """One localised module; the figures are worst |diff| / allowance (above 1: beyond it)."""
    return {
        "name": name,
        "type": kind,
        "depth": sum(1 for p in name.split(".") if not p.isdigit()),
        "order": 0,
        "calls": 1,
        "accumulated": _stats(accumulated),
        "local": _stats(local),
        "local_compiled": True,  # the localised cell is a compiled one
        "operators": ["aten::addmm"],
    }


def _modules(*rows: tuple[str, str, float, float]) -> list[dict[str, Any]]:
    out = [_module(*row) for row in rows]
    for order, m in enumerate(out):
        m["order"] = order
    return out


# The encoder's forward: embed and pos are within the tolerance, then its own code scales their
# sum before blocks.0, which is far beyond it end to end and within it alone; the rest inherit.
SCALED = _modules(
    ("embed", "Embedding", 0.037, 0.037),
    ("pos", "Embedding", 0.048, 0.048),
    ("blocks.0", "Block", 2.36, 0.126),
    ("blocks.0.lin", "Linear", 3.79, 0.13),
    ("blocks.1", "Block", 2.03, 0.136),
    ("blocks.1.lin", "Linear", 1.3, 0.08),
)
NOT_CALLED = [{"name": "blocks", "reason": "not called by the reference"}]


def _log(modules: list[dict[str, Any]], skipped: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The synthetic localised log with its localization event's modules replaced."""
    events = localized_log()
    event = next(e for e in events if e["kind"] == "localization")
    event.update(modules=modules, skipped=skipped, skipped_more=0)
    return events


def _judge(modules: list[dict[str, Any]], skipped: list[dict[str, str]] = NOT_CALLED) -> Any:
    event = next(e for e in _log(modules, skipped) if e["kind"] == "localization")
    return judge_localization(msgspec.convert(event, Localization))


def test_error_from_the_parents_own_code_names_the_modules_around_it() -> None:
    """Before: "No localised module's own error is beyond the tolerance; the error builds up
    across modules", with blocks.0 and everything after it read as inheriting an error that no
    earlier module had."""
    found = _judge(SCALED)
    assert found.first is None
    assert found.gap is not None and found.gap.before.name == "blocks.0" and found.gap.after == "pos"
    assert found.gap.enclosing is None  # blocks, a ModuleList, never ran: the code is the model's own
    assert found.sentence == (
        "The error arises before blocks.0 (Block), in code no localised module covers"
        " (the model's own forward, between pos and blocks.0): blocks.0 is 2.36 × the allowance end to end"
        " but 0.126 × on its own, while no module before it is above 0.048 × end to end;"
        " the 3 module(s) after it beyond the tolerance end to end only inherit the error."
    )
    roles = {v.name: v.role for v in found.modules}
    assert roles == {
        "embed": "within",
        "pos": "within",
        "blocks.0": "arises before",
        "blocks.0.lin": "inherited",
        "blocks.1": "inherited",
        "blocks.1.lin": "inherited",
    }
    assert found.inherited == ("blocks.0.lin", "blocks.1", "blocks.1.lin")


def test_error_that_grows_step_by_step_still_builds_up() -> None:
    """Each module adds a little to what it is fed: no jump, so no code between modules is blamed."""
    found = _judge(
        _modules(
            ("blocks.0", "Block", 0.4, 0.3),
            ("blocks.1", "Block", 0.8, 0.3),
            ("blocks.2", "Block", 1.2, 0.3),
            ("head", "Linear", 1.5, 0.2),
        ),
        [],
    )
    assert found.gap is None and found.first is None
    assert "the error builds up across modules" in found.sentence
    assert {v.name: v.role for v in found.modules}["blocks.2"] == "inherited"


def test_code_between_two_blocks_is_placed_after_the_whole_block_not_its_last_layer() -> None:
    found = _judge(
        _modules(
            ("blocks.0", "Block", 0.05, 0.05),
            ("blocks.0.lin", "Linear", 0.04, 0.04),
            ("blocks.0.norm", "LayerNorm", 0.05, 0.05),
            ("blocks.1", "Block", 3.0, 0.1),
            ("blocks.1.lin", "Linear", 2.5, 0.1),
        )
    )
    assert found.gap is not None and found.gap.after == "blocks.0" and found.gap.before.name == "blocks.1"
    assert "(the model's own forward, between blocks.0 and blocks.1)" in found.sentence


def test_code_in_a_called_parent_names_that_parent() -> None:
    """Inside encoder, which ran (its own error hidden by what follows): its forward holds the code."""
    found = _judge(
        _modules(
            ("encoder", "Encoder", 0.5, 0.5),
            ("encoder.embed", "Embedding", 0.02, 0.02),
            ("encoder.layer", "Block", 4.0, 0.1),
        ),
        [],
    )
    assert found.gap is not None and found.gap.enclosing == "encoder"
    assert "(encoder's own forward, between encoder.embed and encoder.layer)" in found.sentence
    opening = _judge(_modules(("encoder", "Encoder", 0.5, 0.5), ("encoder.layer", "Block", 4.0, 0.1)), [])
    assert opening.gap is not None and opening.gap.after is None
    assert "(encoder's own forward, before encoder.layer)" in opening.sentence


def test_a_module_with_its_own_error_after_the_gap_is_named_as_later() -> None:
    found = _judge(
        _modules(("pos", "Embedding", 0.05, 0.05), ("blocks.0", "Block", 5.0, 0.1), ("head", "Linear", 40.0, 20.0))
    )
    assert found.first is not None and found.first.name == "head"
    assert found.gap is not None and found.gap.before.name == "blocks.0"
    assert found.sentence.startswith("The error arises before blocks.0 (Block)")
    assert "; later, head (Linear) adds its own error, local error 20 × the allowance." in found.sentence


def test_a_container_never_called_is_not_said_to_be_skipped_by_the_bounds(tmp_path: Path) -> None:
    """Before: "Skipped by the bounds: blocks (not called by the reference)" for a ModuleList no
    bound left out. The report now says so in both views, and names a bound's skips apart."""
    skipped = NOT_CALLED + [{"name": "head", "reason": "max_modules"}]
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(_log(SCALED, skipped)), encoding="utf-8")
    assert json.loads(log.read_text(encoding="utf-8").splitlines()[0])["origin"] == "synthetic"
    build_report(log, tmp_path / "out", formats=("md", "html"))
    for name in ("report.md", "report.html"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert "builds up" not in text, name
        assert "The error arises before blocks.0 (Block), in code no localised module covers" in text, name
        assert "Skipped by the bounds: head (max" in text, name  # max_modules; Markdown escapes the underscore
        assert "Never called itself in the reference run, so not measured" in text, name
        assert "not called by the reference" not in text, name
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert (
        "| `blocks.0` | Block | 2.36 ✘ | 0.126 (compiled alone) | error arises before it, in code no localised module covers |"
        in md
    )
