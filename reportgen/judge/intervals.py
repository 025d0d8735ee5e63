"""Timing ratios with confidence intervals from the kept warm samples, and their verdicts.

A timing difference is judged by an interval, never by a fixed percentage: a 10% shift is a
clear slowdown when the samples are tight and no clear difference when they scatter by 50%.

Method (distribution-free, deterministic, no random numbers, so reports are byte-stable):
every pairwise log-ratio ``log(c_j) - log(b_i)`` between the candidate's and the baseline's
warm samples is formed; their median is the Hodges-Lehmann estimate of the log time ratio and
the interval is the pair of order statistics that the Mann-Whitney rank test puts around it
(normal approximation of the rank-sum distribution). It assumes the two sample sets differ by
a scale factor, which is the question a time ratio asks. The point ratio reported beside the
interval is that Hodges-Lehmann estimate, the one the interval is built around (a ratio of
warm medians can lie outside it when a series is bimodal). That interval takes the samples as
independent; a series whose speed wandered during its loop (a step, a drift, samples that
follow each other) is not, and its rank interval is too narrow: a simulated step of 14% halfway
through one loop read "slower" in 98% of pairs. So where both sides hold at least
BATCHES * MIN_BATCH samples, each loop is also cut into BATCHES consecutive batches (batch
means, as simulation output is analysed), and the interval is at least the t interval of the
difference of the sides' mean log batch medians (pooled, 2 * BATCHES - 2 degrees of freedom):
a loop that changed speed has batches that disagree, and its interval widens. Either way it
speaks only of sampling within the two runs: a second run of either side may differ by more.

Several runs a side (replicates): a hierarchical bootstrap over runs, then over each chosen
run's samples, of the difference between the sides' mean log run medians (a run's median here
is its middle sample, the lower of the two middle ones for an even count, whose resampled value
has an exact distribution that is drawn directly); the 2.5th and 97.5th percentiles bound the
ratio and the point estimate is the same statistic on the runs as measured. The generator has
a fixed seed, restarted per cell, so the same inputs give the same bytes. With few replicates a
side the bootstrap sees little of the run-to-run spread, so the interval is at least the t
interval of the runs' log medians (``_between_runs``), and the page names the run count.

Both ways the interval is at least as wide as the timer lets the figures be told apart: each
side's resolution is taken as the smallest step between two of its distinct samples, over its
median, and the log interval reaches at least the sum of the two sides' log(1 + resolution)
either way from the estimate (``_resolution_half``). A continuous clock's steps are tiny
beside the median and change nothing; a coarse one's are not: 29 samples of 1.000 ms and one of
1.1 ms against 29 of 1.001 ms and one of 1.1 ms gave an interval 1.001 to 1.001, "slower" by a
timer tick. A step below RESOLUTION_FLOOR of the median is no step: a sample is the difference
of two clock readings, and readings of 1e4 to 1e5 s carry about 1e-11 s of rounding, so the
same ticks taken as such differences have steps of that rounding between them, which read as a
continuous clock and undid the guard. (A series of one value has no step: it is unclassified
and decides nothing.)

Cells with the same sample counts are computed together as one array (in chunks of at most
MAX_PAIRS differences), so a 1,000-cell pair costs a few numpy partitions. A side with more than
MAX_SIDE samples is thinned to evenly spaced order statistics first, which can only widen the
interval.
"""

from __future__ import annotations

import math
from functools import lru_cache
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Literal, Sequence

import numpy as np

from reportgen.judge.ratio_words import MOST_DIGITS, OUT_OF_RANGE, interval_text, judgeable

Verdict = Literal["faster", "slower", "no clear difference"]
CONFIDENCE = 0.95
# Memory bound: at most this many pairwise differences in one array (8 bytes each), and at most
# MAX_SIDE samples a side (beyond that, evenly spaced order statistics: a wider interval).
MAX_PAIRS = 4_000_000
MAX_SIDE = 2_000
# Each warm loop cut into this many consecutive batches, of at least MIN_BATCH samples each
# (30 samples: 3 batches of 10; fewer than 9 samples: the rank interval alone).
BATCHES = 3
MIN_BATCH = 3
BEYOND = "timing not classified: time ratio beyond 1e150 either way"


