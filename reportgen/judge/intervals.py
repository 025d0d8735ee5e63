"""Timing ratios with confidence intervals from the kept warm samples, and their verdicts.

A timing difference is judged by an interval, never by a fixed percentage: a 10% shift is a
clear slowdown when the samples are tight and no clear difference when they scatter by 50%.

Method (distribution-free, deterministic, no random numbers, so reports are byte-stable):
every pairwise log-ratio ``log(c_j) - log(b_i)`` between the candidate's and the baseline's
warm samples is formed; their median is the Hodges-Lehmann estimate of the log time ratio and
the interval is the pair of order statistics that the Mann-Whitney rank test puts around it
(normal approximation of the rank-sum distribution). It assumes the two sample sets differ by
a scale factor, which is the question a time ratio asks. The point ratio reported beside the
interval is the ratio of the warm medians, as the collector records them.

Cells with the same sample counts are computed together as one array (in chunks of at most
MAX_PAIRS differences), so a 1,000-cell pair costs a few numpy partitions. A side with more than
MAX_SIDE samples is thinned to evenly spaced order statistics first, which can only widen the
interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, Sequence

import numpy as np

Verdict = Literal["faster", "slower", "no clear difference"]
CONFIDENCE = 0.95
# Memory bound: at most this many pairwise differences in one array (8 bytes each), and at most
# MAX_SIDE samples a side (beyond that, evenly spaced order statistics: a wider interval).
MAX_PAIRS = 4_000_000
MAX_SIDE = 2_000


@dataclass(frozen=True)
class RatioInterval:
    """Candidate time / baseline time for one cell, with its interval (None: too few samples)."""

    ratio: float
    low: float | None
    high: float | None
    estimate: float
    baseline_samples: int
    candidate_samples: int
    confidence: float = CONFIDENCE

    @property
    def verdict(self) -> Verdict:
        return classify(self.low, self.high)


def classify(low: float | None, high: float | None) -> Verdict:
    """Slower when the whole interval lies above 1, faster when below, otherwise no clear difference."""
    if low is None or high is None:
        return "no clear difference"
    if low > 1.0:
        return "slower"
    if high < 1.0:
        return "faster"
    return "no clear difference"


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _rank_index(n: int, m: int, confidence: float) -> int:
    """1-based order statistic C: the interval is [d_(C), d_(nm+1-C)] of the sorted pairwise differences."""
    pairs = n * m
    return math.floor(pairs / 2 - _z(confidence) * math.sqrt(pairs * (n + m + 1) / 12))


def ratio_intervals(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]], confidence: float = CONFIDENCE
) -> list[RatioInterval]:
    """One RatioInterval per (baseline samples, candidate samples) pair, in the given order.

    Every sample must be a positive, finite number of seconds (the contract guarantees finite;
    a zero or negative time is refused here rather than turned into an infinite ratio).
    """
    out: list[RatioInterval | None] = [None] * len(pairs)
    groups: dict[tuple[int, int], list[int]] = {}
    for index, (base, cand) in enumerate(pairs):
        if not base or not cand:
            raise ValueError("a ratio interval needs at least one sample on each side")
        groups.setdefault((len(base), len(cand)), []).append(index)
    for (n, m), indices in groups.items():
        rows = max(1, MAX_PAIRS // (n * m))
        for first in range(0, len(indices), rows):
            _interval_chunk(pairs, indices[first : first + rows], confidence, out)
    return [r for r in out if r is not None]


def _thinned(values: np.ndarray) -> np.ndarray:
    """At most MAX_SIDE evenly spaced order statistics per row (a wider, conservative interval)."""
    if values.shape[1] <= MAX_SIDE:
        return values
    picks = np.linspace(0, values.shape[1] - 1, MAX_SIDE).round().astype(int)
    return np.sort(values, axis=1)[:, picks]


def _interval_chunk(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], indices: list[int], confidence: float, out: list[RatioInterval | None]) -> None:
    base = np.asarray([pairs[i][0] for i in indices], dtype=np.float64)
    cand = np.asarray([pairs[i][1] for i in indices], dtype=np.float64)
    if not (np.all(base > 0) and np.all(cand > 0)):
        raise ValueError("warm samples must be positive times")
    medians = np.median(cand, axis=1) / np.median(base, axis=1)
    n_kept, m_kept = base.shape[1], cand.shape[1]
    base, cand = _thinned(base), _thinned(cand)
    n, m = base.shape[1], cand.shape[1]
    log_b, log_c = np.log(base), np.log(cand)
    diffs = (log_c[:, None, :] - log_b[:, :, None]).reshape(len(indices), n * m)
    total = n * m
    rank = _rank_index(n, m, confidence)
    mid_lo, mid_hi = (total - 1) // 2, total // 2
    kth = sorted({mid_lo, mid_hi} | ({rank - 1, total - rank} if rank >= 1 else set()))
    diffs.partition(kth, axis=1)
    estimate = np.exp((diffs[:, mid_lo] + diffs[:, mid_hi]) / 2)
    if rank >= 1:
        low, high = np.exp(diffs[:, rank - 1]), np.exp(diffs[:, total - rank])
    for row, index in enumerate(indices):
        out[index] = RatioInterval(
            ratio=float(medians[row]),
            low=float(low[row]) if rank >= 1 else None,
            high=float(high[row]) if rank >= 1 else None,
            estimate=float(estimate[row]),
            baseline_samples=n_kept,
            candidate_samples=m_kept,
            confidence=confidence,
        )


@dataclass(frozen=True)
class GeoMean:
    """Geometric mean of per-cell ratios, with an interval when every cell has one."""

    ratio: float
    low: float | None
    high: float | None
    cells: int
    confidence: float = CONFIDENCE

    @property
    def verdict(self) -> Verdict:
        return classify(self.low, self.high)


def geometric_mean(intervals: Sequence[RatioInterval]) -> GeoMean | None:
    """Mean of the log ratios; its interval combines each cell's interval as a normal error in log space.

    The cells are a fixed set (the shapes compared), so the interval speaks of measurement
    noise in these cells, not of shapes that were not run.
    """
    if not intervals:
        return None
    logs = [math.log(r.ratio) for r in intervals]
    centre = sum(logs) / len(logs)
    confidence = intervals[0].confidence
    if any(r.low is None or r.high is None for r in intervals):
        return GeoMean(math.exp(centre), None, None, len(intervals), confidence)
    z = _z(confidence)
    errors = [(math.log(r.high) - math.log(r.low)) / (2 * z) for r in intervals]  # type: ignore[arg-type]
    spread = z * math.sqrt(sum(e * e for e in errors)) / len(errors)
    return GeoMean(math.exp(centre), math.exp(centre - spread), math.exp(centre + spread), len(intervals), confidence)


def interval_text(low: float, high: float) -> tuple[str, str]:
    """Both ends with just enough significant digits to tell them apart (3 to 6)."""
    for digits in range(3, 7):
        a, b = f"{low:.{digits}g}", f"{high:.{digits}g}"
        if a != b:
            return a, b
    return a, b


def speed_words(ratio: float) -> str:
    """A time ratio in words: 0.5 is '2x faster', 1.25 is '1.25x slower'."""
    if ratio <= 0:
        return "not measured"
    if ratio < 1:
        return f"{1 / ratio:.3g}x faster"
    if ratio > 1:
        return f"{ratio:.3g}x slower"
    return "the same speed"
