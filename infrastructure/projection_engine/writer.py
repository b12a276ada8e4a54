"""A writer process for projection rebuilds: one batch is written and committed there while the
runner reads, decodes and projects the next one on the other core.

Python threads cannot do this: SQLite hands the interpreter lock back and forth for every row
it steps, and the two threads spent their time waiting for each other (measured: no gain).
A process of its own has its own lock. It imports only the SQL helper and the projection
tables, and it is started once per rebuild, so it costs about a tenth of a second; the runner
uses it only for long rebuilds (``ProjectionRunner.PARALLEL_FROM``).

The protocol is messages, one after another, over the child's stdin and stdout, each
marshalled or pickled (both ends are this module, so nothing foreign is ever read;
``Sender``, ``_read``):

- ``("setup", database, dialect, {projection: tables}, events, {projection: fingerprint})``
  once (``events``: how many the rebuild will read, which sizes SQLite's checkpoints,
  ``checkpoint_pages``; the fingerprints of the rebuilding process's code, or none: then
  the positions alone are checked);
- ``("batch", position, last, [(projection, packed rows), ...])``: in ONE transaction, for
  each projection, check that it still stands at ``position`` under that fingerprint (another
  release has not claimed its tables since, ``releases.py``), write its rows and move it to
  ``last``; answered ``("ok",)``, ``("raced", projection)``, ``("stopped", message)`` or
  ``("failed", message)``; on SQLite a rebuild sends ``("flat", ...)`` instead, each table's
  rows flattened with their times as text (``flat_batch``), and the same answers;
- ``None``: finish.

At most ``WriterProcess.IN_FLIGHT`` batches are in flight: the runner sends one more only once
the oldest has been answered, and prepares the next while the writer has the others (reading
their rows from memory: ``in_flight.InFlight``). The writer commits them in the order sent,
each checking the position the one before left, and once a batch fails it commits none after
it (each is answered ``("skipped", message)``), so a killed or failed rebuild resumes like any
other.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import marshal
import pickle
import sqlite3
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

try:
    import fcntl
except ImportError:  # not POSIX: pipes keep their default size
    fcntl = None  # type: ignore[assignment]

from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.projection_engine.rows import (
    Packed,
    ProjectionRaceError,
    ProjectionStoppedError,
    SqlRows,
    WrittenKeys,
    commit_batch,
    flat_packed,
)
from countersign.infrastructure.settings import Database
from countersign.projections.base import Table

log = logging.getLogger("countersign.projections")


_PIPE_BYTES = 1 << 20  # a batch of prepared rows is a few hundred KB
#: SQLite: the write-ahead log is copied back into the database when it reaches 8,000 pages
#: (4 KB each) or more (``checkpoint_pages``), not at SQLite's default 1,000. A batch of every
#: projection changes more pages than that (its rows land all over tables keyed by random
#: ids), so by default every commit also copied its pages back and synced the file; a page
#: changed again by the next batches is now copied once for several of them. Measured on
#: 60,000 events of every projection: the commits' time per event 14-17 us at 1,000 pages,
#: 8-12 at 8,000.
_SESSION_SQLITE = "PRAGMA wal_autocheckpoint = {pages}"
#: Pages between those checkpoints: at least ``_CHECKPOINT_LEAST``, more for a longer log
#: (``checkpoint_pages``), at most ``_CHECKPOINT_MOST`` (256 MB of log at 4 KB a page).
_CHECKPOINT_LEAST, _CHECKPOINT_MOST = 8000, 64000
#: Events the rebuild reads for each page a checkpoint waits for, past ``_CHECKPOINT_LEAST``.
_EVENTS_A_PAGE = 16


def checkpoint_pages(events: int) -> int:
    """SQLite: the write-ahead log's pages between checkpoints for a rebuild of ``events``.

    Why more for a longer log: most projection tables are keyed by a proposal's random id, so
    each row a batch adds lands on a page of its own once a table's key index has more pages
    than a batch has rows, and every such page is written to the log at the batch's commit and
    again when a checkpoint copies it back. A checkpoint copies a page once, however many of
    the batches since the last one changed it: the longer the interval, the more of those
    copies it saves. Measured on 1,000,051 events of every projection (the writer's
    ``ru_oublock``, its CPU, the rebuild's wall time, us an event): at 8,000 pages 33.6 M
    blocks written, 27-30 us, 45.6-49.1 us; at 64,000 24.5 M, 23-24 us, 33.5-35.3 us; on
    100,051 events no difference (22.3-25.6 us either way), where 8,000 keeps the log at
    32 MB. So 8,000 pages up to 128,000 events, then one page for every 16 events, up to
    64,000 pages (1,024,000 events and more). What it costs is disk: the log's file keeps the
    largest size it reached (SQLite reuses it), after that rebuild of a million events 278 MB
    against 225 MB at 8,000 pages (the index phase's transaction alone writes that much)."""
    return min(_CHECKPOINT_MOST, max(_CHECKPOINT_LEAST, events // _EVENTS_A_PAGE))


#: PostgreSQL: this connection's commits do not wait for the server to flush its log to disk.
#: A crash of the server can then lose the last few batches (under a second of them), but
#: each batch is one transaction, its rows with its projections' positions, so they are lost
#: together and the rebuild resumes from the position that survived, exactly once as ever.
#: Measured on 30,000 events of every projection: 47-52 us/event of writing, 39 without the
#: wait (the commits' share 13-15 -> 7-8).
_SESSION_POSTGRES = "SET synchronous_commit = off"
#: The writer's collector looks at new objects only after this many more allocations than
#: releases (Python's default: 700). A batch it is sent is tens of thousands of tuples, lists
#: and dicts, all freed by their counts once written; at the default each was walked as it
#: moved through the generations (4% of the writer's instructions, callgrind). As in the
#: rebuilding process (``runner.frozen_heap``), and the heap it started with is frozen.
_GC_THRESHOLD = 100_000


#: SQLite: ``None`` binds as NULL through this adapter. Python's sqlite3 binds exact ints,
#: floats and strings as they are but sends every other value, None included, to its
#: adaptation, which without an adapter for the type looks ``__adapt__`` up on a type and
#: raises and clears a formatted AttributeError: about 3,000 instructions a None, 3 an event
#: of the writer's rows (callgrind). With an adapter registered it is found in one lookup and
#: called (``{}.get(None)`` is None, in C). NoneType is no base type, so sqlite3 keeps binding
#: ints, floats and strings without adaptation.
_NONE: Any = {}.get


#: What goes before each message: how it was written (``Sender.send``); a marshalled one's
#: length follows, in this many bytes.
_MARSHALLED, _PICKLED = b"M", b"P"
_LENGTH_BYTES = 8


class Sender:
    """One end's messages to the other, each marshalled if asked and marshal takes it, else
    pickled straight into ``stream`` by one pickler kept for the stream: its memo is emptied
    after each message (so the message's objects are let go, and the next one's are never
    taken for them) but keeps its size, and its frames (64 KB) go to the stream as they fill,
    so a batch is never a whole ``bytes`` of its own. One byte before each says which.

    Why: ``pickle.dumps`` of each batch (a few hundred KB) made a new pickler a message: its
    memo grew by doubling to the batch's tens of thousands of objects, and its output by
    reallocation, and both were freed again (callgrind, ``scripts/rebuild_instructions.py``).
    A batch of flat lists of texts, numbers and None (SQLite's, ``flat_batch``) is
    marshalled: ``marshal`` writes and reads those in C without pickle's per-object
    machinery (its memo, its framing), at about half pickle's cost on the rebuild's batches,
    and keeps an object held twice (a preview in a card and a hand-back) one object. What it
    refuses (a subclass of str, a datetime in a JSON value, anything but its plain types)
    raises ValueError, and that message is pickled. The other end reads each message with
    ``_read`` (a pickle knows where it ends, so no length goes before it; a marshalled
    message's does)."""

    __slots__ = ("_pickler", "_stream")

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._pickler = pickle.Pickler(stream, protocol=pickle.HIGHEST_PROTOCOL)

    def send(self, message: Any, *, plain: bool = False) -> None:
        """Send ``message``: marshalled if ``plain`` and marshal takes it, else pickled."""
        stream = self._stream
        if plain:
            try:
                data = marshal.dumps(message)
            except ValueError:  # not only marshal's plain types: pickled
                pass
            else:
                stream.write(_MARSHALLED + len(data).to_bytes(_LENGTH_BYTES, "little"))
                stream.write(data)
                stream.flush()
                return
        stream.write(_PICKLED)
        pickler = self._pickler
        try:
            pickler.dump(message)
        finally:
            pickler.clear_memo()
        stream.flush()


def _write(stream: IO[bytes], message: Any, *, plain: bool = False) -> None:
    """One message to ``stream`` (``Sender``, for a stream that carries few)."""
    Sender(stream).send(message, plain=plain)


def _read(stream: IO[bytes]) -> Any:
    """The next message; EOFError when the other end has gone, a message cut short by its
    going included."""
    how = stream.read(1)
    if not how:
        raise EOFError
    if how == _MARSHALLED:
        # Its length first, then ``marshal.loads`` of the bytes: ``marshal.load`` of a stream
        # calls the stream's ``readinto`` for every value it reads (a Python call each).
        length = int.from_bytes(stream.read(_LENGTH_BYTES), "little")
        data = stream.read(length)
        if len(data) != length or not length:
            raise EOFError
        try:
            return marshal.loads(data)  # noqa: S302 - this module wrote it
        except (ValueError, TypeError, EOFError) as bad:
            raise pickle.UnpicklingError(f"a marshalled message unreadable: {bad}") from bad
    if how != _PICKLED:
        raise pickle.UnpicklingError(f"not a message: {how!r}")
    try:
        return pickle.load(stream)  # noqa: S301 - the other end is this module, in our own process
    except pickle.UnpicklingError as cut:
        if "truncated" in str(cut):
            raise EOFError from cut
        raise


def flat_batch(
    dialect: str,
    tables: Mapping[str, Sequence[Table]],
    position: int,
    last: int,
    batches: list[tuple[str, Packed]],
) -> tuple[Any, ...]:
    """The message that sends a batch (``WriterProcess.submit``): on SQLite ``("flat", ...)``,
    each table's rows flattened with their times as text (``rows.flat_packed``), marshalled;
    on PostgreSQL ``("batch", ...)`` with the rows as packed (its times go as datetimes)."""
    if dialect != "sqlite":
        return ("batch", position, last, batches)
    return ("flat", position, last, [(name, flat_packed(tables[name], p)) for name, p in batches])


def _widen(stream: IO[bytes] | None) -> None:
    """A pipe big enough for a whole batch, so sending one does not wait for the reader
    (Linux; elsewhere the default pipe simply makes the sender wait a little)."""
    if stream is not None and fcntl is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):
            fcntl.fcntl(stream.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


_ENTRY = __name__.rpartition(".")[0] + ".writer_main"


class WriterProcess:
    """The runner's end: ``submit`` prepared batches, ``wait`` for their commits."""

    #: Batches sent to the writer and not yet answered, at most. With one, the rebuilding
    #: process waited for every commit before it sent the next batch, and the writer for every
    #: batch while the rebuilding process prepared it: each waited whenever the other's batch
    #: took longer. With two, a slow batch on either side is absorbed by the other's queue.
    IN_FLIGHT = 2

    def __init__(
        self,
        database: Database,
        dialect: str,
        tables: Mapping[str, Sequence[Table]],
        fingerprints: Mapping[str, str] | None = None,
        *,
        events: int = 0,
    ) -> None:
        """``events``: about how many the rebuild will read (``checkpoint_pages``);
        ``fingerprints``: each projection's, as the rebuilding process's code has it, checked
        with the position by every batch (without: the position alone)."""
        self._process = subprocess.Popen(  # noqa: S603 - this interpreter, this module
            # -P: not the working directory first on its path (a module there named like ours
            # would run instead); -m: the entry point, by name (``writer_main``: it configures
            # SQLite before anything loads it, then runs ``serve``).
            [sys.executable, "-P", "-m", _ENTRY],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        _widen(self._process.stdin)
        assert self._process.stdin is not None
        self._sender = Sender(self._process.stdin)
        self._dialect = dialect
        self._tables = tables
        #: Batches sent and not yet answered.
        self._pending = 0
        #: An answer said a batch was not committed: the writer commits none after it.
        self._failed = False
        self._finished = False
        try:
            tables_sent = {k: tuple(v) for k, v in tables.items()}
            self._send(("setup", database, dialect, tables_sent, events, fingerprints or {}))
        except ProjectionStoppedError:
            self.close()  # it ended at once: reap it before saying so
            raise

    @classmethod
    def of(cls, runners: Sequence[Any], *, events: int = 0) -> WriterProcess:
        """The writer of a rebuild of ``runners`` (``ProjectionRunner``s of one database):
        their tables, and the fingerprint of each, which every batch checks."""
        first = runners[0]
        return cls(
            first.sql.database,
            first.dialect,
            {runner.name: runner.projection.tables for runner in runners},
            {runner.name: runner.projection.fingerprint() for runner in runners},
            events=events,
        )

    def submit(self, position: int, last: int, batches: list[tuple[str, Packed]]) -> None:
        """Send a batch once fewer than ``IN_FLIGHT`` are in flight (raising the error of the
        oldest if it failed)."""
        while self._pending >= self.IN_FLIGHT:
            self.wait()
        message = flat_batch(self._dialect, self._tables, position, last, batches)
        self._send(message, plain=message[0] == "flat")  # marshal refuses datetimes
        self._pending += 1

    def wait(self) -> None:
        """Wait for the oldest batch in flight to commit; ProjectionRaceError or
        ProjectionStoppedError if it did not (nothing of it, nor of any batch after it, was
        written)."""
        if not self._pending:
            return
        self._pending -= 1
        try:
            reply = _read(self._stdout())
        except (EOFError, OSError, pickle.UnpicklingError):
            raise _ended() from None
        if reply[0] == "ok":
            return
        self._failed = True
        if reply[0] == "raced":
            raise ProjectionRaceError(reply[1])
        raise ProjectionStoppedError(reply[1])

    def settle(self) -> None:
        """After a failure elsewhere: let the batches in flight commit (they precede the
        failure), logging rather than raising what they meet. After a batch of its own failed,
        the writer commits none of the others: nothing is left to wait for."""
        while self._pending and not self._failed:
            try:
                self.wait()
            except Exception:
                log.exception("a projection batch failed to commit during another error")

    def finish(self) -> None:
        """Wait for the batches in flight, then let the process end (without waiting for it
        to)."""
        while self._pending:
            self.wait()
        self._say_finish()

    def close(self) -> None:
        """Make sure the process has ended (it is killed if it does not within 30 s)."""
        process = self._process
        try:
            self._say_finish()
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        finally:
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):  # a pipe to a process that died
                        stream.close()

    def _say_finish(self) -> None:
        if not self._finished:
            self._finished = True
            with contextlib.suppress(OSError):  # it has ended already: so much the better
                self._sender.send(None)

    def _send(self, message: Any, *, plain: bool = False) -> None:
        try:
            self._sender.send(message, plain=plain)
        except OSError:  # the pipe to a process that has died
            raise _ended() from None

    def _stdout(self) -> IO[bytes]:
        stdout = self._process.stdout
        assert stdout is not None
        return stdout


_SKIPPED = (
    "the projection writer did not commit this batch: one before it was not committed; "
    "run the rebuild again: it resumes from the last committed batch"
)


def _ended() -> ProjectionStoppedError:
    return ProjectionStoppedError(
        "the projection writer process ended unexpectedly; run the rebuild again: "
        "it resumes from the last committed batch"
    )


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The child's end: commit each batch it is sent, answering for each."""
    try:
        kind, database, dialect, tables, events, *told = _read(requests)
    except EOFError:
        return  # the runner went away before it sent anything
    assert kind == "setup"
    fingerprints: Mapping[str, str] = told[0] if told else {}  # none: positions alone
    sql = SqlDatabase(database)
    if not sql.is_postgres:
        sqlite3.register_adapter(type(None), _NONE)
    gc.freeze()
    gc.set_threshold(_GC_THRESHOLD, *gc.get_threshold()[1:])
    tune(sql, events)
    # Keys it has put: rows of others are new, COPYed straight into their tables
    # (``rows.WrittenKeys``). Forgotten for good if a table held a row it did not put.
    written_keys = WrittenKeys() if sql.is_postgres else None
    failed = False
    try:
        while True:
            try:
                message = _read(requests)
            except EOFError:
                return  # the runner is gone: a batch it had not sent whole is not committed
            if message is None:
                return
            if failed:  # a batch sent after one that failed was prepared on its rows
                _write(replies, ("skipped", _SKIPPED))
                continue
            reply = _commit(sql, dialect, tables, message, written_keys, fingerprints)
            if reply[0] == "stopped" and written_keys is not None:
                written_keys = None  # perhaps a "new" row was there already: once more, as ever
                reply = _commit(sql, dialect, tables, message, None, fingerprints)
            failed = reply[0] != "ok"
            _write(replies, reply)
    finally:
        sql.close()


def tune(sql: SqlDatabase, events: int) -> None:
    """The writer's session settings for a rebuild of about ``events``: on PostgreSQL commits
    that do not wait for the log's flush (``_SESSION_POSTGRES``), on SQLite checkpoints every
    ``checkpoint_pages(events)`` pages (``_SESSION_SQLITE``)."""
    try:
        with sql.transaction() as cursor:
            if sql.is_postgres:
                cursor.execute(_SESSION_POSTGRES)
            else:
                cursor.execute(_SESSION_SQLITE.format(pages=checkpoint_pages(events)))
    except Exception:  # only speed is at stake: the first batch reports what is wrong
        log.exception("projection writer: could not tune its connection")


def _commit(
    sql: SqlDatabase,
    dialect: str,
    tables: Mapping[str, Sequence[Table]],
    message: tuple[str, int, int, list[tuple[str, Packed]]],
    written_keys: WrittenKeys | None,
    fingerprints: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """Commit one batch (``commit_batch``); the answer for the runner."""
    kind, position, last, batches = message
    flat = kind == "flat"  # SQLite's rows flattened (``flat_batch``); else "batch"
    try:
        with sql.transaction() as cursor:
            commit_batch(
                cursor,
                [
                    (
                        name,
                        SqlRows.of_packed(
                            cursor, tables[name], dialect, packed, written_keys, flat=flat
                        ),
                    )
                    for name, packed in batches
                ],
                position,
                last,
                postgres=sql.is_postgres,
                fingerprints=fingerprints or {},
            )
        return ("ok",)
    except ProjectionRaceError as raced:
        return ("raced", str(raced))
    except ProjectionStoppedError as stopped:
        return ("stopped", str(stopped))
    except Exception as error:
        log.exception("projection writer: the batch ending at %s failed", last)
        return (
            "failed",
            f"the projection writer could not commit the batch that ends at "
            f"notification {last} ({type(error).__name__}); nothing of it was "
            "applied. Fix the cause and run the rebuild again.",
        )


if __name__ == "__main__":  # the process's own entry point is ``writer_main``
    from countersign.infrastructure.projection_engine.writer_main import main

    main()
