"""Whether the server has hung up on an idle PostgreSQL connection, known without asking it.

A connection waiting in a pool, or kept by a process for its next statement, is ended by the
server on a restart or an administrator's ``pg_terminate_backend``: the server sends its
reason and closes its end, and the client's socket then reports the peer's hang-up
(``POLLRDHUP``, or ``POLLHUP``/``POLLERR``). Without looking, the next request to take that
connection failed (each connection of a pool once: after a restart, a 503 for each of the
first requests); looking costs one ``poll`` with no wait (under a microsecond), no round trip.
A notification or a notice the server sends an idle connection is readable data, not a
hang-up, and keeps the connection. Only Linux reports ``POLLRDHUP``; elsewhere nothing is
looked at and a hung-up connection still fails its next request, as before.
"""

from __future__ import annotations

import select
from typing import Any

#: What a hang-up sets (``POLLHUP`` and ``POLLERR`` are reported whatever is asked for).
_HANG_UP = getattr(select, "POLLRDHUP", 0)


def hung_up(connection: Any) -> bool:
    """Whether the server has closed its end of ``connection`` (a psycopg connection), or the
    connection is closed or lost already."""
    if not _HANG_UP:
        return False
    try:
        socket = connection.pgconn.socket  # raises once the connection is lost or closed
    except Exception:  # psycopg's OperationalError: lost, so hung up
        return True
    poller = select.poll()
    poller.register(socket, _HANG_UP)
    return bool(poller.poll(0))
