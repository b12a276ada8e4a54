"""Crash points: the FaultPoints port as a SIGKILL of the process itself, for crash tests.

``COUNTERSIGN_CRASH_AT=POINT[:N]`` (read once, by bootstrap) makes the process kill itself
with SIGKILL the N-th time (the first by default) the approve path or the reconciler reaches
POINT, one of ``FAULT_POINTS`` (application/ports.py). SIGKILL, not an exception: no
``finally``, no rollback hook, no flush of anything but the test's own output runs, exactly
as when the machine loses power or the kernel's OOM killer picks the process. Unset, the
port is ``NoFaults`` and every point is one empty call. docs/faults.md says what each point
proves.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping

from countersign.application.ports import FAULT_POINTS, FaultPoint, FaultPoints, NoFaults
from countersign.infrastructure.settings import SettingsError

CRASH_AT_ENV = "COUNTERSIGN_CRASH_AT"


class CrashAt:
    """Kills its own process with SIGKILL the ``nth`` time ``point`` is reached."""

    def __init__(self, point: FaultPoint, nth: int = 1) -> None:
        self.point = point
        self.nth = nth
        self.seen = 0

    def reached(self, point: FaultPoint) -> None:
        if point != self.point:
            return
        self.seen += 1
        if self.seen == self.nth:
            # What the test reads from the process's output must not die with it.
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)


def fault_points_from_env(environ: Mapping[str, str] | None = None) -> FaultPoints:
    """``CrashAt`` if ``COUNTERSIGN_CRASH_AT`` is set, else ``NoFaults``. A value that names
    no point is refused rather than ignored: a crash test that kills nothing proves nothing."""
    value = (os.environ if environ is None else environ).get(CRASH_AT_ENV, "").strip()
    if not value:
        return NoFaults()
    name, _, count = value.partition(":")
    point = next((p for p in FAULT_POINTS if p == name), None)
    if point is None or (count and not (count.isascii() and count.isdigit() and int(count) > 0)):
        raise SettingsError(
            f"{CRASH_AT_ENV} is POINT or POINT:N (N a positive count), POINT one of "
            f"{', '.join(FAULT_POINTS)}; not {value!r}"
        )
    return CrashAt(point, int(count or 1))
