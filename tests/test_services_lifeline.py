"""A daemon the tests start (tests/services.py) ends with the test process that started it, even
when that process is killed and no fixture tears down: before, a run killed from outside left
its Slurm daemons and S3 server running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

SCRIPT = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.services import Daemons
daemon = Daemons().start("sleeper", [sys.executable, "-c", "import time; time.sleep(120)"], Path(sys.argv[2]))
print(daemon.pid, flush=True)
time.sleep(120)
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (an exited one nobody reaped is a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's")
def test_a_daemon_ends_when_the_test_process_that_started_it_is_killed(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(REPO), str(tmp_path / "sleeper.log")], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    try:
        assert _running(pid)
        parent.kill()  # no teardown runs
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(pid), "the daemon outlived the killed test process"
    finally:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)
        parent.stdout.close()
