"""App-authored hand-back text for outcomes. The model never paraphrases an outcome.

Reason codes are localizable: every code has an English and a French sentence, declared by the
contract that raises it or, for the lifecycle's own reasons, here. Parameters ending in
``_cents`` are formatted as money in the reason's ``currency``.
"""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts import REGISTRY, REVISION_REASONS
from countersign.domain.contracts.presentation import (
    EFFECT_UNAVAILABLE,
    EFFECT_UNCERTAIN,
    LANGUAGES,
    Localized,
)
from countersign.domain.money import format_money
from countersign.domain.outcomes import (
    NeedsReconciliation,
    Outcome,
    RevisionReason,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)

SHARED_REASONS: dict[str, Localized] = {
    "declined_by_manager": Localized(
        "The manager declined this proposal.", "Le gestionnaire a refusé cette proposition."
    ),
    "resource_unavailable": Localized(
        "The record this proposal acts on is no longer available.",
        "L'élément visé par cette proposition n'est plus disponible.",
    ),
    # The club's approval policy asks more of a pending proposal than the one it was frozen
    # under (application/policy_recheck.py): it fails closed at its next approval.
    "policy_raised": Localized(
        "The club's approval policy for this operation changed after this was proposed and "
        "now asks more of it (more approvals, a passkey, or an approver other than the "
        "requester), so it was not approved under the old one. The requester should propose "
        "it again, to be decided under the policy now in force.",
        "La politique d'approbation du club pour cette opération a changé depuis cette "
        "proposition et en demande désormais davantage (plus d'approbations, une clé d'accès "
        "ou un approbateur autre que le demandeur) : elle n'a donc pas été approuvée selon "
        "l'ancienne. Le demandeur doit la proposer de nouveau, pour qu'elle soit décidée selon "
        "la politique en vigueur.",
    ),
    # A proposal set aside at approval because its record does not verify against its seal
    # (application/seal_check.py); ``reference`` is the correlation id in the logs.
    "proposal_unsealed": Localized(
        "This proposal has no seal from this server (it was made before proposals were "
        "sealed, or its seal was removed), so what it says could not be verified and it was "
        "not approved. Reference: {reference}.",
        "Cette proposition n'a pas de sceau de ce serveur (elle date d'avant le scellement des "
        "propositions, ou son sceau a été retiré) : son contenu n'a pas pu être vérifié et "
        "elle n'a pas été approuvée. Référence : {reference}.",
    ),
    "proposal_seal_invalid": Localized(
        "This proposal's stored record is not the one sealed when it was proposed, so it was "
        "not approved. Reference: {reference}.",
        "L'enregistrement de cette proposition n'est plus celui qui a été scellé lors de sa "
        "création : elle n'a pas été approuvée. Référence : {reference}.",
    ),
    "proposal_seal_key_unknown": Localized(
        "This proposal was sealed with the key {key_id}, which this server does not hold, so "
        "it could not be verified and was not approved. Reference: {reference}.",
        "Cette proposition a été scellée avec la clé {key_id}, que ce serveur n'a pas : elle "
        "n'a pas pu être vérifiée et n'a pas été approuvée. Référence : {reference}.",
    ),
}
"""Reasons the lifecycle itself records, whatever the operation. Each contract declares the
reasons it raises (``revision_reasons``)."""

REGISTRY.reserve_reasons(SHARED_REASONS)  # a contract may not redeclare one (when it loads)

OUTCOME_TITLES: dict[str, Localized] = {
    "succeeded": Localized("Done", "Terminé"),
    "needs_reconciliation": Localized(
        "Confirming with the provider: do not do it again",
        "Confirmation auprès du fournisseur\u00a0: ne la refaites pas",
    ),
    "revision_required": Localized(
        "Not executed: nothing changed", "Non exécutée : rien n'a changé"
    ),
    "already_so": Localized(
        "Nothing to do: it was already so", "Rien à faire : c'était déjà le cas"
    ),
    "declined": Localized("Declined: nothing changed", "Refusée : rien n'a changé"),
    "terminal_failure": Localized("Failed: nothing changed", "Échec : rien n'a changé"),
    "unverified_record": Localized(
        "Set aside: its record failed an integrity check",
        "Mise de côté : son enregistrement a échoué à un contrôle d'intégrité",
    ),
}
"""The headline of each kind of outcome (a decline, and a revision required because what it
asked for already holds, are revision-required outcomes of their own kinds here), unless the
operation words it itself (``OperationContract.outcome_titles``, which may also word one
revision reason: ``"revision_required:<code>"``)."""

