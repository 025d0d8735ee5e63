"""A time ratio and its interval in figures, as every page, chart and export shows them.

Apart from the intervals themselves (intervals.py, which needs numpy) so that a page or chart
that only shows a ratio imports no numerical library.
"""

from __future__ import annotations

# The widest time ratio judged, either way. Beyond it (a millisecond against a valid but
# subnormal 5e-324 s is about 1e320) a ratio, its reciprocal or a geometric mean's interval over
# it is no finite number: such a cell decides nothing and is named, as an unstable one is, and
# its figures are shown as words (never "inf" or "nan").
WIDEST_RATIO = 1e150
OUT_OF_RANGE = "out of range"


def judgeable(value: float | None) -> bool:
    """Whether a ratio (None: no such end) lies within WIDEST_RATIO either way, NaN not."""
    return value is None or 1 / WIDEST_RATIO <= value <= WIDEST_RATIO


def ratio_number(value: float, spec: str = ".3g", unit: str = "") -> str:
    """A ratio as a figure (and its unit; 0 too), or OUT_OF_RANGE beyond WIDEST_RATIO (never inf or nan)."""
    return format(value, spec) + unit if value == 0 or judgeable(value) else OUT_OF_RANGE


def export_ratio(value: float | None) -> float | None:
    """A ratio as the exports write it (JSON, CSV): the figure ratio_number shows, or None (null,
    an empty field) where ratio_number says OUT_OF_RANGE: never inf, nor a figure no page shows."""
    return value if value is not None and (value == 0 or judgeable(value)) else None


# The most significant digits a ratio or an end is shown with: as many as tell any two floats
# apart (17), so that ends a few parts in a million from 1 (a change of 3 µs in 1 s), or a few
# units in the last place, still read apart and away from 1.
MOST_DIGITS = 17


def interval_text(low: float, high: float) -> tuple[str, str]:
    """Both ends with just enough significant digits (3 to MOST_DIGITS) to tell them apart and
    to keep an end that is not 1 from reading as 1 (an interval below 1 never reads '0.5 to 1')."""
    if not (judgeable(low) and judgeable(high)):
        return ratio_number(low), ratio_number(high)
    for digits in range(3, MOST_DIGITS + 1):
        a, b = f"{low:.{digits}g}", f"{high:.{digits}g}"
        if a != b and (a != "1" or low == 1) and (b != "1" or high == 1):
            return a, b
    return a, b


def estimate_text(value: float, low: float | None, high: float | None, spec: str = ".3g", unit: str = "") -> str:
    """The estimate as ``spec`` shows it, or with as many more significant digits (up to MOST_DIGITS) as
    it takes to read inside its interval as ``interval_text`` shows it: 0.052403 in 0.05222 to
    0.05276 reads 0.0524, never 0.052 beside '0.0522 to 0.0528'."""
    text = ratio_number(value, spec)
    if low is None or high is None or not (judgeable(low) and judgeable(high) and judgeable(value)):
        return text + unit if text != OUT_OF_RANGE else text
    shown_low, shown_high = (float(end) for end in interval_text(low, high))
    for digits in range(3, MOST_DIGITS + 1):
        if shown_low <= float(text) <= shown_high:
            break
        text = f"{value:.{digits}g}"
    return text + unit
