"""A proposal in the terminal: its review card, the card of one just frozen or revised, why
it cannot be edited, and the report of an approval."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE
from countersign.domain.contracts.presentation import Localized
from countersign.domain.messages import (
    APPROVED_WITH_PASSKEY,
    POLICY_CHANGED,
    credential_note,
    origin_line,
    preview_rows_of,
)
from countersign.domain.outcomes import is_already_so
from countersign.domain.times import expiry, local_time
from countersign.infrastructure.entrypoints.cli.answers import NEXT_STEP
from countersign.infrastructure.entrypoints.cli.policy_words import describe_policy
from countersign.infrastructure.entrypoints.cli.render import box


def preview_rows(
    operation: str, preview: dict[str, Any], language: str = "en"
) -> list[tuple[str, str]]:
    """The preview's labelled rows, in the order the operation's contract declares."""
    return [(row.label, row.value) for row in preview_rows_of(operation, preview, language)]


def expires(
    value: Any, zone: str = DEFAULT_TIME_ZONE, now: datetime | None = None, language: str = "en"
) -> str:
    """'2026-11-30 04:00 EST (expires in 23 h)': in the club's zone, and how far away, as the
    pages write it ('30 nov. 2026, 4 h 00 HNE (expire dans 23 h)' in French)."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    shown = local_time(moment, zone, language)
    if now is None:
        return shown
    # Held together, as the pages' nowrap does: a card too narrow for the whole line moves
    # "(expires in 23 h)" to the next line rather than cut it after "23".
    distance = expiry(moment, now, language).replace(" ", _NBSP)
    return f"{shown} ({distance})"


_NBSP = "\N{NO-BREAK SPACE}"


_CARD = {
    "title": Localized("Review", "Examen"),
    "proposal": Localized("Proposal", "Proposition"),
    "operation": Localized("Operation", "Opération"),
    "requested_by": Localized("Requested by", "Demandée par"),
    "origin": Localized("Origin", "Origine"),
    "status": Localized("Status", "Statut"),
    "expires": Localized("Expires", "Expire le"),
    "approved_by": Localized("Approved by", "Approuvée par"),
    "outcome": Localized("Outcome", "Résultat"),
    "approvals": Localized("Approvals", "Approbations"),
    "policy": Localized("Policy", "Règle"),
    "revision_of": Localized("Revision of", "Révision de"),
    "superseded_by": Localized("Superseded by", "Remplacée par"),
    "withdrawn_by": Localized("Withdrawn by", "Retirée par"),
    "changed": Localized("Changed", "Modifié"),
    "unverified": Localized("NOT VOUCHED FOR", "NON GARANTIE"),
    "policy_changed": Localized("POLICY CHANGED", "RÈGLE MODIFIÉE"),
    "requester_barred": Localized("Your approval", "Votre approbation"),
}
"""The review card's own labels: the preview's rows are labelled by the operation's contract."""

_STATUS = {
    "pending": Localized("pending", "en attente"),
    "executing": Localized("executing", "en cours d'exécution"),
    "reconciling": Localized("reconciling", "en rapprochement"),
    "succeeded": Localized("succeeded", "réussie"),
    "revision_required": Localized("revision required", "révision requise"),
    "failed": Localized("failed", "échec"),
    "declined": Localized("declined", "refusée"),
    "expired": Localized("expired", "expirée"),
    "superseded": Localized("superseded", "remplacée"),
}
"""A proposal's status in words. English keeps the name --json gives (with spaces for its
underscores), which support searches for; a script reads --json. One revision required
reads otherwise: one already so owes nothing, and says so (``card_status``)."""


#: The refusals' reasons that are no status, in words (English as --json names them).
_REASONS = {
    "in_progress": Localized("in progress", "en cours d'exécution"),
    "not_pending": Localized("not pending", "plus en attente"),
    "not_found": Localized("not found", "introuvable"),
    "forbidden": Localized("forbidden", "non autorisée"),
}


def status_words(status: str, language: str = "en") -> str:
    known = _STATUS.get(status)
    return known.text(language) if known else status.replace("_", " ")


#: The status of a revision required because what it asked for already held, as the page's
#: outcome says it: nothing is owed. --json keeps ``status: revision_required`` and
#: ``outcome.already_so: true``, which scripts read.
_ALREADY_SO = Localized("nothing to do: it was already so", "rien à faire : c'était déjà le cas")


