"""roster.move_member: a local operation on the seeded club's roster."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from countersign.domain.club.roster import Roster
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import ConformanceCase, Seeded, register


def _roster(seeded: Seeded) -> str:
    return str(seeded["rosters"]["granite"])


def _roster_state(cs: Countersign, roster_id: str) -> Any:
    roster = cs.store.get(UUID(roster_id), Roster)
    return {
        "version": roster.version,  # every move is an event: a second one shows
        "leagues": {name: sorted(roster.members_of(name)) for name in roster.league_names()},
    }


def _she_joins_the_destination_meanwhile(cs: Countersign, roster_id: str) -> None:
    cs.club.join("granite", "Thursday Seniors", "Olivia Chen", "olivia.chen@example.com")


CASE = register(
    ConformanceCase(
        kind="roster.move_member",
        request={
            "email": "olivia.chen@example.com",
            "from_league": "Sunday Mixed Doubles",
            "to_league": "Thursday Seniors",
        },
        resource=_roster,
        observe=_roster_state,
        make_stale=_she_joins_the_destination_meanwhile,
        stale_reason="member_already_in_destination",
    )
)
