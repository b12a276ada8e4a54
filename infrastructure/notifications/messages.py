"""What a notification says: the webhook's JSON body and the e-mail, in English and French.

Both carry what a card shows at most: the operation's title, the club, the review link. Never
an argument, an amount or a provider's payload, and never an approve link: approving is a
deliberate POST on the review page, after reading the card.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.presentation import Localized
from countersign.domain.visible_text import plain_name

_SUBJECTS = {
    "awaiting_approval": Localized(
        "{club}: a proposal awaits your approval ({title})",
        "{club} : une proposition attend votre approbation ({title})",
    ),
    "needs_reconciliation": Localized(
        "{club}: a result is being checked with the provider ({title})",
        "{club} : un résultat est en vérification auprès du fournisseur ({title})",
    ),
    "failed": Localized(
        "{club}: an approved operation failed ({title})",
        "{club} : une opération approuvée a échoué ({title})",
    ),
}
_BODIES = {
    "awaiting_approval": Localized(
        "Hello {name},\n\n{requester} proposed an operation that needs a person's approval:"
        " {title}.\n\nRead the proposal and decide on its review page:\n{link}\n",
        "Bonjour {name},\n\n{requester} a proposé une opération qui doit être approuvée par"
        " une personne : {title}.\n\nLisez la proposition et décidez sur sa page de revue :"
        "\n{link}\n",
    ),
    "needs_reconciliation": Localized(
        "Hello {name},\n\nThe provider's answer for an approved operation was not received"
        " ({title}). countersign is checking with the provider; nothing will be done twice."
        " Someone may need to tell the member.\n\nSee where it stands:\n{link}\n",
        "Bonjour {name},\n\nLa réponse du fournisseur pour une opération approuvée n'a pas été"
        " reçue ({title}). countersign vérifie auprès du fournisseur ; rien ne sera fait deux"
        " fois. Il faudra peut-être prévenir le membre.\n\nVoir où elle en est :\n{link}\n",
    ),
    "failed": Localized(
        "Hello {name},\n\nAn approved operation failed and was not carried out ({title})."
        " The page gives the reference to quote to support.\n\nSee it here:\n{link}\n",
        "Bonjour {name},\n\nUne opération approuvée a échoué et n'a pas été effectuée"
        " ({title}). La page donne la référence à transmettre au soutien.\n\nVoir ici :"
        "\n{link}\n",
    ),
}
#: Who proposed it, as the review page says it ("Requested by" and the line beneath): an
#: agent or approver token and the member it acts for, or the member's assistant. A person's
#: own request (and one recorded before credentials were) is the member alone.
_PROPOSED_THROUGH = {
    "agent_token": Localized(
        "The agent “{service}” (agent token), acting for {who},",
        "L'agent « {service} » (jeton d'agent), agissant pour {who},",
    ),
    "approver_token": Localized(
        "The service “{service}” (approver token), acting for {who},",
        "Le service « {service} » (jeton d'approbateur), agissant pour {who},",
    ),
    "assistant": Localized(
        "The assistant, on behalf of {who},", "L'assistant, pour le compte de {who},"
    ),
}
_FALLBACK_TITLE = Localized("an operation", "une opération")
_SIGNATURE = Localized(
    "\n--\nThis message was sent by countersign for {club}.\n",
    "\n--\nCe message a été envoyé par countersign pour {club}.\n",
)


def event_type(reason: str) -> str:
    """The webhook event type: ``proposal.awaiting_approval`` and so on."""
    return f"proposal.{reason}"


def webhook_body(notification: dict[str, Any], organization: str, review_url: str) -> bytes:
    """The JSON a webhook receives: the same bytes on every attempt."""
    occurred_at = notification["occurred_at"]
    document = {
        "id": notification["event_id"],
        "type": event_type(notification["reason"]),
        "proposal_id": notification["proposal_id"],
        "operation": notification["operation"],
        "organization": organization,
        "review_url": review_url,
        "occurred_at": occurred_at.isoformat() if occurred_at is not None else None,
    }
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def proposer(
    requested_through: str | None, requester: str, requester_name: str, language: str
) -> str:
    """Who proposed it, for the awaiting-approval e-mail: "Ava Tran (ava@club.example)", or
    "The agent “front-desk” (agent token), acting for Ava Tran (ava@club.example),". A token's
    name and a member's name are the club's text: kept to a name's plain characters (no line
    of the e-mail's own can be forged with them)."""
    name = " ".join(requester_name.split())
    who = f"{name} ({requester})" if name and name != requester else requester
    kind, _, service = (requested_through or "").partition(":")
    through = _PROPOSED_THROUGH.get(kind)
    if through is None:
        return who
    return through.text(language, service=plain_name(service) or "?", who=who)


@dataclass(frozen=True)
class Mail:
    """Who the message is for and what it says."""

    to: str
    name: str
    language: str
    #: The requester's name as their club knows them now (their address once they left).
    requester_name: str = ""


def email_message(
    notification: dict[str, Any], mail: Mail, club: str, review_url: str, sender: str
) -> EmailMessage:
    """The e-mail for one recipient, in their language."""
    language = mail.language if mail.language in ("en", "fr") else "en"
    contract = REGISTRY.get(notification["operation"])
    title = (contract.title if contract is not None else _FALLBACK_TITLE).text(language)
    reason = notification["reason"]
    message = EmailMessage()
    message["Subject"] = _SUBJECTS[reason].text(language, club=club, title=title)
    message["From"] = sender
    message["To"] = mail.to
    message["Message-ID"] = make_msgid(idstring=notification["event_id"], domain="countersign")
    # The stable event id: one notification, one id, however often it is retried.
    message["X-Countersign-Event-Id"] = notification["event_id"]
    body = _BODIES[reason].text(
        language,
        name=mail.name,
        requester=proposer(
            notification.get("requested_through"),
            notification["requester"],
            mail.requester_name,
            language,
        ),
        title=title,
        link=review_url,
    )
    message.set_content(body + _SIGNATURE.text(language, club=club))
    message["Content-Language"] = language  # after set_content, which clears Content-*
    return message
