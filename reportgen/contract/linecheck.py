"""The fast check of one log line: per-cell event models mirrored as TypedDicts.

A long log is almost all per-cell results. pydantic-core validates a line into a plain dict in
about two thirds of the time it takes to build model instances, and a dict is cheaper to drop,
so those kinds are checked against TypedDict mirrors generated here from the models in
``events.py``. The models stay the one definition of the contract: a mirror carries the same
field types, constraints, required fields and configuration, and building one fails for a
model whose rules live in validator code, which a mirror could not carry.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Callable, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from typing_extensions import NotRequired, TypedDict

from reportgen.contract.events import CASE_KINDS, EVENT_MODELS, Envelope

MIRRORED_CONFIG = ("extra", "allow_inf_nan", "strict")


def mirror(model: type[BaseModel], made: dict[type[BaseModel], Any] | None = None) -> Any:
    """A TypedDict that accepts exactly the JSON objects ``model`` accepts."""
    made = {} if made is None else made
    if model in made:
        return made[model]
    decorators = model.__pydantic_decorators__
    if decorators.model_validators or decorators.field_validators or decorators.validators:
        raise TypeError(f"{model.__name__} has validator code; a TypedDict mirror cannot carry it")
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = _mirror_type(info.annotation, made)
        extras = list(info.metadata) + ([Field(discriminator=info.discriminator)] if info.discriminator else [])
        if extras:
            annotation = Annotated[(annotation, *extras)]
        fields[name] = annotation if info.is_required() else NotRequired[annotation]
    typed = TypedDict(f"{model.__name__}Line", fields)  # type: ignore[operator]
    typed.__pydantic_config__ = ConfigDict(**{k: v for k, v in model.model_config.items() if k in MIRRORED_CONFIG})  # type: ignore[attr-defined, typeddict-item]
    made[model] = typed
    return typed


def _mirror_type(annotation: Any, made: dict[type[BaseModel], Any]) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return mirror(annotation, made)
    origin = get_origin(annotation)
    if origin is None or origin is Literal:
        return annotation
    args = get_args(annotation)
    if origin is Annotated:
        return Annotated[(_mirror_type(args[0], made), *annotation.__metadata__)]
    inner = tuple(_mirror_type(arg, made) for arg in args)
    if origin in (Union, types.UnionType):
        return Union[inner]
    if origin in (list, dict):
        return origin[inner]
    raise TypeError(f"no mirror for the annotation {annotation!r}")


def line_validator() -> Callable[[bytes], dict[str, Any] | Envelope]:
    """Validate one JSON line: a dict for a per-cell kind, a model instance for any other."""
    made: dict[type[BaseModel], Any] = {}
    members = tuple(mirror(model, made) if kind in CASE_KINDS else model for kind, model in EVENT_MODELS.items())
    union = Annotated[Union[members], Field(discriminator="kind")]
    return TypeAdapter(union).validator.validate_json  # type: ignore[return-value]


# --- duplicate keys ----------------------------------------------------------------------------
#
# pydantic-core reads a JSON object with a repeated key as "last one wins", so
# {"status": "mismatch", "status": "pass"} would validate as a pass. The fast path therefore
# compares two counts that agree only for a line without repeated keys: the number of keys in
# the validated dict (the mirrors forbid unknown keys and fill in no defaults, so every key of
# the line is there once) and the number of `":` in the raw bytes once white space is deleted,
# which is at least the number of keys written (each key's closing quote then, after any white
# space, its colon). A repeated key makes the byte count larger than the dict's, and so does a
# `":` inside a string value: both take the careful path, which names the repeated key.

KeyCounter = Callable[[dict[str, Any]], int]


def key_counters() -> dict[str, KeyCounter]:
    """Per per-cell kind, a function counting the keys of a validated line, nested objects included.

    Each is straight-line code generated from the model (a loop over field descriptions costs
    as much as validating a short line): one ``len`` per object, ``sum(map(len, ...))`` for a
    list of flat objects.
    """
    return {kind: _compile_counter(model) for kind, model in EVENT_MODELS.items() if kind in CASE_KINDS}


def _nested_models(annotation: Any) -> tuple[list[type[BaseModel]], bool]:
    """The models a field's value may be (with None and Annotated unwrapped), and whether it is a list of them."""
    origin = get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation], False
    if origin is Annotated:
        return _nested_models(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        found: list[type[BaseModel]] = []
        many = False
        for arg in get_args(annotation):
            models, arg_many = _nested_models(arg)
            found += models
            many |= arg_many
        return found, many
    if origin is list:
        models, inner_many = _nested_models(get_args(annotation)[0])
        if inner_many:
            raise TypeError(f"no key counter for nested lists of models: {annotation!r}")
        return models, bool(models)
    if origin is dict and _nested_models(get_args(annotation)[1])[0]:
        raise TypeError(f"no key counter for a mapping of models: {annotation!r}")
    return [], False


def _nested_fields(model: type[BaseModel]) -> list[tuple[str, type[BaseModel] | None, bool]]:
    """(field, the nested model when it has nested objects itself else None, is a list)."""
    fields = []
    for name, info in model.model_fields.items():
        models, many = _nested_models(info.annotation)
        if not models:
            continue
        deep = [m for m in models if _nested_fields(m)]
        if deep and len(models) > 1:
            raise TypeError(f"no key counter for a union of nested models in {model.__name__}.{name}")
        fields.append((name, deep[0] if deep else None, many))
    return fields


def _count_lines(model: type[BaseModel], var: str, depth: int) -> list[str]:
    lines = []
    pad = "    " * depth
    for index, (name, deep, many) in enumerate(_nested_fields(model)):
        item = f"v{depth}_{index}"
        lines.append(f"{pad}{item} = {var}.get({name!r})")
        if deep is None and many:
            lines.append(f"{pad}if {item}: n += sum(map(len, {item}))")
        elif deep is None:
            lines.append(f"{pad}if {item} is not None: n += len({item})")
        elif many:
            lines.append(f"{pad}if {item}:")
            lines.append(f"{pad}    for e{depth} in {item}:")
            lines.append(f"{pad}        n += len(e{depth})")
            lines += _count_lines(deep, f"e{depth}", depth + 2)
        else:
            lines.append(f"{pad}if {item} is not None:")
            lines.append(f"{pad}    n += len({item})")
            lines += _count_lines(deep, item, depth + 1)
    return lines


def _compile_counter(model: type[BaseModel]) -> KeyCounter:
    body = _count_lines(model, "d", 1)
    if not body:
        return len
    source = "\n".join(["def count(d):", "    n = len(d)", *body, "    return n"])
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<key counter for {model.__name__}>", "exec"), namespace)  # noqa: S102 - code built above from field names
    return namespace["count"]  # type: ignore[no-any-return]
