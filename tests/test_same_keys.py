"""fast.same_keys on its own: the duplicate-key count, and the lines whose count cannot tell."""

from __future__ import annotations

import msgspec
import pytest

from reportgen.contract.fast import same_keys

CASES = {
    # line: no key repeated (as far as the count can tell)
    b'{"a": 1, "b": {"c": "d"}}': True,
    b'{"a": "x: y", "b": ":"}': True,  # colons inside strings: the same in the line and the encoding
    b'{"a": 1, "a": 2}': False,
    b'{"a": {"b": 1, "b": 1}}': False,  # at any depth
    # Escapes other than the colon's: the line is counted (a backslash alone does not decide).
    b'{"a": "q\\"\\\\ \\u00e9 \\n"}': True,
    b'{"a": "q\\"\\\\ \\u00e9 \\n", "a": "q"}': False,
    # A colon written as an escape: one more colon in the encoding, which a repeated key would
    # cancel; such a line is never called free of repeats (the careful path names the key).
    b'{"a": "x\\u003ay", "a": "x\\u003ay"}': False,
    b'{"a": "x\\u003Ay", "a": "x\\u003Ay"}': False,
    b'{"a": "x\\u003ay"}': False,
}


@pytest.mark.parametrize("line", list(CASES), ids=[line.decode() for line in CASES])
def test_same_keys(line: bytes) -> None:
    assert same_keys(line, msgspec.json.decode(line)) is CASES[line]


def test_a_buffer_used_line_after_line_counts_only_the_latest_encoding() -> None:
    # A reader passes one buffer for every line: what a longer line left in it must not count.
    buffer = bytearray()
    long_line = b'{"a": {"b": 1, "c": 2, "d": 3, "e": 4, "f": 5, "g": 6}}'
    assert same_keys(long_line, msgspec.json.decode(long_line), buffer)
    for line, expected in CASES.items():
        assert same_keys(line, msgspec.json.decode(line), buffer) is expected
        assert same_keys(long_line, msgspec.json.decode(long_line), buffer)
