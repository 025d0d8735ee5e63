"""A long step (a compile, a cold child) says it is still working; a short one stays quiet."""

from __future__ import annotations

import time

import pytest

from collector.run.state import Progress


def test_a_long_step_beats_and_a_short_one_does_not(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(3)
    with progress.heartbeat("compiling b1-l16", after=0.05, every=0.05):
        # Long enough for the 3 beats asked below even when a loaded machine runs the beating
        # thread late (on a quiet one about 12 come, at most 13 can).
        time.sleep(0.65)
    beats = [line for line in capsys.readouterr().err.splitlines() if "compiling b1-l16: still working after" in line]
    assert 3 <= len(beats) <= 13, beats
    with progress.heartbeat("quick", after=0.5, every=0.5):
        time.sleep(0.01)
    time.sleep(0.6)
    assert "quick" not in capsys.readouterr().err, "the beat stops with the step"


def test_the_beat_stops_when_the_step_raises(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(1)
    with pytest.raises(KeyboardInterrupt):
        with progress.heartbeat("compiling", after=0.02, every=0.02):
            time.sleep(0.06)
            raise KeyboardInterrupt
    capsys.readouterr()
    time.sleep(0.1)
    assert capsys.readouterr().err == ""
