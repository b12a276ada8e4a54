"""A contract model's validation and JSON dump, called on its own pydantic-core validator and
serializer.

``Model.model_validate(value)`` and ``model.model_dump(mode="json")`` are Python wrappers that
hand the core validator or serializer a dozen keywords, each at its default. A cycle makes
about ten such calls (the request, the arguments, preview and result, the stored arguments
decoded again), and the wrappers cost about as much again as the core's own work on a small
model. These make the same core call with the same defaults. A class that overrides
``model_validate`` or ``model_dump`` (checked at every call) is called through its own method,
so nothing a model says about itself is skipped.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound=BaseModel)

_VALIDATE = BaseModel.model_validate.__func__  # type: ignore[attr-defined]
_DUMP = BaseModel.model_dump


def validated_as_own(model: type[BaseModel]) -> bool:
    """Whether ``model`` validates with pydantic's own ``model_validate``: nothing stands in
    it (a classmethod of its own, or a plain function set on the class, which has no
    ``__func__``)."""
    return getattr(model.model_validate, "__func__", None) is _VALIDATE


def dumped_as_own(model: type[BaseModel]) -> bool:
    """Whether ``model`` dumps with pydantic's own ``model_dump``."""
    return model.model_dump is _DUMP


def validated(model: type[ModelT], value: Any) -> ModelT:
    """``model.model_validate(value)``: the model, or pydantic's ValidationError."""
    # Whatever stands in ``model_validate`` is called as it is.
    if getattr(model.model_validate, "__func__", None) is not _VALIDATE:
        return model.model_validate(value)
    found: ModelT = model.__pydantic_validator__.validate_python(value)
    return found


def dumped(instance: BaseModel) -> dict[str, Any]:
    """``instance.model_dump(mode="json")``: its fields as plain JSON values."""
    if type(instance).model_dump is not _DUMP:
        return instance.model_dump(mode="json")
    found: dict[str, Any] = instance.__pydantic_serializer__.to_python(instance, mode="json")
    return found
