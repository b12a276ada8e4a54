"""Runs projections over the notification log in batches, exactly once.

Each batch reads up to ``batch_size`` notifications, applies them to a batch-scoped row cache,
then writes the changed rows and the new tracking position in ONE transaction. The transaction
first re-reads the tracking position under a lock, so two runners of one projection never both
apply a batch. A killed runner resumes from its last committed batch; a rebuild recreates the
tables and replays the whole log through the same code (a long one with a writer process,
``infrastructure/projection_engine/writer.py``). The tables' SQL is in ``rows``; running
several projections over one read of the log is in ``together``; where a projection stops, and
what it says then, in ``stops``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.log_structs import StructDecoder
from countersign.infrastructure.persistence.recorders import Entry
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase
from countersign.infrastructure.persistence.unavailable import database_unavailable
from countersign.infrastructure.projection_engine import skips, stops
from countersign.infrastructure.projection_engine.codecs import _SQL_TYPES
from countersign.infrastructure.projection_engine.heap import frozen_heap
from countersign.infrastructure.projection_engine.in_flight import InFlight
from countersign.infrastructure.projection_engine.in_place import TablesInPlace
from countersign.infrastructure.projection_engine.key_filter import KeyFilter
from countersign.infrastructure.projection_engine.releases import (
    BuiltByLaterReleaseError,
    claim_tables,
    overtaken,
)
from countersign.infrastructure.projection_engine.rows import (
    SCHEMA_TABLE,
    TRACKING_TABLE,
    ProjectionRaceError,
    ProjectionStoppedError,
    SqlRows,
    Written,
    create_statements,
    flush,
    index_statements,
    lock_position,
    save_position,
)
from countersign.infrastructure.projection_engine.stops import ProjectionStatus, end_batch, stopped
from countersign.infrastructure.projection_engine.writer import WriterProcess
from countersign.projections.base import Projection

__all__ = [
    "SCHEMA_TABLE",
    "TRACKING_TABLE",
    "_SQL_TYPES",
    "ProjectionRaceError",
    "ProjectionRunner",
    "ProjectionStatus",
    "ProjectionStoppedError",
    "SqlRows",
    "TablesInPlace",
    "create_statements",
    "frozen_heap",
]

log = logging.getLogger("countersign.projections")

_UNKNOWN: Any = object()


class ProjectionRunner:
    """Applies one projection to the log, batch by batch."""

    #: From this many events in the log, a rebuild writes in a writer process: starting one
    #: costs about a tenth of a second, which a rebuild this long earns back several times.
    PARALLEL_FROM = 20_000
    #: Events read a batch, by default. A batch costs the writer (on PostgreSQL the server
    #: too) a transaction, each position moved, a statement or COPY per table, whatever its
    #: size: 2,000 rather than 1,000 took a sixth off both (docs/speed.md, "Rebuild speed"),
    #: for one batch's rows more in memory (up to three live, two in flight).
    BATCH_SIZE = 2000

    def __init__(
        self,
        app: CountersignApplication,
        sql: SqlDatabase,
        projection: Projection,
        batch_size: int | None = None,
        *,
        in_place: TablesInPlace | None = None,
        take_over: bool = False,
        set_up: bool = True,
    ) -> None:
        """``set_up=False``: the tables are neither made nor claimed now (a read-only
        report's runner, ``standing``, which asks only ``unreadable_next``)."""
        self.app = app
        #: Drop tables a later release built, as an operator's rebuild does (``releases``).
        self.take_over = take_over
        self.sql = sql
        self.projection = projection
        self.batch_size = batch_size or self.BATCH_SIZE
        self.dialect = "postgres" if sql.is_postgres else "sqlite"
        # The position this runner last committed or read; the batch transaction re-checks it.
        self.known_position: int | None = None
        # Topic -> the projection's handler of it, bound, or None (those events are not
        # decoded): looked up once per topic.
        self._handlers: dict[str, Any] = {}
        # Handlers read events decoded by msgspec into structs (persistence/log_structs.py),
        # or by orjson (log_decoder.py), from the recorder's plain log rows.
        self.decode_event = StructDecoder(app.mapper)
        select_log = getattr(app.recorder, "select_log", None)
        self.read_log: Callable[[int, int], Sequence[Entry]] = select_log or (
            lambda after, limit: app.recorder.select_notifications(after + 1, limit=limit)
        )
        #: What this process knows to be in place already (``TablesInPlace``): with it, the
        #: tables are made only when it does not hold them, and every read of the position
        #: checks that they are still the ones it holds.
        self.in_place = in_place
        self._fingerprint = projection.fingerprint()
        if set_up and (in_place is None or not in_place.holds(self.name, self._fingerprint)):
            self.setup()

    @property
    def name(self) -> str:
        return self.projection.name

    def setup(self, *, indexes: bool = True, since_start: bool = False) -> None:
        """Create the projection's tables and tracking row if they are missing. Tables built
        under another ``fingerprint`` (an upgrade changed the projection) are dropped and the
        position set back to 0: the next catch-up rebuilds them from the whole log; tables a
        later release built stop the projection here instead (``releases``)."""
        with self.sql.transaction() as cursor:
            self.sql.schema_statements(
                cursor,
                [
                    f"CREATE TABLE IF NOT EXISTS {TRACKING_TABLE} ("
                    " projection TEXT PRIMARY KEY, position BIGINT NOT NULL, updated_at TEXT)",
                    skips.CREATE_SKIPS,
                ],
            )
            # An operator's take-over is at the start (``reset``), not at a position read
            # that finds another release claimed the tables since (``releases.overtaken``).
            take_over = self.take_over and not since_start
            if claim_tables(cursor, self.projection, self._fingerprint, take_over, since_start):
                self.known_position = None
            cursor.execute(
                f"INSERT INTO {TRACKING_TABLE} (projection, position) VALUES (?, 0)"
                " ON CONFLICT (projection) DO NOTHING",
                (self.name,),
            )
            cursor.execute_all(
                [
                    statement
                    for table in self.projection.tables
                    for statement in create_statements(table, self.dialect, indexes=indexes)
                ]
            )
        if self.in_place is not None:
            self.in_place.add(self.name, self._fingerprint)

    def position(self) -> int:
        """Where the projection stands, read as committed, on the reading connection: no
        write lock is taken (SQLite's is the whole database's, which another connection may
        hold), and the batch that writes after it checks it again under its lock
        (``_lock_position``), so a position moved meanwhile is a race, read again. Read with
        the fingerprint its tables were built under (``_checked_position``)."""
        return self._checked_position(self.in_place)

    def _stored_position(self) -> int:
        """The tracking row's position (0 without one), read as committed."""
        with self.sql.reading() as cursor:
            row = cursor.execute(
                f"SELECT position FROM {TRACKING_TABLE} WHERE projection = ?", (self.name,)
            ).fetchone()
        return int(row[0]) if row else 0

    def _checked_position(self, in_place: TablesInPlace | None) -> int:
        """The position, read with the fingerprint its tables were built under, in the same
        statement: a tracking row and that fingerprint stand for the tables (whatever drops
        them deletes the row in the same transaction: ``reset``, a new version's ``setup``).
        Another fingerprint (another release built them since): ``setup`` rebuilds them for
        this process's code, or stops the projection here if a later release built them
        (``releases``), before the position is read again; a runner of the earlier release
        kept writing its rows into the later one's tables before. No row (another process is
        rebuilding them, or a rebuild stopped between its reset and its ``setup``): the tables
        are gone too, and ``setup`` makes them (a page's runner, ``in_place``, no longer knows
        them in place). Any other runner read position 0 there before, and its batch, finding
        no row to lock, raced again at once, spinning until another process made them."""
        with self.sql.reading() as cursor:
            row = cursor.execute(
                f"SELECT t.position, s.fingerprint FROM {TRACKING_TABLE} t"
                f" LEFT JOIN {SCHEMA_TABLE} s ON s.projection = t.projection"
                " WHERE t.projection = ?",
                (self.name,),
            ).fetchone()
        if row is None or row[1] != self._fingerprint:
            if in_place is not None:
                in_place.forget(self.name)
            # The schema lock, as at any runner's start: waits as long. Tables this runner
            # held that another build claimed since are not taken back (``releases``).
            self.setup(since_start=True)
            self.known_position = self._stored_position()
        else:
            self.known_position = int(row[0])
        return self.known_position

    def head(self) -> int:
        return int(self.app.recorder.max_notification_id() or 0)

    def status(self) -> ProjectionStatus:
        return ProjectionStatus(self.name, self.position(), self.head())

    def unreadable_next(self, position: int) -> Localized | None:
        """What stops this projection at its batch after ``position``, if an event there that
        it handles does not decode: the message its runner logs when it stops there (None:
        every such event of that batch reads). For ``projections status``, whose reader has
        a lagging projection and no runner's log at hand. Reads the log only."""
        for notification in self._select(position):
            if self._handler(notification.topic) is None:
                continue
            try:
                self.decode_event.decode(notification)
            except Exception as error:
                if skips.skipped(self.sql, notification.id):
                    continue  # an operator passed it in every projection
                return stopped(self.name, notification, error, unreadable=True)
        return None

    def run_batch(self, start_after: int | None = None) -> int:
        """Process the next batch; returns the number of events processed (0: caught up)."""
        if start_after is not None:
            position = start_after
        elif self.known_position is not None:
            position = self.known_position
        else:
            position = self.position()
        batch = self._select(position)
        try:
            return self._apply(batch, position, decoded=False)
        except ProjectionStoppedError as stop:
            # Only the event it stopped at waits: the ones before it are applied (a stop at
            # the batch's end names no event, and the whole batch waits).
            if stop.position is not None:
                before = [n for n in batch if n.id < stop.position]
                stop.applied = self._apply(before, position, decoded=False)
            raise

    def read(
        self, position: int, wanted: Callable[[str], bool] | None = None
    ) -> list[tuple[Entry, Any]]:
        """The next batch after ``position``; only events some handler wants are decoded
        (the others still advance the position: their event is None)."""
        wanted = wanted or self._wants
        notifications = self._select(position)
        return [(n, self._decode(n) if wanted(n.topic) else None) for n in notifications]

    def apply(self, events: list[tuple[Entry, Any]], position: int) -> int:
        """Apply a decoded batch that starts right after ``position``, in one transaction."""
        return self._apply(events, position, decoded=True)

    def _apply(self, batch: Sequence[Any], position: int, *, decoded: bool) -> int:
        """Apply a batch of notifications, decoded (``(notification, event)`` pairs) or not,
        in one transaction that first checks the projection still stands at ``position``."""
        if not batch:
            return 0
        last = (batch[-1][0] if decoded else batch[-1]).id
        with self.sql.transaction() as cursor:
            self._lock_position(cursor, position)
            rows = self._prepare(batch, cursor, None, decoded=decoded)
            flush(self.name, rows, last, cursor)
            save_position(cursor, self.name, last)
        self.known_position = last
        return len(batch)

    def _prepare(
        self,
        batch: Sequence[Any],
        reader: Cursor,
        overlay: Written | None,
        *,
        decoded: bool,
        known: KeyFilter | None = None,
    ) -> SqlRows:
        """Run a batch through the projection's handlers; nothing is written yet.

        Undecoded notifications are decoded one at a time as they are applied, so a batch's
        events never all live at once: that keeps memory flat and the garbage collector idle.
        """
        rows = SqlRows(reader, self.projection.tables, self.dialect, overlay, known)
        to_domain_event = self.decode_event.decode
        handlers = self._handlers
        for item in batch:
            if decoded:
                notification, event = item
            else:
                notification, event = item, None
            handler = handlers.get(notification.topic, _UNKNOWN)
            if handler is _UNKNOWN:
                handler = self._handler(notification.topic)
            if handler is None:
                continue
            if not decoded:
                try:
                    event = to_domain_event(notification)
                except Exception as error:
                    if skips.skipped(self.sql, notification.id):
                        continue  # an operator passed it in every projection (skips.py)
                    raise ProjectionStoppedError(
                        stopped(self.name, notification, error, unreadable=True),
                        notification.id,
                    ) from None
            elif event is None:
                continue
            try:
                handler(event, notification.id, rows)
            except Exception as error:
                if database_unavailable(error):
                    # A read of the projection's rows the database did not answer (a lock
                    # held on its table past the timeout): not an event it cannot take.
                    raise
                raise ProjectionStoppedError(
                    stopped(self.name, notification, error), notification.id
                ) from error
        if batch:
            last = batch[-1][0] if decoded else batch[-1]
            end_batch(self.name, self.projection, rows, last, known)
        return rows

    def _lock_position(self, cursor: Cursor, position: int) -> None:
        """Lock this projection's tracking row; raise if it is no longer at ``position``."""
        try:
            lock_position(
                cursor,
                self.name,
                position,
                postgres=self.sql.is_postgres,
                fingerprint=self._fingerprint,
            )
        except ProjectionRaceError:
            self.known_position = None
            raise

    def _wants(self, topic: str) -> bool:
        """Whether the projection handles events of this topic (only those are decoded)."""
        return self._handler(topic) is not None

    def _handler(self, topic: str) -> Callable[[Any, int, Any], None] | None:
        """The projection's handler of this topic's events (None: not decoded), looked up
        once per topic."""
        handler: Callable[[Any, int, Any], None] | None = self._handlers.get(topic, _UNKNOWN)
        if handler is _UNKNOWN:
            handler = self._handlers[topic] = stops.handler_of(self.projection, topic)
        return handler

    def catch_up(self, progress: Callable[[int], None] | None = None) -> int:
        """Process batches until the log is exhausted; returns the events processed."""
        total = 0
        while True:
            try:
                processed = self.run_batch()
            except ProjectionRaceError:
                continue  # another runner moved on; carry on from its position
            if processed == 0:
                return total
            total += processed
            if progress is not None:
                progress(processed)

    def _select(self, position: int) -> Sequence[Entry]:
        return self.read_log(position, self.batch_size)

    def rebuild(
        self, progress: Callable[[int], None] | None = None, *, parallel: bool | None = None
    ) -> int:
        """Drop and rebuild from the whole log; secondary indexes are built once, at the end.

        A long rebuild (``PARALLEL_FROM`` events or more, unless ``parallel`` says otherwise)
        writes its batches in a writer process while the next one is being prepared.
        """
        head = self.head()
        if parallel is None:
            parallel = head >= self.PARALLEL_FROM
        with frozen_heap():
            return self._rebuild(progress, parallel=parallel, events=head)

    def _rebuild(
        self, progress: Callable[[int], None] | None, *, parallel: bool, events: int
    ) -> int:
        # Started first, the writer process gets ready while the tables are reset.
        writer = WriterProcess.of([self], events=events) if parallel else None
        try:
            self.reset(indexes=False)
            processed = 0
            try:
                if writer is not None:
                    processed = self._catch_up_with(writer, progress, emptied=True)
                processed += self.catch_up(progress)  # what the writer left, if anything
            except BuiltByLaterReleaseError:  # claimed since the reset: left to that process
                raise overtaken(self.sql, self.projection) from None
            self.create_indexes()  # meanwhile the writer process ends
        finally:
            if writer is not None:
                writer.close()
        return processed

    def _catch_up_with(
        self,
        writer: WriterProcess,
        progress: Callable[[int], None] | None,
        *,
        emptied: bool = False,
    ) -> int:
        """Catch up, the writer process committing batches while the next is prepared (which
        reads the rows of those in flight from memory, ``InFlight``).
        On a race with another runner of this projection (a live ``projections run``, say)
        it stops, and the caller carries on in this process from wherever that one got to
        (or stops, if a process of another release took the tables: ``_rebuild``).

        ``emptied``: the tables were just emptied; if the position is still 0, no other
        runner has written since, so rows no batch of this one wrote are not looked for."""
        position = self.position()
        processed = 0
        known = KeyFilter() if emptied and position == 0 else None
        in_flight = InFlight(writer.IN_FLIGHT)
        try:
            while batch := self._select(position):
                overlays = in_flight.overlays()
                overlay = overlays[0] if overlays else None
                with self.sql.reading() as reader:
                    rows = self._prepare(batch, reader, overlay, decoded=False, known=known)
                last = batch[-1].id
                writer.submit(position, last, [(self.name, rows.packed())])
                in_flight.add([rows.written])
                position = last
                processed += len(batch)
                if progress is not None:
                    progress(len(batch))
            writer.finish()
        except ProjectionRaceError:
            self.known_position = None
            return processed
        except BaseException:
            writer.settle()
            raise
        self.known_position = position
        return processed

    def create_indexes(self) -> None:
        """Secondary indexes, after a rebuild; the commit does not wait for the disk (a crash
        loses only indexes, which the next ``setup`` builds: the rows were committed before).

        On SQLite each index is built in a transaction of its own: each holds the database's
        one write lock while it runs, and the services' writes wait for it at most
        COUNTERSIGN_DATABASE_TIMEOUT. All of a projection's in one held it for their sum (the
        audit trail's four: about 4-5 s at a million events, 10.5 s at two million, measured
        in a review), the longest one alone for about a quarter of that."""
        statements = [s for table in self.projection.tables for s in index_statements(table)]
        groups = [statements] if self.sql.is_postgres else [[s] for s in statements]
        for group in groups:
            with self.sql.transaction(durable=False) as cursor:
                self.sql.lock_schema(cursor, long=True)  # an index of a full table takes a while
                for statement in group:
                    cursor.execute(statement)

    def reset(self, *, indexes: bool = True) -> None:
        """Drop the projection's tables and tracking position, ready for a rebuild."""
        with self.sql.transaction() as cursor:
            self.sql.lock_schema(cursor, long=True)  # dropping full tables takes a while
            secure_delete = None
            if not self.sql.is_postgres:
                # Some SQLite builds (Debian's) zero every freed page by default, which makes
                # dropping a big table write it all again. The dropped rows are derived from
                # the log, which stays in the same file: zero only what costs no extra I/O.
                found = cursor.execute("PRAGMA secure_delete").fetchone()
                secure_delete = int(found[0]) if found else None
                cursor.execute("PRAGMA secure_delete = FAST")
            try:
                for table in self.projection.tables:
                    cursor.execute(f"DROP TABLE IF EXISTS {table.name}")
            finally:
                if secure_delete is not None:
                    cursor.execute(f"PRAGMA secure_delete = {secure_delete}")
            cursor.execute(f"DELETE FROM {TRACKING_TABLE} WHERE projection = ?", (self.name,))
        self.known_position = None
        self.setup(indexes=indexes)

    def _decode(self, notification: Entry) -> Any:
        """The event, or None for one an operator passed in every projection (skips.py)."""
        try:
            return self.decode_event(notification)
        except Exception as error:
            if skips.skipped(self.sql, notification.id):
                return None
            raise ProjectionStoppedError(
                stopped(self.name, notification, error, unreadable=True)
            ) from None