SUPERSEDED: dict[str, Localized] = {
    "revision": Localized(
        "Replaced by an edit: this proposal will not run, and nothing was changed by it. "
        "The edited proposal: {headline} (proposal {proposal_id}).",
        "Remplacée par une modification : cette proposition ne sera pas exécutée et n'a rien "
        "modifié. La proposition modifiée : {headline} (proposition {proposal_id}).",
    ),
    "newer": Localized(
        "Replaced by a newer proposal for the same thing: this proposal will not run, and "
        "nothing was changed by it. The newer proposal: {headline} (proposal {proposal_id}).",
        "Remplacée par une proposition plus récente pour la même chose : cette proposition ne "
        "sera pas exécutée et n'a rien modifié. La plus récente : {headline} "
        "(proposition {proposal_id}).",
    ),
    "executed": Localized(
        "Out of date: another proposal was carried out and changed what this one relied on. "
        "This proposal will not run, and nothing was changed by it. The one carried out: "
        "{headline} (proposal {proposal_id}).",
        "Dépassée : une autre proposition a été exécutée et a changé ce sur quoi reposait "
        "celle-ci. Cette proposition ne sera pas exécutée et n'a rien modifié. Celle qui a été "
        "exécutée : {headline} (proposition {proposal_id}).",
    ),
}
"""What the conversation is told when its proposal is superseded, by how it was replaced:
by an edit of it (``revision``), by a newer proposal for the same thing (``newer``), or by
another proposal whose execution made its preview stale (``executed``)."""

AWAITING_APPROVALS = Localized(
    "Approved by {approvals} of {required}. Nothing has changed yet: it runs once the "
    "remaining approvals are given.",
    "Approuvée par {approvals} sur {required}. Rien n'a encore changé : elle sera exécutée "
    "une fois les approbations restantes données.",
)
"""What the conversation is told when its proposal has some, not all, of its approvals."""

_FIXED: dict[str, dict[str, str]] = {
    "en": {
        "revision": (
            "Nothing was changed. {reason} Ask the assistant for a new proposal if it is "
            "still needed."
        ),
        "revision_under_title": (
            "{reason} Ask the assistant for a new proposal if it is still needed."
        ),
        "already_so": (
            "Nothing was changed. {reason} That is already what this proposal asked for, so "
            "nothing is left to do."
        ),
        "failure": (
            "Nothing was changed: an internal error stopped this proposal, and it will not be "
            "retried. Give support this reference: {correlation_id}"
        ),
        "unverified_record": (
            "This proposal's record failed an integrity check, so it was set aside: nothing "
            "was executed from it, and it will not be retried. Quote this reference to whoever "
            "runs countersign: {correlation_id}"
        ),
        "unknown_reason": "A fact the proposal relied on has changed.",
        "done": (
            "Carried out as approved. Its operation is no longer enabled here, so its details "
            "are in the proposal's history."
        ),
        "not_enabled": (
            "Its operation is not enabled here (the plug-in that adds it is not named in "
            "COUNTERSIGN_PLUGINS): nobody can approve or decline it until the plug-in is "
            "enabled again, and nothing has changed."
        ),
    },
    "fr": {
        "revision": (
            "Rien n'a été modifié. {reason} Demandez à l'assistant une nouvelle proposition si "
            "elle est toujours nécessaire."
        ),
        "revision_under_title": (
            "{reason} Demandez à l'assistant une nouvelle proposition si elle est toujours "
            "nécessaire."
        ),
        "already_so": (
            "Rien n'a été modifié. {reason} C'est déjà ce que demandait cette proposition ; "
            "il ne reste donc rien à faire."
        ),
        "failure": (
            "Rien n'a été modifié : une erreur interne a arrêté cette proposition, qui ne sera "
            "pas relancée. Donnez cette référence au soutien : {correlation_id}"
        ),
        "unverified_record": (
            "L'enregistrement de cette proposition a échoué à un contrôle d'intégrité : elle a "
            "été mise de côté, rien n'a été exécuté à partir de celui-ci, et elle ne sera pas "
            "relancée. Donnez cette référence à la personne qui administre countersign : "
            "{correlation_id}"
        ),
        "unknown_reason": "Un fait sur lequel reposait la proposition a changé.",
        "done": (
            "Effectué comme approuvé. Son opération n'est plus activée ici : ses détails sont "
            "dans l'historique de la proposition."
        ),
        "not_enabled": (
            "Son opération n'est pas activée ici (le module d'extension qui l'ajoute n'est pas "
            "nommé dans COUNTERSIGN_PLUGINS) : personne ne peut l'approuver ni la refuser tant "
            "que le module d'extension n'est pas réactivé, et rien n'a changé."
        ),
    },
}


