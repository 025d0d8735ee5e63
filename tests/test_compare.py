"""`reportgen compare`: interval verdicts on known sample distributions, refusals, flags, the sample."""

from __future__ import annotations

import csv
import json
import math
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.judge.ratio_words import estimate_text, interval_text
from reportgen.judge.intervals import (
    classify,
    geometric_mean,
    interval_words,
    ratio_intervals,
    speed_words,
)
from reportgen.render.compare import gather
from tests.conftest import REPO
from tests.logbuilder import _cells, _warm, case_key, dumps, scaled_warm, timing_log
from tests.tolerance import data_difference, text_difference

SAMPLES = REPO / "sample_runs"


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _pair(tmp_path: Path, noise: float, scale: float = 1.1, seed: int = 0) -> tuple[Path, Path]:
    base = _write(tmp_path, "base", timing_log("synthetic-base", scale=1.0, noise=noise, seed=seed))
    cand = _write(
        tmp_path,
        "cand",
        timing_log("synthetic-cand", target="cuda", family="cuda", scale=scale, noise=noise, seed=seed + 1),
    )
    return base, cand


def _edit(path: Path, change: Any) -> None:
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    change(events)
    path.write_text(dumps(events), encoding="utf-8")


# --- the interval and its verdicts -------------------------------------------------------------


def _draw(rng: random.Random, scale: float, noise: float, n: int = 30) -> list[float]:
    return [max(1e-3 * scale * (1 + noise * rng.gauss(0, 1)), 5e-5) for _ in range(n)]


def test_ten_percent_slowdown_with_small_noise_is_slower() -> None:
    rng = random.Random(1)
    (result,) = ratio_intervals([(_draw(rng, 1.0, 0.01), _draw(rng, 1.1, 0.01))])
    assert result.verdict == "slower"
    assert 1.0 < result.low < 1.1 < result.high < 1.2  # type: ignore[operator]


def test_same_shift_inside_large_noise_is_no_clear_difference() -> None:
    rng = random.Random(1)
    (result,) = ratio_intervals([(_draw(rng, 1.0, 0.4), _draw(rng, 1.1, 0.4))])
    assert result.verdict == "no clear difference"
    assert result.low < 1.0 < result.high  # type: ignore[operator]


def test_verdict_rates_over_many_draws() -> None:
    """Not one lucky seed: over 200 seeded draws of 30 samples a side, a 10% shift is 'slower'
    every time in 1% noise, and 'no clear difference' in most draws inside 50% noise."""
    rng = random.Random(11)
    small = ratio_intervals([(_draw(rng, 1.0, 0.01), _draw(rng, 1.1, 0.01)) for _ in range(200)])
    large = ratio_intervals([(_draw(rng, 1.0, 0.5), _draw(rng, 1.1, 0.5)) for _ in range(200)])
    assert all(r.verdict == "slower" for r in small)
    unclear = sum(r.verdict == "no clear difference" for r in large)
    assert unclear >= 140, f"only {unclear} of 200 draws inside large noise were 'no clear difference'"
    assert sum(r.verdict == "faster" for r in large) <= 5


def test_a_speedup_is_faster_and_the_interval_covers_the_true_ratio() -> None:
    rng = random.Random(7)
    covered = 0
    for _ in range(200):
        (result,) = ratio_intervals([(_draw(rng, 1.0, 0.05), _draw(rng, 0.5, 0.05))])
        assert result.verdict == "faster"
        covered += result.low <= 0.5 <= result.high  # type: ignore[operator]
    assert covered >= 180, f"a 95% interval covered the true ratio in only {covered} of 200 draws"


def test_too_few_samples_give_no_interval_and_no_verdict() -> None:
    (result,) = ratio_intervals([([1.0], [2.0])])
    assert (result.low, result.high, result.verdict) == (None, None, "no clear difference")
    assert (
        classify(1.01, 1.2) == "slower"
        and classify(0.5, 0.99) == "faster"
        and classify(0.9, 1.1) == "no clear difference"
    )
    with pytest.raises(ValueError):
        ratio_intervals([([0.0, 1.0], [1.0, 1.0])])


def test_cells_are_computed_in_groups_but_answered_in_order() -> None:
    rng = random.Random(3)
    pairs = [
        (_draw(rng, 1.0, 0.01, n), _draw(rng, s, 0.01, n)) for n, s in ((30, 2.0), (10, 0.5), (30, 1.0), (10, 4.0))
    ]
    results = ratio_intervals(pairs)
    assert [round(r.ratio) if r.ratio > 1.5 else round(r.ratio, 1) for r in results] == [2, 0.5, 1.0, 4]
    assert [r.baseline_samples for r in results] == [30, 10, 30, 10]
    geo = geometric_mean(results)
    assert geo is not None and geo.ratios == 4
    assert math.isclose(geo.ratio, math.prod(r.ratio for r in results) ** 0.25)
    assert geo.low < geo.ratio < geo.high  # type: ignore[operator]


# --- the command on synthetic logs -----------------------------------------------------------


