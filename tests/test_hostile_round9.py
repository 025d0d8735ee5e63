"""Hostile input, a ninth round (outside review): a path longer than the file system allows
printed a traceback from reportgen site and from campaign submit, resume and status (Python
3.11's Path.is_dir and is_file raise ENAMETOOLONG rather than answer False)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from campaign.__main__ import main as campaign_main
from reportgen.cli import main
from tests.conftest import REPO
from tests.test_campaign_review_fixes import write_campaign

LONG = "b" * 300  # one name longer than the 255 bytes a Linux file system allows


def test_site_out_with_a_name_too_long_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["site", str(REPO / "sample_runs"), "--out", str(tmp_path / LONG)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    (line,) = result.output.splitlines()
    assert line == f"reportgen: {tmp_path / LONG}: File name too long"


@pytest.mark.parametrize("where", ["plan", "root"])
def test_campaign_submit_with_a_name_too_long_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    path = write_campaign(tmp_path)
    text = path.read_text(encoding="utf-8")
    if where == "plan":
        text = text.replace('plan = "/plans/tiny_encoder.toml"', f'plan = "{LONG}.toml"')
    else:  # a relative plan, found under the collector root
        text = text.replace('plan = "/plans/tiny_encoder.toml"', 'plan = "collector/workloads/tiny_encoder.toml"')
        text = text.replace(f'collector_root = "{tmp_path}"', f'collector_root = "/tmp/{LONG}"')
    path.write_text(text, encoding="utf-8")
    assert campaign_main(["submit", str(path), "--scheduler", "slurm", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("campaign: ") and "File name too long" in err, err


def test_campaign_status_with_a_name_too_long_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert campaign_main(["status", str(tmp_path / LONG)]) == 2
    err = capsys.readouterr().err
    assert err == f"campaign: {tmp_path / LONG}: File name too long\n"
