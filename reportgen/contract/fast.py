"""What the fast check of a line needs besides its Struct mirrors (contract/lines.py), with
no pydantic: the mirrors' base, the models' validators as checks of a decoded Struct, and the
duplicate-key check."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable

import msgspec
from msgspec import UNSET


class LineStruct(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=False, gc=False):
    """Base of every mirror: unknown keys are errors (the models forbid extras). A decoded
    line holds no reference cycle, so its Structs stay out of the cyclic collector's sight.
    An optional field the line left out is ``UNSET``; ``get`` reads one as a dict would."""

    def get(self, name: str, default: Any = None) -> Any:
        value = getattr(self, name, default)
        return default if value is UNSET else value

    def __getitem__(self, name: str) -> Any:
        value = getattr(self, name)
        if value is UNSET:
            raise KeyError(name)
        return value


def _either(first: str, second: str, what: str) -> Callable[[Any], None]:
    """A model's "exactly one of two optional fields is set" validator, on the mirror."""

    def check(struct: Any) -> None:
        if (struct.get(first) is None) == (struct.get(second) is None):
            raise ValueError(f"{what} has either a {first} or an {second}, not both or neither")

    return check


def _cases_once(plan: Any) -> None:
    """Plan._cases_once on the mirror: each case key names one cell (the careful path names the repeated one)."""
    cases = list(map(_CASE_OF, plan.matrix))
    if len(set(cases)) != len(cases):
        raise ValueError("the matrix lists a case twice")


_CASE_OF = attrgetter("case")
# The models' own validators (model name, validator name), each with the check its mirror
# runs after decoding (``__post_init__``); a model with any other validator has no mirror.
CHECKS: dict[tuple[str, str], Callable[[Any], None]] = {
    ("Fact", "_value_xor_reason"): _either("value", "unknown_reason", "a fact"),
    ("ProvenanceFile", "_sha_xor_reason"): _either("sha256", "unknown_reason", "a provenance file"),
    ("Plan", "_cases_once"): _cases_once,
}


# --- duplicate keys ----------------------------------------------------------------------------
#
# msgspec, like pydantic-core, reads a JSON object with a repeated key as "last one wins", so
# {"status": "mismatch", "status": "pass"} would validate as a pass. The fast path therefore
# compares two counts of colons that agree only when no key is repeated: in the raw bytes, and
# in the Struct encoded again (each field the line had, once: UNSET fields are not written).
# Outside strings, JSON has exactly one colon per key written; inside strings the raw bytes and
# the encoding hold the same colons, provided none is written as the escape \u003a (a line
# with the prefix \u003 takes the careful path, which names the repeated key). So the raw
# count exceeds the encoded one by the number of repeated keys.

KEY_MARK = b":"
encode = msgspec.json.encode


def same_keys(raw: bytes, decoded: Any) -> bool:
    """No key repeated in the line ``raw`` (free of the escape prefix u003) that decoded to ``decoded``."""
    return raw.count(KEY_MARK) == encode(decoded).count(KEY_MARK)
