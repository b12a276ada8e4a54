"""Issue 23, part 4: no limit on proposing, and stale notifications were still sent.

The attack run made 200 proposals in 1.8 s from one token: Noah got 200 "awaits your
approval" e-mails and the webhook 200 posts, though 199 of those proposals were superseded by
then. Now a member may make ``COUNTERSIGN_PROPOSAL_LIMIT`` proposals (default 30 a minute)
as themselves (the pages, the command line, their own chat) and as many through each API
token of theirs (the API and MCP together), each counted apart; past it the API answers 429 with
Retry-After, and the model loop gets a plain refusal. The sender does not send "awaits your
approval" about a proposal that no longer awaits it, and says why.
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pytest
from countersign.application.authorization import Caller
from countersign.application.proposal_limit import (
    ProposalLimiter,
    RateLimit,
    TooManyProposalsError,
)
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import authenticate, issue_token
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.proposal_counts import SqlProposalCounts
from countersign.infrastructure.settings import Settings, SettingsError

from tests.attacks.conftest import (
    Api,
    Web,
    assert_no_leak,
    assert_nothing_changed,
    problem,
    snapshot,
)
from tests.conftest import AVA, MIA, REFUND, TO_CARD, count_events
from tests.mcp_client import error_of, over_http
from tests.receivers import LOOPBACK_NETWORKS, receiving
from tests.servers import serving

if TYPE_CHECKING:  # the MCP SDK is imported where it is used (docs/testing.md)
    from mcp import ClientSession

LIMIT = RateLimit.parse(Settings().proposal_limit)
PROPOSALS = "/api/v1/proposals"
REFUND_TOOL = "propose_order_refund_missing_discount"
WORDS = "Olivia says she registered early but never got her early-bird discount. Fix it?"


def _body(api: Api) -> dict[str, Any]:
    return {
        "operation": REFUND,
        "resource_id": api.seeded["orders"]["refund-ok"],
        "request": TO_CARD,
    }


def test_the_default_is_thirty_a_minute_and_a_bad_setting_is_refused(monkeypatch) -> None:
    assert (LIMIT.count, LIMIT.seconds) == (30, 60)
    monkeypatch.setenv("COUNTERSIGN_PROPOSAL_LIMIT", "500/hour")
    assert Settings.from_env().proposal_limit == "500/hour"
    monkeypatch.setenv("COUNTERSIGN_PROPOSAL_LIMIT", "lots")
    with pytest.raises(SettingsError, match="30/minute"):
        Settings.from_env()


def test_a_token_flooding_proposals_gets_429_with_retry_after(api: Api, clock: FakeClock) -> None:
    for _ in range(LIMIT.count):
        assert api.post(PROPOSALS, _body(api)).status_code == 201
    before = snapshot(api.cs)
    refused = api.post(PROPOSALS, _body(api))
    status, document = problem(refused)
    assert status == 429
    assert document["title"] == "Too many proposals"
    assert 1 <= int(refused.headers["retry-after"]) <= LIMIT.seconds
    assert_no_leak(refused.text)
    assert_nothing_changed(api.cs, before)
    # Another member of another club is not held back by it.
    maple = {**_body(api), "resource_id": api.seeded["orders"]["maple-refund"]}
    assert api.post(PROPOSALS, maple, as_=MIA).status_code == 201
    clock.advance(seconds=LIMIT.seconds + 1)
    assert api.post(PROPOSALS, _body(api)).status_code == 201


def test_the_limit_is_one_across_entry_points(api: Api) -> None:
    """A member's own proposals through the command line and the Python API (both
    ``cs.access``) count together; a token's through the API, MCP and ``cs.access`` given its
    caller count together too, apart from its person's."""
    ava = Caller(AVA, "granite")
    order = api.seeded["orders"]["refund-ok"]
    for _ in range(LIMIT.count):
        api.cs.access.propose(ava, operation=REFUND, resource_id=order, request=TO_CARD)
    with pytest.raises(TooManyProposalsError):
        api.cs.access.propose(ava, operation=REFUND, resource_id=order, request=TO_CARD)
    found = authenticate(api.cs, api.tokens[AVA])
    assert found is not None
    for _ in range(LIMIT.count - 1):
        api.cs.access.propose(found.caller, operation=REFUND, resource_id=order, request=TO_CARD)
    assert api.post(PROPOSALS, _body(api)).status_code == 201
    revised = api.post(f"{PROPOSALS}/{_newest(api)}/revisions", {"request": TO_CARD})
    assert revised.status_code == 429


