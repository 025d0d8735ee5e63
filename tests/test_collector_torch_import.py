"""A torch that cannot be imported stops the collector with one line, not a traceback.

torch autoloads the backend modules installed beside it (the ``torch.backends`` entry point
group: torch_neuronx registers itself there), and one that fails to load makes ``import torch``
itself raise, whatever target the run asks for. Such a broken module is made here as a
distribution in a temporary folder on the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def _broken_site(tmp_path: Path) -> dict[str, str]:
    """The environment of a process whose torch autoloads a backend module that fails to load."""
    site = tmp_path / "site"
    info = site / "broken_backend-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-backend\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[torch.backends]\nbroken_backend = broken_backend:_autoload\n")
    (site / "broken_backend.py").write_text(
        'def _autoload():\n    raise ImportError("libnrt.so.1: cannot open shared object file")\n', encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(site)])
    return env


@pytest.mark.parametrize("command", ["run", "inspect"])
def test_a_backend_module_that_breaks_import_torch_is_one_line_and_exit_3(tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    plan = REPO / "collector" / "workloads" / "tiny_encoder.toml"
    argv = ["--workload", str(plan), "--out", str(out)]
    argv = [*argv, "--target", "cpu"] if command == "run" else ["inspect", *argv]
    done = subprocess.run(
        [sys.executable, "-m", "collector", *argv],
        cwd=REPO,
        env=_broken_site(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    said = "collector: " if command == "run" else "collector inspect: "
    assert lines[0].startswith(f"{said}torch cannot be imported here: RuntimeError: "), lines[0]
    # torch names the module; the module's own error says what is missing.
    assert "broken_backend" in lines[0], lines[0]
    assert lines[0].endswith("(because ImportError: libnrt.so.1: cannot open shared object file)"), lines[0]
    assert not out.exists()
