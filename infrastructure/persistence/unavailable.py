"""Whether an error says the database is out of reach for now, not that a record is bad.

A connection the server ended (a restart, an administrator's ``pg_terminate_backend``), a
pool that gave no connection in time, a statement the server cancelled on a timeout: each
passes, and the same request a little later goes through. Such an error is never reported
as an unreadable record (``event_store`` lets it through as it is), and the entry points
answer it as "the database is unavailable, try again" (503, Retry-After) rather than as an
internal error; the projection runner waits and carries on.
"""

from __future__ import annotations

from eventsourcing.persistence import InterfaceError, OperationalError

#: The drivers' own classes, by name, so that a SQLite process never imports psycopg.
_DRIVER_CLASSES = frozenset(
    {
        ("psycopg", "OperationalError"),
        ("psycopg", "InterfaceError"),
        ("psycopg_pool", "PoolTimeout"),
    }
)


def database_unavailable(error: BaseException) -> bool:
    """Whether ``error`` is the database out of reach for now (see the module's doc)."""
    if isinstance(error, OperationalError | InterfaceError):  # the library's, wrapping the driver's
        return True
    return any(
        (cls.__module__.partition(".")[0], cls.__name__) in _DRIVER_CLASSES
        for cls in type(error).__mro__
    )
