"""What ``projections run`` and the sweepers' schedule (``countersign worker``) say when a pass
waited in vain for the database (PostgreSQL): a statement cancelled after
``COUNTERSIGN_DATABASE_TIMEOUT`` seconds, most often behind a lock that another session holds
on the log or on a projection's tables (an operator's ``LOCK TABLE`` in psql, a migration).
The warning names what waited, the table, and the session holding the lock, read from
``pg_locks`` and ``pg_stat_activity`` once the wait has ended (nothing is looked up on the
way of a pass that goes through), and what to do."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from countersign.infrastructure.persistence.sql import SqlDatabase

log = logging.getLogger("countersign.projections")

#: The lock modes that hold up a projection's reads (ACCESS SHARE) or its writes (ROW
#: EXCLUSIVE): every mode from SHARE up.
_HOLDING_UP = ["ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"]
#: Who holds such a lock on the tables named, oldest transaction first (three at most).
_HOLDERS = (
    "SELECT c.relname::text, l.mode, a.pid, coalesce(a.usename::text, ''), "
    "coalesce(a.application_name, ''), coalesce(a.state, ''), "
    "coalesce(extract(epoch FROM now() - coalesce(a.state_change, a.xact_start))::bigint, 0), "
    "left(regexp_replace(coalesce(a.query, ''), '\\s+', ' ', 'g'), 100) "
    "FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation "
    "JOIN pg_stat_activity AS a ON a.pid = l.pid "
    "WHERE l.granted AND l.pid <> pg_backend_pid() AND pg_table_is_visible(c.oid) "
    # pg_locks is the whole server's: a table's oid in another database is another table.
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND (c.relname::text = ANY(?) OR ?) AND l.mode = ANY(?) "
    "ORDER BY a.xact_start NULLS LAST LIMIT 3"
)


def holders(sql: SqlDatabase, tables: Sequence[str] | None) -> list[tuple[Any, ...]]:
    """The sessions holding a lock that holds up reads or writes of ``tables`` (None: of any
    table; each row: table, mode, pid, user, application, state, seconds in that state, its
    last statement); none if the question cannot be asked (SQLite, or a database that does
    not answer)."""
    if not sql.is_postgres:
        return []
    named = list(tables or ())
    try:
        with sql.reading() as reader:
            return reader.execute(_HOLDERS, (named, tables is None, _HOLDING_UP)).fetchall()
    except Exception as error:  # only a warning's detail is lost
        log.debug("who holds a lock could not be read: %s", type(error).__name__)
        return []


def gave_up(
    where: str,
    tables: Sequence[str] | None,
    error: BaseException,
    seconds: float | None,
    found: list[tuple[Any, ...]],
    *,
    postgres: bool = True,
    carries_on: str = "The runner carries on",
) -> str:
    """The warning of a pass of ``where`` ("projections: projection 'x'", "reconcile pass")
    that gave up waiting for the database after ``seconds``, its holders ``found``
    (``holders``), and who ``carries_on`` once the lock is let go. On SQLite (``postgres``
    False) what waited is a write, for the database's one write lock, which SQLite cannot
    say who holds."""
    waited = f"waited {seconds:g} s" if seconds is not None else "waited"
    head = f"{where} {waited} for the database and gave up ({type(error).__name__})"
    if not postgres:
        return (
            f"{head}: another connection holds the SQLite database's write lock (a long "
            f"transaction, or a BEGIN left open in the sqlite3 shell). End that transaction; "
            f"{carries_on[0].lower()}{carries_on[1:]} once the lock is let go"
        )
    if not found:
        on = ", ".join(tables) if tables is not None else "countersign's tables"
        return (
            f"{head}; no session holds a lock on {on} now (it may have "
            "ended, or a statement ran longer than COUNTERSIGN_DATABASE_TIMEOUT): see "
            "pg_locks and pg_stat_activity if this goes on"
        )
    sessions = "; ".join(
        f"{table} is locked ({mode}) by session {pid} (user {user or '?'}, "
        f"{application or 'no application name'}, {state or 'state unknown'} for {age} s"
        + (f": {query}" if query else "")
        + ")"
        for table, mode, pid, user, application, state, age, query in found
    )
    ends = "; ".join(
        f"SELECT pg_terminate_backend({pid})" for pid in dict.fromkeys(r[2] for r in found)
    )
    return (
        f"{head}: {sessions}. End that transaction, or the session: {ends}. {carries_on} "
        "once the lock is gone"
    )
