"""Held: an approver token cannot grow the service log, or write, without bound.

The attack run repeated decisions on a decided proposal with an approver token: each answered
its stored outcome, and each added a row to ``api_service_actions``, a table the caller grew
as fast as it could send. Now an answer that changed nothing (a decision repeated on a decided
proposal, a setting given the value it has) is logged and not recorded: the answer that did
something is the record. And every change to the club's settings a token sends counts against
``COUNTERSIGN_TOKEN_WRITE_LIMIT`` (its proposals and assistant messages have their own
limits; its decisions are bounded by the proposals): past it, 429 with Retry-After, and
nothing is done.
"""

from __future__ import annotations

from typing import Any

from countersign.application.proposal_limit import RateLimit
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.identity.tokens import service_actions
from countersign.infrastructure.settings import Settings

from tests.attacks.conftest import Api, assert_no_leak, problem
from tests.conftest import AVA, MIA, REFUND

LIMIT = RateLimit.parse("60/minute")  # COUNTERSIGN_TOKEN_WRITE_LIMIT's default


def _rows(api: Api, target: str) -> list[dict[str, Any]]:
    return [row for row in service_actions(api.cs, "granite") if row["target"] == target]


def test_repeated_decisions_on_a_decided_proposal_add_no_rows(api: Api) -> None:
    proposal_id = api.propose()
    first = api.post(f"/api/v1/proposals/{proposal_id}/approve")
    assert first.json()["result"] == "executed"

    for _ in range(5):
        again = api.post(f"/api/v1/proposals/{proposal_id}/approve")
        assert again.status_code == 200
        assert again.json()["result"] == "already_completed"
        assert again.json()["outcome"] == first.json()["outcome"]  # the stored outcome
        late = api.post(f"/api/v1/proposals/{proposal_id}/decline")
        assert (late.status_code, late.json()["result"]) == (200, "already_completed")

    assert [(row["action"], row["result"]) for row in _rows(api, proposal_id)] == [
        ("propose", "pending"),
        ("approve", "executed"),
    ]


def test_setting_a_policy_to_what_it_is_adds_no_rows(api: Api) -> None:
    body = {"approvals": 1, "requester_may_approve": True}
    path = f"/api/v1/policies/{REFUND}"
    answers = [api.client.put(path, headers=api.headers(AVA), json=body) for _ in range(4)]
    assert [answer.status_code for answer in answers] == [200] * 4
    assert [answer.json()["changed"] for answer in answers[1:]] == [False] * 3
    assert len(_rows(api, REFUND)) == int(answers[0].json()["changed"])


def test_the_write_limit_is_a_setting_of_sixty_a_minute_by_default(monkeypatch) -> None:
    assert RateLimit.parse(Settings().token_write_limit) == LIMIT
    monkeypatch.setenv("COUNTERSIGN_TOKEN_WRITE_LIMIT", "500/hour")
    assert Settings.from_env().token_write_limit == "500/hour"


def test_a_token_setting_a_policy_back_and_forth_stops_at_its_write_limit(
    api: Api, clock: FakeClock
) -> None:
    """Each change of a policy is an event: a loop flipping one would grow the log without
    bound. Past the limit, 429 and nothing done; decisions are not counted (each one that
    records anything is bounded by the proposals), another club's token is not held back, and
    after the wait the token may change settings again."""
    path = f"/api/v1/policies/{REFUND}"
    flips = [{"approvals": n, "requester_may_approve": True} for n in (2, 1)]
    for i in range(LIMIT.count):
        changed = api.client.put(path, headers=api.headers(AVA), json=flips[i % 2])
        assert changed.status_code == 200, changed.text
    before = api.client.get("/api/v1/policies", headers=api.headers(AVA)).json()

    refused = api.client.put(path, headers=api.headers(AVA), json=flips[LIMIT.count % 2])

    status, document = problem(refused)
    assert status == 429
    assert document["title"] == "Too many changes"
    assert 1 <= int(refused.headers["retry-after"]) <= LIMIT.seconds
    assert_no_leak(refused.text)
    assert api.client.get("/api/v1/policies", headers=api.headers(AVA)).json() == before
    # The same token's decisions go on (a service relaying its managers' approvals).
    pending = api.propose("refund-stale")
    assert api.post(f"/api/v1/proposals/{pending}/approve").json()["result"] == "executed"
    # Another club's token is not held back by it; and after the wait, it may change again.
    maple = api.client.put(path, headers=api.headers(MIA), json=flips[0])
    assert maple.status_code == 200, maple.text
    clock.advance(seconds=LIMIT.seconds + 1)
    again = api.client.put(path, headers=api.headers(AVA), json=flips[LIMIT.count % 2])
    assert again.status_code == 200, again.text
