"""What ``audit verify`` says of the chain and of the seals, in the reader's language (the
words in audit_words.py; what it says of an anchor, anchors.py): the verdict, what the chain
cannot prove, and each fault named, ``SHOWN`` of each listed."""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.entrypoints.cli import audit_words as words
from countersign.infrastructure.entrypoints.cli import snapshot_words
from countersign.infrastructure.entrypoints.cli.service_words import number

#: What to do when a seal names a key this process does not hold (a key rotated out too soon,
#: or a command run without the deployment's keys): it cannot be checked here.
LIST_THE_KEY = Localized(
    "  A seal made with a key not configured here ({keys}) cannot be checked: if the "
    "deployment holds that key (one rotated out too soon, or a command run without the "
    "services' keys), list it in COUNTERSIGN_SEAL_KEYS (or COUNTERSIGN_SEAL_KEYS_FILE) below "
    "the sealing key and run audit verify again; a key the deployment never held was not "
    "its seal.",
    "  Un sceau fait avec une clé non configurée ici ({keys}) ne peut pas être vérifié : si "
    "le déploiement détient cette clé (une clé retirée trop tôt, ou une commande lancée sans "
    "les clés des services), listez-la dans COUNTERSIGN_SEAL_KEYS (ou "
    "COUNTERSIGN_SEAL_KEYS_FILE) sous la clé de scellement et relancez audit verify ; une clé "
    "que le déploiement n'a jamais détenue n'a pas fait son sceau.",
)


def unlinked_and_unread(report: dict[str, Any], language: str) -> str:
    """What the chain cannot prove of the times, and the streams it did not read."""
    said = ""
    if report["events_with_unlinked_times"]:
        count = number(report["events_with_unlinked_times"], language)
        said += words.UNLINKED.text(language, count=count)
    unread = report["streams_not_read"]
    if unread:
        streams = ", ".join(f"{p} ({number(n, language)})" for p, n in unread.items())
        said += words.UNREAD.text(language, streams=streams)
    return said


def verified(report: dict[str, Any], more: str, language: str) -> str:
    """``audit verify``'s line when every link holds; ``more``: what follows it."""
    return words.VERIFIED.text(
        language,
        events=words.many(words.EVENTS_COUNTED, report["events_checked"], language),
        proposals=words.many(words.PROPOSALS_COUNTED, report["proposals_checked"], language),
        more=more,
    )


def broken_text(report: dict[str, Any], language: str) -> list[str]:
    """The proposals whose chain is broken, each at its first broken link (``SHOWN``)."""
    count = report["broken_proposals"]
    if not count:
        return []
    lines = [words.many(words.BROKEN, count, language)]
    shown = report["broken_links"][: words.SHOWN]
    lines += [
        words.BROKEN_LINK.text(
            language,
            id=b["proposal_id"],
            version=b["version"],
            problem=problem(b, language),
        )
        if b["version"] is not None
        # no event of it read: no version to name (``events_unreadable``)
        else words.UNREADABLE_AT_ALL.text(language, id=b["proposal_id"], error=b.get("error"))
        for b in shown
    ]
    if count > len(shown):
        more, listed = count - len(shown), len(report["broken_links"])
        lines.append(_more(words.MORE, more, language, listed=number(listed, language)))
    lines.append(BROKEN_NEXT.text(language))
    return lines


#: What an auditor does about a broken chain: a stored record that does not verify proves
#: nothing, and the command said only where it broke.
BROKEN_NEXT = Localized(
    "  What to do: read each one with `countersign history ID` (what is stored now) and "
    'compare it with the same proposal in a backup made before (docs/deploy.md, "Backups and '
    'restore"); restore what was changed from it.',
    "  Que faire : lisez chacune avec `countersign history ID` (ce qui est enregistré "
    "maintenant), comparez-la à la même proposition dans une sauvegarde antérieure "
    "(docs/deploy.md, « Backups and restore ») et restaurez à partir de celle-ci ce qui a "
    "été modifié.",
)
#: What a failed check still found true (the times it cannot prove, the seals and the anchor
#: that held, the events recorded after the anchor), said after its faults as an OK says it.
STILL_SAID = Localized("audit verify:{more}", "audit verify :{more}")


def still_said(more: str, language: str) -> list[str]:
    """The line a failed check ends with: what ``more`` says of what held (an OK check says
    it after its verdict), or nothing."""
    return [STILL_SAID.text(language, more=more)] if more else []