@dataclass(frozen=True)
class RatioInterval:
    """Candidate time / baseline time for one cell, with its interval (None: too few samples)."""

    ratio: float  # the point estimate the interval is built around
    low: float | None
    high: float | None
    baseline_samples: int
    candidate_samples: int
    confidence: float = CONFIDENCE
    runs: tuple[int, int] = (1, 1)  # runs (replicates) on the baseline and candidate side
    # The log half-width the timer's steps alone give (``_resolution_half``, both sides): the
    # interval is at least this wide either way, and so is a geometric mean's (geometric_mean).
    resolution: float = 0.0

    @property
    def verdict(self) -> Verdict:
        return classify(self.low, self.high)

    @property
    def scope(self) -> str:
        """What variation the interval covers, in words the pages show beside the verdict."""
        return scope_text(*self.runs)

    @property
    def flag(self) -> str:
        """BEYOND when the ratio or an end of its interval is too large or small to judge, else ''."""
        return "" if all(judgeable(v) for v in (self.ratio, self.low, self.high)) else BEYOND


ONE_RUN = "one run per side: within-run sampling only"
# Said wherever verdicts rest on one run a side: the intervals hold no run-to-run variation, so
# no rate of verdicts read by chance can be given (the shipped CPU samples moved by a median of
# 9% a cell between consecutive runs of one unchanged workload, more than most such intervals).
ONE_RUN_CAVEAT = (
    "one run a side: each interval leaves out how far a second run would move, which on a shared "
    "host can exceed it; replicates (--before/--after, several runs a side) measure it"
)


def scope_text(baseline_runs: int, candidate_runs: int) -> str:
    if baseline_runs == 1 and candidate_runs == 1:
        return ONE_RUN
    return f"{baseline_runs} run{'s' if baseline_runs != 1 else ''} against {candidate_runs}: between-run and within-run variation"


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


def _interval_chunk(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    indices: list[int],
    confidence: float,
    out: list[RatioInterval | None],
) -> None:
    base = np.asarray([pairs[i][0] for i in indices], dtype=np.float64)
    cand = np.asarray([pairs[i][1] for i in indices], dtype=np.float64)
    if not (np.all(base > 0) and np.all(cand > 0)):
        raise ValueError("warm samples must be positive times")
    n_kept, m_kept = base.shape[1], cand.shape[1]
    batched = _batch_spread(np.log(base), np.log(cand), confidence)
    coarse = _resolution_half(base) + _resolution_half(cand)
    base, cand = _thinned(base), _thinned(cand)
    n, m = base.shape[1], cand.shape[1]
    log_b, log_c = np.log(base), np.log(cand)
    diffs = (log_c[:, None, :] - log_b[:, :, None]).reshape(len(indices), n * m)
    total = n * m
    rank = _rank_index(n, m, confidence)
    mid_lo, mid_hi = (total - 1) // 2, total // 2
    kth = sorted({mid_lo, mid_hi} | ({rank - 1, total - rank} if rank >= 1 else set()))
    diffs.partition(kth, axis=1)
    with np.errstate(over="ignore"):  # an infinite ratio is flagged (RatioInterval.flag), not warned of
        centre = (diffs[:, mid_lo] + diffs[:, mid_hi]) / 2
        estimate = np.exp(centre)
        if rank >= 1:
            low, high = np.exp(diffs[:, rank - 1]), np.exp(diffs[:, total - rank])
            if batched is not None:
                low = np.minimum(low, np.exp(centre - batched))
                high = np.maximum(high, np.exp(centre + batched))
            low, high = np.minimum(low, np.exp(centre - coarse)), np.maximum(high, np.exp(centre + coarse))
    for row, index in enumerate(indices):
        out[index] = RatioInterval(
            ratio=float(estimate[row]),
            low=float(low[row]) if rank >= 1 else None,
            high=float(high[row]) if rank >= 1 else None,
            baseline_samples=n_kept,
            candidate_samples=m_kept,
            confidence=confidence,
            resolution=float(coarse[row]),
        )


