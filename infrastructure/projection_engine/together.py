"""Several projections over ONE read of the log: rebuilt together, or followed together.

Rebuilding together reads and decodes each batch once for every projection that wants it;
each projection still keeps its own tracking position, so an interrupted rebuild resumes like
any other. Following (``run_forever``) polls the log's head once for all runners.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.persistence.recorders import Entry
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase
from countersign.infrastructure.persistence.unavailable import (
    database_unavailable,
    timed_out,
    unavailable_reason,
)
from countersign.infrastructure.projection_engine import held_locks, skips, stops
from countersign.infrastructure.projection_engine.in_flight import InFlight
from countersign.infrastructure.projection_engine.key_filter import KeyFilter
from countersign.infrastructure.projection_engine.releases import overtaken, own_tables
from countersign.infrastructure.projection_engine.rows import (
    TRACKING_TABLE,
    Packed,
    ProjectionRaceError,
    ProjectionStoppedError,
    SqlRows,
    Written,
    flush,
    index_statements,
    save_position,
)
from countersign.infrastructure.projection_engine.runner import ProjectionRunner, frozen_heap
from countersign.infrastructure.projection_engine.stops import end_batch, held_batch, stopped
from countersign.infrastructure.projection_engine.writer import WriterProcess
from countersign.infrastructure.settings import Database
from countersign.projections.messages import forget_outcome_texts

log = logging.getLogger("countersign.projections")


def rebuild_together(
    runners: list[ProjectionRunner],
    progress: Callable[[int], None] | None = None,
    *,
    parallel: bool | None = None,
) -> int:
    """Rebuild several projections reading and decoding the log once for all of them.

    Each projection keeps its own tracking position, so a rebuild interrupted part-way resumes
    like any catch-up. Runners sharing one database (as Countersign's do) apply each batch in
    ONE transaction, every projection's rows and position together, decoding each event once
    (a chunk of ``CHUNK`` events at a time, then each projection over it in turn, so a batch's
    events never all live at once); a long rebuild writes its
    batches in a writer process while the next one is prepared. Returns the events read.
    """
    shared = bool(runners) and all(runner.sql is runners[0].sql for runner in runners)
    head = runners[0].head() if shared else 0
    if shared and parallel is None:
        parallel = head >= ProjectionRunner.PARALLEL_FROM
    writer = None
    if shared and parallel:
        # Started first, the writer process gets ready while the tables are reset.
        writer = WriterProcess.of(runners, events=head)
    if not runners:
        return 0
    try:
        for runner in runners:
            runner.reset(indexes=False)
        try:
            with frozen_heap():
                if not shared:
                    return _rebuild_separately(runners, progress)
                return _rebuild_shared(runners, progress, writer)
        finally:  # whatever happened, readers get their indexes back: on tables still theirs
            create_indexes([r for r in runners if own_tables(r.sql, r.projection)])
    finally:
        if writer is not None:
            writer.close()


#: Connections a PostgreSQL rebuild builds its indexes on at once (``create_indexes``).
INDEX_CONNECTIONS = 2
#: The index builders' session setting (``_build``).
_NOT_WAITING = "SET synchronous_commit = off"


def create_indexes(runners: list[ProjectionRunner]) -> None:
    """Every runner's secondary indexes, built once a rebuild's last batch is in.

    On PostgreSQL, runners sharing one database build them on ``INDEX_CONNECTIONS``
    connections at once, each taking the next index of the largest tables first: the server
    builds each on a core of its own while the rebuilding process only waits (one connection
    after another, the server's index builds kept one core busy and the other idle at the end
    of every rebuild). The schema lock is held throughout, as each runner's own
    ``create_indexes`` holds it."""
    first = runners[0] if runners else None
    if first is None or not first.sql.is_postgres or any(r.sql is not first.sql for r in runners):
        for runner in runners:
            runner.create_indexes()
        return
    tables = [table for runner in runners for table in runner.projection.tables if table.indexes]
    with first.sql.reading() as reader:
        sizes = {
            table.name: reader.execute(
                "SELECT pg_relation_size(CAST(? AS regclass))", (table.name,)
            ).fetchone()
            for table in tables
        }
    tables.sort(key=lambda table: sizes[table.name] or (0,), reverse=True)
    todo = deque(statement for table in tables for statement in index_statements(table))
    with first.sql.schema_lock(), ThreadPoolExecutor(INDEX_CONNECTIONS) as pool:
        builders = [pool.submit(_build, first.sql.database, todo) for _ in range(INDEX_CONNECTIONS)]
        for builder in builders:
            builder.result()


def _build(database: Database, todo: deque[str]) -> None:
    """Run ``todo``'s statements, each taken by one caller only, on a connection of its own."""
    sql = SqlDatabase(database)
    try:
        with sql.statements() as cursor:
            # A lost index is built again at the next start (``ProjectionRunner.setup``): its
            # commit need not wait for the server's log flush (the rows are committed already).
            cursor.execute(_NOT_WAITING)
            while True:
                try:
                    statement = todo.popleft()  # atomic: builders on other threads share it
                except IndexError:
                    return
                cursor.execute(statement)
    finally:
        sql.close()


def _rebuild_separately(
    runners: list[ProjectionRunner], progress: Callable[[int], None] | None
) -> int:
    """Runners on different databases: each decoded batch is applied to each in turn."""

    def wanted(topic: str) -> bool:
        return any(stops.handler_of(runner.projection, topic) is not None for runner in runners)

    position = total = 0
    while decoded := runners[0].read(position, wanted):
        for runner in runners:
            try:
                runner.apply(decoded, position)
            except ProjectionRaceError:
                raise overtaken(runner.sql, runner.projection) from None
        total += len(decoded)
        position = decoded[-1][0].id
        if progress is not None:
            progress(len(decoded))
    return total


def _rebuild_shared(
    runners: list[ProjectionRunner],
    progress: Callable[[int], None] | None,
    writer: WriterProcess | None,
) -> int:
    """Runners on one database, their tables just emptied: each batch is written for all of
    them in one transaction, here or by the ``writer`` process while the next batch is
    prepared (reading the rows of the batches still in flight from memory, ``InFlight``).
    Rows no batch wrote are not looked for (``KeyFilter``); the first batch's transaction
    checks that every position is still 0, so no one else wrote them."""
    first = runners[0]
    position = total = 0
    in_flight = InFlight(writer.IN_FLIGHT if writer is not None else 0)
    known = KeyFilter()
    try:
        while batch := first._select(position):
            last = batch[-1].id
            if writer is None:
                with first.sql.transaction() as cursor:
                    for runner in runners:
                        _lock_or_stop(runner, cursor, position)
                    rows = _prepare_together(runners, batch, cursor, None, known)
                    made: dict[int, tuple[Any, str]] = {}  # texts of values (codecs._texts)
                    for runner, runner_rows in zip(runners, rows, strict=True):
                        flush(runner.name, runner_rows, last, cursor, made)
                        save_position(cursor, runner.name, last)
            else:
                with first.sql.reading() as reader:
                    rows = _prepare_together(runners, batch, reader, in_flight.overlays(), known)
                packed = [(r.name, rows[i].packed()) for i, r in enumerate(runners)]
                _submit_or_stop(writer, runners, position, last, packed)
                in_flight.add([runner_rows.written for runner_rows in rows])
                # Sent: only its writes are read again (``in_flight``), not its packed values
                # nor the rows it read, which would otherwise live while the next is prepared.
                del packed, rows
            position = last
            total += len(batch)
            if progress is not None:
                progress(len(batch))
        if writer is not None:
            _submit_or_stop(writer, runners, position, position, None)
    except BaseException:
        if writer is not None:
            writer.settle()
        raise
    for runner in runners:
        runner.known_position = position
    return total


def _submit_or_stop(
    writer: WriterProcess,
    runners: list[ProjectionRunner],
    position: int,
    last: int,
    packed: list[tuple[str, Packed]] | None,
) -> None:
    """Hand a batch to the writer (None: only wait for the last one); a race means another
    runner moved a projection, or another release took it, during the rebuild."""
    try:
        if packed is None:
            writer.finish()
        else:
            writer.submit(position, last, packed)
    except ProjectionRaceError as raced:
        [runner] = [r for r in runners if r.name == str(raced)]
        raise overtaken(runner.sql, runner.projection) from None


def _lock_or_stop(runner: ProjectionRunner, cursor: Cursor, position: int) -> None:
    try:
        runner._lock_position(cursor, position)
    except ProjectionRaceError:
        raise overtaken(runner.sql, runner.projection) from None


#: Events decoded at once in a rebuild of several projections, before each projection runs
#: over them in turn (``_prepare_together``).
CHUNK = 250


def _prepare_together(
    runners: list[ProjectionRunner],
    batch: Sequence[Entry],
    reader: Cursor,
    overlays: list[Written] | None,
    known: KeyFilter,
) -> list[SqlRows]:
    """Run one batch through every runner's handlers, decoding each event once; then drop
    the deletes of rows never written (``KeyFilter.prune``) and pack the rows (``end_batch``).

    The batch goes in chunks of ``CHUNK`` events: each chunk decoded first, then each
    projection over the whole chunk in turn (``_run_chunk``), so one projection's handlers and
    rows stay in the processor's first-level caches while it runs, instead of seven
    projections' taking turns on every event."""
    rows = [
        SqlRows(
            reader,
            runner.projection.tables,
            runner.dialect,
            overlays[i] if overlays else None,
            known,
        )
        for i, runner in enumerate(runners)
    ]
    # Topic -> each runner's handler of it, in the runners' order (None: that runner does not
    # handle it); None instead of the tuple: no runner does (the event is not decoded).
    handlers: dict[str, tuple[Any, ...] | None] = {}
    for start in range(0, len(batch), CHUNK):
        try:
            _run_chunk(runners, batch[start : start + CHUNK], rows, handlers)
        finally:
            forget_outcome_texts()  # the chunk's outcomes need not outlive it
    for runner, runner_rows in zip(runners, rows, strict=True):
        end_batch(runner.name, runner.projection, runner_rows, batch[-1], known)
    return rows


def _run_chunk(
    runners: list[ProjectionRunner],
    chunk: Sequence[Entry],
    rows: list[SqlRows],
    handlers: dict[str, tuple[Any, ...] | None],
) -> None:
    """Decode the chunk's events (each once, if any runner handles it), then run each runner's
    handlers over them in turn.

    Each decoded event is kept once, with its position and its topic's handlers (one per
    runner, None where a runner does not handle it), and each runner walks that one list
    taking its own handler by its index: no list of calls per runner, no tuple a call.

    What stops the rebuild is what would have stopped it event by event: the first event
    that fails, and at that event the first runner in ``runners`` whose handler fails (or
    whose event does not decode). So decoding stops at an event that does not decode, the
    runners run only over the events before it, and once a runner fails at an event the
    runners after it run only over the events before that one."""
    # The position the rebuild stops at, what it says, and the error it comes from.
    stop: tuple[int, Localized, BaseException | None] | None
    decoded, stop = _decode_chunk(runners, chunk, handlers)
    for i, runner_rows in enumerate(rows):
        todo = decoded
        if stop is not None:
            before = stop[0]
            todo = [call for call in decoded if call[1] < before]
        position = 0
        try:
            for event, position, wanted in todo:
                handler = wanted[i]
                if handler is not None:
                    handler(event, position, runner_rows)
        except Exception as error:
            if database_unavailable(error):
                raise  # the database out of reach, not an event the projection cannot take
            at = next(n for n in chunk if n.id == position)
            stop = (position, stopped(runners[i].name, at, error), error)
    if stop is not None:
        raise ProjectionStoppedError(stop[1]) from stop[2]


def _decode_chunk(
    runners: list[ProjectionRunner],
    chunk: Sequence[Entry],
    handlers: dict[str, tuple[Any, ...] | None],
) -> tuple[list[tuple[Any, int, tuple[Any, ...]]], tuple[int, Localized, None] | None]:
    """``_run_chunk``'s decoding: each event some runner handles, decoded once, with its
    position and its topic's handlers, up to the first that does not decode (then the stop
    it makes: its position and what it says), passing those an operator skipped (skips.py)."""
    decode = runners[0].decode_event.decode
    decoded: list[tuple[Any, int, tuple[Any, ...]]] = []
    keep = decoded.append
    for notification in chunk:
        topic = notification.topic
        try:
            wanted = handlers[topic]
        except KeyError:
            found = tuple(stops.handler_of(runner.projection, topic) for runner in runners)
            wanted = handlers[topic] = None if found.count(None) == len(found) else found
        if wanted is None:
            continue
        try:
            event = decode(notification)
        except Exception as error:
            if skips.skipped(runners[0].sql, notification.id):
                continue  # an operator passed it in every projection
            first = next(i for i, handler in enumerate(wanted) if handler is not None)
            name = runners[first].name
            said = stopped(name, notification, error, unreadable=True)
            return decoded, (notification.id, said, None)
        keep((event, notification.id, wanted))
    return decoded, None


#: Seconds between two tries of a projection stopped at an event it cannot take.
STOPPED_RETRY = 10.0
#: Seconds between two reads of a following runner's stored positions (``run_forever``).
RECHECK = 10.0


def run_forever(
    runners: list[ProjectionRunner],
    stop: threading.Event,
    idle_sleep: float = 0.02,
    on_batch: Callable[[str, int], None] | None = None,
    stopped_retry: float = STOPPED_RETRY,
    recheck: float = RECHECK,
) -> None:
    """Follow the log until ``stop`` is set; poll with a short sleep unless behind.

    Every ``recheck`` seconds the stored positions are read again: another process may have
    set one back (a rebuild killed halfway), which polling the head alone sees only at the
    next commit, the projection behind and ``/readyz`` failing until then.

    A projection stopped at an event it cannot take (a damaged record, a handler that fails)
    is said once, at ERROR, and tried at that event again every ``stopped_retry`` seconds
    while the others go on: restoring the record, ``countersign projections skip`` or a fixed
    handler is all it takes for it to carry on. (The runner exited there before: restarted by
    its service manager, it stopped again at once, until the manager gave up on it.)

    While caught up, one cheap read of the log's head per poll decides whether any runner
    has work, so idle projections cost one query per ``idle_sleep``, not one per projection.
    A runner that read a whole batch is behind and goes on at once; one that read less has
    caught up, and the next poll waits ``idle_sleep`` too. Under a steady trickle of commits
    each poll then takes what arrived in that while, instead of every runner reading,
    decoding and committing a few events at a time (a projection runner beside two API workers
    used a fifth of a core that way); a card shows its outcome at most ``idle_sleep`` later.
    """
    failures = 0
    held: dict[str, tuple[float, str, float]] = {}  # stopped: next try, what, when said
    rechecked = time.monotonic()
    while not stop.is_set():
        if time.monotonic() - rechecked >= recheck:
            for runner in runners:
                runner.known_position = None  # read again from what is stored
            rechecked = time.monotonic()
        try:
            behind = _poll(runners, on_batch, held, stopped_retry)
        except Exception as error:
            # The database out of reach (a restart, a connection ended), or a statement it
            # cancelled after COUNTERSIGN_DATABASE_TIMEOUT (a lock held on the log or on a
            # projection's tables): no batch of this pass was committed, so wait, longer
            # each time up to UNAVAILABLE_MOST seconds, and carry on from the positions
            # stored. Anything else stops the runner.
            stalled = error if isinstance(error, _StalledError) else None
            cause = stalled.error if stalled is not None else error
            if not database_unavailable(cause):
                raise
            failures += 1
            wait = min(UNAVAILABLE_MOST, 2.0 ** (failures - 1))
            if stalled is not None:
                log.warning("%s; trying again in %.0f s", _gave_up(runners, stalled), wait)
            else:
                log.warning(
                    "projections: the database is unavailable (%s); trying again in %.0f s",
                    unavailable_reason(error),
                    wait,
                )
            for runner in runners:
                runner.known_position = None  # read again from what was committed
            stop.wait(wait)
            continue
        if failures:
            log.warning("projections: the database answers again; carrying on")
            failures = 0
        if not behind:
            stop.wait(idle_sleep)


#: The longest wait between two tries while the database is out of reach (seconds).
UNAVAILABLE_MOST = 30.0


class _StalledError(Exception):
    """A pass that gave up waiting for the database (``timed_out``): ``runner``'s batch, or
    (None) the read of the log's head."""

    def __init__(self, runner: ProjectionRunner | None, error: BaseException) -> None:
        super().__init__(str(error))
        self.runner = runner
        self.error = error


def _gave_up(runners: list[ProjectionRunner], stalled: _StalledError) -> str:
    """The warning of a stalled pass: which projection (or the log), which of its tables is
    locked, and by which session (held_locks.py)."""
    first = stalled.runner or runners[0]
    log_table = str(getattr(first.app.recorder, "events_table_name", "the events table"))
    if stalled.runner is None:
        where, tables = "projections: the log", [log_table]
    else:
        where = f"projections: projection {stalled.runner.name!r}"
        tables = [t.name for t in stalled.runner.projection.tables]
        tables += [log_table, TRACKING_TABLE]
    found = held_locks.holders(first.sql, tables)
    return held_locks.gave_up(
        where, tables, stalled.error, first.sql.timeout, found, postgres=first.sql.is_postgres
    )


def _poll(
    runners: list[ProjectionRunner],
    on_batch: Callable[[str, int], None] | None,
    held: dict[str, tuple[float, str, float]],
    stopped_retry: float,
) -> bool:
    """One pass of ``run_forever``: a batch for each runner behind the log's head; whether
    any read a whole batch (and so is still behind). A statement the database cancelled on
    its timeout is raised as a ``_StalledError`` naming where it was. A runner that stops at
    an event is ``held`` until its next try, and passed over until then."""
    behind = False
    now = time.monotonic()
    try:
        head = runners[0].head() if runners else 0
    except Exception as error:
        if timed_out(error):
            raise _StalledError(None, error) from error
        raise
    for runner in runners:
        if runner.name in held and held[runner.name][0] > now:
            continue
        if runner.known_position is not None and runner.known_position >= head:
            continue
        try:
            processed = held_batch(runner, held, now, stopped_retry)
        except ProjectionRaceError:
            behind = True  # another runner moved it on: read again at once
            continue
        except Exception as error:
            if timed_out(error):
                raise _StalledError(runner, error) from error
            raise
        if processed >= runner.batch_size:
            behind = True
        if processed and on_batch is not None:
            on_batch(runner.name, processed)
    return behind
