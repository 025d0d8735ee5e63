"""The warm-series classifier (collector/stability.py) on planted series: each read as planted."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import pytest

from collector import stability
from collector.stability import STABLE, UNCLASSIFIED, UNSTABLE, classify

NOISY_RUN = Path(__file__).resolve().parent.parent / "sample_runs" / "tiny-encoder-cpu-20261130T101022Z-393b16"


def steady(n: int = 30, centre: float = 0.010, jitter: float = 0.02, seed: int = 1) -> list[float]:
    """A series around ``centre`` with a relative normal jitter: what a quiet host gives."""
    rng = random.Random(seed)
    return [centre * (1 + rng.gauss(0, jitter)) for _ in range(n)]


def failed(series: list[float]) -> set[str]:
    return {c.name for c in classify(series).reasons}


@pytest.mark.parametrize("seed", range(20))
def test_a_steady_series_is_stable(seed: int) -> None:
    result = classify(steady(seed=seed))
    assert result.verdict == STABLE, result.summary()
    assert result.reasons == ()
    assert {c.name for c in result.checks} == {"outliers", "bimodality", "drift", "hump", "spread", "min_median"}


def test_a_bimodal_series_is_unstable_for_bimodality_with_both_modes_named() -> None:
    # Interleaved fast and slow calls (a busy host on some calls): no drift, two clear modes.
    series = [s * (12.0 if i % 3 == 0 else 1.0) for i, s in enumerate(steady(seed=3))]
    result = classify(series)
    assert result.verdict == UNSTABLE
    assert "bimodality" in failed(series)
    assert "drift" not in failed(series)
    check = next(c for c in result.checks if c.name == "bimodality")
    assert check.figure("lower_count") == 20 and check.figure("upper_count") == 10
    assert check.figure("gap_over_median") > 1
    assert "two modes" in result.summary()


def test_a_drifting_series_is_unstable_for_drift_only() -> None:
    # The host slows down steadily: 40% slower by the end, with a little noise.
    series = [s * (1 + 0.4 * i / 29) for i, s in enumerate(steady(seed=4, jitter=0.005))]
    result = classify(series)
    assert "drift" in failed(series)
    assert "bimodality" not in failed(series) and "outliers" not in failed(series)
    drift = next(c for c in result.checks if c.name == "drift")
    assert drift.figure("change_over_median") > 0.2
    assert drift.figure("last_third_median_s") > drift.figure("first_third_median_s")


def _two_speeds(slow_share: float, apart: float = 0.20, noise: float = 0.03, seed: int = 7) -> list[float]:
    """Calls at two speeds, in no order, each with its own noise: no gap is wider than a cluster."""
    rng = random.Random(seed)
    return [1e-3 * (1 + apart if rng.random() < slow_share else 1.0) * math.exp(rng.gauss(0, noise)) for _ in range(30)]


def test_two_speeds_with_samples_between_them_are_two_modes() -> None:
    """Before: half the calls 20% slower, 3% noise, no gap wider than a cluster, read "stable" in
    83 of 100 simulated series (a median that falls between the two speeds decided a
    comparison). The least-squares cut into two sides now finds them."""
    series = _two_speeds(0.5)
    result = classify(series)
    check = next(c for c in result.checks if c.name == "bimodality")
    assert check.figure("gap_over_range") <= stability.GAP_OVER_RANGE_MIN, "the gap alone does not see it"
    assert check.failed and result.verdict == UNSTABLE
    assert check.figure("separation") > stability.TWO_MODES_SEPARATION + stability.TWO_MODES_SMALL_N / 30
    assert check.figure("modes_apart_over_median") >= 0.15
    assert "standard deviations apart" in check.note and "two modes" in result.summary()


def test_one_spread_out_mode_is_not_two() -> None:
    """Samples spread evenly over +-15% (the widest single-mode series the spread rule lets
    through) cut into halves whose means are about 3.5 standard deviations apart: one mode."""
    even = [1e-3 * (0.85 + 0.3 * i / 29) for i in range(30)]
    series = [even[i] for start in range(3) for i in range(start, 30, 3)]  # each third spans the range
    result = classify(series)
    check = next(c for c in result.checks if c.name == "bimodality")
    assert result.verdict == STABLE, result.summary()
    assert 3 < check.figure("separation") < stability.TWO_MODES_SEPARATION + stability.TWO_MODES_SMALL_N / 30


def test_a_slow_group_under_a_quarter_is_left_to_the_outlier_rule() -> None:
    # 6 of 30 calls 25% slower: the median stays inside the main group.
    rng = random.Random(11)
    series = [1e-3 * (1.25 if i % 5 == 2 else 1.0) * math.exp(rng.gauss(0, 0.01)) for i in range(30)]
    ordered = sorted(series)
    cut_failed, split, _, _ = stability._two_modes_rule(ordered, statistics.median(series))
    assert not cut_failed and 8 <= split <= 22  # the cut keeps a quarter a side: never the 24/6 split


def test_the_cut_needs_ten_samples() -> None:
    series = _two_speeds(0.5)[:9]
    check = next(c for c in classify(series).checks if c.name == "bimodality")
    assert check.figure("separation") == 0.0 and check.figure("modes_apart_over_median") == 0.0


# A shipped 10-sample loop (all-MiniLM-L6-v2, cpu, b1-l512-contiguous-bfloat16-eager, 2026-12-06):
# the first six calls near 0.74 s but one (0.90 s), the last four near 0.88 s; no call took the
# median, 0.827 s.
TWO_SPEEDS_TEN = [
    0.6971431909987587,
    0.7405336939991685,
    0.8983717129958677,
    0.7271180060051847,
    0.7480058760047541,
    0.7852534100020421,
    0.8784308789981878,
    0.8684690250011045,
    0.8724551650011563,
    0.8942313630032004,
]


def test_a_median_between_two_speeds_of_a_short_loop_is_two_modes() -> None:
    """Before: read "stable", every rule passed narrowly (the gap 0.94 of the lower cluster's
    range, the cut's means 5.8 standard deviations apart against 7, the thirds' medians 16% apart
    but less than the IQR). The median lies in the widest gap, which is wider than half the wider
    cluster's range and 8% of the median or more: two modes."""
    result = classify(TWO_SPEEDS_TEN)
    assert result.verdict == UNSTABLE and failed(TWO_SPEEDS_TEN) == {"bimodality"}, result.summary()
    check = next(c for c in result.checks if c.name == "bimodality")
    assert stability.MEDIAN_IN_GAP_OVER_RANGE_MIN < check.figure("gap_over_range") <= stability.GAP_OVER_RANGE_MIN
    assert check.figure("gap_over_median") >= stability.MEDIAN_IN_GAP_OVER_MEDIAN_MIN
    assert check.figure("separation") < stability.TWO_MODES_SEPARATION + stability.TWO_MODES_SMALL_N / 10
    assert check.figure("lower_count") == 5 and check.figure("upper_count") == 5
    assert "the median 0.8269 s between them" in check.note


