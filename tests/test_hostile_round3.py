"""Hostile input, third round: what the earlier tables did not reach.

Every TOML file the tools read (a plan, annotations, a site configuration, a campaign) goes
through tomllib, which refuses an integer longer than Python's digit limit (4,300 digits by
default) with a plain ValueError, not a TOMLDecodeError: each reader names the file in one line
and exits with its documented code instead of a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from campaign.__main__ import main as campaign_main
from tests.conftest import FIXTURES
from tests.hostile import deadline, invoke

LONG = "1" + "0" * 5000  # past the default limit of int("...") on a string
MESSAGE = "not valid TOML: an integer of more than 4,300 digits"


def _toml(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(f"{body}\nx = {LONG}\n", encoding="utf-8")
    return path


def test_a_plan_with_an_overlong_integer_is_an_unreadable_plan(tmp_path: Path) -> None:
    plan = _toml(tmp_path, "plan.toml", '[workload]\nname = "w"\nmodule = "w.py"\n[matrix]\nshapes = [[1, 8]]')
    out = invoke(["plan-check", plan])
    assert out.code == 1, out.output
    assert f"{plan}: {MESSAGE}" in out.line_with("unreadable plan")


def test_annotations_with_an_overlong_integer_are_named_in_report_and_site(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIXTURES / "synthetic_mismatch.jsonl", run / "events.jsonl")
    notes = _toml(tmp_path, "notes.toml", "")
    report = invoke(["report", run / "events.jsonl", "--out", tmp_path / "out", "--annotations", notes])
    assert report.code == 1 and not (tmp_path / "out" / "report.html").exists(), report.output
    report.line_with(f"{notes}: {MESSAGE}")
    shutil.copy(notes, run / "annotations.toml")
    site = invoke(["site", run, "--out", tmp_path / "site"])
    assert site.code == 1, site.output
    site.line_with(f"{run / 'annotations.toml'}: {MESSAGE}")  # the annotations named, not the log


def test_a_site_configuration_with_an_overlong_integer_is_a_usage_error(tmp_path: Path) -> None:
    config = _toml(tmp_path, "site.toml", "")
    out = invoke(["site", FIXTURES / "synthetic_complete.jsonl", "--out", tmp_path / "site", "--config", config])
    assert out.code == 2, out.output
    out.line_with(f"{config}: {MESSAGE}")
    assert not (tmp_path / "site").exists()


def test_a_campaign_with_an_overlong_integer_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = _toml(tmp_path, "campaign.toml", "[campaign]")
    with deadline(60):
        code = campaign_main(["submit", str(campaign), "--scheduler", "slurm", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip() == f"campaign: {campaign}: {MESSAGE}"
