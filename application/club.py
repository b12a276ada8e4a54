"""The ordinary interface's club operations: order investigations, manual refunds, roster, and
who belongs to which club."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from countersign.application import authorization, club_admin
from countersign.application.authorization import (
    Caller,
    member_of,
    organization_by_slug,
    require,
    require_decider,
)
from countersign.application.errors import CorruptRecordError, parse_id
from countersign.application.ports import AggregateStore, Answer, Commit, Reads
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.orders import Order
from countersign.domain.club.organization import (
    Member,
    Organization,
    Permission,
    UnknownPermissionError,
)
from countersign.domain.club.roster import Roster
from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE
from countersign.domain.contracts import PERMISSIONS
from countersign.domain.errors import NotFoundError
from countersign.domain.ports import Repository

log = logging.getLogger("countersign.club")

#: Who changed a member's permissions from the command line (it names no member).
OPERATOR = "operator"
#: The order events that each record one refund (``Order._refunds`` numbers them in turn).
_REFUND_EVENTS = ("RefundRecorded", "RefundAttemptSucceeded")


@dataclass(frozen=True)
class Membership:
    """A person's membership of one club, as the club stood at ``version``."""

    organization_id: UUID
    organization: str  # the slug
    club: str  # the name
    version: int
    member: Member
    time_zone: str = DEFAULT_TIME_ZONE
    """Where the club's people read times (an IANA name such as America/Toronto)."""


