"""A run of fewer cells (--only) saves the inputs and reference outputs of fewer input shapes, so
its run-wide content hashes differ from a full run's although every shape the two runs share
holds the same tensors. Before, `reportgen diff` named that as a changed inputs criterion and as
changed inputs and reference outputs among code and data. Where both logs hash each input shape
on its own, only the shapes both runs hold are compared; a real change of a shared shape is
still named, and logs without per-shape hashes are compared run-wide as before.

The runs are real collector runs of the small test workload (eager cells only, in-process)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reportgen.cli import main

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = REPO / "tests" / "workloads"
B1 = "b1-l4-contiguous-float32-eager"
SEED = "batch * 1000 + length"  # how the test workload seeds its inputs (tests/workloads/faulty.py)


def _collect(out: Path, toml: Path, only: list[str]) -> Path:
    from collector.plan import load_plan
    from collector.runner import Options, execute
    from tests.test_collector_robust import PlainBackend

    options = Options(target="cpu", out_dir=out, cold="off", warm_repetitions=5, modes=["eager"])
    options.only = only
    run_dir, code = execute(load_plan(toml), PlainBackend(), options)
    assert code == 0 and run_dir is not None
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three runs: every eager cell; the b1 cell only; the b1 cell only of a copy of the workload
    whose inputs are seeded otherwise (the same shape, other tensors)."""
    root = tmp_path_factory.mktemp("subset")
    other = root / "other-inputs"
    other.mkdir()
    shutil.copy(WORKLOAD / "faulty.toml", other / "faulty.toml")
    module = (WORKLOAD / "faulty.py").read_text(encoding="utf-8")
    assert SEED in module
    (other / "faulty.py").write_text(module.replace(SEED, f"{SEED} + 1"), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("FAULTY", raising=False)
        return {
            "full": _collect(root / "full", WORKLOAD / "faulty.toml", []),
            "subset": _collect(root / "subset", WORKLOAD / "faulty.toml", [B1]),
            "other": _collect(root / "other", other / "faulty.toml", [B1]),
        }


def _diff(before: Path, after: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["diff", str(before), str(after), "--format", "json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def _named(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The keys of the criteria changes, and the items of the code-and-data changes."""
    return [c["key"] for c in data["criteria"]], [c[0] for c in data["code_and_data"]]


def _by_key(run_dir: Path) -> dict[str, dict[str, str]]:
    """The inputs' and reference outputs' content sha256 by input shape, as the log holds them."""
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    return {e["role"]: e["content_by_key"] for e in events if e["kind"] == "artifact" and "content_by_key" in e}


def test_a_subset_run_with_the_same_shared_inputs_names_no_inputs_or_reference_change(runs: dict[str, Path]) -> None:
    full, subset = _by_key(runs["full"]), _by_key(runs["subset"])
    # The premise: the subset holds fewer shapes, each the full run's tensors.
    for role in ("inputs", "reference_output"):
        assert set(subset[role]) < set(full[role])
        assert all(full[role][key] == sha for key, sha in subset[role].items())
    for before, after in ((runs["full"], runs["subset"]), (runs["subset"], runs["full"])):
        criteria, code = _named(_diff(before, after))
        assert "inputs" not in criteria, criteria
        assert not [item for item in code if item.startswith(("inputs", "reference outputs"))], code


def test_other_tensors_for_a_shared_shape_are_still_named(runs: dict[str, Path]) -> None:
    assert _by_key(runs["other"])["inputs"]["b1-l4-contiguous"] != _by_key(runs["full"])["inputs"]["b1-l4-contiguous"]
    data = _diff(runs["full"], runs["other"])
    criteria, code = _named(data)
    assert "inputs" in criteria, criteria
    # Named shape by shape, with the shape's two hashes.
    shape = "of input shape b1-l4-contiguous (by content sha256)"
    assert f"inputs {shape}" in code and f"reference outputs {shape}" in code, code
    assert B1 in data["changed_values"], data["changed_values"]


def _without_per_shape_hashes(run_dir: Path, out: Path) -> Path:
    """The run's log as a collector before per-shape hashes would have written it (no
    content_by_key), marked synthetic: an edited log is no measurement."""
    lines = []
    for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        event.pop("content_by_key", None)
        if event["kind"] == "run_start":
            event["origin"] = "synthetic"
            event["origin_note"] = "A collector run's log with its per-shape content hashes removed; a test fixture."
        lines.append(json.dumps(event) + "\n")
    path = out / "events.jsonl"
    out.mkdir(parents=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_logs_without_per_shape_hashes_are_compared_run_wide(runs: dict[str, Path], tmp_path: Path) -> None:
    """Without per-shape hashes nothing tells which shapes the run-wide hash covers: a subset's
    other run-wide hash is still named, as before."""
    full = _without_per_shape_hashes(runs["full"], tmp_path / "full")
    subset = _without_per_shape_hashes(runs["subset"], tmp_path / "subset")
    criteria, code = _named(_diff(full, subset))
    assert "inputs" in criteria, criteria
    assert "inputs (by content sha256)" in code and "reference outputs (by content sha256)" in code, code