def test_two_speeds_split_six_and_five_are_two_modes_as_five_and_five_are() -> None:
    """At an odd count the median is a sample, at the gap's edge: the same loop with one more
    fast call (six and five of 11) read stable while its ten calls read unstable (a review of
    this round, finding 7)."""
    eleven = [*TWO_SPEEDS_TEN, 0.7305]
    assert classify(eleven).verdict == UNSTABLE and failed(eleven) == {"bimodality"}, classify(eleven).summary()
    check = next(c for c in classify(eleven).checks if c.name == "bimodality")
    assert (check.figure("lower_count"), check.figure("upper_count")) == (6, 5)
    assert stability.MEDIAN_IN_GAP_OVER_RANGE_MIN < check.figure("gap_over_range") <= stability.GAP_OVER_RANGE_MIN


def test_a_median_in_a_narrow_gap_or_in_a_loop_under_ten_samples_is_one_mode() -> None:
    # Two tight groups 4% apart, the median between them: a figure right to a few percent.
    tight = [1.0, 1.052, 1.004, 1.049, 0.998, 1.055, 1.002, 1.05, 1.006, 1.047]
    assert classify(tight).verdict == STABLE, classify(tight).summary()
    # Eight samples: a middle gap that wide is too common in one mode of 8-12% noise.
    short = [0.70, 0.87, 0.74, 0.875, 0.77, 0.88, 0.785, 0.90]
    assert classify(short).verdict == STABLE, classify(short).summary()


