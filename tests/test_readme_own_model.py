"""README's "Your own model, on a CPU first" runs as written: its module and plan, saved under
the names their first lines give, pass plan-check, the collector runs them on the CPU, and the
report of that run is made, with every cell recorded. Before, a new user found the module
contract about 450 lines into collector/README.md and had no short way in (a review)."""

from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from reportgen.contract.validation import read_log
from tests.conftest import REPO
from tests.hostile import invoke

SECTION = "## Your own model, on a CPU first"


def _blocks() -> list[tuple[str, str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert SECTION in text
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, re.S)


def test_the_readme_s_own_model_runs_as_written(tmp_path: Path) -> None:
    blocks = _blocks()
    assert [lang for lang, _ in blocks] == ["python", "toml", "sh"]
    for _, body in blocks[:2]:
        name = body.splitlines()[0].removeprefix("# ").strip()
        (tmp_path / name).write_text(body, encoding="utf-8")
    commands = [shlex.split(line.split("#", 1)[0]) for line in blocks[2][1].splitlines() if line.strip()]
    assert [c[:2] for c in commands] == [["reportgen", "plan-check"], ["python", "-m"], ["reportgen", "report"]]
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        review = invoke(commands[0][1:])
    finally:
        os.chdir(cwd)
    assert review.code == 0 and "Compatible as specified" in review.output, review.output
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, *commands[1][1:]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # The report names the latest run's folder: "$(ls -d runs/my-mlp-cpu-*/ | tail -n 1)".
    latest = re.fullmatch(r"\$\(ls -d (\S+) \| tail -n 1\)", commands[2][2])
    assert latest is not None, commands[2]
    run = sorted(glob.glob(str(tmp_path / latest[1])))[-1]
    reading = read_log(Path(run) / "events.jsonl")
    assert reading.problems == [] and reading.complete, [p.format() for p in reading.problems]
    assert sum(e.kind == "case_result" for e in reading.events) == 8
    report = invoke(["report", run, "--out", str(tmp_path / commands[2][-1])])
    assert report.code == 0, report.output
    page = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "synthetic weights" in page and "on cpu: evidence for cpu" in page


def test_the_readme_s_way_to_compiled_cells_passes_plan_check(tmp_path: Path) -> None:
    """A review: README said only 'add "compiled" to modes for torch.compile', and the plan so
    edited read 'needs a revised test plan: no cache check'. Its words now give the key too."""
    toml = next(body for lang, body in _blocks() if lang == "toml")
    text = (REPO / "README.md").read_text(encoding="utf-8").split(SECTION, 1)[1].split("\n## ", 1)[0]
    assert 'add `"compiled"` to `modes`' in text and "`cache_checks = [[1, 8]]`" in text
    plan = tmp_path / "my_mlp.toml"
    edited = toml.replace('modes = ["eager"]', 'modes = ["eager", "compiled"]\ncache_checks = [[1, 8]]')
    assert edited != toml
    plan.write_text(edited, encoding="utf-8")
    module = next(body for lang, body in _blocks() if lang == "python")
    (tmp_path / "my_mlp.py").write_text(module, encoding="utf-8")
    review = invoke(["plan-check", str(plan)])
    assert review.code == 0 and "Compatible as specified" in review.output, review.output
