"""Offline side of the migration record: validate run logs, judge them, render reports.

Python API: ``reportgen.load_cells(paths)`` returns every planned cell of every run found
under ``paths`` as a pandas DataFrame (see ``reportgen.publish.frame`` for the columns).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    import pandas as pd

__version__ = "0.3.0"
__all__ = ["__version__", "load_cells"]


def load_cells(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Read, validate and judge every log under ``paths`` (logs, run folders or folders of runs);
    one row per planned cell per run. A path that does not exist raises FileNotFoundError naming
    it (as ``reportgen site`` refuses it), never a frame quietly without its runs; a log that is
    not valid raises ReportInputError listing its problems."""
    # pandas is imported on first use, so the command line does not pay for it.
    from reportgen.publish.frame import load_cells as frame_cells

    named = [paths] if isinstance(paths, (str, Path)) else list(paths)
    for path in named:
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, "reportgen.load_cells: no such file or folder", str(path))
    return frame_cells(named)
