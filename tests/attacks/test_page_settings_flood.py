"""Held: a person's browser cannot change the club's settings without bound.

An attack run (hD) scripted a manager's own signed-in browser: the members page's form,
posted in a loop, flipped Noah's permission to approve refunds 243 times in 5 seconds, and
the webhooks page added and removed an endpoint 63 times, each change one more event on the
club's stream, kept for ever, in the store every club shares. An API token sending the same
changes stops at ``COUNTERSIGN_TOKEN_WRITE_LIMIT``; a passkey ring at its own limit; the
pages' settings forms had none. Now the person counts as themselves against the same limit
(60 a minute by default, apart from each of their tokens): past it the page answers 429 with
Retry-After, in the person's language, and nothing is done. Decisions are not counted (the
proposals bound them), nor is another club or the person's own token held back.
"""

from __future__ import annotations

import re

from countersign.application.proposal_limit import RateLimit
from countersign.domain.club.organization import Organization, Permission
from countersign.infrastructure.adapters.clock import FakeClock
from httpx2 import Response

from tests.attacks.conftest import Api, Browser, Web, assert_no_leak
from tests.conftest import AVA, MIA, REFUND, count_events

LIMIT = RateLimit.parse("60/minute")  # COUNTERSIGN_TOKEN_WRITE_LIMIT's default
NOAH = "noah@granite.example"
REFUND_PERMISSION = str(Permission.REFUND_ORDERS)


def _noah_holds_refunds(web: Web) -> bool:
    club = web.cs.store.read(Organization.create_id("granite"), Organization)
    member = club.member(NOAH)
    assert member is not None
    return member.may(REFUND_PERMISSION)


def _flip(browser: Browser, grant: bool) -> Response:
    ticked = {f"permission.{REFUND_PERMISSION}": "on"} if grant else {}
    return browser.submit("/members/permissions", {"email": NOAH, **ticked})


def test_a_browser_flipping_a_permission_stops_at_the_limit_and_nothing_is_done(
    api: Api, web: Web, clock: FakeClock
) -> None:
    ava = web.member(AVA)
    for i in range(LIMIT.count):
        flipped = _flip(ava, grant=i % 2 == 1)
        assert flipped.status_code == 303, flipped.text[:300]
    held = _noah_holds_refunds(web)
    events = count_events(web.cs)

    refused = _flip(ava, grant=not held)

    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= LIMIT.seconds
    assert "Too many changes for now" in refused.text
    assert_no_leak(refused.text)
    assert count_events(web.cs) == events
    assert _noah_holds_refunds(web) is held
    # Her decisions go on: the proposals bound them.
    pending = web.propose("refund-ok")
    ava.submit(f"/proposals/{pending}/approve", {"confirm": "yes"})
    assert web.status(pending) != "pending"
    # Her token has a budget of its own, another club's manager is not held back, and after
    # the wait she may change settings again.
    policy = {"approvals": 1, "requester_may_approve": True}
    own_token = api.client.put(f"/api/v1/policies/{REFUND}", headers=api.headers(AVA), json=policy)
    assert own_token.status_code == 200, own_token.text
    mia = web.member(MIA)
    mia.page_token("/webhooks")
    added = mia.submit("/webhooks", {"url": "https://hooks.example.org/maple"})
    assert added.status_code == 201, added.text[:300]
    clock.advance(seconds=LIMIT.seconds + 1)
    assert _flip(ava, grant=not held).status_code == 303
    assert _noah_holds_refunds(web) is not held


def test_adding_and_removing_webhooks_in_a_loop_stops_at_the_limit_in_french_too(
    web: Web,
) -> None:
    ava = web.member(AVA)
    ava.page_token("/webhooks")
    for i in range(LIMIT.count // 2):
        added = ava.submit("/webhooks", {"url": f"https://hooks.example.com/{i}"})
        assert added.status_code == 201, added.text[:300]
        [endpoint] = re.findall(r'name="endpoint" value="([^"]+)"', ava.get("/webhooks").text)
        assert ava.submit("/webhooks/remove", {"endpoint": endpoint}).status_code == 303
    events = count_events(web.cs)

    refused = ava.post(
        "/webhooks",
        {"url": "https://hooks.example.com/last", "csrf_token": ava.csrf_token},
        headers={"Accept-Language": "fr"},
    )
    redelivered = ava.submit("/webhooks/redeliver", {"delivery": "all"})

    assert refused.status_code == 429
    assert "Trop de modifications pour l&#39;instant" in refused.text
    assert refused.headers["retry-after"]
    assert redelivered.status_code == 429
    assert count_events(web.cs) == events
    assert "hooks.example.com/last" not in ava.get("/webhooks").text
