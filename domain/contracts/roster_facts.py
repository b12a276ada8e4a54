"""What every roster operation reads: the club's roster, named by the proposal's scope.

Each roster operation (a move, a removal, an addition) reads the one roster of the
organization, changes it when approved and commits it with its outcome; they share its
loading here rather than each writing it again.
"""

from __future__ import annotations

from dataclasses import dataclass

from countersign.domain.club.roster import Roster
from countersign.domain.contracts.base import Facts
from countersign.domain.errors import NotFoundError
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope
from eventsourcing.domain import Aggregate


@dataclass
class RosterFacts(Facts):
    """The roster a member joins, leaves a league of, or moves within."""

    roster: Roster

    def aggregates(self) -> list[Aggregate]:
        return [self.roster]


def load_roster(scope: Scope, store: Repository) -> RosterFacts:
    """The organization's roster; NotFoundError for any other resource, exactly as for one
    that does not exist."""
    if scope.resource_id != Roster.create_id(scope.organization_id):
        raise NotFoundError("roster")
    return RosterFacts(roster=store.get(scope.resource_id, Roster))
