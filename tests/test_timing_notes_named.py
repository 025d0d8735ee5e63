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
from tests.test_timing_layout_missed import replicate_args

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


def _scaled(tmp_path: Path, name: str, factor: float, edit: Any = None) -> Path:
    def change(event: dict[str, Any]) -> None:
        if edit is not None:
            edit(event)
        if event["kind"] == "timing" and event.get("warm"):
            event["warm"] = scaled_warm(event["warm"], factor / 0.8)  # _copy scales by 0.8 too

    return _copy(tmp_path, name, change)


def test_a_replicate_whose_clock_did_its_stages_otherwise_is_flagged(tmp_path: Path) -> None:
    """Only each side's first run was asked what its warm clock covered: a further replicate
    whose clock copied the output to the host inside it was pooled in the interval, and
    --fail-on worse gated on it (second review of this round, finding 4)."""
    # Samples scaled down only: a loop's wall time must still hold its samples.
    befores = [_scaled(tmp_path, f"b{i}", 0.7 + i / 1000) for i in (1, 2, 3)]
    afters = [_scaled(tmp_path, "a1", 0.9), _scaled(tmp_path, "a2", 0.901, _noted), _scaled(tmp_path, "a3", 0.902)]
    result = RUNNER.invoke(
        main, replicate_args(["diff", "--fail-on", "worse"], befores, afters, ("--before", "--after"))
    )
    timed = [line for line in result.output.splitlines() if " ms -> " in line]
    assert timed and all("different timed region on the after replicate a2 than its first run" in t for t in timed)
    assert result.exit_code == 0, result.output  # nothing judged slower: every ratio is flagged
    out = tmp_path / "cmp"
    args = replicate_args(
        ["compare", "--out", str(out), "--format", "json"], befores, afters, ("--baseline", "--candidate")
    )
    assert RUNNER.invoke(main, args).exit_code == 0
    cells = json.loads((out / "compare.json").read_text(encoding="utf-8"))["cells"]
    flags = [c["timing"]["flags"] for c in cells if (c.get("timing") or {}).get("warm")]
    assert flags and all("different timed region on the candidate replicate a2 than its first run" in f for f in flags)


def test_replicates_of_another_timing_scope_note_are_refused(tmp_path: Path) -> None:
    """A plan's changed timing scope note is named between two runs, but pooled silently among
    replicates (second review of this round, finding 5): replicates are runs of one plan."""
    befores = [_scaled(tmp_path, "b1", 0.7), _scaled(tmp_path, "b2", 0.701, _plan_note)]
    afters = [_scaled(tmp_path, "a1", 0.9), _scaled(tmp_path, "a2", 0.901)]
    result = RUNNER.invoke(
        main,
        ["diff", "--before", str(befores[0]), "--before", str(befores[1])]
        + ["--after", str(afters[0]), "--after", str(afters[1])],
    )
    assert result.exit_code == 2, result.output
    assert "b2 is no replicate of" in result.output and "timing scope note" in result.output


def test_work_done_off_the_clock_is_no_difference_of_what_the_clock_covered(tmp_path: Path) -> None:
    """The collector notes 'freshly prepared inputs are copied to the device off the clock' on
    every device but the host: a CPU run against a CUDA run of a plan timing preprocessing
    flagged every ratio 'different timed region', though both clocks timed the same stages
    (second review of this round, finding 6)."""

    def off_clock(event: dict[str, Any]) -> None:
        if event["kind"] == "timing" and event.get("warm"):
            event["timed_notes"] = ["freshly prepared inputs are copied to the device off the clock"]

    before, after = _copy(tmp_path, "before"), _copy(tmp_path, "after", off_clock)
    text = RUNNER.invoke(main, ["diff", str(before), str(after)]).output
    timed = [line for line in text.splitlines() if " ms -> " in line]
    assert timed and not any("different timed region" in line for line in timed), timed