class ClubService:
    """What a club's staff do outside any assistant, and who belongs to which club."""

    def __init__(self, store: AggregateStore) -> None:
        self.store = store

    def order(self, organization: str, order_id: str) -> Order:
        """An order of this organization, named by its id or its order number (as the pages
        take it); NotFoundError for unknown and foreign ones alike."""
        org = organization_by_slug(self.store, organization)
        return _find_order(org.id, order_id, self.store.get)

    def investigate(self, organization: str, order_id: str) -> dict[str, Any]:
        """The order investigation, with the references a request uses."""
        order = self.order(organization, order_id)
        return investigation(order)

    def still_owes_a_discount(self, organization: str, order_id: str) -> bool:
        """Whether a missed discount of the order (neither applied at checkout nor refunded
        since) can still be refunded: a payment of it has something left to refund."""
        order = self.order(organization, order_id)
        owed = any(not d.applied and not order.discount_refunded(d.ref) for d in order.discounts)
        return owed and any(order.refundable_cents(p.ref) > 0 for p in order.payments)

    def refund_days(self, organization: str, order_id: str) -> dict[str, datetime]:
        """When each of the order's refunds was recorded, by its reference (``R1``, ...): the
        order numbers its refunds in the order their events were recorded."""
        order = self.order(organization, order_id)
        recorded = [
            event.at for event in self.store.history(order.id) if event.type in _REFUND_EVENTS
        ]
        return {f"R{number}": at for number, at in enumerate(recorded, start=1)}

    def refund_manually(
        self, organization: str, order_id: str, actor: str, payment: str, amount_cents: int
    ) -> dict[str, Any]:
        order = self.order(organization, order_id)
        require(member_of(self.store, order.organization_id, actor), Permission.REFUND_ORDERS)
        order.refund_manually(payment, amount_cents, recorded_by=actor.strip().lower())
        self.store.save(order)
        return investigation(order)

    def leagues(self, organization: str) -> list[dict[str, Any]]:
        """Every league with its member count and capacity (None: no limit)."""
        roster = self._roster(organization)
        return [
            {
                "name": name,
                "active_members": roster.member_count(name),
                "capacity": roster.capacity_of(name),
            }
            for name in roster.league_names()
        ]

    def join(self, organization: str, league: str, name: str, email: str) -> dict[str, Any]:
        roster = self._roster(organization)
        roster.join(league, name, email)
        self.store.save(roster)
        return {"league": league, "active_members": len(roster.members_of(league))}

    def membership(
        self, organization: str, email: str, *, unchanged_since: int | None = None
    ) -> Membership:
        """The person's membership of the club, read now. NotFoundError for an unknown club,
        a non-member, and, with ``unchanged_since`` (a version of the organization), a
        person removed from the club since then, even if added again."""
        org = organization_by_slug(self.store, organization)
        member = authorization.membership(org, email)
        if unchanged_since is not None and org.version != unchanged_since:
            removed = any(
                event.version > unchanged_since
                and event.type == "MemberRemoved"
                and event.fields.get("email") == member.email
                for event in self.store.history(org.id)
            )
            if removed:
                raise NotFoundError("removed from the club since")
        return _membership(org, member)

    def clubs_of(self, email: str) -> list[Membership]:
        """Every club the person belongs to now (a person is known by email across clubs)."""
        found = []
        for organization_id in self.store.ids_with_events(Organization, ["Registered"]):
            try:
                org = self.store.read(organization_id, Organization)
            except NotFoundError:
                continue
            except CorruptRecordError as corrupt:
                # One club's unreadable record is that club's: the person still signs in to
                # every other (a page of that club answers with the reference itself).
                log.error(
                    "club %s could not be read while listing %s's clubs (reference %s)",
                    organization_id,
                    email,
                    corrupt.correlation_id,
                )
                continue
            member = org.member(email)
            if member is not None:
                found.append(_membership(org, member))
        return sorted(found, key=lambda club: club.club)

    def set_time_zone(self, organization: str, time_zone: str) -> str:
        """Show the club's times in ``time_zone`` from now on; the zone as stored.
        NotFoundError for an unknown club, TimeZoneError for a name that is not a zone."""
        org = self.store.get(Organization.create_id(organization.strip().lower()), Organization)
        org.set_time_zone(time_zone)
        self.store.save(org)
        return org.time_zone

    def time_zone(self, organization: str) -> str:
        """The club's time zone (UTC for a club that never set one)."""
        return organization_by_slug(self.store, organization).time_zone

    def organization_id(self, organization: str) -> str:
        """The organization's id; NotFoundError for an unknown one."""
        return str(organization_by_slug(self.store, organization).id)

    def order_id(self, organization: str, reference: str) -> str:
        """The id of this organization's order named by its id or its order number."""
        org = organization_by_slug(self.store, organization)
        return str(_find_order(org.id, reference, self.store.read).id)

    def broadcast_form(self, organization: str, form_id: str) -> dict[str, str]:
        """The subject and body on the organization's broadcast form."""
        org = organization_by_slug(self.store, organization)
        form = self.store.read(parse_id(form_id, "broadcast form"), BroadcastForm)
        if form.organization_id != org.id:
            raise NotFoundError("broadcast form")
        return {"subject": form.subject, "body": form.body}

    def members(self, organization: str, by: Caller | None) -> list[Member]:
        """Every member of the club with their permissions, by email; for a caller who holds
        members.manage there (``by`` None: the operator, on the command line). NotFoundError
        for an unknown club or one the caller does not act in, MissingPermissionError without
        the permission."""
        org = self.store.read(_organization_id(organization, by), Organization)
        if by is not None:
            _member_manager(org, by)
        found = (org.member(email) for email in sorted(org.members))
        return [member for member in found if member is not None]

    def set_permissions(
        self,
        organization: str,
        email: str,
        permissions: list[str],
        *,
        by: Caller | None = None,
    ) -> dict[str, Any]:
        """Give the member exactly ``permissions`` (a PermissionsChanged event naming who did;
        the command line, ``by`` None, is the operator); what they hold now, and whether this
        changed it. UnknownPermissionError, NotMemberError, LastMemberManagerError,
        NotFoundError (an unknown club, or one the caller does not act in),
        AgentCannotDecideError or MissingPermissionError."""
        wanted = sorted({p.strip() for p in permissions if p.strip()})
        unknown = [p for p in wanted if p not in PERMISSIONS]
        if unknown:
            raise UnknownPermissionError(unknown, PERMISSIONS)
        organization_id = _organization_id(organization, by)
        if by is not None:
            require_decider(by)  # who may decide is the people's to set, never an agent's

        def setting(facts: Repository) -> Commit[dict[str, Any]] | Answer[dict[str, Any]]:
            org = facts.get(organization_id, Organization)
            changed_by = OPERATOR if by is None else _member_manager(org, by)
            changed = org.change_permissions(email, wanted, changed_by)
            held = {"email": email.strip().lower(), "permissions": wanted, "changed": changed}
            return Commit([org], held) if changed else Answer(held)

        return self.store.decide(Reads([organization_id]), setting)

    def register(self, slug: str, name: str) -> dict[str, Any]:
        """The operator registers a club (``club_admin.register_club``)."""
        return club_admin.register_club(self.store, slug, name)

    def add_member(
        self, organization: str, email: str, name: str, role: str, permissions: list[str]
    ) -> dict[str, Any]:
        """The operator adds a member (``club_admin.add_member``)."""
        return club_admin.add_member(self.store, organization, email, name, role, permissions)

    def remove_member(self, organization: str, email: str) -> dict[str, Any]:
        """The operator removes a member (``club_admin.remove_member``)."""
        return club_admin.remove_member(self.store, organization, email)

    def _roster(self, organization: str) -> Roster:
        org = organization_by_slug(self.store, organization)
        return self.store.get(Roster.create_id(org.id), Roster)


