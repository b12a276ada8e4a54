"""Events an operator told every projection to pass, each recorded with who and why.

A projection never passes an event silently: one it cannot read (its stored JSON damaged, a
class that no longer loads) stops it there, and it resumes from that event once the cause is
fixed (``stops.stopped``). But the log is every club's: while one club's unreadable event
stops a projection, every club's pages show old state, and the fix (restoring the record
from a backup) may take days, or be impossible. ``countersign projections skip POSITION
--reason ...`` is the operator's decision to pass that one event in every projection: it
is refused unless the event at that position exists and does not decode now (an event that
reads, whose handler fails, needs a fix of the code, not a skip), and it is recorded in
``projection_skips`` with its aggregate, topic, reason, operator and time, which ``projections
status`` lists. The runners look a position up there only when its event fails to decode, so
an event that reads is never passed, and nothing is looked up on the way of a batch that
reads. A rebuild passes the same events. The aggregate itself is as unreadable as before:
its commands and pages answer with a reference, never with a guess, and ``audit verify``
still reports it.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.persistence.recorders import Entry
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase
from countersign.infrastructure.persistence.unavailable import missing_table
from countersign.infrastructure.projection_engine.stops import event_named

SKIPS_TABLE = "projection_skips"
CREATE_SKIPS = (
    f"CREATE TABLE IF NOT EXISTS {SKIPS_TABLE} ("
    " position BIGINT PRIMARY KEY, originator_id TEXT NOT NULL, topic TEXT NOT NULL,"
    " reason TEXT NOT NULL, skipped_by TEXT NOT NULL, skipped_at TEXT NOT NULL)"
)
#: A reason is for people reading ``projections status`` and the audit: a line, not a file.
REASON_MOST = 500


class SkipRefusedError(ValueError):
    """The event named cannot be skipped; the message says why and what to do instead (in
    French too: ``french``)."""

    def __init__(self, said: Localized, **params: object) -> None:
        super().__init__(said.text("en", **params))
        self.french = said.text("fr", **params)


_NO_REASON = Localized(
    "say why the event is skipped: --reason TEXT",
    "dites pourquoi l'événement est sauté : --reason TEXTE",
)
_LONG_REASON = Localized(
    "the reason is a line, at most {most} characters",
    "la raison tient sur une ligne, {most} caractères au plus",
)
_NO_EVENT = Localized(
    "the log has no event at position {position}",
    "le journal n'a aucun événement à la position {position}",
)
_READS = Localized(
    "the event at position {position} ({event}) reads: a projection that stops there fails in "
    "its handler, which needs a fix of the code, not a skip",
    "l'événement à la position {position} ({event}) se lit : une projection qui s'y arrête "
    "échoue dans son gestionnaire, ce qui demande une correction du code, pas un saut",
)
_SKIPPED_ALREADY = Localized(
    "the event at position {position} is skipped already, by {who} at {at}: {reason}",
    "l'événement à la position {position} est déjà sauté, par {who} le {at} : {reason}",
)


@dataclass(frozen=True)
class Skip:
    """One event every projection passes, as recorded."""

    position: int
    event: str  # its class and aggregate, as ``stops.stopped`` names it
    reason: str
    skipped_by: str
    skipped_at: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "event": self.event,
            "reason": self.reason,
            "skipped_by": self.skipped_by,
            "skipped_at": self.skipped_at,
        }


def create(cursor: Cursor) -> None:
    """The table, where it is missing (``skip``; ``ProjectionRunner.setup`` sends
    ``CREATE_SKIPS`` with its other statements, under the schema lock)."""
    cursor.execute(CREATE_SKIPS)


def skipped(sql: SqlDatabase, position: int) -> bool:
    """Whether an operator told every projection to pass the event at ``position`` (asked only
    of an event that did not decode)."""
    try:
        with sql.reading() as cursor:
            found = cursor.execute(
                f"SELECT 1 FROM {SKIPS_TABLE} WHERE position = ?", (position,)
            ).fetchone()
    except Exception as error:
        if missing_table(error):
            return False  # a database no runner has set up since this version: none skipped
        raise
    return found is not None


def listed(sql: SqlDatabase) -> list[Skip]:
    """Every skip recorded, in the log's order."""
    try:
        with sql.reading() as cursor:
            rows = cursor.execute(
                f"SELECT position, originator_id, topic, reason, skipped_by, skipped_at"
                f" FROM {SKIPS_TABLE} ORDER BY position"
            ).fetchall()
    except Exception as error:
        if missing_table(error):
            return []
        raise
    return [
        Skip(
            int(r[0]), f"{str(r[2]).rpartition(':')[2]} of {r[1]}", str(r[3]), str(r[4]), str(r[5])
        )
        for r in rows
    ]


def record(
    sql: SqlDatabase,
    notification: Entry | None,
    decode: Any,
    position: int,
    reason: str,
    now: datetime | None = None,
) -> Skip:
    """Record that every projection passes the event at ``position`` (``notification``, None if
    the log has none there), after checking it does not decode with ``decode``;
    SkipRefusedError, recording nothing, otherwise."""
    reason = " ".join(reason.split())
    if not reason:
        raise SkipRefusedError(_NO_REASON)
    if len(reason) > REASON_MOST:
        raise SkipRefusedError(_LONG_REASON, most=REASON_MOST)
    if notification is None or notification.id != position:
        raise SkipRefusedError(_NO_EVENT, position=position)
    try:
        decode(notification)
    except Exception as error:  # what a runner stops on: this is what may be skipped
        cause = type(error).__name__
    else:
        raise SkipRefusedError(_READS, position=position, event=event_named(notification))
    skip = Skip(
        position,
        event_named(notification),
        f"{reason} ({cause})",
        _operator(),
        (now or datetime.now(tz=UTC)).isoformat(timespec="seconds"),
    )
    with sql.transaction() as cursor:
        create(cursor)
        earlier = cursor.execute(
            f"SELECT reason, skipped_by, skipped_at FROM {SKIPS_TABLE} WHERE position = ?",
            (position,),
        ).fetchone()
        if earlier is not None:
            # Said, not recorded again: the first skip's reason, who and when stay (a repeat
            # answered "recorded" with its own reason, and kept the first).
            raise SkipRefusedError(
                _SKIPPED_ALREADY,
                position=position,
                who=earlier[1],
                at=earlier[2],
                reason=earlier[0],
            )
        cursor.execute(
            f"INSERT INTO {SKIPS_TABLE}"
            " (position, originator_id, topic, reason, skipped_by, skipped_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (position) DO NOTHING",
            (
                position,
                skip.event.rpartition(" of ")[2],
                notification.topic,
                skip.reason,
                skip.skipped_by,
                skip.skipped_at,
            ),
        )
    return skip


def _operator() -> str:
    """Who ran the command, as the machine knows them."""
    try:
        return getpass.getuser()
    except Exception:  # no user name in the environment or the password database
        return "unknown"
