"""How a contract reads for people: texts in every language, and its preview's labelled rows.

A contract declares these once (``OperationContract.title``, ``preview_fields``,
``request_fields``, ``revision_reasons``, ``headline``, ``success_text``); the terminal, the
browser, the hand-back and the projections all render them from here, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from enum import StrEnum
from typing import Any

from countersign.domain.money import format_money

LANGUAGES = ("en", "fr")


@dataclass(frozen=True)
class Localized:
    """One text in every language the application speaks; may hold ``{name}`` placeholders."""

    en: str
    fr: str

    def text(self, language: str, **params: object) -> str:
        """The text in ``language`` (English for any other), with ``params`` filled in."""
        if language == "fr":
            return french(self.fr, params) if params else self.fr
        return self.en.format(**params) if params else self.en

    def filled(self, **params: object) -> Localized:
        """The text with ``params`` filled in, in every language; a Localized parameter (an
        amount written each language's way) reads in the text's own language."""
        return Localized(self.en.format(**_in("en", params)), french(self.fr, _in("fr", params)))


#: A French template's "de" right before a value filled in: "la remise de {who}".
_DE_BEFORE = re.compile(r"\b([Dd])e \{(\w+)\}")
#: A value French elides "de" before: it begins with a vowel (a capital, as a name's), and a
#: Y only before a consonant ("d'Yves", "de Yasmine"); an h, muet or not, is left alone.
_ELIDING = re.compile(r"[AEIOUÀÂÆÉÈÊËÎÏÔŒÙÛÜ]|Y(?![aeiouyà-ÿ])")
#: Per French template: the placeholders "de" stands right before, or () (most templates).
_AFTER_DE: dict[str, tuple[str, ...]] = {}


def french(template: str, params: Mapping[str, object]) -> str:
    """A French template filled in, its "de" before a value that begins with a vowel elided
    as French writes it ("la remise de {who}" with Ella Novak reads "la remise d'Ella
    Novak"). Only that "de" is: the values themselves (a name's own particle, "Ana de Armas";
    words quoted back to someone) are filled in as they are."""
    names = _AFTER_DE.get(template)
    if names is None:
        names = _AFTER_DE[template] = tuple(m.group(2) for m in _DE_BEFORE.finditer(template))
    if names and any(_eliding(params.get(name)) for name in names):
        template = _DE_BEFORE.sub(
            lambda m: (
                f"{m.group(1)}'{{{m.group(2)}}}" if _eliding(params.get(m.group(2))) else m.group(0)
            ),
            template,
        )
    return template.format(**params)


def de(value: str) -> str:
    """French "de" and ``value``, elided before a vowel: "d'Ella Novak", "de Lucas Roy"."""
    return f"d'{value}" if _eliding(value) else f"de {value}"


def _eliding(value: object) -> bool:
    return isinstance(value, str) and _ELIDING.match(value) is not None


def _in(language: str, params: dict[str, object]) -> dict[str, object]:
    return {
        key: value.text(language) if isinstance(value, Localized) else value
        for key, value in params.items()
    }


@dataclass(frozen=True)
class DemoScene:
    """How ``countersign demo`` shows an operation the story tells no chapter of: what a
    manager of the seeded Granite club says to the operation's section's assistant (the
    offline stand-in model turns the words into its proposal), and who approves it. An
    operation's stand-in module declares it; its texts class names it as ``demo_scene``."""

    words: str | Localized
    """What the manager says, in the seeded club's names (members, leagues, orders): in every
    language the demo tells its story in (``Localized``), or in one (a plain string, shown as
    given whatever the demo's language). The offline stand-in model reads them as said."""
    approvers: tuple[str, ...] = ()
    """The seeded managers who approve it, by email, in turn; none: the one who asked."""
    order: str | None = None
    """For a section whose assistant works on one order: the seeded order the words are
    about, by its name in the seed (``"refund-ok"``); None where the section has one record
    per club (the roster, the broadcast form)."""

    def said(self, language: str) -> str:
        """The words Ava says when the demo is told in ``language``."""
        return self.words.text(language) if isinstance(self.words, Localized) else self.words


EFFECT_UNCERTAIN = Localized(
    "The provider's answer was lost, so it is not yet known whether this took effect. "
    "countersign is confirming it with the provider, by asking about that same request: it "
    "never sends it twice. Do not do it again another way.",
    "La réponse du fournisseur a été perdue\u00a0: on ne sait pas encore si l'opération a eu "
    "lieu. countersign la confirme auprès du fournisseur, en l'interrogeant sur cette même "
    "demande\u00a0: il ne l'envoie jamais deux fois. Ne la refaites pas autrement.",
)
"""What a lost provider answer means, for an operation that does not say it in its own words."""

EFFECT_UNAVAILABLE = Localized(
    "The provider was unavailable and applied nothing: nothing has happened yet. countersign "
    "sends the same request, once, as soon as the provider answers again; do not do it "
    "another way.",
    "Le fournisseur était indisponible et n'a rien appliqué\u00a0: rien ne s'est encore "
    "produit. countersign lui renvoie la même demande, une seule fois, dès qu'il répond de "
    "nouveau\u00a0; ne la faites pas autrement.",
)
"""What a provider's outage before it applied anything means, for an operation that does not
say it in its own words."""

APPROVE = Localized("Approve: {title}", "Approuver : {title}")
"""The approve button of an operation that does not word it itself (``approve_label``)."""


class Shown(StrEnum):
    """How a preview value reads for people."""

    TEXT = "text"
    """``str(value)`` on one line."""
    MULTILINE = "multiline"
    """``str(value)``, its line breaks kept."""
    MONEY = "money"
    """An amount in cents, in the currency the preview's ``currency`` field names."""
    FLAG = "flag"
    """A yes/no value, read through the field's ``yes`` and ``no`` texts."""


MORE = Localized("{shown} (+{count} more)", "{shown} (+{count} autres)")
"""A list shown in part, and how many more it holds (``PreviewField.more``)."""
YES = Localized("yes", "oui")
NO = Localized("no", "non")


@dataclass(frozen=True)
class PreviewField:
    """One labelled row of a preview, in the order the contract declares its fields."""

    label: Localized
    shown: Shown = Shown.TEXT
    emphasis: bool = False
    """The row the reviewer reads first (the amount of a refund)."""
    yes: Localized = YES
    no: Localized = NO
    alert_when: bool | None = None
    """For a flag: the value the reviewer must not miss, shown as an alert."""
    words: Callable[[str, str], str] | None = None
    """For text the contract itself wrote into the preview (a resolved destination's label):
    how the stored value reads in a language, ``words(value, language)``. Stored previews keep
    the words they were written with; this reads old and new ones alike."""
    more: Callable[[Mapping[str, Any]], int] | None = None
    """For a list the preview shows in part (the first recipients): how many it leaves out,
    read from the whole stored preview; the row then ends with "(+4 more)"."""


@dataclass(frozen=True)
class RequestField:
    """How one field of the model-facing request reads on the Edit page, where a person
    changes what a proposal asked for: its label, a hint, and a label for each value it may
    choose from (a ``Literal``'s or an enum's)."""

    label: Localized
    hint: Localized | None = None
    options: Mapping[str, Localized] = dataclass_field(default_factory=dict)


@dataclass(frozen=True)
class PreviewRow:
    """One preview value as people read it, in one language."""

    key: str
    label: str
    value: str
    multiline: bool = False
    emphasis: bool = False
    alert: bool = False


def preview_rows(
    fields: Mapping[str, PreviewField], preview: Mapping[str, Any], language: str
) -> list[PreviewRow]:
    """The declared fields of a stored preview, in their declared order and ``language``."""
    currency = str(preview.get("currency") or "")
    rows = []
    for key, field in fields.items():
        if key not in preview:
            continue
        value = preview[key]
        label = field.label.text(language)
        if field.shown is Shown.MONEY:
            rows.append(
                PreviewRow(key, label, _money(value, currency, language), emphasis=field.emphasis)
            )
        elif field.shown is Shown.FLAG:
            text = (field.yes if value else field.no).text(language)
            alert = field.alert_when is not None and bool(value) is field.alert_when
            rows.append(PreviewRow(key, label, text, emphasis=field.emphasis, alert=alert))
        else:
            multiline = field.shown is Shown.MULTILINE
            if field.words is not None:
                text = field.words(str(value), language)
            elif _holds_money(value):
                text = _nested(value, currency, language)  # its lines, a line each
                multiline = multiline or "\n" in text
            else:
                text = str(value)
            left_out = field.more(preview) if field.more is not None else 0
            if left_out > 0:
                text = MORE.text(language, shown=text, count=left_out)
            rows.append(PreviewRow(key, label, text, multiline, field.emphasis))
    return rows


def fallback_fields(preview: Mapping[str, Any]) -> dict[str, PreviewField]:
    """Fields for a preview whose operation is no longer registered: every key but the
    currency, labelled by its name, read by its type."""
    fields = {}
    for key, value in preview.items():
        if key == "currency":
            continue
        label = Localized(key.replace("_", " "), key.replace("_", " "))
        if key.endswith("_cents"):
            fields[key] = PreviewField(label, Shown.MONEY)
        elif isinstance(value, bool):
            fields[key] = PreviewField(label, Shown.FLAG)
        else:
            fields[key] = PreviewField(label)
    return fields


def _holds_money(value: Any) -> bool:
    """Whether a list or a mapping holds an amount (``*_cents``), at any depth."""
    if isinstance(value, Mapping):
        return any(
            (isinstance(key, str) and key.endswith("_cents")) or _holds_money(item)
            for key, item in value.items()
        )
    if isinstance(value, list | tuple):
        return any(_holds_money(item) for item in value)
    return False


def _nested(value: Any, currency: str, language: str, between: str = "\n") -> str:
    """A list or mapping holding amounts as people read it, each amount as money: a list's
    items a line each (a list within an item: ", " between), a mapping's values in its
    order ("Setup fee · $25.00 CAD"). Its raw text read "[{'label': 'Setup fee',
    'amount_cents': 2500}]": cents, where a manager approves an amount."""
    if isinstance(value, Mapping):
        return " · ".join(
            _money(item, currency, language)
            if isinstance(key, str) and key.endswith("_cents")
            else _nested(item, currency, language, ", ")
            for key, item in value.items()
            if item is not None
        )
    if isinstance(value, list | tuple):
        return between.join(_nested(item, currency, language, ", ") for item in value)
    return str(value)


def _money(cents: Any, currency: str, language: str) -> str:
    try:
        return format_money(int(cents), currency, language)
    except (TypeError, ValueError):
        return str(cents)


@dataclass(frozen=True)
class PreviewChange:
    """One preview value an edit changed, as people read it before and after."""

    key: str
    label: str
    before: str
    after: str


def preview_changes(
    fields: Mapping[str, PreviewField],
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    language: str,
) -> list[PreviewChange]:
    """What a revision changed, field by field, in the declared order: the fields whose stored
    values differ (one only one of the two previews has reads as changed from, or to, "")."""
    old = {row.key: row for row in preview_rows(fields, before, language)}
    new = {row.key: row for row in preview_rows(fields, after, language)}
    changes = []
    for key in fields:
        if before.get(key) == after.get(key) or (key not in old and key not in new):
            continue
        label = (new.get(key) or old[key]).label
        was, now = old.get(key), new.get(key)
        changes.append(
            PreviewChange(key, label, was.value if was else "", now.value if now else "")
        )
    return changes
