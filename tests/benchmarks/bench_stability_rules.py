"""How often the warm-series classifier calls a simulated series unstable, by kind of series.

    python tests/benchmarks/bench_stability_rules.py [--series 400] [--seed 1] [--sizes 10,30]

The thresholds of collector/stability.py are set on these figures. Each row is one kind of
series, generated with a seeded standard-library generator: single-mode kinds (which should be
called stable, since their median speaks for the loop) and kinds with two speeds or a speed that
moved during the loop (which should not decide a comparison). For each size it prints the share
called unstable, and which rules fired (a series can fail several). Figures only: the rates are
a property of the rules, not a target a machine can meet or miss; the synthetic series are
evidence of nothing about any host.
"""

from __future__ import annotations

import argparse
import collections
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from collector.stability import classify  # noqa: E402

Kind = Callable[[random.Random, int], list[float]]


def _lognormal(spread: float) -> Kind:
    return lambda rng, n: [math.exp(rng.gauss(0, spread)) for _ in range(n)]


def _correlated(rng: random.Random, n: int, phi: float = 0.7, spread: float = 0.03) -> list[float]:
    level = rng.gauss(0, spread)
    out = []
    for _ in range(n):
        out.append(math.exp(level))
        level = phi * level + rng.gauss(0, spread * math.sqrt(1 - phi * phi))
    return out


def _two_speeds(apart: float, spread: float, slow_share: float) -> Kind:
    return lambda rng, n: [
        math.exp(rng.gauss(0, spread)) * (1 + apart if rng.random() < slow_share else 1.0) for _ in range(n)
    ]


def _drift(total: float) -> Kind:
    return lambda rng, n: [math.exp(rng.gauss(0, 0.03)) * (1 + total * i / (n - 1)) for i in range(n)]


def _hump(height: float, share: float, flat: bool = False) -> Kind:
    """Slower by ``height`` over the middle ``share`` of the loop: rising and falling (or flat)."""

    def series(rng: random.Random, n: int) -> list[float]:
        start = round(n * (1 - share) / 2)
        end = n - start
        rise = [
            (height if flat else height * (1 - abs(2 * (i - start) / max(1, end - start - 1) - 1)))
            if start <= i < end
            else 0.0
            for i in range(n)
        ]
        return [math.exp(rng.gauss(0, 0.03)) * (1 + r) for r in rise]

    return series


def _step(at: float, height: float) -> Kind:
    return lambda rng, n: [math.exp(rng.gauss(0, 0.03)) * (1 + height if i >= int(at * n) else 1.0) for i in range(n)]


# Single-mode series, and a loop whose first few calls were slower (its median still speaks for it).
SINGLE_MODE: dict[str, Kind] = {
    "lognormal 3%": _lognormal(0.03),
    "lognormal 8%": _lognormal(0.08),
    "lognormal 12%": _lognormal(0.12),
    "uniform +-15%": lambda rng, n: [rng.uniform(0.85, 1.15) for _ in range(n)],
    "exponential tail 5%": lambda rng, n: [1 + rng.expovariate(20.0) for _ in range(n)],
    "t, 3 d.f., 3%": lambda rng, n: [
        1 + 0.03 * rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 2) / 3) for _ in range(n)
    ],
    "correlated 3% (lag-1 0.7)": _correlated,
    "timer ticks of 5%": lambda rng, n: [round(math.exp(rng.gauss(0, 0.03)) * 20) / 20 for _ in range(n)],
    "uniform +-10%": lambda rng, n: [rng.uniform(0.9, 1.1) for _ in range(n)],
    "warm-up left over: +20% fading": lambda rng, n: [
        math.exp(rng.gauss(0, 0.03)) * (1 + 0.2 * math.exp(-i / 3)) for i in range(n)
    ],
}
NOT_STEADY: dict[str, Kind] = {
    "two speeds 20% apart, 50/50, 3%": _two_speeds(0.20, 0.03, 0.5),
    "two speeds 20% apart, 30/70, 3%": _two_speeds(0.20, 0.03, 0.3),
    "two speeds 15% apart, 50/50, 3%": _two_speeds(0.15, 0.03, 0.5),
    "two speeds 20% apart, 50/50, 5%": _two_speeds(0.20, 0.05, 0.5),
    "drift +15% over the loop": _drift(0.15),
    "drift +12% over the loop": _drift(0.12),
    "step +14% halfway": _step(0.5, 0.14),
    "step +14% at three quarters": _step(0.75, 0.14),
    "hump +40%, rising and falling, 1/2": _hump(0.40, 0.5),
    "hump +20%, rising and falling, 1/2": _hump(0.20, 0.5),
    "hump +20%, flat, middle 1/3": _hump(0.20, 1 / 3, flat=True),
    "two speeds 15% apart, 60/40, 4%": _two_speeds(0.15, 0.04, 0.4),
    "two speeds 18% apart, 50/50, 4%": _two_speeds(0.18, 0.04, 0.5),
}


def rates(kind: Kind, n: int, series: int, rng: random.Random) -> tuple[float, collections.Counter[str]]:
    unstable = 0
    rules: collections.Counter[str] = collections.Counter()
    for _ in range(series):
        result = classify(kind(rng, n))
        unstable += result.verdict == "unstable"
        rules.update(c.name for c in result.reasons)
    return unstable / series, rules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=400, help="series per kind and size (default 400)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", default="10,30", help="samples per series, comma-separated (default 10,30)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    print(f"share of {args.series} simulated series called unstable (seed {args.seed}); rules that fired")
    for title, kinds in (
        ("single mode, or a few slow first calls: should read stable", SINGLE_MODE),
        ("not steady: should not decide", NOT_STEADY),
    ):
        print(f"\n{title}")
        print(f"  {'kind':34s}" + "".join(f"{f'n={n}':>9s}" for n in sizes) + "   rules (largest size)")
        for name, kind in kinds.items():
            figures = [rates(kind, n, args.series, rng) for n in sizes]
            fired = ", ".join(f"{rule} {count / args.series:.2f}" for rule, count in figures[-1][1].most_common())
            print(f"  {name:34s}" + "".join(f"{share:9.2f}" for share, _ in figures) + f"   {fired or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
