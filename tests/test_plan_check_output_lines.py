"""plan-check's output: each line is one the tool wrote (a review of plan-check as an attacker).

Before: a plan file named "evil\\n[BLOCK] fake finding.toml" printed a line of its own that read as
a finding; a shape of 100,000 numbers was echoed whole in a "one-line" error of 300 kB.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main

WORKLOADS = Path(__file__).resolve().parent.parent / "collector" / "workloads"


def test_a_newline_in_the_plan_s_file_name_starts_no_line_of_its_own(tmp_path: Path) -> None:
    shutil.copy(WORKLOADS / "tiny_encoder.py", tmp_path / "tiny_encoder.py")
    plan = tmp_path / "evil\n[BLOCK] fake finding.toml"
    shutil.copy(WORKLOADS / "tiny_encoder.toml", plan)
    done = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "cpu"])
    assert done.exit_code in (0, 1), done.output
    first, *rest = done.output.splitlines()
    assert first.startswith(f"{tmp_path}/evil<U+000A>[BLOCK] fake finding.toml: ")
    assert not any(line.startswith("[BLOCK]") for line in rest)


def test_a_plan_error_echoing_a_huge_value_stays_short(tmp_path: Path) -> None:
    shutil.copy(WORKLOADS / "tiny_encoder.py", tmp_path / "tiny_encoder.py")
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    start = text.index("shapes = ")
    end = text.index("\n", start)
    plan = tmp_path / "long.toml"
    plan.write_text(text[:start] + "shapes = [[" + ", ".join(["2"] * 100_000) + "]]" + text[end:], encoding="utf-8")
    done = CliRunner().invoke(main, ["plan-check", str(plan), "--target", "cpu"])
    assert done.exit_code == 1
    message = done.output.strip()
    assert "\n" not in message and len(message) < 1_500
    assert "each shape is [batch, length] with positive integers, got [2, 2" in message
    assert message.endswith("characters)")


def test_a_plan_error_naming_a_huge_key_stays_short_and_names_the_file_escaped(tmp_path: Path) -> None:
    """A second review: the cut covered the message, not the 100,000-character key before it;
    and the collector printed a newline of the plan's file name raw."""
    from collector.plan import load_plan
    from collector.planschema import PlanError

    shutil.copy(WORKLOADS / "tiny_encoder.py", tmp_path / "tiny_encoder.py")
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    plan = tmp_path / "evil\n[BLOCK] fake.toml"
    plan.write_text(text.replace("[matrix]\n", "[matrix]\n" + "k" * 100_000 + " = 1\n", 1), encoding="utf-8")
    try:
        load_plan(plan)
    except PlanError as exc:
        message = str(exc)
    else:
        raise AssertionError("a plan with an unknown key loaded")
    assert "\n" not in message and len(message) < 1_300
    assert message.startswith(f"{tmp_path}/evil<U+000A>[BLOCK] fake.toml:")
    assert message.endswith("... (100,007 characters): unknown key in [matrix]")


def test_the_collector_s_plan_errors_are_one_line_whatever_the_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A third review: invalid TOML, an unreadable file and a missing module each printed the
    plan's name with its newline raw, so a line of its own read "[BLOCK] ..."."""
    from collector.__main__ import main as collector_main

    bad = tmp_path / "bad\n[BLOCK] x.toml"
    bad.write_text("[matrix\n", encoding="utf-8")
    module = tmp_path / "mod\n[BLOCK] z.toml"
    module.write_text((WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8"), encoding="utf-8")
    for plan in (bad, tmp_path / "missing\n[BLOCK] y.toml", module):
        assert collector_main(["--workload", str(plan), "--target", "cpu", "--list"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("collector: plan error: "), err
        assert "<U+000A>[BLOCK]" in err


def test_a_long_key_is_cut_and_the_message_kept(tmp_path: Path) -> None:
    """A third review: the cut at 1,000 characters took the whole line, key path first, and the
    message ("unknown key in [matrix]") was lost."""
    from collector.plan import load_plan
    from collector.planschema import PlanError

    shutil.copy(WORKLOADS / "tiny_encoder.py", tmp_path / "tiny_encoder.py")
    text = (WORKLOADS / "tiny_encoder.toml").read_text(encoding="utf-8")
    plan = tmp_path / "long.toml"
    plan.write_text(text.replace("[matrix]\n", "[matrix]\n" + "k" * 100_000 + " = 1\n", 1), encoding="utf-8")
    with pytest.raises(PlanError) as refused:
        load_plan(plan)
    message = str(refused.value)
    assert len(message) < 600 and message.endswith(": unknown key in [matrix]"), message[:300]
    assert "... (100,007 characters)" in message
