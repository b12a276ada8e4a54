"""A notification's event id never changes: receivers deduplicate by it, across rebuilds and
releases. It is ``msg_`` and the hex of uuid5 over the proposal id and the event's version."""

from __future__ import annotations

from uuid import UUID, uuid4, uuid5

import pytest
from countersign.projections.notifications import notification_id

_NAMESPACE = UUID("0b8f3c52-91d4-4e0a-a7c4-5d2f7f0d6e13")


@pytest.mark.parametrize(
    ("proposal_id", "version", "expected"),
    [
        ("5f0c1a2e-7b3d-4c8e-9a1f-2d3e4f5a6b7c", 1, "msg_1efb0cda5213543b9be759d37a0e597d"),
        ("5f0c1a2e-7b3d-4c8e-9a1f-2d3e4f5a6b7c", 7, "msg_8724d9e1df275130b14bddb905d215fa"),
        ("proposition-é", 12, "msg_bb85703eaa7459d297061e30c963a7ed"),
    ],
)
def test_a_notification_keeps_the_id_it_was_first_given(proposal_id, version, expected):
    assert notification_id(proposal_id, version) == expected


def test_notification_ids_are_the_uuid5_of_the_proposal_and_version():
    for version in range(1, 200):
        proposal_id = str(uuid4())
        expected = f"msg_{uuid5(_NAMESPACE, f'{proposal_id}/{version}').hex}"
        assert notification_id(proposal_id, version) == expected