def reason_text(reason: RevisionReason, language: str = "en") -> str:
    sentence = SHARED_REASONS.get(reason.code) or REVISION_REASONS.get(reason.code)
    if sentence is None:
        return _FIXED[_language(language)]["unknown_reason"]
    return sentence.text(_language(language), **_format_params(reason.params, language))


def revision_text_under_title(reason: RevisionReason, language: str = "en") -> str:
    """A revision's message under a headline that already says nothing changed (a decline's,
    "Declined: nothing changed"): its reason and what to do, without saying it again."""
    return _FIXED[_language(language)]["revision_under_title"].format(
        reason=reason_text(reason, language)
    )


def done_text(language: str = "en") -> str:
    """What a success says whose operation is no longer registered (a plug-in turned off):
    its contract, which alone can describe it, is gone."""
    return _FIXED[_language(language)]["done"]


def not_enabled_text(language: str = "en") -> str:
    """What a pending proposal says whose operation is not registered here (its plug-in
    turned off): why nobody can decide it, and what to do."""
    return _FIXED[_language(language)]["not_enabled"]


def outcome_text(
    outcome: Outcome,
    success_text: str,
    language: str = "en",
    uncertain: Localized = EFFECT_UNCERTAIN,
    unavailable: Localized = EFFECT_UNAVAILABLE,
) -> str:
    """The app-authored message for any outcome; ``success_text`` and what an uncertain
    effect means (``uncertain`` when the provider's answer was lost, ``unavailable`` when it
    applied nothing) come from the contract. Written for people: no API path, no code."""
    texts = _FIXED[_language(language)]
    if isinstance(outcome, Succeeded):
        return success_text
    if isinstance(outcome, RevisionRequired):
        said = "already_so" if outcome.already_so else "revision"
        return texts[said].format(reason=reason_text(outcome.reason, language))
    if isinstance(outcome, NeedsReconciliation):
        told = unavailable if outcome.cause == "provider_unavailable" else uncertain
        return told.text(_language(language))
    assert isinstance(outcome, TerminalFailure)
    said = "unverified_record" if outcome.cause == "unverified_record" else "failure"
    return texts[said].format(correlation_id=outcome.correlation_id)


def outcome_title_key(outcome: Outcome) -> str:
    """Which headline an outcome reads under: its kind, "declined" for a decline,
    "already_so" for a revision required because what it asked for already holds, or
    "unverified_record" for a failure whose record failed an integrity check."""
    if isinstance(outcome, RevisionRequired) and outcome.reason.code == "declined_by_manager":
        return "declined"
    if isinstance(outcome, RevisionRequired) and outcome.already_so:
        return "already_so"
    if isinstance(outcome, TerminalFailure) and outcome.cause is not None:
        return outcome.cause  # not the operation's failure: an operation's words do not fit
    return outcome.kind


def outcome_title_keys(outcome: Outcome) -> tuple[str, ...]:
    """The headlines an outcome may read under, the most particular first: a revision for a
    reason an operation words itself ("revision_required:refund_declined_by_provider"),
    then ``outcome_title_key``."""
    key = outcome_title_key(outcome)
    if isinstance(outcome, RevisionRequired) and key == "revision_required":
        return (f"{key}:{outcome.reason.code}", key)
    return (key,)


def _language(language: str) -> str:
    return language if language in LANGUAGES else "en"


def _format_params(params: dict[str, Any], language: str) -> dict[str, Any]:
    currency = str(params.get("currency", ""))
    return {
        key: format_money(int(value), currency, language) if key.endswith("_cents") else value
        for key, value in params.items()
    }