def test_compare_slowdown_small_noise(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    result = CliRunner().invoke(
        main,
        ["compare", str(base.parent), str(cand.parent), "--out", str(tmp_path / "out"), "--format", "html,md,json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "out" / "compare.json").read_text(encoding="utf-8"))
    assert {cell["timing"]["verdict"] for cell in data["cells"]} == {"slower"}
    assert data["geomean"]["verdict"] == "slower" and data["geomean"]["cells"] == 4
    assert 1.05 < data["geomean"]["ratio"] < 1.15
    assert "4 of 4 cells comparable; all 4 correct on both; 1.1x slower (geomean of 4 cells" in result.output
    html = (tmp_path / "out" / "compare.html").read_text(encoding="utf-8")
    md = (tmp_path / "out" / "compare.md").read_text(encoding="utf-8")
    for page in (html, md):
        assert "Synthetic fixture" in page and "slower" in page and "Neither run is a Neuron or Trainium result" in page
    assert (
        "compile + first result per new shape on a cache miss: candidate (cuda) 5 s (median of 2 shapes) against baseline (cpu)"
        in data["headline"]
    )


def test_compare_same_shift_in_large_noise_decides_nothing(tmp_path: Path) -> None:
    # Samples spread by half their value are unstable timings (collector/stability.py: IQR over
    # the median far above its threshold): no cell is faster, slower or "no clear difference",
    # none enters the geometric mean, and the headline counts them.
    base, cand = _pair(tmp_path, noise=0.5)
    comparison = gather(base, cand)
    verdicts = {cell.case: cell.timing.verdict for cell in comparison.cells if cell.timing}
    assert set(verdicts.values()) == {"unstable timing"}, verdicts
    for cell in comparison.timed:
        assert any(f.startswith("unstable timing: ") and "spread" in f for f in cell.timing.flags), cell.timing.flags  # type: ignore[union-attr]
        assert not cell.timing.in_geomean  # type: ignore[union-attr]
    assert comparison.geomean is None
    assert comparison.verdict_counts() == {
        "faster": 0,
        "slower": 0,
        "no clear difference": 0,
        "unstable timing": 4,
        "timing not classified": 0,
        "flagged, not judged": 0,
    }
    assert "4 cells with unstable timing left out of every verdict" in comparison.headline


def test_one_unstable_side_leaves_that_cell_out_and_names_it(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)

    def bimodal(events: list[dict[str, Any]]) -> None:
        timing = next(e for e in events if e["kind"] == "timing" and e.get("warm"))
        timing["warm"] = _warm([s * (30 if i % 3 == 0 else 1) for i, s in enumerate(timing["warm"]["samples_s"])])

    _edit(cand, bimodal)
    comparison = gather(base, cand)
    (unstable,) = comparison.unstable
    assert (
        unstable.timing is not None
        and "bimodality" in "; ".join(unstable.timing.flags)
        and "on the candidate" in "; ".join(unstable.timing.flags)
    )
    assert comparison.verdict_counts() == {
        "faster": 0,
        "slower": 3,
        "no clear difference": 0,
        "unstable timing": 1,
        "timing not classified": 0,
        "flagged, not judged": 0,
    }
    assert comparison.geomean is not None and comparison.geomean.ratios == 3
    assert "1 cell with unstable timing left out of every verdict" in comparison.headline


def _refused(tmp_path: Path, change: Any, side: str = "cand") -> str:
    base, cand = _pair(tmp_path, noise=0.01)
    _edit(cand if side == "cand" else base, change)
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "out").exists(), "nothing is written for a refused pair"
    return result.output


def test_refuses_different_workloads(tmp_path: Path) -> None:
    def other(events: list[dict[str, Any]]) -> None:
        events[0]["workload"] = "minilm"

    assert "refused: different workloads: baseline 'tiny-encoder', candidate 'minilm'" in _refused(tmp_path, other)


def test_refuses_different_model_revisions(tmp_path: Path) -> None:
    def other(events: list[dict[str, Any]]) -> None:
        next(e for e in events if e["kind"] == "plan")["model_revision"] = "tiny-encoder seed 1"

    assert "refused: different model revisions" in _refused(tmp_path, other)


def _inputs_content(digest: str) -> Any:
    def change(events: list[dict[str, Any]]) -> None:
        artifact = next(e for e in events if e["kind"] == "artifact" and e["role"] == "inputs")
        artifact["content_sha256"], artifact["sha256"] = digest, digest

    return change


def test_refuses_when_no_cell_shares_inputs(tmp_path: Path) -> None:
    """Both logs hash their inputs by content, and the hashes differ."""
    base, cand = _pair(tmp_path, noise=0.01)
    _edit(base, _inputs_content("a" * 64))
    _edit(cand, _inputs_content("f" * 64))
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "refused: no cell shares its inputs on both sides (different inputs by content)" in result.output


def test_inputs_files_that_differ_in_bytes_but_not_content_compare(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    _edit(base, _inputs_content("a" * 64))
    _edit(cand, _inputs_content("a" * 64))
    _edit(
        cand,
        lambda events: next(e for e in events if e["kind"] == "artifact" and e["role"] == "inputs").update(
            sha256="f" * 64
        ),
    )
    comparison = gather(base, cand)
    assert len(comparison.cells) == 4 and not comparison.declared_identity
    assert "4 compared cell(s): the same by content sha256" in " ".join(comparison.notes)


def test_old_logs_with_other_inputs_files_compare_by_declaration_and_say_so(tmp_path: Path) -> None:
    """Logs without content hashes whose inputs files differ in bytes: the same planned cells
    of one workload are compared, named as identified by declaration only."""
    base, cand = _pair(tmp_path, noise=0.01)
    _edit(
        cand,
        lambda events: next(e for e in events if e["kind"] == "artifact" and e["role"] == "inputs").update(
            sha256="f" * 64
        ),
    )
    comparison = gather(base, cand)
    assert len(comparison.cells) == 4 and comparison.declared_identity
    assert "by declaration only, not verified" in comparison.headline
    assert any(
        note.startswith("4 of 4 compared cell(s): inputs identified by declaration only") for note in comparison.notes
    )


def _weights(content: str | None, sha: str, path: str = "artifacts/weights.pt") -> Any:
    def change(events: list[dict[str, Any]]) -> None:
        plan = next(e for e in events if e["kind"] == "plan")
        plan["weights_sha256"] = sha
        if content:
            plan["weights_content_sha256"] = content
        artifact = next((e for e in events if e["kind"] == "artifact" and e["role"] == "weights"), None)
        if artifact is None:
            artifact = {
                "schema_version": plan["schema_version"],
                "kind": "artifact",
                "role": "weights",
                "bytes": 1,
                "time": plan["time"],
            }
            events.insert(events.index(plan) + 1, artifact)
            for seq, event in enumerate(events):
                event["seq"] = seq
        artifact.update(sha256=sha, path=path)

    return change


def test_references_identical_by_content_though_their_files_differ(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)

    def reference(sha: str) -> Any:
        def change(events: list[dict[str, Any]]) -> None:
            found = next((e for e in events if e["kind"] == "artifact" and e["role"] == "reference_output"), None)
            if found is None:
                plan = next(e for e in events if e["kind"] == "plan")
                found = {
                    "schema_version": plan["schema_version"],
                    "kind": "artifact",
                    "role": "reference_output",
                    "path": "artifacts/reference.pt",
                    "bytes": 1,
                    "time": plan["time"],
                }
                events.insert(events.index(plan) + 1, found)
                for seq, event in enumerate(events):
                    event["seq"] = seq
            matrix = next(e for e in events if e["kind"] == "plan")["matrix"]
            found.update(
                sha256=sha, content_by_key={f"b{c['batch']}-l{c['length']}-{c['layout']}": "c" * 64 for c in matrix}
            )

        return change

    # One side saved none: the same device and dtype are no agreement of values (it read "yes").
    _edit(base, reference("1" * 64))
    comparison = gather(base, cand)
    assert {(c.reference.agree, c.reference.text.split("; ", 1)[1]) for c in comparison.cells} == {
        (None, "not measured: no saved reference outputs on the candidate")
    }
    _edit(cand, reference("2" * 64))
    comparison = gather(base, cand)
    assert all("identical by content (sha256)" in c.reference.text for c in comparison.cells), {
        c.reference.text for c in comparison.cells
    }


def test_weights_content_decides_over_file_bytes(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    _edit(base, _weights("c" * 64, "1" * 64))
    _edit(cand, _weights("c" * 64, "2" * 64))
    comparison = gather(base, cand)
    assert comparison.notes[0].startswith("Same weights by content (sha256 cccccccccccc...")
    _edit(cand, _weights("d" * 64, "1" * 64))  # same file bytes claimed, other content: content decides
    assert "refused: different weights by content" in _refused_pair(tmp_path, base, cand)


def test_old_logs_weights_by_declaration_and_shipped_files_by_bytes(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    _edit(base, _weights(None, "1" * 64))
    _edit(cand, _weights(None, "2" * 64))
    comparison = gather(base, cand)
    assert comparison.declared_identity and comparison.notes[0].startswith(
        "Weights identified by declaration only, not verified"
    )
    # A shipped weights file is that file: other bytes are other weights.
    _edit(cand, _weights(None, "2" * 64, "external:/models/w.safetensors"))
    assert "refused: different weights files" in _refused_pair(tmp_path, base, cand)


def _refused_pair(tmp_path: Path, base: Path, cand: Path) -> str:
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "refused")])
    assert result.exit_code == 2, result.output
    return result.output


def test_the_two_shipped_tiny_encoder_cpu_runs_compare() -> None:
    """Written by two collector generations before content hashes, their weight files differ in
    bytes: compared, by the declared seeded weights, and the pages say so."""
    old, new = (
        REPO / "sample_runs" / name
        for name in ("tiny-encoder-cpu-20261129T225221Z-23a8e6", "tiny-encoder-cpu-20261130T101022Z-393b16")
    )
    comparison = gather(old, new)
    assert comparison.cells and comparison.declared_identity
    assert "model revision 'tiny-encoder v1 (2 layers, d=32, 4 heads, vocab 101, init seed 0)'" in comparison.notes[0]


def test_cells_with_other_inputs_are_listed_not_compared(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    odd = case_key(2, 16, "eager")

    def per_cell(events: list[dict[str, Any]]) -> None:
        shared = next(e for e in events if e["kind"] == "artifact" and e["role"] == "inputs")
        events.insert(events.index(shared) + 1, dict(shared, case=odd, sha256="e" * 64, path="artifacts/b2-eager.pt"))
        for seq, event in enumerate(events):
            event["seq"] = seq

    _edit(cand, per_cell)
    for path in (base, cand):
        _edit(
            path,
            lambda events: [
                e.update(content_sha256=e["sha256"])
                for e in events
                if e["kind"] == "artifact" and e["role"] == "inputs"
            ],
        )
    comparison = gather(base, cand)
    assert [(n.case, n.reason.split(":")[0]) for n in comparison.not_comparable] == [
        (odd, "different inputs by content")
    ]
    assert odd not in {c.case for c in comparison.cells} and len(comparison.cells) == 3
    assert "3 of 4 cells comparable" in comparison.headline


def test_flagged_cells_are_left_out_of_the_geomean(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    fell, limited, scoped = case_key(1, 16, "eager"), case_key(1, 16, "compiled"), case_key(2, 16, "eager")

    def flag(events: list[dict[str, Any]]) -> None:
        next(e for e in _cells(events, "operators") if e["case"] == fell)["fallback"] = {
            "status": "measured",
            "items": ["aten::foo"],
        }
        next(e for e in _cells(events, "compile") if e["case"] == limited)["recompile_limit_hit"] = True
        next(e for e in _cells(events, "timing") if e["case"] == scoped)["scope"] = dict(
            next(e for e in _cells(events, "timing") if e["case"] == scoped)["scope"], host_to_device=True
        )

    _edit(cand, flag)
    comparison = gather(base, cand)
    flags = {c.case: c.timing.flags for c in comparison.cells if c.timing and c.timing.flags}
    assert flags == {
        fell: ("includes CPU fallback on the candidate",),
        limited: ("recompile limit hit on the candidate",),
        scoped: ("different timing scope",),
    }
    assert comparison.geomean is not None and comparison.geomean.ratios == 1
    assert "geomean of 1 cell," in comparison.headline


def test_unexplained_mismatch_stops_the_timing_comparison(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    bad = case_key(2, 16, "compiled")

    def mismatch(events: list[dict[str, Any]]) -> None:
        result = next(e for e in _cells(events, "case_result") if e["case"] == bad)
        result["status"] = "mismatch"
        result["error_stats"].update(mismatched=3, max_abs=0.5, diff_at_worst=0.5)

    _edit(cand, mismatch)
    comparison = gather(base, cand)
    assert comparison.timed == [] and comparison.geomean is None
    assert (
        "timing not compared: performance acceptance is stopped on the candidate until the mismatching or errored cells have a verdict"
        in comparison.headline
    )
    assert "3 correct on both" in comparison.headline
    from reportgen.render.compare_view import build_compare_view

    def status_of_bad() -> str:
        return next(row.status[1][1] for row in build_compare_view(comparison).cells if row.case == bad)

    assert status_of_bad() == "mismatch in outputs, not explained"  # the failing quantity named, in the report's words
    (cand.parent / "annotations.toml").write_text(f'["{bad}"]\nexplanation = "checked"\n', encoding="utf-8")
    comparison = gather(base, cand)
    assert comparison.timed == [] and status_of_bad() == "mismatch in outputs, awaiting verdict"
    (cand.parent / "annotations.toml").write_text(
        f'["{bad}"]\nexplanation = "checked"\nverdict = "accepted"\nreason = "task metric holds"\n', encoding="utf-8"
    )
    comparison = gather(base, cand)
    assert len(comparison.timed) == 3 and comparison.geomean is not None and comparison.geomean.ratios == 3
    assert next(c for c in comparison.cells if c.case == bad).timing_note == "not compared: passed on the baseline only"
    assert status_of_bad() == "mismatch in outputs, accepted"


def test_invalid_log_exits_1_and_help_has_exit_codes(tmp_path: Path) -> None:
    base, _ = _pair(tmp_path, noise=0.01)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["compare", str(base), str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "bad.jsonl:1: error" in result.output
    text = runner.invoke(main, ["compare", "--help"]).output
    assert "Exit codes:" in text and "2  the pair is refused" in text and "Example:" in text
    assert (
        runner.invoke(
            main, ["compare", str(base), str(base), "--out", str(tmp_path / "o"), "--format", "pdf"]
        ).exit_code
        == 2
    )


def test_hostile_text_is_escaped(tmp_path: Path) -> None:
    payload = "<script>window.__x=1</script>|`x`"
    base, cand = _pair(tmp_path, noise=0.01)
    for path in (base, cand):

        def hostile(events: list[dict[str, Any]]) -> None:
            events[0]["workload"] = payload
            next(e for e in events if e["kind"] == "plan")["model_revision"] = payload

        _edit(path, hostile)
    assert CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "o")]).exit_code == 0
    html = (tmp_path / "o" / "compare.html").read_text(encoding="utf-8")
    assert "<script>window" not in html and "&lt;script&gt;" in html
    assert "<script>" not in (tmp_path / "o" / "compare.md").read_text(encoding="utf-8")


# --- the sample made from two real runs ------------------------------------------------------


def _sample_pair() -> tuple[Path, Path]:
    """The tiny-encoder pair that sample_runs/site.toml asks for (one source for the sample):
    the latest run on its baseline target against the latest on its candidate target."""
    import tomllib

    rule = next(
        r
        for r in tomllib.loads((SAMPLES / "site.toml").read_text(encoding="utf-8"))["compare_latest"]
        if "tiny-encoder" in r["workloads"]
    )
    # Run ids end in their UTC start time and a random suffix: the latest sorts last by time.
    latest = [
        max(SAMPLES.glob(f"tiny-encoder-{rule[side]}-*"), key=lambda p: p.name.split("-")[-2])
        for side in ("baseline_target", "candidate_target")
    ]
    return latest[0], latest[1]


def test_sample_comparison_builds_and_is_current(tmp_path: Path) -> None:
    cpu, cuda = _sample_pair()
    result = CliRunner().invoke(
        main, ["compare", str(cpu), str(cuda), "--out", str(tmp_path), "--format", "html,md,json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))
    assert (data["baseline"]["family"], data["candidate"]["family"]) == ("cpu", "cuda")
    assert not data["baseline"]["synthetic"] and not data["candidate"]["synthetic"]
    md = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert "Neither run is a Neuron or Trainium result" in md and "NVIDIA H200" in md
    committed = SAMPLES / "comparisons" / "tiny-encoder-cpu-vs-cuda"
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    assert "reportgen compare" in readme and "comparisons/tiny-encoder-cpu-vs-cuda" in readme
    # The committed sample is of these runs and holds the same figures and words.
    kept = json.loads((committed / "compare.json").read_text(encoding="utf-8"))
    stale = "the committed sample comparison is stale: run the command in sample_runs/README.md"
    assert [kept[r]["run_id"] for r in ("baseline", "candidate")] == [
        data[r]["run_id"] for r in ("baseline", "candidate")
    ], stale
    # The interval bounds come from numpy's log and exp on this CPU, which may differ from the
    # committing machine's in the last bit: figures are compared within tests/tolerance.py's
    # REL_TOL (1e-9 relative, or one unit of the last digit a page writes), words exactly.
    difference = data_difference(
        [kept[k] for k in ("cells", "geomean", "not_comparable")],
        [data[k] for k in ("cells", "geomean", "not_comparable")],
    )
    assert difference is None, f"{difference}: {stale}"
    for name in ("compare.json", "compare.md", "compare-details.csv"):  # every word too, as sample_runs/README.md says
        difference = text_difference(
            (committed / name).read_text(encoding="utf-8"), (tmp_path / name).read_text(encoding="utf-8")
        )
        assert difference is None, f"{name}: {difference}: {stale}"
    assert re.search(r"neuron", data["headline"], re.IGNORECASE) is None


def test_tolerance_forgives_a_last_bit_and_nothing_more() -> None:
    # The two interval bounds that differed between two CPUs, as JSON and as page text.
    assert data_difference({"low": 0.9624311377829962, "n": 3}, {"low": 0.9624311377829964, "n": 3}) is None
    assert data_difference({"low": 0.9624311377829962}, {"low": 0.9624311377}) is None
    assert data_difference({"low": 0.96243}, {"low": 0.96244}) is not None
    assert (
        data_difference({"n": 3}, {"n": 4}) is not None
        and data_difference({"v": "faster"}, {"v": "slower"}) is not None
    )
    assert text_difference("ratio 0.9624311377829962 (n=3)", "ratio 0.9624311377829964 (n=3)") is None
    assert text_difference("ratio 0.962 [0.95, 0.98]", "ratio 0.963 [0.95, 0.98]") is None  # a rounding that flipped
    assert text_difference("ratio 0.962", "ratio 0.964") is not None
    assert (
        text_difference("12 cells", "13 cells") is not None
        and text_difference("1.0x faster", "1.0x slower") is not None
    )
    assert text_difference("run-20261129T225221Z-23a8e6", "run-20261129T225221Z-23a8e7") is not None


# --- `reportgen diff` judges timing by the same interval ------------------------------------


@pytest.mark.parametrize(("noise", "verdict"), [(0.01, "slower")])
def test_diff_uses_the_interval_verdict(tmp_path: Path, noise: float, verdict: str) -> None:
    before = _write(tmp_path, "before", timing_log("synthetic-before", scale=1.0, noise=noise, seed=0))
    after = _write(tmp_path, "after", timing_log("synthetic-after", scale=1.1, noise=noise, seed=1))
    runner = CliRunner()
    data = json.loads(runner.invoke(main, ["diff", "--json", str(before), str(after)]).output)
    assert {t["verdict"] for t in data["timings"]} == {verdict}
    assert all(t["low"] is not None and t["low"] < t["high"] for t in data["timings"])
    text = runner.invoke(main, ["diff", str(before), str(after)]).output
    assert "95% interval" in text and f"): {verdict}" in text


def test_diff_gives_no_verdict_on_unstable_timings(tmp_path: Path) -> None:
    # Samples spread by half their value are unstable (collector/stability.py): no interval, no verdict, named first.
    before = _write(tmp_path, "before", timing_log("synthetic-before", scale=1.0, noise=0.5, seed=0))
    after = _write(tmp_path, "after", timing_log("synthetic-after", scale=1.1, noise=0.5, seed=1))
    runner = CliRunner()
    data = json.loads(runner.invoke(main, ["diff", "--json", str(before), str(after)]).output)
    assert {t["verdict"] for t in data["timings"]} == {"no verdict: unstable timing"}
    assert all(t["low"] is None for t in data["timings"])
    assert sorted(data["unstable_timing"]) == sorted(t["case"] for t in data["timings"])
    text = runner.invoke(main, ["diff", str(before), str(after)]).output
    lines = text.splitlines()
    unstable = next(n for n, line in enumerate(lines) if line.startswith("unstable timing: "))
    assert lines[unstable].startswith(f"unstable timing: {len(data['timings'])} cell(s), no timing verdict: ")
    assert unstable < next(n for n, line in enumerate(lines) if line.startswith(("disposition:", "timing (")))


def test_workload_history_shows_interval_verdicts(tmp_path: Path) -> None:
    from reportgen.publish.site import build_site

    _write(tmp_path / "runs", "a", timing_log("synthetic-before", scale=1.0, noise=0.01, seed=10))
    _write(tmp_path / "runs", "b", timing_log("synthetic-after", scale=1.1, noise=0.01, seed=11))
    _edit(tmp_path / "runs" / "b" / "events.jsonl", lambda events: events[0].update(started_at="2026-01-02T00:00:00Z"))
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert "verdict (by the interval)" in page and page.count('class="ratio-up">slower<') == 4


# --- comparisons on the site ---------------------------------------------------------------


def _site_runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    _write(runs, "a", timing_log("synthetic-cpu-old", scale=1.3, noise=0.01, seed=1))
    _write(runs, "b", timing_log("synthetic-cpu-new", scale=1.0, noise=0.01, seed=2))
    _write(runs, "c", timing_log("synthetic-cuda", target="cuda", family="cuda", scale=0.5, noise=0.01, seed=3))
    _edit(runs / "b" / "events.jsonl", lambda events: events[0].update(started_at="2026-01-02T00:00:00Z"))
    other = timing_log("synthetic-other-workload", target="cuda", family="cuda", seed=4)
    other[0]["workload"] = "minilm"
    _write(runs, "d", other)
    return runs


def test_a_site_rule_that_makes_no_page_says_why(tmp_path: Path) -> None:
    """A mistyped target or workload made no page and said nothing: each rule that makes none is
    a warning naming what the site holds; one side twice is an error (exit 1)."""
    from reportgen.publish.site import build_site

    runs = _site_runs(tmp_path)
    (runs / "site.toml").write_text(
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "CUDA"\n'
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\nworkloads = ["tiny-encodr"]\n'
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cpu"\n',
        encoding="utf-8",
    )
    result = build_site([runs], tmp_path / "site")
    warned = "\n".join(result.warnings)
    assert "'cpu' against 'CUDA' made no page" in warned and "targets in the site: cpu, cuda" in warned
    assert "no run of workload 'tiny-encodr' in the site" in warned
    assert result.rejected == [
        "site configuration: compare_latest 'cpu' against 'cpu' skipped: both sides name one target"
    ]
    assert not (tmp_path / "site" / "comparisons").exists() or not any((tmp_path / "site" / "comparisons").iterdir())


def test_a_site_rule_whose_pair_another_rule_planned_is_not_said_to_make_no_page(tmp_path: Path) -> None:
    """A review: a [[compare_latest]] rule whose pair a [[compare]] entry (or the same rule given
    twice) had planned already warned "made no page: no workload has runs on both", beside the
    page it made."""
    from reportgen.publish.site import build_site

    runs = _site_runs(tmp_path)
    rule = '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n'
    (runs / "site.toml").write_text(
        '[[compare]]\nbaseline = "synthetic-cpu-new"\ncandidate = "synthetic-cuda"\n' + rule + rule,
        encoding="utf-8",
    )
    result = build_site([runs], tmp_path / "site")
    assert not [w for w in result.warnings if "made no page" in w], result.warnings
    assert result.rejected == []
    assert len(list((tmp_path / "site" / "comparisons").iterdir())) == 1


def test_site_rule_links_latest_pairs_per_workload(tmp_path: Path) -> None:
    from reportgen.publish.site import build_site

    runs = _site_runs(tmp_path)
    (runs / "site.toml").write_text(
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n', encoding="utf-8"
    )
    site = tmp_path / "site"
    result = build_site([runs], site)
    assert result.rejected == []
    pages = sorted((site / "comparisons").iterdir())
    assert len(pages) == 1, "one workload has runs on both targets; minilm has no cpu run"
    assert "synthetic-cpu-new-vs-synthetic-cuda" in pages[0].name
    index = (site / "index.html").read_text(encoding="utf-8")
    assert f'href="comparisons/{pages[0].name}/index.html"' in index and "2x faster" in index
    page = (pages[0] / "index.html").read_text(encoding="utf-8")
    assert "synthetic-cpu-old" not in page and 'href="../../index.html"' in page
    assert (pages[0] / "compare.md").is_file()
    workload = next((site / "workloads").glob("tiny-encoder-*/index.html")).read_text(encoding="utf-8")
    assert f'href="../../comparisons/{pages[0].name}/index.html">cuda against cpu</a>' in workload
    again = build_site([runs], site)
    assert not any("comparisons" in str(p) for p in again.written), "an unchanged pair is not written again"


def test_site_declared_pairs_never_cross_workloads(tmp_path: Path) -> None:
    runs = _site_runs(tmp_path)
    config = tmp_path / "pairs.toml"
    config.write_text(
        '[[compare]]\nbaseline = "synthetic-cpu-old"\ncandidate = "synthetic-cuda"\n\n[[compare]]\nbaseline = "synthetic-cpu-old"\ncandidate = "synthetic-other-workload"\n\n[[compare]]\nbaseline = "nope"\ncandidate = "synthetic-cuda"\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site"), "--config", str(config)])
    assert result.exit_code == 1
    assert "not built: different workloads: baseline 'tiny-encoder', candidate 'minilm'" in result.output
    assert "no run with id 'nope'" in result.output
    assert len(list((tmp_path / "site" / "comparisons").iterdir())) == 1


def test_site_rejects_a_bad_configuration_before_writing(tmp_path: Path) -> None:
    runs = _site_runs(tmp_path)
    config = tmp_path / "bad.toml"
    config.write_text('[[compare_latest]]\nbaseline = "cpu"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site"), "--config", str(config)])
    assert (
        result.exit_code == 2
        and "bad.toml: line 1: compare_latest.0.baseline_target: a required key, missing" in result.output
    )
    assert not (tmp_path / "site").exists()
    config.write_text("[[compare]\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site"), "--config", str(config)])
    assert result.exit_code == 2 and "not valid TOML" in result.output


def test_a_site_configuration_of_any_size_is_read_and_answered_in_bounded_words(tmp_path: Path) -> None:
    """A site.toml is read like any other input: past the rules a site can act on it is one
    error naming the limit, an error lists a few problems with their count, and a rule naming
    100,000 workloads gets a warning of a few names, not every one of them."""
    from reportgen.publish.site import build_site
    from reportgen.publish.site_compare import MAX_COMPARE_LATEST

    runs = _site_runs(tmp_path)
    config = tmp_path / "many.toml"
    rule = '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n'
    config.write_text(rule * (MAX_COMPARE_LATEST + 1), encoding="utf-8")
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site"), "--config", str(config)])
    assert (
        result.exit_code == 2
        and f"compare_latest: List should have at most {MAX_COMPARE_LATEST} items" in result.output
    )
    config.write_text('[[compare_latest]]\nbaseline = "cpu"\n' * 50, encoding="utf-8")
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(tmp_path / "site"), "--config", str(config)])
    assert result.exit_code == 2 and "… and 145 more" in result.output and len(result.output) < 2000
    names = ", ".join(f'"w{i}"' for i in range(100_000))
    (runs / "site.toml").write_text(f"{rule}workloads = [{names}]\n", encoding="utf-8")
    warned = "\n".join(build_site([runs], tmp_path / "site").warnings)
    assert "no run of workload 'w0', 'w1'" in warned and "(first 12 of 100,000)" in warned and len(warned) < 2000


def test_sample_site_links_the_sample_comparison(tmp_path: Path) -> None:
    from reportgen.publish.site import build_site

    result = build_site([SAMPLES], tmp_path / "site")
    assert result.rejected == []
    cpu, cuda = _sample_pair()
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    link = next(p for p in (tmp_path / "site" / "comparisons").iterdir() if cpu.name in p.name)
    assert f"comparisons/{link.name}/index.html" in index and cuda.name in index
    for page in (tmp_path / "site" / "comparisons").rglob("index.html"):
        for ref in re.findall(r'(?:href|src)="([^"]*)"', page.read_text(encoding="utf-8")):
            assert not re.match(r"^(?:[a-z]+:|/)", ref), f"{page}: {ref}"
            if not ref.startswith("#"):
                assert (page.parent / ref.split("#")[0]).exists(), f"{page}: broken link {ref}"


# --- whether the two references agree ------------------------------------------------------


def _with_reference_file(
    path: Path, tensors: dict[str, Any], torch: Any, artifact_path: str = "artifacts/reference.pt"
) -> None:
    import hashlib

    target = path.parent / "artifacts" / "reference.pt"
    target.parent.mkdir(exist_ok=True)
    torch.save(tensors, target)
    data = target.read_bytes()

    def add(events: list[dict[str, Any]]) -> None:
        inputs = next(e for e in events if e["kind"] == "artifact" and e["role"] == "inputs")
        events.insert(
            events.index(inputs) + 1,
            dict(
                inputs,
                role="reference_output",
                path=artifact_path,
                bytes=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
            ),
        )
        for seq, event in enumerate(events):
            event["seq"] = seq

    _edit(path, add)


def test_distance_between_saved_references(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    base, cand = _pair(tmp_path, noise=0.01)
    hidden = torch.arange(64, dtype=torch.float64).reshape(1, 2, 32) / 8
    _with_reference_file(
        base, {"b1-l16-contiguous": {"hidden": hidden}, "b2-l16-contiguous": {"hidden": hidden}}, torch
    )
    _with_reference_file(
        cand, {"b1-l16-contiguous": {"hidden": hidden + 2.5e-6}, "b2-l16-contiguous": {"hidden": hidden[:, :1]}}, torch
    )
    texts = {c.case: (c.reference.agree, c.reference.text) for c in gather(base, cand).cells}
    agree, text = texts[case_key(1, 16, "eager")]
    assert agree is True and "differ by at most 2.5e-06 (max abs, b1-l16-contiguous)" in text
    agree, text = texts[case_key(2, 16, "compiled")]
    assert agree is False and "differ in shape" in text


def test_saved_references_that_differ_beyond_the_atol_do_not_agree(tmp_path: Path) -> None:
    """Before: two runs whose saved reference outputs differed by 0.5 (a buffer the weights hash
    does not cover, changed) read "references agree: yes ... differ by at most 0.5" against an
    atol of 1e-5: any finite distance was agreement. A distance beyond the cell's atol now
    reads as references that do not agree, named with the bound."""
    torch = pytest.importorskip("torch")
    base, cand = _pair(tmp_path, noise=0.01)
    hidden = torch.arange(64, dtype=torch.float64).reshape(1, 2, 32) / 8
    _with_reference_file(base, {"b1-l16-contiguous": {"hidden": hidden}}, torch)
    _with_reference_file(cand, {"b1-l16-contiguous": {"hidden": hidden + 0.5}}, torch)
    atol = json.loads(next(line for line in base.read_text(encoding="utf-8").splitlines() if '"kind": "plan"' in line))[
        "tolerances"
    ]["float32"]["atol"]
    assert atol < 0.5
    agree, text = next(
        (c.reference.agree, c.reference.text) for c in gather(base, cand).cells if c.case == case_key(1, 16, "eager")
    )
    assert agree is False, text
    assert f"differ by up to 0.5 (max abs), beyond the atol {atol:g} that float32 cells are judged by" in text


def test_reference_files_are_checked_before_reading(tmp_path: Path) -> None:
    """A reference file outside its run directory is never read; one changed since it was
    logged is not read either: the log that names it is refused when it is read (an error at
    the artifact's line), and the distance, asked of the files themselves, is not measured."""
    from reportgen.model.artifacts import reference_distances
    from reportgen.model.runmodel import read_run
    from reportgen.render.report import ReportInputError

    torch = pytest.importorskip("torch")
    base, cand = _pair(tmp_path, noise=0.01)
    _with_reference_file(base, {"b1-l16-contiguous": {"hidden": torch.zeros(2)}}, torch)
    _with_reference_file(
        cand, {"b1-l16-contiguous": {"hidden": torch.ones(2)}}, torch, artifact_path="../../../etc/passwd"
    )
    text = gather(base, cand).cells[0].reference.text
    assert (
        "distance between them not measured (candidate: ../../../etc/passwd names a place outside its run folder)"
        in text
    )
    artifacts = [next(a for a in read_run(log)[1].artifacts if a.role == "reference_output") for log in (base, cand)]
    (base.parent / "artifacts" / "reference.pt").write_bytes(b"tampered")
    with pytest.raises(ReportInputError, match="artifact: artifacts/reference.pt is 8 bytes"):
        gather(base, cand)
    distances = reference_distances(base.parent, artifacts[0], cand.parent, artifacts[1])
    assert distances.reason.startswith("baseline: artifacts/reference.pt is 8 bytes, the log recorded "), distances


def test_non_positive_samples_are_not_timed(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    odd = case_key(1, 16, "eager")

    def zero(events: list[dict[str, Any]]) -> None:
        # Zero: the contract refuses a negative time (a located error), so zero is the edge left.
        timing = next(e for e in _cells(events, "timing") if e["case"] == odd)
        timing["warm"] = _warm([0.0 if i == 3 else s for i, s in enumerate(timing["warm"]["samples_s"])])

    _edit(cand, zero)
    result = CliRunner().invoke(
        main, ["compare", str(base), str(cand), "--out", str(tmp_path / "o"), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "o" / "compare.json").read_text(encoding="utf-8"))
    cell = next(c for c in data["cells"] if c["case"] == odd)
    assert cell["timing"] is None and "zero or negative" in cell["timing_note"]
    assert data["geomean"]["cells"] == 3


def test_a_neuron_side_carries_the_adapter_note(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", timing_log("synthetic-cuda", target="cuda", family="cuda", seed=0))
    cand = _write(
        tmp_path, "cand", timing_log("synthetic-neuron", target="neuron", family="neuron-native", scale=0.5, seed=1)
    )
    assert CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "o")]).exit_code == 0
    for name in ("compare.html", "compare.md"):
        page = (tmp_path / "o" / name).read_text(encoding="utf-8")
        assert "exercised only against a stand-in module, never on Trainium" in page
        assert "Synthetic fixture" in page and "Neither run is a Neuron" not in page


def test_many_samples_stay_within_memory_and_agree() -> None:
    from reportgen.judge import intervals

    rng = random.Random(5)
    pairs = [(_draw(rng, 1.0, 0.01, 3000), _draw(rng, 1.1, 0.01, 2500)) for _ in range(3)]
    results = ratio_intervals(pairs)  # thinned to 2,000 a side and chunked: no 7.5e6-wide array
    assert all(r.verdict == "slower" and r.low < 1.1 < r.high for r in results)  # type: ignore[operator]
    assert [(r.baseline_samples, r.candidate_samples) for r in results] == [(3000, 2500)] * 3
    small = [(_draw(rng, 1.0, 0.01), _draw(rng, 1.1, 0.01)) for _ in range(50)]
    whole = ratio_intervals(small)
    saved = intervals.MAX_PAIRS
    try:
        intervals.MAX_PAIRS = 900 * 7  # chunks of 7 cells
        assert ratio_intervals(small) == whole
    finally:
        intervals.MAX_PAIRS = saved


# --- a long pair: the pages are bounded, every cell is in compare-details.csv -----------------


def _long_pair(tmp_path: Path, cells: int) -> tuple[Path, Path]:
    from tests.logbuilder import large_log

    paths = []
    for role, scale in (("base", 1.0), ("cand", 1.1)):
        events = large_log(cells)
        events[0].update(run_id=f"synthetic-long-{role}", origin_note="Synthetic test log; not a measurement.")
        at = next(i for i, e in enumerate(events) if e["kind"] == "plan")
        head = {k: events[at][k] for k in ("schema_version", "seq", "time")}
        events.insert(
            at + 1,
            {
                **head,
                "kind": "artifact",
                "role": "inputs",
                "path": "artifacts/inputs.pt",
                "bytes": 1024,
                "sha256": "0" * 64,
            },
        )
        for seq, event in enumerate(events):
            event["seq"] = seq
            if event["kind"] == "timing" and event.get("warm"):
                event["warm"] = scaled_warm(event["warm"], scale)
        paths.append(_write(tmp_path, role, events))
    return paths[0], paths[1]


def test_a_long_pair_s_pages_are_bounded_and_every_cell_is_in_compare_details(tmp_path: Path) -> None:
    import csv

    from reportgen.render.view import DETAIL_CAP

    cells = DETAIL_CAP * 4 + 10
    base, cand = _long_pair(tmp_path, cells)
    # The candidate skipped its first cells: the timing table's rows are cells beyond those shown.
    late = DETAIL_CAP + 50

    def skip_early(events: list[dict[str, Any]]) -> None:
        skipped = {e["case"] for e in [e for e in events if e["kind"] == "case_result"][:late]}
        for event in events:
            if event.get("case") in skipped and event["kind"] == "case_result":
                for key in ("outputs", "error_stats", "task_metric"):
                    event.pop(key, None)
                event.update(status="skipped", skip_reason="skipped by the test")
        events[:] = [e for e in events if not (e.get("case") in skipped and e["kind"] != "case_result")]
        for seq, event in enumerate(events):
            event["seq"] = seq

    _edit(cand, skip_early)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = (out / "compare.html").read_text(encoding="utf-8")
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert len(html.encode("utf-8")) < 1_000_000 and len(md) < 400_000
    section = html[html.index('<section id="correctness">') : html.index("<h3>References</h3>")]
    assert section.count("<tr id=") == DETAIL_CAP
    assert f"The first {DETAIL_CAP} of {cells} cells are shown; every one is in" in html
    assert (
        f"The first {DETAIL_CAP} of {cells} cells are shown; every one is in [compare-details.csv](compare-details.csv)"
        in md
    )
    ids = set(re.findall(r'id="([^"]+)"', html))
    assert all(target in ids for target in re.findall(r'href="#([^"]+)"', html)), (
        "no link to a row that is not on the page"
    )
    rows = list(csv.reader((out / "compare-details.csv").open(encoding="utf-8", newline="")))
    header, rows = rows[0], rows[1:]
    assert len(rows) == cells and len({row[0] for row in rows}) == cells
    data = gather(base, cand)
    assert [row[0] for row in rows] == [cell.case for cell in data.cells]
    verdicts = {row[0]: row[header.index("verdict")] for row in rows}
    assert len(data.timed) == cells - late and all(verdicts[cell.case] == cell.timing.verdict for cell in data.timed)
    assert f"The first {DETAIL_CAP} of {cells - late} timed cells are shown" in html


def test_compare_details_hold_every_figure_the_pages_show(tmp_path: Path) -> None:
    """Each timed cell's samples, cold and compile figures, and each shape's compiled-over-eager
    speedups (on its compiled cell's row), as compare.json holds them; text from the log that
    starts like a formula is marked, and a carriage return cannot split a row."""
    import csv

    cpu, cuda = _sample_pair()
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["compare", str(cpu), str(cuda), "--out", str(out), "--format", "md,json"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    rows = {
        row["case"]: row for row in csv.DictReader((out / "compare-details.csv").open(encoding="utf-8", newline=""))
    }
    assert list(rows) == [cell["case"] for cell in data["cells"]]
    for cell in data["cells"]:
        row, timing = rows[cell["case"]], cell["timing"]
        if cell["layout"] == "noncontiguous":  # the H200 log did not measure that layout: untested, not timed
            assert timing is None and row["verdict"] == ""
            continue
        assert timing is not None
        assert (row["baseline_samples"], row["candidate_samples"]) == (
            str(timing["warm"]["baseline_samples"]),
            str(timing["warm"]["candidate_samples"]),
        )
        assert row["cold_ratio"] == ("" if timing["cold_ratio"] is None else repr(timing["cold_ratio"]))
        assert row["compile_ratio"] == ("" if timing["compile_ratio"] is None else repr(timing["compile_ratio"]))
    speedups = {
        (r["shape"], r["layout"], r["dtype"]): (r["baseline_compiled_speedup"], r["candidate_compiled_speedup"])
        for r in rows.values()
        if r["baseline_compiled_speedup"] or r["candidate_compiled_speedup"]
    }
    assert data["speedups"] and speedups == {
        (s["shape"], s["layout"], s["dtype"]): tuple(
            "" if v is None else repr(v) for v in (s["baseline"], s["candidate"])
        )
        for s in data["speedups"]
        if s["baseline"] is not None or s["candidate"] is not None  # no figure: not measured, or unstable timing
    }
    base, cand = _long_pair(tmp_path, 4)

    def hostile(events: list[dict[str, Any]]) -> None:
        old = next(e["case"] for e in events if e["kind"] == "case_result")
        for event in events:
            if event.get("case") == old:
                event["case"] = "=HYPERLINK(1)\r"
            if event["kind"] == "plan":
                for planned in event["matrix"]:
                    if planned["case"] == old:
                        planned["case"] = "=HYPERLINK(1)\r"

    _edit(base, hostile)
    _edit(cand, hostile)
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "hostile")])
    assert result.exit_code == 0, result.output
    read = list(csv.reader((tmp_path / "hostile" / "compare-details.csv").open(encoding="utf-8", newline="")))
    assert len(read) == 5 and read[1][0] == "'=HYPERLINK(1)<U+000D>"  # the carriage return shown, as on every page


NOT_A_FIGURE = re.compile(r"\b(inf|nan)x?\b", re.IGNORECASE)


def _subnormal_cell(events: list[dict[str, Any]]) -> None:
    """Every warm sample of the first timed cell 5e-324 s: valid, about 1e320 times faster than 1 ms."""
    timing = next(e for e in events if e["kind"] == "timing" and e.get("warm"))
    timing["warm"].update(samples_s=[5e-324] * 30, min_s=5e-324, median_s=5e-324, p90_s=5e-324, iqr_s=0.0)


@pytest.mark.parametrize("side", ["base", "cand"])
def test_a_ratio_beyond_a_float_decides_nothing_and_is_never_a_figure(tmp_path: Path, side: str) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    _edit(base if side == "base" else cand, _subnormal_cell)
    comparison = gather(base, cand)
    (beyond,) = [
        c for c in comparison.timed if any(f.startswith("timing not classified: time ratio") for f in c.timing.flags)
    ]  # type: ignore[union-attr]
    # Not classified, and not said to be unstable: no series rule failed.
    assert beyond.timing is not None and beyond.timing.verdict == "timing not classified"
    assert not beyond.timing.in_geomean
    assert comparison.verdict_counts() == {
        "faster": 0,
        "slower": 3,
        "no clear difference": 0,
        "unstable timing": 0,
        "timing not classified": 1,
        "flagged, not judged": 0,
    }
    assert comparison.geomean is not None and comparison.geomean.ratios == 3 and comparison.geomean.verdict == "slower"
    assert "1 cell with timing not classified left out of every verdict" in comparison.headline
    assert "unstable" not in comparison.headline
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(out), "--format", "html,md"])
    assert result.exit_code == 0, result.output
    for text in (result.output, *((out / name).read_text(encoding="utf-8") for name in ("compare.md", "compare.html"))):
        assert not NOT_A_FIGURE.search(text), NOT_A_FIGURE.search(text)


