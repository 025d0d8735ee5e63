"""Mutated plans: either a clean one-line plan error, or a plan event that reportgen accepts.

The collector validates its plan against the schema before it runs anything, and builds the
plan event only from validated values; so no plan it accepts can make it write a log that
`reportgen validate` rejects (issue 19, item 5).
"""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collector.eventlog import SCHEMA_VERSION
from collector.plan import PlanError, load_plan
from reportgen.contract.validation import read_log
from tests.conftest import REPO
from tests.logbuilder import base_events, finish

PLANS = sorted((REPO / "collector" / "workloads").glob("*.toml")) + sorted((REPO / "tests" / "plans").glob("*.toml"))
BASES = [(p, tomllib.loads(p.read_text(encoding="utf-8"))) for p in PLANS]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "float32",
            "bfloat16",
            "int64",
            "contiguous",
            "noncontiguous",
            "compiled",
            "eager",
            "reject",
            "UNDECIDED: x",
            ">=",
            "default",
            "slice",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
names = st.one_of(
    st.text(min_size=1, max_size=10),
    st.sampled_from(
        [
            "dynamic",
            "mode",
            "metric",
            "buckets",
            "above_largest",
            "warm_repetitions",
            "dtype",
            "target",
            "proposed",
            "task",
            "how",
            "value_range",
            "shapes",
            "compile",
            "inputs",
            "padding",
        ]
    ),
)


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += _paths(value, prefix + (i,))
    return out


def _parent(data: Any, path: tuple) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


def _same_type(value: Any) -> st.SearchStrategy[Any]:
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(min_value=-(2**40), max_value=2**40) | st.integers(min_value=0, max_value=600)
    if isinstance(value, float):
        return st.floats(allow_nan=True, allow_infinity=True) | st.floats(min_value=0, max_value=1)
    if isinstance(value, str):
        return st.text(max_size=12) | st.sampled_from(
            [
                "float32",
                "bfloat16",
                "float16",
                "float64",
                "int64",
                "bool",
                "cpu",
                "neuron",
                "reject x",
                "UNDECIDED: x",
                "<=",
                "default",
                "max-autotune",
                "transpose",
                "noncontiguous",
            ]
        )
    if isinstance(value, list):
        return st.lists(st.sampled_from(value), max_size=len(value) + 1) if value else st.just([])
    return st.just(value)


@st.composite
def mutated_plans(draw: st.DrawFn) -> dict[str, Any]:
    _path, base = draw(st.sampled_from(BASES))
    plan = copy.deepcopy(base)
    plan["workload"]["module"] = str(REPO / "collector" / "workloads" / "tiny_encoder.py")
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = [p for p in _paths(plan) if p]
        if not paths:  # every key deleted: nothing left to change
            break
        path = draw(st.sampled_from(paths))
        parent = _parent(plan, path)
        action = draw(st.sampled_from(["same", "same", "same", "replace", "delete", "add", "rename"]))
        if action == "same":  # a value of the same type, so more mutants pass the schema
            parent[path[-1]] = draw(_same_type(parent[path[-1]]))
        elif action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(names)] = draw(values)
        elif action == "rename" and isinstance(parent, dict):
            parent[draw(names)] = parent.pop(path[-1])
    return plan


def _toml(plan: dict[str, Any]) -> str | None:
    def clean(value: Any) -> Any:  # TOML has no null
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [clean(v) for v in value if v is not None]
        return value

    try:
        return tomli_w.dumps(clean(plan))
    except (TypeError, ValueError):
        return None


def _log_with_plan(plan_fields: dict[str, Any]) -> list[dict[str, Any]]:
    events = base_events()[:2]
    events.append({"kind": "plan", **plan_fields})
    events = finish(events)
    return [
        {"schema_version": SCHEMA_VERSION, "seq": i, "time": "2026-01-01T00:00:00Z", **e} for i, e in enumerate(events)
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_plans())
def test_mutated_plan_is_a_plan_error_or_a_valid_plan_event(tmp_path_factory: Any, plan: dict[str, Any]) -> None:
    text = _toml(plan)
    if text is None:
        return
    folder = tmp_path_factory.mktemp("plan")
    path = folder / "plan.toml"
    path.write_text(text, encoding="utf-8")
    try:
        loaded = load_plan(path)
    except PlanError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(str(path)), message
        return
    fields = loaded.event_fields(loaded.cells)
    fields = {k: v for k, v in fields.items() if v is not None}
    fields.update(model_revision="fuzz", target="cpu")
    if loaded.compare["outputs"]:  # parameter rules are completed from the model by the run
        fields["compare"] = {"outputs": loaded.compare["outputs"], "params": []}
    if loaded.training:
        fields["training"] = {**loaded.training, "optimizer": "AdamW"}
    log = folder / "events.jsonl"
    log.write_text("".join(json.dumps(e, allow_nan=False) + "\n" for e in _log_with_plan(fields)), encoding="utf-8")
    reading = read_log(log)
    assert reading.valid, [p.format() for p in reading.problems] + [text]


def test_the_unmutated_plans_give_valid_plan_events(tmp_path: Path) -> None:
    for path in PLANS:
        loaded = load_plan(path)
        fields = {k: v for k, v in loaded.event_fields(loaded.cells).items() if v is not None}
        fields.update(model_revision="r", target="cpu")
        if loaded.training:
            fields["training"] = {**loaded.training, "optimizer": "AdamW"}
        log = tmp_path / f"{path.stem}.jsonl"
        log.write_text("".join(json.dumps(e) + "\n" for e in _log_with_plan(fields)), encoding="utf-8")
        reading = read_log(log)
        assert reading.valid, [p.format() for p in reading.problems]
