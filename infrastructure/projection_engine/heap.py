"""The collector's settings while a rebuild runs (``frozen_heap``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: The young generation's threshold while a rebuild runs (Python's default is 700).
_REBUILD_GC_THRESHOLD = 100_000


@contextmanager
def frozen_heap() -> Iterator[None]:
    """While a rebuild runs, the objects that were there before it are not collected, and the
    collector looks at new objects only after 100,000 more allocations than releases.

    A rebuild makes millions of short-lived objects, so Python's collector runs its full
    collections, and each walked every object of the process (the modules, the application,
    the contracts) again. Frozen, those are skipped; they go back to the collector after.
    Measured on all seven projections over 100,000 SQLite events: the rebuilding process's
    CPU time 39.0-40.1 us an event before, 37.7-38.7 frozen. A batch's rows live until the
    batch after next is prepared: at Python's default threshold (700) each was walked as it
    went through every generation, 3% of the rebuilding process's instructions (callgrind);
    at 100,000 most are gone before a collection looks at them, and what a batch holds is a
    few MB at most."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(_REBUILD_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
