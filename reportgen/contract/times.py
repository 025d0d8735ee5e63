"""Times from a log, read once: an ISO 8601 stamp as an aware UTC datetime, or None."""

from __future__ import annotations

from datetime import datetime, timezone


def utc_time(stamp: str) -> datetime | None:
    """The stamp in UTC (one without a zone is taken as UTC); None when it is not an ISO time."""
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        # A time whose UTC instant falls outside the years a datetime holds (9999-12-31T23:00
        # at -03:00) is no time to order by either.
        return when.astimezone(timezone.utc) if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError):
        return None


def placeable(stamp: str) -> bool:
    """Whether a history can place the stamp: an ISO 8601 time within the years 1678 to 2261
    (pandas' range, which histories hold); validate warns of any other, and such a run is
    placed last and never taken as the latest."""
    when = utc_time(stamp)
    return when is not None and 1677 < when.year < 2262
