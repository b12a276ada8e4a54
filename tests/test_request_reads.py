"""One request's reads (``EventSourcedStore.one_request``): the API reads the organization once
per request, freshly each time, and what a request commits is what it reads afterwards.

The token's check (``authenticate``) and the proposal's check (``visible_proposal``) both need
the caller's membership: within one request the second takes what the first read, a moment
before, instead of another query; the next request reads it afresh, so a permission taken
away between two requests is refused on the second (tests/test_http_api.py checks the same
through the routes)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from countersign.application.ports import Answer, Reads
from countersign.domain.club.orders import Order
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.errors import NotFoundError
from countersign.domain.pending_slot import PendingSlot
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, MIA, TO_CARD
from tests.support.proposing import proposal
from tests.support.store_queries import store_queries

GRANITE = Organization.create_id("granite")


def _set_permissions(cs: Countersign, permissions: list[Permission]) -> None:
    granite = cs.store.get(GRANITE, Organization)
    granite.change_permissions(AVA, permissions)
    cs.store.save(granite)


def test_an_api_request_reads_the_organization_once_and_the_next_one_reads_it_again(
    cs, seeded, monkeypatch
):
    token = issue_token(cs, "granite", "bot", ["orders.refund"], issued_by=AVA, kind="approver")
    first = proposal(cs, seeded, "refund-ok", request=TO_CARD).proposal_id
    second = proposal(cs, seeded, "refund-ok", request=TO_CARD).proposal_id
    headers = {"Authorization": f"Bearer {token.token}"}
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        asked = store_queries(cs, monkeypatch)
        answer = client.post(f"/api/v1/proposals/{first}/approve", headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"] in ("executed", "not_approvable")
        # The token's check read it (with the proposal the path names, read_along); the
        # proposal's check took that read (before: twice). (Decisions read it with their own
        # reads, as ever: they fetch several at once, held first.)
        assert asked[0] == [GRANITE, UUID(first)], asked
        assert [GRANITE] not in asked, asked

        # Taken away between two requests: the next request reads it afresh and is refused.
        _set_permissions(cs, [Permission.READ_AUDIT])
        asked.clear()
        refused = client.post(f"/api/v1/proposals/{second}/approve", headers=headers)
        assert refused.status_code == 403, refused.text
        assert asked == [[GRANITE, UUID(second)]], asked


def test_what_a_request_commits_is_what_it_reads_afterwards(cs, seeded, monkeypatch):
    """A read after the request's own commit queries again: never the state from before it."""
    with cs.store.one_request():
        before = cs.store.read(GRANITE, Organization)
        asked = store_queries(cs, monkeypatch)
        assert cs.store.read(GRANITE, Organization) is before
        assert asked == []
        _set_permissions(cs, [Permission.READ_AUDIT])
        after = cs.store.read(GRANITE, Organization)
        assert after.version == before.version + 1
        member = after.member(AVA)
        assert member is not None
        assert not member.may(Permission.REFUND_ORDERS)
    # Outside a request every read outside a decision queries, as before.
    asked.clear()
    cs.store.read(GRANITE, Organization)
    cs.store.read(GRANITE, Organization)
    assert asked == [[GRANITE], [GRANITE]]


def test_one_requests_reads_are_not_another_stores(cs, other, seeded, monkeypatch):
    """Two stores in one process (two databases, or two wirings of one) keep their reads
    apart: a request of one never answers a read of the other."""
    with cs.store.one_request():
        cs.store.read(GRANITE, Organization)
        asked = store_queries(other, monkeypatch)
        other.store.read(GRANITE, Organization)
        assert asked == [[GRANITE]]


# -- an answer decided on what the request itself read stands (read_in_this_request) ---------


def _answer_deciding(store: Any, ids: list[UUID], runs: list[bool]) -> Any:
    """A decision that reads ``ids`` and answers (commits nothing); ``runs`` counts its runs."""

    def decision(repository: Any) -> Answer[int]:
        runs.append(True)
        return Answer(sum(repository.read(i, Organization).version for i in ids))

    return store.decide(Reads(ids), decision)


def test_an_answer_on_snapshots_the_request_read_itself_is_not_decided_again(cs, seeded):
    """Decided on held snapshots, an answer is normally decided again on fresh reads; when
    every snapshot it read is what the request had queried itself, it stands."""
    runs: list[bool] = []
    with cs.store.one_request():
        cs.store.read(GRANITE, Organization)  # fresh, in this request
        _answer_deciding(cs.store, [GRANITE], runs)
    assert len(runs) == 1
    runs.clear()
    _answer_deciding(cs.store, [GRANITE], runs)  # no request: held, then fresh
    assert len(runs) == 2


def test_an_answer_on_a_snapshot_the_request_did_not_read_is_decided_again(cs, other, seeded):
    """A snapshot held from before the request (here: older than the database's state, which
    another process moved on) is never the ground of an answer: the decision runs again on
    fresh reads and answers from the database's state."""
    maple = Organization.create_id("maple")
    held = cs.store.read(maple, Organization).version  # held, from before the request
    moved = other.store.get(maple, Organization)
    moved.change_permissions(MIA, [Permission.READ_AUDIT, Permission.MANAGE_MEMBERS])
    other.store.save(moved)  # another process moves maple on
    runs: list[bool] = []
    with cs.store.one_request():
        granite = cs.store.read(GRANITE, Organization).version  # fresh, in this request
        answer = _answer_deciding(cs.store, [GRANITE, maple], runs)
    assert len(runs) == 2
    assert answer == granite + held + 1


def test_what_a_request_reads_along_comes_with_its_next_query(cs, seeded, monkeypatch):
    """``read_along``: fetched with the request's next query, whatever that reads; then
    taken from the request, or known absent until the request itself writes it."""
    order = UUID(str(seeded["orders"]["refund-ok"]))
    slot_id = PendingSlot.create_id(GRANITE, order)  # no slot yet: nothing proposed on it
    with cs.store.one_request():
        asked = store_queries(cs, monkeypatch)
        cs.store.read_along(order)
        cs.store.read_along(slot_id)
        cs.store.read(GRANITE, Organization)
        assert cs.store.read(order, Order).id == order
        with pytest.raises(NotFoundError):
            cs.store.read(slot_id, PendingSlot)
        assert asked == [[GRANITE, order, slot_id]]
        cs.store.save(PendingSlot(organization_id=GRANITE, resource_id=order))
        assert cs.store.read(slot_id, PendingSlot).resource_id == order  # written: read again
        assert asked == [[GRANITE, order, slot_id], [slot_id]]
    cs.store.read_along(order)  # outside a request: nothing
    cs.store.read(GRANITE, Organization)
    assert asked[-1] == [GRANITE]
