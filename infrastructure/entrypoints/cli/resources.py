"""What a command names as its resource, resolved as ``orders show`` resolves an order: an
order by its number (the registration system's reference, ``refund-ok``) or its id, in the
club the command names only; a club's one roster or broadcast form by the club alone."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from countersign.application.assistant.sections.orders import ORDERS
from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import NotFoundError
from countersign.domain.scope import Section
from countersign.infrastructure.entrypoints.cli.common import UsageError

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign


class NamedNotFoundError(NotFoundError):
    """A resource a command names that its club does not hold, said in words of its own
    (``text``) rather than the general "Not found" (``resource``: what it is)."""

    resource = ""

    def text(self, language: str) -> str:
        raise NotImplementedError


class UnknownOrderError(NamedNotFoundError):
    """Raised when a command names an order its club has by neither number nor id (another
    club's order included: it is not this club's, whatever its number)."""

    resource = "order"

    def __init__(self, organization: str, reference: str) -> None:
        super().__init__("order")
        self.organization = organization
        self.reference = reference

    def text(self, language: str) -> str:
        return _NO_SUCH_ORDER.text(
            language, organization=self.organization, reference=_clipped(self.reference)
        )


class UnknownProposalError(NamedNotFoundError):
    """Raised when ``history`` names an id no proposal has: that command names no club and no
    member (it reads every club's proposals), so the general "check the club, the member and
    the id named" sent its reader after options it does not take."""

    resource = "proposal"

    def __init__(self) -> None:
        super().__init__("proposal")

    def text(self, language: str) -> str:
        return _NO_SUCH_PROPOSAL.text(language)


_NO_SUCH_PROPOSAL = Localized(
    "Not found: no proposal has that id. Check it: `countersign audit export --org CLUB` "
    "lists each proposal of a club with its id.",
    "Introuvable : aucune proposition n'a cet identifiant. Vérifiez-le : `countersign audit "
    "export --org CLUB` liste chaque proposition d'un club avec son identifiant.",
)


class NoClubRecordError(NamedNotFoundError):
    """Raised when a command names a club-wide section (the roster, the broadcast form) of a
    club that holds no record for it: one registered with `org create`, whose business
    application has not made it (the general "Not found" said to check the club and the id)."""

    resource = "club_record"

    def __init__(self, organization: str, section: str) -> None:
        super().__init__(section)
        self.organization = organization
        self.section = section

    def text(self, language: str) -> str:
        return _NO_CLUB_RECORD.text(language, organization=self.organization, section=self.section)


_NO_CLUB_RECORD = Localized(
    "Not found: {organization} holds no record for the {section} section yet. A club's own "
    "records are its business application's, made in its code (docs/deploy.md, \"The clubs "
    "and their people\"), as `countersign seed` makes the demo clubs'.",
    "Introuvable : {organization} ne détient encore aucun enregistrement pour la section "
    "{section}. Les enregistrements d'un club sont ceux de son application métier, créés dans "
    "son code (docs/deploy.md, « The clubs and their people »), comme `countersign seed` crée "
    "ceux des clubs de la démo.",
)
_NO_SUCH_ORDER = Localized(
    'Not found: {organization} has no order whose number or id is "{reference}". Name the '
    "order by its number, as the registration system shows it, or "
    "by its id; `countersign orders show NUMBER --org {organization}` shows one.",
    "Introuvable : {organization} n'a aucune commande dont le numéro ou l'identifiant est "
    "« {reference} ». Nommez la commande par son numéro, tel que le système d'inscription "
    "l'affiche, ou par son identifiant ; `countersign orders show "
    "NUMÉRO --org {organization}` en affiche une.",
)
_RESOURCE_NEEDED = Localized(
    "--resource is needed for the {section} section: {what}.",
    "--resource est nécessaire pour la section {section} : {what}.",
)
_AN_ORDER = Localized(
    "the order's number, as the registration system shows it, or its id",
    "le numéro de la commande, tel que le système d'inscription l'affiche, ou son identifiant",
)
_A_RECORD = Localized(
    "the id or key of the record it concerns", "l'identifiant ou la clé de l'enregistrement visé"
)


def order_id(cs: Countersign, organization: str, reference: str) -> str:
    """The id of the club's order named by its number or id, as ``orders show`` finds it
    (``ClubService.order_id``); NotFoundError for an unknown club, UnknownOrderError when
    the club has no such order."""
    cs.club.organization_id(organization)  # an unknown club is not an unknown order
    try:
        return cs.club.order_id(organization, reference)
    except NotFoundError:
        raise UnknownOrderError(organization.strip().lower(), reference) from None


def section_resource(
    cs: Countersign, organization: str, section: str, named: str | None, language: str = "en"
) -> str:
    """The id of the resource a command names in a section: an order by its number or id;
    none for a section with one resource per club (its roster, its broadcast form), the
    club's own; any other as given. UsageError when one is needed and none was named."""
    if section == ORDERS.section:
        if named is None:
            raise UsageError(_needed(section, _AN_ORDER, language))
        return order_id(cs, organization, named)
    if named is not None:
        return named
    assistant = cs.assistant.assistants.get(Section(section))
    if assistant is None or assistant.club_resource is None:
        raise UsageError(_needed(section, _A_RECORD, language))
    organization_id = UUID(cs.club.organization_id(organization))  # an unknown club: not found
    if section not in cs.assistant.club_records(organization_id):
        raise NoClubRecordError(organization.strip().lower(), section)
    return str(assistant.club_resource(organization_id))


def operation_resource(
    cs: Countersign, organization: str, operation: str, named: str | None, language: str = "en"
) -> str:
    """``section_resource`` in the operation's section; an unknown operation's as given (the
    proposal service refuses it, naming the operations there are)."""
    contract = REGISTRY.get(operation)
    if contract is None:
        return named or ""
    return section_resource(cs, organization, contract.section, named, language)


def _needed(section: str, what: Localized, language: str) -> str:
    return _RESOURCE_NEEDED.text(language, section=section, what=what.text(language))


def _clipped(reference: str) -> str:
    """The reference as given, cut to a length a line can show."""
    reference = reference.strip()
    return reference if len(reference) <= 60 else reference[:59] + "…"
