"""Lint, format and type checks, run by the test command like every other check.

Their configuration is in pyproject.toml ([tool.ruff], [tool.mypy]); ruff and mypy are test
dependencies pinned in constraints.txt, so CI and a contributor run the same versions.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent
# What ruff reads; mypy's files are set in pyproject.toml ([tool.mypy] files).
LINTED = [".ci", "campaign", "collector", "reportgen", "tests"]


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_ruff_lint_passes() -> None:
    proc = _run("ruff", "check", "--no-cache", "--output-format", "concise", *LINTED, timeout=120)
    assert proc.returncode == 0, (
        f"ruff check found problems (fix them, or `ruff check --fix`):\n{proc.stdout}{proc.stderr}"
    )


def test_ruff_format_leaves_the_code_unchanged() -> None:
    proc = _run("ruff", "format", "--check", "--no-cache", *LINTED, timeout=120)
    assert proc.returncode == 0, f"not formatted (run `ruff format`):\n{proc.stdout}{proc.stderr}"


def test_mypy_passes() -> None:
    # Files and settings from pyproject.toml. Its cache (.mypy_cache, ignored by git) makes a
    # second run take seconds; a first one about a minute of CPU.
    proc = _run("mypy", timeout=900)
    assert proc.returncode == 0, f"mypy found type errors:\n{proc.stdout}{proc.stderr}"


def test_the_checks_fail_on_a_planted_error(tmp_path: Path) -> None:
    """The two tools read this project's configuration and report what they find: an unused
    import for ruff, a str passed as an int for mypy, each in a copy of a real module."""
    source = (REPO / "campaign" / "slurm.py").read_text(encoding="utf-8")
    bad = tmp_path / "bad.py"
    bad.write_text(
        source + "\n\nimport textwrap\n\n\ndef _planted() -> int:\n    return array_spec('3')\n", encoding="utf-8"
    )
    ruff = _run("ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad), timeout=120)
    assert ruff.returncode == 1 and "F401" in ruff.stdout, ruff.stdout + ruff.stderr
    mypy = _run("mypy", "--config-file", str(REPO / "pyproject.toml"), str(bad), timeout=600)
    assert mypy.returncode == 1 and "[arg-type]" in mypy.stdout and "[return-value]" in mypy.stdout, (
        mypy.stdout + mypy.stderr
    )
