"""Organizations (tenants) and their members' permissions."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from countersign.domain.approval_policy import ApprovalPolicy
from countersign.domain.club.ids import stable_id
from countersign.domain.club.permissions import (  # each kept importable from here, as before
    LastMemberManagerError as LastMemberManagerError,
)
from countersign.domain.club.permissions import Permission as Permission
from countersign.domain.club.permissions import (
    UnknownPermissionError as UnknownPermissionError,
)
from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE, valid_time_zone
from countersign.domain.club.webhooks import MAX_ENDPOINTS, WebhookUrlError, valid_webhook_url
from countersign.domain.errors import (
    CountersignError,
    DuplicateError,
    NotFoundError,
    NotMemberError,
)
from countersign.domain.frozen_records import direct_init
from eventsourcing.domain import Aggregate, event


class LanguageError(CountersignError):
    """Raised when a language is not one the application writes in (en, fr)."""


DEFAULT_LANGUAGE = "en"
"""The language of a member who never chose one."""
MEMBER_LANGUAGES = ("en", "fr")
"""The languages the application writes to members in (``presentation.LANGUAGES``; not
imported from there: the contracts package imports this module)."""


@dataclass(frozen=True)
class WebhookEndpoint:
    """Where the club's notifications are POSTed (its signing secret is not domain state)."""

    endpoint_id: str
    url: str
    added_by: str


@direct_init
@dataclass(frozen=True)
class Member:
    """A person's membership of one organization."""

    email: str
    name: str
    role: str
    permissions: frozenset[str]
    membership_id: str | None = None
    """New at every joining, so a credential issued before the person left and came back (or
    before the address went to someone else) is told apart; None for memberships recorded
    before memberships had ids."""
    language: str = DEFAULT_LANGUAGE
    """The language the application writes to this person in (its e-mails): en or fr."""

    def may(self, permission: str) -> bool:
        return permission in self.permissions


_NO_WEBHOOKS: dict[str, dict[str, str]] = {}  # shared, so never changed in place


