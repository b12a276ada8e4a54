"""The projection writer process's entry point (``writer.WriterProcess`` starts it): SQLite is
configured for this process before anything loads it, then ``writer.serve`` runs.

By default SQLite takes a mutex around every call on a connection (each bind, step and
reset) and another around every allocation, to keep its memory statistics: 7,300
instructions an event of the writer, 8.6% of them (callgrind of a rebuild's batches
replayed). This process uses its one connection from one thread, so it tells SQLite so
(``SQLITE_CONFIG_MULTITHREAD``: no mutex per connection) and turns the statistics off
(``SQLITE_CONFIG_MEMSTATUS``), both documented settings that ``sqlite3_config`` accepts only
before SQLite is initialised, which Python's ``sqlite3`` does when it is imported: hence this
module, which imports nothing that loads it first. Where the library cannot be configured
(not Linux, not found, loaded already, or a copy of its own inside Python) the writer runs
as before; the settings change no result, only the locking."""

from __future__ import annotations

import ctypes
import signal
import sys

#: ``sqlite3_config``'s options (sqlite3.h).
_SQLITE_CONFIG_MULTITHREAD = 2
_SQLITE_CONFIG_MEMSTATUS = 9
#: The shared library Python's ``_sqlite3`` links on Linux: loading it by this name maps the
#: same copy the module then uses.
_LIBRARY = "libsqlite3.so.0"


def configure_sqlite() -> bool:
    """Before ``sqlite3`` is imported: SQLite without its per-connection and memory-statistics
    mutexes. True if SQLite took both settings."""
    if "_sqlite3" in sys.modules or not sys.platform.startswith("linux"):
        return False  # initialised already; elsewhere the variadic call is not portable
    try:
        library = ctypes.CDLL(_LIBRARY)
    except OSError:
        return False
    config = library.sqlite3_config
    config.restype = ctypes.c_int
    threads: int = config(_SQLITE_CONFIG_MULTITHREAD)
    statistics: int = config(_SQLITE_CONFIG_MEMSTATUS, ctypes.c_int(0))
    return threads == 0 and statistics == 0


def main() -> None:
    configure_sqlite()
    # Ctrl-C reaches the whole process group: the runner handles it (and lets the batch in
    # flight commit), so the writer carries on until the runner says to finish.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from countersign.infrastructure.projection_engine.writer import serve

    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
