"""Offline side of the migration record: validate run logs, judge them, render reports."""

__version__ = "0.1.0"
