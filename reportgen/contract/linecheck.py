"""The fast check of one log line: per-cell event models mirrored as msgspec Structs.

A long log is almost all per-cell results. msgspec parses and validates a line into a Struct
in a fraction of the time pydantic takes, so those kinds are checked against Struct mirrors
generated here from the models in ``events.py``. The models stay the one definition of the
contract, and the careful path that locates errors: a mirror carries the same field types,
constraints, required fields and configuration, and building one fails for a model whose
rules live in validator code (or use a constraint this module does not translate), which a
mirror could not carry.

A mirror accepts a subset of what its model accepts, with the same values: the JSON types as
the model declares them (no lax coercion, such as "5" for an integer: such a line goes to
the careful path, which decides). An optional field left out of the line stays ``UNSET`` in
the Struct, so a Struct's fields are exactly the line's keys (see the duplicate-key check
below); ``get`` reads one with a default, as a dict would.
"""

from __future__ import annotations

import types
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import Annotated, Any, Callable, ClassVar, Literal, Union, get_args, get_origin

import annotated_types
import msgspec
from msgspec import UNSET, UnsetType
from msgspec.structs import force_setattr
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from reportgen.contract.events import EVENT_MODELS, Fact, Plan, PlannedCell, ProvenanceFile

MIRRORED_CONFIG = ("extra", "allow_inf_nan", "strict", "frozen")


class LineStruct(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=False, gc=False):
    """Base of every mirror: unknown keys are errors (the models forbid extras). A decoded
    line holds no reference cycle, so its Structs stay out of the cyclic collector's sight."""

    def get(self, name: str, default: Any = None) -> Any:
        value = getattr(self, name, default)
        return default if value is UNSET else value

    def __getitem__(self, name: str) -> Any:
        value = getattr(self, name)
        if value is UNSET:
            raise KeyError(name)
        return value


def mirror(model: type[BaseModel], made: dict[Any, Any] | None = None, tag: tuple[str, str] | None = None, override: dict[str, Any] | None = None, carried: dict[str, Callable[[Any], None]] | None = None, frozen: bool = False) -> Any:
    """A Struct that accepts (a subset of) the JSON objects ``model`` accepts, with the same values.

    ``tag`` is (field, value) when the Struct is one member of a discriminated union: msgspec
    reads that field as the Struct's tag, and it is kept as a class attribute. ``carried``
    names the model's own validators (its ``mode="after"`` model validators, by name) with a
    check of the decoded Struct that raises ValueError where the validator would: the Struct
    runs them after decoding (``__post_init__``); any other validator code refuses the mirror.
    """
    made = {} if made is None else made
    carried = carried or CARRIED.get(model, {})
    key = (model, tag, tuple(override or ()), tuple(carried))
    if key in made:
        return made[key]
    decorators = model.__pydantic_decorators__
    after = {name: d for name, d in decorators.model_validators.items() if d.info.mode == "after"}
    if decorators.field_validators or decorators.validators or set(decorators.model_validators) != set(after) or set(after) != set(carried):
        raise TypeError(f"{model.__name__} has validator code; a mirror cannot carry it")
    config = model.model_config
    if config.get("extra") != "forbid" or config.get("allow_inf_nan", True) or config.get("strict"):
        raise TypeError(f"{model.__name__}: a mirror carries extra='forbid', allow_inf_nan=False, not strict mode")
    required: list[tuple[str, Any]] = []
    optional: list[tuple[str, Any, Any]] = []
    namespace: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if info.alias is not None and info.alias != name:
            raise TypeError(f"{model.__name__}.{name}: aliases are not mirrored")
        if tag is not None and name == tag[0]:
            namespace[name] = tag[1]
            namespace.setdefault("__annotations__", {})[name] = ClassVar[str]
            continue
        if override and name in override:
            annotation = override[name]
        else:
            annotation = _mirror_field(info, made, f"{model.__name__}.{name}")
        if info.is_required():
            required.append((name, annotation))
        else:
            optional.append((name, Union[annotation, UnsetType], UNSET))
    if carried:
        checks = tuple(carried.values())

        def __post_init__(self: Any) -> None:
            for check in checks:
                check(self)

        namespace["__post_init__"] = __post_init__
    options: dict[str, Any] = {}
    if tag is not None:
        options = {"tag_field": tag[0], "tag": tag[1]}
    name = f"{model.__name__}Line" + (f"_{tag[1]}" if tag else "")
    struct = msgspec.defstruct(name, [*required, *optional], bases=(LineStruct,), namespace=namespace, frozen=frozen, **options)
    made[key] = struct
    return struct