def test_many_versions_show_the_first_few_and_the_count(tmp_path: Path) -> None:
    """A valid log may record thousands of versions: the compare pages list the first
    FACTS_SHOWN packages, clipped, and count the rest, as a report page does."""
    from reportgen.render.sections.common import FACTS_SHOWN

    base, cand = _pair(tmp_path, noise=0.01)

    def many(events: list[dict[str, Any]]) -> None:
        env = next(e for e in events if e["kind"] == "environment")
        env["versions"].update({f"pkg{i:04d}": {"value": "1.0", "source": "pip"} for i in range(300)})
        env["versions"]["k" * 20_000] = {"value": "2.0", "source": "pip"}

    _edit(base, many)
    _edit(cand, many)
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    for name in ("compare.md", "compare.html"):
        page = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert "pkg0000" in page and "pkg0299" not in page, name
        assert f"first {FACTS_SHOWN} of " in page and "shown; all in each run" in page, name
        assert "k" * 20_000 not in page, name


def test_a_log_whose_plan_and_artifact_disagree_on_the_weights_is_not_called_the_same(tmp_path: Path) -> None:
    """The collector writes one digest into the plan and the weights artifact: two answers leave
    the weights unknown, so neither may make them 'the same' as the other run's: the log is
    refused before any identity is judged."""
    from reportgen.contract.validation import read_log

    base, cand = _pair(tmp_path, noise=0.01)
    _edit(base, _weights("c" * 64, "1" * 64))
    _edit(cand, _weights("c" * 64, "1" * 64))

    def artifact_differs(events: list[dict[str, Any]]) -> None:
        artifact = next(e for e in events if e["kind"] == "artifact" and e["role"] == "weights")
        artifact.update(sha256="e" * 64, content_sha256="b" * 64)

    _edit(cand, artifact_differs)
    reading = read_log(cand)
    assert any("weights" in p.message and "contradicts itself" in p.message for p in reading.problems)
    assert not reading.valid and read_log(base).valid
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "refused")])
    assert result.exit_code != 0 and "Same weights" not in result.output


