"""Is one warm series steady enough to decide anything? A pure classifier, standard library only.

``classify(samples, waited)`` takes the seconds of one warm loop in the order they were taken
(and, where the log has them, the seconds its threads waited for a CPU and the loop's wall time) and
returns a ``Stability``: the verdict, and one ``Check`` per rule with the figures behind it
(worked out when first asked for: the verdict needs only each rule's decision).
The collector runs it after each warm loop (and re-measures a series it calls unstable);
reportgen runs the same function on the samples kept in any log, old or new, so a page and
the collector never disagree about a series.

Each threshold below is a named constant with the reason for its value; collector/README.md
("Timing stability") explains the rules for a reader of the report.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

STABLE = "stable"
UNSTABLE = "unstable"
# Too few (or unusable) samples to say either; such a series decides nothing either.
UNCLASSIFIED = "unclassified"

# Below five samples the quartiles are two or three of the samples themselves: no rule is meaningful.
MIN_SAMPLES = 5
# Tukey's inner fence: beyond 1.5 IQR from the quartiles a sample is a (mild) outlier.
TUKEY_INNER = 1.5
# Tukey's outer fence: beyond 3 IQR a sample is a far outlier, i.e. it did not come from the same process.
TUKEY_OUTER = 3.0
# The IQR used for the fences is at least this share of the median, so in a very tight series
# (or one quantised by the timer, IQR 0) a sample a few percent off, ordinary scheduler jitter,
# is not called an outlier: a far outlier is then at least 15% beyond a quartile.
IQR_FLOOR = 0.05
# More than a tenth of the samples beyond the outer fences: the median no longer speaks for the loop.
OUTLIER_SHARE_MAX = 0.10
# A cluster must hold at least this share of the samples (and 2 samples) to count as a mode;
# smaller groups are outliers, which the outlier rule judges.
MODE_SHARE_MIN = 0.15
# Two modes when the widest gap between consecutive sorted samples is wider than the wider
# cluster's own range: the clusters are farther apart than either is wide.
GAP_OVER_RANGE_MIN = 1.0
# ... and that gap is at least a tenth of the median, so two tight modes a few percent apart
# (a figure that is right to a few percent either way) are not called bimodal.
GAP_OVER_MEDIAN_MIN = 0.10
# A median in that gap is a time no call took: the two middle samples lie on either side of the
# widest gap, so the loop ran at two speeds and the median fell between them (another loop would
# give either). At an odd count the median is a sample, at the gap's edge, when the two sides
# differ by one sample (six and five of 11): the same two speeds, so the same bars hold where the
# sides differ by at most one. Then, from TWO_MODES_MIN_SAMPLES samples on, the gap need only be
# wider than half the wider cluster's range and at least 8% of the median (the median 4% or more
# from every sample, more than the few percent a figure is right to). Set on seeded simulations
# (bench_stability_rules.py, 2,000 series a kind, seeds 1 and 2): at 10 samples the single-mode
# series gain about 2 unstable in 100 at most (uniform +-15% 2.1, lognormal 12% 1.5, lognormal
# 8% 0.6, the rest 0.2 or none), at 20 at most 0.2 and at 30 none; two speeds and a step halfway
# gain 1.5 to 4.5 at 10 samples (most such series were called two modes already). The widest-gap
# bars had passed a shipped 10-sample loop of five calls near 0.74 s and five near 0.88 s (gap
# over range 0.94). Below 10 samples a single mode's middle gap is that wide too often (at 6 and
# 8 samples, 1 to 6 in 100 of the noisier single-mode series). At odd counts (collector 0.21.0:
# the sides differing by one) the single-mode series gain at most 3.5 in 100 at 11 samples
# (uniform +-15%; lognormal 12% 2), 2 at 13 and 1.5 at 15, and two speeds 3 to 8.5.
MEDIAN_IN_GAP_OVER_RANGE_MIN = 0.5
MEDIAN_IN_GAP_OVER_MEDIAN_MIN = 0.08
# Two modes with samples between them (so no gap is wider than a cluster) are found another way,
# from TWO_MODES_MIN_SAMPLES samples on: the sorted series is cut where the two sides' summed
# squared deviations from their means are least, each side holding at least TWO_MODES_SHARE_MIN of
# the samples, and it is two modes when the sides' medians are at least GAP_OVER_MEDIAN_MIN of the
# median apart and their means more than TWO_MODES_SEPARATION + TWO_MODES_SMALL_N / n pooled
# standard deviations apart (7 at 10 samples, 5 at 30, 4.3 at 100). Set on seeded simulations
# (tests/benchmarks/bench_stability_rules.py prints them): a single-mode series cut this way
# (normal, uniform, skewed, heavy-tailed or correlated noise) has its sides' means up to about 8
# standard deviations apart at 10 samples (1 in 100), 4-5 at 30 and 4.2 at 100, because the cut
# is chosen to separate them; so the bar falls as n grows. Below 10 samples the two overlap too
# much to decide; a quarter on each side leaves a smaller group to the outlier rule, and a median
# inside a group of three quarters or more still speaks for the loop.
TWO_MODES_MIN_SAMPLES = 10
TWO_MODES_SHARE_MIN = 0.25
TWO_MODES_SEPARATION = 4.0
TWO_MODES_SMALL_N = 30.0
# The median of the last third differs from that of the first third by more than a tenth of the
# overall median, and by more than the whole series' IQR (so a noisy series' thirds differing by
# chance is not a drift): the host or the device changed speed during the loop.
DRIFT_MAX = 0.10
# A steady trend the thirds miss (a 15% linear drift moves the thirds' medians by only 10%, and
# the IQR grows with it): the Theil-Sen line through the samples (the median of the slopes of
# every pair) changes by more than DRIFT_MAX of the median from the first sample to the last, the
# Mann-Kendall statistic (pairs rising less pairs falling) is at least TREND_Z_MIN standard
# deviations from 0, and the thirds' medians move the same way twice, the smaller move at least
# TREND_STEADY_SHARE of the larger (a move over the whole loop, not a few slow first calls, a
# warm-up left over, nor a slowdown that came back). Both figures are rank-based, so one stray
# sample at either end moves neither much. At 3, about 1 single-mode series in 100 with strongly
# correlated noise (lag-1 0.7) is called a drift (bench_stability_rules.py).
TREND_Z_MIN = 3.0
TREND_STEADY_SHARE = 0.25
# The trend test looks at every pair of samples (at 30 samples ten times the cost of every other
# rule together, and a report classifies every timed cell of a log), so the verdict takes it only
# when the thirds' medians differ by at least a third of DRIFT_MAX (a steady change of DRIFT_MAX
# over the loop moves them by two thirds of it, which the noise of a third's median, 1-2% at 3%
# noise, does not bring under this screen), and a longer loop is taken as the medians of
# TREND_MAX_POINTS consecutive blocks (10,000 samples would be 50 million pairs).
TREND_SCREEN = DRIFT_MAX / 3
TREND_MAX_POINTS = 100
# A speed that moved during the loop and came back (a hump, or a dip): the middle third's median
# differs from both outer thirds' medians, the same way, by more than DRIFT_MAX of the median and
# by more than HUMP_OVER_OUTER_IQR times the IQR of the two outer thirds together. Their IQR, not
# the whole series': the hump widens that by itself, which is why the drift rule (first third
# against last) and the modes rules (the samples sorted, their order lost) pass a slowdown of 40%
# at its peak that rose and fell over the middle half of the loop. Set on seeded simulations
# (bench_stability_rules.py): at 2 the noisiest single-mode series (lognormal 12%, uniform
# +-15%) gain at most 3 unstable in 100 at 10 samples (uniform +-15%: 23 to 26) and none at 30,
# and such a hump is seen in every series; at 1 those single-mode series gained 6 or 7 in 100 at
# 10 samples. Needs HUMP_MIN_SAMPLES: two in each outer third and three in the middle one (the
# median of two samples is their mean, which one slow call moves by half its excess: at 6
# samples one call 30% slow in the middle read as a hump in 2 of 5 such series).
HUMP_OVER_OUTER_IQR = 2.0
HUMP_MIN_SAMPLES = 7
# IQR over median above a fifth: the middle half spans a fifth of the figure compared (about a
# 15% coefficient of variation for a normal series). Wider than pyperf's 10% standard deviation,
# because sub-millisecond CPU calls on a shared host jitter more and still compare by median.
SPREAD_MAX = 0.20
# The fastest sample under half the median: the loop ran at two very different speeds.
MIN_OVER_MEDIAN_MIN = 0.5
# The process's threads waited for a CPU more than a tenth of a second per second of the loop
# (their summed run-queue wait over the loop's wall time: on average that many of its threads
# were ready to run and had no CPU): other work held the CPUs (or the process ran more busy
# threads than it may use), so every sample may be slower alike, which the rules on the samples
# cannot see. Summed over threads, so a loop of N threads on N CPUs beside one busy process
# still shows it (each thread waits about 1/(N+1) of the time; together about N/(N+1) s a
# second). On an idle host it is well under 0.01; one busy loop beside another on one CPU, 0.5.
WAIT_PER_SECOND_MAX = 0.10


@dataclass(frozen=True)
class Check:
    """One rule applied to a series: its name, whether the series failed it, the figures, and a line."""

    name: str  # "outliers" | "bimodality" | "drift" | "hump" | "spread" | "min_median" | "contention"
    failed: bool
    figures: tuple[tuple[str, float], ...]
    note: str

    def figure(self, key: str) -> float:
        return dict(self.figures)[key]


@dataclass(frozen=True)
class Stability:
    """The verdict on one warm series, the checks behind it, and the series' basic figures."""

    verdict: str  # STABLE | UNSTABLE | UNCLASSIFIED
    samples: int
    median_s: float | None
    iqr_s: float | None
    min_s: float | None
    note: str = ""  # why a series is unclassified
    # The samples classified, in the order taken; the checks are worked out from them.
    series: tuple[float, ...] = field(default=(), repr=False)
    # (seconds the threads waited for a CPU, seconds the loop took); None where not recorded.
    waited: tuple[float, float] | None = None

    @cached_property
    def checks(self) -> tuple[Check, ...]:
        """One Check per rule, with its figures and note (none for an unclassified series).

        Built when first asked for: the verdict needs only each rule's decision, and a report
        classifies every timed cell of a log (tens of thousands) but shows the checks of few (the
        collector logs each series' checks as it takes the series)."""
        if self.verdict == UNCLASSIFIED:
            return ()
        values = self.series
        ordered, median, q1, q3 = _order(values)
        iqr = q3 - q1
        checks = (
            _outliers(ordered, median, q1, q3),
            _bimodality(ordered, median),
            _drift(values, median, iqr),
            _hump(values, median),
            _spread(iqr, median),
            _min_median(ordered[0], median),
        )
        return checks if self.waited is None else (*checks, _contention(*self.waited))

    @property
    def stable(self) -> bool:
        return self.verdict == STABLE

    @property
    def reasons(self) -> tuple[Check, ...]:
        """The checks the series failed (empty for a stable or unclassified series)."""
        if self.verdict != UNSTABLE:
            return ()
        return tuple(c for c in self.checks if c.failed)

    def summary(self) -> str:
        """One line: the verdict and, when unstable, each failed check's note."""
        if self.verdict == UNCLASSIFIED:
            return f"unclassified: {self.note}"
        if self.verdict == STABLE:
            return "stable"
        return "unstable: " + "; ".join(c.note for c in self.reasons)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready form (the collector's log event and the report's tables)."""
        return {
            "verdict": self.verdict,
            "samples": self.samples,
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "min_s": self.min_s,
            "reasons": [c.name for c in self.reasons],
            "checks": {
                c.name: {"failed": c.failed, **{k: _finite(v) for k, v in c.figures}, "note": c.note}
                for c in self.checks
            },
            **({"note": self.note} if self.note else {}),
        }


# Why a steady-looking series decides nothing where its host records the threads' CPU wait but
# could not read it over the loop (schedstat counts nothing over a loop shorter than a
# scheduler tick): contention was not judged. The collector logs the series unclassified with
# these words, and the report says the same of it.
WAIT_NOT_READ = (
    "the CPU wait of its threads over the loop was not read (a loop shorter than the host's scheduler tick "
    "reads none): contention not judged; more warm repetitions make a loop long enough to read"
)


def wait_not_read(stability: Stability) -> Stability:
    """A stable verdict on a loop whose CPU wait was not read, as it is logged: unclassified, why said."""
    if stability.verdict != STABLE:
        return stability
    return replace(stability, verdict=UNCLASSIFIED, note=WAIT_NOT_READ)


def classify(samples: Sequence[float], waited: tuple[float, float] | None = None) -> Stability:
    """Classify one warm series (seconds, in the order taken); ``waited``: the seconds the
    process's threads waited for a CPU over the loop and the loop's wall time, where recorded."""
    values = samples if type(samples) is tuple else tuple(samples)
    if all(type(v) is float for v in values):  # what every log holds: the cheap test of the same rule
        bad = [v for v in values if not math.isfinite(v) or v < 0]
    else:
        bad = [
            v for v in values if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0
        ]
    if bad:
        return Stability(
            UNCLASSIFIED,
            len(values),
            None,
            None,
            None,
            f"{len(bad)} sample(s) not a finite, non-negative number of seconds",
            values,
            waited,
        )
    if len(values) < MIN_SAMPLES:
        return Stability(
            UNCLASSIFIED,
            len(values),
            _median_or_none(values),
            None,
            min(values, default=None),
            f"{len(values)} sample(s); at least {MIN_SAMPLES} are needed to judge stability",
            values,
            waited,
        )
    ordered, median, q1, q3 = _order(values)
    iqr = q3 - q1
    if median <= 0 or ordered[0] == ordered[-1]:
        why = (
            "median of 0 s: nothing to compare against"
            if median <= 0
            else "every sample is the same value: no spread to judge a difference against (a timer too coarse for "
            "the call gives this)"
        )
        return Stability(UNCLASSIFIED, len(values), median, iqr, ordered[0], why, values, waited)
    # Each rule's decision, by the same functions the checks are built with; a series fails
    # when any rule fails (the cheap rules first: the rest need not be decided then).
    failed = (
        (waited is not None and _contention_rule(*waited)[0])
        or _spread_rule(iqr, median)[0]
        or _min_median_rule(ordered[0], median)[0]
        or _outliers_rule(ordered, median, q1, q3)[0]
    )
    if not failed:
        thirds = _drift_rule(values, median, iqr)
        failed = (
            thirds[0]
            or _bimodality_rule(ordered, median)[0]
            or _two_modes_rule(ordered, median)[0]
            or _hump_rule(values, median, thirds[1], thirds[2])[0]
            or _trend_rule(values, median, thirds[3])[0]  # the costliest (pairs of samples): last
        )
    return Stability(UNSTABLE if failed else STABLE, len(values), median, iqr, ordered[0], "", values, waited)


def _order(values: tuple[float, ...]) -> tuple[list[float], float, float, float]:
    """The sorted series, its median and its first and third quartiles."""
    ordered = sorted(values)
    return ordered, sorted_median(ordered), quantile(ordered, 1, 4), quantile(ordered, 3, 4)


def _median_or_none(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


# The report classifies every timed cell of a log (tens of thousands in a long one): the median
# and quartiles are taken from the sorted series directly, by the formulas of statistics.median
# and statistics.quantiles(method="inclusive"), without their checks and copies.
def sorted_median(ordered: list[float]) -> float:
    """The median of the sorted samples, by statistics.median's formula."""
    n = len(ordered)
    half = n // 2
    return ordered[half] if n % 2 else (ordered[half - 1] + ordered[half]) / 2


