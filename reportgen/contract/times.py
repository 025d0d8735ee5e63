"""Times from a log, read once: an ISO 8601 stamp as an aware UTC datetime, or None."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone


def utc_time(stamp: str) -> datetime | None:
    """The stamp in UTC (one without a zone is taken as UTC); None when it is not an ISO time."""
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        # A time whose UTC instant falls outside the years a datetime holds (9999-12-31T23:00
        # at -03:00) is no time to order by either.
        return when.astimezone(timezone.utc) if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError):
        return None


# A start this far past the reading machine's clock is no start yet: the host that wrote it
# had a clock set wrong (a run in progress, or a clock a little fast, stays within it).
FUTURE_SLACK = timedelta(hours=1)


def unplaceable(stamp: str) -> str | None:
    """Why a history cannot place the stamp, or None where it can: an ISO 8601 time within the
    years 1678 to 2261 (pandas' range, which histories hold), and not after this machine's clock
    (with FUTURE_SLACK). validate warns of any other, and such a run is placed last and never
    taken as the latest: a run dated 2099 by a wrong clock had stayed every later run's latest."""
    when = utc_time(stamp)
    if when is None or not 1677 < when.year < 2262:
        return "is not an ISO 8601 time between the years 1678 and 2261"
    if when > datetime.now(timezone.utc) + FUTURE_SLACK:
        return "is later than this machine's clock (the writing host's clock was wrong)"
    return None


def placeable(stamp: str) -> bool:
    return unplaceable(stamp) is None
