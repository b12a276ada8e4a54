"""The roster: leagues have a capacity, a full league takes nobody, and a member moves between
leagues in one event that another process reads back."""

from __future__ import annotations

from uuid import uuid4

import pytest
from countersign.domain.club.organization import Organization
from countersign.domain.club.roster import Roster
from countersign.domain.errors import (
    AlreadyInLeagueError,
    DuplicateError,
    LeagueFullError,
    NotInLeagueError,
    RosterRuleError,
)

OLIVIA = "olivia.chen@example.com"


def _roster() -> Roster:
    roster = Roster(organization_id=uuid4())
    roster.add_league("Sunday Mixed Doubles", capacity=2)
    roster.add_league("Thursday Seniors", capacity=3)
    roster.add_league("Open Ice")  # no limit
    roster.join("Sunday Mixed Doubles", "Olivia Chen", OLIVIA)
    roster.join("Thursday Seniors", "Walter Brooks", "walter.brooks@example.com")
    return roster


def test_a_league_reports_its_members_capacity_and_room():
    roster = _roster()
    assert roster.member_count("Thursday Seniors") == 1
    assert roster.capacity_of("Thursday Seniors") == 3
    assert roster.room_in("Thursday Seniors") == 2
    assert not roster.is_full("Thursday Seniors")
    assert roster.capacity_of("Open Ice") is None
    assert roster.room_in("Open Ice") is None
    assert roster.leagues_of("  Olivia.Chen@Example.com ") == ["Sunday Mixed Doubles"]


@pytest.mark.parametrize("capacity", [0, -1, True, 2.5, "8"])
def test_a_capacity_is_a_whole_number_of_members(capacity):
    roster = Roster(organization_id=uuid4())
    with pytest.raises(RosterRuleError, match="capacity"):
        roster.add_league("Friday Fun", capacity=capacity)
    assert roster.league_names() == []


def test_a_full_league_refuses_another_member_and_a_league_without_limit_never_fills():
    roster = _roster()
    roster.join("Sunday Mixed Doubles", "Lucas Roy", "lucas.roy@example.com")
    assert roster.is_full("Sunday Mixed Doubles")

    with pytest.raises(LeagueFullError, match="'Sunday Mixed Doubles' is full \\(2 members\\)"):
        roster.join("Sunday Mixed Doubles", "Grace Kim", "grace.kim@example.com")

    for n in range(30):
        roster.join("Open Ice", f"Player {n}", f"player{n}@example.com")
    assert roster.member_count("Open Ice") == 30
    assert roster.members_of("Sunday Mixed Doubles") == {
        OLIVIA: "Olivia Chen",
        "lucas.roy@example.com": "Lucas Roy",
    }


def test_a_move_takes_the_member_and_their_name_from_one_league_to_the_other():
    roster = _roster()

    roster.move(" Olivia.Chen@example.com ", "Sunday Mixed Doubles", "Thursday Seniors")

    assert roster.members_of("Sunday Mixed Doubles") == {}
    assert roster.members_of("Thursday Seniors")[OLIVIA] == "Olivia Chen"
    assert roster.member_count("Thursday Seniors") == 2
    moved = roster.collect_events()[-1]
    assert type(moved).__name__ == "MemberMoved"
    assert (moved.email, moved.name, moved.from_league, moved.to_league) == (
        OLIVIA,
        "Olivia Chen",
        "Sunday Mixed Doubles",
        "Thursday Seniors",
    )


def test_a_member_who_is_not_in_the_source_league_cannot_be_moved_out_of_it():
    roster = _roster()
    with pytest.raises(NotInLeagueError, match="does not play in 'Thursday Seniors'"):
        roster.move(OLIVIA, "Thursday Seniors", "Open Ice")
    assert roster.leagues_of(OLIVIA) == ["Sunday Mixed Doubles"]


def test_a_member_already_in_the_destination_cannot_be_moved_into_it():
    roster = _roster()
    roster.join("Thursday Seniors", "Olivia Chen", OLIVIA)
    with pytest.raises(AlreadyInLeagueError, match="already plays in 'Thursday Seniors'"):
        roster.move(OLIVIA, "Sunday Mixed Doubles", "Thursday Seniors")
    assert roster.leagues_of(OLIVIA) == ["Sunday Mixed Doubles", "Thursday Seniors"]


def test_nobody_moves_into_a_full_league():
    roster = _roster()
    roster.join("Thursday Seniors", "Helen Park", "helen.park@example.com")
    roster.join("Thursday Seniors", "Margaret Hughes", "margaret.hughes@example.com")
    with pytest.raises(LeagueFullError, match="'Thursday Seniors' is full \\(3 members\\)"):
        roster.move(OLIVIA, "Sunday Mixed Doubles", "Thursday Seniors")
    assert roster.leagues_of(OLIVIA) == ["Sunday Mixed Doubles"]


def test_a_move_needs_two_different_leagues_that_exist():
    roster = _roster()
    with pytest.raises(RosterRuleError, match="no league named 'Friday Fun'"):
        roster.move(OLIVIA, "Sunday Mixed Doubles", "Friday Fun")
    with pytest.raises(RosterRuleError, match="two different leagues"):
        roster.move(OLIVIA, "Sunday Mixed Doubles", "Sunday Mixed Doubles")
    with pytest.raises(DuplicateError):
        roster.add_league("Open Ice")


def test_a_move_is_stored_and_another_process_reads_it_back(cs, seeded, other):
    roster_id = Roster.create_id(Organization.create_id("granite"))
    roster = cs.store.get(roster_id, Roster)
    roster.move(OLIVIA, "Sunday Mixed Doubles", "Thursday Seniors")
    cs.store.save(roster)

    reread = other.store.get(roster_id, Roster)
    assert OLIVIA in reread.members_of("Thursday Seniors")
    assert OLIVIA not in reread.members_of("Sunday Mixed Doubles")
    assert reread.capacity_of("Thursday Seniors") == 8
    assert reread.member_count("Thursday Seniors") == 5
