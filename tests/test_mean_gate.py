"""A geometric mean judged slower is a slower timing to diff's summary and to its strict gate,
also where the ratios are of several quantities and each series has its own mean (a generation
workload's time to first token and decode per token, not pooled)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reportgen.cli import main
from tests.logbuilder import _warm, dumps, generation_timing_log, timing_log, tokens_per_s

RUNNER = CliRunner()


def _pair(root: Path, events: list[dict[str, Any]], slower: float) -> tuple[Path, Path]:
    """The run, and the same run with every warm sample in reverse order and the warm call's
    (or decode per token's) samples ``slower`` times longer: a change too small for any one
    cell's interval to exclude 1, alike in every cell, so their mean's interval does."""
    after = json.loads(json.dumps(events))
    after[0].update(run_id="scaled", origin_note=f"Synthetic: the warm samples reversed and scaled by {slower}.")
    for event in after:
        timing = event.get("timing") if event["kind"] == "generation" else None
        if timing:
            timing["decode_token"] = _warm([s * slower for s in timing["decode_token"]["samples_s"][::-1]])
            timing["ttft_warm"] = _warm(timing["ttft_warm"]["samples_s"][::-1])
            timing["tokens_per_s"] = tokens_per_s(timing)
        elif event["kind"] == "timing" and "warm" in event:
            event["warm"] = _warm([s * slower for s in event["warm"]["samples_s"][::-1]])
    paths = []
    for side, side_events in (("before", events), ("after", after)):
        path = root / side / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(side_events), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def _diff(before: Path, after: Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    result = RUNNER.invoke(main, ["diff", str(before), str(after), *args])
    data = json.loads(RUNNER.invoke(main, ["diff", str(before), str(after), "--format", "json"]).output)
    return result.exit_code, result.output, data


def test_each_series_mean_judged_slower_fails_the_strict_gate_as_a_pooled_one_does(tmp_path: Path) -> None:
    # Each series has its own mean here (not pooled); the gate read the pooled mean only, so a
    # decode per token judged slower passed `--fail-on undecided` (exit 0, nothing said).
    before, after = _pair(tmp_path, generation_timing_log("generation", seed=1), 1.0038)
    code, output, data = _diff(before, after, "--fail-on", "undecided")
    assert data["geomean"] is None and "not pooled" in data["geomean_unpooled"]
    assert not [t for t in data["timings"] if t["verdict"] in ("faster", "slower")], "no one series changed clearly"
    assert code == 3, output
    assert "the geometric mean of decode per token judged slower with one run a side" in output
    assert [m["quantity"] for m in data["geomean_series"]] == ["decode per token", "first token, warm"]
    assert data["geomean_series"][0]["verdict"] == "slower"
    # compare.json gives each series' own mean too, with its verdict (it gave the words only).
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    compared = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert compared["geomean"] is None and "not pooled" in compared["geomean_unpooled"]
    assert [(m["quantity"], m["verdict"]) for m in compared["geomean_series"]] == [
        (m["quantity"], m["verdict"]) for m in data["geomean_series"]
    ]
    # The summary does not say "no clear change" above a mean judged slower.
    assert (
        "no clear change in any one timing, but the geometric mean of decode per token is judged slower"
        in (data["summary"])
    )


def test_a_pooled_mean_judged_slower_is_not_summed_up_as_no_clear_change(tmp_path: Path) -> None:
    before, after = _pair(tmp_path, timing_log("timed", seed=1), 1.003)
    code, output, data = _diff(before, after, "--fail-on", "undecided")
    assert data["geomean"]["verdict"] == "slower"
    assert not [t for t in data["timings"] if t["verdict"] in ("faster", "slower")]
    assert code == 3 and "the geometric mean judged slower with one run a side" in output
    assert data["summary"].endswith("no clear change in any one timing, but the geometric mean is judged slower")
    # With nothing judged slower on average, the words stay as they were.
    unchanged = tmp_path / "same"
    same_before, same_after = _pair(unchanged, timing_log("timed", seed=1), 1.0)
    code, output, data = _diff(same_before, same_after, "--fail-on", "undecided")
    assert code == 0, output
    assert data["summary"].endswith("; no clear change")