def _already_so(card: dict[str, Any]) -> bool:
    return is_already_so(card.get("outcome") if isinstance(card.get("outcome"), dict) else None)


def card_status(card: dict[str, Any], language: str = "en") -> str:
    """A card's status in words: "nothing to do: it was already so" for one that owes
    nothing, else its status's words."""
    if _already_so(card):
        return _ALREADY_SO.text(language)
    return status_words(card["status"], language)


_APPROVALS = Localized("{count} of {required}", "{count} sur {required}")
_NOTHING_CHANGED = Localized(
    "nothing: the same preview as the proposal it revises",
    "rien : le même aperçu que la proposition qu'elle révise",
)
_SHOW_IT = Localized("show it: {command}", "pour l'afficher : {command}")


def governance_rows(
    card: dict[str, Any], language: str = "en", actor: str | None = None
) -> list[tuple[str, str]]:
    """The card's approvals so far against what its policy requires, the policy it was frozen
    under (if any), the proposal it revises with what changed, and the one that replaced it."""

    def label(key: str) -> str:
        return _CARD[key].text(language)

    approvals = list(card.get("approvals") or [])
    required = int(card.get("approvals_required") or 1)
    count = _APPROVALS.text(language, count=len(approvals), required=required)
    credentials = list(card.get("approval_credentials") or [])
    signed = {a["approved_by"]: a["passkey"] for a in card.get("approval_passkeys") or []}
    named = []
    for email, how in zip(approvals, credentials + [None] * len(approvals), strict=False):
        note = " ".join(filter(None, (email, credential_note(how, language))))
        if email in signed:
            note += f", {APPROVED_WITH_PASSKEY.text(language, name=signed[email])}"
        named.append(note)
    rows = [(label("approvals"), f"{count} ({'; '.join(named)})" if approvals else count)]
    for lapsed in card.get("no_longer_counting") or []:
        rows.append(("", str(lapsed.get("message") or lapsed.get("reason"))))
    policy = card.get("policy")
    if policy:
        currency = (card.get("preview") or {}).get("currency")
        rows.append((label("policy"), describe_policy(policy["rule"], currency, language)))
    if card.get("revision_of"):
        rows.append((label("revision_of"), card["revision_of"]))
        changes = card.get("changes") or []
        colon = " :" if language == "fr" else ":"
        shown = [f"{c['label']}{colon} {c['before']} → {c['after']}" for c in changes]
        for i, line in enumerate(shown or [_NOTHING_CHANGED.text(language)]):
            rows.append((label("changed") if i == 0 else "", line))
    newer = card.get("superseded_by")
    if newer:
        command = f"countersign show {newer}" + (f" --as {actor}" if actor else "")
        # Withdrawn: another proposal's success changed what it relied on; not replaced.
        withdrawn = card.get("superseded_reason") == "withdrawn"
        rows.append((label("withdrawn_by" if withdrawn else "superseded_by"), newer))
        rows.append(("", _SHOW_IT.text(language, command=command)))
    return rows


def render_card(
    card: dict[str, Any],
    language: str = "en",
    now: datetime | None = None,
    actor: str | None = None,
) -> str:
    """The review card in ``language``: its frame, the preview's rows, its approvals and
    revisions, and the outcome. The operation stays the machine's name, which scripts and
    support search for."""

    def label(key: str) -> str:
        return _CARD[key].text(language)

    rows = [
        (label("proposal"), card["proposal_id"]),
        (label("operation"), card["operation"]),
        (label("requested_by"), card["requested_by"]),
    ]
    origin = origin_line(card.get("origin"), language, card.get("requested_through"))
    if origin:
        rows.append((label("origin"), origin))
    rows.append((label("status"), card_status(card, language)))
    if card.get("unverified"):  # its seals do not vouch for it (application/shown_seals.py)
        rows.append((label("unverified"), card["unverified"]["message"]))
    elif card.get("policy_changed"):  # approving it sends it back (policy_recheck.py)
        rows.append((label("policy_changed"), POLICY_CHANGED.text(language)))
    if card.get("requester_barred"):  # the reader requested it and may not approve it
        rows.append((label("requester_barred"), card["requester_barred"]))
    if card["status"] == "pending":  # a decided one no longer expires (as the page says)
        zone = card.get("time_zone") or "UTC"
        rows.append((label("expires"), expires(card["expires_at"], zone, now, language)))
    rows += preview_rows(card["operation"], card["preview"], language)
    rows += governance_rows(card, language, actor)
    if card.get("approved_by"):
        rows.append((label("approved_by"), card["approved_by"]))
    if card.get("message"):
        rows.append((label("outcome"), card["message"]))
    return box(label("title"), rows)