def test_a_speedup_of_a_compiled_cell_that_hit_its_recompile_limit_or_fell_back_is_not_given(tmp_path: Path) -> None:
    """Before: the candidate's compiled cell at (1, 16) hit its recompile limit (it may have run
    eager) and its eager cell at (2, 16) fell back to the CPU; their warm ratios were flagged, but
    the compiled-over-eager table gave both shapes a speedup figure as if of the compiled path."""
    base, cand = _pair(tmp_path, noise=0.01)

    def flag(events: list[dict[str, Any]]) -> None:
        compiled = case_key(1, 16, "compiled")
        next(e for e in _cells(events, "compile") if e["case"] == compiled)["recompile_limit_hit"] = True
        next(e for e in _cells(events, "operators") if e["case"] == case_key(2, 16, "eager"))["fallback"] = {
            "status": "measured",
            "items": ["aten::foo"],
        }

    _edit(cand, flag)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(out), "--format", "md,json"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    speedups = {s["shape"]: s for s in data["speedups"] if s["layout"] == "contiguous"}
    assert speedups["(1, 16)"]["candidate"] is None
    assert speedups["(1, 16)"]["candidate_flag"] == "not compared: the compiled cell hit its recompile limit"
    assert speedups["(2, 16)"]["candidate"] is None
    assert speedups["(2, 16)"]["candidate_flag"] == "not compared: CPU fallback"
    assert all(speedups[shape]["baseline"] is not None for shape in ("(1, 16)", "(2, 16)"))
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert re.search(
        r"\| \(1, 16\) contiguous float32 \| 1\.\d+x \| not compared: the compiled cell hit its recompile limit \|", md
    )