@pytest.mark.parametrize("seed", range(20))
def test_a_short_steady_series_is_stable(seed: int) -> None:
    result = classify(steady(n=10, jitter=0.04, seed=seed))
    assert result.verdict == STABLE, result.summary()


def _humped(n: int, peak: float, share: float, seed: int, noise: float = 0.03) -> list[float]:
    """A loop that slowed by ``peak`` at its middle, rising and falling over ``share`` of it."""
    rng = random.Random(seed)
    start = round(n * (1 - share) / 2)
    end = n - start
    rise = [peak * (1 - abs(2 * (i - start) / (end - start - 1) - 1)) if start <= i < end else 0.0 for i in range(n)]
    return [1e-3 * (1 + r) * math.exp(rng.gauss(0, noise)) for r in rise]


@pytest.mark.parametrize("seed", range(5))
def test_a_slowdown_that_came_back_is_a_hump(seed: int) -> None:
    """Before: a loop 40% slower at its middle, rising and falling over the middle half, read
    "stable" in most simulated series (21 of 100 unstable at 10 and 30 samples): the first and
    last thirds agree (no drift), and sorted, the samples run evenly from one speed to the other
    (no two modes). The middle third's median is now held to both outer thirds'."""
    series = _humped(30, 0.40, 0.5, seed)
    result = classify(series)
    hump = next(c for c in result.checks if c.name == "hump")
    assert hump.failed and result.verdict == UNSTABLE, result.summary()
    assert hump.figure("move_over_median") > 0.10 and "came back" in hump.note and " above both" in hump.note
    dip = [2e-3 - v for v in series]  # the same loop faster at its middle
    assert next(c for c in classify(dip).checks if c.name == "hump").failed


def test_a_hump_needs_three_samples_in_the_middle_third_and_a_move_beyond_the_outer_spread() -> None:
    assert not next(c for c in classify(_humped(5, 0.40, 0.5, 1)).checks if c.name == "hump").failed
    # Six samples: the middle third's median is the mean of two, and one call 27% slow moved it
    # 11% above both outer thirds: it read as a hump, and the same six samples in another order
    # as stable. One slow call is the outlier rule's to judge.
    one_slow = [0.963e-3, 0.964e-3, 1.015e-3, 1.274e-3, 1.000e-3, 1.065e-3]
    assert classify(one_slow).verdict == STABLE, classify(one_slow).summary()
    seven = [1e-3 * f for f in (1.0, 1.01, 1.28, 1.31, 1.3, 0.99, 1.0)]  # three middle calls 30% slower
    assert stability.HUMP_MIN_SAMPLES == 7
    assert next(c for c in classify(seven).checks if c.name == "hump").failed
    assert not next(c for c in classify(seven[:3] + seven[4:]).checks if c.name == "hump").failed  # six
    # 12% noise: the outer thirds' own IQR is wider than half the middle's move; not a hump.
    noisy = _humped(30, 0.12, 0.5, 2, noise=0.12)
    hump = next(c for c in classify(noisy).checks if c.name == "hump")
    assert hump.figure("outer_iqr_over_median") * stability.HUMP_OVER_OUTER_IQR > abs(hump.figure("move_over_median"))
    assert not hump.failed


