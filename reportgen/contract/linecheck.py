"""The fast check of one log line: every event model mirrored as a msgspec Struct.

msgspec parses and validates a line into a Struct in a fraction of the time pydantic takes
(and without importing pydantic), so every line is first checked against the Struct mirror of
its kind, generated here from the models in ``events.py`` and written out as the Python of
``contract/lines.py`` (``python -m reportgen.contract.schema_doc``; a test fails when it is
stale). The models stay the one definition of the contract, and the careful path that
locates errors: a mirror carries the same field types,
constraints, required fields and configuration, and building one fails for a model whose
rules live in validator code (or use a constraint this module does not translate), which a
mirror could not carry.

A mirror accepts a subset of what its model accepts, with the same values: the JSON types as
the model declares them (no lax coercion, such as "5" for an integer: such a line goes to
the careful path, which decides). An optional field left out of the line stays ``UNSET`` in
the Struct, so a Struct's fields are exactly the line's keys (see the duplicate-key check
in fast.py); ``get`` reads one with a default, as a dict would.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Callable, ClassVar, Literal, Union, get_args, get_origin

import annotated_types
import msgspec
from msgspec import UNSET, UnsetType
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from reportgen.contract.events import EVENT_MODELS, Fact, Plan, PlannedCell, ProvenanceFile
from collector.descriptors import backend_families
from reportgen.contract.fast import CHECKS, LineStruct


def mirror(
    model: type[BaseModel], made: dict[Any, Any] | None = None, tag: tuple[str, str] | None = None, frozen: bool = False
) -> Any:
    """A Struct that accepts (a subset of) the JSON objects ``model`` accepts, with the same values.

    ``tag`` is (field, value) when the Struct is one member of a discriminated union: msgspec
    reads that field as the Struct's tag, and it is kept as a class attribute. ``CARRIED``
    names the model's own validators (its ``mode="after"`` model validators, by name) with a
    check of the decoded Struct that raises ValueError where the validator would: the Struct
    runs them after decoding (``__post_init__``); any other validator code refuses the mirror.
    """
    made = {} if made is None else made
    carried = CARRIED.get(model, {})
    key = (model, tag)
    if key in made:
        return made[key]
    decorators = model.__pydantic_decorators__
    after = {name: d for name, d in decorators.model_validators.items() if d.info.mode == "after"}
    if (
        decorators.field_validators
        or decorators.validators
        or set(decorators.model_validators) != set(after)
        or set(after) != set(carried)
    ):
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
    struct = msgspec.defstruct(
        name, [*required, *optional], bases=(LineStruct,), namespace=namespace, frozen=frozen, **options
    )
    made[key] = struct
    return struct


def _mirror_field(info: FieldInfo, made: dict[Any, Any], where: str) -> Any:
    annotation = _mirror_type(info.annotation, made, where)
    if info.discriminator is not None:
        annotation = _tagged(info.annotation, str(info.discriminator), made, where)
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
                found.update(
                    {k: getattr(inner, k) for k in (*_BOUNDS.values(), "pattern") if getattr(inner, k) is not None}
                )
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


# The models whose validators have a check of the mirror (fast.CHECKS).
CARRIED: dict[type[BaseModel], dict[str, Callable[[Any], None]]] = {
    model: {name: check for (owner, name), check in CHECKS.items() if owner == model.__name__}
    for model in (Fact, ProvenanceFile, Plan)
}


def line_structs() -> dict[str, Any]:
    """The mirror of every event kind, tagged by ``kind``."""
    made: dict[Any, Any] = {}
    mirror(PlannedCell, made, frozen=True)  # the run keeps the matrix's cells: frozen, as the model is
    return {kind: mirror(model, made, ("kind", kind)) for kind, model in EVENT_MODELS.items()}


# --- contract/lines.py -------------------------------------------------------------------------

LINES_HEADER = '''"""The Struct mirror of every event model (contract/events.py), for the fast check of a line.

