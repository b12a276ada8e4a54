"""What ``projections run`` says when a pass waited in vain for the database (PostgreSQL): a
statement cancelled after ``COUNTERSIGN_DATABASE_TIMEOUT`` seconds, most often behind a lock
that another session holds on the log or on a projection's tables (an operator's ``LOCK
TABLE`` in psql, a migration). The warning names the projection, the table, and the session
holding the lock, read from ``pg_locks`` and ``pg_stat_activity`` once the wait has ended
(nothing is looked up on the way of a pass that goes through)."""

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
    "AND c.relname::text = ANY(?) AND l.mode = ANY(?) "
    "ORDER BY a.xact_start NULLS LAST LIMIT 3"
)


def holders(sql: SqlDatabase, tables: Sequence[str]) -> list[tuple[Any, ...]]:
    """The sessions holding a lock that holds up reads or writes of ``tables`` (each row:
    table, mode, pid, user, application, state, seconds in that state, its last statement);
    none if the question cannot be asked (SQLite, or a database that does not answer)."""
    if not sql.is_postgres:
        return []
    try:
        with sql.reading() as reader:
            return reader.execute(_HOLDERS, (list(tables), _HOLDING_UP)).fetchall()
    except Exception as error:  # only a warning's detail is lost
        log.debug("who holds a lock could not be read: %s", type(error).__name__)
        return []


def gave_up(
    where: str,
    tables: Sequence[str],
    error: BaseException,
    seconds: float | None,
    found: list[tuple[Any, ...]],
    *,
    postgres: bool = True,
) -> str:
    """The warning of a pass of ``where`` (a projection, or "the log") that gave up waiting
    for the database after ``seconds``, its holders ``found`` (``holders``). On SQLite
    (``postgres`` False) what waited is a write, for the database's one write lock, which
    SQLite cannot say who holds."""
    waited = f"waited {seconds:g} s" if seconds is not None else "waited"
    head = f"projections: {where} {waited} for the database and gave up ({type(error).__name__})"
    if not postgres:
        return (
            f"{head}: another connection holds the SQLite database's write lock (a long "
            "transaction, or a BEGIN left open in the sqlite3 shell). End that transaction; "
            "the runner carries on once the lock is let go"
        )
    if not found:
        return (
            f"{head}; no session holds a lock on {', '.join(tables)} now (it may have "
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
        f"{head}: {sessions}. End that transaction, or the session: {ends}. The runner carries "
        "on once the lock is gone"
    )
