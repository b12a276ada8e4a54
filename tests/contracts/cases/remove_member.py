"""roster.remove_member: a local operation on the seeded club's roster."""

from __future__ import annotations

from uuid import UUID

from countersign.domain.club.roster import Roster
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import ConformanceCase, register

from tests.contracts.cases.move_member import _roster, _roster_state  # the same roster


def _he_leaves_the_league_meanwhile(cs: Countersign, roster_id: str) -> None:
    roster = cs.store.get(UUID(roster_id), Roster)  # the club offers no leave: the store does
    roster.leave("Thursday Seniors", "walter.brooks@example.com")
    cs.store.save(roster)


CASE = register(
    ConformanceCase(
        kind="roster.remove_member",
        request={"member": "Walter Brooks", "league": "Thursday Seniors"},
        resource=_roster,
        observe=_roster_state,
        make_stale=_he_leaves_the_league_meanwhile,
        stale_reason="member_left_league",
    )
)