def _mirror_field(info: FieldInfo, made: dict[Any, Any], where: str) -> Any:
    annotation = _mirror_type(info.annotation, made, where)
    if info.discriminator is not None:
        annotation = _tagged(info.annotation, info.discriminator, made, where)
    meta = _meta(info.metadata, where)
    return _constrain(annotation, meta, where) if meta is not None else annotation


def _constrain(annotation: Any, meta: msgspec.Meta, where: str) -> Any:
    """Constraints of an optional field hold for its value, as pydantic applies them."""
    if get_origin(annotation) in (Union, types.UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(members) != 1:
            raise TypeError(f"{where}: constraints on a union of several types are not mirrored")
        return Union[Annotated[members[0], meta], None]
    return Annotated[annotation, meta]


# pydantic's bound metadata and the msgspec Meta argument (and attribute) each one becomes.
_BOUNDS: dict[type, str] = {
    annotated_types.Ge: "ge",
    annotated_types.Le: "le",
    annotated_types.Gt: "gt",
    annotated_types.Lt: "lt",
    annotated_types.MinLen: "min_length",
    annotated_types.MaxLen: "max_length",
}


def _meta(metadata: list[Any], where: str) -> msgspec.Meta | None:
    """msgspec constraints for pydantic's: bounds, lengths, a pattern anchored as Rust's regex anchors it."""
    found: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, FieldInfo):
            inner = _meta(item.metadata, where)
            if inner is not None:
                found.update({k: getattr(inner, k) for k in (*_BOUNDS.values(), "pattern") if getattr(inner, k) is not None})
        elif isinstance(item, tuple(_BOUNDS)):
            name = next(n for kind, n in _BOUNDS.items() if isinstance(item, kind))
            found[name] = getattr(item, name)
        elif type(item).__name__ == "_PydanticGeneralMetadata" and set(vars(item)) == {"pattern"}:
            found["pattern"] = _python_pattern(item.pattern, where)
        else:
            raise TypeError(f"{where}: no mirror for the constraint {item!r}")
    return msgspec.Meta(**found) if found else None


def _python_pattern(pattern: str, where: str) -> str:
    """Python's ``$`` also matches before a final newline, Rust's (pydantic's) does not: use ``\\Z``."""
    if not (pattern.startswith("^") and pattern.endswith("$")) or pattern.endswith("\\$"):
        raise TypeError(f"{where}: only patterns anchored with ^...$ are mirrored, not {pattern!r}")
    return pattern[:-1] + r"\Z"


def _mirror_type(annotation: Any, made: dict[Any, Any], where: str) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return mirror(annotation, made)
    if annotation in (str, int, float, bool, type(None), None):
        return annotation
    origin = get_origin(annotation)
    if origin is Literal:
        return annotation
    if origin is None:
        raise TypeError(f"{where}: no mirror for the type {annotation!r}")
    args = get_args(annotation)
    if origin is Annotated:
        meta = _meta(list(annotation.__metadata__), where)
        inner = _mirror_type(args[0], made, where)
        return Annotated[inner, meta] if meta is not None else inner
    inner = tuple(_mirror_type(arg, made, where) for arg in args)
    if origin in (Union, types.UnionType):
        return Union[inner]
    if origin is list:
        return list[inner[0]]  # type: ignore[valid-type]
    if origin is dict:
        if args[0] is not str:
            raise TypeError(f"{where}: only str keys are mirrored")
        return dict[str, inner[1]]  # type: ignore[valid-type]
    raise TypeError(f"{where}: no mirror for the annotation {annotation!r}")


