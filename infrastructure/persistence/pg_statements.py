"""The PostgreSQL recorder's hot statements (a commit's insert call, a log read), prepared
once per connection and run on psycopg's libpq connection (``conn.pgconn``) itself.

psycopg's ``Cursor.execute`` wraps the one round trip in about 40 Python calls (the query's
conversion and its parameters' adaptation, the prepared-statement manager's lookup, cache
and maintenance, result checks and selection, the row maker). These statements need none of
that: their parameters are already in PostgreSQL's binary wire format (``PackedArray``, or a
packed ``int8``), their text is fixed, and the datastore's connections are in autocommit
(eventsourcing's ``PostgresDatastore.after_connect_func``), so each statement is its own
transaction exactly as through the cursor. What runs on the server is the same: a named
prepared statement (``Parse`` once per connection, then ``Bind``/``Execute``), the same SQL,
the same parameter types, binary results. Under the connection's own lock, as psycopg runs
it, through psycopg's own C generators and wait function; an error result is raised as
psycopg raises it (``psycopg.errors.error_from_result``: the same class and diagnostics), so
the recorder and the datastore translate it as before.

A commit is two transactions sent together (``run_then``): the commit function's, whose
commit does not wait for the disk, in ``BEGIN`` ... ``COMMIT``, then one that waits, all in
libpq's pipeline mode with one Sync, so the server answers once, when both have run. (With a
Sync after each, the server would answer the first as soon as it ended and the caller be woken
twice a commit.) ``BEGIN`` and ``COMMIT`` are prepared statements of their own too.

A statement name is countersign's own (psycopg's manager never deallocates it), a hash of
its text and parameter types. If the server has forgotten it (``DEALLOCATE ALL``, ``DISCARD
ALL`` run on the connection), the execution fails before anything runs and it is prepared
again, once; if the server has it when the connection's record says it has not, preparing
it again is refused and the statement is used as it is. A connection that is
not in autocommit, or is in pipeline mode, is not used here (``runs_alone``): the caller
takes psycopg's cursor.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors
from psycopg.abc import PQGen
from psycopg.adapt import Transformer
from psycopg.generators import execute
from psycopg.pq import DiagnosticField, ExecStatus, Format, TransactionStatus
from psycopg.waiting import Ready, Wait

#: The key, in a psycopg connection's ``__dict__``, of the names prepared on it.
_PREPARED = "_countersign_prepared"
#: The key of the connection's row loader (a psycopg Transformer over its adapters).
_LOADER = "_countersign_loader"
#: SQLSTATE invalid_sql_statement_name: no prepared statement of that name on the server.
_UNKNOWN_STATEMENT = b"26000"
#: SQLSTATE duplicate_prepared_statement.
_ALREADY_PREPARED = b"42P05"

_TUPLES_OK = ExecStatus.TUPLES_OK
_FATAL_ERROR = ExecStatus.FATAL_ERROR
_SQLSTATE = DiagnosticField.SQLSTATE
_BINARY = Format.BINARY
_IN_FAILED_TRANSACTION = TransactionStatus.INERROR
_PIPELINE_SYNC = ExecStatus.PIPELINE_SYNC
_WAIT_R = Wait.R
_WAIT_RW = Wait.RW
_READY_R = Ready.R


class Statement:
    """A fixed statement with ``$n`` parameters of the given type oids, all binary.

    ``once_it_returned_rows``: for ``run_then``'s ``then``, the statement sent in its place on
    a connection where this one has returned a row (e.g. this one's rows depend on a setting
    of the session that is read once it has said yes): the caller's to judge that sending it
    there is as right as sending this one."""

    __slots__ = ("formats", "name", "once_it_returned_rows", "query", "types")

    def __init__(
        self,
        query: bytes,
        types: Sequence[int],
        *,
        once_it_returned_rows: Statement | None = None,
    ) -> None:
        self.query = query
        self.types = tuple(types)
        self.formats = (_BINARY,) * len(self.types)
        digest = hashlib.sha256(query + repr(self.types).encode()).hexdigest()[:32]
        self.name = f"countersign_{digest}".encode()
        self.once_it_returned_rows = once_it_returned_rows


def runs_alone(conn: psycopg.Connection[Any]) -> bool:
    """Whether each statement on ``conn`` is its own transaction (autocommit, no pipeline),
    as for every connection of the library's datastore. (psycopg's own attributes, read
    without its properties' Python calls.)"""
    return bool(conn._autocommit) and conn._pipeline is None