def quantile(ordered: list[float], i: int, n: int) -> float:
    """The i-th of the n-quantiles of the sorted samples (at least two), by the formula of
    statistics.quantiles(method="inclusive"): the same float operations, so the same figure."""
    j, delta = divmod(i * (len(ordered) - 1), n)
    return (ordered[j] * (n - delta) + ordered[j + 1] * delta) / n


# Each rule is one function that decides it, returning its decision first and then the figures
# it decided on; the verdict asks only for the decisions. The Check of a rule (every figure shown
# and the note) is built on top of the same function when the checks are asked for.


def _outside(ordered: list[float], low: float, high: float) -> int:
    """How many of the sorted samples lie below ``low`` or above ``high``."""
    return bisect_left(ordered, low) + len(ordered) - bisect_right(ordered, high)


def _outliers_rule(ordered: list[float], median: float, q1: float, q3: float) -> tuple[bool, float, int, float, float]:
    """(failed, the IQR the fences are drawn with, far outliers, the low and high outer fences)."""
    width = max(q3 - q1, IQR_FLOOR * median)
    low_far, high_far = q1 - TUKEY_OUTER * width, q3 + TUKEY_OUTER * width
    far = _outside(ordered, low_far, high_far)
    return far / len(ordered) > OUTLIER_SHARE_MAX, width, far, low_far, high_far