_CREATED = {
    "title": Localized("Review: approve or decline", "Examen : approuver ou refuser"),
    "supersedes": Localized("Supersedes", "Remplace"),
    "approvals": Localized(
        "{n} distinct people must approve it", "{n} personnes distinctes doivent l'approuver"
    ),
}


def render_created(
    created: dict[str, Any],
    zone: str = DEFAULT_TIME_ZONE,
    now: datetime | None = None,
    language: str = "en",
) -> str:
    """A proposal just frozen, in ``language``: what approving it will do."""

    def label(key: str) -> str:
        return _CARD[key].text(language)

    rows = [
        (label("proposal"), created["proposal_id"]),
        (label("operation"), created["operation"]),
        (label("status"), status_words(created["status"], language)),
        (label("expires"), expires(created["expires_at"], zone, now, language)),
    ]
    rows += preview_rows(created["operation"], created["preview"], language)
    required = int(created.get("approvals_required") or 1)
    if required > 1:
        rows.append((label("approvals"), _CREATED["approvals"].text(language, n=required)))
    if created.get("revision_of"):
        rows.append((label("revision_of"), created["revision_of"]))
    for i, old in enumerate(created.get("supersedes") or []):
        rows.append((_CREATED["supersedes"].text(language) if i == 0 else "", old))
    return box(_CREATED["title"].text(language), rows)


_REVISED = Localized(
    "Revision {new} of {old}: the contract ran again on the edited request.",
    "Révision {new} de {old} : le contrat a été appliqué de nouveau à la demande modifiée.",
)
_SUPERSEDED_NOW = Localized(
    "{old} is superseded: only the revision can be approved.",
    "{old} est remplacée : seule la révision peut être approuvée.",
)


def render_revision(
    created: dict[str, Any],
    card: dict[str, Any],
    language: str = "en",
    now: datetime | None = None,
    actor: str | None = None,
) -> str:
    """What an edit made: the new proposal's card, with what changed against the old one."""
    old = created["revision_of"]
    lines = [_REVISED.text(language, new=created["proposal_id"], old=old)]
    if old in (created.get("supersedes") or []):
        lines.append(_SUPERSEDED_NOW.text(language, old=old))
    return "\n".join([*lines, render_card(card, language, now, actor)])


_NOT_REVISABLE_ALREADY_SO = Localized(
    "Not revisable: what this proposal asked for was already so when it was approved, and "
    "nothing is left to do, so there is nothing to edit. For a different change, propose it "
    "anew (the assistant, or countersign propose). Nothing was changed.",
    "Modification impossible : ce que demandait cette proposition était déjà le cas quand "
    "elle a été approuvée, et il ne reste rien à faire ; il n'y a donc rien à modifier. Pour "
    "un autre changement, proposez-le de nouveau (l'assistant, ou countersign propose). Rien "
    "n'a été changé.",
)
_NOT_REVISABLE = Localized(
    "Not revisable: this proposal's status is {status}, and only a pending, declined, expired or "
    "revision-required proposal can be edited. Nothing was changed.",
    "Modification impossible : cette proposition a le statut {status}, et seule une "
    "proposition en attente, refusée, expirée ou à réviser peut être modifiée. Rien n'a été "
    "changé.",
)
_EDIT_NEWER = Localized(
    "Edit the newer one instead: countersign revise {newer} --as EMAIL --request JSON",
    "Modifiez plutôt la plus récente : countersign revise {newer} --as EMAIL --request JSON",
)


def render_not_revisable(
    status: str, superseded_by: str | None, language: str = "en", *, already_so: bool = False
) -> str:
    if already_so:  # it owes nothing: a different change is a new proposal
        return _NOT_REVISABLE_ALREADY_SO.text(language)
    lines = [_NOT_REVISABLE.text(language, status=status_words(status, language))]
    if superseded_by:
        lines.append("  " + _EDIT_NEWER.text(language, newer=superseded_by))
    return "\n".join(lines)