def test_a_speedup_of_an_unstable_series_is_flagged_not_given(tmp_path: Path) -> None:
    """Compiled over eager is a timing verdict too: from a series the page marks unstable it
    decides nothing, so the pages and compare.json give the flag and no figure."""
    from collector.stability import UNSTABLE, classify

    base, cand = _pair(tmp_path, noise=0.01)
    compiled = case_key(1, 16, "compiled")
    spread = [0.0008 * (1 + 0.5 * (i % 5)) for i in range(30)]  # spread wide about its median
    assert classify(spread).verdict == UNSTABLE

    def unsteady(events: list[dict[str, Any]]) -> None:
        timing = next(e for e in events if e["kind"] == "timing" and e["case"] == compiled)
        timing["warm"] = _warm(spread)

    _edit(cand, unsteady)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(out), "--format", "html,md,json"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    shape = next(s for s in data["speedups"] if s["shape"] == "(1, 16)" and s["layout"] == "contiguous")
    assert shape["candidate"] is None and shape["candidate_flag"] == "unstable timing"
    assert shape["baseline"] is not None and shape["baseline_flag"] is None
    row = next(
        line for line in (out / "compare.md").read_text(encoding="utf-8").splitlines() if "| (1, 16) contiguous" in line
    )
    assert row.rstrip(" |").endswith("≋ unstable timing"), row
    html = (out / "compare.html").read_text(encoding="utf-8")
    assert "<td>≋ unstable timing</td>" in html


