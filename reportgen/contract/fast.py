"""The fast check of a line: each event Struct (contract/events.py) mirrored so that a field the
line left out reads ``UNSET``, and the duplicate-key check that needs it.

A mirror is derived from its definition when this module loads: a subclass of the definition
Struct (so it is one, to isinstance and to a type checker) whose optional fields default to
``UNSET`` and whose nested Structs are mirrors too. It keeps every constraint, the
configuration (unknown fields forbidden, frozen, the tag) and the ``__post_init__`` checks,
which read UNSET as absent. Decoded into a mirror, a line's Structs hold exactly the keys the
line wrote, which the duplicate-key check below relies on; ``get`` reads a field with a
default, as a dict would.
"""

from __future__ import annotations

from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
from msgspec import UNSET, UnsetType
from msgspec.structs import fields

from reportgen.contract.events import EVENT_MODELS, PlannedCell


def mirror(struct: Any, made: dict[Any, Any]) -> Any:
    """The UNSET mirror of a definition Struct (``made`` holds those derived already)."""
    if struct in made:
        return made[struct]
    redefined: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for info in fields(struct):
        annotation = _mirror_type(info.type, made)
        if not info.required:
            redefined.append((info.name, Union[annotation, UnsetType], UNSET))
        elif annotation is not info.type:
            redefined.append((info.name, annotation))
    made[struct] = msgspec.defstruct(
        f"{struct.__name__}Line", redefined, bases=(struct,), kw_only=True, module=__name__
    )
    return made[struct]


def _mirror_type(annotation: Any, made: dict[Any, Any]) -> Any:
    """A field's type with each Struct in it (in a list, dict, union or Annotated) its mirror."""
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return mirror(annotation, made)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is None or not args:
        return annotation
    if origin is Annotated:
        inner = _mirror_type(args[0], made)
        return annotation if inner is args[0] else Annotated[(inner, *annotation.__metadata__)]
    mirrored = tuple(_mirror_type(arg, made) for arg in args)
    if mirrored == args:
        return annotation
    return Union[mirrored] if origin in (Union, UnionType) else origin[mirrored]  # list[...] or dict[...]


_MADE: dict[Any, Any] = {}
# Every event kind's mirror, tagged by ``kind`` as its definition is.
KINDS: dict[str, Any] = {kind: mirror(struct, _MADE) for kind, struct in EVENT_MODELS.items()}
# A planned cell's optional fields and their defaults (validation.fill_defaults sets them on
# the mirror's cells, so a run's planned cells read as the definition's). Plain values only:
# one object is shared by every cell.
PLANNED_DEFAULTS: dict[str, Any] = {info.name: info.default for info in fields(PlannedCell) if not info.required}
assert all(info.default_factory is msgspec.NODEFAULT for info in fields(PlannedCell)), "plain defaults only"


# --- duplicate keys ----------------------------------------------------------------------------
#
# msgspec reads a JSON object with a repeated key as "last one wins", so
# {"status": "mismatch", "status": "pass"} would validate as a pass. The fast path therefore
# compares two counts of colons that agree only when no key is repeated: in the raw bytes, and
# in the mirror Struct encoded again (each field the line had, once: UNSET fields are not
# written, and a field the line wrote is written even when it holds its default).
# Outside strings, JSON has exactly one colon per key written; inside strings the raw bytes and
# the encoding hold the same colons, provided none is written as the escape \u003a (a line
# with the prefix \u003 is not counted: it takes the careful path, which names the repeated
# key). So the raw count exceeds the encoded one by the number of repeated keys.

KEY_MARK = b":"
ESCAPE = b"\\"
COUNT_UNSAFE = b"\\u003"
_ENCODE_INTO = msgspec.json.Encoder().encode_into


def same_keys(raw: bytes, decoded: Any, buffer: bytearray | None = None) -> bool:
    """No key repeated in the line ``raw`` that decoded to ``decoded``: False when one is, and
    for a line holding the escape prefix u003, whose count cannot tell. ``buffer``: where the
    encoding is written (a reader passes its own, used line after line: a long log's lines are
    then not each encoded into a new bytes object)."""
    # Most lines hold no backslash at all: one memchr for it, before a search for the prefix.
    if raw.find(ESCAPE) >= 0 and raw.find(COUNT_UNSAFE) >= 0:
        return False
    if buffer is None:
        buffer = bytearray()
    _ENCODE_INTO(decoded, buffer)  # the buffer holds exactly the encoding after
    return raw.count(KEY_MARK) == buffer.count(KEY_MARK)