# Steps between samples below this share of their median are the rounding of the clock readings
# each sample is the difference of, not a step of the timer (a nanosecond clock's own step is
# 1e-6 of a 1 ms call: too small to widen an interval either way).
RESOLUTION_FLOOR = 1e-6


def _resolution_half(samples: np.ndarray) -> np.ndarray:
    """Per row, log(1 + the smallest step between two distinct samples over their median): what
    the timer cannot tell apart, as a log half-width (0 where every sample is one value; a step
    below RESOLUTION_FLOOR of the median is none)."""
    median = np.median(samples, axis=1)
    steps = np.diff(np.sort(samples, axis=1), axis=1)
    steps[steps <= RESOLUTION_FLOOR * median[:, None]] = np.inf
    smallest = steps.min(axis=1, initial=np.inf)
    smallest[~np.isfinite(smallest)] = 0.0
    return np.log1p(smallest / median)


def _batch_spread(log_b: np.ndarray, log_c: np.ndarray, confidence: float) -> np.ndarray | None:
    """Per row, half the width of the t interval of the difference between the sides' mean log
    batch medians (each loop, in the order taken, cut into BATCHES consecutive batches); None
    when a side has too few samples for batches."""
    if min(log_b.shape[1], log_c.shape[1]) < BATCHES * MIN_BATCH:
        return None
    base, cand = (
        np.stack([np.median(part, axis=1) for part in np.array_split(logs, BATCHES, axis=1)], axis=1)
        for logs in (log_b, log_c)
    )
    return _pooled_t_half(base, cand, confidence)


def _pooled_t_half(base: np.ndarray, cand: np.ndarray, confidence: float) -> np.ndarray:
    """Per row, half the width of the pooled two-sample t interval of the difference between the
    means of ``cand``'s and ``base``'s columns (n - 2 degrees of freedom over both sides' columns,
    at least 1)."""
    k, m = base.shape[1], cand.shape[1]
    freedom = k + m - 2
    squares = sum(((side - side.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) for side in (base, cand))
    return t_quantile(0.5 + confidence / 2, freedom) * np.sqrt(squares / freedom * (1 / k + 1 / m))


Runs = Sequence[Sequence[float]]  # one side of a cell: the kept warm samples of each run
BOOTSTRAP_DRAWS = 1000
BOOTSTRAP_SEED = 20261202


def replicate_intervals(pairs: Sequence[tuple[Runs, Runs]], confidence: float = CONFIDENCE) -> list[RatioInterval]:
    """One RatioInterval per cell from every run of each side, in the given order.

    One run a side: the rank interval above (within-run sampling only). More: the wider of the
    hierarchical bootstrap (each run's samples resampled) and a t interval on the runs' log
    medians (``_between_runs``), so the interval widens with the spread between runs as few
    runs allow: with 2 or 3 runs a side the bootstrap alone, whose spread over k runs is (k-1)/k
    of the spread of their mean with normal tails, called 16-20% of unchanged cells faster or
    slower when runs differed by 2% (a simulation of 100 pairs of 14 cells).
    """
    single = [i for i, (base, cand) in enumerate(pairs) if len(base) == 1 and len(cand) == 1]
    out: dict[int, RatioInterval] = dict(
        zip(single, ratio_intervals([(pairs[i][0][0], pairs[i][1][0]) for i in single], confidence))
    )
    for index, (base, cand) in enumerate(pairs):
        if index not in out:
            out[index] = _bootstrap(base, cand, confidence)
    return [out[i] for i in range(len(pairs))]


@lru_cache(maxsize=64)
def _middle_cdf(n: int) -> np.ndarray:
    """P(the middle sample of a resample of n sorted values is at or below index i), i = 0..n-1.

    The middle sample (the lower of the two middle ones when n is even) of a resample with
    replacement is at or below index i when at least (n + 1) // 2 of the n draws are, and each
    draw is with probability (i + 1) / n: a binomial tail, the same for every run of n samples.
    """
    need = (n + 1) // 2
    ks = np.arange(need, n + 1)
    log_comb = np.array([math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) for k in ks])
    out = np.empty(n)
    for i in range(n):
        p = (i + 1) / n
        if p >= 1.0:
            out[i] = 1.0
            continue
        out[i] = float(np.exp(log_comb + ks * math.log(p) + (n - ks) * math.log1p(-p)).sum())
    return np.minimum(np.maximum.accumulate(out), 1.0)


