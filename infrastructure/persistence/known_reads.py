"""What this process knows of the events table as of its own last commit, so that a commit
whose read set it knows to be current can skip the read-set check's probes.

Both recorders use it (the module was PostgreSQL's alone until SQLite's recorder took it up,
and was named ``pg_known_reads`` then). On PostgreSQL, the commit function
(``pg_commit_function``) serialises every writer and draws notification
ids from the table's sequence under its lock, in commit order: a commit's ids follow each other,
and every commit after it draws later ones. So if the sequence's last value is still the last
id of a commit this process made, nothing has been committed since; and if this process knows
each aggregate of a read set to have been at the version relied on as of that commit, the read
set is still current, and the check would pass. The function tests the sequence under the
writers' lock and the table's (the INSERT's own condition, after its snapshot); if anything
drew an id since, it makes the full check as before. So a commit is refused exactly when it
was: the probes are skipped only where they would find nothing.

What this process knows (``KnownReads``): after each of its commits that returned (committed,
in autocommit), each aggregate the commit wrote is at the version it wrote, and each one its
read set named is at the version relied on (checked under the lock, or known so), as of the
commit's last id. If the commit's first id follows the last one known, nothing came between
(the ids of another commit, or of a failed one, would), and what was known still holds: it is
kept, else forgotten. A commit whose outcome is not known (an error, a connection lost) changes
nothing here: the sequence has moved past it anyway. Under a lock: a claim must be made from
one state, its position and versions together.

SQLite's recorder keeps the same bookkeeping, over rowids (``sqlite_known_reads``, which says
why it holds there). A failed commit there takes no rowid if it was rolled back, and keeps its
rows if its COMMIT failed yet had committed; the next INSERT's first rowid would show those,
but what was known is forgotten at any commit that failed all the same (``forget``): nothing
is kept across a commit whose outcome is not known.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

#: At most this many aggregates known; past it, only the last commit's. A cycling process
#: commits a new proposal every cycle and knows its version from then on, though only the
#: next few commits read it again (its approval): at 4,096 it was full only after about
#: 4,000 cycles (8,000 commits), and 3,000 cycles left 254 KB here (traced). The read-set
#: hints' size (``unit_of_work.REMEMBERED``, twice the store's snapshots) keeps what a commit
#: reads again soon, and a commit that finds it full still knows what it wrote and relied
#: on: over 3,000 cycles one commit of 6,000 made the check's probes (the first), at either
#: size.
KEPT = 512


def _key(aggregate_id: Any) -> int:
    """An id's ``int`` (the recorder accepts ids as text too)."""
    return UUID(str(aggregate_id)).int


class KnownReads:
    """Aggregate versions known as of one notification id, this process's last commit's."""

    __slots__ = ("_lock", "_position", "_versions")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._position: int | None = None
        self._versions: dict[int, int] = {}

    def claim(self, expected: Mapping[Any, int | None]) -> int | None:
        """The last id as of which every version in ``expected`` is known to be the
        aggregate's latest; None if any is not (or ``expected`` is empty)."""
        if not expected:
            return None
        # (Ids inline, not through _key: a Python call an id would cost more than the rest;
        # the lock's own methods, not ``with``, which looks up two special methods.)
        lock = self._lock
        lock.acquire()
        try:
            position = self._position
            if position is None:
                return None
            get = self._versions.get
            for aggregate_id, version in expected.items():
                key = aggregate_id.int if type(aggregate_id) is UUID else _key(aggregate_id)
                if version is None or get(key) != version:
                    return None
        finally:
            lock.release()
        return position

    def committed(
        self,
        first: int,
        last: int,
        events: Sequence[Any],
        expected: Mapping[Any, int | None],
        claimed: int | None,
    ) -> None:
        """A commit of ``events`` relying on ``expected``, which claimed ``claimed``,
        returned ids ``first``..``last``."""
        lock = self._lock
        lock.acquire()
        try:
            versions = self._versions
            position = self._position
            if position is None or first != position + 1 or len(versions) > KEPT:
                versions = self._versions = {}
            elif claimed == position:
                # Claimed from this very state (no commit was recorded since: each sets a
                # position of its own), so every version relied on is here already.
                expected = {}
            for aggregate_id, version in expected.items():
                key = aggregate_id.int if type(aggregate_id) is UUID else _key(aggregate_id)
                if version is None:
                    versions.pop(key, None)
                else:
                    versions[key] = version
            for event in events:
                originator = event.originator_id
                key = originator.int if type(originator) is UUID else _key(originator)
                versions[key] = event.originator_version
            self._position = last
        finally:
            lock.release()

    def forget(self) -> None:
        """Nothing known any more (until the next commit that returns)."""
        with self._lock:
            self._position = None
            self._versions = {}
