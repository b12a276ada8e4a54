"""A message of nothing but spaces and zero-width characters ran a whole assistant turn: the
model was called (the club's model budget spent for nothing) and the member's turn limit
charged. Every way in now refuses it as an empty message is refused, before the turn
begins: the API's 422, the chat page's own error, the command line's refusal, the
application's InvalidRequestError; the model is never called and no turn is counted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
from countersign.infrastructure.adapters.scripted_model import Say, Script, ScriptedEndpoint
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.settings import Settings
from countersign.infrastructure.testing.fixtures import SeededDatabase
from fastapi.testclient import TestClient

from tests.conftest import AVA, count_events
from tests.test_web_pages import Web

#: Spaces of several kinds, a line break, and U+200B, U+200C, U+200D, U+2060, U+FEFF.
BLANK = " \t\u00a0\u200b\u200c\n\u200d\u2060\ufeff "


@pytest.fixture
def wired(
    seeded_database: SeededDatabase, clock: FakeClock
) -> Iterator[tuple[Countersign, ScriptedEndpoint]]:
    """A seeded countersign whose model is a scripted endpoint, one turn a minute each."""
    endpoint = ScriptedEndpoint(Script(Say("Happy to help."), Say("Happy to help.")))
    model = OpenAIChatModel(endpoint.client(), "scripted", attempts=1, total_seconds=5.0)
    settings = Settings(database_url=seeded_database.url, turn_limit="1/minute")
    cs = bootstrap(settings, clock=clock, model=model)
    yield cs, endpoint
    model.client.close()
    cs.close()


def _order(cs: Countersign) -> str:
    return str(seed(cs)["orders"]["refund-ok"])


def test_the_api_refuses_a_blank_message_before_calling_the_model(wired):
    cs, endpoint = wired
    token = issue_token(
        cs, "granite", "chat-bot", ["orders.refund"], issued_by=AVA, kind="agent"
    ).token
    path = f"/api/v1/assistants/orders/resources/{_order(cs)}/messages"
    auth = {"Authorization": f"Bearer {token}"}
    before = count_events(cs)
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        for blank in (BLANK, "\u200b", "\ufeff\u2060"):
            refused = client.post(path, headers=auth, json={"message": blank})
            assert refused.status_code == 422, refused.text
            problems = refused.json()["problems"]
            assert [p["field"] for p in problems] == ["message"]
            assert "nothing" in problems[0]["message"]
        assert endpoint.requests == []
        assert count_events(cs) == before
        # Not charged to the turn limit (one a minute): a real message still gets its turn.
        answered = client.post(path, headers=auth, json={"message": "Hello"})
        assert answered.status_code == 200, answered.text
    assert len(endpoint.requests) == 1


def test_the_application_and_the_command_line_refuse_it_too(wired):
    cs, endpoint = wired
    order = _order(cs)
    before = count_events(cs)
    with pytest.raises(InvalidRequestError) as refused:
        cs.assistant.turn(
            organization="granite",
            actor=AVA,
            section="orders",
            resource_id=order,
            message=BLANK,
        )
    assert refused.value.problems[0].field == "message"
    assert endpoint.requests == []
    assert count_events(cs) == before
    turn = cs.assistant.turn(
        organization="granite", actor=AVA, section="orders", resource_id=order, message="Hi"
    )
    assert turn.interaction_id
    assert len(endpoint.requests) == 1


def test_the_chat_page_refuses_it_with_its_own_error(wired):
    cs, endpoint = wired
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    web = Web(cs=cs, seeded=seed(cs), passwords=seed_passwords(cs), app=app)
    browser = web.browser(AVA)
    order = _order(cs)
    before = count_events(cs)
    refused = browser.form(f"/chat/orders/{order}", {"message": BLANK}, f"/chat/orders/{order}")
    assert refused.status_code == 422
    assert "Write a message first." in refused.text
    assert endpoint.requests == []
    assert count_events(cs) == before
    sent = browser.form(f"/chat/orders/{order}", {"message": "Hi"}, f"/chat/orders/{order}")
    assert sent.status_code == 303, sent.text
    assert len(endpoint.requests) == 1


def test_the_command_line_chat_sends_it_nowhere(cs, seeded, database_url, capsys, monkeypatch):
    order = str(seeded["orders"]["refund-ok"])
    argv = [
        *("chat", "--org", "granite", "--as", AVA, "--section", "orders"),
        *("--resource", order, "--database", database_url),
    ]
    before = count_events(cs)
    typed = [BLANK, "\u200b\ufeff"]
    prompts: list[str] = []

    def typing(prompt: str = "") -> str:
        prompts.append(prompt)
        if not typed:
            raise EOFError
        return typed.pop(0)

    monkeypatch.setattr("builtins.input", typing)
    assert main(argv) == 0
    assert prompts == ["you> "] * 3  # no turn in between
    assert count_events(cs) == before
    capsys.readouterr()
    refused = main([*argv, "--message", BLANK, "--json"])
    printed = capsys.readouterr().out
    assert refused != 0 or "nothing is written" in printed, printed
    assert "nothing is written" in printed
    assert count_events(cs) == before
