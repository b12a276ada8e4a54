"""Held: no page form acts without its session's CSRF token, in the body, by POST.

The red team took every state-changing form of the pages and forged the request a hostile
site would make the victim's browser send: without a token, with a made-up one, with another
session's real one, with the victim's real one in the query string (or a header, or a JSON
body) instead of the form body, and by GET instead of POST. Every combination is refused and
nothing changes: the victim stays signed in (or out), keeps the language, no message reaches
an assistant, the proposals stay pending, no refund is requested, no sign-in is attempted, no
webhook endpoint is added or removed.

The forms are enumerated from the application's routes, so a new form without an entry here
fails this test.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from countersign.domain.club.organization import Permission
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender
from fastapi import FastAPI
from httpx2 import Response
from starlette.routing import Route

from tests.attacks.conftest import Browser, Web, assert_nothing_changed, snapshot, tables
from tests.conftest import AVA, BEN, MIA, count_events
from tests.passkey_authenticator import Authenticator
from tests.receivers import (
    allow_loopback,  # noqa: F401 - autouse
    free_port,
)
from tests.test_passkeys import register

NORA = "nora@granite.example"  # a member of both clubs: signing in asks which one
REFUSED = "This form expired"


@dataclass
class Form:
    """One state-changing form, as the victim's browser would submit it."""

    route: str  # the route it is served by
    path: str
    fields: dict[str, str]
    victim: Browser
    another_sessions_token: str
    get_answer: int  # what the same URL answers to GET: its page (200), or 405
    state: Callable[[], Any]  # what the form would change, as the victim sees it


def page_forms(app: FastAPI) -> set[str]:
    """Every route of the pages that takes a POST."""
    return {
        route.path
        for route in app.routes
        if isinstance(route, Route)
        and "POST" in (route.methods or set())
        and not route.path.startswith("/api/")
    }


def attacks(form: Form) -> dict[str, Callable[[], Response]]:
    own = form.victim.csrf_token
    client, path, fields = form.victim.client, form.path, form.fields
    return {
        "no token": lambda: client.post(path, data=fields),
        "a made-up token": lambda: client.post(
            path, data={**fields, "csrf_token": secrets.token_urlsafe(32)}
        ),
        "another session's token": lambda: client.post(
            path, data={**fields, "csrf_token": form.another_sessions_token}
        ),
        "the token in the query string": lambda: client.post(
            path, params={"csrf_token": own}, data=fields
        ),
        "the token in a header": lambda: client.post(
            path, data=fields, headers={"X-CSRF-Token": own, "X-CSRFToken": own}
        ),
        "the form as JSON": lambda: client.post(path, json={**fields, "csrf_token": own}),
        "GET instead of POST": lambda: client.get(path, params={**fields, "csrf_token": own}),
    }


def sign_in_rows(web: Web) -> int:
    if "sign_in_failures" not in tables(web.cs):
        return 0
    with web.cs.sql.transaction() as cursor:
        found = cursor.execute("SELECT COUNT(*) FROM sign_in_failures").fetchone()
    return int(found[0]) if found else 0


def signed_in_state(browser: Browser) -> tuple[int, bool]:
    page = browser.get("/")
    return page.status_code, '<html lang="en">' in page.text