_RESULT = {
    "executed": Localized("Executed", "Exécutée"),
    "already_completed": Localized(
        "Already completed (stored outcome)", "Déjà terminée (résultat enregistré)"
    ),
    "declined": Localized("Declined", "Refusée"),
}
_NEEDS_RECONCILIATION = Localized("needs reconciliation", "rapprochement nécessaire")
#: An approval that found what it asked for already so, as the page's notice says it.
_ALREADY_SO_RESULT = {
    "executed": Localized(
        "Approved, but not executed: it was already so. Nothing is left to do.",
        "Approuvée, mais non exécutée : c'était déjà le cas. Il ne reste rien à faire.",
    ),
    "already_completed": Localized(
        "Already completed (stored outcome): it was already so. Nothing is left to do.",
        "Déjà terminée (résultat enregistré) : c'était déjà le cas. Il ne reste rien à faire.",
    ),
}
_APPROVED = Localized("Approved", "Approuvée")
_ALREADY_YOURS = Localized(
    "Already approved by you; nothing changed", "Déjà approuvée par vous ; rien n'a changé"
)
_AWAITING = Localized(
    "{headline}: {approvals} of {required} approvals; waiting for {waiting}.",
    "{headline} : {approvals} approbation(s) sur {required} ; en attente {waiting}.",
)
# French says "en attente d'un autre responsable": the "de" belongs to the value.
_ANOTHER_MANAGER = Localized("another manager", "d'un autre responsable")
_MORE_MANAGERS = Localized("{missing} more managers", "de {missing} autres responsables")
_NO_LONGER_COUNTS = Localized(
    "No longer counts: {who}'s approval ({reason}).",
    "Ne compte plus : l'approbation de {who} ({reason}).",
)
_LAPSED_REASONS = {
    "removed": Localized("no longer a member of the club", "n'est plus membre du club"),
    "lost_permission": Localized(
        "no longer holds the permission to approve it",
        "n'a plus la permission de l'approuver",
    ),
    "rejoined": Localized(
        "left the club and joined again since approving",
        "a quitté le club puis l'a rejoint depuis son approbation",
    ),
    "requester_barred": Localized(
        "requested it, and the club's policy no longer lets the requester approve it",
        "l'a demandée, et la règle du club ne permet plus à la personne qui la demande "
        "de l'approuver",
    ),
}
_WITHDRAWN = Localized(
    "Not approvable: withdrawn when {newer} was carried out, which changed what it relied "
    "on.\n  See what was done: {show}",
    "Non approuvable : retirée quand {newer} a été exécutée, ce qui a changé ce sur quoi "
    "elle reposait.\n  Voyez ce qui a été fait : {show}",
)
_SUPERSEDED = Localized(
    "Not approvable: superseded by a newer proposal, {newer}.\n  Review that one instead: {show}",
    "Non approuvable : remplacée par une proposition plus récente, {newer}.\n"
    "  Examinez plutôt celle-ci : {show}",
)
_NOT_APPROVABLE = {
    "passkey_required": Localized(
        "Not approvable: its approval policy requires each approval to be signed with the "
        "approver's passkey. Approve it on its page in the browser (or relay an assertion "
        "through the API's approval-challenge).",
        "Non approuvable : sa règle d'approbation exige que chaque approbation soit signée "
        "avec la clé d'accès de la personne qui approuve. Approuvez-la sur sa page dans le "
        "navigateur (ou relayez une assertion par l'approval-challenge de l'API).",
    ),
    "passkey_rejected": Localized(
        "Not approvable: the passkey assertion given does not verify; nothing changed.",
        "Non approuvable : l'assertion de clé d'accès donnée ne se vérifie pas ; rien n'a changé.",
    ),
    "not_verifiable_here": Localized(
        "Not approved: this proposal is sealed with a key this process does not hold yet (a "
        "seal key being rotated in), so it could not be verified here. Nothing changed, and it "
        "is still pending: approve it again once every process holds the key.",
        "Non approuvée : cette proposition est scellée avec une clé que ce processus n'a pas "
        "encore (une clé de scellement en cours de rotation) : elle n'a pas pu être vérifiée "
        "ici. Rien n'a changé, et elle attend toujours : approuvez-la de nouveau quand chaque "
        "processus aura la clé.",
    ),
    "operation_not_enabled": Localized(
        "Not approvable: its operation is not enabled in this deployment (the plug-in that "
        "adds it is not named in COUNTERSIGN_PLUGINS). Nothing changed: enable the plug-in again "
        "(countersign operations lists what is enabled) to approve or decline it.",
        "Non approuvable : son opération n'est pas activée dans ce déploiement (le module "
        "d'extension qui l'ajoute n'est pas nommé dans COUNTERSIGN_PLUGINS). Rien n'a changé : "
        "réactivez le module d'extension (countersign operations liste ce qui est activé) "
        "pour l'approuver ou la refuser.",
    ),
    "requester_may_not_approve": Localized(
        "Not approvable: its approval policy does not let the person who requested it "
        "approve it; another manager must.",
        "Non approuvable : sa règle d'approbation ne permet pas à la personne qui l'a "
        "demandée de l'approuver ; un autre responsable doit le faire.",
    ),
}
_NOT_APPROVABLE_BECAUSE = Localized("Not approvable: {reason}.", "Non approuvable : {reason}.")


