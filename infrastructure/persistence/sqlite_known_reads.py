"""SQLite's read-set check, and when a commit may skip it: where this process knows it would
find nothing.

The check (``check_statement``): under the write lock (``BEGIN IMMEDIATE``), one scalar
subquery per aggregate the commit relied on without writing it, each the aggregate's newest
version (SQLite's min/max shortcut on the primary key), compared with the version relied on.
It cost about 40,000 instructions a commit (79,000 a cycle of two, 3.5%; docs/speed.md,
"The cycle's cost"), on aggregates a decision mostly read from snapshots this process holds,
whose versions this process had itself written or checked at its last commit.

When it is skipped. A row's rowid is one more than the largest in the table before it (the
INSERT names none, and the events table is only appended to), so a commit's first rowid is
one more than the last rowid of the commit before it, whoever made that one. What this
process knows (``known_reads.KnownReads``, the same bookkeeping as PostgreSQL's): as of
the last rowid of its own last commit through this recorder, the version each aggregate that
commit wrote is at, and each one its read set named (checked, or known so); forgotten at the
first gap between its commits' rowids, and at any commit that failed. A commit whose whole
read set is known at the versions relied on, as of that position (``claimed``), makes its
INSERT first, in the same transaction and under the same lock: if the INSERT's first rowid is
``claimed + 1``, nothing was inserted since this process's last commit, so every aggregate of
the read set is still at the version known, and the check would pass: it is not made. Any
other first rowid (another process's commit, another connection's in this process, a
commit of ours whose outcome was not known) and the check is made then, on the table as the
transaction found it (``check_before_statement``: the rows from the INSERT's first on are
left out), before COMMIT: what it refuses is rolled back with the INSERT. A failed INSERT
(the primary key, most often) is followed by the check, so that a moved read set is raised
as before, ahead of the INSERT's own error. So a commit is refused exactly when it was,
with the same error.

Not ``PRAGMA data_version``: a statement of its own (about 8,200 instructions, against
26,400 for a check of three ids on raw sqlite3), and it changes at every commit of another
connection to the file, which holds the tokens, sessions, deliveries and projections other
connections write between two commits of events; and each connection has a value of its
own. The rowid is about the events table alone, is what the INSERT returns anyway, and costs
no statement.

It assumes what the store guarantees, as PostgreSQL's does (known_reads): the events
table is only appended to (never a row deleted, nor one inserted with a rowid of its own),
and is not dropped and made again under a running process. A commit of more than one
INSERT's events (``INSERT_CHUNK``) is checked first, as before: its failed second INSERT
would leave the first one's rows in the table the check reads; so is a commit of none.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from functools import lru_cache
from uuid import UUID

from countersign.infrastructure.persistence.hexes import HEXES as _HEXES
from countersign.infrastructure.persistence.hexes import hex_of as _hex


@lru_cache(maxsize=256)
def check_statement(table: str, count: int) -> str:
    """The read-set check of ``count`` aggregates: the text is made once, not at every commit
    (a commit's check and insert are the same few statements every time)."""
    versions = ",".join(
        [f"(SELECT max(originator_version) FROM {table} WHERE originator_id = ?)"] * count
    )
    return f"SELECT {versions}"


@lru_cache(maxsize=256)
def check_before_statement(table: str, count: int) -> str:
    """The check of ``count`` aggregates (``?2`` on) as the table was before rowid ``?1``:
    after this transaction's INSERT, without its rows. ``+rowid``: the rowid bound is only
    a filter, never the way in (the primary key's index, newest version first, stays it)."""
    versions = ",".join(
        f"(SELECT max(originator_version) FROM {table} WHERE originator_id = ?{n} AND +rowid < ?1)"
        for n in range(2, count + 2)
    )
    return f"SELECT {versions}"


def first_moved(
    cursor: sqlite3.Cursor,
    table: str,
    expected: Mapping[UUID, int | None],
    chunk_size: int,
    before: int | None = None,
) -> UUID | None:
    """The first aggregate of ``expected`` not at the version relied on (None expects it
    still not to exist), or None. A statement per ``chunk_size`` aggregates, a scalar
    subquery each (each takes SQLite's min/max shortcut on the primary key; a GROUP BY
    would scan every event of a long-lived aggregate). ``before``: the first rowid of this
    transaction's own INSERT, whose rows the check leaves out."""
    items = list(expected.items())
    for start in range(0, len(items), chunk_size):
        chunk = items[start : start + chunk_size]
        # _hex's own lookup first, inline: most ids are remembered, and a call costs.
        ids: list[str | int] = [_HEXES.get(i.int) or _hex(i) for i, _ in chunk]
        if before is None:
            cursor.execute(check_statement(table, len(chunk)), ids)
        else:
            ids.insert(0, before)
            cursor.execute(check_before_statement(table, len(chunk)), ids)
        row = cursor.fetchone()
        for (aggregate_id, version), found in zip(chunk, row, strict=True):
            if found != version:
                return aggregate_id
    return None
