"""Nothing limited how many assistant turns a member could start.

An outside review had one agent token send 60 turns in 2.1 s: all were answered 200, each
asked the model, and 240 events were written. Now a member may start
``COUNTERSIGN_TURN_LIMIT`` turns (20 a minute by default) as themselves, through the web chat
and the command line together, and as many through each API token of theirs, each counted
apart (an agent's flood leaves its person's own chat alone), checked and counted in one step
in the database, so the limit
holds across processes and a concurrent burst cannot get past it. Past it the API answers 429
with Retry-After, the web chat and the command line say when to try again, in the member's
language, and nothing is recorded: no event, no service action, the model not asked. The model
is scripted behind the real ``openai`` client (``tests/support/slow_model.py``).
"""

from __future__ import annotations

import io
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
from countersign.application.assistant.turn_limits import TurnSlots
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.settings import Settings, SettingsError

from tests.attacks.conftest import (
    Api,
    Web,
    assert_no_leak,
    assert_nothing_changed,
    problem,
    snapshot,
)
from tests.conftest import AVA, MIA, count_events
from tests.servers import serving
from tests.support.slow_model import MESSAGES, SlowModel

#: The documented default (README, "Configuration"): 20 turns a minute per member.
LIMIT, WINDOW = 20, 60


def test_twenty_a_minute_by_default_and_a_bad_limit_is_refused(monkeypatch) -> None:
    assert Settings.from_env().turn_limit == f"{LIMIT}/minute"
    monkeypatch.setenv("COUNTERSIGN_TURN_LIMIT", "600/hour")
    assert Settings.from_env().turn_limit == "600/hour"
    monkeypatch.setenv("COUNTERSIGN_TURN_LIMIT", "lots")
    with pytest.raises(SettingsError, match="COUNTERSIGN_TURN_LIMIT: 'lots' is not a limit"):
        Settings.from_env()


def test_a_member_past_the_turn_limit_gets_429_with_retry_after(
    api: Api, clock: Any, slow_model: SlowModel
) -> None:
    order = api.seeded["orders"]["refund-ok"]
    for _ in range(LIMIT):
        assert api.post(MESSAGES.format(order), {"message": "Hello"}).status_code == 200
    before = snapshot(api.cs)
    asked = len(slow_model.asked)

    refused = api.post(MESSAGES.format(order), {"message": "Hello"})

    status, document = problem(refused)
    assert status == 429
    assert document["type"] == "urn:countersign:problem:too-many-turns"
    assert document["title"] == "Too many messages"
    retry_after = int(refused.headers["retry-after"])
    assert 1 <= retry_after <= WINDOW
    assert document["detail"] == (
        "This member sent the assistants too many messages in a short time; try again in "
        f"{retry_after} seconds."
    )
    assert_no_leak(refused.text)
    assert_nothing_changed(api.cs, before)  # no event, no service action logged
    assert len(slow_model.asked) == asked  # the model was not asked
    # Another club's member is not held back by it.
    maple = api.seeded["orders"]["maple-refund"]
    assert api.post(MESSAGES.format(maple), {"message": "Hello"}, as_=MIA).status_code == 200
    clock.advance(seconds=WINDOW + 1)
    assert api.post(MESSAGES.format(order), {"message": "Hello"}).status_code == 200


@pytest.fixture
def _one_token_may_send_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """The burst's 12 threads at once from one token: past COUNTERSIGN_REQUESTS_IN_FLIGHT
    (4) they would be refused 429 before the turn limit counts them."""
    monkeypatch.setenv("COUNTERSIGN_REQUESTS_IN_FLIGHT", "100")


@pytest.mark.usefixtures("_one_token_may_send_them_all")
def test_a_burst_of_turns_from_one_token_admits_exactly_the_limit(
    cs: Countersign, app: Any, seeded: dict[str, Any], slow_model: SlowModel
) -> None:
    """The review's 60 turns, sent at once over real sockets: exactly the limit is answered,
    the rest is refused with 429, and only the admitted turns wrote events."""
    order = seeded["orders"]["refund-ok"]
    agent = issue_token(cs, "granite", "flooder", ["orders.refund"], issued_by=AVA, kind="agent")
    bearer = {"Authorization": f"Bearer {agent.token}"}
    events, ended = count_events(cs), count_events(cs, "Interaction.TurnEnded")

    def say(i: int) -> httpx2.Response:
        return client.post(MESSAGES.format(order), headers=bearer, json={"message": f"turn {i}"})

    # What is counted here is the turn limit alone. The burst's 12 threads may have more turns
    # with the model at once than the club's share of the process (4): on a loaded machine the
    # model's instant answers overlap, and a fifth turn is then answered "busy" without asking
    # it (tests/attacks/test_assistant_club_share.py tests that). Slots for the whole burst.
    cs.assistant.slots = TurnSlots(per_club=12, total=12)

    with serving(app) as server, httpx2.Client(base_url=server.base, timeout=60) as client:
        # One read first: FastAPI builds its route models on a first request, which must
        # not be raced (tests/attacks/test_concurrent_decline.py).
        assert client.get("/api/v1/inbox", headers=bearer).is_success
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(say, range(60)))

    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200] * LIMIT + [429] * (60 - LIMIT)
    refused = [a for a in answers if a.status_code == 429]
    assert all(1 <= int(a.headers["retry-after"]) <= WINDOW for a in refused)
    assert count_events(cs, "Interaction.TurnEnded") - ended == LIMIT
    # Each admitted turn opened a conversation, heard, answered and ended it: 4 events.
    assert count_events(cs) - events == 4 * LIMIT
    assert len(slow_model.asked) == LIMIT


