"""Offline side of the migration record: validate run logs, judge them, render reports.

Python API: ``reportgen.load_cells(paths)`` returns every planned cell of every run found
under ``paths`` as a pandas DataFrame (see ``reportgen.publish.frame`` for the columns).
"""

from __future__ import annotations

from typing import Any

from reportgen._version import __version__

__all__ = ["__version__", "load_cells"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so the command line does not pay for pandas.
    if name == "load_cells":
        from reportgen.publish.frame import load_cells

        return load_cells
    raise AttributeError(f"module 'reportgen' has no attribute {name!r}")
