"""reportgen.storage.local.open_regular: an interrupt in the reader's set-up closes its descriptor
once, never a second time (the second close would hit whatever file got that number since)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from reportgen.storage import local


def test_an_interrupt_in_the_readers_set_up_closes_its_descriptor_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C during a site build once ended it with 'cannot read the file: Bad file descriptor'
    on a later log and exit 1, not 130. open_regular closed the descriptor itself while the FileIO
    that owned it lived on (in the interrupt's traceback): freed later, it closed the same number
    again, by then another log's."""
    log = tmp_path / "a.jsonl"
    log.write_bytes(b"{}\n")
    other = tmp_path / "b.jsonl"
    other.write_bytes(b"other log\n")

    def interrupted(self: Any, raw: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(local._RegularReader, "__init__", interrupted)
    kept: BaseException | None = None
    try:
        local.open_regular(log)
    except KeyboardInterrupt as exc:
        kept = exc  # its traceback holds the reader's frames, as a dropped interrupt's may
    monkeypatch.undo()
    assert kept is not None
    with open(other, "rb", buffering=0) as stream:  # likely given the number just freed
        kept = None
        gc.collect()  # the interrupted set-up's objects go now
        assert stream.read() == b"other log\n"
