"""One random change somewhere in an event's fields: what the fast-path property tests feed to
both the fast and the careful reader (tests/test_large_runs.py, test_fast_path_agrees.py,
test_plan_fast_path.py)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
EVERY_CHANGE = ("set", "alike", "drop", "extra", "repeat")


def alike(value: Any) -> st.SearchStrategy[Any]:
    """A value of the same JSON type: often still valid, near the limits."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(-2, 10**6)
    if isinstance(value, float):
        return st.floats(-1.0, 1e6, allow_nan=False)
    if isinstance(value, str):
        return st.sampled_from(
            ["", value, "pass", "measured", "unmeasured", "inference", "backward", "float64"]
        ) | st.text(max_size=6)
    return st.none() | st.just(value)


def mutate(draw: st.DrawFn, event: dict[str, Any], changes: tuple[str, ...] = EVERY_CHANGE) -> str:
    """``event`` as JSON text with one change at a field drawn at any depth: a value set, a value
    of the same type, a field dropped, an extra field, or (``repeat``) a key written twice, the
    first value drawn, which only the bytes can show."""
    parent: Any = event
    while True:
        keys = list(parent) if isinstance(parent, dict) else list(range(len(parent)))
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        child = parent[key]
        if isinstance(child, (dict, list)) and child and draw(st.booleans()):
            parent = child
            continue
        change = draw(st.sampled_from(changes))
        if change == "set":
            parent[key] = draw(JSON_VALUES)
        elif change == "alike":
            parent[key] = draw(alike(child))
        elif change == "drop":
            del parent[key]
        elif change == "extra" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(JSON_VALUES)
        elif change == "repeat" and isinstance(parent, dict):
            text = json.dumps(event)
            mark = json.dumps({key: child})[1:-1]
            repeated = json.dumps({key: draw(JSON_VALUES)})[1:-1]
            assert mark in text
            return text.replace(mark, f"{repeated}, {mark}", 1)
        break
    return json.dumps(event)
