"""A club the operator registers (`countersign org create`, as docs/deploy.md says) holds
no roster and no broadcast form until its business application makes them: its pages offer
no assistant that has nothing to open.

Walking docs/deploy.md as an operator: Zoé, the first manager of a club made with `org
create` and given roster.manage, saw "Change the league rosters" and "Draft an email to
members" on her inbox and in the navigation; each opened on "Not found: There is nothing here
in your club. The link may be wrong, or it belongs to another account."."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from countersign.domain.club.roster import Roster
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.passwords import set_password

from tests.conftest import AVA
from tests.test_web_pages import Web, web_for

ZOE = "zoe@rivers.example"
STARTS = {
    "en": ("Change the league rosters", "Draft an email to members", "Roster assistant"),
    "fr": ("Modifier les effectifs des ligues", "Rédiger un courriel aux membres"),
}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    cs.club.register("rivers", "Rivers Tennis Club")
    permissions = ["members.manage", "roster.manage", "email_broadcasts.prepare"]
    cs.club.add_member("rivers", ZOE, "Zoé Martin", "manager", permissions)
    set_password(cs, ZOE, "zoe-long-password-1")
    return web_for(cs, seeded)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_club_without_a_roster_or_a_form_is_offered_no_assistant_for_them(web, language):
    zoe = web.browser()
    assert zoe.sign_in(ZOE, "zoe-long-password-1").status_code == 303

    inbox = zoe.get("/", **{"Accept-Language": language})

    assert inbox.status_code == 200
    for start in STARTS[language]:
        assert start not in inbox.text
    assert "/chat/roster/" not in inbox.text
    assert "/chat/email_broadcasts/" not in inbox.text


def test_once_the_club_holds_a_roster_its_assistant_is_offered(web, cs):
    organization_id = cs.club.organization_id("rivers")
    roster = Roster(organization_id=UUID(organization_id))
    roster.add_league("Juniors", 12)
    cs.store.save(roster)
    zoe = web.browser()
    assert zoe.sign_in(ZOE, "zoe-long-password-1").status_code == 303

    inbox = zoe.get("/")

    assert "Change the league rosters" in inbox.text
    assert "Draft an email to members" not in inbox.text  # still no broadcast form
    roster_chat = inbox.text.split('href="/chat/roster/', 1)[1].split('"', 1)[0]
    assert zoe.get(f"/chat/roster/{roster_chat}").status_code == 200


def test_the_demo_clubs_managers_are_offered_both_as_ever(web):
    ava = web.browser(AVA)

    inbox = ava.get("/")

    for start in STARTS["en"]:
        assert start in inbox.text


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("en", "Not found: rivers holds no record for the {section} section yet. A club's own"),
        ("fr", "Introuvable : rivers ne détient encore aucun enregistrement pour la section "),
    ],
)
def test_the_command_line_says_the_club_holds_no_such_record_yet(web, command, language, said):
    """The same club at the command line: `roster leagues --org rivers` and `chat --section
    roster` answered "Not found: check the club, the member and the id named", though all
    three were right."""
    chat = ("chat", "--org", "rivers", "--as", ZOE, "--message", "hi", "--language", language)
    for argv, section in (
        (("roster", "leagues", "--org", "rivers", "--language", language), "roster"),
        ((*chat, "--section", "roster"), "roster"),
        ((*chat, "--section", "email_broadcasts"), "email_broadcasts"),
    ):
        status, out, _ = command(*argv)

        assert status == 0
        assert out.startswith(said.format(section=section)), out
        assert "docs/deploy.md" in out
