"""What the entry points (CLI, API, web) call to manage a club's webhooks and their deliveries.

The endpoint itself is an organization event (the application checks who may add it); its
signing secret is made here and kept in the ledger's ``webhook_secrets``, shown once.
Deliveries and dead letters are read and redelivered after the same check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from countersign.application.access import Caller
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.notifications.ledger import DeliveryLedger
from countersign.infrastructure.notifications.sender import NotificationSender
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.signing import new_secret


@dataclass(frozen=True)
class AddedEndpoint:
    """A newly registered endpoint. ``secret`` is the only copy shown: show it once."""

    endpoint_id: str
    url: str
    organization: str
    secret: str

    def to_json(self) -> dict[str, Any]:
        return {
            "endpoint_id": self.endpoint_id,
            "url": self.url,
            "organization": self.organization,
            "secret": self.secret,
        }


class Webhooks:
    """A club's webhook endpoints and its deliveries, for a caller (None: the operator)."""

    def __init__(self, cs: Countersign) -> None:
        self.cs = cs
        self.ledger = DeliveryLedger(cs.sql)

    def add(self, caller: Caller | None, organization: str, url: str) -> AddedEndpoint:
        endpoint = self.cs.notifications.add_endpoint(caller, organization, url)
        secret = new_secret()
        org_id = self.cs.club.organization_id(organization)
        self.ledger.store_secret(
            endpoint.endpoint_id, org_id, secret, self.cs.proposals.clock.now()
        )
        return AddedEndpoint(
            endpoint.endpoint_id, endpoint.url, organization.strip().lower(), secret
        )

    def remove(self, caller: Caller | None, organization: str, endpoint_id: str) -> None:
        self.cs.notifications.remove_endpoint(caller, organization, endpoint_id)
        self.ledger.forget_secret(endpoint_id.strip())

    def endpoints(self, caller: Caller | None, organization: str) -> list[dict[str, str]]:
        return [
            {"endpoint_id": e.endpoint_id, "url": e.url, "added_by": e.added_by}
            for e in self.cs.notifications.endpoints(caller, organization)
        ]

    def deliveries(
        self, caller: Caller | None, organization: str, *, dead_only: bool = False, limit: int = 50
    ) -> list[dict[str, Any]]:
        """The club's deliveries (or only its dead letters), newest first, with attempts."""
        org = self.cs.notifications.managed_organization(caller, organization)
        return self.ledger.deliveries(str(org.id), dead_only=dead_only, limit=limit)

    def redeliver(
        self, caller: Caller | None, organization: str, delivery_id: str | None = None
    ) -> list[str]:
        """Put one dead letter (or all of the club's) back in line; the ids put back."""
        org = self.cs.notifications.managed_organization(caller, organization)
        return self.ledger.redeliver(str(org.id), delivery_id, self.cs.proposals.clock.now())


def notification_sender(
    cs: Countersign, settings: NotifySettings | None = None, **options: Any
) -> NotificationSender:
    """A sender over ``cs``'s database that catches the ``notifications`` projection up
    before each pass."""
    [runner] = cs.projection_runners(["notifications"])
    return NotificationSender(
        DeliveryLedger(cs.sql),
        cs.notifications,
        cs.proposals.clock,
        settings or NotifySettings.from_env(),
        catch_up=runner.catch_up,
        **options,
    )