def _tagged(annotation: Any, field: str, made: dict[Any, Any], where: str) -> Any:
    """A discriminated union: one tagged Struct per value of each member's Literal tag."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    optional = False
    members = []
    for arg in get_args(annotation):
        if arg is type(None):
            optional = True
            continue
        if not (isinstance(arg, type) and issubclass(arg, BaseModel)):
            raise TypeError(f"{where}: a discriminated union of non-models")
        literal = arg.model_fields[field].annotation
        if get_origin(literal) is not Literal:
            raise TypeError(f"{where}: the discriminator {field} is not a Literal")
        members += [mirror(arg, made, (field, value)) for value in get_args(literal)]
    union: Any = Union[tuple(members)]
    return Union[union, None] if optional else union


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
# The models' own validators, each with the check its mirror runs after decoding.
CARRIED: dict[type[BaseModel], dict[str, Callable[[Any], None]]] = {
    Fact: {"_value_xor_reason": _either("value", "unknown_reason", "a fact")},
    ProvenanceFile: {"_sha_xor_reason": _either("sha256", "unknown_reason", "a provenance file")},
    Plan: {"_cases_once": _cases_once},
}


def line_structs(versions: frozenset[str] | None = None) -> dict[str, Any]:
    """The mirror of every event kind, tagged by ``kind``; with ``versions``, a
    ``schema_version`` outside them is refused (such a line takes the careful path)."""
    made: dict[Any, Any] = {}
    override = {"schema_version": Literal[tuple(sorted(versions))]} if versions else None  # type: ignore[valid-type]
    mirror(PlannedCell, made, frozen=True)  # the run keeps the matrix's cells: frozen, as the model is
    return {kind: mirror(model, made, ("kind", kind), override) for kind, model in EVENT_MODELS.items()}


def line_decoder(versions: frozenset[str] | None = None) -> Callable[[Any], Any]:
    """Decode and validate one log line into the Struct of its kind; raises
    msgspec.ValidationError, msgspec.DecodeError or UnicodeDecodeError for anything else."""
    structs = line_structs(versions)
    return msgspec.json.Decoder(Union[tuple(structs.values())]).decode  # type: ignore[arg-type,no-any-return]


def fill_defaults(matrix: list[Any]) -> list[Any]:
    """A plan mirror's matrix made into the run's planned cells, in place: each optional field
    a cell's line left out (UNSET) takes the model's default, so the cells read as the models
    do (``repeat_of`` None). Done after the duplicate-key check, which needs the line's keys
    exactly; one decode serves both (a long plan's matrix holds tens of thousands of cells)."""
    for name, default in _PLANNED_DEFAULTS.items():
        for cell in compress(matrix, map(is_, map(attrgetter(name), matrix), repeat(UNSET))):
            force_setattr(cell, name, default)  # the cells are frozen; none is shared yet
    return matrix


def _plain_defaults(model: type[BaseModel]) -> dict[str, Any]:
    optional = {name: info for name, info in model.model_fields.items() if not info.is_required()}
    if any(info.default_factory is not None or isinstance(info.default, (list, dict, set)) for info in optional.values()):
        raise TypeError(f"{model.__name__}: planned cells take plain defaults only (one object shared by every cell)")
    return {name: info.default for name, info in optional.items()}


_PLANNED_DEFAULTS = _plain_defaults(PlannedCell)


def to_plain(value: Any) -> Any:
    """A Struct as the dict the line held (UNSET fields left out), for comparisons."""
    return msgspec.to_builtins(value)


# --- duplicate keys ----------------------------------------------------------------------------
#
# msgspec, like pydantic-core, reads a JSON object with a repeated key as "last one wins", so
# {"status": "mismatch", "status": "pass"} would validate as a pass. The fast path therefore
# compares two counts of colons that agree only when no key is repeated: in the raw bytes, and
# in the Structs encoded again (each field the line had, once: UNSET fields are not written).
# Outside strings, JSON has exactly one colon per key written; inside strings the raw bytes and
# the encoding hold the same colons, provided none is written as the escape \u003a (bytes
# with the prefix \u003 take the careful path, which names the repeated key). So the raw
# count exceeds the encoded one by the number of repeated keys.

KEY_MARK = b":"
encode = msgspec.json.encode


def same_keys(raw: bytes, decoded: Any) -> bool:
    """No key repeated in ``raw`` (one line, or a block, free of the escape prefix u003) that decoded to ``decoded``."""
    return raw.count(KEY_MARK) == encode(decoded).count(KEY_MARK)
