"""What the entry points (CLI, API, web) call to manage a club's webhooks and their deliveries.

The endpoint itself is an organization event (the application checks who may add it); its
signing secret is made here and kept in the ledger's ``webhook_secrets``, shown once.
Deliveries and dead letters are read and redelivered after the same check.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from countersign.application.authorization import Caller
from countersign.domain.club.webhooks import valid_webhook_url
from countersign.domain.errors import DuplicateError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.notifications import delivery_log
from countersign.infrastructure.notifications.channels import RECIPIENTS_REFUSED
from countersign.infrastructure.notifications.destinations import Network, check_url_host
from countersign.infrastructure.notifications.ledger import (
    DELIVERED,
    EMAIL,
    NO_LONGER_PENDING,
    WEBHOOK,
    DeliveryLedger,
)
from countersign.infrastructure.notifications.sender import ENDPOINT_REMOVED, NotificationSender
from countersign.infrastructure.notifications.settings import (
    NotifySettings,
    allowed_networks_from_env,
)
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

    def __init__(
        self, cs: Countersign, allowed_networks: tuple[Network, ...] | None = None
    ) -> None:
        self.cs = cs
        self.allowed_networks = (
            allowed_networks_from_env() if allowed_networks is None else allowed_networks
        )

    @functools.cached_property
    def ledger(self) -> DeliveryLedger:
        """The delivery ledger, its tables made if missing: made when a method needs it, so
        that listing the endpoints (the club's own record) makes no table."""
        return DeliveryLedger(self.cs.sql)

    @functools.cached_property
    def read_ledger(self) -> DeliveryLedger:
        """The delivery ledger to read (the deliveries, the endpoints' health), its tables
        not made: a read on a database where the sender never ran sets nothing up."""
        return DeliveryLedger(self.cs.sql, create=False)

    def add(self, caller: Caller | None, organization: str, url: str) -> AddedEndpoint:
        """Register ``url``. WebhookUrlError for anything but an http(s) URL, and
        AddressNotAllowedError for a host that is an internal address (destinations.py;
        a name is looked up and checked at each attempt, not here), checked only once the
        caller may manage the club."""
        org = self.cs.notifications.managed_organization(caller, organization)
        checked = valid_webhook_url(url)
        check_url_host(urlsplit(checked).hostname or "", self.allowed_networks)
        # The domain refuses the same string twice; the same URL spelt otherwise (a scheme
        # or host in capitals, the default port, no path) would be a second endpoint posting
        # every notification to one receiver twice.
        if any(same_url(checked, e.url) for e in org.webhook_endpoints()):
            raise DuplicateError("this webhook URL is already registered")
        endpoint = self.cs.notifications.add_endpoint(caller, organization, url)
        secret = new_secret()
        org_id = self.cs.club.organization_id(organization)
        self.ledger.store_secret(endpoint.endpoint_id, org_id, secret, self.cs.clock.now())
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

    def health(
        self, caller: Caller | None, organization: str, since: datetime
    ) -> list[dict[str, Any]]:
        """Each of the club's endpoints with its health (``delivery_log.endpoint_health``:
        the last attempt in a club's words, the attempts since ``since`` and how many failed,
        the deliveries that will be tried again and when the next is due)."""
        org = self.cs.notifications.managed_organization(caller, organization)
        found = []
        for endpoint in org.webhook_endpoints():
            health = delivery_log.endpoint_health(
                self.read_ledger, str(org.id), endpoint.endpoint_id, since
            )
            last = health["last_attempt"]
            if last is not None:
                last["result_key"] = result_key(last["status_code"], last.pop("error_class"))
            found.append(
                {
                    "endpoint_id": endpoint.endpoint_id,
                    "url": endpoint.url,
                    "added_by": endpoint.added_by,
                    **health,
                }
            )
        return found

    def failing(self, caller: Caller | None, organization: str) -> int:
        """How many of the club's deliveries failed and will be tried again."""
        org = self.cs.notifications.managed_organization(caller, organization)
        return delivery_log.failing_deliveries(self.read_ledger, str(org.id))

    def deliveries(
        self,
        caller: Caller | None,
        organization: str,
        *,
        dead_only: bool = False,
        limit: int = 50,
        before: str | None = None,
    ) -> list[dict[str, Any]]:
        """The club's deliveries (or only its dead letters), newest first, with attempts;
        ``before``: those listed after that delivery (the next page)."""
        org = self.cs.notifications.managed_organization(caller, organization)
        found = delivery_log.deliveries(
            self.read_ledger, str(org.id), dead_only=dead_only, limit=limit, before=before
        )
        endpoints = {endpoint.endpoint_id for endpoint in org.webhook_endpoints()}
        return [club_view(delivery, endpoints) for delivery in found]

    def redeliver(
        self, caller: Caller | None, organization: str, delivery_id: str | None = None
    ) -> list[str]:
        """Put one dead letter (or all of the club's) back in line; the ids put back. A dead
        letter to an endpoint removed since is left (all of them: skipped; the one named:
        EndpointRemovedError): it would only fail again, and be listed as failing for ever."""
        org = self.cs.notifications.managed_organization(caller, organization)
        endpoints = [endpoint.endpoint_id for endpoint in org.webhook_endpoints()]
        ids = self.ledger.redeliver(str(org.id), delivery_id, self.cs.clock.now(), endpoints)
        if delivery_id is not None and not ids:
            target = delivery_log.dead_letter_to(self.ledger, str(org.id), delivery_id)
            if target is not None and target not in endpoints:
                raise EndpointRemovedError(delivery_id)
        return ids


class EndpointRemovedError(Exception):
    """A dead letter named to be redelivered whose webhook endpoint was removed since."""

    #: What the club reads (the pages' ``notice.redeliver_endpoint_removed`` in French too).
    MESSAGE = (
        "This dead letter was for a webhook endpoint that has since been removed, so there is "
        "nothing to deliver it to and it is not redelivered. To receive new notifications "
        "there, add the endpoint again."
    )
    FRENCH = (
        "Cet envoi abandonné visait un webhook retiré depuis : il n'a plus de destinataire "
        "et n'est donc pas renvoyé. Pour y recevoir les nouvelles notifications, "
        "ajoutez de nouveau ce webhook."
    )


def same_url(one: str, other: str) -> bool:
    """Whether two webhook URLs (already valid) name the same endpoint: the scheme and host
    compared without case, the default port as none, no path as ``/``. The path and query
    are the receiver's own, and compared as written."""
    return _canonical(one) == _canonical(other)


def _canonical(url: str) -> tuple[str, str, int, str, str]:
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return scheme, (parts.hostname or "").rstrip("."), port, parts.path or "/", parts.query


def notification_sender(
    cs: Countersign, settings: NotifySettings | None = None, **options: Any
) -> NotificationSender:
    """A sender over ``cs``'s database that catches the ``notifications`` projection up
    before each pass."""
    [runner] = cs.projection_runners(["notifications"])
    return NotificationSender(
        DeliveryLedger(cs.sql),
        cs.notifications,
        cs.clock,
        settings or NotifySettings.from_env(),
        catch_up=runner.catch_up,
        **options,
    )


#: What a club reads about an attempt, in English (the pages use ``webhooks.result.<key>``).
RESULTS = {
    "delivered": "delivered",
    "answered": "failed: the endpoint answered {code}",
    "relay_answered": "failed: the e-mail relay answered {code}",
    "address_refused": "failed: the e-mail relay refused the address",
    "could_not_connect": "failed: could not connect",
    "endpoint_removed": "failed: the endpoint was removed",
    "skipped": "not sent: the proposal no longer awaits approval",
}


def result_key(status_code: int | None, error_class: str | None, channel: str = WEBHOOK) -> str:
    """Which of RESULTS an attempt was: never an exception's name or a timing, which would map
    the network behind the endpoint. An e-mail's code is the SMTP relay's (250 delivered)."""
    if error_class is None and status_code is not None and 200 <= status_code < 300:
        return "delivered"
    if status_code is not None:
        return "relay_answered" if channel == EMAIL else "answered"
    if error_class == RECIPIENTS_REFUSED:
        return "address_refused"
    if error_class == ENDPOINT_REMOVED:
        return "endpoint_removed"
    if error_class == NO_LONGER_PENDING:
        return "skipped"
    return "could_not_connect"


def result_text(status_code: int | None, error_class: str | None, channel: str = WEBHOOK) -> str:
    return RESULTS[result_key(status_code, error_class, channel)].format(code=status_code)


def club_view(delivery: dict[str, Any], endpoints: Collection[str]) -> dict[str, Any]:
    """A delivery as a club sees it: each attempt's result in plain words, without latency or
    error class, and whether it is a webhook's to an endpoint no longer among ``endpoints``
    (the club's): removed, so it is not tried again, nor redelivered."""
    attempts = []
    channel = delivery["channel"]
    for attempt in delivery["attempt_log"]:
        attempts.append(
            {
                "attempt": attempt["attempt"],
                "started_at": attempt["started_at"],
                "status_code": attempt["status_code"],
                "result": result_text(attempt["status_code"], attempt["error_class"], channel),
                "result_key": result_key(attempt["status_code"], attempt["error_class"], channel),
                "outcome": attempt["outcome"],
                "next_attempt_at": attempt["next_attempt_at"],
            }
        )
    last = attempts[-1] if attempts else None
    return {
        **delivery,
        "last_error": (
            last["result"] if last is not None and delivery["status"] != DELIVERED else None
        ),
        "attempt_log": attempts,
        "endpoint_removed": channel == WEBHOOK and delivery["target"] not in endpoints,
    }
