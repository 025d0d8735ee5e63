"""Non-finite references and statistics are stated as measured, and facts the log recorded
(inputs as fed, warnings on passing cells, executed ops and the attention kernel, the noise
floor and float64 distance, profile top ops) appear in both report formats."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import torch

from collector.compare import compare, max_abs_between, nonfinite_count
from reportgen.render.report import build_report, judge_log
from tests.logbuilder import base_events, case_key, dumps, finish, shape_key, with_envelope

Events = list[dict[str, Any]]
COMPILED = case_key(2, 16, "compiled")
EAGER = case_key(1, 16, "eager")
NAN = float("nan")


def _report(tmp_path: Path, edit: Callable[[Events], None]) -> tuple[Any, str, str]:
    events = base_events()
    edit(events)
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    build_report(log, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    return judge_log(log), html, md


def _event(events: Events, kind: str, case: str | None = None, **match: Any) -> dict[str, Any]:
    return next(
        e
        for e in events
        if e["kind"] == kind
        and (case is None or e.get("case") == case)
        and all(e.get(k) == v for k, v in match.items())
    )


# --- point 6: non-finite references and statistics -------------------------------------------


def test_nonfinite_reference_is_its_own_finding_shown_first(tmp_path: Path) -> None:
    def edit(events: Events) -> None:
        _event(events, "reference", shape=shape_key(2, 16)).update(nonfinite=3, deterministic=True, noise_max_abs=0.0)

    judged, html, md = _report(tmp_path, edit)
    first = judged.disposition.reasons[0]
    assert first.rule == "reference-nonfinite" and first.outcome == "blocked"
    assert set(first.cases) == {COMPILED, case_key(2, 16, "eager")}
    for text, heading in ((html, "<h2>5. Mismatches and errors</h2>"), (md, "\n## 5. Mismatches and errors\n")):
        finding = text.index(f"The reference output for input {shape_key(2, 16)} is itself non-finite")
        assert finding < text.index(heading) < text.index("Non-finite reference.")
    assert html.index("Non-finite reference.") < html.index("No cell mismatched")


def _nan_cell(events: Events, mismatched: int) -> None:
    result = _event(events, "case_result", COMPILED)
    result["status"] = "nonfinite" if mismatched else "mismatch"
    result["outputs"][0]["nonfinite"] = 2
    if mismatched:
        result["error_stats"].update(max_abs=None, max_rel=0.0, mismatched=mismatched, diff_at_worst=None)
    else:  # the NaN lies outside what was judged: the judged elements' figures are finite, none outside
        result["error_stats"].update(mismatched=0)
    result["task_metric"].update(value=0.5, passed=False)
    events[:] = [e for e in events if not (e["kind"] == "timing" and e.get("case") == COMPILED)]


def test_statistics_over_nonfinite_elements_say_so(tmp_path: Path) -> None:
    _, html, md = _report(tmp_path, lambda ev: _nan_cell(ev, mismatched=2))
    for text in (html, md):
        assert (
            "not finite (2 NaN/Inf output element(s)) / 0 over finite elements only; 2 NaN/Inf output element(s) not included"
            in text
        )
        assert "worst element (largest |diff| / allowance)" in text.replace("\\|", "|")
        # the cells grouped by cause say "not finite", never a small number or nothing
        assert "|out - ref| not finite in 1 cell(s)" in text.replace("\\|", "|")


def test_no_element_is_called_worst_when_it_passes(tmp_path: Path) -> None:
    def edit(events: Events) -> None:
        # Elementwise within tolerance, but the task criterion failed: a mismatch cell whose
        # largest element is still inside its allowance.
        result = _event(events, "case_result", COMPILED)
        result["status"] = "mismatch"
        result["task_metric"].update(value=0.5, passed=False)

    _, html, md = _report(tmp_path, edit)
    for text in (html, md):
        plain = text.replace("\\|", "|").replace("\\", "")
        assert "largest |diff| / allowance (within tolerance)" in plain
        assert "worst element" not in plain


def test_matrix_header_counts_cells_with_nonfinite_outputs(tmp_path: Path) -> None:
    # The cell's status is mismatch, yet its outputs hold NaN: the header counts it.
    _, html, md = _report(tmp_path, lambda ev: _nan_cell(ev, mismatched=0))
    assert "∞ cells with non-finite outputs: 1" in md
    assert "</span> cells with non-finite outputs: 1</span>" in html


def test_deterministic_reference_with_nan_is_not_noisy() -> None:
    run = {"hidden": torch.tensor([NAN, 1.0, float("inf"), -float("inf")])}
    again = {"hidden": torch.tensor([NAN, 1.0, float("inf"), -float("inf")])}
    assert max_abs_between(run, again) == 0.0, "NaN facing NaN is bitwise agreement"
    assert max_abs_between(run, {"hidden": torch.tensor([1.0, 1.0, float("inf"), -float("inf")])}) is None
    assert nonfinite_count(run) == 3


def test_max_rel_is_not_zero_when_a_difference_is_nan() -> None:
    # NaN where the reference is 0: the relative error there is undefined, not 0.
    stats = compare({"y": torch.tensor([NAN, 1.0])}, {"y": torch.tensor([0.0, 1.0])}, 1e-5, 1e-4)
    assert stats["max_rel"] is None and stats["max_abs"] is None and stats["mismatched"] == 1
    clean = compare({"y": torch.tensor([1.0, 2.0])}, {"y": torch.tensor([1.0, 2.0])}, 1e-5, 1e-4)
    assert clean["max_rel"] == 0.0 and math.isfinite(clean["max_abs"])


# --- point 8: recorded facts shown in both formats ---------------------------------------------


def test_recorded_facts_are_shown_in_both_formats(tmp_path: Path) -> None:
    def edit(events: Events) -> None:
        _event(events, "case_result", EAGER)["inputs"] = [
            {"name": "input_ids", "shape": [1, 16], "dtype": "int64", "nonfinite": 0, "contiguous": False},
        ]
        _event(events, "case_result", case_key(1, 16, "compiled")).update(
            inputs_fed=[
                {
                    "name": "input_ids",
                    "shape": [1, 16],
                    "dtype": "int64",
                    "nonfinite": 0,
                    "contiguous": False,
                    "strides": [1, 2],
                    "device": "cpu",
                }
            ],
            layout_fed="noncontiguous",
        )
        _event(events, "case_result", COMPILED)["warnings"] = [
            "UserWarning: TensorFloat32 tensor cores available but not enabled"
        ]
        _event(events, "operators", EAGER)["executed"] = {
            "status": "measured",
            "items": ["aten::addmm", "aten::_scaled_dot_product_flash_attention_for_cpu"],
        }
        _event(events, "reference", shape=shape_key(1, 16)).update(
            noise_max_abs=1.5e-8, deterministic=False, float64_max_abs=2.25e-7
        )

    _, html, md = _report(tmp_path, edit)
    for text in (html, md):
        plain = text.replace("\\", "")
        # inputs as fed, with "not measured" for a cell that recorded none
        assert (
            "input_ids int64[1, 16], contiguous no, strides not measured, device not measured; what the model received: not measured"
            in plain
        )
        assert "not measured (the case_result lists no inputs)" in plain
        assert "input_ids int64[1, 16], contiguous no, strides [1, 2], device cpu; layout fed: noncontiguous" in plain
        # a warning on a passing cell
        assert "TensorFloat32 tensor cores available but not enabled" in plain
        assert f"`{COMPILED}` (pass)" in plain or f"{COMPILED}</code></a> (pass)" in plain
        # the attention kernel that ran, from the operators event, apart from the plan's claim
        assert "aten::_scaled_dot_product_flash_attention_for_cpu (1 cell(s))" in plain
        assert "Attention path (the workload's claim)" in plain.replace("&#39;", "'")
        # noise floor and float64 golden distance
        assert "1.5e-08" in plain and "2.25e-07" in plain
        # profile top ops
        assert "aten::addmm" in plain and "120.5" in plain


def test_timing_with_cpu_fallback_is_flagged(tmp_path: Path) -> None:
    def edit(events: Events) -> None:
        _event(events, "operators", EAGER)["fallback"] = {"status": "measured", "items": ["aten::gelu"]}

    _, html, md = _report(tmp_path, edit)
    row = next(line for line in md.splitlines() if line.startswith(f"| `{EAGER}` |") and "ms" in line)
    assert row.rstrip().endswith("includes CPU fallback |")
    assert "includes CPU fallback" in html
