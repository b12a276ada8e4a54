"""Application errors: what a caller of a use case can be told."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID, uuid4

from countersign.domain.errors import CountersignError, NotFoundError
from countersign.domain.uuids import parse

if TYPE_CHECKING:
    from countersign.application.reports import ApprovalReport


class ForbiddenError(CountersignError):
    """Raised when a member lacks the permission an operation needs."""


class MissingPermissionError(ForbiddenError):
    """Raised when the caller lacks a permission; ``needs`` names the ones that would do
    (any one of them when ``any_of``)."""

    def __init__(self, needs: Iterable[str], *, any_of: bool = False) -> None:
        self.needs = tuple(sorted(set(needs)))
        self.any_of = any_of and len(self.needs) > 1
        super().__init__(("needs one of " if self.any_of else "needs ") + ", ".join(self.needs))


class AgentCannotDecideError(ForbiddenError):
    """Raised when an agent token asks to decide: approve, decline, edit a proposal, or change
    the rules people decide under. Agent tokens read, propose and follow their proposals."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message
            or "an agent token cannot decide: it may read, propose and follow its proposals; "
            "a person decides (or an approver token acting for one)"
        )


class HeldForPeopleError(AgentCannotDecideError):
    """Raised when an agent token's or an assistant's proposal would replace a pending one for
    the same thing that another member requested, or that someone approved: replacing it would
    decide what people are asked to approve (withdraw a person's request, or set their
    approvals aside). An agent token replaces only what it requested itself: what its member
    asked for in person, or through another token, is held too. The pending one stays as it
    is; a person approves, edits or declines it. ``reason``: ``requested_by_another``,
    ``requested_elsewhere`` (its member, not through this agent token) or ``approved``."""

    REQUESTED_BY_ANOTHER = "requested_by_another"
    REQUESTED_ELSEWHERE = "requested_elsewhere"
    APPROVED = "approved"

    def __init__(self, reason: str) -> None:
        why = {
            self.APPROVED: "someone has approved it",
            self.REQUESTED_ELSEWHERE: "it was requested, but not through this agent token",
        }.get(reason, "another member requested it")
        super().__init__(
            f"a pending proposal for the same thing awaits people's decision ({why}); an "
            "assistant or an agent token cannot replace it: a person may approve, edit or "
            "decline it, and nothing was proposed",
        )
        self.reason = reason


class UnknownOperationError(CountersignError):
    """Raised when a request names an operation kind that has no contract."""


class NotRevisableError(CountersignError):
    """Raised when an edit names a proposal that can no longer be revised (approved, executing
    or finished by an execution, or already superseded by a newer one), or one that owes
    nothing: ``already_so``, not executed because what it asked for already held. An edit
    is for a proposal that still owes its change; a different change is a new proposal."""

    def __init__(
        self, status: str, superseded_by: UUID | None = None, *, already_so: bool = False
    ) -> None:
        if already_so:
            said = (
                "what this proposal asked for was already so when it was approved, and nothing "
                "is left to do, so there is nothing to edit; a different change is a new "
                "proposal"
            )
        else:
            detail = f"; edit the newer one, {superseded_by}" if superseded_by else ""
            said = (
                "only a pending, declined, expired or revision-required proposal can be "
                f"edited; this one is {status}{detail}"
            )
        super().__init__(said)
        self.status = status
        self.superseded_by = superseded_by
        self.already_so = already_so


class NotApprovableError(CountersignError):
    """Raised when a passkey challenge is asked for a proposal no approval can decide now
    (decided, being carried out, superseded, or past its expiry), so nobody signs for
    nothing: ``report`` is the ``not_approvable`` answer approving it gives (its reason,
    status and stored outcome). Nothing is recorded, not even Expired."""

    def __init__(self, report: ApprovalReport) -> None:
        super().__init__(f"this proposal cannot be approved now ({report.reason})")
        self.report = report


class VouchedHereError(CountersignError):
    """Raised when an approval says its approver read the proposal as not vouched for by its
    seals (another process read its record changed in the database), and this process would
    carry it out as it holds it (as it was sealed, or with no keys to check it): not what the
    approver read, so nothing is approved and they read it again."""

    def __init__(self) -> None:
        super().__init__(
            "nothing was approved: what was read said countersign could not vouch for this "
            "record, and this server would carry out the record as it holds it, which is not "
            "what was read; read it again before deciding"
        )


@dataclass(frozen=True)
class UnreadableEvent:
    """The first stored event of a damaged record that does not read, as an operator finds
    it: its log position, its stream, its version as stored (shown safely), its topic, and
    what is wrong with it (``code``, one of ``audit verify``'s; ``error``, the class of the
    error met, where one was)."""

    position: int
    stream_id: UUID
    version: str
    topic: str
    code: str
    error: str = ""


class CorruptRecordError(CountersignError):
    """Raised when a stored record cannot be read; carries a correlation id for the logs.

    ``clubs``: for each aggregate the read asked for, the organization its first stored event
    says it belongs to, read from its stored bytes alone (None where they name none or
    do not read). A damaged record is its own club's to be told of (``damaged_or_unknown``);
    anyone else is answered as for an unknown id. ``event``: the stored event that does not
    read, where the store found it (for the operator: its log position and what is wrong)."""

    def __init__(
        self,
        correlation_id: str,
        clubs: Mapping[UUID, UUID | None] | None = None,
        event: UnreadableEvent | None = None,
    ) -> None:
        super().__init__(f"a stored record could not be read (reference {correlation_id})")
        self.correlation_id = correlation_id
        self.clubs: Mapping[UUID, UUID | None] = dict(clubs or {})
        self.event = event


def new_correlation_id() -> str:
    """A reference shown to a user and written to the logs, joining the two."""
    return f"cs-{uuid4().hex[:16]}"


def parse_id(value: str, what: str = "record") -> UUID:
    """An id from a request; a malformed one is simply not found, like an unknown one."""
    try:
        return parse(str(value).strip())
    except ValueError:
        raise NotFoundError(f"malformed {what} id") from None