def _resampled_log_medians(runs: Runs, rng: np.random.Generator) -> np.ndarray:
    """Per draw, the mean over resampled runs of the log middle sample of each run's resample.

    A resample's middle sample is drawn directly from its exact distribution (``_middle_cdf``),
    which is what resampling every sample and taking the middle one would give, at the cost of
    one random number per draw instead of one per sample.
    """
    k = len(runs)
    chosen = rng.integers(0, k, size=(BOOTSTRAP_DRAWS, k))
    slots = np.empty((BOOTSTRAP_DRAWS, k))
    for j, samples in enumerate(runs):
        values = np.sort(np.asarray(samples, dtype=np.float64))
        where = chosen == j
        picks = np.searchsorted(_middle_cdf(len(values)), rng.random(int(where.sum())), side="right")
        slots[where] = np.log(values[np.minimum(picks, len(values) - 1)])
    return slots.mean(axis=1)


def _bootstrap(base: Runs, cand: Runs, confidence: float) -> RatioInterval:
    if not base or not cand or any(len(run) == 0 for run in (*base, *cand)):
        raise ValueError("a ratio interval needs at least one sample in every run")
    if min(min(run) for run in (*base, *cand)) <= 0:
        raise ValueError("warm samples must be positive times")
    # The centre: the log ratio of the sides' geometric means of their runs' medians, the figures
    # shown beside it (timing_stability.side_median); the draws resample each run's middle sample.
    centre = float(np.mean([math.log(np.median(r)) for r in cand]) - np.mean([math.log(np.median(r)) for r in base]))
    rng = np.random.Generator(np.random.PCG64(BOOTSTRAP_SEED))
    draws = _resampled_log_medians(cand, rng) - _resampled_log_medians(base, rng)
    tail = (1 - confidence) / 2 * 100
    low, high = (float(end) for end in np.percentile(draws, [tail, 100 - tail]))
    spread = _between_runs(base, cand, confidence)
    if spread is not None:
        low, high = min(low, centre - spread), max(high, centre + spread)
    coarse = sum(float(_resolution_half(np.asarray([np.concatenate(side)]))[0]) for side in (base, cand))
    low, high = min(low, centre - coarse), max(high, centre + coarse)
    return RatioInterval(
        ratio=_exp(centre),
        low=_exp(float(low)),
        high=_exp(float(high)),
        baseline_samples=sum(len(r) for r in base),
        candidate_samples=sum(len(r) for r in cand),
        confidence=confidence,
        runs=(len(base), len(cand)),
        resolution=coarse,
    )


def _between_runs(base: Runs, cand: Runs, confidence: float) -> float | None:
    """Half the width of the t interval of the difference of the sides' mean log medians, from
    the runs' own spread (pooled over both sides, n - 2 degrees of freedom: one run on a side
    borrows the other side's spread); None with fewer than 3 runs in all."""
    if len(base) + len(cand) < 3:
        return None
    sides = [np.log([[float(np.median(run)) for run in side]]) for side in (base, cand)]
    return float(_pooled_t_half(sides[0], sides[1], confidence)[0])


