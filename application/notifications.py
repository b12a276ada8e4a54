"""Who is told what: the clubs' webhook endpoints, members' languages, and the recipients of
each notification the ``notifications`` projection lists.

Managing a club's webhooks needs the ``webhooks.manage`` permission, in the caller's club: an
unknown club, another club and a non-member answer alike (NotFoundError). The operator's
command line acts as nobody (``caller=None``) and may manage any club.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

from countersign.application.authorization import (
    Caller,
    membership,
    organization_by_slug,
    require_all,
    require_decider,
)
from countersign.application.ports import AggregateStore, Commit, Reads
from countersign.domain.club.organization import (
    Organization,
    Permission,
    WebhookEndpoint,
)
from countersign.domain.contracts import REGISTRY
from countersign.domain.errors import NotFoundError
from countersign.domain.notifications import AWAITING_APPROVAL
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal, ProposalStatus

T = TypeVar("T")

OPERATOR = "operator"
"""Who the operator's command line acts as, in the organization's events."""


@dataclass(frozen=True)
class Recipient:
    """A member an e-mail goes to, in their language."""

    email: str
    name: str
    language: str


class NotificationsService:
    """The clubs' webhook endpoints and who receives each notification."""

    def __init__(self, store: AggregateStore) -> None:
        self.store = store

    # -- webhook endpoints --------------------------------------------------------------------

    def managed_organization(self, caller: Caller | None, organization: str) -> Organization:
        """The club, if the caller may manage its webhooks (the operator: any club).
        NotFoundError for an unknown club, another club than the caller's, a non-member;
        MissingPermissionError without ``webhooks.manage``."""
        org = organization_by_slug(self.store, organization)
        _check_manager(caller, org)
        return org

    def add_endpoint(self, caller: Caller | None, organization: str, url: str) -> WebhookEndpoint:
        """Register ``url`` (WebhookUrlError for anything but an http(s) URL)."""
        return self._change(
            organization,
            lambda org: _managed(caller, org).add_webhook_endpoint(url, _actor(caller)),
        )

    def remove_endpoint(self, caller: Caller | None, organization: str, endpoint_id: str) -> None:
        """NotFoundError for an endpoint the club does not hold."""
        self._change(
            organization,
            lambda org: _managed(caller, org).remove_webhook_endpoint(
                endpoint_id.strip(), _actor(caller)
            ),
        )

    def _change(self, organization: str, change: Callable[[Organization], T]) -> T:
        """``change`` on the club's own copy, committed if it holds when committed (the club
        read by others is a shared snapshot, never changed in place)."""
        organization_id = Organization.create_id(organization.strip().lower())

        def deciding(store: Repository) -> Commit[T]:
            org = store.get(organization_id, Organization)
            return Commit([org], change(org))

        return self.store.decide(Reads([organization_id]), deciding)

    def endpoints(self, caller: Caller | None, organization: str) -> list[WebhookEndpoint]:
        return self.managed_organization(caller, organization).webhook_endpoints()

    # -- members' languages -------------------------------------------------------------------

    def set_member_language(self, organization: str, email: str, language: str) -> str:
        """Write to the member in ``language`` from now on; the language as stored.
        NotFoundError for an unknown club, NotMemberError, LanguageError."""

        def setting(org: Organization) -> str:
            org.set_member_language(email, language)
            return membership(org, email).language

        return self._change(organization, setting)

    # -- before sending -------------------------------------------------------------------------

    def still_awaits_approval(self, proposal_id: str) -> bool:
        """Whether the proposal is still pending, as the log has it now (False for an unknown
        id): "awaits your approval" is not sent about one that was approved, declined,
        superseded or expired meanwhile."""
        try:
            proposal = self.store.read(UUID(str(proposal_id)), Proposal)
        except (NotFoundError, ValueError):
            return False
        return proposal.status == ProposalStatus.PENDING

    # -- recipients -----------------------------------------------------------------------------

    def slug_of(self, organization_id: str) -> str:
        """The club's slug; NotFoundError for an unknown id."""
        return self.store.read(UUID(organization_id), Organization).slug

    def club_name(self, organization_id: str) -> str:
        return str(self.store.read(UUID(organization_id), Organization).name)

    def member_name(self, organization_id: str, email: str) -> str:
        """The member's name (their address, once they left the club)."""
        member = self.store.read(UUID(organization_id), Organization).member(email)
        return member.name if member is not None else email

    def recipients(
        self,
        organization_id: str,
        reason: str,
        operation: str,
        requester: str,
        approvers: Sequence[str],
    ) -> list[Recipient]:
        """Who is e-mailed about a notification, as the club stands now: for a proposal
        awaiting approval, every member who may approve it but its requester; for an outcome
        that needs a person, its requester and its approvers, while they are members."""
        org = self.store.read(UUID(organization_id), Organization)
        if reason == AWAITING_APPROVAL:
            contract = REGISTRY.get(operation)
            if contract is None:
                return []  # nobody may approve an unknown kind
            requested_by = requester.strip().lower()
            holders = org.members_holding(contract.permission)
            members = [m for m in holders if m.email != requested_by]
        else:
            people = dict.fromkeys(p.strip().lower() for p in (requester, *approvers))
            found = (org.member(email) for email in people)
            members = [m for m in found if m is not None]
        return [Recipient(m.email, m.name, m.language) for m in members]


def _actor(caller: Caller | None) -> str:
    return OPERATOR if caller is None else caller.email.strip().lower()


def _check_manager(caller: Caller | None, org: Organization) -> None:
    if caller is not None:
        if not caller.acts_in(org.id):
            raise NotFoundError("organization")
        require_all(caller, membership(org, caller.email), Permission.MANAGE_WEBHOOKS)
        require_decider(caller)  # the club's settings are people's to decide


def _managed(caller: Caller | None, org: Organization) -> Organization:
    """``org``, once the caller is found to manage its webhooks."""
    _check_manager(caller, org)
    return org
