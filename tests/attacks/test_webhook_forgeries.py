"""Attack: a receiver is sent forged, tampered or replayed webhook deliveries.

A receiver verifies what countersign signs with the reference ``standardwebhooks`` verifier
and deduplicates by the delivery's ``webhook-id``. These cases hold a real delivery from a
real receiver on 127.0.0.1 and show that each forgery fails verification, and that a
redelivered notification carries the same id, so a receiver that deduplicates acts once.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.conftest import AVA, REFUND, TO_CARD
from tests.receivers import (
    LOOPBACK_NETWORKS,
    Receiver,
    allow_loopback,  # noqa: F401 - autouse
    receiving,
)

SETTINGS = NotifySettings(
    public_url="https://club.example",
    max_attempts=1,
    timeout_seconds=5,
    allowed_networks=LOOPBACK_NETWORKS,
)


def _delivery(cs: Countersign, seeded: dict[str, Any], receiver: Receiver) -> tuple[Any, str]:
    endpoint = Webhooks(cs).add(None, "granite", receiver.url)
    cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    assert notification_sender(cs, SETTINGS).run_once().delivered == 1
    [request] = receiver.received
    return request, endpoint.secret


def test_a_tampered_body_or_a_forged_signature_fails_verification(cs, seeded):
    with receiving() as receiver:
        request, secret = _delivery(cs, seeded, receiver)
    verifier = Webhook(secret)
    assert verifier.verify(request.body, request.headers)["type"] == "proposal.awaiting_approval"

    payload = json.loads(request.body)
    tampered = json.dumps({**payload, "review_url": "https://evil.example/approve"}).encode()
    forged = {**request.headers, "webhook-signature": "v1,Zm9yZ2VkIHNpZ25hdHVyZQ=="}
    other_id = {**request.headers, "webhook-id": "msg_" + "0" * 32}
    for body, headers in ((tampered, request.headers), (request.body, forged),
                          (request.body, other_id)):  # fmt: skip
        with pytest.raises(WebhookVerificationError):
            verifier.verify(body, headers)
    # Signed with another club's secret: refused too.
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "QUJD" * 8).verify(request.body, request.headers)


def test_a_delivery_replayed_later_fails_and_a_redelivery_keeps_its_id(cs, seeded):
    with receiving() as receiver:
        request, secret = _delivery(cs, seeded, receiver)
        # A delivery whose timestamp says an hour ago (a capture replayed, or one re-dated):
        # the signature covers the timestamp, and the verifier refuses stale ones.
        stale = {**request.headers, "webhook-timestamp": str(int(time.time()) - 3600)}
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(request.body, stale)
        # Redelivered by countersign (a dead letter sent again): the same id, so a receiver
        # that deduplicates acts once.
        with receiving(Receiver(statuses=[500])) as down:
            Webhooks(cs).add(None, "granite", down.url)
            cs.proposals.propose(
                organization="granite",
                actor=AVA,
                operation=REFUND,
                resource_id=seeded["orders"]["refund-stale"],
                request=TO_CARD,
            )
            notification_sender(cs, SETTINGS).run_once()
            [dead] = Webhooks(cs).deliveries(None, "granite", dead_only=True)
            Webhooks(cs).redeliver(None, "granite", dead["delivery_id"])
            notification_sender(cs, SETTINGS).run_once()
            assert len(down.ids()) == 2
            assert len(set(down.ids())) == 1
