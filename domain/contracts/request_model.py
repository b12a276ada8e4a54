"""The base of every model-facing request (``ContractRequest``): strict types, unknown
fields refused, and no control characters in any text, nested requests included."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from countersign.domain.contracts.problems import RequestValueError
from countersign.domain.visible_text import invisible_formatting
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_OR_NEWLINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_text(value: str, *, multiline: bool = False) -> str:
    """Refuse control characters (escape sequences could disguise what a reviewer sees) and
    invisible formatting characters (``visible_text.invisible_formatting``); newlines and
    tabs are allowed only in multi-line text."""
    # Every control and formatting character is unprintable (categories Cc, Cf, Zl, Zp), so
    # printable text has none: one pass in C, where the pattern's search costs about 23,000
    # instructions on a broadcast's body. Text with a line break, or anything else
    # unprintable, takes the pattern, then the walk.
    if value.isprintable():
        return value
    if (_CONTROL if multiline else _CONTROL_OR_NEWLINE).search(value):
        raise RequestValueError(
            "control characters are not allowed" + ("" if multiline else " (no line breaks)")
        )
    if invisible_formatting(value):
        raise RequestValueError(INVISIBLE_REFUSED)
    if multiline and _BLANK_RUN.search(value):
        raise RequestValueError(BLANK_RUN_REFUSED)
    return value


#: Three blank lines in a row or more (spaces and tabs on them count as blank): a body of
#: nothing but line breaks would push its last words, and the card's buttons, far out of a
#: reviewer's sight.
_BLANK_RUN = re.compile(r"\n(?:[ \t]*\n){3,}")
BLANK_RUN_REFUSED = "at most two blank lines in a row"


#: Why a text with ``invisible_formatting`` is refused, in words a model can act on.
INVISIBLE_REFUSED = (
    "invisible formatting characters are not allowed (such as right-to-left overrides, "
    "zero-width spaces or line separators)"
)


class ContractRequest(BaseModel):
    """Base of every model-facing request: strict types, unknown fields rejected, and no
    control characters in any text (a multi-line field allows newlines and tabs)."""

    # cache_strings="keys": pydantic keeps every stripped text it makes in a string cache
    # (about 1 MB once full, and slower: 1.6 us against 0.9 for a two-text request). A
    # model's texts are different every time; only the keys repeat.
    # revalidate_instances="always": a nested request handed in as an instance (made by
    # ``model_construct``, or changed after it was made) is validated again, its own checks
    # included, like one given as a dict.
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        str_strip_whitespace=True,
        cache_strings="keys",
        revalidate_instances="always",
    )
    multiline_fields: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if (
            not cls.multiline_fields
            and cls.model_config.get("extra") == "forbid"
            and cls.model_config.get("revalidate_instances") == "always"
            and cls._no_control_characters.__func__  # type: ignore[attr-defined]
            is _NO_CONTROL_CHARACTERS
        ):
            CHECKED_ITSELF.add(cls)

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: Any, info: ValidationInfo) -> Any:
        # Printable text has no control character (``check_text``): most fields end here.
        if type(value) is str and value.isprintable():
            return value
        if type(value) in CHECKED_ITSELF:
            return value  # a nested request: its own fields were checked as this walk would
        _check_nested(value, multiline=info.field_name in cls.multiline_fields)
        return value


#: Request classes whose instances, once validated, have had every text checked as
#: ``_check_nested`` checks a nested model's: no multi-line field (the walk allows no line
#: break in a nested model), no extra fields (no field validator sees them), this check
#: itself, and an instance handed in validated again. A nested one of these is not walked
#: again by the request that holds it.
CHECKED_ITSELF: set[type[BaseModel]] = set()
_NO_CONTROL_CHARACTERS = ContractRequest.__dict__["_no_control_characters"].__func__


def _check_nested(value: Any, *, multiline: bool) -> None:
    """Every text in ``value`` through ``check_text``, printable text without a call of its
    own (a request's validation calls this for every field that is not printable text)."""
    if isinstance(value, str):
        if not value.isprintable():
            check_text(value, multiline=multiline)
    elif isinstance(value, list):
        for item in value:
            if type(item) is not str or not item.isprintable():
                _check_nested(item, multiline=False)
    elif isinstance(value, BaseModel) and type(value) not in CHECKED_ITSELF:
        _check_model(value)


def _check_model(value: BaseModel) -> None:
    """A nested model's fields and extra fields, as its ``__iter__`` yields them, read without
    that generator."""
    for key, item in value.__dict__.items():
        if not key.startswith("_"):
            _check_nested(item, multiline=False)
    extra = value.__pydantic_extra__
    if extra:
        for item in extra.values():
            _check_nested(item, multiline=False)