def test_the_web_chat_past_the_limit_says_when_to_try_again(
    web: Web, slow_model: SlowModel
) -> None:
    """In the member's language, with the message kept in the box; nothing is recorded."""
    order, maple_order = web.seeded["orders"]["refund-ok"], web.seeded["orders"]["maple-refund"]
    for club, member, about in (("granite", AVA, order), ("maple", MIA, maple_order)):
        for _ in range(LIMIT):  # as the API and the command line would
            web.cs.assistant.turn(
                organization=club, actor=member, section="orders", resource_id=about, message="Hi"
            )
    ava, mia = web.member(AVA), web.member(MIA)
    ava.page_token(f"/chat/orders/{order}")
    mia.post("/language", {"lang": "fr", "next": "/", "csrf_token": mia.page_token("/")})
    mia.page_token(f"/chat/orders/{maple_order}")
    before = snapshot(web.cs)

    english = ava.submit(f"/chat/orders/{order}", {"message": "One more question"})
    french = mia.submit(f"/chat/orders/{maple_order}", {"message": "Encore une question"})

    for page, said, draft in (
        (english, "You have sent the assistants many messages in a short time.", "One more"),
        (french, "Vous avez envoyé beaucoup de messages aux assistants en peu de temps.", "Encore"),
    ):
        assert page.status_code == 429, page.text[:500]
        assert 1 <= int(page.headers["retry-after"]) <= WINDOW
        assert page.headers["content-type"].startswith("text/html")
        assert said in page.text
        assert draft in page.text  # kept in the box, to send later
        assert_no_leak(page.text)
    assert f"try again in {english.headers['retry-after']} seconds" in english.text
    assert f"réessayez dans {french.headers['retry-after']} secondes" in french.text
    assert_nothing_changed(web.cs, before)
    assert len(slow_model.asked) == 2 * LIMIT


def test_an_agent_tokens_flood_leaves_its_person_and_their_other_tokens_their_turns(
    api: Api, web: Web, slow_model: SlowModel
) -> None:
    """The review's agent flood used its person's budget: for a minute Ava's own chat was
    refused. Now each token of hers is counted apart from her and from her other tokens."""
    order = api.seeded["orders"]["refund-ok"]
    agent = issue_token(
        api.cs, "granite", "flooder", ["orders.refund"], issued_by=AVA, kind="agent"
    )
    flooder = {"Authorization": f"Bearer {agent.token}"}
    say = {"message": "Hello"}
    for _ in range(LIMIT):
        assert api.client.post(MESSAGES.format(order), headers=flooder, json=say).is_success
    refused = api.client.post(MESSAGES.format(order), headers=flooder, json=say)
    assert refused.status_code == 429

    ava = web.member(AVA)
    ava.page_token(f"/chat/orders/{order}")
    chat = ava.submit(f"/chat/orders/{order}", {"message": "Is the refund still right?"})
    assert chat.status_code in (200, 303), chat.text[:500]
    assert "many messages in a short time" not in chat.text
    assert api.post(MESSAGES.format(order), {"message": "And my own token?"}).status_code == 200
    assert slow_model.asked[-2:] == ["Is the refund still right?", "And my own token?"]
    again = api.client.post(MESSAGES.format(order), headers=flooder, json=say)
    assert again.status_code == 429  # the flooding token is still held back


def test_the_limit_is_one_across_the_command_line_and_other_processes(
    cs: Countersign,
    seeded: dict[str, Any],
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``countersign chat`` is another process on the same database: the turns another
    process started count against it, and past the limit it says when to try again and
    starts no turn (the interactive chat goes on to the next line)."""
    monkeypatch.setenv("COUNTERSIGN_TURN_LIMIT", "3/minute")
    order = seeded["orders"]["refund-ok"]
    endpoint = SlowModel()
    # Another process on the real clock, as the command line is.
    elsewhere = bootstrap(Settings.from_env(database_url), model=endpoint.chat_model())
    try:
        for _ in range(3):
            elsewhere.assistant.turn(
                organization="granite",
                actor=AVA,
                section="orders",
                resource_id=order,
                message="Hi",
            )
    finally:
        elsewhere.close()
    events = count_events(cs)
    chat = ("chat", "--org", "granite", "--as", AVA, "--section", "orders", "--resource", order)

    status = main([*chat, "--message", "Hi", "--json", "--database", database_url])
    out, _ = capsys.readouterr()
    answer = json.loads(out)
    assert (status, answer["error"]) == (0, "too_many_turns")
    assert 1 <= answer["retry_after"] <= WINDOW
    assert answer["message"] == (
        "too many messages to the assistants in a short time; try again in "
        f"{answer['retry_after']} seconds"
    )

    monkeypatch.setattr("sys.stdin", io.StringIO("Bonjour\nEncore ?\n/quit\n"))
    assert main([*chat, "--language", "fr", "--database", database_url]) == 0
    out, _ = capsys.readouterr()
    said = "Vous avez envoyé beaucoup de messages aux assistants en peu de temps."
    assert out.count(said) == 2, out
    assert "réessayez dans" in out
    assert count_events(cs) == events  # none of them started a turn
    assert endpoint.asked == ["Hi"] * 3
