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