def run(
    conn: psycopg.Connection[Any], statement: Statement, params: Sequence[bytes | None]
) -> psycopg.pq.abc.PGresult:
    """The statement's result on ``conn`` (rows expected); psycopg's error if it failed."""
    pgconn = conn.pgconn
    with conn.lock:
        prepared = _prepared_on(conn)
        if statement.name not in prepared:
            _prepare_again(conn, prepared, (statement,))
        result = _executed(conn, statement, params)
        if result.status == _FATAL_ERROR and result.error_field(_SQLSTATE) == _UNKNOWN_STATEMENT:
            # Forgotten by the server: nothing ran. Prepared again, and run once more.
            _prepare_again(conn, prepared, (statement,))
            result = _executed(conn, statement, params)
    if result.status != _TUPLES_OK:
        raise _error(pgconn, result)
    return result


#: Whether this process's libpq has pipeline mode (version 14 or later; the libpq that
#: psycopg's binary package bundles has it). Without it, ``run_then`` sends its two
#: statements one after the other (``_one_then_the_other``): the same transactions and
#: answers, in two round trips.
PIPELINES: bool = psycopg.Pipeline.is_supported()

#: The transaction commands around ``run_then``'s statement, prepared as it is.
_BEGIN = Statement(b"BEGIN", ())
_COMMIT = Statement(b"COMMIT", ())
_ROLLBACK = Statement(b"ROLLBACK", ())


def run_then(
    conn: psycopg.Connection[Any],
    statement: Statement,
    params: Sequence[bytes | None],
    then: Statement,
) -> psycopg.pq.abc.PGresult:
    """``statement``'s result on ``conn``, as ``run`` gives it, run in a transaction of its
    own, and ``then`` (no parameters) run after it in another, whether or not ``statement``
    failed. Sent together, in one round trip with one answer (libpq's pipeline mode:
    ``BEGIN``, ``statement``, ``COMMIT``, ``then``, one Sync: the server answers once, when
    all have run, so the caller waits once). If ``statement`` fails, the server skips the
    rest: the transaction is rolled back and ``then`` run after it (both in a second round
    trip) before the error is raised. If ``then`` fails, its error is raised (what it was for has
    not happened), although ``statement`` committed. A statement the server has forgotten is
    prepared again: if ``statement`` was, nothing of it ran, and all is sent again, once;
    if only ``then`` was, it runs alone. Where libpq has no pipeline mode (``PIPELINES``),
    the two are sent one after the other instead. On a connection where ``then`` has returned
    a row, its ``once_it_returned_rows`` (if it has one) is sent in its place."""
    if PIPELINES:
        return _pipelined_then(conn, statement, params, then)
    return _one_then_the_other(conn, statement, params, then)


def _in_its_place(then: Statement, prepared: set[bytes] | None) -> Statement:
    """``then``, or its ``once_it_returned_rows`` where that is prepared (``prepared``, the
    connection's record): it is prepared on a connection once ``then`` has returned a row
    there (``_returned_rows``), not before. (Written out in ``_pipelined_then``.)"""
    instead = then.once_it_returned_rows
    if instead is not None and prepared is not None and instead.name in prepared:
        return instead
    return then


def _returned_rows(
    conn: psycopg.Connection[Any], then: Statement, after: psycopg.pq.abc.PGresult
) -> None:
    """``then``'s result ``after`` (rows) on ``conn``: if it has a statement to send in its
    place once it has returned a row, and this result has one, that one is prepared on
    ``conn``, and so sent there from now on (``_in_its_place``)."""
    instead = then.once_it_returned_rows
    if instead is not None and after.ntuples:
        prepared = _prepared_on(conn)
        if instead.name not in prepared:
            _prepare_again(conn, prepared, (instead,))


def _pipelined_then(
    conn: psycopg.Connection[Any],
    statement: Statement,
    params: Sequence[bytes | None],
    then: Statement,
) -> psycopg.pq.abc.PGresult:
    """``run_then`` in one round trip (libpq's pipeline mode)."""
    pgconn = conn.pgconn
    with conn.lock:
        prepared = conn.__dict__.get(_PREPARED)
        instead = then.once_it_returned_rows  # (_in_its_place, inline)
        if instead is not None and prepared is not None and instead.name in prepared:
            then = instead
        if prepared is None or statement.name not in prepared or then.name not in prepared:
            prepared = _prepared_on(conn)
            every = (_BEGIN, _COMMIT, _ROLLBACK, statement, then)
            _prepare_again(conn, prepared, [each for each in every if each.name not in prepared])
        begun, result, after = _pipelined(conn, statement, params, then)
        if result.status == _TUPLES_OK and after.status == _TUPLES_OK:
            if then.once_it_returned_rows is not None:
                _returned_rows(conn, then, after)
            return result  # (so BEGIN ran too: after a failure the rest is skipped)
        if _forgotten(begun) or _forgotten(result):
            # Forgotten by the server: nothing of the statement ran. Prepared again, and
            # all sent once more.
            _roll_back(conn, None)
            _prepare_again(conn, prepared, (_BEGIN, _COMMIT, _ROLLBACK, statement, then))
            begun, result, after = _pipelined(conn, statement, params, then)
        if begun.status == _FATAL_ERROR:  # pragma: no cover - BEGIN does not fail
            result = begun
        if result.status == _FATAL_ERROR:
            rolled_back_then = _roll_back(conn, then)
            assert rolled_back_then is not None
            after = rolled_back_then
        if _forgotten(after):
            _prepare_again(conn, prepared, (then,))
            after = _executed(conn, then, ())
        if after.status == _TUPLES_OK:
            _returned_rows(conn, then, after)
    if after.status != _TUPLES_OK:
        raise _error(pgconn, after)
    if result.status != _TUPLES_OK:
        raise _error(pgconn, result)
    return result