def t_quantile(p: float, freedom: int) -> float:
    """Student's t quantile: exact for 1 and 2 degrees of freedom, the Cornish-Fisher expansion
    in the normal quantile for more (Abramowitz and Stegun 26.7.5; at 3 degrees 3.179 against
    3.182 for p = 0.975)."""
    if freedom == 1:
        return math.tan(math.pi * (p - 0.5))
    if freedom == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z, v = NormalDist().inv_cdf(p), float(freedom)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4)
    )


def _exp(x: float) -> float:
    """exp, infinite where math.exp would raise (the interval is then flagged, not judged)."""
    return math.exp(x) if x < 709.0 else math.inf


@dataclass(frozen=True)
class GeoMean:
    """Geometric mean of ratios (one a cell; a generation cell gives one a series), with an
    interval when every ratio has one. ``ratios``: how many it averages."""

    ratio: float
    low: float | None
    high: float | None
    ratios: int
    confidence: float = CONFIDENCE
    runs: tuple[int, int] = (1, 1)
    # The one quantity its ratios are of when that is a generation series alone (the others
    # decided nothing or were flagged): 'first token, warm'; '' for cells' warm calls.
    quantity: str = ""

    @property
    def scope(self) -> str:
        return scope_text(*self.runs)

    @property
    def verdict(self) -> Verdict:
        return classify(self.low, self.high)


def geometric_mean(intervals: Sequence[RatioInterval]) -> GeoMean | None:
    """Mean of the log ratios; its interval combines each cell's interval as a normal error in log space.

    The cells are a fixed set (the shapes compared), so the interval speaks of measurement
    noise in these cells, not of shapes that were not run. With one run a side, each cell's
    error is its own run's sampling, independent of the other cells': the errors add in
    quadrature. With replicates, a cell's interval holds the variation between runs too, and a
    run that ran slow ran slow in every cell: the cells' errors are not independent, so the
    mean's error is bounded by their mean (what full correlation gives), never narrowed by the
    number of cells. Nor is the timer's resolution: a step of the clock that every cell's samples
    fall on moves every cell's ratio alike, so the mean's interval is at least as wide as the
    cells' resolution half-widths on average, as each cell's is at least as wide as its own.
    """
    if not intervals:
        return None
    logs = [math.log(r.ratio) for r in intervals]
    centre = sum(logs) / len(logs)
    confidence = intervals[0].confidence
    runs = (max(r.runs[0] for r in intervals), max(r.runs[1] for r in intervals))
    bounds = [(r.low, r.high) for r in intervals if r.low is not None and r.high is not None]
    if len(bounds) < len(intervals):  # an interval without bounds: no spread for the mean
        return GeoMean(math.exp(centre), None, None, len(intervals), confidence, runs)
    z = _z(confidence)
    shared = runs[0] > 1 or runs[1] > 1
    floor = sum(r.resolution for r in intervals) / len(intervals)

    def spread(errors: list[float]) -> float:
        combined = z * (sum(errors) if shared else math.sqrt(sum(e * e for e in errors))) / len(errors)
        return max(combined, floor)

    # Each side of a cell's interval apart: a bootstrap interval need not be symmetric about its
    # estimate, and the mean of one cell must be that cell's interval, not a symmetric one about
    # its estimate (which read 'no clear difference' over a cell judged slower).
    down = spread([(log - math.log(low)) / z for log, (low, _) in zip(logs, bounds)])
    up = spread([(math.log(high) - log) / z for log, (_, high) in zip(logs, bounds)])
    return GeoMean(math.exp(centre), math.exp(centre - down), math.exp(centre + up), len(intervals), confidence, runs)


WARM_CALL = "warm call"  # a cell's warm series, named beside a generation cell's two in pooled_mean


