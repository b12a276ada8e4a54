"""The app-authored card a propose tool answers with: what a framework shows its model (and
often its user) once a proposal is frozen. The model never writes it, and it reads from the
stored proposal alone, like the review card: the operation's title and headline, the preview's
rows with every amount as the application computed it, and how it gets approved."""

from __future__ import annotations

from countersign.application.reports import ProposalCard
from countersign.domain.contracts.presentation import Localized
from countersign.domain.messages import operation_title, preview_rows_of, proposal_headline
from countersign.domain.times import local_time
from countersign.domain.visible_text import one_value, shown

HEAD = Localized(
    "Proposal {proposal_id}: {title}. {headline}", "Proposition {proposal_id} : {title}. {headline}"
)
ROW = Localized("{label}: {value}", "{label} : {value}")
REPLACES = Localized(
    "It replaces the pending proposal {replaced}, which can no longer be approved.",
    "Elle remplace la proposition en attente {replaced}, qui ne peut plus être approuvée.",
)
QUORUM = Localized(
    "It needs {count} approvals by different people.",
    "Elle demande {count} approbations de personnes différentes.",
)
AWAITS = Localized(
    "The application computed every value above. Nothing has changed yet: a manager "
    "approves it by id ({proposal_id}) before {expires}, and only then does the application "
    "execute it, once. Do not propose it again.",
    "L'application a calculé chaque valeur ci-dessus. Rien n'a encore changé : un "
    "gestionnaire l'approuve par son identifiant ({proposal_id}) avant le {expires}, et "
    "seulement alors l'application l'exécute, une seule fois. Ne la proposez pas de nouveau.",
)


def card_text(card: ProposalCard, language: str = "en", replaced: tuple[str, ...] = ()) -> str:
    """The card of a proposal just frozen, in ``language``; ``replaced`` names the pending
    proposals it superseded."""
    lines = [
        HEAD.text(
            language,
            proposal_id=card.proposal_id,
            title=operation_title(card.operation, language),
            headline=shown(proposal_headline(card.operation, card.preview, language)),
        )
    ]
    lines += [
        ROW.text(language, label=row.label, value=one_value(row.value))
        for row in preview_rows_of(card.operation, card.preview, language)
    ]
    if replaced:
        lines.append(REPLACES.text(language, replaced=", ".join(replaced)))
    if card.approvals_required > 1:
        lines.append(QUORUM.text(language, count=card.approvals_required))
    expires = local_time(card.expires_at, card.time_zone, language)
    lines.append(AWAITS.text(language, proposal_id=card.proposal_id, expires=expires))
    return "\n".join(lines)
