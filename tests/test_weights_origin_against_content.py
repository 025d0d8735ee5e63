"""Weights shown to be the same (by content or file) are said to come from one place: where the
two logs say it differently, the comparison names the contradiction; where one log does not
say, it is told what the other says of the same weights. Before, a review's compare read
"weights origin now pretrained (was synthetic)" among changed criteria beside "Same weights by
content", and an old log beside a synthetic one read only "weights origin not recorded".
The relabelled log here is a synthetic edit of a sample run, and says so in its own record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import REPO
from tests.hostile import invoke

OLD = REPO / "sample_runs" / "tiny-encoder-cpu-20261202T021258Z-677058"  # weights origin not recorded
SYNTHETIC = REPO / "sample_runs" / "tiny-encoder-cpu-20261205T023648Z-3de80c"  # the same weights, synthetic


def _relabelled(tmp_path: Path) -> Path:
    """SYNTHETIC with its plan's weights origin written as pretrained (a hand-made contradiction)."""
    run = tmp_path / "pretrained"
    shutil.copytree(SYNTHETIC, run)
    log = run / "events.jsonl"
    lines = []
    for line in log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["kind"] == "run_start":
            event.update(
                run_id="tiny-encoder-relabelled-pretrained",
                origin="synthetic",
                origin_note="a sample run's plan edited to say pretrained",
            )
        if event["kind"] == "plan":
            assert event["weights_origin"] == "synthetic"
            event["weights_origin"] = "pretrained"
        lines.append(json.dumps(event))
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def test_compare_names_what_the_other_log_says_of_the_same_weights(tmp_path: Path) -> None:
    assert invoke(["compare", str(OLD), str(SYNTHETIC), "--out", str(tmp_path / "c")]).code == 0
    text = (tmp_path / "c" / "compare.md").read_text(encoding="utf-8")
    assert (
        "Same weights by content (sha256 44b47ea6fc5f..., tensor-content-v1); the candidate log says they are synthetic, the baseline log does not record where its weights come from."
        in text
    )


def test_compare_and_diff_name_two_origins_of_the_same_weights_as_a_contradiction(tmp_path: Path) -> None:
    relabelled = _relabelled(tmp_path)
    done = invoke(["compare", str(SYNTHETIC), str(relabelled), "--out", str(tmp_path / "c")])
    assert done.code == 0, done.output
    text = (tmp_path / "c" / "compare.md").read_text(encoding="utf-8")
    assert (
        "yet the baseline log calls them synthetic and the candidate log pretrained: the same weights cannot be both"
        in text
    )
    diff = invoke(["diff", str(SYNTHETIC), str(relabelled)]).output
    assert (
        "weights origin now pretrained (was synthetic), of same weights by content (sha256 44b47ea6fc5f..." in diff
    ), diff
    assert "at least one log's weights origin is wrong" in diff
    assert "[the same weights given two origins: at least one log's weights origin is wrong" in diff.splitlines()[0], (
        diff
    )
