"""Held now: one conversation cannot grow without end.

The attack: an agent token kept one conversation going at its turn limit (20 messages a
minute), forever. Each turn loads the whole conversation and the chat page shows all of it, so
each turn cost more than the last: 35 ms at 10,000 turns (50,000 events in its stream), a
cold load 0.6 s, and no end to it, on the process every club shares. Now a conversation holds
``MAX_TURNS`` turns: a message to a full one is refused before anything is recorded, counted
or asked of the model (the API's 422 on ``interaction_id``, the chat page's message with the
text kept in its box, the terminal chat's sentence, its next message then starting a new
conversation), and a new conversation takes it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit
from uuid import UUID, uuid4

from countersign.application.assistant.conversations import CONVERSATION_FULL, MAX_TURNS
from countersign.domain.interaction import Interaction
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.identity.tokens import issue_token

from tests.attacks.conftest import Api, Web, assert_nothing_changed, problem, snapshot
from tests.conftest import AVA, count_events

MESSAGES = "/api/v1/assistants/orders/resources/{}/messages"


def conversation(cs: Countersign, order: str, turns: int, started_through: str) -> str:
    """Ava's conversation about ``order`` with ``turns`` turns behind it, as that many
    messages and answers would have left it."""
    interaction = Interaction(
        id=uuid4(),
        organization_id=UUID(cs.club.organization_id("granite")),
        section="orders",
        resource_id=UUID(order),
        manager=AVA,
        started_through=started_through,
    )
    for turn in range(turns):
        interaction.hear(f"What about order {turn}?")
        interaction.say("Nothing is owed on it.", author="model")
        interaction.end_turn("reply")
    cs.store.save(interaction)
    return str(interaction.id)


def test_an_agent_token_cannot_add_a_turn_to_a_full_conversation(api: Api) -> None:
    order = api.seeded["orders"]["refund-ok"]
    agent = issue_token(
        api.cs, "granite", "chat-agent", ["orders.refund"], issued_by=AVA, kind="agent"
    ).token
    almost = conversation(api.cs, order, MAX_TURNS - 1, "agent_token:chat-agent")
    full = conversation(api.cs, order, MAX_TURNS, "agent_token:chat-agent")

    last = api.post(MESSAGES.format(order), {"message": "Hello", "interaction_id": almost}, agent)
    assert last.status_code == 200, last.text  # its last turn
    before = snapshot(api.cs)
    refused = api.post(MESSAGES.format(order), {"message": "Hello", "interaction_id": full}, agent)

    status, document = problem(refused)
    assert status == 422
    assert document["problems"] == [{"field": "interaction_id", "message": CONVERSATION_FULL}]
    assert_nothing_changed(api.cs, before)  # no event, no turn counted or logged
    again = api.post(MESSAGES.format(order), {"message": "Hello"}, agent)
    assert again.status_code == 200
    assert again.json()["interaction_id"] not in (full, almost)


def test_the_chat_page_says_the_conversation_is_full_and_keeps_the_message(web: Web) -> None:
    order = web.seeded["orders"]["refund-ok"]
    full = conversation(web.cs, order, MAX_TURNS, "person")
    ava = web.member(AVA)
    events = count_events(web.cs)

    page = ava.submit(f"/chat/orders/{order}", {"message": "One more?", "interaction_id": full})

    assert page.status_code == 422
    said = " ".join(page.text.split())
    assert f"This conversation holds its {MAX_TURNS} messages, the most one may." in said
    assert "press Send to start a new conversation with this message" in said
    assert "One more?</textarea>" in page.text  # kept in the box
    assert count_events(web.cs) == events
    # The form now sends to a new conversation: Send as it stands, and the message is heard.
    [kept] = re.findall(r'name="interaction_id" value="([^"]*)"', page.text)
    assert kept == ""
    sent = ava.submit(f"/chat/orders/{order}", {"message": "One more?", "interaction_id": kept})
    assert sent.status_code == 303, sent.text
    started = parse_qs(urlsplit(sent.headers["location"]).query)["interaction"][0]
    assert started != full


def test_the_terminal_chat_says_so_and_its_next_message_starts_a_new_conversation(
    cs: Countersign,
    seeded: dict[str, Any],
    database_url: str,
    capsys: Any,
    monkeypatch: Any,
) -> None:
    order = seeded["orders"]["refund-ok"]
    full = conversation(cs, order, MAX_TURNS, "person")
    lines = ["Hello", "Hello"]

    def typed(prompt: str = "") -> str:
        if not lines:
            raise EOFError
        return lines.pop(0)

    monkeypatch.setattr("builtins.input", typed)
    status = main(
        [
            *("chat", "--org", "granite", "--as", AVA, "--section", "orders"),
            *("--resource", order, "--interaction", full, "--database", database_url),
        ]
    )
    printed = " ".join(capsys.readouterr().out.split())
    assert status == 0
    assert (
        f"This conversation holds its {MAX_TURNS} messages, the most one may; nothing was "
        "sent. Send it again: your next message starts a new conversation." in printed
    )
    assert f"Conversation {full} ended" not in printed
    assert "Conversation " in printed.rsplit("new conversation.", 1)[1]
