"""Campaigns: many collector runs as jobs of the fleet's own scheduler (Slurm, Kubernetes).

Runs on a login node or a laptop, never on the device: standard library only. It reads a
campaign file (spec), writes the scheduler's input around the one task script (task.sh), keeps
a ledger of every planned task in the destination (ledger), and prints or resumes it
(``python -m campaign``). See docs/campaigns.md.
"""

import sys

# The campaign reads TOML with tomllib (Python 3.11): on an older interpreter (a login node's
# system Python, say) it says so in one line, not with a traceback from its first import. This
# file parses on any Python from 2.7 on (no f-string: a login node's `python` may be 2.7).
if sys.version_info < (3, 11):
    sys.stderr.write(
        "campaign: needs Python 3.11 or newer, this is %d.%d (%s)\n"  # noqa: UP031
        % (sys.version_info[0], sys.version_info[1], sys.executable)
    )
    raise SystemExit(2)