def test_a_steady_drift_the_thirds_miss_is_a_drift() -> None:
    """Before: 15% slower from first call to last, 3% noise, read "stable" in 59 of 100 simulated
    series: the thirds' medians move by two thirds of the drift and the IQR grows with it."""
    rng = random.Random(5)
    series = [1e-3 * (1 + 0.15 * i / 29) * math.exp(rng.gauss(0, 0.03)) for i in range(30)]
    result = classify(series)
    drift = next(c for c in result.checks if c.name == "drift")
    first, last = drift.figure("first_third_median_s"), drift.figure("last_third_median_s")
    assert abs(drift.figure("change_over_median")) <= stability.DRIFT_MAX or last - first <= result.iqr_s, (
        "the thirds alone do not see it"
    )
    assert drift.failed and result.verdict == UNSTABLE
    assert drift.figure("trend_change_over_median") > 0.10 and drift.figure("trend_z") >= stability.TREND_Z_MIN
    assert "time per call rose by 1" in drift.note and "in each of its thirds" in drift.note


def test_one_slow_first_call_is_no_trend() -> None:
    """A rank-based line: one stray sample at the start (13% fast here) moves it little, where a
    least-squares line through the same samples changes by more than 10%."""
    rng = random.Random(3)
    series = [1e-3 * (0.87 if i == 0 else 1 + 0.004 * i) * math.exp(rng.gauss(0, 0.005)) for i in range(10)]
    drift = next(c for c in classify(series).checks if c.name == "drift")
    assert not drift.failed, drift.note
    assert abs(drift.figure("trend_change_over_median")) < 0.06


def test_the_bar_for_two_modes_falls_as_the_series_grows() -> None:
    """A single mode cut to separate its sides reaches 6 to 8 standard deviations at 10 samples
    (uniform or exponential noise: 3-9 in 100 series above 5), so one bar of 5 at every size called
    such series two modes; the bar is now 4 + 30 / n (7 at 10 samples, 5 at 30)."""
    offsets = (-2, -1, 0, 1, 2)
    clusters = [1e-3 * (centre + 0.0116 * k) for centre in (0.945, 1.055) for k in offsets]
    short = [clusters[i] for i in (0, 5, 1, 6, 2, 7, 3, 8, 4, 9)]  # the two speeds interleaved
    check = next(c for c in classify(short).checks if c.name == "bimodality")
    assert 5.5 < check.figure("separation") < 7 and check.figure("modes_apart_over_median") >= 0.10
    assert not check.failed
    longer = short * 3  # the same two speeds, three times the samples
    check = next(c for c in classify(longer).checks if c.name == "bimodality")
    assert check.figure("separation") > 5 and check.failed


def test_a_warm_up_left_over_at_the_start_is_no_drift() -> None:
    """A 20% excess fading over the first few calls read "fell steadily, by 12% of the median":
    the Theil-Sen line and the Mann-Kendall statistic see a fall, but the last two thirds are
    flat, and the median speaks for the loop."""
    rng = random.Random(3)
    series = [1e-3 * math.exp(rng.gauss(0, 0.03)) * (1 + 0.2 * math.exp(-i / 3)) for i in range(30)]
    result = classify(series)
    drift = next(c for c in result.checks if c.name == "drift")
    assert drift.figure("trend_change_over_median") < -0.10 and drift.figure("trend_z") <= -stability.TREND_Z_MIN
    assert not drift.failed and result.verdict == STABLE, result.summary()


def test_a_long_loop_s_trend_is_taken_on_block_medians() -> None:
    """At 10,000 samples (the most a plan allows) the checks compared 50 million pairs: 32 s and
    2.2 GB a series. Above 100 samples the test runs on the medians of 100 consecutive blocks, so
    its z is at most that of 100 points rising (about 14.7), and a steady drift is still seen."""
    series = [1e-3 * (1 + 0.2 * i / 9999) for i in range(10_000)]
    drift = next(c for c in classify(series).checks if c.name == "drift")
    assert drift.failed and 14 < drift.figure("trend_z") < 14.8
    assert 0.18 < drift.figure("trend_change_over_median") < 0.2


def test_figures_over_a_median_of_denormal_seconds_are_written_finite() -> None:
    """The collector writes each check's figures with allow_nan=False: a ratio over a median of
    5e-324 s overflowed to inf (the hump's move, the spread, the gap) and the write raised."""
    for series in ([5e-324] * 3 + [1.0] * 3 + [5e-324] * 3, [5e-324] * 3 + [1.0] + [5e-324] * 4):
        data = classify(series).to_dict()
        json.dumps(data, allow_nan=False)
        assert data["verdict"] == UNSTABLE


