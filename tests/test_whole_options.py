"""The collector's and the campaign tool's options are written whole.

argparse reads a prefix of an option as the option (`--wa 5` as `--warm 5`) unless told not to.
A log records the collector's command as typed, so an abbreviation reads differently from the
option a report names; and an option added later makes an old abbreviation ambiguous or changes
what it means. Both tools refuse one, as a usage error (exit 2), before anything is written.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from campaign.__main__ import parse_args as campaign_args
from collector.__main__ import parse_args as collector_args
from collector.inspect import parse_args as inspect_args


def test_the_collector_refuses_an_abbreviated_option(capsys: pytest.CaptureFixture[str]) -> None:
    whole = collector_args(["--workload", "plan.toml", "--warm", "5"])
    assert whole.warm == 5
    with pytest.raises(SystemExit) as stopped:
        collector_args(["--workload", "plan.toml", "--wa", "5"])
    assert stopped.value.code == 2
    assert "--wa" in capsys.readouterr().err


def test_collector_inspect_refuses_an_abbreviated_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        inspect_args(["--worklo", "plan.toml"])
    assert stopped.value.code == 2
    assert "--workload" in capsys.readouterr().err  # still required: the prefix did not stand for it


@pytest.mark.parametrize("command", ["submit", "status", "resume"])
def test_each_campaign_command_refuses_an_abbreviated_option(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    # --format (status) and --scheduler (submit, resume), each cut short.
    short = ["--form", "json"] if command == "status" else ["--sched", "slurm"]
    with pytest.raises(SystemExit) as stopped:
        campaign_args([command, "campaign.toml", *short])
    assert stopped.value.code == 2
    assert short[0] in capsys.readouterr().err


def test_every_parser_in_the_tools_is_made_with_abbreviations_off() -> None:
    """The parsers of the fresh cell processes too (collector.cellproc, collector.coldstart),
    which no command above reaches: every parser the two packages make says allow_abbrev=False."""
    made = 0
    for source in sorted([*ROOT.joinpath("collector").rglob("*.py"), *ROOT.joinpath("campaign").rglob("*.py")]):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _called(node) in PARSER_MAKERS:
                made += 1
                off = [k for k in node.keywords if k.arg == "allow_abbrev"]
                where = f"{source.relative_to(ROOT)}:{node.lineno}"
                assert off and isinstance(off[0].value, ast.Constant) and off[0].value.value is False, where
    assert made >= 7  # collector run, inspect, cellproc, coldstart; campaign and its three commands


PARSER_MAKERS = ("ArgumentParser", "_Parser", "add_parser")
ROOT = Path(__file__).resolve().parent.parent


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
