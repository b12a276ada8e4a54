"""Session 30's approve round (docs/speed.md, "The cycle's cost"): the proposal's links on
the approve path are computed with the library's ``_version`` (what its ``version`` property
returns, without the property's call) and a dict of the event's fields (no keyword call of
``_link``), and ``approve_and_claim`` calls the approval's body by position. Every link is
the one ``chain_link`` makes of the previous link, the event's version and its fields, and
every refusal is as before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from countersign.domain.errors import IllegalTransitionError
from countersign.domain.hash_chain import chain_link, contract_digest
from countersign.domain.proposal import Proposal, ProposalStatus
from eventsourcing.domain import Aggregate

NOW = datetime(2026, 12, 5, 4, 30, tzinfo=UTC)
OUTCOME = {"kind": "succeeded", "result": {"form_id": "f", "audience_count": 3}}
FACTS = {"audience_count": 3, "leagues": ["Thursday Seniors", "Sunday Juniors"]}

#: The fields of each event a link covers (every field but ``chain`` and the library's own).
_LIBRARY = {"originator_id", "originator_version", "timestamp", "chain"}


def _pending() -> Proposal:
    return Proposal.propose(
        id=uuid4(),
        organization_id=uuid4(),
        section="email_broadcasts",
        resource_id=uuid4(),
        requested_by="ava@granite.example",
        interaction_id="int-s30",
        kind="email_broadcast.apply_draft",
        contract_version=1,
        arguments={"a": 1},
        preview={"p": 1},
        expires_at=NOW + timedelta(days=1),
        digest=contract_digest("email_broadcast.apply_draft", 1, {"a": 1}, {"p": 1}),
    )


def _collected(proposal: Proposal) -> list[Any]:
    return list(proposal.collect_events())


def _fields(event: Any) -> dict[str, Any]:
    return {key: value for key, value in event.__dict__.items() if key not in _LIBRARY}


def _assert_linked(events: list[Any], first_chain: str) -> None:
    """Each event's link is ``chain_link`` of the previous one, its own version (the
    library's ``version`` of the aggregate before it, plus one), its fields and its time."""
    previous = first_chain
    for event in events:
        expected = chain_link(
            previous,
            event.originator_version,
            type(event).__name__,
            _fields(event),
            event.timestamp,
        )
        assert event.chain == expected
        previous = event.chain


def test_the_approve_paths_links_are_chain_links_of_the_version_and_fields() -> None:
    proposal = _pending()
    proposed = _collected(proposal)
    first = proposed[0].chain
    attempt = uuid4()
    proposal.approve_and_claim(
        "ava@granite.example",
        NOW,
        attempt,
        "manager",
        credential="approver_token:billing",
        membership_id="m-1",
    )
    assert proposal.version == Aggregate.version.fget(proposal) == 3  # type: ignore[attr-defined]
    proposal.record_revalidated(FACTS)
    proposal.succeed(OUTCOME)
    events = _collected(proposal)
    assert [type(e).__name__ for e in events] == ["Approved", "Claimed", "Revalidated", "Succeeded"]
    assert [e.originator_version for e in events] == [2, 3, 4, 5]
    _assert_linked(events, first)
    approved = _fields(events[0])
    assert approved == {
        "approved_by": "ava@granite.example",
        "approved_at": NOW,
        "role": "manager",
        "credential": "approver_token:billing",
        "membership_id": "m-1",
        "passkey": None,
    }
    assert _fields(events[1]) == {"attempt_id": attempt, "claimed_at": NOW}
    assert events[2].facts is FACTS
    assert events[3].outcome is OUTCOME
    assert proposal.chain == events[3].chain
    assert proposal.status == ProposalStatus.SUCCEEDED
    assert (proposal.approvals, proposal.approver_roles) == (("ava@granite.example",), ("manager",))
    assert proposal.approver_credentials == ("approver_token:billing",)
    assert proposal.approver_memberships == ("m-1",)


def test_a_link_follows_the_version_however_many_events_came_before() -> None:
    """Links after other events (earlier approvals, a lapse) and after a replay, whose version
    the library set from the stored events: each still names the version it is stored at."""
    proposal = _pending()
    proposal.approve("mia@granite.example", NOW, "staff")
    proposal.approve("noah@granite.example", NOW, credential="person", membership_id="m-2")
    proposal.lapse_approval("mia@granite.example", "removed")
    earlier = _collected(proposal)
    replayed: Any = None
    for event in earlier:
        replayed = event.mutate(replayed)
    assert isinstance(replayed, Proposal)
    assert replayed.version == 4
    replayed.approve_and_claim("ava@granite.example", NOW, uuid4())
    replayed.record_revalidated(FACTS)
    replayed.succeed(OUTCOME)
    later = _collected(replayed)
    assert [e.originator_version for e in later] == [5, 6, 7, 8]
    _assert_linked([*earlier[1:], *later], earlier[0].chain)


def test_approve_keeps_its_keywords_defaults_and_refusals() -> None:
    proposal = _pending()
    _collected(proposal)
    proposal.approve("mia@granite.example", NOW)
    (approved,) = _collected(proposal)
    assert _fields(approved)["role"] is None
    assert approved.credential == "person"
    assert approved.membership_id is None
    assert approved.passkey is None
    with pytest.raises(IllegalTransitionError) as twice:
        proposal.approve("mia@granite.example", NOW)
    assert (twice.value.action, twice.value.status) == ("approve twice", ProposalStatus.PENDING)
    with pytest.raises(IllegalTransitionError) as claimed_twice:
        proposal.approve_and_claim("mia@granite.example", NOW, uuid4())
    assert claimed_twice.value.action == "approve twice"
    assert _collected(proposal) == []
    proposal.approve_and_claim("ava@granite.example", NOW, uuid4())
    with pytest.raises(IllegalTransitionError) as executing:
        proposal.approve_and_claim("noah@granite.example", NOW, uuid4())
    assert (executing.value.action, executing.value.status) == (
        "approve",
        ProposalStatus.EXECUTING,
    )
