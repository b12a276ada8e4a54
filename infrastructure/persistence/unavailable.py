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
