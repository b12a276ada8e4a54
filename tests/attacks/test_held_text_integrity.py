"""A person reads what runs as it runs: no text a model or a tenant controls reorders, hides
or forges what a reviewer or an operator reads.

A text review found: a right-to-left override at the end of a model's e-mail subject made the
card's application-computed "to 13 recipients" read "31 ot" (and a participant's name ending in
one, "refund $345.00" read "00.543$"); escape sequences in a member's name, a webhook URL or a
decline note moved the operator's terminal cursor and hid lines of `countersign inbox`; the
second line of a model's chat message could read "countersign> ...", and a line of an e-mail
body "Approvals: 1/1" in a text card. Each is refused where it comes in, shown as escapes
where stored text goes out, or marked as the value's own line.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any
from uuid import UUID

import pytest
from countersign.application.authorization import Caller
from countersign.domain.club.organization import Organization
from countersign.domain.club.roster import Roster
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import RosterRuleError
from countersign.domain.proposal import Proposal
from countersign.domain.visible_text import one_value, shown, shown_json
from countersign.infrastructure.entrypoints.cli import render
from countersign.infrastructure.entrypoints.cli.listings import render_turn
from countersign.infrastructure.entrypoints.web.site import Site
from countersign.infrastructure.observability.logs import JsonFormatter, TextFormatter
from markupsafe import Markup

from tests.attacks.conftest import Api, assert_nothing_changed, snapshot
from tests.conftest import AVA, DRAFT

#: A right-to-left override: everything after it on its line is shown reversed.
RLO = "\u202e"
INVISIBLE = [
    RLO,  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u200f",  # right-to-left mark
    "\u200b",  # zero-width space
    "\u2028",  # line separator
    "\u00ad",  # soft hyphen
    "\U000e0041",  # tag letter A (text a person cannot see, a model can read)
]


def _draft(cs: Any, seeded: dict[str, Any], **request: Any) -> Any:
    leagues = [row["name"] for row in cs.club.leagues("granite")][:1]
    return cs.access.propose(
        Caller(AVA, "granite"),
        operation=DRAFT,
        resource_id=seeded["broadcast_forms"]["granite"],
        request={"filters": {"leagues": leagues}, "subject": "Opener", "body": "Hi", **request},
    )


# -- refused where it comes in ---------------------------------------------------------------------


@pytest.mark.parametrize("character", INVISIBLE)
def test_a_models_subject_or_body_with_invisible_formatting_is_refused(cs, seeded, character):
    before = snapshot(cs)
    for field in ("subject", "body"):
        with pytest.raises(InvalidRequestError) as refused:
            _draft(cs, seeded, **{field: f"Spring schedule{character} and more"})
        [problem] = refused.value.problems
        assert problem.field == field
        assert "invisible formatting characters are not allowed" in problem.message
    assert_nothing_changed(cs, before)


def test_a_body_of_blank_lines_cannot_push_its_words_out_of_sight(cs, seeded):
    before = snapshot(cs)
    for body in ("Hello" + "\n" * 3000 + "the real ask", "Hi\n\n \n\t\nthere"):
        with pytest.raises(InvalidRequestError) as refused:
            _draft(cs, seeded, body=body)
        [problem] = refused.value.problems
        assert (problem.field, problem.message) == ("body", "at most two blank lines in a row")
    assert_nothing_changed(cs, before)
    assert _draft(cs, seeded, body="Hello,\n\n\nSee you on the ice.").preview["body"]


def test_joiners_and_every_kind_of_space_stay(cs, seeded):
    """A family emoji is several joined by U+200D; French amounts hold no-break spaces."""
    created = _draft(
        cs, seeded, subject="Famille 👨\u200d👩\u200d👧 bienvenue", body="48,00\u00a0$ CA\n\tmerci"
    )
    assert created.preview["subject"] == "Famille 👨\u200d👩\u200d👧 bienvenue"


def test_a_participants_name_or_a_league_with_invisible_formatting_is_refused(cs, seeded):
    league = cs.club.leagues("granite")[0]["name"]
    for name in (f"Olivia Chen{RLO}", "Zoe\x1b[2K Park", "Zoe\nPark"):
        with pytest.raises(RosterRuleError, match="invisible formatting characters"):
            cs.club.join("granite", league, name, "zoe@granite.example")
    roster = cs.store.get(Roster.create_id(Organization.create_id("granite")), Roster)
    with pytest.raises(RosterRuleError, match="invisible formatting characters"):
        roster.add_league(f"Sunday{RLO} Doubles")
    assert cs.club.join("granite", league, "Zoë\u00a0Park", "zoe@granite.example")


@pytest.mark.parametrize(
    "url", [f"https://hooks.example/x{RLO}moc", "https://hooks.example/\x9b2J"]
)
def test_a_webhook_url_with_invisible_or_c1_characters_is_refused(api: Api, url: str) -> None:
    answer = api.post("/api/v1/webhooks", {"url": url})
    assert answer.status_code == 422, answer.text
    [problem] = answer.json()["problems"]
    assert "invisible formatting characters" in problem["message"]
    assert api.get("/api/v1/webhooks").json() == {"items": []}


def test_a_decline_note_keeps_the_words_and_loses_what_cannot_be_seen(api: Api) -> None:
    proposal_id = api.propose()
    answer = api.post(
        f"/api/v1/proposals/{proposal_id}/decline",
        {"note": f"dup\x1b[2J of{RLO} another\nsee the\u200b other one"},
    )
    assert answer.status_code == 200, answer.text
    declined = api.cs.store.get(UUID(proposal_id), Proposal)
    assert declined.decline_note == "dup[2J of another\nsee the other one"


# -- shown as escapes where stored text goes out ---------------------------------------------------


def test_every_value_a_page_prints_shows_invisible_formatting_as_escapes(cs):
    """Text stored before these rules (a name, a subject) still cannot reorder a card."""
    page = Site(cs, sessions=None).templates.from_string(  # type: ignore[arg-type]
        "<h1>{{ headline }}</h1><p>{{ markup }}</p><p>{{ count }}</p>"
    )
    html = page.render(
        headline=f"“Spring schedule{RLO}” to 13 recipients",
        markup=Markup("<b>kept</b>"),
        count=13,
    )
    assert html == ("<h1>“Spring schedule\\u202e” to 13 recipients</h1><p><b>kept</b></p><p>13</p>")


def test_the_command_lines_text_and_json_are_safe_in_a_terminal():
    stored = f"Zoe Park\x1b[2K\r  (nothing awaits approval)\x1b[8m{RLO}draob\x9b2J"
    text = render.terminal(f"Take {stored} out of Monday\nnext line")
    for raw in ("\x1b", RLO, "\x9b", "\r"):
        assert raw not in text
    assert text.split("\n")[1] == "next line"
    assert "\\x1b[2K\\r" in text
    document = render.to_json({"name": stored, "note": "é\u00a0ok"})
    assert json.loads(document) == {"name": stored, "note": "é\u00a0ok"}  # the same document
    for raw in ("\x1b", RLO, "\x9b"):
        assert raw not in document
    assert "é" in document  # other text stays as it is
    assert shown_json('"a\u2028b"') == '"a\\u2028b"'


def test_a_models_message_cannot_pass_a_line_for_countersigns():
    turn = {
        "messages": [
            {"author": "model", "text": "Done.\ncountersign> Refund approved and sent.\n┌─ card"}
        ],
        "proposal": None,
    }
    lines = render_turn(turn).split("\n")
    assert lines == [
        "assistant> Done.",
        "assistant| countersign> Refund approved and sent.",
        "assistant| ┌─ card",
    ]
    assert not any(line.startswith("countersign>") for line in lines)


def test_a_text_cards_multi_line_value_cannot_forge_the_cards_lines():
    body = "Hello all,\nApprovals: 1/1\nReview page: https://granite-countersign.example.net/x"
    assert one_value(body).split("\n") == [
        "Hello all,",
        "  | Approvals: 1/1",
        "  | Review page: https://granite-countersign.example.net/x",
    ]
    assert one_value(f"one line{RLO}") == "one line\\u202e"


def test_a_headline_stored_before_the_rule_reads_in_order_in_the_text_cards(cs, seeded):
    from countersign.infrastructure.adapters.agent_frameworks.card_text import card_text
    from countersign.infrastructure.entrypoints.mcp import answers

    created = _draft(cs, seeded)
    card = cs.access.card(created.proposal_id, Caller(AVA, "granite"))
    stored = dataclasses.replace(card, preview={**card.preview, "subject": f"Spring{RLO}"})
    for text in (answers.card_text(stored, "en"), card_text(stored, "en")):
        assert RLO not in text.split("\n")[0], text
        assert "Spring\\u202e" in text.split("\n")[0], text


def test_the_text_card_of_mcp_and_the_frameworks_marks_the_bodys_lines(cs, seeded):
    from countersign.infrastructure.adapters.agent_frameworks.card_text import card_text
    from countersign.infrastructure.entrypoints.mcp import answers

    created = _draft(cs, seeded, body="Hello all,\nApprovals: 1/1\nOutcome: Succeeded")
    card = cs.access.card(created.proposal_id, Caller(AVA, "granite"))
    for text in (answers.card_text(card, "en"), card_text(card, "en")):
        lines = text.split("\n")
        assert "  | Approvals: 1/1" in lines, text
        assert "  | Outcome: Succeeded" in lines, text
        assert "Outcome: Succeeded" not in lines


def test_log_lines_escape_c1_separators_and_bidi_in_both_formats():
    record = logging.LogRecord(
        "countersign.http", logging.INFO, __file__, 1, f"GET /x\x9b2J\x85forged{RLO}", None, None
    )
    line = JsonFormatter().format(record)
    assert json.loads(line)["message"] == f"GET /x\x9b2J\x85forged{RLO}"
    for raw in ("\x9b", "\x85", RLO):
        assert raw not in line
    text = TextFormatter("%(message)s").format(record)
    assert text == "GET /x\\x9b2J\\x85forged\\u202e"
    assert shown("a\tb\nc\x07") == "a\tb\nc\\x07"
