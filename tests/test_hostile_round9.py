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
    out = tmp_path / "out"  # (never the working folder: a submit that went on would write there)
    assert campaign_main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("campaign: ") and "File name too long" in err, err


def test_campaign_status_with_a_name_too_long_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert campaign_main(["status", str(tmp_path / LONG)]) == 2
    err = capsys.readouterr().err
    assert err == f"campaign: {tmp_path / LONG}: File name too long\n"


def test_plan_check_text_quotes_an_inspection_newline_on_its_line(tmp_path: Path) -> None:
    """A newline in an inspection log's host, torch version, operator name or break reason
    started a line of its own in plan-check's text, one that read 'error: forged ...'."""
    import json

    events = [json.loads(line) for line in (REPO / "sample_inspections" / "tiny-encoder.inspection.jsonl").open()]
    events[0]["host"] = "cpu\nerror: forged-host"
    events[0]["torch"] = "2.13.0\nerror: forged-torch"
    events[1]["operators"].append({"name": "aten::x\nerror: forged-op", "count": 1})
    events[1]["graph_breaks"] = [{"reason": "r\nerror: forged-break", "count": 1}]
    inspection = tmp_path / "i.jsonl"
    inspection.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    plan = REPO / "collector" / "workloads" / "tiny_encoder.toml"
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--inspection", str(inspection)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert not [line for line in result.output.splitlines() if line.startswith("error:")], result.output
    for forged in ("forged-host", "forged-torch", "forged-op", "forged-break"):
        assert f"<U+000A>error: {forged}" in result.output, forged


def test_a_revised_plan_keeps_a_hidden_character_escaped(tmp_path: Path) -> None:
    """A description holding U+202E as the TOML escape came back in --write-revised's file as the
    raw character, which reorders the line it stands on for the person who reviews it."""
    import tomllib

    plan = tmp_path / "tiny_encoder.toml"
    text = (REPO / "collector" / "workloads" / "tiny_encoder.toml").read_text(encoding="utf-8")
    text = text.replace('dtypes = ["float32"]', 'dtypes = ["float32", "float64"]')
    text = (
        text.replace("SDPA.", "SDPA \\u202e \\u00ad \\U000E0041.")
        + "\n[tolerances.float64]\natol = 1e-9\nrtol = 1e-7\n"
    )
    plan.write_text(text, encoding="utf-8")
    (tmp_path / "tiny_encoder.py").write_text((REPO / "collector" / "workloads" / "tiny_encoder.py").read_text())
    revised = tmp_path / "revised.toml"
    result = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(revised)])
    assert revised.is_file(), result.output
    written = revised.read_text(encoding="utf-8")
    assert "\u202e" not in written and "\u00ad" not in written and "\U000e0041" not in written
    assert "SDPA \\u202E \\u00AD \\U000E0041." in written
    assert tomllib.loads(written)["workload"]["description"].endswith("SDPA \u202e \u00ad \U000e0041.")


@pytest.mark.parametrize("package", ["collector", "campaign"])
def test_the_version_check_parses_on_python_2(package: str) -> None:
    """`python -m collector --help` under Python 2.7 (`python` on some device images) ended in
    a SyntaxError traceback: the f-string of the version check itself could not be parsed. The
    package's __init__ keeps to syntax Python 2.7 reads: no f-string, no annotation."""
    import ast

    tree = ast.parse((REPO / package / "__init__.py").read_text(encoding="utf-8"))
    newer = [
        type(node).__name__
        for node in ast.walk(tree)
        if isinstance(node, (ast.JoinedStr, ast.AnnAssign, ast.NamedExpr, ast.AsyncFunctionDef))
        or (isinstance(node, ast.FunctionDef) and (node.returns or any(a.annotation for a in node.args.args)))
        or (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    assert newer == [], newer


def test_a_revised_plan_through_a_file_says_its_folder_is_no_folder(tmp_path: Path) -> None:
    """--write-revised FILE/x said 'exists and is not a plan that plan-check revised', of a path
    that does not exist (a review of this round's fixes)."""
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    plan = REPO / "collector" / "workloads" / "scenario_a.toml"
    result = CliRunner().invoke(
        main, ["plan-check", str(plan), "--target", "neuron", "--write-revised", str(afile / "x")]
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"reportgen plan-check: --write-revised {afile / 'x'}: its folder {afile} is not a folder"
    ]
