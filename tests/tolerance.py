"""Comparing committed outputs whose figures come from a math library on the running CPU.

numpy's log and exp (and libm under them) may differ in the last bit between CPUs, so a
committed file is compared with a fresh one number by number within a stated tolerance, and
everything that is not a number must be equal character for character.
"""

from __future__ import annotations

import math
import re
from typing import Any

# Relative tolerance for a figure written at full precision: far above a few ulps (2e-16 each),
# far below any difference a reader or a verdict could notice.
REL_TOL = 1e-9

_NUMBER = re.compile(r"-?(?<![\w.])\d+(?:\.(\d+))?(?:[eE]([-+]?\d+))?(?![\w])")


def _last_digit(token: re.Match[str]) -> float | None:
    """One unit of the last digit written, for a number with a decimal point; None for an integer."""
    decimals, exponent = token.group(1), token.group(2)
    if decimals is None and exponent is None:
        return None
    return 10.0 ** (int(exponent or 0) - len(decimals or ""))


def numbers_close(committed: float, fresh: float, unit: float = 0.0) -> bool:
    """Within REL_TOL, or within one unit of the last digit written (a rounding that flipped)."""
    return math.isclose(committed, fresh, rel_tol=REL_TOL, abs_tol=unit * (1 + REL_TOL))


def text_difference(committed: str, fresh: str) -> str | None:
    """None when the texts are equal up to figures within tolerance; else the first difference.

    Integers (counts, ids, line numbers) must be equal; a number with a decimal point or an
    exponent may differ by REL_TOL or by one unit of its last written digit.
    """
    a_tokens, b_tokens = list(_NUMBER.finditer(committed)), list(_NUMBER.finditer(fresh))
    a_words, b_words = _NUMBER.split(committed)[::3], _NUMBER.split(fresh)[::3]
    if a_words != b_words or len(a_tokens) != len(b_tokens):
        first = next((i for i, (x, y) in enumerate(zip(committed, fresh)) if x != y), min(len(committed), len(fresh)))
        return f"text differs at character {first}: {committed[first - 40 : first + 40]!r} vs {fresh[first - 40 : first + 40]!r}"
    for a, b in zip(a_tokens, b_tokens):
        unit_a, unit_b = _last_digit(a), _last_digit(b)
        if unit_a is None and unit_b is None:
            if a.group(0) != b.group(0):
                return f"integer {a.group(0)} vs {b.group(0)} at character {a.start()}"
            continue
        if not numbers_close(float(a.group(0)), float(b.group(0)), max(unit_a or 0.0, unit_b or 0.0)):
            return f"figure {a.group(0)} vs {b.group(0)} at character {a.start()} (beyond tolerance)"
    return None


def data_difference(committed: Any, fresh: Any, where: str = "$") -> str | None:
    """None when two JSON values are equal up to floats within REL_TOL; else the first difference."""
    if isinstance(committed, float) or isinstance(fresh, float):
        both_numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (committed, fresh))
        if both_numbers and numbers_close(float(committed), float(fresh)):
            return None
        return f"{where}: {committed!r} vs {fresh!r}"
    if isinstance(committed, dict) and isinstance(fresh, dict):
        if list(committed) != list(fresh):
            return f"{where}: keys {list(committed)} vs {list(fresh)}"
        for key in committed:
            if (found := data_difference(committed[key], fresh[key], f"{where}.{key}")) is not None:
                return found
        return None
    if isinstance(committed, list) and isinstance(fresh, list):
        if len(committed) != len(fresh):
            return f"{where}: {len(committed)} items vs {len(fresh)}"
        for i, (x, y) in enumerate(zip(committed, fresh)):
            if (found := data_difference(x, y, f"{where}[{i}]")) is not None:
                return found
        return None
    return None if committed == fresh else f"{where}: {committed!r} vs {fresh!r}"
