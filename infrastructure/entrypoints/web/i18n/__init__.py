"""The browser's words in English and French, and which language a request gets.

Outcome messages are not here: they are the application's own texts from
``domain.messages.outcome_message`` and ``domain.handback``. Nor is anything about one
operation: its title, headline, preview labels and edit-form labels are its contract's
(``preview_fields``, ``request_fields``).
Nor anything about one section: its names, chat texts and read-tool labels are its
assistant's (``SectionTexts``), which the translator reads from the registered sections as
they are now (``section_texts``: ``section.<name>``, ``chat.title.<name>``,
``chat.lead.<name>``, ``chat.placeholder.<name>``, ``start.<name>``, ``chat.read.<tool>``).
This catalogue holds only the pages' own labels, headings and notices.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from countersign.application.assistant.sections import ASSISTANTS
from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.presentation import Localized, french
from countersign.infrastructure.entrypoints.web.i18n import (
    account,
    frame,
    history,
    inbox,
    members,
    policies,
    proposals,
    webhooks,
)

LANGUAGES = ("en", "fr")
DEFAULT_LANGUAGE = "en"

#: The pages' own words by area (a module each), then every section's (below).
_AREAS = (frame, inbox, proposals, history, webhooks, members, account, policies)

TEXTS: dict[str, dict[str, str]] = {
    "en": {key: text for area in _AREAS for key, text in area.EN.items()},
    "fr": {key: text for area in _AREAS for key, text in area.FR.items()},
}


_ONLY_PROPOSES = Localized(
    "It can only propose ({operations}); nothing happens until you approve.",
    "Il peut seulement proposer ({operations}) ; rien ne se passe avant votre approbation.",
)


def _section_texts(language: str) -> dict[str, str]:
    """Every registered section's texts in ``language``: see the module's docstring."""
    texts: dict[str, str] = {}
    for section, assistant in ASSISTANTS.items():
        words = assistant.texts
        separator = " ; " if language == "fr" else "; "
        titles = separator.join(c.title.text(language).lower() for c in assistant.contracts)
        only = _ONLY_PROPOSES.text(language, operations=titles)
        texts[f"section.{section}"] = words.name.text(language)
        texts[f"chat.title.{section}"] = words.assistant.text(language)
        texts[f"chat.lead.{section}"] = f"{words.lead.text(language)} {only}"
        texts[f"chat.placeholder.{section}"] = words.placeholder.text(language)
        if words.start is not None:
            texts[f"start.{section}"] = words.start.text(language)
        for tool in assistant.read_tools:
            if tool.label is not None:
                texts[f"chat.read.{tool.name}"] = tool.label.text(language)
    return texts


NBSP = "\N{NO-BREAK SPACE}"


def french_typography(text: str) -> str:
    """French spacing: a non-breaking space before ``:``, ``;``, ``?`` and ``!`` and inside
    « », so a line never starts with the sign (applied to the catalogue's own words only,
    never to what people or models wrote)."""
    text = re.sub(r" ([:;?!])(?=\s|$)", NBSP + r"\1", text)
    return text.replace("« ", "«" + NBSP).replace(" »", NBSP + "»")


TEXTS["fr"] = {key: french_typography(text) for key, text in TEXTS["fr"].items()}

#: The sections' texts by language, with the assistants and contracts they were made from
#: (held, so that none is replaced by another at the same address): made again when either
#: changes (a deployment's plug-ins are enabled after this module may have been imported, a
#: plug-in may add an operation to a built-in section, and a test switches them), so a
#: plug-in's section is never shown by its keys nor a lead without its operations.
_SECTIONS: dict[str, tuple[tuple[object, ...], dict[str, str]]] = {}


def _same(these: tuple[object, ...], those: tuple[object, ...]) -> bool:
    return len(these) == len(those) and all(a is b for a, b in zip(these, those, strict=True))


def section_texts(language: str) -> dict[str, str]:
    """Every registered section's texts in ``language`` (see the module's docstring)."""
    made_from = (*ASSISTANTS.values(), *REGISTRY.values())
    cached = _SECTIONS.get(language)
    if cached is None or not _same(cached[0], made_from):
        texts = _section_texts(language)
        if language == "fr":
            texts = {key: french_typography(text) for key, text in texts.items()}
        cached = _SECTIONS[language] = (made_from, texts)
    return cached[1]


def translator(language: str) -> Callable[..., str]:
    """``t(key, **params)`` in ``language``, falling back to English, then to the key."""
    if language not in TEXTS:
        language = DEFAULT_LANGUAGE
    catalogue, sections = TEXTS[language], section_texts(language)
    fallback, fallback_sections = TEXTS[DEFAULT_LANGUAGE], section_texts(DEFAULT_LANGUAGE)

    def t(key: str, **params: object) -> str:
        # A count of one reads in the singular where the text has one ("1 member").
        if params.get("count", params.get("total")) == 1 and f"{key}.one" in catalogue:
            key = f"{key}.one"
        template = (
            catalogue.get(key)
            or sections.get(key)
            or fallback.get(key)
            or fallback_sections.get(key)
            or key
        )
        if not params:
            return template
        # "Permissions de {name}" with Ella reads "Permissions d'Ella".
        return french(template, params) if language == "fr" else template.format(**params)

    return t


def negotiate(chosen: str | None, accept_language: str | None) -> str:
    """The session's choice if any, else the best of Accept-Language, else English."""
    if chosen in LANGUAGES:
        return chosen
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate((accept_language or "")[:512].split(",")[:20]):
        pieces = [piece.strip() for piece in part.split(";")]
        tag = pieces[0].lower()
        quality = 1.0
        for parameter in pieces[1:]:
            name, _, value = parameter.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        primary = tag.split("-", 1)[0]
        if primary in LANGUAGES and quality > 0:
            ranked.append((-quality, index, primary))
    return sorted(ranked)[0][2] if ranked else DEFAULT_LANGUAGE
