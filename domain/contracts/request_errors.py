"""pydantic's validation errors in the application's own words: a safe problem for each, that
never quotes the input (pydantic's wording may), and the parsing of a model-facing request."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, TypeVar

from countersign.domain.contracts.model_calls import validated
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import (
    MAX_PROBLEMS,
    InvalidRequestError,
    Problem,
    RequestValueError,
)
from countersign.domain.storable_text import UNSTORABLE_TEXT, WHY
from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)

#: pydantic's error types in the application's own words. Anything not listed is "not a
#: valid value": pydantic's wording may quote or describe the input, so it is never shown.
SAFE_MESSAGES: dict[str, str] = {
    "missing": "this field is required",
    "extra_forbidden": "unknown field; remove it",
    "string_type": "must be a string",
    "string_unicode": f"holds {WHY}",  # a lone surrogate: pydantic reads no such str
    "string_sub_type": "must be a string",
    "string_too_long": "text is too long",
    "string_too_short": "text is too short",
    "string_pattern_mismatch": "not in the expected format",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_parsing_size": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "dataclass_type": "must be a JSON object",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "set_type": "must be a list",
    "too_long": "too many items",
    "too_short": "too few items",
    "greater_than": "too small",
    "greater_than_equal": "too small",
    "less_than": "too large",
    "less_than_equal": "too large",
    "literal_error": "not one of the allowed values",
    "enum": "not one of the allowed values",
    "recursion_loop": "nested too deeply",
    "uuid_type": "must be an id",
    "uuid_parsing": "must be an id",
    UNSTORABLE_TEXT: f"holds {WHY}",
}
#: A model-facing request's references name parts of its record (the order's payments "P1",
#: ...): said without "conversation", since an agent over MCP and a service over the API send
#: them too.
SAFE_REQUEST_MESSAGES = {
    **SAFE_MESSAGES,
    "string_pattern_mismatch": "not one of this record's references",
}


def safe_message(error: Mapping[str, Any], messages: Mapping[str, str] = SAFE_MESSAGES) -> str:
    """One pydantic error (from ``errors()``) in the application's words, without its input."""
    kind = str(error.get("type", ""))
    context = error.get("ctx") or {}
    if kind == "literal_error" and "expected" in context:
        return f"must be one of: {context['expected']}"  # the schema's values, not the input
    if kind == "value_error" and isinstance(context.get("error"), RequestValueError):
        return str(context["error"])  # our own validators' words
    return messages.get(kind, "not a valid value")


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
UNSHOWN_NAME = "(name not shown)"


def field_path(loc: Iterable[Any], default: str = "request") -> str:
    """A problem's field, dotted (``filters.leagues.0``). Every name a schema declares is a
    plain identifier; an unknown key can be anything the caller sent, so one that is not
    plain is named UNSHOWN_NAME rather than echoed."""
    parts = [
        str(part) if isinstance(part, int) or _PLAIN_NAME.fullmatch(str(part)) else UNSHOWN_NAME
        for part in loc
    ]
    return ".".join(parts)[:200] or default


MALFORMED_REQUEST = Localized(
    "The request was not in the form the application expects, so nothing was prepared.",
    "La demande n'avait pas la forme attendue par l'application : rien n'a été préparé.",
)
_LEFT_OUT = Localized(
    "The request left out something it needs, so nothing was prepared.",
    "Il manque à la demande une information nécessaire : rien n'a été préparé.",
)
_TOO_LONG = Localized(
    "Something in the request is too long or lists too many items, so nothing was prepared.",
    "Un élément de la demande est trop long ou compte trop d'éléments : rien n'a été préparé.",
)
_TOO_SHORT = Localized(
    "Something in the request is empty or too short, so nothing was prepared.",
    "Un élément de la demande est vide ou trop court : rien n'a été préparé.",
)
#: pydantic's error types for people: what went wrong, never which field or which value.
SAFE_SENTENCES: dict[str, Localized] = {
    "missing": _LEFT_OUT,
    "extra_forbidden": Localized(
        "The request holds something this operation does not take, so nothing was prepared.",
        "La demande contient une information que cette opération ne prévoit pas : rien n'a été "
        "préparé.",
    ),
    "string_pattern_mismatch": Localized(
        "The request names something that is not in this record, so nothing was prepared.",
        "La demande désigne un élément qui ne figure pas dans ce dossier : rien n'a été préparé.",
    ),
    "string_too_long": _TOO_LONG,
    "too_long": _TOO_LONG,
    "string_too_short": _TOO_SHORT,
    "too_short": _TOO_SHORT,
    "literal_error": Localized(
        "The request chose an option this operation does not offer, so nothing was prepared.",
        "La demande choisit une option que cette opération ne propose pas : rien n'a été préparé.",
    ),
    "value_error": Localized(
        "A text in the request holds something not allowed there (a line break or a control "
        "character), so nothing was prepared.",
        "Un texte de la demande contient quelque chose d'interdit à cet endroit (un saut de ligne "
        "ou un caractère de contrôle) : rien n'a été préparé.",
    ),
}
SAFE_SENTENCES["enum"] = SAFE_SENTENCES["literal_error"]


def problems_from(error: ValidationError, limit: int | None = None) -> list[Problem]:
    """Translate pydantic errors into safe problems (the first ``limit``): never the input."""
    return [
        Problem(
            field=field_path(item["loc"]),
            message=safe_message(item, SAFE_REQUEST_MESSAGES),
            for_people=SAFE_SENTENCES.get(str(item.get("type", "")), MALFORMED_REQUEST),
        )
        for item in error.errors(include_input=False, include_url=False)[:limit]
    ]


def _bounded_unknown_keys(
    model: type[BaseModel], raw: dict[Any, Any]
) -> tuple[dict[Any, Any], int]:
    """``raw`` with at most MAX_PROBLEMS unknown keys (the first ones), and how many were left
    out: each unknown key is one problem, and only MAX_PROBLEMS are ever reported, so there is
    no need to have the validator build an error for each of a flood of them."""
    if len(raw) <= MAX_PROBLEMS:
        return raw, 0  # too few keys to leave any out: not looked at one by one
    known = _known_keys(model)
    unknown = 0
    kept: dict[Any, Any] = {}
    for key, value in raw.items():
        if key not in known:
            unknown += 1
            if unknown > MAX_PROBLEMS:
                continue
        kept[key] = value
    dropped = max(0, unknown - MAX_PROBLEMS)
    return (kept if dropped else raw), dropped


@cache
def _known_keys(model: type[BaseModel]) -> frozenset[str]:
    """The keys a request model accepts (its fields' names and aliases): a request class is
    defined once, so this is worked out once per class."""
    known: set[str] = set()
    for name, info in model.model_fields.items():
        known.update(a for a in (name, info.alias, info.validation_alias) if isinstance(a, str))
    return frozenset(known)


def parse_request(model: type[ModelT], raw: Any) -> ModelT:
    """``raw`` validated as ``model``, or InvalidRequestError with safe problems (at most
    MAX_PROBLEMS, the rest counted)."""
    if not isinstance(raw, dict):
        raise InvalidRequestError.one("request", "must be a JSON object", MALFORMED_REQUEST)
    bounded, dropped = _bounded_unknown_keys(model, raw)
    try:
        return validated(model, bounded)
    except ValidationError as error:
        problems = problems_from(error, MAX_PROBLEMS)
        more = error.error_count() - len(problems) + dropped
        raise InvalidRequestError(problems, more) from None
