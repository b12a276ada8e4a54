"""The registry's rules about what a contract holds, checked when it loads (``broken_rule``):
labels cover its preview, money reads with its currency and is measured, no text people
read is blank in a language, the model never picks an amount, and an amount a person names
is shown to the approver."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, get_args

from countersign.domain.contracts.presentation import Localized, Shown

if TYPE_CHECKING:
    from countersign.domain.contracts import AnyContract
    from pydantic import BaseModel


def broken_rule(contract: AnyContract) -> str | None:
    """The first rule ``contract`` breaks, as one sentence saying what to change; None."""
    kind = contract.kind
    fields = set(contract.Preview.model_fields)
    labelled = set(contract.preview_fields) | contract.preview_hidden
    if fields - labelled:
        return (
            f"{kind}'s preview field {sorted(fields - labelled)[0]!r} has no label: add it "
            "to preview_fields (a row the approver reads) or to preview_hidden (a field "
            "only shown through others, such as a currency)"
        )
    if labelled - fields:
        return (
            f"{kind} labels {sorted(labelled - fields)[0]!r}, which its Preview does not "
            "have: remove it from preview_fields (or preview_hidden), or add the field"
        )
    money = _shown_money(contract)
    if money and "currency" not in fields:
        return (
            f"{kind} shows money ({', '.join(money)}) but its Preview has no currency "
            "field, so the card reads 50.00 with no currency and analytics' currency is "
            "empty: add currency: str to its Preview and to preview_hidden"
        )
    unworded = _unworded_optionals(contract)
    if unworded:
        return (
            f'{kind}\'s preview field {unworded[0]!r} may be None, which reads "None" to '
            "people in every language: give its PreviewField words=lambda value, language: "
            '... (a text field; the value is "None" then), or make the field never None'
        )
    untranslated = _untranslated(contract)
    if untranslated:
        where, language = untranslated[0]
        return (
            f"{kind}'s {where} has no {_LANGUAGE_NAMES[language]} text: everything people "
            "read is written in English and French, Localized(en, fr) (an empty one "
            "showed a blank to every manager reading that language)"
        )
    picked = _model_picked_money(contract)
    if picked:
        return (
            f"{kind}'s request lets the model pick an amount ({', '.join(picked)}): "
            "compute it in resolve from the facts the request names; only an amount a "
            "person chooses (a credit of what the manager says) is listed in "
            "requested_amounts, and the approver reads it on the card"
        )
    unshown = _unshown_requested_amount(contract)
    if unshown:
        return unshown
    unmeasured = _unmeasured_money(contract)
    if unmeasured:
        return (
            f"{kind}'s arguments hold money ({', '.join(unmeasured)}) but it does not say how "
            "much a proposal moves, so an approval policy's threshold (two approvers above "
            "$100) would never apply to it: define amount_cents(arguments) (None for a "
            "proposal that moves none)"
        )
    return None


def _shown_money(contract: AnyContract) -> list[str]:
    """The preview fields shown as money, which read in the preview's ``currency``: those
    shown as money, and the rows holding an amount (``lines.amount_cents``), each read as
    money in its row."""
    nested = {path.split(".", 1)[0] for path in _money_paths(contract.Preview) if "." in path}
    return [
        name
        for name, shown in contract.preview_fields.items()
        if shown.shown is Shown.MONEY or (name in nested and shown.words is None)
    ]


def _unworded_optionals(contract: AnyContract) -> list[str]:
    """The preview fields that may hold None and are shown as text as they are: each would
    read "None" on the card. A flag (None is "no") or a field with its own words is fine."""
    return [
        name
        for name, field in contract.Preview.model_fields.items()
        if type(None) in get_args(field.annotation)
        and (shown := contract.preview_fields.get(name)) is not None
        and shown.shown is not Shown.FLAG
        and shown.words is None
    ]


_LANGUAGE_NAMES = {"en": "English", "fr": "French"}


def _texts(contract: AnyContract) -> Iterator[tuple[str, Localized | None]]:
    """Every text of a contract that people read, by where it is declared."""
    yield "title", contract.title
    yield "this_resource", contract.this_resource
    for name, shown in contract.preview_fields.items():
        yield f"preview field {name!r} label", shown.label
    for name, asked in contract.request_fields.items():
        yield f"request field {name!r} label", asked.label
        yield f"request field {name!r} hint", asked.hint
        for value, option in asked.options.items():
            yield f"request field {name!r} option {value!r}", option
    for kind, sentences in (
        ("request problem", contract.request_problems),
        ("revision reason", contract.revision_reasons),
        ("outcome title", contract.outcome_titles),
    ):
        for code, sentence in sentences.items():
            yield f"{kind} {code!r}", sentence
    yield "irreversible", contract.irreversible


def _untranslated(contract: AnyContract) -> list[tuple[str, str]]:
    """Where a text of the contract is blank in a language, and which language."""
    return [
        (where, language)
        for where, text in _texts(contract)
        if text is not None
        for language in _LANGUAGE_NAMES
        if not str(getattr(text, language, None) or "").strip()
    ]


def _model_picked_money(contract: AnyContract) -> list[str]:
    """The request's money fields (``*_cents``) the contract does not say a person chooses,
    those of the models it nests too (``lines.amount_cents``: a list of them, or one that
    may be None, is the model's to fill as well)."""
    return [
        name for name in _money_paths(contract.Request) if name not in contract.requested_amounts
    ]


def _unshown_requested_amount(contract: AnyContract) -> str | None:
    """What is wrong with the first amount in ``requested_amounts`` the approver would not
    read on the card: one the ``Request`` does not hold (a misspelt path lists nothing), or
    one its ``Preview`` does not show under the same path, on a row of ``preview_fields``,
    as money when it is the preview's own field (a nested one reads as money in its row,
    ``presentation.preview_rows``).
    The path is the check because previews are built by ``resolve`` from facts a registry
    does not have: the rule cannot compare values, so the amount keeps its name."""
    kind = contract.kind
    asked = set(_money_paths(contract.Request))
    previewed = set(_money_paths(contract.Preview))
    for name in sorted(contract.requested_amounts):
        if name not in asked:
            return (
                f"{kind} lists {name!r} in requested_amounts, which is not a money field "
                "(*_cents) of its Request: list the Request's amount by its dotted path "
                "(lines.amount_cents for a nested one), or remove it"
            )
        top = name.split(".", 1)[0]
        row = contract.preview_fields.get(top)
        if row is None:
            shown = False
        elif top == name:
            shown = row.shown is Shown.MONEY
        else:  # read as money in its row's text; a flag's yes, or words=, would hide it
            shown = row.shown in (Shown.TEXT, Shown.MULTILINE) and row.words is None
        if name not in previewed or not shown:
            where = (
                f"with {top!r} a row of preview_fields shown as text (Shown.TEXT or "
                "Shown.MULTILINE, without words=), where each amount reads as money"
                if top != name
                else "as a row of preview_fields shown as money (Shown.MONEY)"
            )
            return (
                f"{kind}'s requested amount {name!r} is not shown to the approver, who must "
                f"never approve an amount they were not shown: its Preview holds {name!r} "
                f"too (the amount resolve keeps), {where}"
            )
    return None


def _money_paths(
    model: type[BaseModel], prefix: str = "", seen: frozenset[type] = frozenset()
) -> Iterator[str]:
    """``model``'s ``*_cents`` fields, and its nested models', as dotted paths."""
    for name, field in model.model_fields.items():
        if name.endswith("_cents"):
            yield prefix + name
        for nested in _models_in(field.annotation):
            if nested not in seen:
                yield from _money_paths(nested, f"{prefix}{name}.", seen | {model})


def _models_in(annotation: object) -> Iterator[type[BaseModel]]:
    """The pydantic models an annotation names: itself, or within ``list[...]``,
    ``X | None``, ``dict[str, X]`` and the like."""
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        yield annotation  # a model (pydantic is not imported for ``countersign --help``)
    for argument in get_args(annotation):
        yield from _models_in(argument)


def _unmeasured_money(contract: AnyContract) -> list[str]:
    """The money fields (``*_cents``) of a contract's arguments when it does not define
    ``amount_cents``, which approval policies read; [] otherwise."""
    from countersign.domain.contracts.base import names_an_amount  # loaded with any contract

    if names_an_amount(contract):
        return []
    return [name for name in contract.Arguments.model_fields if name.endswith("_cents")]
