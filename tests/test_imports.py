"""Commands import only what they use: the heavy modules stay out of --help, validate and a
site build that finds nothing to do (each checked in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


from tests.conftest import REPO

SAMPLE_LOG = sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*/events.jsonl"))[-1]
# Runs `python -m reportgen ARGS` in this interpreter, then prints which heavy modules it loaded.
PROBE = """
import json, runpy, sys
heavy = json.loads(sys.argv[1])
sys.argv = ["reportgen", *sys.argv[2:]]
try:
    runpy.run_module("reportgen", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
print("LOADED " + json.dumps({"code": code, "heavy": sorted(m for m in heavy if m in sys.modules)}), file=sys.stderr)
"""
HEAVY = ["pydantic", "plotly", "pandas", "numpy", "s3fs", "fsspec", "botocore", "jinja2", "markdown_it", "narwhals"]


def loaded(*args: str) -> tuple[int | None, list[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY), *args], cwd=REPO, capture_output=True, text=True, check=False)
    line = next(l for l in done.stderr.splitlines() if l.startswith("LOADED "))
    found = json.loads(line[len("LOADED "):])
    return found["code"], found["heavy"]


def test_help_imports_no_heavy_module() -> None:
    code, heavy = loaded("--help")
    assert code in (0, None) and heavy == [], heavy


def test_validate_imports_no_renderer_chart_frame_or_object_store_module() -> None:
    code, heavy = loaded("validate", str(SAMPLE_LOG))
    assert code in (0, None)
    assert set(heavy) <= {"pydantic"}, heavy


def test_validate_imports_no_pydantic_while_every_line_passes() -> None:
    code, heavy = loaded("validate", str(SAMPLE_LOG))
    assert code in (0, None) and heavy == [], heavy


def test_validate_imports_the_models_for_a_line_that_fails(tmp_path: Path) -> None:
    """The careful path, which explains a bad line, is the pydantic models: imported on demand."""
    bad = tmp_path / "events.jsonl"
    lines = SAMPLE_LOG.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b'"seq": ', b'"seq": "x", "bonus": ', 1)
    bad.write_bytes(b"\n".join(lines))
    code, heavy = loaded("validate", str(bad))
    assert code == 1 and heavy == ["pydantic"], (code, heavy)


def test_a_site_build_with_nothing_to_do_imports_no_heavy_module(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for folder in sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*"))[-1:]:
        (runs / folder.name).mkdir()
        (runs / folder.name / "events.jsonl").write_bytes((folder / "events.jsonl").read_bytes())
    then = time.time_ns() - 3600 * 10**9  # a change just now is never trusted by the no-op check
    for path in sorted(runs.rglob("*"), reverse=True) + [runs]:
        os.utime(path, ns=(then, then))
    first = subprocess.run([sys.executable, "-m", "reportgen", "site", str(runs), "--out", str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr[-2000:]
    code, heavy = loaded("site", str(runs), "--out", str(tmp_path / "site"))
    assert code in (0, None) and heavy == [], heavy
