"""Proposing reads its facts without copying them and without any way to change them."""

from __future__ import annotations

from uuid import UUID

import pytest
from countersign.application.ports import SharedSnapshots
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.orders import Order

from tests.conftest import AVA, DRAFT, REFUND, TO_CARD

DRAFT_REQUEST = {"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Hi", "body": "Hello"}


def test_facts_are_the_shared_state_and_cannot_be_saved(cs, seeded):
    facts = SharedSnapshots(cs.store)
    order_id = cs.store.read(UUID(seeded["orders"]["refund-ok"]), Order).id
    assert facts.get(order_id, Order) is cs.store.read(order_id, Order)
    assert not hasattr(facts, "save")  # the Repository port it implements has no save


@pytest.mark.parametrize(
    ("operation", "resource", "request_body"),
    [
        (DRAFT, lambda seeded: seeded["broadcast_forms"]["granite"], DRAFT_REQUEST),
        (REFUND, lambda seeded: seeded["orders"]["refund-ok"], TO_CARD),
    ],
)
def test_proposing_leaves_the_resource_as_it_was(cs, seeded, operation, resource, request_body):
    resource_id = resource(seeded)
    kind = BroadcastForm if operation == DRAFT else Order
    uuid = UUID(resource_id)
    before = cs.store.read(uuid, kind)
    state = dict(vars(before))

    cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=operation,
        resource_id=resource_id,
        request=request_body,
    )

    after = cs.store.read(uuid, kind)
    assert after.version == before.version
    assert vars(after) == state
