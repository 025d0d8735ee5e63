"""Evidence identity between runs, as a review found it: a shipped weights file whose bytes
changed while its tensors did not (another format or key order, or a buffer the state_dict does
not hold) was named by `compare` and not by `diff` or the site's history. The logs are synthetic
(tests/logbuilder.py marks their run_start so)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.hostile import invoke
from tests.logbuilder import dumps, timing_log


def _run(tmp_path: Path, name: str, file_sha: str, external: bool, seed: int) -> Path:
    events = timing_log(f"synthetic-{name}", scale=1.0, noise=0.01, seed=seed)
    events[0]["started_at"] = f"2026-12-0{seed + 1}T00:00:00Z"
    plan = next(e for e in events if e["kind"] == "plan")
    plan.update(weights_sha256=file_sha, weights_content_sha256="c" * 64)
    artifact: dict[str, Any] = {
        "schema_version": plan["schema_version"],
        "kind": "artifact",
        "role": "weights",
        "bytes": 1,
        "time": plan["time"],
        "sha256": file_sha,
        "path": "external:/models/w.safetensors" if external else "artifacts/weights.pt",
    }
    events.insert(events.index(plan) + 1, artifact)
    for seq, event in enumerate(events):
        event["seq"] = seq
    log = tmp_path / "runs" / name / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(dumps(events), encoding="utf-8")
    return log


ITEM = "weights file (by file sha256; the same weights by content sha256"


def test_diff_and_the_site_name_a_shipped_weights_file_whose_bytes_changed_and_content_did_not(
    tmp_path: Path,
) -> None:
    before = _run(tmp_path, "a", "1" * 64, True, 0)
    after = _run(tmp_path, "b", "2" * 64, True, 1)
    result = invoke(["diff", before, after])
    assert result.code == 0, result.output
    assert ITEM in result.output and "1111111111" in result.output and "2222222222" in result.output
    data = json.loads(invoke(["diff", before, after, "--format", "json"]).output)
    assert [c for c in data["code_and_data"] if c[0].startswith("weights file")], data["code_and_data"]
    site = tmp_path / "site"
    assert invoke(["site", tmp_path / "runs", "--out", site]).code == 0
    pages = [p.read_text(encoding="utf-8") for p in (site / "workloads").glob("*/index.html")]
    assert any("weights file (by file sha256" in page for page in pages)


def test_weights_the_collector_saved_itself_are_not_named_for_their_bytes(tmp_path: Path) -> None:
    """torch.save's bytes of the same tensors differ between collector generations: only a shipped
    file's bytes are named, as compare names them."""
    before = _run(tmp_path, "a", "1" * 64, False, 0)
    after = _run(tmp_path, "b", "2" * 64, False, 1)
    result = invoke(["diff", before, after])
    assert result.code == 0, result.output
    assert ITEM not in result.output
