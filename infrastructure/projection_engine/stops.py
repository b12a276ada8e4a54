"""Where a projection stops, and what its operator reads then.

A projection stops at an event it cannot apply: one that does not decode, or whose handler
raises (``stopped`` names it, and says the next run resumes from it), or at a batch's last
event when the batch's end raises (``end_batch``: the projection's own ``end_batch``, then the
rows packed). Nothing of that batch is written then; a runner following the log
(``ProjectionRunner.run_batch``) applies the events before the one it stopped at, where the
stop names its event (not at a batch's end, nor in a rebuild). A rebuild another runner
overtook stops too (``advanced``). ``runner.ProjectionRunner`` and ``together`` stop the
same way. The database out of reach (a read of the projection's rows cancelled behind a lock
held past COUNTERSIGN_DATABASE_TIMEOUT, say) stops nothing: it is raised as it is, and
``projections run`` waits and carries on. ``held_batch`` is how ``projections run`` holds a
projection stopped at an event: said at ERROR, tried again, while the others go on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.persistence.recorders import Entry
from countersign.infrastructure.persistence.stored_events import names_no_class
from countersign.infrastructure.persistence.stored_keys import StoredKeyError
from countersign.infrastructure.persistence.unavailable import database_unavailable
from countersign.infrastructure.projection_engine.key_filter import KeyFilter
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError, SqlRows
from countersign.projections.base import Projection
from countersign.projections.messages import forget_outcome_texts
from pydantic import ValidationError

if TYPE_CHECKING:
    from countersign.infrastructure.projection_engine.runner import ProjectionRunner

log = logging.getLogger("countersign.projections")


@dataclass(frozen=True)
class ProjectionStatus:
    """Where a projection stands against the head of the log."""

    name: str
    position: int
    head: int

    @property
    def lag(self) -> int:
        return max(0, self.head - self.position)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "position": self.position, "head": self.head, "lag": self.lag}


def end_batch(
    name: str, projection: Projection, rows: SqlRows, last: Entry, known: KeyFilter | None = None
) -> None:
    """``projection.end_batch(rows)``, then the batch's writes packed (``SqlRows.pack``,
    after ``KeyFilter.prune`` by ``known``, a rebuild's, if given); what either raises stops
    the projection at the batch's last event (nothing of the batch is written). Then
    ``rows.batch`` is emptied: what the projection gathered there often refers to the rows
    (a ``_Batch`` holding them, a bound ``put_values``), and the rows live on as the next
    batch's overlay, so a cycle left in place would keep every batch's rows for the
    collector, which a rebuild runs rarely (``runner.frozen_heap``): the rebuilding
    process's peak went from 54 to 80 MB over 100,000 events before this
    (scripts/bench_projections.py)."""
    try:
        projection.end_batch(rows)
        if known is not None:
            rows.prune(known)
        rows.pack()
    except Exception as error:
        if database_unavailable(error):
            raise  # the database out of reach (a lock held past the timeout), not a bad batch
        raise ProjectionStoppedError(stopped(name, last, error)) from error
    finally:
        rows.batch.clear()
        forget_outcome_texts()  # the batch's outcomes, remembered for its messages


def advanced(name: str) -> str:
    """What stops a rebuild of ``name`` that another runner of it moved on during."""
    return (
        f"projection {name!r} was advanced by another runner during the rebuild; "
        "stop 'countersign projections run' and rebuild again"
    )


def stopped(
    name: str, notification: Entry, error: str | BaseException, *, unreadable: bool = False
) -> Localized:
    """What stops ``name`` at ``notification``, which it could not apply (``error``, the
    exception or its class), in English and French: the event and its aggregate, and that the
    next run resumes there; for an event that does not decode (``unreadable``), that an
    operator may pass it (``skips.py``), and what is wrong as ``audit verify`` codes it (its
    key no key: stored_keys.py; else ``event_unreadable``)."""
    if isinstance(error, BaseException):
        code = error.code if isinstance(error, StoredKeyError) else "event_unreadable"
        error = f"{type(error).__name__} [{code}]" if unreadable else _reason(error)
    said = _STOPPED.filled(
        name=repr(name), position=notification.id, event=event_named(notification), error=error
    )
    if not unreadable:
        return said
    skip = _SKIP_IT.filled(position=notification.id)
    return Localized(said.en + skip.en, said.fr + skip.fr)


def _reason(error: BaseException) -> str:
    """What an event's handler raised, as the stop names it: the exception's class, and for a
    stored value that no longer reads as its contract's type (a plug-in's ``Preview`` given a
    required field), which one and what to do; never a stored value (pydantic's error type,
    ``missing``, not its message, which a contract's own validator may write a value into)."""
    if not isinstance(error, ValidationError) or not error.errors():
        return type(error).__name__
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "?"
    return (
        f"ValidationError: a stored {error.title} no longer reads as its contract's type "
        f"({where}: {first['type']}): stored proposals keep the shape they were frozen with, "
        "so a field added to a contract's Preview, Arguments or Result since needs a default, "
        "and none is removed or retyped (docs/adding-an-operation.md)"
    )


_STOPPED = Localized(
    "projection {name} stopped at notification {position} ({event}): {error}. Nothing after "
    "it was applied; fix the cause and run the projection again: it resumes from this event.",
    "la projection {name} s'est arrêtée à la notification {position} ({event}) : {error}. "
    "Rien après elle n'a été appliqué ; corrigez la cause et relancez la projection : elle "
    "reprend à cet événement.",
)
_SKIP_IT = Localized(
    " If the record cannot be restored, 'countersign projections skip {position} --reason "
    "TEXT' passes it in every projection, recorded.",
    " Si l'enregistrement ne peut pas être restauré, 'countersign projections skip {position} "
    "--reason TEXTE' le fait passer dans chaque projection, en l'enregistrant.",
)


def event_named(notification: Entry) -> str:
    """A stored event as the messages name it: its class and its aggregate's id."""
    return f"{notification.topic.rpartition(':')[2]} of {_id_text(notification.originator_id)}"


def _id_text(originator_id: object) -> str:
    """An aggregate id as users see it everywhere (dashed), whatever the database returned."""
    try:
        return str(originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id)))
    except ValueError:
        return repr(originator_id)[:80]


