"""Waiting until another PostgreSQL session waits for a lock a test holds, instead of sleeping.

A test that holds a table's lock and starts a writer used to sleep 0.3 s, then assert that
the writer had not finished: on a loaded machine the writer might not even have reached its
statement by then, and the assertion proved nothing, while on a quiet one the test waited
0.3 s longer than needed. ``until_blocked`` returns as soon as the server shows a session
waiting for a lock on the table (the writer got there and waits), or as soon as the writer
finished (it went past the lock: the test's assertion then fails, as it should).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: Far longer than any writer takes to reach its statement, even beside the whole suite.
DEADLINE = 30.0


def until_blocked(holder: Any, table: str, finished: Callable[[], bool]) -> None:
    """Poll, on ``holder`` (the connection holding the lock, in its transaction), until a
    session waits for a lock on ``table`` or ``finished()``; AssertionError after
    ``DEADLINE`` seconds of neither."""
    deadline = time.monotonic() + DEADLINE
    while not finished():
        row = holder.execute(
            "SELECT EXISTS (SELECT FROM pg_locks WHERE NOT granted AND relation = %s::regclass)",
            (table,),
        ).fetchone()
        if row[0]:
            return
        assert time.monotonic() < deadline, f"no session waited for {table}'s lock"
        time.sleep(0.005)
