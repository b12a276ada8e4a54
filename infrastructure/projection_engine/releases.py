"""Which release built a projection's tables, and what a process of another release does.

Each projection records the ``fingerprint`` of the code that built its tables
(``projection_schemas``: its ``version`` and its tables' shape, ``v4-1a2b…``). A process whose
projection has another fingerprint finds it when it sets the projection up (``claim_tables``,
from ``ProjectionRunner.setup``), and each runner checks it again with its position:

* tables built by an *earlier* release, or by a release of the same version with other
  tables (no order between them): dropped, and rebuilt from the log for this process's code,
  as an upgrade wants;
* tables built by a *later* release (a higher version): left exactly as they are, and the
  projection stops in this process (``BuiltByLaterReleaseError``, a
  ``ProjectionStoppedError``: a page or the API answers 503, a runner holds it and tries again
  while its other projections go on). Before, a process of the earlier release still running
  during an upgrade dropped what the new release had built, which dropped its tables in turn,
  and a runner of the earlier release kept writing its rows into the new release's tables.
  Going back to an earlier release on purpose is ``countersign projections rebuild`` with it,
  once the later release's processes are stopped (``take_over``). The take-over is the
  rebuild's start only: a process of the later release that claims the tables again during
  the rebuild stops it (``overtaken``), rather than the two dropping each other's tables.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase
from countersign.infrastructure.projection_engine.rows import (
    SCHEMA_TABLE,
    TRACKING_TABLE,
    ProjectionStoppedError,
)
from countersign.infrastructure.projection_engine.stops import advanced
from countersign.projections.base import Projection

log = logging.getLogger("countersign.projections")

_VERSION = re.compile(r"v(\d+)-")


class BuiltByLaterReleaseError(ProjectionStoppedError):
    """A projection's tables were built by a later release of countersign than this
    process's: they are left as they are, and this process does not use them."""


def version_of(fingerprint: str | None) -> int | None:
    """The projection version a stored fingerprint names (None: none it can tell)."""
    found = _VERSION.match(fingerprint or "")
    return int(found.group(1)) if found else None


def claim_tables(
    cursor: Cursor,
    projection: Projection,
    fingerprint: str,
    take_over: bool = False,
    since_start: bool = False,
) -> bool:
    """Make the tables this process's: record ``fingerprint``, dropping tables another
    release built (True when it dropped them: their position is gone). Raises
    ``BuiltByLaterReleaseError``, changing nothing, when a later release built them, unless
    ``take_over`` (an operator's rebuild); and, ``since_start`` (a runner that had made them
    its own finds them changed since), when another build of the same projection version
    did: a process that starts takes the tables for its code, one already running does not
    take them back, so two builds never drop each other's tables batch after batch."""
    name = projection.name
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} ("
        " projection TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, updated_at TEXT)"
    )
    stored = cursor.execute(
        f"SELECT fingerprint FROM {SCHEMA_TABLE} WHERE projection = ?", (name,)
    ).fetchone()
    if stored is not None and stored[0] == fingerprint:
        return False
    dropped = False
    tracked = cursor.execute(
        f"SELECT position FROM {TRACKING_TABLE} WHERE projection = ?", (name,)
    ).fetchone()
    if tracked is not None:  # built before, by other code (or before fingerprints)
        theirs = version_of(stored[0]) if stored is not None else None
        ours = projection.version
        if not take_over and theirs is not None and theirs > ours:
            raise BuiltByLaterReleaseError(
                f"projection {name!r} was built by a later release of countersign "
                f"(version {theirs}; this one has version {ours}): its tables "
                "are left as they are and this process does not use them. Stop this "
                "process and run the later release; to go back to this release, stop the "
                "later one's processes and run `countersign projections rebuild` with this one"
            )
        if not take_over and since_start and theirs == ours:
            raise BuiltByLaterReleaseError(
                f"projection {name!r} was rebuilt since this process started by another "
                f"build of countersign with the same projection version ({ours}) and other "
                "tables: they are left as they are and this process does not use them. Stop "
                "this process; a process of either build that starts takes the tables for "
                "its own code"
            )
        log.warning(
            "projection %r was built by another version of countersign (%s, now %s): "
            "its tables are dropped and rebuilt from the log",
            name,
            stored[0] if stored is not None else "no fingerprint",
            fingerprint,
        )
        for table in projection.tables:
            cursor.execute(f"DROP TABLE IF EXISTS {table.name}")
        cursor.execute(f"DELETE FROM {TRACKING_TABLE} WHERE projection = ?", (name,))
        dropped = True
    cursor.execute(
        f"INSERT INTO {SCHEMA_TABLE} (projection, fingerprint, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (projection) DO UPDATE"
        " SET fingerprint = excluded.fingerprint, updated_at = excluded.updated_at",
        (name, fingerprint, datetime.now(tz=UTC).isoformat()),
    )
    return dropped


def stored_fingerprint(sql: SqlDatabase, name: str) -> str | None:
    """The fingerprint the projection's tables were last set up under (None: none stored)."""
    with sql.reading() as cursor:
        found = cursor.execute(
            f"SELECT fingerprint FROM {SCHEMA_TABLE} WHERE projection = ?", (name,)
        ).fetchone()
    return str(found[0]) if found is not None else None


def own_tables(sql: SqlDatabase, projection: Projection) -> bool:
    """Whether the projection's tables are still set up for this process's code."""
    return stored_fingerprint(sql, projection.name) == projection.fingerprint()


def overtaken(sql: SqlDatabase, projection: Projection) -> ProjectionStoppedError:
    """What stops a rebuild of ``projection`` that another runner overtook: a process of
    another release (or build) that set the tables up for its own code meanwhile, whose
    tables are then left as it made them (a ``BuiltByLaterReleaseError``: the rebuild's
    take-over was its start's, and taking them back would only have that process drop them
    again); else a runner of this release that moved the position on (``stops.advanced``)."""
    name, ours = projection.name, projection.version
    stored = stored_fingerprint(sql, name)
    if stored is None or stored == projection.fingerprint():
        return ProjectionStoppedError(advanced(name))
    theirs = version_of(stored)
    return BuiltByLaterReleaseError(
        f"projection {name!r} was taken by a process of another release of countersign "
        f"during the rebuild (version {theirs if theirs is not None else 'unknown'}; this "
        f"one has version {ours}), which set its tables up for its own code: they are left "
        "as it made them. Stop every process of that release (serve, worker, projections "
        "run), then run the rebuild again"
    )
