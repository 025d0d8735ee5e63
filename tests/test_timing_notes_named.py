"""How a run timed its stages is named before any ratio (outside review of comparisons, finding 4):
a warm loop whose timed_notes say the output was copied to the host inside the clock, and a plan
whose timing scope note changed, were both shown on the run's page but named by neither diff
nor compare, which said "faster" over them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reportgen.cli import main
from tests.conftest import REPO
from tests.logbuilder import scaled_warm

RUNNER = CliRunner()
SAMPLE = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl"
COPIED = "the output is copied to the host inside the timed region"


def _copy(tmp_path: Path, name: str, edit: Any = None) -> Path:
    events = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    events[0]["run_id"] = name
    for event in events:
        if edit is not None:  # the after run, its every warm call 0.8 times the before's (no copy)
            edit(event)
            if event["kind"] == "timing" and event.get("warm"):
                event["warm"] = scaled_warm(event["warm"], 0.8)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return folder


def _noted(event: dict[str, Any]) -> None:
    if event["kind"] == "timing" and event.get("warm"):
        event["timed_notes"] = [COPIED]


def _plan_note(event: dict[str, Any]) -> None:
    if event["kind"] == "plan":
        event["timing_scope"]["note"] = "includes tokenization"


def test_diff_and_compare_flag_a_warm_clock_that_did_its_stages_otherwise(tmp_path: Path) -> None:
    before, after = _copy(tmp_path, "before"), _copy(tmp_path, "after", _noted)
    assert RUNNER.invoke(main, ["validate", str(after)]).exit_code == 0
    text = RUNNER.invoke(main, ["diff", str(before), str(after)]).output
    timed = [line for line in text.splitlines() if " ms -> " in line]
    assert timed and all(f"after: model_call ({COPIED})" in line and "no verdict" in line for line in timed), timed
    out = tmp_path / "cmp"
    assert (
        RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "json"]).exit_code == 0
    )
    cells = json.loads((out / "compare.json").read_text(encoding="utf-8"))["cells"]
    timed = [c["timing"] for c in cells if (c.get("timing") or {}).get("warm")]
    assert timed and all(any(COPIED in f for f in t["flags"]) and not t["in_geomean"] for t in timed), timed


def test_diff_names_a_changed_timing_scope_note_among_the_criteria(tmp_path: Path) -> None:
    before, after = _copy(tmp_path, "before"), _copy(tmp_path, "after", _plan_note)
    text = RUNNER.invoke(main, ["diff", str(before), str(after)]).output
    head = text[: text.index("disposition:")]
    assert "criteria changes: 1" in head and "timing scope note now includes tokenization" in head, head