def _one_then_the_other(
    conn: psycopg.Connection[Any],
    statement: Statement,
    params: Sequence[bytes | None],
    then: Statement,
) -> psycopg.pq.abc.PGresult:
    """``run_then`` in two round trips, for a libpq without pipeline mode (before 14): each
    statement its own transaction (the connection is in autocommit), ``then`` run whether or
    not ``statement`` failed, and its error raised first (with ``statement``'s as its
    context); a forgotten statement is prepared again by ``run``."""
    then = _in_its_place(then, conn.__dict__.get(_PREPARED))
    try:
        result = run(conn, statement, params)
    except psycopg.Error:
        after = run(conn, then, ())
        with conn.lock:
            _returned_rows(conn, then, after)
        raise
    after = run(conn, then, ())
    with conn.lock:
        _returned_rows(conn, then, after)
    return result


def _forgotten(result: psycopg.pq.abc.PGresult) -> bool:
    """Whether the server did not know the prepared statement: nothing of it ran."""
    return result.status == _FATAL_ERROR and result.error_field(_SQLSTATE) == _UNKNOWN_STATEMENT


def _pipelined(
    conn: psycopg.Connection[Any],
    statement: Statement,
    params: Sequence[bytes | None],
    then: Statement,
) -> tuple[psycopg.pq.abc.PGresult, psycopg.pq.abc.PGresult, psycopg.pq.abc.PGresult]:
    """The results of ``BEGIN``, ``statement`` and ``then``, sent in one pipeline:
    ``BEGIN``, ``statement``, ``COMMIT``, ``then``, Sync. (If ``statement`` failed, the
    rest is the server's "aborted" result, and the session is left in the failed
    transaction.)"""
    pgconn = conn.pgconn
    pgconn.enter_pipeline_mode()
    try:
        pgconn.send_query_prepared(_BEGIN.name, ())
        pgconn.send_query_prepared(
            statement.name, params, param_formats=statement.formats, result_format=_BINARY
        )
        pgconn.send_query_prepared(_COMMIT.name, ())
        pgconn.send_query_prepared(then.name, (), result_format=_BINARY)
        pgconn.pipeline_sync()
        results: list[psycopg.pq.abc.PGresult] = conn.wait(_until_synced(pgconn, 1))
        pgconn.exit_pipeline_mode()
    except BaseException:
        # Left in pipeline mode, or with results unread: of no further use. Closed, so that
        # the pool replaces it rather than hand it out again.
        conn.close()
        raise
    if len(results) != 4:  # pragma: no cover - one result a statement, error or not
        raise errors.InternalError(f"got {len(results)} results from four statements")
    return results[0], results[1], results[3]


def _roll_back(
    conn: psycopg.Connection[Any], then: Statement | None
) -> psycopg.pq.abc.PGresult | None:
    """The failed transaction (if the session is in one) rolled back, and ``then`` run after
    it: sent together, in one round trip (``ROLLBACK``, ``then``, Sync); ``then``'s result."""
    pgconn = conn.pgconn
    failed = pgconn.transaction_status == _IN_FAILED_TRANSACTION
    if not failed and then is None:
        return None
    pgconn.enter_pipeline_mode()
    try:
        if failed:
            pgconn.send_query_prepared(_ROLLBACK.name, ())
        if then is not None:
            pgconn.send_query_prepared(then.name, (), result_format=_BINARY)
        pgconn.pipeline_sync()
        results: list[psycopg.pq.abc.PGresult] = conn.wait(_until_synced(pgconn, 1))
        pgconn.exit_pipeline_mode()
    except BaseException:
        conn.close()  # as in _pipelined
        raise
    return results[-1] if then is not None else None