def _beside(value: float, bar: float) -> str:
    """A share as a percentage with the digits that tell it from its bar: 10.5% beside 10%, not
    "10% > 10%" (up to three decimals)."""
    for digits in range(4):
        text = f"{value:.{digits}%}"
        if text != f"{bar:.{digits}%}":
            return text
    return text


def _outliers(ordered: list[float], median: float, q1: float, q3: float) -> Check:
    failed, width, far, low_far, high_far = _outliers_rule(ordered, median, q1, q3)
    mild = _outside(ordered, q1 - TUKEY_INNER * width, q3 + TUKEY_INNER * width)
    share = far / len(ordered)
    note = (
        f"{far} of {len(ordered)} samples beyond the outer Tukey fences ({_beside(share, OUTLIER_SHARE_MAX)} > {OUTLIER_SHARE_MAX:.0%})"
        if failed
        else f"{mild} mild and {far} far outlier(s)"
    )
    return Check(
        "outliers",
        failed,
        (
            ("mild", float(mild)),
            ("far", float(far)),
            ("far_share", share),
            ("low_fence_s", low_far),
            ("high_fence_s", high_far),
        ),
        note,
    )


def _bimodality_rule(ordered: list[float], median: float) -> tuple[bool, int, float, float, float]:
    """The widest gap between consecutive sorted samples that leaves a mode on each side (its
    bars lower where the median lies in it): (failed, where it splits the series (0: no such
    gap), the gap, the gap over the wider cluster's range, the gap over the median)."""
    n = len(ordered)
    least = max(2, math.ceil(MODE_SHARE_MIN * n))
    best_gap, split = 0.0, 0
    for k in range(least, n - least + 1):  # lower cluster ordered[:k], upper ordered[k:]
        gap = ordered[k] - ordered[k - 1]
        if gap > best_gap:
            best_gap, split = gap, k
    if split == 0:
        return False, 0, 0.0, 0.0, 0.0
    widest = max(ordered[split - 1] - ordered[0], ordered[-1] - ordered[split])
    over_range = best_gap / widest if widest > 0 else math.inf
    over_median = best_gap / median
    if n >= TWO_MODES_MIN_SAMPLES and abs(2 * split - n) <= 1:  # the median in the gap or at its edge
        failed = over_range > MEDIAN_IN_GAP_OVER_RANGE_MIN and over_median >= MEDIAN_IN_GAP_OVER_MEDIAN_MIN
    else:
        failed = over_range > GAP_OVER_RANGE_MIN and over_median >= GAP_OVER_MEDIAN_MIN
    return failed, split, best_gap, over_range, over_median


