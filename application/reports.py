"""What use cases answer: plain, JSON-ready records for the CLI, an HTTP handler or a test."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value


class Report:
    """Base of every report: ``to_json()`` gives the CLI's and the API's document."""

    def to_json(self) -> dict[str, Any]:
        return _jsonable(asdict(self))  # type: ignore[call-overload,no-any-return]


@dataclass(frozen=True)
class ProposalCreated(Report):
    """A validated request became a pending proposal."""

    proposal_id: str
    status: str
    operation: str
    preview: dict[str, Any]
    expires_at: datetime


@dataclass(frozen=True)
class ApprovalReport(Report):
    """What an approve (or decline) command did."""

    result: Literal["executed", "already_completed", "not_approvable", "declined"]
    proposal_id: str
    status: str | None
    outcome: dict[str, Any] | None
    reason: str | None
    message: str | None


@dataclass(frozen=True)
class ProposalCard(Report):
    """Everything a reviewer sees about one proposal."""

    proposal_id: str
    operation: str
    section: str
    resource_id: str
    requested_by: str
    interaction_id: str
    status: str
    preview: dict[str, Any]
    expires_at: datetime
    approved_by: str | None
    approved_at: datetime | None
    declined_by: str | None
    outcome: dict[str, Any] | None
    message: str | None
    time_zone: str = "UTC"
    """The club's time zone, where its people read the card's times."""


@dataclass(frozen=True)
class SweepReport(Report):
    """One proposal that a reconcile or expire pass settled (or left)."""

    proposal_id: str
    action: str
    status: str
    outcome: dict[str, Any] | None