def _until_synced(pgconn: Any, syncs: int) -> PQGen[list[psycopg.pq.abc.PGresult]]:
    """What was sent in pipeline mode, sent; then the results read until ``syncs`` Syncs have
    answered: each statement's results, without the Syncs' own. One generator for the whole
    pipeline (psycopg's ``execute`` and ``fetch_many`` give one statement's results, or one
    Sync's, a call each), run by the connection's wait function as theirs are."""
    while pgconn.flush():
        ready = yield _WAIT_RW
        if ready and ready & _READY_R:  # (None: the wait timed out)
            pgconn.consume_input()
    results: list[psycopg.pq.abc.PGresult] = []
    while True:
        while pgconn.is_busy():
            if (yield _WAIT_R):
                pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:  # the end of one statement's results
            continue
        if result.status == _PIPELINE_SYNC:
            syncs -= 1
            if not syncs:
                return results
        else:
            results.append(result)
            # The NULL that ends this statement's results, asked for without asking
            # ``is_busy`` first: in pipeline mode libpq, having returned a statement's
            # result, is idle until asked again, and answers that NULL at once, without
            # input (``PGASYNC_PIPELINE_IDLE``); ``is_busy`` would answer no, a call and a
            # release of the interpreter's lock for nothing. Anything else is kept as above.
            result = pgconn.get_result()
            if result is not None:  # pragma: no cover - libpq ends each statement's results
                if result.status == _PIPELINE_SYNC:
                    syncs -= 1
                    if not syncs:
                        return results
                else:
                    results.append(result)


def _executed(
    conn: psycopg.Connection[Any], statement: Statement, params: Sequence[bytes | None]
) -> psycopg.pq.abc.PGresult:
    pgconn = conn.pgconn
    pgconn.send_query_prepared(
        statement.name, params, param_formats=statement.formats, result_format=_BINARY
    )
    results: list[psycopg.pq.abc.PGresult] = conn.wait(execute(pgconn))
    if not results:  # pragma: no cover - as psycopg's cursor checks it
        raise errors.InternalError("got no result from the query")
    return results[0]


def _prepared_on(conn: psycopg.Connection[Any]) -> set[bytes]:
    """The names of the statements prepared on ``conn``, as its record says."""
    prepared: set[bytes] | None = conn.__dict__.get(_PREPARED)
    if prepared is None:
        prepared = conn.__dict__[_PREPARED] = set()
    return prepared


def _prepare_again(
    conn: psycopg.Connection[Any], prepared: set[bytes], statements: Sequence[Statement]
) -> None:
    """Each of ``statements`` prepared on ``conn`` (again, if the server forgot it), and so
    recorded in ``prepared``."""
    for each in statements:
        prepared.discard(each.name)
        _prepare(conn, each)
        prepared.add(each.name)


def _prepare(conn: psycopg.Connection[Any], statement: Statement) -> None:
    pgconn = conn.pgconn
    pgconn.send_prepare(statement.name, statement.query, param_types=statement.types)
    for result in conn.wait(execute(pgconn)):
        if result.status == _FATAL_ERROR:
            # Prepared already (by a caller that did not know it, e.g. through a wrapper of
            # the connection): a statement of this name is this one, its text and types.
            if result.error_field(_SQLSTATE) == _ALREADY_PREPARED:
                continue
            raise _error(pgconn, result)


def _error(pgconn: Any, result: psycopg.pq.abc.PGresult) -> psycopg.Error:
    if result.status == _FATAL_ERROR:
        return errors.error_from_result(result, encoding=pgconn._encoding)
    return errors.InternalError(  # pragma: no cover - a prepared SELECT returns rows
        f"unexpected result status from query: {ExecStatus(result.status).name}"
    )


def first_column_int8s(result: psycopg.pq.abc.PGresult) -> list[int]:
    """The first column of every row, a binary ``int8`` (``bigint``)."""
    value = result.get_value
    return [
        int.from_bytes(value(row, 0) or b"", "big", signed=True) for row in range(result.ntuples)
    ]


def first_int8(result: psycopg.pq.abc.PGresult) -> int:
    """The first column of the first row, a binary ``int8`` (``bigint``), not NULL: what
    ``first_column_int8s`` gives of a one-row result, without a list."""
    if result.ntuples != 1:  # pragma: no cover - the commit function returns one value
        raise errors.InternalError(f"got {result.ntuples} rows, not one")
    value = result.get_value(0, 0)
    if value is None:  # pragma: no cover - a commit that inserted nothing raises
        raise errors.InternalError("got NULL, not a notification id")
    return int.from_bytes(value, "big", signed=True)


def rows(
    conn: psycopg.Connection[Any], result: psycopg.pq.abc.PGresult, make_row: Any
) -> list[Any]:
    """Every row, loaded by the connection's own loaders (psycopg's ``Transformer``, as a
    cursor of it loads them), each made by ``make_row`` from the list of its values."""
    loader: Any = conn.__dict__.get(_LOADER)
    if loader is None:
        loader = conn.__dict__[_LOADER] = Transformer(conn)
    loader.set_pgresult(result)
    try:
        return loader.load_rows(0, result.ntuples, make_row)  # type: ignore[no-any-return]
    finally:
        loader.set_pgresult(None)