def _two_modes_rule(ordered: list[float], median: float) -> tuple[bool, int, float, float]:
    """The least-squares cut of the sorted series into two sides of at least a quarter each:
    (failed, where it cuts (0: too few samples), the sides' means apart in pooled standard
    deviations, their medians apart over the median)."""
    n = len(ordered)
    if n < TWO_MODES_MIN_SAMPLES:
        return False, 0, 0.0, 0.0
    least = max(2, math.ceil(TWO_MODES_SHARE_MIN * n))
    scaled = [(v - median) / median for v in ordered]  # near 0: the squares lose no precision
    sums, squares = [0.0], [0.0]
    for v in scaled:
        sums.append(sums[-1] + v)
        squares.append(squares[-1] + v * v)
    total, total_sq = sums[-1], squares[-1]
    best, split = math.inf, 0
    for k in range(least, n - least + 1):
        low, high = sums[k], total - sums[k]
        within = squares[k] - low * low / k + (total_sq - squares[k]) - high * high / (n - k)
        if within < best:
            best, split = within, k
    if split == 0:  # no finite cut (samples spanning more than a float's range): nothing to say
        return False, 0, 0.0, 0.0
    low_mean, high_mean = sums[split] / split, (total - sums[split]) / (n - split)
    pooled = max(best, 0.0) / (n - 2)  # both sides' squared deviations over their degrees of freedom
    separation = (high_mean - low_mean) / math.sqrt(pooled) if pooled > 0 else math.inf
    apart = (sorted_median(ordered[split:]) - sorted_median(ordered[:split])) / median
    failed = apart >= GAP_OVER_MEDIAN_MIN and separation > TWO_MODES_SEPARATION + TWO_MODES_SMALL_N / n
    return failed, split, separation, apart


