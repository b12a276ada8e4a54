"""What the orders section's contracts share: the facts (an order, and its participant's club
account, loaded only when an operation needs it: a refund to account credit), and how their
choice of where the money goes reads on the Edit page."""

from __future__ import annotations

from countersign.domain.club.accounts import MemberAccount
from countersign.domain.club.orders import Order
from countersign.domain.contracts.base import Facts
from countersign.domain.contracts.presentation import Localized, RequestField
from countersign.domain.errors import NotFoundError
from countersign.domain.ports import Repository
from eventsourcing.domain import Aggregate

REFUND_DESTINATION = RequestField(
    Localized("Where the money goes", "Où va l'argent"),
    options={
        "original_payment_method": Localized(
            "Back to the original payment method", "Sur le moyen de paiement d'origine"
        ),
        "account_credit": Localized("As credit on the club account", "En crédit au compte du club"),
    },
)
"""The request's ``destination`` of a refund or a cancellation, for people."""

NO_ACCOUNT = Localized(
    "The participant has no club account, so the money can only go back the way it was paid.",
    "Le ou la participant(e) n'a pas de compte au club : l'argent ne peut revenir que par "
    "le moyen de paiement d'origine.",
)
"""Why a refund or a cancellation cannot go to account credit (request problem ``no_account``)."""


class OrderFacts(Facts):
    """The order, and the participant's club account once something asks for it."""

    def __init__(self, order: Order, store: Repository) -> None:
        self.order = order
        self._store = store
        self._account: MemberAccount | None = None
        self._account_loaded = False

    @property
    def account(self) -> MemberAccount | None:
        """The participant's club account; None when they have none."""
        if not self._account_loaded:
            account_id = MemberAccount.create_id(
                self.order.organization_id, self.order.participant_email
            )
            try:
                self._account = self._store.get(account_id, MemberAccount)
            except NotFoundError:
                self._account = None
            self._account_loaded = True
        return self._account

    def aggregates(self) -> list[Aggregate]:
        loaded = self._account if self._account_loaded else None
        return [self.order] + ([loaded] if loaded is not None else [])