def pooled_mean(by_series: Sequence[tuple[str, RatioInterval]]) -> tuple[GeoMean | None, str, tuple[GeoMean, ...]]:
    """The geometric mean of ratios of one quantity, or, where they are of several (a cell's
    warm call, a generation cell's time to first token and decode per token: each its own
    series, named), none and why, with each series' own mean in words: a faster first token and
    a slower decode averaged into one figure would describe neither, nor a request. Third: each
    series' own mean (its ``quantity`` the series' name) where they are not pooled, else ()."""
    series = sorted({name for name, _ in by_series})  # one order, whoever gathered the ratios
    if len(series) <= 1:
        geo = geometric_mean([interval for _, interval in by_series])
        # Of one generation series alone (a request's decode undecided, say): named, since the
        # figure is no request's time.
        if geo is not None and series and series[0] != WARM_CALL:
            geo = replace(geo, quantity=series[0])
        return geo, "", ()
    parts, means = [], []
    for name in series:
        geo = geometric_mean([interval for n, interval in by_series if n == name])
        assert geo is not None  # each name holds at least one interval
        means.append(replace(geo, quantity=name))
        word = speed_words(geo.ratio, geo.low, geo.high)
        if geo.verdict == "no clear difference":
            word = f"no clear difference ({word} at the point estimate)"
        # Each mean with its interval, as a pooled one is given: a direction word alone says
        # nothing of how sure it is.
        spread = (
            f", {interval_words(geo.ratio, geo.low, geo.high, of='slower')}"
            if geo.low is not None and geo.high is not None
            else ""
        )
        parts.append(f"{name} {word} over {geo.ratios} ratio{'s' if geo.ratios != 1 else ''}{spread}")
    return None, f"not pooled, the ratios being of different quantities; each: {'; '.join(parts)}", tuple(means)


def interval_words(ratio: float, low: float, high: float, of: str = "the baseline time") -> str:
    """A 95% interval of a time ratio in the direction of ``speed_words(ratio)``: 'faster' ends
    (before / after) beside a 'faster' headline, else multiples of ``of``; never an after / before
    interval beside a 'faster' word, which reads inverted."""
    if low < 1 < high and low > 0:  # one end faster, the other slower: each said as it is
        fast, slow = interval_text(1 / low, high)
        return f"95% interval {fast}x faster to {slow}x slower"
    if ratio < 1 and low > 0 and high > 0:
        return "95% interval {}x to {}x faster".format(*interval_text(1 / high, 1 / low))
    return "95% interval {}x to {}x {}".format(*interval_text(low, high), of)


def speed_words(ratio: float, low: float | None = None, high: float | None = None) -> str:
    """A time ratio in words: 0.5 is '2x faster', 1.25 is '1.25x slower'. With its interval
    (``low``, ``high``), the factor reads inside the ends ``interval_words`` shows: 0.99494 in
    0.99106 to 0.99900 is '1.0051x faster' beside '1.001x to 1.009x faster', never '1.01x'."""
    if ratio <= 0:
        return "not measured"
    if not judgeable(ratio):
        return f"a ratio {OUT_OF_RANGE}"
    if ratio == 1:
        return "the same speed"
    factor = 1 / ratio if ratio < 1 else ratio
    ends = None
    if low is not None and high is not None and judgeable(low) and judgeable(high) and low > 0:
        if high < 1 and ratio < 1:
            ends = tuple(float(end) for end in interval_text(1 / high, 1 / low))
        elif low > 1 and ratio > 1:
            ends = tuple(float(end) for end in interval_text(low, high))
    # Enough digits that a factor that is not 1 never reads '1x faster' (3 to MOST_DIGITS
    # significant), nor outside the interval shown beside it.
    for digits in range(3, MOST_DIGITS + 1):
        shown = f"{factor:.{digits}g}"
        if shown != "1" and (ends is None or ends[0] <= float(shown) <= ends[1]):
            break
    return f"{shown}x {'faster' if ratio < 1 else 'slower'}"
