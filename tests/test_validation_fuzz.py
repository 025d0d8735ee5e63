"""Property-based: no mutation of a valid log makes `reportgen validate` raise."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.cli import main
from reportgen.contract.validation import read_log
from tests.logbuilder import complete_log, dumps

BASE = dumps(complete_log()).encode()
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def byte_mutations(draw: st.DrawFn) -> bytes:
    data = bytearray(BASE)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(max_size=16))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 64))]
    return bytes(data)


@st.composite
def json_mutations(draw: st.DrawFn) -> bytes:
    events: list[Any] = complete_log()
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(events) - 1))
        event = events[index]
        op = draw(st.sampled_from(["set", "drop", "replace", "swap"]))
        if op == "set" and isinstance(event, dict):
            key = draw(st.sampled_from(sorted(event) + ["extra"]))
            event[key] = draw(JSON_VALUES)
        elif op == "drop" and isinstance(event, dict) and event:
            event.pop(draw(st.sampled_from(sorted(event))))
        elif op == "replace":
            events[index] = draw(JSON_VALUES)
        elif op == "swap":
            other = draw(st.integers(0, len(events) - 1))
            events[index], events[other] = events[other], events[index]
    return "".join(json.dumps(e) + "\n" for e in events).encode()


def _check_never_raises(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        path.write_bytes(data)
        reading = read_log(path)
        for problem in reading.problems:
            assert problem.line >= 0 and problem.message
        result = CliRunner().invoke(main, ["validate", str(path)])
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        assert result.exit_code in (0, 1)
        assert "Traceback" not in result.output


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(byte_mutations())
def test_byte_mutations_never_raise(data: bytes) -> None:
    _check_never_raises(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_mutations())
def test_json_mutations_never_raise(data: bytes) -> None:
    _check_never_raises(data)