def _bimodality(ordered: list[float], median: float) -> Check:
    gap_failed, gap_split, best_gap, over_range, over_median = _bimodality_rule(ordered, median)
    cut_failed, cut_split, separation, apart = _two_modes_rule(ordered, median)
    coefficient = _bimodality_coefficient(ordered)
    cut = (
        ("separation", separation if math.isfinite(separation) else 1e9),
        ("modes_apart_over_median", apart),
    )
    split = gap_split if gap_failed or not cut_failed else cut_split
    if split == 0:
        return Check(
            "bimodality",
            False,
            (("gap_s", 0.0), ("gap_over_range", 0.0), ("gap_over_median", 0.0), ("coefficient", coefficient), *cut),
            "one mode",
        )
    lower, upper = ordered[:split], ordered[split:]
    both = f"{len(lower)} samples near {sorted_median(lower):.4g} s and {len(upper)} near {sorted_median(upper):.4g} s"
    if gap_failed:
        between = f", the median {median:.4g} s between them" if lower[-1] < median < upper[0] else ""
        note = f"two modes: {both}, {best_gap:.4g} s apart{between}"
    elif cut_failed:
        shown = f"{separation:.1f}" if math.isfinite(separation) else "infinitely many"
        note = f"two modes: {both}, their means {shown} standard deviations apart"
    else:
        note = "one mode"
    figures = (
        ("gap_s", best_gap),
        ("gap_over_range", over_range if math.isfinite(over_range) else 1e9),
        ("gap_over_median", over_median),
        ("lower_count", float(len(lower))),
        ("upper_count", float(len(upper))),
        ("lower_median_s", sorted_median(lower)),
        ("upper_median_s", sorted_median(upper)),
        ("coefficient", coefficient),
        *cut,
    )
    return Check("bimodality", gap_failed or cut_failed, figures, note)