def _more(text: Localized, more: int, language: str, **params: str) -> str:
    return text.text(language, more=number(more, language), **params)


def seals_summary(seals: dict[str, Any], language: str = "en") -> str:
    """What the seals showed, after the chain's verdict (with seal keys configured)."""
    text = words.many(words.SEALED, seals["sealed_proposals"], language)
    unsealed = seals["unsealed_proposals"]
    if unsealed and not seals["required"]:
        text += words.many(words.UNSEALED_ALLOWED, unsealed, language)
    return text + "."


def seal_faults_text(seals: dict[str, Any], language: str = "en") -> str:
    """The proposals whose seal does not verify, each named (``SHOWN`` of them), and,
    where every proposal must be sealed (``--require-seals``), those without a seal."""
    lines: list[str] = []
    count = seals["badly_sealed_proposals"]
    if count:
        lines.append(words.many(words.BADLY_SEALED, count, language))
        shown = seals["badly_sealed"][: words.SHOWN]
        lines += [
            words.PROPOSAL_ITEM.text(language, id=b["proposal_id"], said=seal_problem(b, language))
            for b in shown
        ]
        if count > len(shown):
            lines.append(_more(words.MORE_ALL_LISTED, count - len(shown), language))
        missing = sorted(
            {str(b["key_id"]) for b in seals["badly_sealed"] if b.get("code") == "unknown_key"}
            - {"None"}
        )
        if missing:
            keys = ", ".join(repr(key) for key in missing)
            lines.append(LIST_THE_KEY.text(language, keys=keys))
    unsealed = seals["unsealed_proposals"]
    if seals["required"] and unsealed:
        lines.append(words.many(words.UNSEALED, unsealed, language))
        listed = seals["unsealed"][: words.SHOWN]
        for u in listed:
            at = u["proposed_at"]
            when = (
                words.AT_A_TIME.text(language, time=at)
                if at
                else words.AT_AN_UNREADABLE_TIME.text(language)
            )
            lines.append(words.PROPOSED_AT.text(language, id=u["proposal_id"], at=when))
        if unsealed > len(listed):
            lines.append(_more(words.MORE_FIRST_LISTED, unsealed - len(listed), language))
    return "\n".join(lines)


def seal_problem(bad: dict[str, Any], language: str) -> str:
    """A badly sealed proposal's problem (``--json``'s ``seals.badly_sealed`` entry), in
    ``language``: the French from its code, the event and the key; the English, and a code
    this module does not know, as the report words it."""
    code = bad.get("code")
    if language != "fr" or code not in words.SEAL_PROBLEMS_FR:
        return str(bad["problem"])
    of_proposal, of_event = words.SEAL_PROBLEMS_FR[code]
    named, unnamed = words.SEAL_KEY_FR[code]
    key_id = bad.get("key_id")
    key = unnamed if key_id is None else named.format(key_id=key_id)
    said = of_proposal if bad["version"] == 1 else of_event
    return said.format(version=bad["version"], event=bad["event"], key=key)


def problem(broken: dict[str, Any], language: str) -> str:
    """A broken link's problem (``--json``'s ``broken_links`` entry) in ``language``, from
    its code and the fields its words name; a code this module does not know, as the report
    words it (every code the check emits has words: tests/test_audit_verify.py)."""
    words_of = words.LINK_PROBLEMS.get(broken.get("code", ""))
    if words_of is None:
        return str(broken["problem"])
    return words_of.text(language, error=broken.get("error", ""))


def snapshot_faults_text(snapshots: dict[str, Any], language: str = "en") -> str:
    """The stored snapshots that are not their events replayed, each named (``SHOWN``)."""
    lines = [
        snapshot_words.SNAPSHOTS_NOT_AS_EVENTS.text(
            language,
            count=number(snapshots["not_as_events"], language),
            checked=number(snapshots["checked"], language),
        )
    ]
    lines += [
        snapshot_words.SNAPSHOT_LINE.text(
            language, **{**d, "problem": _snapshot_problem(d, language)}
        )
        for d in snapshots["differences"][: words.SHOWN]
    ]
    return "\n".join(lines)


def _snapshot_problem(difference: dict[str, Any], language: str) -> str:
    """A snapshot's problem in ``language`` from its code (a code without words, as is)."""
    said = snapshot_words.SNAPSHOT_PROBLEMS.get(difference["problem"])
    return str(difference["problem"]) if said is None else said.text(language)
