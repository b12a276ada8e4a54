"""Whether an error says the database is out of reach for now, not that a record is bad.

A connection the server ended (a restart, an administrator's ``pg_terminate_backend``), a
pool that gave no connection in time, a statement the server cancelled on a timeout (a lock
held longer than ``COUNTERSIGN_DATABASE_TIMEOUT``, say): each passes, and the same request a
little later goes through. Such an error is never reported as an unreadable record
(``event_store`` lets it through as it is), and the entry points answer it as "the database
is unavailable, try again" (503, Retry-After) rather than as an internal error; the
projection runner waits and carries on.
"""

from __future__ import annotations

from eventsourcing.persistence import DatabaseError, InterfaceError, OperationalError


class DatabaseTimeoutError(DatabaseError):
    """A statement the server cancelled (SQLSTATE 57014 ``query_canceled``: the session's
    ``statement_timeout``, or someone's ``pg_cancel_backend``; 55P03 ``lock_not_available``:
    its ``lock_timeout``), as the PostgreSQL datastore raises it (pg_pool's translation).
    Nothing of the statement took effect. Not an ``OperationalError``, so that none of the
    library's retries (``retry((InterfaceError, OperationalError), max_attempts=10)``, on
    most reads) waits the whole timeout again nine times."""


class NoConnectionError(DatabaseError):
    """No connection to the database could be had within the pool's wait (the server down,
    restarting or unreachable; ``Settings.eventsourcing_env``'s ``POSTGRES_CONNECT_TIMEOUT``):
    nothing was sent. Not an ``OperationalError``: the library's retries waited the whole
    wait again nine times (30 s each: five minutes before a runner, a worker or a scrape
    said anything, and before a service stopped on SIGTERM)."""


class TableRebuiltError(DatabaseError):
    """A read found no table where a read model's was: another process dropped it to build it
    again (a projection's rebuild, between its reset and its ``setup``, moments apart), and
    the same read a little later finds it. Raised by the read models (projection_engine/
    read_models.py) in place of the driver's error, so that the entry points answer it as
    the database unavailable for now (a page's 503, the API's), never as an internal error."""


def missing_table(error: BaseException) -> bool:
    """Whether ``error`` is the database saying a table the statement names is not there
    (SQLite's "no such table", PostgreSQL's SQLSTATE 42P01 ``undefined_table``)."""
    if getattr(error, "sqlstate", None) == "42P01":
        return True
    return type(error).__module__ == "sqlite3" and str(error).startswith("no such table")


#: The drivers' own classes, by name, so that a SQLite process never imports psycopg.
_DRIVER_CLASSES = frozenset(
    {
        ("psycopg", "OperationalError"),
        ("psycopg", "InterfaceError"),
        ("psycopg_pool", "PoolTimeout"),
    }
)
#: psycopg's classes of a statement the server cancelled (both are OperationalErrors).
_CANCELLED = frozenset({("psycopg", "QueryCanceled"), ("psycopg", "LockNotAvailable")})
#: SQLite's result code (its primary byte: the extended codes ``SQLITE_BUSY_SNAPSHOT`` and
#: ``_RECOVERY`` too) for a write lock another connection held past the wait ("database is
#: locked"): the statement did nothing, and a retry later may pass. Not ``SQLITE_LOCKED``
#: (6, "database table is locked"): without a shared cache, which countersign never uses, it
#: is one connection conflicting with itself (a table dropped under its own open read), a
#: defect that waiting does not mend. Nor any other OperationalError ("no such table", a full
#: disk, a syntax error).
_SQLITE_BUSY = 5


def _sqlite_locked(error: BaseException) -> bool:
    """Whether ``error`` is sqlite3's "database is locked" (or the library's wrapping of it)."""
    for found in (error, error.__cause__):
        code = getattr(found, "sqlite_errorcode", None)
        if type(code) is int and code & 0xFF == _SQLITE_BUSY:
            return True
    return False


def _driver_classes(error: BaseException) -> set[tuple[str, str]]:
    return {(cls.__module__.partition(".")[0], cls.__name__) for cls in type(error).__mro__}


def database_unavailable(error: BaseException) -> bool:
    """Whether ``error`` is the database out of reach for now (see the module's doc)."""
    if isinstance(
        error,
        OperationalError
        | InterfaceError
        | DatabaseTimeoutError
        | NoConnectionError
        | TableRebuiltError,
    ):
        return True  # the library's, wrapping the driver's
    return bool(_driver_classes(error) & _DRIVER_CLASSES) or _sqlite_locked(error)