def test_every_form_refuses_every_forged_submission_and_nothing_changes(web: Web):
    cs, seeded = web.cs, web.seeded
    web.add_member(NORA, "Nora Berg", [Permission.REFUND_ORDERS], ("granite", "maple"))
    to_approve, to_decline = web.propose("refund-ok"), web.propose("refund-stale")
    to_edit = web.propose("refund-lost-response")
    # Another order than the proposals': a proposal the chat makes must not supersede them.
    order = seeded["orders"]["refund-declined"]
    email_form = seeded["broadcast_forms"]["granite"]

    ava = web.member(AVA)
    # A real token of another session: the attacker's own, got by opening the sign-in page.
    stranger_token = web.browser().page_token("/sign-in")
    anonymous = web.browser()
    anonymous.page_token("/sign-in")
    choosing = web.browser()
    assert "Choose a club" in choosing.sign_in(NORA, web.passwords[NORA]).text
    choosing.page_token("/sign-in")

    # A passkey of Ava's for the account page's Rename and Remove, and a registration the
    # attacker prepared for the Add form (a real authenticator's answer to a real challenge).
    register(cs, AVA, "Ava's laptop")
    laptop = cs.passkeys.passkeys("granite", AVA)[0]["credential_id"]
    begun = cs.passkeys.begin_registration("granite", AVA)
    forged_key = json.dumps(Authenticator().register(begun["options"]))

    # A dead letter for the webhooks page's Redeliver button, and an endpoint for its Remove.
    Webhooks(cs).add(None, "granite", f"http://127.0.0.1:{free_port()}/hooks")
    assert notification_sender(cs, NotifySettings(max_attempts=1)).run_once().dead > 0
    [endpoint] = Webhooks(cs).endpoints(None, "granite")

    def ava_state() -> Any:
        dead = len(Webhooks(cs).deliveries(None, "granite", dead_only=True))
        return (
            signed_in_state(ava),
            [(p["credential_id"], p["name"]) for p in cs.passkeys.passkeys("granite", AVA)],
            web.status(to_approve),
            web.status(to_decline),
            web.status(to_edit),
            dead,
            [e["url"] for e in Webhooks(cs).endpoints(None, "granite")],
            sorted(cs.club.membership("granite", BEN).member.permissions),
        )

    def signed_out_state(browser: Browser) -> Callable[[], Any]:
        return lambda: (browser.get("/").headers.get("location"), sign_in_rows(web))

    forms = [
        # Login CSRF: signing the victim's browser in to the attacker's (Mia's) account.
        Form("/sign-in", "/sign-in", {"email": MIA, "password": web.passwords[MIA], "next": "/"},
             anonymous, stranger_token, 200, signed_out_state(anonymous)),
        Form("/sign-in/club", "/sign-in/club", {"club": "maple"},
             choosing, stranger_token, 405, signed_out_state(choosing)),
        Form("/sign-out", "/sign-out", {}, ava, stranger_token, 405, ava_state),
        Form("/sign-out/everywhere", "/sign-out/everywhere", {}, ava, stranger_token, 405,
             ava_state),
        Form("/language", "/language", {"lang": "fr", "next": "/"},
             ava, stranger_token, 405, ava_state),
        Form("/chat/{section}/{resource_id:path}", f"/chat/orders/{order}",
             {"message": "Emma missed her early-bird discount", "interaction_id": ""},
             ava, stranger_token, 200, ava_state),
        Form("/chat/{section}/{resource_id:path}", f"/chat/email_broadcasts/{email_form}",
             {"message": "Email Monday Night Open about the ice", "interaction_id": ""},
             ava, stranger_token, 200, ava_state),
        # GET approves nothing: without the digest its approve form's redirect carries, it
        # leads to the review page (303); with it, the confirmation page.
        Form("/proposals/{proposal_id}/approve", f"/proposals/{to_approve}/approve",
             {"confirm": "yes"},
             ava, stranger_token, 303, ava_state),
        Form("/proposals/{proposal_id}/decline", f"/proposals/{to_decline}/decline",
             {"note": "forged"}, ava, stranger_token, 405, ava_state),
        Form("/proposals/{proposal_id}/edit", f"/proposals/{to_edit}/edit",
             {"payment": "P1", "line_item": "L1", "discount": "D1",
              "destination": "account_credit"},
             ava, stranger_token, 200, ava_state),
        Form("/webhooks/redeliver", "/webhooks/redeliver", {"delivery": "all"},
             ava, stranger_token, 405, ava_state),
        # Adding an endpoint would point the club's notifications at the attacker's receiver.
        Form("/webhooks", "/webhooks", {"url": "https://93.184.215.14/attacker"},
             ava, stranger_token, 200, ava_state),
        Form("/webhooks/remove", "/webhooks/remove", {"endpoint": endpoint["endpoint_id"]},
             ava, stranger_token, 405, ava_state),
        # Granting members.manage would let the attacker's accomplice hand out every right.
        Form("/members/permissions", "/members/permissions",
             {"email": BEN, "permission.members.manage": "on"},
             ava, stranger_token, 405, ava_state),
        Form("/account/passkeys", "/account/passkeys",
             {"name": "forged", "nonce": begun["nonce"], "credential": forged_key},
             ava, stranger_token, 200, ava_state),
        Form("/account/passkeys/rename", "/account/passkeys/rename",
             {"credential_id": laptop, "name": "forged"}, ava, stranger_token, 405, ava_state),
        Form("/account/passkeys/remove", "/account/passkeys/remove",
             {"credential_id": laptop}, ava, stranger_token, 405, ava_state),
    ]  # fmt: skip
    assert {form.route for form in forms} == page_forms(web.app)
    before = snapshot(cs)
    expected_states = [form.state() for form in forms]
    assert expected_states[0] == ("/sign-in", sign_in_rows(web))  # signed out
    assert expected_states[2][0] == (200, True)  # Ava signed in, in English

    tried: list[str] = []
    wrong: list[str] = []
    for form, expected_state in zip(forms, expected_states, strict=True):
        for attack, send in attacks(form).items():
            case = f"{form.path.split('/')[1]} {form.path}: {attack}"
            tried.append(case)
            answer = send()
            if attack == "GET instead of POST":
                if answer.status_code != form.get_answer:
                    wrong.append(f"{case}: answered {answer.status_code}")
            elif answer.status_code != 403 or REFUSED not in answer.text:
                wrong.append(f"{case}: answered {answer.status_code}")
            if attack != "GET instead of POST" and "set-cookie" in answer.headers:
                wrong.append(f"{case}: rewrote the session cookie")
            if form.state() != expected_state:
                wrong.append(f"{case}: changed {expected_state} to {form.state()}")
            if count_events(cs) != before.events:
                wrong.append(f"{case}: stored an event")

    assert len(tried) == 17 * 7  # every form, every forgery
    assert wrong == []
    assert_nothing_changed(cs, before)

    # The same forms, submitted by the page itself with the token, all work: the token is
    # the one thing the forged submissions lacked. (Signing out everywhere, then out, last.)
    last = ["/sign-out/everywhere", "/sign-out"]
    for form in sorted(forms, key=lambda form: last.index(form.path) if form.path in last else -1):
        signed_in = form.victim.get("/").status_code == 200
        form.victim.page_token("/" if signed_in else "/sign-in")
        answer = form.victim.submit(form.path, form.fields)
        # An endpoint added is answered with the page showing its secret, not a redirect.
        worked = 201 if form.path == "/webhooks" else 303
        assert answer.status_code == worked, (form.path, answer.status_code)
        if form.path == "/sign-out/everywhere":
            assert ava.get("/").headers["location"] == "/sign-in"  # signed out
    assert web.status(to_approve) == "succeeded"
    assert web.status(to_decline) == "declined"
    assert anonymous.get("/").status_code == choosing.get("/").status_code == 200