#: Seconds between two ERROR lines of a projection still stopped at the same event: the first
#: is said at once, and again this often, so that a log search or an alert on ERROR lines
#: over the last hour still finds it (the process no longer exits there).
STOPPED_SAID_AGAIN = 600.0


def held_batch(
    runner: ProjectionRunner, held: dict[str, tuple[float, str, float]], now: float, retry: float
) -> int:
    """A batch of ``runner``, or, if it stops at an event it cannot take, the events before
    that one it applied (``ProjectionStoppedError.applied``): then it is ``held`` for
    ``retry`` seconds, said at once for each event it stops at and again every
    ``STOPPED_SAID_AGAIN`` seconds while it stays there."""
    try:
        processed = runner.run_batch()
    except ProjectionStoppedError as stopped_at:
        said = str(stopped_at)
        _, before, last_said = held.get(runner.name, (0.0, "", 0.0))
        if before != said or now - last_said >= STOPPED_SAID_AGAIN:
            log.error("%s The runner tries it again every %.0f s.", said, retry)
            last_said = now
        held[runner.name] = (now + retry, said, last_said)
        runner.known_position = None
        return stopped_at.applied
    if held.pop(runner.name, None) is not None:
        log.warning("projection '%s' is past the event that stopped it; carrying on", runner.name)
    return processed


def handler_of(projection: Projection, topic: str) -> Any:
    """The projection's handler of events stored under ``topic``; for a topic of countersign's
    own packages that names no class (a writer's edit), one that is never reached: the event
    is decoded, which fails, and the projection stops at it as at any undecodable event
    (skippable), where it was passed as a type no handler takes, lost to every read model
    unsaid. None: the projection does not handle it (not decoded)."""
    handler = projection.handler_for(topic)
    return _never_reached if handler is None and names_no_class(topic) else handler


def _never_reached(event: Any, position: int, rows: Any) -> None:
    """``handler_of``'s handler of a topic that names no class (its event never decodes)."""