class Organization(Aggregate):
    """A club: the tenant boundary of every proposal."""

    time_zone = DEFAULT_TIME_ZONE
    """Where the club's people read times (an IANA name). A class default, so a club
    registered before clubs had a time zone (its events and snapshots lack one) reads as UTC."""

    webhooks = _NO_WEBHOOKS
    """Endpoint id -> its url and who added it. A class default (replaced, never changed in
    place), so a club recorded before webhooks existed has none."""

    @staticmethod
    def create_id(slug: str) -> UUID:
        return stable_id("organization", slug)

    @event("Registered")
    def __init__(self, slug: str, name: str) -> None:
        self.slug = slug
        self.name = name
        self.members: dict[str, dict[str, Any]] = {}

    def member(self, email: str) -> Member | None:
        email = email.strip().lower()
        entry = self.members.get(email)
        if entry is None:
            return None
        # Positional, and the permissions as stored: every entry's are text already (the
        # commands write them through ``str``, and a stored event or snapshot is JSON), and
        # ``map(str, ...)`` cost as much again as the set itself (twice a cycle).
        return Member(
            email,
            str(entry["name"]),
            str(entry["role"]),
            frozenset(entry["permissions"]),
            entry.get("membership_id"),
            str(entry.get("language", DEFAULT_LANGUAGE)),
        )

    def members_holding(self, permission: str) -> list[Member]:
        """Every member who holds ``permission`` now, by email."""
        found = (self.member(email) for email in sorted(self.members))
        return [member for member in found if member is not None and member.may(permission)]

    def add_member(self, email: str, name: str, role: str, permissions: Iterable[str]) -> None:
        email = email.strip().lower()
        if email in self.members:
            raise DuplicateError(f"{email} is already a member")
        self._member_added(
            email=email,
            name=name,
            role=role,
            permissions=sorted(str(p) for p in permissions),
            membership_id=uuid4().hex,
        )

    def remove_member(self, email: str) -> None:
        email = email.strip().lower()
        if email not in self.members:
            raise NotMemberError(email)
        self._member_removed(email=email)

    def change_permissions(
        self, email: str, permissions: Iterable[str], changed_by: str | None = None
    ) -> bool:
        """Give the member exactly ``permissions``; True if that changed anything (giving the
        ones held records nothing). NotMemberError for a non-member, LastMemberManagerError
        for taking members.manage from the last member who holds it."""
        email = email.strip().lower()
        wanted = sorted({str(p) for p in permissions})
        member = self.member(email)
        if member is None:
            raise NotMemberError(email)
        if wanted == sorted(member.permissions):
            return False
        self.check_keeps_a_member_manager(member, wanted)
        self._permissions_changed(email=email, permissions=wanted, changed_by=changed_by)
        return True

    def check_keeps_a_member_manager(self, member: Member, permissions: Collection[str]) -> None:
        """LastMemberManagerError if ``member`` is the last holder of members.manage and
        would lose it."""
        manage = Permission.MANAGE_MEMBERS
        holders = self.members_holding(manage)
        if manage not in permissions and [h.email for h in holders] == [member.email]:
            raise LastMemberManagerError(member.email)

    def set_time_zone(self, name: str) -> None:
        """Show the club's times in ``name`` (``America/Toronto``); TimeZoneError for a name
        that is not an IANA time zone. Setting the zone it has already records nothing."""
        zone = valid_time_zone(name)
        if zone != self.time_zone:
            self._time_zone_set(time_zone=zone)

    @property
    def policies(self) -> dict[str, dict[str, Any]]:
        """Approval policies by operation kind, as set (none for a club that never set one)."""
        policies: dict[str, dict[str, Any]] = self.__dict__.get("_policies", {})
        return policies

    def approval_policy(self, operation: str) -> ApprovalPolicy:
        """The policy in force for ``operation``: the one set, or one approval by anyone
        permitted."""
        entry = self.policies.get(operation)
        if entry is None:
            return ApprovalPolicy(operation)
        return ApprovalPolicy(
            operation=operation,
            approvals=int(entry["approvals"]),
            above_cents=entry["above_cents"],
            requester_may_approve=bool(entry["requester_may_approve"]),
            require_passkey=bool(entry.get("require_passkey", False)),
        )

    def set_approval_policy(self, policy: ApprovalPolicy, set_by: str) -> bool:
        """Put ``policy`` in force for new proposals of its operation; True if it changed
        anything (setting the policy in force again records nothing)."""
        if policy == self.approval_policy(policy.operation):
            return False
        self._approval_policy_set(**policy.to_json(), set_by=set_by)
        return True

    @event("ApprovalPolicySet")
    def _approval_policy_set(
        self,
        operation: str,
        approvals: int,
        above_cents: int | None,
        requester_may_approve: bool,
        set_by: str,
        require_passkey: bool = False,  # absent from events stored before passkeys
    ) -> None:
        self._policies = {
            **self.policies,
            operation: {
                "approvals": approvals,
                "above_cents": above_cents,
                "requester_may_approve": requester_may_approve,
                "require_passkey": require_passkey,
                "set_by": set_by,
            },
        }

    def set_member_language(self, email: str, language: str) -> None:
        """Write to the member in ``language`` (en or fr) from now on; NotMemberError for a
        non-member, LanguageError for another language. Setting it again records nothing."""
        email = email.strip().lower()
        language = language.strip().lower()
        if email not in self.members:
            raise NotMemberError(email)
        if language not in MEMBER_LANGUAGES:
            raise LanguageError(f"{language[:20]!r} is not a language; use one of: en, fr")
        if self.members[email].get("language", DEFAULT_LANGUAGE) != language:
            self._member_language_set(email=email, language=language)

    def webhook_endpoints(self) -> list[WebhookEndpoint]:
        """The club's endpoints, in the order they were added."""
        return [
            WebhookEndpoint(endpoint_id, entry["url"], entry["added_by"])
            for endpoint_id, entry in self.webhooks.items()
        ]

    def add_webhook_endpoint(self, url: str, added_by: str) -> WebhookEndpoint:
        """Register ``url`` to receive the club's notifications. WebhookUrlError for anything
        but an http(s) URL, DuplicateError for a URL already registered, and WebhookUrlError
        past ``MAX_ENDPOINTS`` endpoints."""
        url = valid_webhook_url(url)
        if any(entry["url"] == url for entry in self.webhooks.values()):
            raise DuplicateError("this webhook URL is already registered")
        if len(self.webhooks) >= MAX_ENDPOINTS:
            raise WebhookUrlError(
                f"a club may register at most {MAX_ENDPOINTS} webhook URLs", "too_many"
            )
        endpoint_id = f"we_{uuid4().hex[:20]}"
        self._webhook_endpoint_added(endpoint_id=endpoint_id, url=url, added_by=added_by)
        return WebhookEndpoint(endpoint_id, url, added_by)

    def remove_webhook_endpoint(self, endpoint_id: str, removed_by: str) -> None:
        """Stop POSTing to the endpoint; NotFoundError for an id the club does not hold."""
        if endpoint_id not in self.webhooks:
            raise NotFoundError("webhook endpoint")
        self._webhook_endpoint_removed(endpoint_id=endpoint_id, removed_by=removed_by)

    @event("WebhookEndpointAdded")
    def _webhook_endpoint_added(self, endpoint_id: str, url: str, added_by: str) -> None:
        self.webhooks = {**self.webhooks, endpoint_id: {"url": url, "added_by": added_by}}

    @event("WebhookEndpointRemoved")
    def _webhook_endpoint_removed(self, endpoint_id: str, removed_by: str) -> None:
        self.webhooks = {k: entry for k, entry in self.webhooks.items() if k != endpoint_id}

    @event("MemberLanguageSet")
    def _member_language_set(self, email: str, language: str) -> None:
        self.members[email]["language"] = language

    @event("TimeZoneSet")
    def _time_zone_set(self, time_zone: str) -> None:
        self.time_zone = time_zone

    @event("MemberAdded")
    def _member_added(
        self,
        email: str,
        name: str,
        role: str,
        permissions: list[str],
        membership_id: str | None = None,  # absent from events stored before it existed
    ) -> None:
        self.members[email] = {
            "name": name,
            "role": role,
            "permissions": permissions,
            "membership_id": membership_id,
        }

    @event("MemberRemoved")
    def _member_removed(self, email: str) -> None:
        self.members.pop(email, None)

    @event("PermissionsChanged")
    def _permissions_changed(
        self,
        email: str,
        permissions: list[str],
        changed_by: str | None = None,  # absent from events stored before it was recorded
    ) -> None:
        self.members[email]["permissions"] = permissions