def test_samples_beyond_a_float_s_range_are_classified_without_an_error() -> None:
    # The cut's squares overflowed to inf, then NaN: no cut was found and a division by zero followed.
    result = classify([1e-9] * 9 + [1e300])
    assert result.verdict in (STABLE, UNSTABLE)
    json.dumps(result.to_dict(), allow_nan=False)


def test_a_few_far_outliers_make_a_series_unstable_only_past_the_allowed_share() -> None:
    base = steady(seed=5, jitter=0.01)
    two = list(base)
    two[7] *= 5
    two[20] *= 5
    assert classify(two).verdict == STABLE  # 2 of 30 (7%): a stray page fault, not a different process
    five = list(base)
    for i in (2, 9, 15, 22, 28):
        five[i] *= 1.6
    result = classify(five)
    assert "outliers" in failed(five)
    assert next(c for c in result.checks if c.name == "outliers").figure("far") == 5


def test_a_wide_series_is_unstable_for_spread_and_one_fast_sample_for_min_median() -> None:
    wide = steady(seed=6, jitter=0.25)
    assert "spread" in failed(wide)
    fast_once = steady(seed=7, jitter=0.01)
    fast_once[4] = fast_once[4] * 0.3
    assert "min_median" in failed(fast_once)


def test_a_quantised_series_with_zero_iqr_is_stable() -> None:
    series = [0.001] * 25 + [0.00101] * 5
    assert classify(series).verdict == STABLE


@pytest.mark.parametrize(
    "series",
    [[], [0.1], [0.1, 0.1, 0.1, 0.1], [0.1] * 10 + [math.nan], [0.1] * 10 + [-1.0], [0.0] * 10, [0.1] * 9 + ["x"]],
)
def test_too_few_or_unusable_samples_are_unclassified_with_a_reason(series: list) -> None:
    result = classify(series)
    assert result.verdict == UNCLASSIFIED
    assert result.note and not result.stable
    json.dumps(result.to_dict())


def test_a_series_of_one_value_decides_nothing() -> None:
    """Thirty equal samples read "stable" with an IQR of 0, and two such series one timer tick
    apart gave an interval of zero width: a one-tick difference read as certain."""
    result = classify([0.001] * 30)
    assert result.verdict == UNCLASSIFIED and "the same value" in result.note
    assert classify([0.001] * 29 + [0.00101]).verdict == STABLE  # two values: a spread to judge against


def test_the_dict_form_carries_every_check_and_its_figures() -> None:
    data = classify([s * (12.0 if i % 3 == 0 else 1.0) for i, s in enumerate(steady(seed=3))]).to_dict()
    assert data["verdict"] == UNSTABLE and "bimodality" in data["reasons"]
    assert set(data["checks"]) == {"outliers", "bimodality", "drift", "hump", "spread", "min_median"}
    assert data["checks"]["spread"]["iqr_over_median"] > stability.SPREAD_MAX
    json.dumps(data)


def test_the_shipped_noisy_run_is_classified_unstable() -> None:
    # 8 samples at ~0.4 ms and 22 at ~124 ms while the host was busy.
    warm = {}
    for line in (NOISY_RUN / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") == "timing" and event.get("warm"):
            warm[event["case"]] = event["warm"]["samples_s"]
    result = classify(warm["b1-l32-noncontiguous-float32-eager"])
    assert result.verdict == UNSTABLE
    assert {"min_median", "spread"} <= {c.name for c in result.reasons}
    assert sum(1 for s in warm.values() if classify(s).verdict == UNSTABLE) >= 5


def test_the_classifier_imports_the_standard_library_only() -> None:
    import ast
    import sys

    tree = ast.parse(Path(stability.__file__).read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names <= set(sys.stdlib_module_names) | {"__future__"}, names