def timed_out(error: BaseException) -> bool:
    """Whether ``error`` is a statement the server cancelled: it waited its whole timeout (for
    a lock, most often), and nothing of it took effect; on SQLite, a write that waited in vain
    for the write lock."""
    return (
        isinstance(error, DatabaseTimeoutError)
        or bool(_driver_classes(error) & _CANCELLED)
        or _sqlite_locked(error)
    )


#: The most of the server's words a log line carries.
_SAID_MOST = 200
_DISK = "the database server's disk is full: free space where PostgreSQL keeps its data"
_CONNECTIONS = (
    "the database server has no connection left: raise max_connections (or the role's "
    "CONNECTION LIMIT), or end other sessions; each countersign process holds a few "
    '(docs/deploy.md, "Connections")'
)
_WAITED = (
    "a statement waited for a lock, or ran, past COUNTERSIGN_DATABASE_TIMEOUT and was "
    'cancelled (docs/deploy.md, "A lock held on a table")'
)
_RESTARTED = "the server ended the session or is restarting; the next requests connect again"
_REACH = (
    "check that PostgreSQL is running and reachable at COUNTERSIGN_DATABASE_URL's host and "
    "port, and has connections to spare"
)


#: The same, on the embedded SQLite database: a file on this machine, not a server.
_SQLITE_DISK = "the disk that holds the SQLite database file is full: free space there"
_SQLITE_FILE = (
    "check the SQLite database file COUNTERSIGN_DATABASE_URL (or --database) names: that its "
    "disk has room and answers, and that this process may read and write it and its directory"
)
#: SQLite's result code for a full disk (``SQLITE_FULL``: "database or disk is full").
_SQLITE_FULL = 13


def _sqlite_code(error: BaseException) -> int | None:
    """SQLite's primary result code when ``error`` is sqlite3's (or the library's wrapping of
    it); None for any other database's."""
    for found in (error, error.__cause__, error.__context__):
        code = getattr(found, "sqlite_errorcode", None)
        if type(code) is int:
            return code & 0xFF
    return None


def _sqlstate(error: BaseException) -> str:
    for found in (error, error.__cause__, error.__context__):
        sqlstate = getattr(found, "sqlstate", None)
        if isinstance(sqlstate, str):
            return sqlstate
    return ""


def _said(error: BaseException) -> str:
    """The first line of the database's own words (the driver's error where the library
    wrapped it): a message, never a statement nor its values."""
    for found in (error.__cause__, error):
        if found is not None and str(found).strip():
            first = " ".join(str(found).strip().splitlines()[0].split())
            return first[:_SAID_MOST]
    return ""


#: The server's words for SQLSTATE 53300 ``too_many_connections``, which a failed connection's
#: error carries only in its text: "sorry, too many clients already" (a superuser, or every
#: slot taken), "remaining connection slots are reserved for ..." (any other role, such as
#: the services', once only the superusers' reserved slots are left), "too many connections
#: for role ..." or "... for database ..." (a ``CONNECTION LIMIT``).
_NO_CONNECTION_LEFT = (
    "too many clients",
    "remaining connection slots are reserved",
    "too many connections",
)


def no_connection_left(said: str) -> bool:
    """Whether the server's words ``said`` say it has no connection left for this role."""
    words = said.lower()
    return any(words_of_it in words for words_of_it in _NO_CONNECTION_LEFT)


def unavailable_reason(error: BaseException) -> str:
    """For the operator's log: why the database did not answer, in its own words, and what to
    do (``error`` is one ``database_unavailable`` accepts). The clients are told only to try
    again; the cause is the operator's."""
    sqlstate, said = _sqlstate(error), _said(error)
    words = said.lower()
    sqlite = _sqlite_code(error)  # None: PostgreSQL's, or the pool's
    if sqlite == _SQLITE_FULL:
        advice = _SQLITE_DISK
    elif sqlite is not None:
        advice = _WAITED if sqlite == _SQLITE_BUSY else _SQLITE_FILE
    elif sqlstate == "53100" or "no space left" in words or "could not extend file" in words:
        advice = _DISK
    elif sqlstate == "53300" or no_connection_left(words):
        advice = _CONNECTIONS
    elif timed_out(error):
        advice = _WAITED
    elif sqlstate.startswith("57P") or "terminating connection" in words:
        advice = _RESTARTED
    else:
        advice = _REACH
    cause = f"{type(error).__name__}: {said}" if said else type(error).__name__
    return f"{cause}: {advice}"
