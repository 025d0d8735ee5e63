"""A fresh child runs the collector that started it, whatever folder the run was started in."""

from __future__ import annotations

from pathlib import Path

import pytest

from collector import supervise


def test_a_collector_folder_in_the_working_folder_does_not_stand_in_for_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "work"
    fake = where / "collector"
    fake.mkdir(parents=True)
    marker = tmp_path / "shadow-ran"
    (fake / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(7)\n", encoding="utf-8")
    (fake / "supervise.py").write_text("", encoding="utf-8")
    monkeypatch.chdir(where)

    ended = supervise.run_child("collector.supervise", [], lambda d: {}, 60, lambda line: True)

    assert not marker.exists(), "the working folder's collector/ was imported by the child"
    assert ended.returncode == 0, ended.error()