def _bimodality_coefficient(ordered: list[float]) -> float:
    """Sarle's bimodality coefficient (above 5/9 hints at two modes); a figure shown, not a rule,
    since one far outlier alone drives it up."""
    n = len(ordered)
    scale = ordered[-1] or 1.0  # the moments of values / the largest: no overflow at any magnitude
    mean = math.fsum(v / scale for v in ordered) / n
    s2 = s3 = s4 = 0.0
    for v in ordered:  # one pass for the three moments
        d = v / scale - mean
        s2 += d**2
        s3 += d**3
        s4 += d**4
    m2 = s2 / n
    if n < 4 or m2 <= 0:
        return 0.0
    m3, m4 = s3 / n, s4 / n
    skew = math.sqrt(n * (n - 1)) / (n - 2) * m3 / m2**1.5
    excess = (n - 1) / ((n - 2) * (n - 3)) * ((n + 1) * (m4 / m2**2 - 3) + 6)
    return (skew**2 + 1) / (excess + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


def _drift_rule(values: tuple[float, ...], median: float, iqr: float) -> tuple[bool, float, float, float]:
    """(failed, the first third's median, the last third's, their change over the median)."""
    third = len(values) // 3
    first, last = sorted_median(sorted(values[:third])), sorted_median(sorted(values[-third:]))
    change = (last - first) / median
    return abs(change) > DRIFT_MAX and abs(last - first) > iqr, first, last, change


def _trend_rule(
    values: tuple[float, ...], median: float, thirds_change: float, figures: bool = False
) -> tuple[bool, float, float]:
    """(failed, the Theil-Sen line's change from the first sample (block) to the last over the
    median, the Mann-Kendall z); both 0 when the thirds' change is under the screen, unless
    ``figures`` (a check shows them)."""
    n = len(values)
    points = values if n <= TREND_MAX_POINTS else _block_medians(values, TREND_MAX_POINTS)
    m = len(points)
    spread = math.sqrt(m * (m - 1) * (2 * m + 5) / 18)  # of the Mann-Kendall statistic
    # Screened out too when even every pair rising could not reach TREND_Z_MIN (under 7 samples).
    screened = abs(thirds_change) < TREND_SCREEN or (m * (m - 1) // 2 - 1) / spread < TREND_Z_MIN
    if screened and not figures:
        return False, 0.0, 0.0
    slopes: list[float] = []
    rising = 0
    for i in range(m - 1):
        here = points[i]
        for j in range(i + 1, m):
            step = points[j] - here
            slopes.append(step / (j - i))
            rising += (step > 0) - (step < 0)
    slopes.sort()
    change = sorted_median(slopes) * (m - 1) / median
    corrected = rising - (rising > 0) + (rising < 0)  # the continuity correction
    z = corrected / spread
    failed = not screened and abs(change) > DRIFT_MAX and abs(z) >= TREND_Z_MIN and _steady(values, change)
    return failed, change, z


def _block_medians(values: tuple[float, ...], blocks: int) -> tuple[float, ...]:
    """The medians of ``blocks`` consecutive blocks of the series, in order."""
    n = len(values)
    return tuple(sorted_median(sorted(values[k * n // blocks : (k + 1) * n // blocks])) for k in range(blocks))


def _steady(values: tuple[float, ...], change: float) -> bool:
    """The thirds' medians move the way ``change`` goes, twice, the smaller move at least
    TREND_STEADY_SHARE of the larger."""
    third = len(values) // 3
    first, middle, last = (
        sorted_median(sorted(part)) for part in (values[:third], values[third:-third], values[-third:])
    )
    moves = (middle - first, last - middle) if change > 0 else (first - middle, middle - last)
    return min(moves) > 0 and min(moves) >= TREND_STEADY_SHARE * max(moves)


def _hump_rule(
    values: tuple[float, ...], median: float, first: float | None = None, last: float | None = None
) -> tuple[bool, float, float, float, float, float]:
    """(failed, the first, middle and last thirds' medians, the middle's move from the nearer outer
    third over the median (+ slower, - faster; 0 when the thirds do not all move one way), the
    outer thirds' IQR over the median); nothing is failed below HUMP_MIN_SAMPLES samples.
    ``first`` and ``last``: the outer thirds' medians where the drift rule has them already."""
    n = len(values)
    if n < HUMP_MIN_SAMPLES:
        return False, 0.0, 0.0, 0.0, 0.0, 0.0
    third = n // 3
    if first is None or last is None:
        first, last = sorted_median(sorted(values[:third])), sorted_median(sorted(values[-third:]))
    middle = sorted_median(sorted(values[third:-third]))
    ordered = sorted(values[:third] + values[-third:])
    spread = quantile(ordered, 3, 4) - quantile(ordered, 1, 4)
    up, down = middle - max(first, last), min(first, last) - middle
    move = up if up > 0 else -down if down > 0 else 0.0
    failed = abs(move) > DRIFT_MAX * median and abs(move) > HUMP_OVER_OUTER_IQR * spread
    return failed, first, middle, last, move / median, spread / median


def _finite(figure: float) -> float:
    """A figure as a log can hold it (JSON has no infinity): an infinite one as +-1e9. A ratio
    over a median of a few denormal seconds overflows; no timer gives such samples, but the
    collector must still be able to write what it classified."""
    return figure if math.isfinite(figure) else math.copysign(1e9, figure)


def _hump(values: tuple[float, ...], median: float) -> Check:
    failed, first, middle, last, move, spread = _hump_rule(values, median)
    which = "above" if move > 0 else "below"
    note = (
        f"hump: the middle third's median {middle:.4g} s is {which} both outer thirds' ({first:.4g} s, {last:.4g} s) "
        f"by {abs(move):.1%} of the median or more, their own IQR {spread:.1%} of it: the speed moved and came back"
        if failed
        else f"hump {move:+.1%}"
    )
    return Check(
        "hump",
        failed,
        (
            ("first_third_median_s", first),
            ("middle_third_median_s", middle),
            ("last_third_median_s", last),
            ("move_over_median", move),
            ("outer_iqr_over_median", spread),
        ),
        note,
    )


def _drift(values: tuple[float, ...], median: float, iqr: float) -> Check:
    failed, first, last, change = _drift_rule(values, median, iqr)
    trending, trend_change, z = _trend_rule(values, median, change, figures=True)
    if failed:
        note = f"drift: the last third's median {last:.4g} s against the first third's {first:.4g} s ({change:+.0%} of the median)"
    elif trending:
        note = (
            f"drift: the time per call {'rose' if trend_change > 0 else 'fell'} by {abs(trend_change):.0%} of the median"
            f" over the loop, in each of its thirds (Theil-Sen line; Mann-Kendall z {z:+.1f})"
        )
    else:
        note = f"drift {change:+.1%}"
    return Check(
        "drift",
        failed or trending,
        (
            ("first_third_median_s", first),
            ("last_third_median_s", last),
            ("change_over_median", change),
            ("trend_change_over_median", trend_change),
            ("trend_z", z),
        ),
        note,
    )


def _spread_rule(iqr: float, median: float) -> tuple[bool, float]:
    """(failed, the IQR over the median)."""
    ratio = iqr / median
    return ratio > SPREAD_MAX, ratio


def _spread(iqr: float, median: float) -> Check:
    failed, ratio = _spread_rule(iqr, median)
    note = (
        f"IQR is {_beside(ratio, SPREAD_MAX)} of the median (> {SPREAD_MAX:.0%})"
        if failed
        else f"IQR/median {ratio:.1%}"
    )
    return Check("spread", failed, (("iqr_over_median", ratio),), note)


def _min_median_rule(low: float, median: float) -> tuple[bool, float]:
    """(failed, the fastest sample over the median)."""
    ratio = low / median
    return ratio < MIN_OVER_MEDIAN_MIN, ratio


def _min_median(low: float, median: float) -> Check:
    failed, ratio = _min_median_rule(low, median)
    note = (
        f"the fastest sample is {_beside(ratio, MIN_OVER_MEDIAN_MIN)} of the median (< {MIN_OVER_MEDIAN_MIN:.0%})"
        if failed
        else f"min/median {ratio:.2f}"
    )
    return Check("min_median", failed, (("min_over_median", ratio),), note)


def _contention_rule(waited: float, wall: float) -> tuple[bool, float]:
    """(failed, the seconds the threads waited for a CPU per second of the loop)."""
    rate = waited / wall if wall > 0 else (math.inf if waited > 0 else 0.0)
    return rate > WAIT_PER_SECOND_MAX, rate


def _contention(waited: float, wall: float) -> Check:
    failed, rate = _contention_rule(waited, wall)
    note = (
        f"contention: the process's threads waited for a CPU {rate:.2f} s per second of the loop "
        f"(> {WAIT_PER_SECOND_MAX:.2f}): other work held the CPUs, or it ran more busy threads than it may use"
        if failed
        else f"waited for a CPU {rate:.3f} s per second of the loop"
    )
    shown = rate if math.isfinite(rate) else 1e9  # a log's figures are finite
    return Check("contention", failed, (("wait_s", waited), ("loop_s", wall), ("wait_per_s", shown)), note)


def repetition_totals(decode: Sequence[float], repetitions: int) -> list[float]:
    """Each repetition's whole decode time from a generation cell's decode samples (each
    repetition's steps in turn); [] where the repetitions cannot share them equally."""
    if repetitions <= 0 or not decode or len(decode) % repetitions:
        return []
    steps = len(decode) // repetitions
    return [math.fsum(decode[i * steps : (i + 1) * steps]) for i in range(repetitions)]


def unstable_generation(
    first_token: Sequence[float],
    decode: Sequence[float],
    repetitions: int,
    waited: tuple[float, float] | None = None,
) -> list[str]:
    """Which series of one loop of warm generations are unstable, in words: the first token, each
    decode step, and each repetition's whole decode time (tokens/s is read from those). The
    collector measures such a loop again; reportgen checks that a loop measured again was so."""
    series = {
        "first token": first_token,
        "decode per token": decode,
        "repetitions' decode times": repetition_totals(decode, repetitions),
    }
    return [name for name, samples in series.items() if samples and classify(samples, waited).verdict == UNSTABLE]
