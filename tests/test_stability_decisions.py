"""The classifier decides a verdict from each rule's decision alone and builds the checks (every
figure and note) only when asked for: the two must always agree, on the series as classified."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collector.stability import STABLE, UNCLASSIFIED, UNSTABLE, classify


def _ramp(n: int, low: float, high: float) -> list[float]:
    return [low + (high - low) * i / (n - 1) for i in range(n)]


def _thirds_alike(ordered: list[float]) -> list[float]:
    """The sorted values dealt out so that each third of the series holds every third value."""
    return [ordered[i] for start in range(3) for i in range(start, len(ordered), 3)]


def _steady(n: int) -> list[float]:
    return [1e-3 * (1 + 0.001 * ((i * 7) % 5)) for i in range(n)]


# One series per rule that fails that rule and no other.
ONE_RULE = {
    "outliers": [v * (1.5 if i % 7 == 3 else 1.0) for i, v in enumerate(_steady(30))],
    "bimodality": [1e-3 * (1.15 if i % 4 == 1 else 1.0) * (1 + 0.0001 * (i % 3)) for i in range(30)],
    "drift": [v * 1e-3 for v in _ramp(30, 1.0, 1.25)],
    "spread": _thirds_alike([v * 1e-3 for v in _ramp(30, 0.7, 1.3)]),
    "min_median": [v * (0.4 if i == 12 else 1.0) for i, v in enumerate(_steady(30))],
    # 25% slower at the middle of the loop, rising and falling back: no drift, no two modes.
    "hump": [v * (1 + 0.25 * max(0.0, 1 - abs(i - 14.5) / 7.5)) for i, v in enumerate(_steady(30))],
}


@pytest.mark.parametrize("rule", sorted(ONE_RULE))
def test_each_rule_alone_makes_a_series_unstable(rule: str) -> None:
    result = classify(ONE_RULE[rule])
    assert result.verdict == UNSTABLE
    assert [c.name for c in result.reasons] == [rule]
    assert result.to_dict()["reasons"] == [rule]


def _agrees(samples: list[float]) -> None:
    result = classify(samples)
    if result.verdict == UNCLASSIFIED:
        assert result.checks == () and result.reasons == ()
        return
    failing = [c.name for c in result.checks if c.failed]
    assert result.verdict == (UNSTABLE if failing else STABLE), result.to_dict()
    assert [c.name for c in result.reasons] == failing
    data = result.to_dict()
    assert data["reasons"] == failing and len(data["checks"]) == 6
    json.dumps(data, allow_nan=False)


# Series around 1 ms: clusters, steps and strays of several sizes, as a warm loop gives them.
SERIES = st.lists(
    st.one_of(
        st.floats(0.98, 1.02),
        st.floats(0.7, 1.3),
        st.sampled_from([0.0, 0.3, 0.45, 1.0, 1.12, 1.5, 3.0, 12.0]),
    ),
    min_size=0,
    max_size=40,
).map(lambda xs: [x * 1e-3 for x in xs])


@settings(max_examples=400, deadline=None)
@given(samples=SERIES)
def test_the_verdict_is_the_checks_verdict(samples: list[float]) -> None:
    _agrees(samples)


@pytest.mark.parametrize("rule", sorted(ONE_RULE))
def test_the_checks_are_of_the_series_as_classified_not_as_later_changed(rule: str) -> None:
    samples = list(ONE_RULE[rule])
    result = classify(samples)
    before = classify(list(samples)).to_dict()
    samples[:] = [1e-3] * len(samples)  # the caller reuses its list before anyone asks for the checks
    assert result.to_dict() == before
    assert result.series == tuple(ONE_RULE[rule])


def test_a_tuple_is_kept_as_given_and_the_checks_are_built_once() -> None:
    samples = tuple(_steady(30))
    result = classify(samples)
    assert result.series is samples
    assert result.checks is result.checks