def test_a_content_hash_is_never_compared_with_a_file_hash() -> None:
    """One run hashed its weights by content, the other only their file bytes: each side's hash is
    named by what it is, compared by file bytes where both have them, and never as one kind."""
    from reportgen.judge.criteria import Declared, criteria_changes

    content = "a" * 64
    file_a, file_b = "b" * 64, "c" * 64
    by_content = Declared("weights", "weights sha256 (by content)", content, "correctness", file_value=file_a)
    by_file = Declared(
        "weights", "weights sha256 (file bytes: the same tensors saved another way differ)", file_b, "correctness"
    )
    [change] = criteria_changes({"weights": by_content}, {"weights": by_file})
    assert "by content" not in change.label and (change.before, change.after) == (file_a, file_b)
    assert criteria_changes({"weights": by_content}, {"weights": replace(by_file, value=file_a)}) == []
    # No file hash beside the content hash: not comparable, and each hash says what it is.
    [change] = criteria_changes({"weights": replace(by_content, file_value=None)}, {"weights": by_file})
    assert "not comparable" in change.text and "by content aaaaaaaaaaaa..." in change.text
    assert "file bytes cccccccccccc..." in change.text and change.after.endswith("(file bytes)")


def test_sample_comparison_names_the_cuda_weights_hash_as_file_bytes(tmp_path: Path) -> None:
    cpu, cuda = _sample_pair()
    result = CliRunner().invoke(main, ["compare", str(cpu), str(cuda), "--out", str(tmp_path), "--format", "md"])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert "weights sha256 (by content) now 5c6d3d2c39e4" not in md
    assert "weights sha256 (file bytes: the same tensors saved another way differ) now 5c6d3d2c39e4" in md


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # A factor a hair from 1 read '1x faster'; an interval across 1 read '0.9998x to 1.002x faster'.
        (lambda: speed_words(0.9999), "1.0001x faster"),
        (lambda: speed_words(1.0004), "1.0004x slower"),
        (lambda: speed_words(0.5), "2x faster"),
        (lambda: interval_words(0.9999, 0.9998, 1.002), "95% interval 1.0002x faster to 1.002x slower"),
        (lambda: interval_words(0.7, 0.6, 0.9), "95% interval 1.11x to 1.67x faster"),
        # An interval wholly below 1 never shows its upper end as 1.
        (lambda: " to ".join(interval_text(0.5, 0.99961)), "0.5 to 0.9996"),
        # An estimate never reads outside its interval as shown: three decimals of 0.052403 read
        # 0.052 beside '0.0522 to 0.0528' (a real diff of two MiniLM runs), 3 digits of 1.0004
        # read 1 beside '1.0003 to 1.0009'.
        (lambda: estimate_text(0.052403, 0.05222, 0.05276, ".3f", "x"), "0.0524x"),
        (lambda: estimate_text(1.0004, 1.0003, 1.0009), "1.0004"),
        (lambda: estimate_text(1.2345, 1.2, 1.3, ".3f", "x"), "1.234x"),
        (lambda: estimate_text(0.052403, None, None, ".3f", "x"), "0.052x"),
        # The headline's factor reads inside the interval beside it: '1.01x faster (95% interval
        # 1.001x to 1.009x faster)' was a geometric mean of 0.99494.
        (lambda: speed_words(0.99494, 0.99106, 0.99900), "1.005x faster"),
        (lambda: speed_words(1.00495, 1.001, 1.009), "1.005x slower"),
        (lambda: speed_words(1.25, 1.2, 1.3), "1.25x slower"),
        # A change of 3 parts in a million (3 us in 1 s, nanosecond jitter): the interval read
        # "1 to 1" beside "slower", its ends cut at six digits.
        (lambda: " to ".join(interval_text(1.0000029895, 1.0000030185)), "1.00000299 to 1.00000302"),
        (lambda: estimate_text(1.000003, 1.0000029895, 1.0000030185, ".3f", "x"), "1.000003x"),
        (lambda: speed_words(1.000003, 1.0000029895, 1.0000030185), "1.000003x slower"),
        (lambda: " to ".join(interval_text(0.99999999997, 0.99999999999)), "0.99999999997 to 0.99999999999"),
        # A few units in the last place apart (a second review: "1 to 1" beside "slower").
        (
            lambda: " to ".join(interval_text(1.0000000000000002, 1.0000000000000004)),
            "1.0000000000000002 to 1.0000000000000004",
        ),
        (lambda: speed_words(1.0000000000000004, 1.0000000000000002, 1.0000000000000007), "1.0000000000000004x slower"),
    ],
)
def test_ratio_words_never_round_a_change_to_one_or_call_a_straddling_interval_one_way(
    words: Callable[[], str], expected: str
) -> None:
    assert words() == expected


