"""The edit form of a proposal, generated from its contract's model-facing ``Request``.

An edit never touches frozen arguments: the person changes what the request asked for, and
the application runs the whole contract again (``ProposalAccess.revise``). So the form holds
exactly the ``Request`` model's fields, never a derived value such as an amount, and what it
posts is read back into a request by the same field list: anything else in the post is
ignored.

How a field shows, by its type: a ``Literal`` or an enum is a select, a ``bool`` a checkbox,
an ``int`` a number input, a ``str`` a text input (a textarea for the model's
``multiline_fields``), a list of strings a textarea with one item per line, and a nested
model a fieldset of its own fields. Anything else (none of today's contracts) is a JSON
textarea. An optional field (``X | None``) may be left blank.

Labels, hints and the words of each choice are the contract's (``request_fields``, by the
field's dotted path), like every other text about one operation.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, Union, get_args, get_origin

from countersign.domain.contracts.presentation import Localized, RequestField
from countersign.domain.contracts.problems import Problem
from countersign.domain.untrusted_json import read_json
from pydantic import BaseModel

Translate = Callable[..., str]
Kind = Literal["text", "textarea", "number", "checkbox", "select", "lines", "json", "group"]

_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,15}")
#: Characters a text field takes at most when its model sets no limit (the form's own bound
#: is posted_form's MAX_FORM_BYTES).
DEFAULT_MAX_LENGTH = 4000


@dataclass(frozen=True)
class Spec:
    """One field of a request model, as the form handles it."""

    path: str
    kind: Kind
    required: bool
    options: tuple[Any, ...] = ()
    max_length: int | None = None
    children: tuple[Spec, ...] = ()


@dataclass(frozen=True)
class Option:
    value: str
    label: str
    selected: bool


@dataclass(frozen=True)
class FormField:
    """One field as the template shows it: its label, hint, value and problems."""

    path: str
    id: str
    kind: Kind
    label: str
    hint: str
    required: bool
    value: str
    checked: bool
    max_length: int
    options: tuple[Option, ...]
    errors: tuple[str, ...]
    children: tuple[FormField, ...] = field(default=())

    @property
    def described_by(self) -> str:
        """The ids of its hint and its problems, for ``aria-describedby``."""
        ids = [f"{self.id}-hint" if self.hint else "", f"{self.id}-errors" if self.errors else ""]
        return " ".join(i for i in ids if i)


def specs(model: type[BaseModel], prefix: str = "") -> tuple[Spec, ...]:
    """The form's fields for ``model``, in its declared order."""
    found = []
    multiline: frozenset[str] = getattr(model, "multiline_fields", frozenset())
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        annotation, optional = _unwrap_optional(info.annotation)
        required = info.is_required() and not optional
        max_length = next(
            (int(m.max_length) for m in info.metadata if getattr(m, "max_length", None)), None
        )
        found.append(_spec(path, annotation, required, max_length, name in multiline))
    return tuple(found)


