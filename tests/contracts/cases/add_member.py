"""roster.add_member: a local operation on the seeded club's roster."""

from __future__ import annotations

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import ConformanceCase, register

from tests.contracts.cases.move_member import _roster, _roster_state  # the same roster


def _she_is_added_meanwhile(cs: Countersign, roster_id: str) -> None:
    cs.club.join("granite", "Junior Program", "Chloe Dubois", "chloe.dubois@example.com")


CASE = register(
    ConformanceCase(
        kind="roster.add_member",
        request={
            "email": "chloe.dubois@example.com",
            "league": "Junior Program",
            "name": "Chloe Dubois",
        },
        resource=_roster,
        observe=_roster_state,
        make_stale=_she_is_added_meanwhile,
        stale_reason="member_already_in_league",
    )
)