def test_a_speedup_over_loops_of_unjudged_contention_or_other_threads_is_not_given(tmp_path: Path) -> None:
    """A review: compiled over eager on a side was given with no flag where the side's eager and
    compiled loops ran on other thread counts, or where a loop's CPU wait was not read though its
    log could record it (contention not judged), while the same page flagged those cells' ratios."""
    from tests.logbuilder import SAMPLE_RUNS, edited_sample

    run = "tiny-encoder-cpu-20261206T150111Z-1dd183"
    sample = SAMPLE_RUNS / run / "events.jsonl"
    events = edited_sample(
        run, "synthetic-speedup-flags", "A sample run's log with two warm loops' host facts edited; not a measurement."
    )

    def reported(case: str) -> dict[str, Any]:
        return [e for e in events if e["kind"] == "timing" and e["case"] == case and e.get("warm")][-1]

    threads = reported("b1-l16-contiguous-float32-compiled")["host"]["torch_threads"]
    threads["value"] = "1 intra-op, 2 inter-op"
    unread = reported("b2-l16-contiguous-float32-compiled")["host"]
    for key in ("cpu_run_s", "cpu_wait_s", "loop_wall_s"):
        unread[key] = {"value": None, "unknown_reason": "schedstat counted no time on a CPU over the loop"}
    cand = tmp_path / "cand" / "events.jsonl"
    cand.parent.mkdir()
    cand.write_text(dumps(events), encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["compare", str(sample.parent), str(cand), "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    speedups = {s["shape"]: s for s in data["speedups"] if s["layout"] == "contiguous"}
    assert speedups["(1, 16)"]["candidate"] is None
    assert (
        speedups["(1, 16)"]["candidate_flag"]
        == "not compared: the eager and compiled loops ran under other torch threads"
    )
    assert speedups["(2, 16)"]["candidate"] is None
    assert speedups["(2, 16)"]["candidate_flag"] == "not compared: CPU wait not recorded: contention not judged"
    assert speedups["(1, 32)"]["candidate"] is not None and speedups["(1, 32)"]["candidate_flag"] is None
    assert all(speedups[shape]["baseline"] is not None for shape in ("(1, 16)", "(2, 16)", "(1, 32)"))


def test_a_ratio_beyond_a_float_is_no_figure_in_the_csv_as_in_the_json(tmp_path: Path) -> None:
    """A review: a baseline of subnormal warm times (about 1e-310 s) against 0.1 s gives a ratio
    beyond a float; compare.json wrote null and the page 'out of range', compare-details.csv 'inf'.
    Against 1 ms the ratio (1e307) is a float but beyond judging: the page said 'out of range' and
    both exports gave the figure."""
    for scale in (100.0, 1.0):
        _assert_out_of_range_is_no_figure(tmp_path / str(scale), scale)


def _assert_out_of_range_is_no_figure(tmp_path: Path, scale: float) -> None:
    before, after = timing_log("tiny-baseline", seed=1), timing_log("normal", seed=2, scale=scale)
    rng = random.Random(3)
    timed = next(e for e in before if e["kind"] == "timing" and "warm" in e)
    timed["warm"] = _warm([1e-310 * (1 + 0.01 * rng.gauss(0.0, 1.0)) for _ in range(30)])
    paths = []
    for name, events in (("before", before), ("after", after)):
        path = tmp_path / name / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(events), encoding="utf-8")
        paths.append(path)
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", *map(str, paths), "--out", str(out), "--format", "md,json"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    cell = next(c for c in data["cells"] if c["case"] == timed["case"])
    assert cell["timing"]["warm"]["ratio"] is None
    assert "out of range" in (out / "compare.md").read_text(encoding="utf-8")
    rows = list(csv.DictReader((out / "compare-details.csv").read_text(encoding="utf-8").splitlines()))
    row = next(r for r in rows if r["case"] == timed["case"])
    assert row["warm_ratio"] == ""
    assert not [(r["case"], k) for r in rows for k, v in r.items() if v in ("inf", "-inf", "nan")]
    # The compiled-over-eager speed-up of that shape on the baseline side, beyond judging too (a
    # second review: 1.2e-307 in both exports beside the page's "out of range").
    assert "out of range" in (out / "compare.md").read_text(encoding="utf-8")
    for speedup in data["speedups"]:
        for side in ("baseline", "candidate"):
            assert speedup[side] is None or 1e-150 <= speedup[side] <= 1e150, speedup
    for name in ("baseline_compiled_speedup", "candidate_compiled_speedup"):
        assert all(r[name] == "" or 1e-150 <= float(r[name]) <= 1e150 for r in rows), name


def test_compare_details_names_the_changed_criteria_beside_a_status(tmp_path: Path) -> None:
    """A cell that mismatched under a narrowed atol and passes under the wider one read
    "passes under a changed criterion" on the pages and in compare.json, but plain
    mismatch -> pass with nothing said in compare-details.csv."""
    base, cand = _pair(tmp_path, noise=0.01)

    def narrow(events: list[dict[str, Any]]) -> None:
        plan = next(e for e in events if e["kind"] == "plan")
        plan["tolerances"]["float32"]["atol"] = plan["tolerances"]["float32"]["atol"] / 10

    _edit(base, narrow)
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(out), "--format", "md,json"])
    assert result.exit_code == 0, result.output
    with (out / "compare-details.csv").open(encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["comparable"] == "yes"]
    assert rows and all("float32 tolerance" in r["changed_criteria"] for r in rows), rows[0]
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    by_case = {c["case"]: c for c in data["cells"]}
    assert all(r["changed_criteria"] == "; ".join(by_case[r["case"]]["changed_criteria"]) for r in rows)
