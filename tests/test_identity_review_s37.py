"""Evidence identity (an outside review): what a comparison says of the runs it holds."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from reportgen.cli import main
from tests.conftest import REPO
from tests.logbuilder import edited_sample

SAMPLES = REPO / "sample_runs"
EARLIER, LATER = "tiny-encoder-cpu-20261205T124447Z-43ef64", "tiny-encoder-cpu-20261206T150111Z-1dd183"


def _synthetic_replicate(folder: Path) -> Path:
    """The later sample relabelled synthetic, its warm samples 1% faster (not a copy's)."""
    events = edited_sample(LATER, "synthetic-replicate", "the later tiny-encoder sample, warm samples scaled by 0.99")
    for event in events:
        warm = event.get("warm") if event["kind"] == "timing" else None
        if warm:
            warm["samples_s"] = [x * 0.99 for x in warm["samples_s"]]
            for key in ("min_s", "median_s", "p90_s", "iqr_s"):
                if isinstance(warm.get(key), float):
                    warm[key] *= 0.99
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return folder


def test_a_synthetic_fixture_given_as_a_further_replicate_is_named(tmp_path: Path) -> None:
    """compare with replicates took a side's synthetic label from its first run alone: a fixture
    given as the second --candidate went unsaid (the word 'synthetic' nowhere in compare.md),
    its samples in the side's interval. diff said it."""
    fixture = _synthetic_replicate(tmp_path / "fixture")
    out = tmp_path / "compare"
    args = ["compare", "--baseline", str(SAMPLES / EARLIER), "--candidate", str(SAMPLES / LATER)]
    result = CliRunner().invoke(main, [*args, "--candidate", str(fixture), "--out", str(out), "--format", "md,json"])
    assert result.exit_code == 0, result.output
    text = (out / "compare.md").read_text(encoding="utf-8")
    assert "> **Synthetic fixture.** The candidate log was written by hand" in text
    assert "**Synthetic fixture on the candidate, not a measurement: evidence of nothing" in text
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert data["candidate"]["synthetic"] is True and data["baseline"]["synthetic"] is False
