"""Instructions per event of reading and decoding the log, counted by callgrind.

    .venv/bin/python scripts/decode_instructions.py                 # every measure below
    .venv/bin/python scripts/decode_instructions.py --measure read --keep /tmp/read.out
    callgrind_annotate --inclusive=yes /tmp/read.out | head -80

It fills a fresh SQLite store with ``--lifecycles`` of ``scripts/bench_projections.py``'s
lifecycles (as ``scripts/rebuild_instructions.py`` does), then, for each measure, runs itself
under ``valgrind --tool=callgrind`` with collection off and counts only what runs inside a
ctypes callback (``--toggle-collect=closure_fcn``), so start-up and imports are left out;
``read`` and ``decode`` run with the collector as a rebuild sets it (``frozen_heap``), the
library's as ``read_ceiling`` runs it (Python's defaults):

- ``read``: the rebuild's read of the whole log, batch after batch (a runner's ``_select``,
  the recorder's ``select_log``: plain log entries, nothing decoded);
- ``decode``: the runners' decoder's ``decode`` (``StructDecoder``, log_structs.py: msgspec
  into structs, since session 58) of every entry of that log, read beforehand (one
  event of each topic decoded before the count, by this and by the library's mapper, so the
  imports a topic's first event may cause are left out);
- ``stock``: the library's own read and decode of the same log, the ceiling issue 27 divides
  by (``scripts/bench_projections.py``'s ``read_ceiling``: the recorder's
  ``select_notifications`` in batches of 1,000 and ``Mapper(transcoder=...)`` with the
  application's transcoder, its ``to_domain_event`` for each);
- ``stock-decode``: that mapper's ``to_domain_event`` alone, over notifications read
  beforehand.

The count moves by a few hundred instructions an event from run to run (each run fills a
store of its own: times and digests differ). ``--inner`` is the process valgrind runs; not
for use by hand.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from callgrind_count import count  # noqa: E402

MEASURES = ("read", "decode", "stock", "stock-decode")


def _read_beforehand(runner: Any, recorder: Any) -> tuple[list[Any], list[Any]]:
    """The whole log as the rebuild reads it, and as the library's notifications."""
    entries: list[Any] = []
    position = 0
    while batch := runner._select(position):
        entries.extend(batch)
        position = batch[-1].id
    notifications: list[Any] = []
    start = 1
    while batch := recorder.select_notifications(start, limit=1000):
        notifications.extend(batch)
        start = batch[-1].id + 1
    return entries, notifications


def _warm(
    decode: Callable[[Any], Any],
    to_domain_event: Callable[[Any], Any],
    entries: list[Any],
    notifications: list[Any],
) -> None:
    """One event of each topic decoded before the count, by both: the first resolves its
    topic and may import the module that defines it (about 900 instructions an event of
    20,000), once a process, as in any rebuild."""
    firsts = {entry.topic: entry for entry in reversed(entries)}
    ids = {entry.id for entry in firsts.values()}
    for entry in firsts.values():
        decode(entry)
    for notification in notifications:
        if notification.id in ids:
            to_domain_event(notification)


def _passes(cs: Any) -> tuple[int, dict[str, Callable[[], None]]]:
    """The number of events, and each measure's pass."""
    from eventsourcing.persistence import Mapper

    runner = cs.projection_runners()[0]
    recorder = cs.app.recorder
    stock: Mapper[Any] = Mapper(transcoder=cs.app.mapper.transcoder)
    entries, notifications = _read_beforehand(runner, recorder)
    decode = runner.decode_event.decode
    _warm(decode, stock.to_domain_event, entries, notifications)

    def read() -> None:
        position = 0
        while batch := runner._select(position):
            position = batch[-1].id

    def decode_all() -> None:
        for entry in entries:
            decode(entry)

    def stock_read_decode() -> None:
        to_domain_event = stock.to_domain_event
        start = 1
        while batch := recorder.select_notifications(start, limit=1000):
            for notification in batch:
                to_domain_event(notification)
            start = batch[-1].id + 1

    def stock_decode() -> None:
        to_domain_event = stock.to_domain_event
        for notification in notifications:
            to_domain_event(notification)

    return len(entries), {
        "read": read,
        "decode": decode_all,
        "stock": stock_read_decode,
        "stock-decode": stock_decode,
    }


def inner(url: str, measure: str) -> None:
    """The process under callgrind: prepare, then the measured pass in a callback."""
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.projection_engine.runner import frozen_heap

    cs = bootstrap(database_url=url)
    events, passes = _passes(cs)
    if measure.startswith("stock"):
        ctypes.CFUNCTYPE(None)(passes[measure])()
    else:
        with frozen_heap():  # as a rebuild reads and decodes
            ctypes.CFUNCTYPE(None)(passes[measure])()
    print(json.dumps({"events": events}))
    cs.close()


def measured(url: str, measure: str, keep: str | None) -> dict[str, Any]:
    total, inner_said = count(
        __file__, [f"--inner={url}", f"--measure={measure}"], keep, "decode-instr-"
    )
    events = inner_said["events"]
    return {
        "measure": measure,
        "events": events,
        "instructions": total,
        "per_event": round(total / events),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lifecycles", type=int, default=4000)
    parser.add_argument("--measure", choices=("all", *MEASURES), default="all")
    parser.add_argument("--keep", help="write callgrind's output here (one measure)")
    parser.add_argument("--database-url", help="measure this SQLite store instead of filling one")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args.inner, args.measure)
        return
    measures = MEASURES if args.measure == "all" else (args.measure,)
    if args.keep and len(measures) > 1:
        parser.error("--keep takes one --measure")
    url = args.database_url
    if url is None:
        from bench_projections import fill
        from countersign.infrastructure.bootstrap import bootstrap

        url = f"sqlite:///{tempfile.mkdtemp(prefix='decode-instr-')}/countersign.db"
        cs = bootstrap(database_url=url)
        fill(cs, args.lifecycles)
        cs.close()
    for measure in measures:
        print(json.dumps(measured(url, measure, args.keep)), flush=True)


if __name__ == "__main__":
    main()