def test_an_agent_tokens_flood_leaves_its_person_their_own_proposals_and_edits(
    api: Api, web: Web
) -> None:
    """An attack run had an agent token make the limit's 30 proposals in a minute: for that
    minute Ava could neither edit a proposal (her approver token's revision, the page's edit:
    429) nor propose on the pages, though only people may edit. Now each token's proposals
    are counted apart from its person's own and from her other tokens'."""
    agent = issue_token(
        api.cs, "granite", "flooder", ["orders.refund"], issued_by=AVA, kind="agent"
    )
    flooder = {"Authorization": f"Bearer {agent.token}"}
    body = {**_body(api), "resource_id": api.seeded["orders"]["refund-declined"]}
    for _ in range(LIMIT.count):
        assert api.client.post(PROPOSALS, headers=flooder, json=body).status_code == 201
    refused = api.client.post(PROPOSALS, headers=flooder, json=body)
    assert problem(refused)[0] == 429

    # Ava edits the agent's proposal through her approver token, and on the pages.
    newest = _newest(api)
    edited = api.post(f"{PROPOSALS}/{newest}/revisions", {"request": TO_CARD})
    assert edited.status_code == 201, edited.text
    original = web.propose("refund-stale")  # her own, as herself: not held back either
    account = {"payment": "P1", "line_item": "L1", "discount": "D1"}
    page = web.member(AVA).submit(
        f"/proposals/{original}/edit", {**account, "destination": "account_credit"}
    )
    assert page.status_code in (200, 303), page.text[:300]
    assert web.status(original) == "superseded"
    # The flooding token is still held back.
    assert api.client.post(PROPOSALS, headers=flooder, json=body).status_code == 429


def test_the_assistant_passes_on_a_plain_refusal(api: Api) -> None:
    ava = Caller(AVA, "granite")
    order = api.seeded["orders"]["refund-ok"]
    for _ in range(LIMIT.count):
        api.cs.access.propose(ava, operation=REFUND, resource_id=order, request=TO_CARD)
    before_proposals = count_events(api.cs, "Proposal.Proposed")
    before = snapshot(api.cs)
    for language, words in (("en", "try again in"), ("fr", "réessayez dans")):
        report = api.cs.assistant.turn(
            organization="granite",
            actor=AVA,
            section="orders",
            resource_id=order,
            message=WORDS,
            language=language,
        ).to_json()
        assert report["proposal"] is None
        assert report["ended"] == "rate_limited"
        assert report["model_calls"] == 2  # a read, the refused proposal, and no more rounds
        [closing] = [m["text"] for m in report["messages"] if m["author"] == "application"]
        assert words in closing
        assert "Nothing was changed" in closing or "Rien n'a été modifié" in closing
    assert snapshot(api.cs).refunds == before.refunds
    assert count_events(api.cs, "Proposal.Proposed") == before_proposals


def _fill_the_limit(cs: Countersign, order: str) -> None:
    """Ava makes as many proposals as the limit allows, as the CLI and MCP would."""
    for _ in range(LIMIT.count):
        cs.access.propose(
            Caller(AVA, "granite"), operation=REFUND, resource_id=order, request=TO_CARD
        )


def test_an_agent_past_the_limit_gets_a_plain_mcp_refusal(cs, seeded) -> None:
    """An agent flooding proposals through MCP gets a tool error it can read and pass on:
    ``too_many_proposals`` and a sentence saying when to try again; nothing is proposed."""
    from countersign.infrastructure.entrypoints.mcp import http_app

    order = seeded["orders"]["refund-ok"]
    agent = issue_token(cs, "granite", "agent", ["orders.refund"], issued_by=AVA, kind="agent")
    found = authenticate(cs, agent.token)
    assert found is not None
    for _ in range(LIMIT.count):  # the token's own proposals, as the API would make them
        cs.access.propose(found.caller, operation=REFUND, resource_id=order, request=TO_CARD)
    before = snapshot(cs)

    async def proposing(session: ClientSession) -> dict[str, Any]:
        return error_of(await session.call_tool(REFUND_TOOL, {"resource_id": order, **TO_CARD}))

    with serving(http_app(cs), lifespan="on") as running:
        refused = over_http(running.base, agent.token, proposing)

    assert refused["error"] == "too_many_proposals"
    said = re.fullmatch(
        r"too many proposals in a short time; try again in (\d+) seconds", refused["message"]
    )
    assert said is not None, refused
    assert 1 <= int(said.group(1)) <= LIMIT.seconds
    # The wait as a number a program reads, as the API's Retry-After (only in prose before).
    assert refused["retry_after"] == int(said.group(1))
    assert_nothing_changed(cs, before)


