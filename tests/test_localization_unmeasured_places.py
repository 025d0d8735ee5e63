"""A localisation names only a place its figures measured.

Found by a review of "where it diverges" (the runs it made by hand are mirrored here as synthetic
logs, tests/logbuilder.py marks their run_start so):

* every module that could not run alone has no local figure: the report said "Every localised
  module is within the tolerance, end to end too" above a table showing three modules 9-14 times
  beyond it end to end, and compare said "no module's own error beyond the tolerance";
* only the module where the error arose had no local figure: the report said "the error builds up
  across modules";
* the error arose in code between two modules (a gap) and a later module added a small error of
  its own: the headline and compare named the later module as the first diverging one;
* the modules ``max_modules`` cut were said to be "possibly before" the module named, though the
  collector keeps the first modules of the reference's execution order and cuts the later ones;
* a long event of modules each called twice took quadratic time to read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reportgen.judge import localization
from reportgen.judge.disposition import diverging_modules
from reportgen.judge.localization import ModuleVerdict
from reportgen.model.runmodel import read_run
from tests.test_localization_honesty import _judge, _log, _modules, _report

NOT_ALONE = "local: could not be compiled alone: the module reads its parent's state"


def _without_local(modules: list[dict[str, Any]], *names: str) -> list[dict[str, Any]]:
    """The modules, those named (all where none is) with no local figure, as the collector writes
    a module that cannot be run or compiled alone."""
    for m in modules:
        if not names or m["name"] in names:
            m.update(local=None, note=NOT_ALONE)
            m.pop("local_compiled")
    return modules


def _no_local_anywhere() -> list[dict[str, Any]]:
    return _without_local(
        _modules(
            ("blocks.0", "Block", 0.2, 0.0, 1),
            ("blocks.1", "Block", 9.91, 0.0, 1),
            ("blocks.2", "Block", 14.3, 0.0, 1),
            ("head", "Linear", 8.56, 0.0, 1),
        )
    )


def test_modules_beyond_the_tolerance_end_to_end_without_a_local_figure_are_not_called_within_it(
    tmp_path: Path,
) -> None:
    found = _judge(_no_local_anywhere())
    assert found.first is None and found.gap is None
    assert found.unlocal is not None and found.unlocal.name == "blocks.1"
    assert found.sentence.startswith(
        "blocks.1 (Block) is the first localised module beyond the tolerance end to end, 9.91 × the allowance,"
        f" and its own (local) error was not measured ({NOT_ALONE}); nor was that of blocks.0 before it:"
        " the error arises in it or before it"
    )
    assert "within the tolerance, end to end too" not in found.sentence
    assert found.brief == (
        "blocks.1 (Block) is the first beyond the tolerance end to end (9.91 ×); its own error was not measured"
    )
    pages = _report(tmp_path, _log(_no_local_anywhere(), []))
    for name, text in pages.items():
        assert "end to end too" not in text, name
        assert "is the first localised module beyond the tolerance end to end" in text, name
        assert "Where the error arises, from the localisation" in text, name


def test_an_error_at_the_one_module_without_a_local_figure_is_not_said_to_build_up() -> None:
    rows = _without_local(
        _modules(
            ("blocks.0", "Block", 0.1, 0.1, 1),
            ("blocks.1", "Block", 0.2, 0.2, 1),
            ("blocks.2", "Block", 1000.0, 0.0, 1),
            ("head", "Linear", 1000.0, 0.1, 1),
        ),
        "blocks.2",
    )
    found = _judge(rows)
    assert found.unlocal is not None and found.unlocal.name == "blocks.2"
    assert "builds up" not in found.sentence
    assert found.sentence.startswith("blocks.2 (Block) is the first localised module beyond the tolerance end to end")
    assert "nor was that of" not in found.sentence  # every module before it was measured on its own
    # With a local figure within the tolerance, the same figures do read as error building up.
    measured = _judge(
        _modules(
            ("blocks.0", "Block", 0.1, 0.1, 1),
            ("blocks.1", "Block", 0.6, 0.2, 1),
            ("blocks.2", "Block", 1.5, 0.5, 1),
        )
    )
    assert measured.unlocal is None and "the error builds up across modules" in measured.sentence


def _gap_then_own() -> list[dict[str, Any]]:
    """The error arises in the model's own forward before blocks.1 (20.8x end to end, 0.1x on its
    own); head later adds a small error of its own (5.94x locally)."""
    return _modules(
        ("blocks.0", "Block", 0.1, 0.1, 1),
        ("blocks.1", "Block", 20.8, 0.1, 1),
        ("blocks.2", "Block", 21.0, 0.2, 1),
        ("head", "Linear", 25.0, 5.94, 1),
    )


CONTAINER = [{"name": "blocks", "reason": "not called by the reference"}]  # a ModuleList: its members are called


def test_error_arising_between_modules_is_the_place_named_before_a_later_module_s_own_error(tmp_path: Path) -> None:
    found = _judge(_gap_then_own(), CONTAINER)
    assert found.gap is not None and found.gap.before.name == "blocks.1"
    assert found.first is not None and found.first.name == "head"
    roles = {v.name: v.role for v in found.modules}
    assert roles["head"] == "own error"  # not the "first diverging module": the error arose before it
    assert found.brief == (
        "arises before blocks.1 (Block), in code no localised module covers"
        " (the model's own forward, between blocks.0 and blocks.1); later, head adds its own"
    )
    pages = _report(tmp_path, _log(_gap_then_own(), CONTAINER))
    md = pages["report.md"]
    assert "First diverging module, from the localisation" not in md
    assert "Where the error arises, from the localisation: " in md
    assert "| `head` | Linear | 25 ✘ | 5.94 (compiled alone) ✘ | own error |" in md


def test_the_headline_keeps_naming_the_first_diverging_module_where_there_is_one(tmp_path: Path) -> None:
    rows = _modules(("blocks.0", "Block", 0.1, 0.1, 1), ("blocks.1", "Block", 9.0, 8.0, 1))
    reading, builder = read_run(_write(tmp_path, _log(rows, [])))
    run = builder.build(reading)
    sentence = diverging_modules(run.with_status("mismatch"))
    assert sentence.startswith(" First diverging module, from the localisation: ")
    assert ": blocks.1 (Block; operators of an eager call aten::addmm)" in sentence


def _write(tmp_path: Path, events: list[dict[str, Any]]) -> Path:
    from tests.logbuilder import dumps

    log = tmp_path / "events.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    return log


def test_modules_max_modules_cut_ran_after_every_measured_one_and_are_not_said_to_come_before() -> None:
    rows = _modules(
        ("blocks.0", "Block", 9.0, 9.0, 1),
        ("blocks.0.scale", "Scale", 9.0, 9.0, 1),
        ("blocks.1", "Block", 9.0, 0.1, 1),
    )
    skipped = [{"name": n, "reason": "max_modules"} for n in ("blocks.1.fc", "blocks.1.scale", "head")]
    skipped.append({"name": "blocks.2", "reason": "max_bytes"})
    found = _judge(rows, skipped, max_modules=3)
    assert found.first is not None and found.first.name == "blocks.0.scale"
    assert found.unmeasured == ("blocks.2",)  # a capture past max_bytes may have run anywhere
    assert found.sentence.endswith("; not measured, and possibly before it: blocks.2.")
    assert "head" not in found.sentence


class _CountingName(str):
    """A module name that counts the prefix tests made on it."""

    tests = 0

    def startswith(self, *args: Any) -> bool:  # type: ignore[override]
        _CountingName.tests += 1
        return super().startswith(*args)


def test_modules_called_more_than_once_are_listed_in_time_linear_in_the_modules() -> None:
    """Each module was tested against every module listed before it: 14,000 modules called twice
    took 196 million prefix tests (23 s for one report). Counted, not timed."""
    count = 3000
    verdicts = [
        ModuleVerdict(_CountingName(f"layers.{i}"), "Leaf", 1, 2, 0.1, 0.1, None, None, "within", None)
        for i in range(count)
    ]
    _CountingName.tests = 0
    found = localization._repeated(verdicts, None)
    assert len(found) == count
    assert _CountingName.tests <= 2 * count


def test_a_later_module_without_a_local_figure_is_named_beside_the_build_up() -> None:
    """A second review: blocks.1 is 1.2x end to end and 0.9x on its own; blocks.2, which could
    not be compiled alone, is 1000x end to end. The report said the error builds up across
    modules, though nothing measured blocks.2's own error."""
    rows = _without_local(
        _modules(
            ("blocks.0", "Block", 0.1, 0.1, 1),
            ("blocks.1", "Block", 1.2, 0.9, 1),
            ("blocks.2", "Block", 1000.0, 0.0, 1),
        ),
        "blocks.2",
    )
    found = _judge(rows)
    assert found.unlocal is not None and found.unlocal.name == "blocks.2"
    assert found.first_beyond is not None and found.first_beyond.name == "blocks.1"
    assert found.sentence.startswith(
        "No module whose own error was measured is beyond the tolerance; blocks.1 is the first beyond it end to end,"
        " 1.2 × the allowance (its own error 0.9 ×): the error builds up from blocks.1 on. blocks.2 (Block), 1e+03 ×"
        " end to end, has no local figure"
    )
    assert found.sentence.endswith("it may add error of its own.")
    assert (
        found.brief == "builds up from blocks.1 on; blocks.2 (Block), whose own error was not measured, may add to it"
    )
    # A third review: blocks.2 carrying less than blocks.1 cannot be where the error arises: it may add to it.


