"""What a reader is told of a proposal its seals do not vouch for (docs/design.md, "Seals").

With seal keys configured, the approve path sets aside a proposal whose record its seals do
not prove (application/seal_check.py), and ``audit verify`` names it. The reviewer deciding
on it reads it first: the card (the API, the command line) and the review page check the same
seals when they show it, and say so before anything else, in the reader's language, with what
approving it would do. The history checks the very events it lists, as stored
(``AuditService.checked_history``). The lists and the inbox show what is stored, unchecked.

A proposal that has no seal at all and is no longer pending was, most likely, made before the
keys were set: it is shown as it always was (approving it is no longer possible, so there is
nothing to warn of; ``audit verify`` counts it as unsealed). A pending one is named, since
approving it will set it aside; and any one is, where every proposal was sealed
(``SealKeys.required``, ``COUNTERSIGN_SEALS_REQUIRED``): its seal was removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from countersign.application.seal_check import reason_code, seal_problem
from countersign.domain.contracts.presentation import Localized
from countersign.domain.proposal import Proposal
from countersign.domain.seals import SealKeys, SealProblem, event_topic

#: What is wrong, by the reason its approval would record (seal_check.REASONS), for the
#: proposal's own seal.
_WHAT: dict[str, Localized] = {
    "proposal_unsealed": Localized(
        "This proposal has no seal from this server (it was made before proposals were "
        "sealed, or its seal was removed), so what it says cannot be verified.",
        "Cette proposition n'a pas de sceau de ce serveur (elle date d'avant le scellement des "
        "propositions, ou son sceau a été retiré) : son contenu ne peut pas être vérifié.",
    ),
    "proposal_seal_key_unknown": Localized(
        "This proposal was sealed with the key {key_id}, which this server does not hold, so "
        "what it says cannot be verified.",
        "Cette proposition a été scellée avec la clé {key_id}, que ce serveur n'a pas : son "
        "contenu ne peut pas être vérifié.",
    ),
    "proposal_seal_invalid": Localized(
        "This proposal's stored record is not the one sealed when it was proposed: it was "
        "changed in the database.",
        "L'enregistrement de cette proposition n'est plus celui qui a été scellé lors de sa "
        "création : il a été modifié dans la base de données.",
    ),
}
#: ``proposal_unsealed`` where every proposal is sealed (``SealKeys.required``).
_SEAL_REMOVED = Localized(
    "This proposal has no seal, and this server has sealed every proposal it made: its seal "
    "was removed in the database, so what it says cannot be verified.",
    "Cette proposition n'a pas de sceau, et ce serveur a scellé chacune de ses propositions : "
    "son sceau a été retiré dans la base de données, et son contenu ne peut pas être vérifié.",
)
#: An event after ``Proposed`` that no seal held here vouches for (made up, or changed).
_EVENT = Localized(
    "Its history holds an event that no seal of this server vouches for (event {version}: "
    "{what}), so what it shows cannot be trusted.",
    "Son historique contient un événement qu'aucun sceau de ce serveur ne garantit "
    "(événement {version} : {what}) : ce qu'elle affiche n'est pas fiable.",
)
#: What each event after ``Proposed`` records, as a reader names it (the API's
#: ``event_type`` keeps the class's name), by the event's class (``event_topic``): a
#: plug-in's class of the same name (its own ``Approved``) is not countersign's approval.
_EVENT_WORDS: dict[str, Localized] = {
    event_topic(getattr(Proposal, name)): words
    for name, words in {
        "Approved": Localized("an approval", "une approbation"),
        "ApprovalLapsed": Localized("an approval that no longer counts", "une approbation annulée"),
        "Claimed": Localized("its claim for execution", "sa prise en charge pour exécution"),
        "Revalidated": Localized(
            "its recheck before execution", "sa revérification avant exécution"
        ),
        "Succeeded": Localized("its success", "sa réussite"),
        "Failed": Localized("its failure", "son échec"),
        "Expired": Localized("its expiry", "son expiration"),
        "RevisionRequired": Localized("its revision required", "sa demande de révision"),
        "Reconciling": Localized("its reconciliation", "son rapprochement"),
        "Declined": Localized("its decline", "son refus"),
        "Superseded": Localized("its replacement", "son remplacement"),
    }.items()
}
#: Any other event (a plug-in's, which has no words of its own here): named by no class
#: name, which its author chose, and which may be one of countersign's.
_OTHER_EVENT = Localized(
    "an event countersign does not know", "un événement que countersign ne connaît pas"
)
_IF_APPROVED = Localized(
    "Approving it will not carry it out: countersign will set it aside and ask for a new proposal.",
    "L'approuver ne l'exécutera pas : countersign la mettra de côté et demandera une "
    "nouvelle proposition.",
)
#: For a seal under a key not held here: approving it here records nothing (seal_check).
_IF_APPROVED_HERE = Localized(
    "Approving it here changes nothing: a server that holds this key can verify it, and "
    "approve it.",
    "L'approuver ici ne change rien : un serveur qui a cette clé peut la vérifier, et l'approuver.",
)
_SHOWN = Localized(
    "What it shows may not be what happened.",
    "Ce qu'elle affiche n'est peut-être pas ce qui s'est passé.",
)
_WHO_CAN_TELL = Localized(
    "Whoever runs countersign can find what was changed with countersign audit verify.",
    "La personne qui administre countersign peut trouver ce qui a été modifié avec "
    "countersign audit verify.",
)


@dataclass(frozen=True)
class Unverified:
    """Why what is shown of a proposal is not vouched for by its seals."""

    problem: SealProblem
    #: Whether it is pending, so that approving it would set it aside.
    pending: bool
    #: Its seal was removed: it has none, and every proposal here is sealed
    #: (``SealKeys.required``), so it was not made before the keys.
    removed: bool = False

    @property
    def reason(self) -> str:
        """The reason code its approval records (``proposal_seal_invalid``, ...)."""
        return reason_code(self.problem)

    def message(self, language: str = "en") -> str:
        """What a reader is told, in ``language``: what is wrong, what approving would do
        (or that what is shown may not have happened), and who can find out more."""
        problem = self.problem
        if problem.version is not None:
            words = _EVENT_WORDS.get(problem.event_topic or "", _OTHER_EVENT)
            what = _EVENT.text(language, version=problem.version, what=words.text(language))
        elif self.removed:
            what = _SEAL_REMOVED.text(language)
        else:
            what = _WHAT[self.reason].text(language, key_id=problem.key_id or "?")
        if_approved = _IF_APPROVED_HERE if problem.kind == "unknown_key" else _IF_APPROVED
        parts = [what, (if_approved if self.pending else _SHOWN).text(language)]
        if self.reason != "proposal_unsealed" or self.removed:
            # (one made before the keys is no one's doing)
            parts.append(_WHO_CAN_TELL.text(language))
        return " ".join(parts)

    def to_json(self, language: str = "en") -> dict[str, Any]:
        """The card's ``unverified``: the reason, the event (when it is one after
        ``Proposed``) and the message."""
        return {
            "reason": self.reason,
            "event_version": self.problem.version,
            "event_type": self.problem.event_type,
            "message": self.message(language),
        }


def unverified(seals: SealKeys | None, proposal: Proposal, pending: bool) -> Unverified | None:
    """Why ``proposal`` as stored is not vouched for by its seals, or None: no keys are held
    here, its seals prove it, or it has none and is no longer pending (made before the keys,
    most likely: nothing to act on). ``pending``: whether it is open to approval now."""
    if seals is None:
        return None
    problem = seal_problem(seals, proposal, [])
    if problem is None:
        return None
    if problem.kind == "unsealed" and problem.version is None:
        if seals.required:  # every proposal here was sealed: this one's seal was removed
            return Unverified(problem, pending, removed=True)
        if not pending:
            return None
    return Unverified(problem, pending)