def test_an_edit_on_the_pages_past_the_limit_is_a_429_page(web: Web) -> None:
    """The page that proposes (an edit is a new proposal) answers 429 with Retry-After and a
    page in words, never a stack trace; nothing is proposed."""
    order = web.seeded["orders"]["refund-ok"]
    original = web.propose("refund-stale")  # another order: filling the limit replaces none
    _fill_the_limit(web.cs, order)
    ava = web.member(AVA)
    before = snapshot(web.cs)

    edit = {"payment": "P1", "line_item": "L1", "discount": "D1", "destination": "account_credit"}
    refused = ava.submit(f"/proposals/{original}/edit", edit)

    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= LIMIT.seconds
    assert refused.headers["content-type"].startswith("text/html")
    assert "Too many proposals for now" in refused.text
    assert "Nothing was changed; wait a minute, then try again." in refused.text
    assert_no_leak(refused.text)
    assert_nothing_changed(web.cs, before)
    assert web.status(original) == "pending"


def test_a_burst_of_concurrent_proposals_admits_exactly_the_limit(cs, clock) -> None:
    """Each thread has its own connection, as separate processes would, and they all ask at
    once. Checking and counting in one step admits exactly the limit. Each admitted thread
    holds its proposal open until every thread has been admitted or refused: a limiter that
    counted only after the proposal was made would admit them all."""
    limit, threads = RateLimit(5, 60), 12
    start = threading.Barrier(threads)
    settled = threading.Condition()
    decided: list[str] = []

    def decide(how: str) -> None:
        with settled:
            decided.append(how)
            settled.notify_all()

    def attempt() -> None:
        sql = SqlDatabase(cs.sql.database)
        try:
            limiter = ProposalLimiter(SqlProposalCounts(sql), limit, clock)
            start.wait(timeout=30)
            try:
                with limiter.admitted("granite", AVA):
                    decide("admitted")
                    with settled:
                        everyone = settled.wait_for(lambda: len(decided) == threads, timeout=30)
                    assert everyone, f"only {len(decided)} of {threads} threads got an answer"
            except TooManyProposalsError:
                decide("refused")
        finally:
            sql.close()

    with ThreadPoolExecutor(threads) as pool:
        for done in [pool.submit(attempt) for _ in range(threads)]:
            done.result(timeout=60)

    admitted = limit.count
    assert sorted(decided) == ["admitted"] * admitted + ["refused"] * (threads - admitted)
    with cs.sql.transaction() as cursor:
        counted = cursor.execute("SELECT COUNT(*) FROM proposal_counts").fetchone()
    assert counted is not None
    assert counted[0] == admitted


def test_a_proposal_refused_for_another_reason_does_not_count(cs, seeded) -> None:
    ava = Caller(AVA, "granite")
    order = seeded["orders"]["refund-ok"]
    for _ in range(LIMIT.count + 1):
        with pytest.raises(InvalidRequestError):
            cs.access.propose(ava, operation=REFUND, resource_id=order, request={"amount": 1})
    _fill_the_limit(cs, order)
    with pytest.raises(TooManyProposalsError):
        cs.access.propose(ava, operation=REFUND, resource_id=order, request=TO_CARD)


def test_the_sender_skips_awaits_your_approval_for_superseded_proposals(cs, seeded) -> None:
    ava = Caller(AVA, "granite")
    order = seeded["orders"]["refund-ok"]
    with receiving() as receiver:
        Webhooks(cs, LOOPBACK_NETWORKS).add(None, "granite", receiver.url)
        made = [
            cs.access.propose(ava, operation=REFUND, resource_id=order, request=TO_CARD)
            for _ in range(5)
        ]
        # Fewer workers than stale deliveries: a claim of stale ones only does not end the pass.
        settings = NotifySettings(allowed_networks=LOOPBACK_NETWORKS, workers=2)
        report = notification_sender(cs, settings).run_once()
        assert (report.delivered, report.skipped) == (1, 4)
        [received] = receiver.received
        assert made[-1].proposal_id.encode() in received.body
    deliveries = Webhooks(cs).deliveries(None, "granite")
    skipped = [d for d in deliveries if d["status"] == "skipped"]
    assert {d["proposal_id"] for d in skipped} == {m.proposal_id for m in made[:-1]}
    assert {d["attempt_log"][0]["result"] for d in skipped} == {
        "not sent: the proposal no longer awaits approval"
    }


def _newest(api: Api) -> str:
    items = api.get("/api/v1/inbox").json()["items"]
    return str(items[0]["proposal_id"])
