"""The roster assistant's reads: the leagues with their room, and a member search that gives
short references, names, emails and leagues (never an id), capped."""

from __future__ import annotations

import json
from uuid import UUID

from countersign.application.assistant.sections import ASSISTANTS
from countersign.application.assistant.sections.roster import MAX_FOUND, FindMembers, ListLeagues
from countersign.domain.club.organization import Organization
from countersign.domain.club.roster import Roster
from countersign.domain.scope import Scope, Section

ROSTER = ASSISTANTS[Section("roster")]
GRANITE = Organization.create_id("granite")


def _scope(organization_id: UUID = GRANITE) -> Scope:
    return Scope(organization_id, ROSTER.section, Roster.create_id(organization_id))


def _read(cs, name, request, scope=None):
    tool = ROSTER.read_tool(name)
    assert tool is not None
    return tool.run(request, scope or _scope(), cs.store)


def test_the_league_list_shows_members_capacity_and_room(cs, seeded):
    cs.club.join("granite", "Thursday Seniors", "Grace Kim", "grace.kim@example.com")

    listing = _read(cs, "list_leagues", ListLeagues())

    assert listing == {
        "leagues": [
            {"name": "Junior Program", "members": 3, "capacity": 12, "room": 9},
            {"name": "Monday Night Open", "members": 6, "capacity": 8, "room": 2},
            {"name": "Sunday Mixed Doubles", "members": 2, "capacity": 8, "room": 6},
            {"name": "Thursday Seniors", "members": 5, "capacity": 8, "room": 3},
        ]
    }


def test_the_member_search_matches_part_of_a_name_or_email_in_any_case(cs, seeded):
    by_name = _read(cs, "find_members", FindMembers(query="  oLiViA  "))
    by_email = _read(cs, "find_members", FindMembers(query="NOAH.FRASER@"))

    assert by_name == {
        "members": [
            {
                "ref": "M9",
                "name": "Olivia Chen",
                "email": "olivia.chen@example.com",
                "leagues": ["Monday Night Open", "Sunday Mixed Doubles"],
            }
        ],
        "more_matches": 0,
    }
    assert by_email["members"][0]["name"] == "Noah Fraser"
    assert by_email["members"][0]["leagues"] == ["Monday Night Open", "Thursday Seniors"]
    assert _read(cs, "find_members", FindMembers(query="nobody"))["members"] == []


def test_without_a_query_every_member_is_listed_once_by_name_with_a_stable_reference(cs, seeded):
    everyone = _read(cs, "find_members", FindMembers(query=None))["members"]

    names = [member["name"] for member in everyone]
    assert names == sorted(names)
    assert len(names) == len(set(names)) == 12  # Noah, Olivia and Lucas play in two leagues
    assert [member["ref"] for member in everyone] == [f"M{n}" for n in range(1, 13)]
    olivia = next(member for member in everyone if member["name"] == "Olivia Chen")
    assert olivia["ref"] == "M9"  # the same reference a search for her gives


def test_a_search_returns_at_most_twenty_members_and_counts_the_rest(cs, seeded):
    for n in range(9):
        cs.club.join("granite", "Junior Program", f"Junior {n}", f"junior{n}@example.com")
    for n in range(2):
        cs.club.join("granite", "Monday Night Open", f"Adult {n}", f"adult{n}@example.com")

    found = _read(cs, "find_members", FindMembers(query="@example.com"))

    assert len(found["members"]) == MAX_FOUND == 20
    assert found["more_matches"] == 3


def test_reads_show_only_the_club_of_the_conversation_and_never_an_id(cs, seeded):
    maple = _read(
        cs, "find_members", FindMembers(query=None), _scope(Organization.create_id("maple"))
    )
    assert [member["name"] for member in maple["members"]] == ["Jack Wilson"]

    shown = json.dumps(
        [
            _read(cs, "list_leagues", ListLeagues()),
            _read(cs, "find_members", FindMembers(query=None)),
            ROSTER.summary(_scope(), cs.store),
        ]
    )
    for organization in seeded["organizations"]:
        assert organization["id"] not in shown
        assert str(Roster.create_id(UUID(organization["id"]))) not in shown
    assert "Jack Wilson" not in json.dumps(_read(cs, "find_members", FindMembers(query=None)))
    assert "12 members" in ROSTER.summary(_scope(), cs.store)


def test_the_section_reads_in_english_and_french_and_its_roster_is_the_clubs(cs, seeded):
    texts = ROSTER.texts
    for text in (texts.name, texts.assistant, texts.lead, texts.placeholder, texts.start):
        assert text is not None
        assert text.en.strip()
        assert text.fr.strip()
        assert text.en != text.fr
    for tool in ROSTER.read_tools:
        assert tool.label is not None
        assert tool.label.en != tool.label.fr
    assert ROSTER.club_resource is not None
    assert str(ROSTER.club_resource(GRANITE)) == seeded["rosters"]["granite"]
    schema = next(t["function"] for t in ROSTER.tools() if t["function"]["name"] == "find_members")
    assert schema["parameters"]["required"] == ["query"]  # strict: present, may be null