def _organization_id(organization: str, by: Caller | None) -> UUID:
    """The club's id; NotFoundError for a club the caller does not act in, like an unknown
    one."""
    slug = organization.strip().lower()
    if by is not None and by.organization is not None and by.organization != slug:
        raise NotFoundError("organization")
    return Organization.create_id(slug)


def _member_manager(org: Organization, caller: Caller) -> str:
    """The caller's email if they may manage the club's members (MissingPermissionError
    if not, NotFoundError for a non-member)."""
    member = authorization.membership(org, caller.email)
    authorization.require_all(caller, member, Permission.MANAGE_MEMBERS)
    return member.email


def _membership(org: Organization, member: Member) -> Membership:
    return Membership(
        organization_id=org.id,
        organization=org.slug,
        club=str(org.name),
        version=org.version,
        member=member,
        time_zone=org.time_zone,
    )


def _find_order(
    organization_id: UUID, reference: str, fetch: Callable[[UUID, type[Order]], Order]
) -> Order:
    """This organization's order a reference names: an order id, else an order number of this
    organization's (so another club's order numbers name nothing here); an order number
    written like an id is still an order number. NotFoundError for unknown and foreign ones."""
    reference = reference.strip()
    number = Order.create_id(organization_id, reference)
    try:
        ids = [UUID(reference), number]
    except ValueError:
        ids = [number]
    for order_id in ids:
        try:
            order = fetch(order_id, Order)
        except NotFoundError:
            continue
        if order.organization_id == organization_id:
            return order
    raise NotFoundError("order")


def investigation(order: Order) -> dict[str, Any]:
    """What staff (and, later, the order assistant) may see of an order: no provider ids."""
    return {
        "order_id": str(order.id),
        "participant": order.participant_name,
        "currency": order.currency,
        "total_cents": order.total_cents,
        "registration": {
            "status": str(order.status),
            "league": order.league,
            "refundable_balance_cents": order.refundable_balance_cents,
        },
        "note": order.note,
        "line_items": [
            {
                "ref": item.ref,
                "product": item.product,
                "amount_cents": item.amount_cents,
                "configuration": item.configuration,
            }
            for item in order.line_items
        ],
        "discounts": [
            {
                "ref": discount.ref,
                "name": discount.name,
                "line_item": discount.line_item,
                "applied": discount.applied,
                "eligibility": discount.eligibility,
                "value_cents": order.discount_value_cents(discount.ref),
            }
            for discount in order.discounts
        ],
        "payments": [
            {
                "ref": payment.ref,
                "method": payment.method,
                "label": payment.label,
                "amount_cents": payment.amount_cents,
                "refundable_cents": order.refundable_cents(payment.ref),
            }
            for payment in order.payments
        ],
        "refunds": [
            {
                "ref": refund.ref,
                "payment": refund.payment,
                "amount_cents": refund.amount_cents,
                "destination": refund.destination,
                "discount": refund.discount,
            }
            for refund in order.refunds
        ],
        "unresolved_refund_attempts": len(order.unresolved_attempts()),
    }
