"""One warning for an outage, not one for each request it fails.

While the database is out of reach every request fails the same way, and each one logged its
warning: an outage of a minute under a hundred requests a second wrote six thousand lines of
one reason, burying whatever else the log said. The request-facing entry points (the pages,
the JSON API, the MCP server and their token checks) now say each reason once, then count:
the first warning of the same kind and reason after ``every`` seconds says how many like it
went unsaid since. Each request is still answered 503 with Retry-After (its access log line
stands); the sweepers and the projection runner already log once a pass, so they log as they
did.

The same holds for a warning a caller can repeat at will: an agent token asking to decide
(``http/answers.py``) is said once a while for each token, with the count of the others.

A projection stopped at an event it cannot take fails every page and API request that reads
it alike, until an operator acts, and each logged its ERROR line: it is said once a while
too (``error``), at ERROR still (the operator must act, and an alert on ERROR lines sees it;
the projection runner says it again every ten minutes).

A ``Countersign`` keeps one ``OutageLog`` (``Countersign.outages``): a process's threads share
it, and two deployments in one process (the tests) do not.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

#: Seconds between two warnings of one kind and reason.
EVERY = 30.0
#: Kinds and reasons remembered at most; past it the longest quiet one is forgotten (a
#: reason quotes the driver's first line, and a storm of distinct ones stays bounded).
MOST = 256


class OutageLog:
    """Warnings of the database being unavailable, each kind and reason said once a while."""

    def __init__(self, every: float = EVERY, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self._clock = clock
        self._lock = threading.Lock()
        #: Per (logger, message, reason): when it was last said, and how many since were not.
        self._said: dict[tuple[str, str, str], tuple[float, int]] = {}

    def warning(self, log: logging.Logger, reason: str, message: str, *args: object) -> None:
        """``log.warning(message, *args)`` ending with ``reason``, unless the same message
        with the same reason was said less than ``every`` seconds ago: then it is counted,
        and the next one said tells how many were not."""
        self._say(log, logging.WARNING, reason, message, *args)

    def error(self, log: logging.Logger, reason: str, message: str, *args: object) -> None:
        """As ``warning``, at ERROR: something an operator must act on."""
        self._say(log, logging.ERROR, reason, message, *args)

    def _say(
        self, log: logging.Logger, level: int, reason: str, message: str, *args: object
    ) -> None:
        key = (log.name, message, reason)
        now = self._clock()
        with self._lock:
            said = self._said.get(key)
            if said is not None and now - said[0] < self.every:
                self._said[key] = (said[0], said[1] + 1)
                return
            unsaid = said[1] if said is not None else 0
            self._said.pop(key, None)
            self._said[key] = (now, 0)  # last in order: the oldest is the first to go
            if len(self._said) > MOST:
                del self._said[next(iter(self._said))]
        if unsaid:
            log.log(
                level,
                f"{message}: %s (and %d more like it since the last time this was logged)",
                *args,
                reason,
                unsaid,
            )
        else:
            log.log(level, f"{message}: %s", *args, reason)
