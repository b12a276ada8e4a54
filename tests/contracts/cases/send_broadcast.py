"""email_broadcast.send: the draft applied to the seeded club's broadcast form, sent through the
e-mail delivery sandbox (an external effect)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from countersign.domain.club.broadcasts import BroadcastForm
from countersign.infrastructure.adapters.email_sandbox import LOST_RESPONSE
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import ConformanceCase, Seeded, register
from countersign.infrastructure.testing.deployment import AVA

DRAFT = {
    "filters": {"leagues": ["Thursday Seniors", "Monday Night Open"]},
    "subject": "Ice times change next week",
    "body": "Draws move 30 minutes later.\nSee you on the ice.",
}


def _form(seeded: Seeded) -> str:
    return str(seeded["broadcast_forms"]["granite"])


def _draft_applied(cs: Countersign, seeded: Seeded) -> None:
    """What a send acts on: a draft Ava proposed and approved into the form."""
    created = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation="email_broadcast.apply_draft",
        resource_id=_form(seeded),
        request=DRAFT,
    )
    assert cs.proposals.approve(created.proposal_id, AVA).status == "succeeded"


def _form_state(cs: Countersign, form_id: str) -> Any:
    form = cs.store.get(UUID(form_id), BroadcastForm)
    return {
        "version": form.version,  # every send is recorded on the form: a second one shows
        "draft": form.draft,
        "sends": [(s.draft, s.status, s.recipients) for s in form.sends],
    }


def _someone_joins_a_league(cs: Countersign, form_id: str) -> None:
    cs.club.join("granite", "Thursday Seniors", "Grace Kim", "grace.kim@example.com")


def _lost_response_address_joins(cs: Countersign, form_id: str) -> None:
    cs.club.join("granite", "Thursday Seniors", "Delivery test", LOST_RESPONSE)


CASE = register(
    ConformanceCase(
        kind="email_broadcast.send",
        request={},
        resource=_form,
        arrange=_draft_applied,
        observe=_form_state,
        make_stale=_someone_joins_a_league,
        stale_reason="broadcast_audience_count_changed",
        lose_response=_lost_response_address_joins,
    )
)
