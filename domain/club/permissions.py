"""The permissions the application checks itself, apart from the organization aggregate: the
contracts' registry names them without importing the aggregate (and eventsourcing with it),
so a command that only lists or describes things starts small."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from countersign.domain.errors import CountersignError

__all__ = ["LastMemberManagerError", "Permission", "UnknownPermissionError"]


class Permission(StrEnum):
    """The permissions the application checks itself. A permission is a plain string: each
    operation contract declares the one its proposals need (``OperationContract.permission``),
    so the set grows with the registry (``domain.contracts.PERMISSIONS``)."""

    REFUND_ORDERS = "orders.refund"
    PREPARE_BROADCASTS = "email_broadcasts.prepare"
    READ_AUDIT = "audit.read"
    MANAGE_POLICIES = "policies.manage"
    MANAGE_WEBHOOKS = "webhooks.manage"
    MANAGE_MEMBERS = "members.manage"


class UnknownPermissionError(CountersignError):
    """Raised when a change of permissions names a permission nobody may hold."""

    def __init__(self, unknown: Iterable[str], known: Iterable[str]) -> None:
        self.unknown = tuple(sorted(set(unknown)))
        self.known = tuple(sorted(set(known)))
        super().__init__(
            f"no such permission: {', '.join(self.unknown)}; "
            f"the permissions are: {', '.join(self.known)}"
        )


class LastMemberManagerError(CountersignError):
    """Raised when a change would leave the club with nobody holding members.manage, so that
    nobody could grant a permission again."""

    def __init__(self, email: str) -> None:
        self.email = email
        super().__init__(
            f"{email} is the last member who holds {Permission.MANAGE_MEMBERS}: give it to "
            "someone else first, or nobody could change a member's permissions again"
        )
