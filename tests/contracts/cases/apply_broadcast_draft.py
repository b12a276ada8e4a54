"""email_broadcast.apply_draft: a local operation on the seeded club's broadcast form."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from countersign.domain.club.broadcasts import BroadcastForm
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import ConformanceCase, Seeded, register


def _form(seeded: Seeded) -> str:
    return str(seeded["broadcast_forms"]["granite"])


def _form_state(cs: Countersign, form_id: str) -> Any:
    form = cs.store.get(UUID(form_id), BroadcastForm)
    return {
        "version": form.version,  # every applied draft is an event: a second one shows
        "filters": form.filters,
        "subject": form.subject,
        "body": form.body,
        "applied_from": form.applied_from,
    }


def _someone_joins_a_league(cs: Countersign, form_id: str) -> None:
    cs.club.join("granite", "Thursday Seniors", "Grace Kim", "grace.kim@example.com")


CASE = register(
    ConformanceCase(
        kind="email_broadcast.apply_draft",
        request={
            "filters": {"leagues": ["Thursday Seniors", "Monday Night Open"]},
            "subject": "Ice times change next week",
            "body": "Draws move 30 minutes later.\nSee you on the ice.",
        },
        resource=_form,
        observe=_form_state,
        make_stale=_someone_joins_a_league,
        stale_reason="audience_changed",
    )
)
