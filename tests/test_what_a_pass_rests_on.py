"""What a pass rests on, said where it is read. A 'Suitable' whose every passing cell ran as
its reference did (eager, in the reference's dtype, on the reference's device) says so in its
headline: such passes show the computation
repeats and check nothing beyond the reference. Before, a review's run with a zero tolerance,
its bfloat16 mismatches accepted in annotations.toml, read "Suitable for the tested
fixed-shape path: 4 cell(s) in float32, eager ..." with the reason only among the notes, and
the site's index copies only the headline. The logs here are synthetic and say so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.hostile import invoke
from tests.logbuilder import base_events, dumps, finish, with_envelope

REPEATS = "; every passing cell ran as its reference did (eager, in its dtype, on cpu), so the passes show"


def _log(tmp_path: Path, modes: tuple[str, ...]) -> Path:
    events: list[dict[str, Any]] = []
    for event in base_events():
        if event["kind"] == "plan":
            event["matrix"] = [cell for cell in event["matrix"] if cell["mode"] in modes]
        elif "case" in event and not any(event["case"].endswith(f"-{mode}") for mode in modes):
            continue
        events.append(event)
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    return log


def _headline(tmp_path: Path, log: Path) -> str:
    done = invoke(["report", log, "--out", tmp_path / "out", "--format", "md"])
    assert done.code == 0, done.output
    return next(
        line for line in (tmp_path / "out" / "report.md").read_text(encoding="utf-8").splitlines() if "Suitable" in line
    )


def test_a_suitable_resting_only_on_cells_that_repeat_their_reference_says_so(tmp_path: Path) -> None:
    headline = _headline(tmp_path, _log(tmp_path, ("eager",)))
    assert "Suitable for the tested fixed-shape path: 2 cell(s) in float32, eager" in headline, headline
    assert REPEATS in headline and "check nothing beyond the reference" in headline, headline


def test_a_suitable_with_a_compiled_cell_beside_them_reads_as_before(tmp_path: Path) -> None:
    headline = _headline(tmp_path, _log(tmp_path, ("eager", "compiled")))
    assert "Suitable for the tested fixed-shape path: 4 cell(s)" in headline and REPEATS not in headline, headline


def test_a_task_metric_its_module_did_not_name_is_said_to_be_the_plan_s_word_only(tmp_path: Path) -> None:
    """A review: a module without TASK_METRIC ran with no word, and its report named the plan's
    metric as what task_metric() computed. The collector then logs the metric's name as
    'task_metric'; the report now says the metric's identity is the plan's word only."""
    events = base_events()
    for event in events:
        if event["kind"] == "case_result" and event.get("task_metric"):
            event["task_metric"]["name"] = "task_metric"
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    assert invoke(["report", log, "--out", tmp_path / "out", "--format", "md"]).code == 0
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8").replace("\\_", "_")  # Markdown's escapes
    assert "The workload module does not say which metric its task_metric() computes (no TASK_METRIC)" in text
    assert "are 'cosine_to_reference', as the plan's criterion names it, is the plan's word only" in text
    control = tmp_path / "named.jsonl"
    control.write_text(dumps(with_envelope(finish(base_events()))), encoding="utf-8")
    assert invoke(["report", control, "--out", tmp_path / "named", "--format", "md"]).code == 0
    assert "no TASK_METRIC" not in (tmp_path / "named" / "report.md").read_text(encoding="utf-8")
