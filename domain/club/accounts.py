"""A member's account with the club: where account credit goes."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from countersign.domain.club.ids import stable_id
from countersign.domain.errors import OrderRuleError
from eventsourcing.domain import Aggregate, event


class MemberAccount(Aggregate):
    """Credit a member holds with the club, spendable on later orders."""

    @staticmethod
    def create_id(organization_id: UUID, email: str) -> UUID:
        return stable_id("member-account", organization_id, email.strip().lower())

    @event("Opened")
    def __init__(self, organization_id: UUID, email: str, holder_name: str, currency: str) -> None:
        self.organization_id = organization_id
        self.email = email.strip().lower()
        self.holder_name = holder_name
        self.currency = currency
        self.balance_cents = 0
        self.entries: list[dict[str, Any]] = []

    def credit(self, amount_cents: int, memo: str, proposal_id: UUID | None) -> None:
        if amount_cents <= 0:
            raise OrderRuleError("account credit must be a positive amount")
        self._credited(
            amount_cents=amount_cents,
            memo=memo,
            proposal_id=str(proposal_id) if proposal_id else None,
        )

    @event("Credited")
    def _credited(self, amount_cents: int, memo: str, proposal_id: str | None) -> None:
        self.balance_cents += amount_cents
        self.entries.append(
            {"amount_cents": amount_cents, "memo": memo, "proposal_id": proposal_id}
        )