def render_report(report: dict[str, Any], actor: str | None = None, language: str = "en") -> str:
    """An approve or decline answer for a person, in ``language``; ``actor`` completes the
    command that shows a newer proposal. The outcome's own sentence is the report's
    ``message``, which the caller gives in the same language."""
    if report["result"] == "awaiting_approvals":
        return _awaiting(report, language)
    if report["result"] == "not_approvable":
        return _not_approvable(report, actor, language)
    outcome = report.get("outcome") or {}
    said = _ALREADY_SO_RESULT.get(report["result"]) if _already_so(report) else None
    if said is not None:
        return f"{said.text(language)}\n  {report.get('message') or ''}".rstrip()
    headline = _RESULT[report["result"]].text(language)
    if report["result"] == "declined":  # its stored outcome's kind is no word for a decline
        return f"{headline}.\n  {report.get('message') or ''}".rstrip()
    kind = str(outcome.get("kind", ""))
    word = (
        _NEEDS_RECONCILIATION.text(language)
        if kind == "needs_reconciliation"
        else status_words(kind, language)
    )
    colon = " :" if language == "fr" else ":"
    return f"{headline}{colon} {word}.\n  {report.get('message') or ''}".rstrip()


def _awaiting(report: dict[str, Any], language: str) -> str:
    """'Approved: 1 of 2 approvals; waiting for another manager.'"""
    approvals, required = int(report["approvals"]), int(report["required"])
    missing = required - approvals
    waiting = (
        _ANOTHER_MANAGER.text(language)
        if missing == 1
        else _MORE_MANAGERS.text(language, missing=missing)
    )
    mine = report.get("reason") == "already_approved_by_you"
    headline = (_ALREADY_YOURS if mine else _APPROVED).text(language)
    text = _AWAITING.text(
        language, headline=headline, approvals=approvals, required=required, waiting=waiting
    )
    for lapsed in report.get("no_longer_counting") or []:
        code = str(lapsed.get("reason"))
        known = _LAPSED_REASONS.get(code)
        reason = known.text(language) if known else code
        who = lapsed.get("approved_by")
        text += "\n  " + _NO_LONGER_COUNTS.text(language, who=who, reason=reason)
    return text


def _not_approvable(report: dict[str, Any], actor: str | None, language: str) -> str:
    reason = str(report["reason"])
    if reason == "superseded" and report.get("superseded_by"):
        newer = report["superseded_by"]
        show = f"countersign show {newer}" + (f" --as {actor}" if actor else "")
        told = _WITHDRAWN if report.get("superseded_reason") == "withdrawn" else _SUPERSEDED
        return told.text(language, newer=newer, show=show)
    known = _NOT_APPROVABLE.get(reason)
    if known is not None:
        return known.text(language)
    words = _REASONS[reason].text(language) if reason in _REASONS else None
    text = _NOT_APPROVABLE_BECAUSE.text(language, reason=words or status_words(reason, language))
    if report.get("message"):  # a declined or expired proposal's stored outcome, in words
        text += f"\n  {report['message']}"
    elif reason in NEXT_STEP:
        show = f"countersign show {report['proposal_id']}" + (f" --as {actor}" if actor else "")
        text += "\n  " + NEXT_STEP[reason].text(language, show=show, actor=actor or "EMAIL")
    return text
