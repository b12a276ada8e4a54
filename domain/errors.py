"""Domain errors. Each says, in domain words, what went wrong."""

from __future__ import annotations

import re


class CountersignError(Exception):
    """Raised as the base of every countersign domain error."""


class NotFoundError(CountersignError):
    """Raised when a thing does not exist, or belongs to another organization."""

    @classmethod
    def of(cls, kind: type) -> NotFoundError:
        """A missing record of ``kind``, named as the services name a foreign one ("broadcast
        form" of ``BroadcastForm``), so that the two read alike."""
        return cls(re.sub(r"(?<!^)(?=[A-Z])", " ", kind.__name__).lower())


class ConcurrencyConflictError(CountersignError):
    """Raised when another writer changed an aggregate between our read and our write."""


class StaleReadError(ConcurrencyConflictError):
    """Raised when a commit relied on an aggregate that changed since it was read.

    Nothing was written; read again and decide again.
    """


class IllegalTransitionError(CountersignError):
    """Raised when a proposal is asked to move to a state its lifecycle does not allow."""

    def __init__(self, action: str, status: str) -> None:
        super().__init__(f"cannot {action} a proposal that is {status}")
        self.action = action
        self.status = status


class NotMemberError(CountersignError):
    """Raised when a person is not a member of the organization."""


class DuplicateError(CountersignError):
    """Raised when something that must be unique already exists."""


class OrderRuleError(CountersignError):
    """Raised when an order change breaks an order rule (amount, refundable balance, attempt)."""


class RosterRuleError(CountersignError):
    """Raised when a roster change breaks a roster rule (unknown league, duplicate member)."""


class EffectAlreadyRecordedError(CountersignError):
    """Raised when an outside system's answer is recorded for an attempt that is no longer
    pending: another process (an approver that woke up, the reconciler) recorded it first."""


class NotInLeagueError(RosterRuleError):
    """Raised when a member is moved out of a league they do not play in."""


class AlreadyInLeagueError(RosterRuleError):
    """Raised when a member is moved into a league they already play in."""


class LeagueFullError(RosterRuleError):
    """Raised when a member would join or move into a league that is at its capacity."""


class BroadcastRuleError(CountersignError):
    """Raised when a broadcast form change breaks a form rule (sending a draft that is not the
    one applied, sending a draft twice, settling a send that is not pending)."""


class TimeZoneError(CountersignError):
    """Raised when a time zone is not an IANA name (America/Toronto) the system knows."""
