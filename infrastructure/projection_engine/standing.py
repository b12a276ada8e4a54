"""Where each projection stands, read without changing anything (``projections status``).

A runner sets its projection up as it is made (``ProjectionRunner.setup``): it creates the
tables, and ``releases.claim_tables`` drops an earlier release's or stops at a later one's.
A report must do neither: ``countersign projections status`` made runners, so it dropped an
earlier release's tables for its own code, and it stopped at the first projection a later
release built, showing none of the others. ``standings`` reads the tracking rows and the
fingerprints as stored and says, for every projection, what this release's code makes of
them (as ``claim_tables`` would) and what to do next; nothing is created, dropped or locked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.unavailable import missing_table
from countersign.infrastructure.projection_engine.releases import version_of
from countersign.infrastructure.projection_engine.rows import SCHEMA_TABLE, TRACKING_TABLE
from countersign.infrastructure.projection_engine.runner import ProjectionRunner
from countersign.projections.base import Projection

if TYPE_CHECKING:
    from countersign.infrastructure.persistence.app import CountersignApplication

#: This release's code built the tables: it follows the log into them.
CURRENT = "current"
#: No tracking row: never built here, or a rebuild stopped between dropping and making them.
NOT_BUILT = "not_built"
#: An earlier release built them (or one before fingerprints): this one rebuilds them.
EARLIER = "built_by_earlier_release"
#: A later release built them: this one leaves them as they are.
LATER = "built_by_later_release"
#: Another build of the same projection version, with other tables.
OTHER_BUILD = "built_by_other_build"


@dataclass(frozen=True)
class Standing:
    """One projection as stored: its position against the log's head, whose code built its
    tables (``state``, and the version stored, ``built_version``), and, unless this
    release's code built them, what that means and what to do (``note``)."""

    name: str
    position: int
    head: int
    state: str
    built_version: int | None = None
    note: str | None = None
    #: Where it stops, if its next event does not read (``ProjectionRunner.unreadable_next``).
    stopped: Localized | None = None

    @property
    def lag(self) -> int:
        return max(0, self.head - self.position)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "position": self.position,
            "head": self.head,
            "lag": self.lag,
            "state": self.state,
            "built_version": self.built_version,
            "note": self.note,
            "stopped": self.stopped.en if self.stopped is not None else None,
        }


def standings(
    app: CountersignApplication, sql: SqlDatabase, projections: Sequence[Projection]
) -> list[Standing]:
    """Every projection's ``Standing``, from the tracking rows and fingerprints as stored
    (tables no runner has made yet read as none). Nothing is written or locked."""
    head = int(app.recorder.max_notification_id() or 0)
    positions = _read(sql, f"SELECT projection, position FROM {TRACKING_TABLE}")
    built = _read(sql, f"SELECT projection, fingerprint FROM {SCHEMA_TABLE}")
    found = []
    for projection in projections:
        standing = _standing(
            projection, positions.get(projection.name), built.get(projection.name), head
        )
        if standing.state == CURRENT and standing.lag:
            # A lagging projection whose next event does not read is stopped there: say where.
            runner = ProjectionRunner(app, sql, projection, set_up=False)
            standing = replace(standing, stopped=runner.unreadable_next(standing.position))
        found.append(standing)
    return found


def _read(sql: SqlDatabase, statement: str) -> dict[str, Any]:
    try:
        with sql.reading() as cursor:
            return {str(name): value for name, value in cursor.execute(statement).fetchall()}
    except Exception as error:
        if missing_table(error):
            return {}  # no runner has set a projection up in this database yet
        raise


def _standing(projection: Projection, position: Any, stored: Any, head: int) -> Standing:
    """As ``releases.claim_tables`` would find the tables, said for an operator."""
    name, ours, theirs = projection.name, projection.version, version_of(stored)
    state, note = CURRENT, None
    if position is None:
        state = NOT_BUILT
        note = (
            "not built yet: `countersign projections run` (or a page that reads it) builds "
            "it from the log"
        )
    elif stored == projection.fingerprint():
        pass
    elif theirs is not None and theirs > ours:
        state = LATER
        note = (
            f"built by a later release (v{theirs}; this one has v{ours}); this release will "
            "not touch it. Its position is the later release's. To go back to this release, "
            "stop the later release's processes, then run "
            f"`countersign projections rebuild {name}` with this one"
        )
    elif theirs == ours:
        state = OTHER_BUILD
        note = (
            "built by another build of countersign with the same projection version "
            f"(v{ours}) and other tables: a running process of this build does not use it, "
            "one that starts drops and rebuilds it for its own code. Run one build only, or "
            f"`countersign projections rebuild {name}` with this one"
        )
    else:
        state = EARLIER
        built = f"an earlier release (v{theirs})" if theirs is not None else "an earlier release"
        note = (
            f"built by {built}: this release drops its tables and rebuilds them from the log "
            "when it next opens it (`countersign projections run`, a page); "
            f"`countersign projections rebuild {name}` does it now, showing its progress"
        )
    return Standing(name, int(position or 0), head, state, theirs, note)
