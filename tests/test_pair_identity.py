"""What a comparison says of the weights, inputs and host of a pair of runs is what the pair's logs
say, and `reportgen diff` and `reportgen compare` say it alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reportgen.render.compare import gather
from tests.test_compare import _edit, _pair, _weights

Events = list[dict[str, Any]]


def _schema(version: str) -> Any:
    def change(events: Events) -> None:
        for event in events:
            event["schema_version"] = version

    return change


def _unhashed(reason: str | None) -> Any:
    """The weights artifact carries no content hash, with ``reason`` (or none) for it."""

    def change(events: Events) -> None:
        artifact = next(e for e in events if e["kind"] == "artifact" and e["role"] == "weights")
        artifact.pop("content_sha256", None)
        if reason is not None:
            artifact["content_unknown_reason"] = reason

    return change


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("hashing failed: torch.load raised", "not hashed, although its schema 1.2 has content hashes: hashing failed"),
        (None, "left out without a reason, although its schema 1.2 has content hashes"),
    ],
)
def test_weights_without_a_content_hash_in_a_log_that_has_the_field_are_worded_from_the_log(
    tmp_path: Path, reason: str | None, said: str
) -> None:
    """Before: a schema 1.2 log whose weights were not hashed by content read '(written before
    content hashes)', which its schema version contradicts."""
    base, cand = _pair(tmp_path, noise=0.01)
    for path in (base, cand):
        _edit(path, _schema("1.2"))
    _edit(base, _weights("c" * 64, "1" * 64))
    _edit(cand, _weights(None, "2" * 64))
    _edit(cand, _unhashed(reason))
    note = gather(base, cand).notes[0]
    assert note.startswith("Weights identified by declaration only, not verified: candidate log without"), note
    assert said in note and "written before content hashes" not in note, note


def test_weights_of_logs_before_content_hashes_still_say_so(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    _edit(base, _weights(None, "1" * 64))
    _edit(cand, _weights(None, "2" * 64))
    note = gather(base, cand).notes[0]
    assert "baseline and candidate logs without a content hash (written before content hashes)" in note, note
