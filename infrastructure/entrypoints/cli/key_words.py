"""What ``audit verify`` and ``audit anchor`` say of a stored event whose key is no key (its
stream id not a UUID, its version not a whole number from 1: persistence/stored_keys.py), in
English and French: verify's lines (``malformed_keys``) and anchor's refusal."""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.entrypoints.cli.audit_words import LINK_PROBLEMS, SHOWN, many
from countersign.infrastructure.entrypoints.cli.service_words import number

MALFORMED = (
    Localized(
        "audit verify: BROKEN: {count} stored event has a key that is not one (it is in no "
        "stream, or at no place in one):",
        "audit verify : ROMPUE : {count} événement enregistré a une clé qui n'en est pas une "
        "(il n'est dans aucun flux, ou à aucune place dans le sien) :",
    ),
    Localized(
        "audit verify: BROKEN: {count} stored events have a key that is not one (each is in no "
        "stream, or at no place in one):",
        "audit verify : ROMPUE : {count} événements enregistrés ont une clé qui n'en est pas "
        "une (chacun n'est dans aucun flux, ou à aucune place dans le sien) :",
    ),
)
#: Each such event: its problem (audit_words.LINK_PROBLEMS, by the entry's code) and the fix.
MALFORMED_LINE = Localized(
    "  {problem}: restore it from a backup", "  {problem} : restaurez-le depuis une sauvegarde"
)
MORE = Localized("  and {more} more (--json lists them)", "  et {more} de plus (--json les liste)")
#: ``audit anchor`` refusing a log that holds one (exit 2): no anchor is made.
NO_ANCHOR = Localized(
    "{problem}, so no anchor was made: `countersign audit verify` names every such event; "
    "restore it from a backup",
    "{problem}, donc aucune ancre n'a été faite : `countersign audit verify` nomme chacun de "
    "ces événements ; restaurez-le depuis une sauvegarde",
)


def problem(code: str, position: int | None, value: str) -> Localized:
    """The problem of a stored event whose key is no key, in both languages."""
    return LINK_PROBLEMS[code].filled(position="?" if position is None else position, value=value)


def malformed_text(report: dict[str, Any], language: str) -> list[str]:
    """``audit verify``'s lines of the stored events whose key is no key (``SHOWN`` of them)."""
    count = report.get("malformed_key_count", 0)
    if not count:
        return []
    listed = report["malformed_keys"][:SHOWN]
    lines = [many(MALFORMED, count, language)]
    lines += [
        MALFORMED_LINE.text(
            language, problem=problem(m["code"], m["log_position"], m["value"]).text(language)
        )
        for m in listed
    ]
    if count > len(listed):
        lines.append(MORE.text(language, more=number(count - len(listed), language)))
    return lines
