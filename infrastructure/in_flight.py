"""How many requests one caller may have under way at once (``COUNTERSIGN_REQUESTS_IN_FLIGHT``).

Nothing bounded it before: one agent's API token, sending slow reads (large inbox pages,
tool calls) many at a time, filled the process's worker threads (40) and its database
connections, and every other club's request queued behind them. Measured on a live
``serve --workers 1`` (``scripts/measure_in_flight.py``): another club's inbox read took
1.8 ms alone and 1,347 ms (median; 3,319 ms at worst) while 60 reads of one token were
under way; over ``mcp --http`` 6.2 ms and 496 ms. Bounded at 4 (the flood waiting out its
429s' Retry-After), the same read took 49 to 106 ms (median, two runs) and the tool call 16
to 61 ms on the same shared 2-core machine: what is left is the CPU the token's 4 reads use.

The pages count each browser's requests by its session cookie the same way (``web.site``:
one person's 60 inbox pages at once held another club's page at 319 ms instead of 13 ms;
32 ms bounded),
answering a page in the person's language. The JSON API's gate and the MCP server's gate
count each caller's requests as they come in,
keyed by the whole ``Authorization`` value (so only the holder of a token can use its
share: a guess at it is another key), and answer a request past the bound at once with 429
and ``Retry-After``, before the token is looked up or a byte of the body is read. A person's
decision comes with their own token (or their own session on the pages), which no agent's
requests can fill.

The counts live on the server's event loop: ``enter`` and ``leave`` are called there only,
so they need no lock; an entry goes when its caller's last request ends.
"""

from __future__ import annotations

import os

from countersign.infrastructure.settings import SettingsError

IN_FLIGHT_ENV = "COUNTERSIGN_REQUESTS_IN_FLIGHT"
#: Enough for an agent's parallel tool calls or an application's few concurrent requests;
#: a tenth of the worker threads a process has (40).
DEFAULT_IN_FLIGHT = 4
#: Seconds a refused caller is told to wait: one of its requests is under way and ends soon.
RETRY_AFTER = 1


def in_flight_from_env() -> int:
    """COUNTERSIGN_REQUESTS_IN_FLIGHT: a positive whole number (default 4)."""
    value = os.environ.get(IN_FLIGHT_ENV, "").strip() or str(DEFAULT_IN_FLIGHT)
    if not (value.isascii() and value.isdigit()) or int(value) <= 0:
        raise SettingsError(
            f"{IN_FLIGHT_ENV} must be a positive whole number (requests one caller may have "
            f"under way at once), not {value[:40]!r}"
        )
    return int(value)


class InFlight:
    """Each caller's requests under way, at most ``limit`` each (see the module)."""

    __slots__ = ("_under_way", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._under_way: dict[str, int] = {}

    def enter(self, caller: str) -> bool:
        """Count a request of ``caller``'s in; False (nothing counted) past the limit."""
        under_way = self._under_way.get(caller, 0)
        if under_way >= self.limit:
            return False
        self._under_way[caller] = under_way + 1
        return True

    def leave(self, caller: str) -> None:
        """Count a request ``enter`` let in out, once it is answered."""
        under_way = self._under_way[caller] - 1
        if under_way:
            self._under_way[caller] = under_way
        else:
            del self._under_way[caller]

    def __len__(self) -> int:
        """How many callers have a request under way."""
        return len(self._under_way)