def test_a_module_without_a_local_figure_leads_beside_a_module_only_the_candidate_called() -> None:
    """A second review: the headline said blocks.1's own error was not measured, the section
    that no localised module's own error is beyond the tolerance."""
    rows = _without_local(_modules(("blocks.0", "Block", 0.1, 0.1, 1), ("blocks.1", "Block", 50.0, 0.0, 1)), "blocks.1")
    found = _judge(rows, [{"name": "blocks.1.alt", "reason": localization.CANDIDATE_ONLY}])
    assert found.sentence.startswith("blocks.1 (Block) is the first localised module beyond the tolerance end to end")
    assert "The candidate called blocks.1.alt, which the reference never called" in found.sentence
    assert "no localised module's own error is beyond the tolerance" not in found.sentence


def test_a_module_with_no_figure_at_all_is_named_beside_the_build_up() -> None:
    """A third review: a module after the first one beyond the tolerance had neither figure (its
    output not comparable), and the sentence said no localised module's own error was beyond it."""
    rows = _modules(
        ("blocks.0", "Block", 0.1, 0.1, 1),
        ("blocks.1", "Block", 3.0, 0.9, 1),
        ("blocks.2", "Block", 3.1, 0.2, 1),
    )
    rows[2].update(accumulated=None, local=None, note="accumulated: not comparable with the reference module's output")
    rows[2].pop("local_compiled")
    found = _judge(rows)
    assert found.sentence.startswith(
        "No measured module's own error is beyond the tolerance (not measured on their own: blocks.2);"
        " the error builds up across modules"
    )
    candidate = _judge(rows, [{"name": "blocks.9", "reason": localization.CANDIDATE_ONLY}])
    assert "; no measured module's own error is beyond the tolerance (not measured on their own: blocks.2)." in (
        candidate.sentence
    )