Generated by ``python -m reportgen.contract.schema_doc`` from the models (contract/linecheck.py
says how); do not edit. Imports no pydantic.
"""

# ruff: noqa: E501
from typing import Annotated, ClassVar, Literal, Union

from msgspec import UNSET, Meta, UnsetType

from collector.descriptors import backend_families
from reportgen.contract.fast import CHECKS, LineStruct

# The backend families come from the descriptors when this module loads, plugin folders
# included (MIGRATION_RECORD_BACKENDS), as in contract/events.py.
BackendFamily = Literal[backend_families()]  # type: ignore[valid-type]
'''
_META_KEYS = ("ge", "le", "gt", "lt", "min_length", "max_length", "pattern")


def _source(annotation: Any) -> str:
    """A mirror field's type written as Python."""
    if annotation is type(None) or annotation is None:
        return "None"
    if annotation is UnsetType:
        return "UnsetType"
    if isinstance(annotation, type):
        return annotation.__name__
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        meta = annotation.__metadata__[0]
        given = ", ".join(f"{key}={getattr(meta, key)!r}" for key in _META_KEYS if getattr(meta, key) is not None)
        return f"Annotated[{_source(args[0])}, Meta({given})]"
    if origin is Literal:
        if args == backend_families():
            return "BackendFamily"
        return f"Literal[{', '.join(map(repr, args))}]"
    if origin in (Union, types.UnionType):
        return f"Union[{', '.join(map(_source, args))}]"
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(map(_source, args))}]"
    raise TypeError(f"no source for {annotation!r}")


def _nested(annotation: Any) -> list[Any]:
    """The Structs a field's type names, at any depth."""
    if isinstance(annotation, type) and issubclass(annotation, LineStruct):
        return [annotation]
    return [found for arg in get_args(annotation) for found in _nested(arg)]


def _class_source(struct: Any) -> list[str]:
    config = struct.__struct_config__
    options = "".join(
        [
            ", frozen=True" if config.frozen else "",
            f", tag_field={config.tag_field!r}, tag={config.tag!r}" if config.tag_field else "",
        ]
    )
    # mypy reads Struct subclasses as dataclasses: a frozen one under the non-frozen base is fine to msgspec.
    out = [f"class {struct.__name__}(LineStruct{options}):" + ("  # type: ignore[misc]" if config.frozen else "")]
    if config.tag_field:
        out.append(f"    {config.tag_field}: ClassVar[str] = {config.tag!r}")
    for field in msgspec.structs.fields(struct):
        default = "" if field.required else f" = {'UNSET' if field.default is UNSET else repr(field.default)}"
        written = _source(field.type)
        # The families are read from the descriptors at load time: a type mypy cannot check.
        out.append(
            f"    {field.name}: {written}{default}"
            + ("  # type: ignore[valid-type]" if "BackendFamily" in written else "")
        )
    model = struct.__name__.removesuffix("Line").split("Line_")[0]
    checks = [key for key in CHECKS if key[0] == model]
    if checks:
        out += ["", "    def __post_init__(self) -> None:", *(f"        CHECKS[{key!r}](self)" for key in checks)]
    return out


def render_lines() -> str:
    """contract/lines.py: every mirror as a class (each after the Structs it names), the kinds
    they are tagged by, and a planned cell's defaults."""
    written: list[Any] = []

    def visit(struct: Any) -> None:
        if struct in written:
            return
        for field in msgspec.structs.fields(struct):
            for inner in _nested(field.type):
                visit(inner)
        written.append(struct)

    structs = line_structs()
    for struct in structs.values():
        visit(struct)
    parts = [LINES_HEADER]
    for struct in written:
        parts.append("\n\n" + "\n".join(_class_source(struct)) + "\n")
    kinds = "".join(f"    {kind!r}: {struct.__name__},\n" for kind, struct in structs.items())
    parts.append(f"\n\nKINDS = {{\n{kinds}}}\n")
    parts.append(
        f"# A planned cell's optional fields and the model's defaults (fill_defaults).\nPLANNED_DEFAULTS = {_plain_defaults(PlannedCell)!r}\n"
    )
    return "".join(parts)


def _plain_defaults(model: type[BaseModel]) -> dict[str, Any]:
    optional = {name: info for name, info in model.model_fields.items() if not info.is_required()}
    if any(
        info.default_factory is not None or isinstance(info.default, (list, dict, set)) for info in optional.values()
    ):
        raise TypeError(f"{model.__name__}: planned cells take plain defaults only (one object shared by every cell)")
    return {name: info.default for name, info in optional.items()}