def _spec(path: str, annotation: Any, required: bool, max_length: int | None, multi: bool) -> Spec:
    origin = get_origin(annotation)
    if origin is Literal:
        return Spec(path, "select", required, options=get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return Spec(path, "select", required, options=tuple(m.value for m in annotation))
    if annotation is bool:
        return Spec(path, "checkbox", required)
    if annotation is int:
        return Spec(path, "number", required)
    if annotation is str:
        return Spec(path, "textarea" if multi else "text", required, max_length=max_length)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return Spec(path, "group", required, children=specs(annotation, f"{path}."))
    if origin is list and get_args(annotation) == (str,):
        return Spec(path, "lines", required)
    return Spec(path, "json", required)


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` is ``(X, True)``; anything else is itself and not optional."""
    if get_origin(annotation) in (Union, types.UnionType):
        others = [a for a in get_args(annotation) if a is not type(None)]
        if len(others) == 1 and len(others) < len(get_args(annotation)):
            return others[0], True
    return annotation, False


def leaves(fields: Iterable[Spec]) -> list[Spec]:
    """Every field that holds a value (a group's fields, not the group)."""
    found: list[Spec] = []
    for spec in fields:
        found.extend(leaves(spec.children) if spec.kind == "group" else [spec])
    return found


# -- from a stored request to what the form shows -------------------------------------------------


def shown(fields: Iterable[Spec], request: Mapping[str, Any] | None) -> dict[str, str]:
    """The form's values for a stored request (None, for a proposal frozen before requests
    were kept: every field starts blank), by field path."""
    values: dict[str, str] = {}
    for spec in leaves(fields):
        value = _at(request or {}, spec.path)
        values[spec.path] = _as_text(spec, value)
    return values


def _at(request: Mapping[str, Any], path: str) -> Any:
    value: Any = request
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _as_text(spec: Spec, value: Any) -> str:
    if value is None:
        return ""
    if spec.kind == "checkbox":
        return "on" if value is True else ""
    if spec.kind == "lines" and isinstance(value, list):
        return "\n".join(str(item) for item in value)
    if spec.kind == "json":
        return json.dumps(value, ensure_ascii=False, indent=2)
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)


def posted(fields: Iterable[Spec], form: Mapping[str, str]) -> dict[str, str]:
    """What the person sent, for exactly the form's fields (anything else is dropped); a
    textarea's line breaks as one ``\\n``."""
    values = {}
    for spec in leaves(fields):
        raw = form.get(spec.path, "")
        if spec.kind in ("textarea", "lines", "json"):
            raw = raw.replace("\r\n", "\n").replace("\r", "\n")
        values[spec.path] = raw
    return values


# -- from what the form holds to a request -------------------------------------------------------


def request_of(
    fields: Iterable[Spec], values: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The request the form's values make, and the problems only the form can see (a number
    that is not one, JSON that does not read), by field path, as catalogue keys. A blank
    required field is left out, so the contract says what is missing as it always does."""
    request: dict[str, Any] = {}
    problems: dict[str, str] = {}
    for spec in fields:
        name = spec.path.rsplit(".", 1)[-1]
        if spec.kind == "group":
            inner, inner_problems = request_of(spec.children, values)
            problems.update(inner_problems)
            if inner or spec.required:
                request[name] = inner
            continue
        try:
            value = _value(spec, values.get(spec.path, ""))
        except _Unreadable as unreadable:
            problems[spec.path] = unreadable.key
            continue
        if value is not _LEFT_OUT:
            request[name] = value
    return request, problems


class _Unreadable(Exception):
    """A value the form cannot turn into its field's type; ``key`` says why, for people."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


_LEFT_OUT = object()


def _value(spec: Spec, raw: str) -> Any:
    """One field's value from its text; _LEFT_OUT for a blank required one."""
    if spec.kind == "checkbox":
        return raw == "on"
    if raw.strip() == "" and spec.kind != "textarea":
        return _LEFT_OUT if spec.required else None
    if spec.kind == "number":
        if not _WHOLE_NUMBER.fullmatch(raw.strip()):
            raise _Unreadable("edit.problem.number")
        return int(raw.strip())
    if spec.kind == "select":
        chosen = [o for o in spec.options if _option_value(o) == raw]
        return chosen[0] if chosen else raw  # the contract refuses an option it lacks
    if spec.kind == "lines":
        return [line.strip() for line in raw.split("\n") if line.strip()]
    if spec.kind == "json":
        try:
            return form_json(raw)
        except ValueError:
            raise _Unreadable("edit.problem.json") from None
    return None if raw.strip() == "" and not spec.required else raw


def form_json(raw: str) -> Any:
    """The JSON a form's field holds; ValueError (``UnreadableJsonError``) for text that is not
    JSON or that ``domain.untrusted_json`` refuses: too long, nested too deeply, a number too
    long (a caller catching only json's ValueError once missed RecursionError, and the page
    was an internal error)."""
    return read_json(raw)


def _option_value(option: Any) -> str:
    return str(option.value if isinstance(option, Enum) else option)


# -- problems next to their fields ---------------------------------------------------------------


def place(
    fields: Iterable[Spec], problems: Iterable[Problem], language: str
) -> tuple[dict[str, list[str]], list[str]]:
    """Each problem's people-worded sentence (``Problem.explain``) by the form field it is
    about (the deepest field its dotted path falls under), and those about no one field."""
    paths = [spec.path for spec in _all(fields)]
    by_field: dict[str, list[str]] = {}
    general: list[str] = []
    for problem in problems:
        sentence = problem.explain(language)
        owner = max(
            (p for p in paths if problem.field == p or problem.field.startswith(p + ".")),
            key=len,
            default=None,
        )
        target = general if owner is None else by_field.setdefault(owner, [])
        if sentence not in target:
            target.append(sentence)
    return by_field, general


def _all(fields: Iterable[Spec]) -> list[Spec]:
    found: list[Spec] = []
    for spec in fields:
        found.append(spec)
        found.extend(_all(spec.children))
    return found


# -- for the template ---------------------------------------------------------------------------


def form_fields(
    fields: Iterable[Spec],
    values: Mapping[str, str],
    errors: Mapping[str, list[str]],
    words: Mapping[str, RequestField],
    language: str,
    t: Translate,
) -> list[FormField]:
    """The fields as the template shows them, in ``language``: labelled by the contract's
    ``request_fields`` (a field it does not describe reads as its name)."""
    return [_form_field(spec, values, errors, words, language, t) for spec in fields]


def _form_field(
    spec: Spec,
    values: Mapping[str, str],
    errors: Mapping[str, list[str]],
    words: Mapping[str, RequestField],
    language: str,
    t: Translate,
) -> FormField:
    value = values.get(spec.path, "")
    described = words.get(spec.path)
    option_words = described.options if described is not None else {}
    options = tuple(
        Option(
            _option_value(o),
            _text(option_words.get(_option_value(o)), language, _option_value(o)),
            _option_value(o) == value,
        )
        for o in spec.options
    )
    if spec.kind == "select" and not spec.required:
        options = (Option("", t("edit.none"), value == ""), *options)
    return FormField(
        path=spec.path,
        id="field-" + spec.path.replace(".", "-"),
        kind=spec.kind,
        label=_text(described.label if described else None, language, spec.path.rsplit(".")[-1]),
        hint=described.hint.text(language) if described and described.hint else "",
        required=spec.required,
        value=value,
        checked=value == "on",
        max_length=spec.max_length or DEFAULT_MAX_LENGTH,
        options=options,
        errors=tuple(errors.get(spec.path, ())),
        children=tuple(
            _form_field(child, values, errors, words, language, t) for child in spec.children
        ),
    )


def _text(words: Localized | None, language: str, name: str) -> str:
    """The contract's words, or the name with its underscores as spaces."""
    return words.text(language) if words is not None else name.replace("_", " ").capitalize()
