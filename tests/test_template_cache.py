"""Compiled report templates are kept between commands: a second process renders without
compiling any template, and the cache never changes what is rendered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SAMPLE_LOG = sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*/events.jsonl"))[-1]
# Builds a report; with "nocompile", any template compile fails the process.
REPORT = """
import sys
from pathlib import Path
import jinja2
if sys.argv[3] == "nocompile":
    def refuse(*args, **kwargs):
        raise SystemExit("a template was compiled")
    jinja2.Environment.compile = refuse
from reportgen.render.report import build_report
build_report(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def _report(tmp: Path, out: Path, mode: str, cache: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("REPORTGEN_TEMPLATE_CACHE", None)
    if cache:
        env["REPORTGEN_TEMPLATE_CACHE"] = cache
    return subprocess.run(
        [sys.executable, "-c", REPORT, str(SAMPLE_LOG), str(out), mode],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_report_compiles_no_template_and_renders_the_same(tmp_path: Path) -> None:
    first = _report(tmp_path, tmp_path / "first", "compile")
    assert first.returncode == 0, first.stderr[-2000:]
    cached = list(tmp_path.glob("_jinja2-cache-*/__reportgen_*"))
    assert cached, "the compiled templates are kept"
    second = _report(tmp_path, tmp_path / "second", "nocompile")
    assert second.returncode == 0, second.stderr[-2000:]
    assert _files(tmp_path / "first") == _files(tmp_path / "second")


def test_the_cache_can_be_turned_off_and_a_corrupt_one_is_compiled_again(tmp_path: Path) -> None:
    off = _report(tmp_path, tmp_path / "off", "nocompile", cache="off")
    assert off.returncode != 0 and "a template was compiled" in off.stderr + off.stdout
    assert not list(tmp_path.glob("_jinja2-cache-*/__reportgen_*"))
    assert _report(tmp_path, tmp_path / "first", "compile").returncode == 0
    for path in tmp_path.glob("_jinja2-cache-*/__reportgen_*"):
        path.write_bytes(b"not bytecode")
    again = _report(tmp_path, tmp_path / "again", "compile")
    assert again.returncode == 0, again.stderr[-2000:]
    assert _files(tmp_path / "first") == _files(tmp_path / "again")
