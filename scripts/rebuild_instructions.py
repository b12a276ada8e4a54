"""The rebuilding process's instructions per event of a rebuild, counted by callgrind.

    .venv/bin/python scripts/rebuild_instructions.py                       # all seven
    .venv/bin/python scripts/rebuild_instructions.py --projections audit_trail
    .venv/bin/python scripts/rebuild_instructions.py --bound noop --keep /tmp/noop.out
    .venv/bin/python scripts/rebuild_instructions.py --store /tmp/rebuild-store.db  # fixed store
    VALGRIND_OPTS=--cache-sim=yes .venv/bin/python scripts/rebuild_instructions.py --chunk 1000
    callgrind_annotate --inclusive=yes /tmp/noop.out | head -80

It fills a fresh SQLite store with ``--lifecycles`` of ``scripts/bench_projections.py``'s
lifecycles (five events each, plus the seeded club's), then runs itself under ``valgrind
--tool=callgrind`` with collection off, reads the whole log into memory, and counts one pass of what
the rebuilding process does to each batch of ``rebuild_together``: the handlers of every
chosen projection over the batch (decoding each event once, ``_prepare_together``), the
packing of its rows into values in column order, and their sending to the writer process
(``writer.flat_batch`` and ``writer.Sender``, as ``WriterProcess.submit`` sends a batch, here
into ``/dev/null``). The
pass runs inside a ctypes callback and callgrind collects only while it runs
(``--toggle-collect=closure_fcn``), so start-up, imports, filling and reading the log are left
out; so are the writer process, whose work no pickle here is sent to, and the indexes built
after the last batch. The count moves by a few hundred instructions an event from run to run.

``--bound`` measures what a lever could at most give, by taking it away (the rows are then
wrong; nothing is written): ``noop``, every handler a no-op (what is left is decoding and
dispatch); ``bare-rows``, ``SqlRows.get``, ``update`` and ``put`` without their checks and
read-only views; ``no-send``, each batch packed but neither flattened nor marshalled (what is
left out is the hand-over to the writer, ``flat_batch`` and ``Sender``); ``unread``, every
event stored without the fields no handler reads (found by a pass before the count, which
records each event class's attribute reads), as a decoder that made only what handlers read
would hand them: the line printed says whether the batches sent then hold the same values
(``same_batches``: the fields were indeed unread), and as its count follows two passes, it
compares with ``warm``: the same code counted after two passes (caches, the type method cache
and the allocator's arenas warm: 3,700 instructions an event fewer over one 20,051-event
store); ``decoded``, every event decoded before the count and handed out again (what is left
out is decoding and the events' freeing), and ``decoded-interned`` the same with each event's
fields keyed by interned names (what the handlers' reads of fields would save if the decoder's
keys were the names their code reads); ``orjson``, every event decoded by orjson into its
domain class (``ProjectionDecoder``) instead of msgspec's structs (``StructDecoder``), as
before session 58: what the structs save. ``--chunk`` sets how many events ``_prepare_together``
decodes before each projection runs over them in turn (``together.CHUNK``). With
``VALGRIND_OPTS=--cache-sim=yes`` callgrind also counts the first-level cache misses; the line
printed then gives them an event too (``I1mr`` code, ``D1mr`` and ``D1mw`` data read and
written, ``LLmr`` last level).
``--store PATH``: the store is filled there once and kept, and every run given the same path
counts a copy of it, so two codes compare over the very same events (a fresh store each run
moves the count by up to 2,800 instructions an event for the same code: its random ids). The
process counted runs with ``PYTHONHASHSEED=0`` unless it is set: over one store a count then
repeats, or moves by at most about 500 (where objects land in memory, which dicts keyed by
``id()`` hash); with random hashes it moved by a few hundred more.
``--inner`` is the process valgrind runs; not for use by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from callgrind_count import count  # noqa: E402


def _bound(kind: str) -> None:
    """Take a lever away, to measure what it costs (``--bound``)."""
    from countersign.infrastructure.projection_engine import rows
    from countersign.projections.base import Projection

    if kind == "orjson":
        from countersign.infrastructure.persistence.log_decoder import ProjectionDecoder
        from countersign.infrastructure.projection_engine import runner

        runner.StructDecoder = ProjectionDecoder  # type: ignore[misc]
    elif kind == "noop":
        handler_for = Projection.handler_for

        def no_op(self: Projection, topic: str) -> Any:
            found = handler_for(self, topic)
            return None if found is None else (lambda event, position, rows: None)

        Projection.handler_for = no_op  # type: ignore[method-assign]
    elif kind == "bare-rows":
        absent = rows._ABSENT

        def get(self: Any, table: str, key: Any) -> Any:
            row = self._written[table].get(key, absent)
            return self._load(table, key) if row is absent else row

        def update(self: Any, table: str, key: Any, **changes: Any) -> Any:
            written = self._written[table]
            row = written.get(key, absent)
            if row is absent:
                row = self._load(table, key)
                if row is None:
                    return None
                written[key] = row
            elif row is None:
                return None
            row.update(changes)
            return row

        def put(self: Any, table: str, row: dict[str, Any]) -> None:
            self._written[table][self.codecs[table].key_of(row)] = row

        rows.SqlRows.get, rows.SqlRows.update, rows.SqlRows.put = get, update, put  # type: ignore[method-assign]


def inner(url: str, projections: str, bound: str, chunk: int, batch_size: int) -> None:
    """The process under callgrind: read the log, then the measured pass in a callback."""
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.projection_engine import together
    from countersign.infrastructure.projection_engine.key_filter import KeyFilter
    from countersign.infrastructure.projection_engine.runner import frozen_heap
    from countersign.infrastructure.projection_engine.together import _prepare_together
    from countersign.infrastructure.projection_engine.writer import Sender, flat_batch

    if chunk:
        together.CHUNK = chunk
    if bound:
        _bound(bound)
    cs = bootstrap(database_url=url)
    runners = cs.projection_runners()
    if projections != "all":
        runners = [runner for runner in runners if runner.name in projections.split(",")]
    for runner in runners:
        runner.batch_size = batch_size or runner.batch_size
    first = runners[0]
    batches, position = [], 0
    while batch := first._select(position):
        batches.append(batch)
        position = batch[-1].id
    events = sum(map(len, batches))
    tables = {runner.name: tuple(runner.projection.tables) for runner in runners}

    def one_pass(batches: list[Any], sink: Any, hand_over: bool = True) -> None:
        send = Sender(sink).send
        known, overlays, position = KeyFilter(), None, 0
        with first.sql.reading() as reader:
            for batch in batches:
                prepared = _prepare_together(runners, batch, reader, overlays, known)
                packed = [(r.name, prepared[i].packed()) for i, r in enumerate(runners)]
                if hand_over:  # as ``WriterProcess.submit`` sends it (SQLite: flat, marshalled)
                    message = flat_batch(first.dialect, tables, position, batch[-1].id, packed)
                    send(message, plain=True)
                overlays = [rows.written for rows in prepared]
                position = batch[-1].id

    said: dict[str, Any] = {"events": events}
    batches = _before_count(bound, batches, one_pass, first.decode_event, said)
    sink = open(os.devnull, "wb")  # noqa: SIM115 - a buffered file, as the writer's pipe is
    with frozen_heap():
        ctypes.CFUNCTYPE(None)(lambda: one_pass(batches, sink, bound != "no-send"))()
    print(json.dumps(said))
    cs.close()


def _before_count(
    bound: str, batches: list[Any], one_pass: Any, decoder: Any, said: dict[str, Any]
) -> list[Any]:
    """What ``--bound`` ``warm``, ``unread``, ``decoded`` and ``decoded-interned`` do before
    the counted pass (``one_pass``): the batches it counts then."""
    if bound in ("decoded", "decoded-interned"):
        _decoded_before(decoder, batches, interned=bound == "decoded-interned")
    elif bound == "warm":
        for _ in range(2):
            one_pass(batches, _Digest())
    elif bound == "unread":
        before = _Digest()
        with _reads_recorded(batches, decoder.decode) as read:
            one_pass(batches, before)
        batches = [[_without_unread(entry, read) for entry in batch] for batch in batches]
        after = _Digest()
        one_pass(batches, after)
        said["same_batches"] = before.digest() == after.digest()
    return batches


class _Digest:
    """A stream that keeps the SHA-256 of what the messages written to it hold: each read
    back (``writer._read``) and its ``repr`` hashed, since marshal's bytes of the same values
    depend on which of them something else holds too (its references)."""

    def __init__(self) -> None:
        self._stream = io.BytesIO()

    def write(self, data: bytes) -> int:
        return self._stream.write(data)

    def flush(self) -> None:
        pass

    def digest(self) -> str:
        from countersign.infrastructure.projection_engine.writer import _read

        found, stream = hashlib.sha256(), io.BytesIO(self._stream.getvalue())
        while stream.tell() < len(stream.getbuffer()):
            found.update(repr(_read(stream)).encode())
        return found.hexdigest()


@contextlib.contextmanager
def _reads_recorded(batches: list[Any], decode: Any) -> Any:
    """Per topic of the log, the names of the attributes read of its events (``--bound
    unread``), recorded by each event class's ``__getattribute__`` while the block runs."""
    read: dict[str, set[str]] = {}
    topics = {entry.topic: type(decode(entry)) for batch in batches for entry in batch}
    generic = object.__getattribute__
    own = {cls: cls.__dict__.get("__getattribute__") for cls in topics.values()}
    for topic, cls in topics.items():
        names = read.setdefault(topic, set())

        def recording(self: Any, name: str, names: set[str] = names) -> Any:
            names.add(name)
            return generic(self, name)

        cls.__getattribute__ = recording  # type: ignore[method-assign,assignment]
    try:
        yield read
    finally:
        for cls, method in own.items():
            if method is None:
                del cls.__getattribute__  # type: ignore[misc]
            else:
                cls.__getattribute__ = method  # type: ignore[method-assign]


def _decoded_before(decoder: Any, batches: list[Any], *, interned: bool) -> None:
    """Every event decoded before the count, and handed out again by ``decoder`` (``--bound
    decoded``): what is left out is decoding and the events' freeing. ``interned``: each
    event's ``__dict__`` keyed by the interned names the handlers' code reads (orjson's keys
    are equal texts but other objects, so the interpreter reads those fields by its generic
    path): the two counts differ by what the handlers' field reads would save with them."""
    from countersign.infrastructure.persistence.log_decoder import _dict_setter

    events = {}
    for batch in batches:
        for entry in batch:
            event = decoder.decode(entry)
            if interned:
                keyed = {sys.intern(name): value for name, value in vars(event).items()}
                _dict_setter(type(event))(event, keyed)  # type: ignore[misc]
            events[entry.id] = event
    decoder.decode = lambda entry: events[entry.id]


def _without_unread(entry: Any, read: dict[str, set[str]]) -> Any:
    """``entry`` stored without the fields no handler read (``--bound unread``); what the
    mapper needs of an event the decoder hands it (``originator_topic``, ``class_version``)
    is kept, and so is an event of a topic none of whose fields were read."""
    import orjson

    names = read.get(entry.topic)
    if not names:
        return entry
    state = json.loads(entry.state)
    kept = {k: v for k, v in state.items() if k in names or k in _MAPPER_NEEDS}
    return entry._replace(state=orjson.dumps(kept))


_MAPPER_NEEDS = frozenset({"originator_topic", "class_version"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lifecycles", type=int, default=4000)
    parser.add_argument("--projections", default="all", help="all, or names with commas")
    parser.add_argument(
        "--bound",
        choices=[
            "",
            "noop",
            "bare-rows",
            "no-send",
            "unread",
            "warm",
            "decoded",
            "decoded-interned",
            "orjson",
        ],
        default="",
    )
    parser.add_argument("--chunk", type=int, default=0, help="events a chunk (default: CHUNK)")
    parser.add_argument("--batch", type=int, default=0, help="events a batch (0: the default)")
    parser.add_argument("--keep", help="write callgrind's output here")
    parser.add_argument("--store", help="a SQLite store filled once, kept: each run counts a copy")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args.inner, args.projections, args.bound, args.chunk, args.batch)
        return
    from bench_projections import fill
    from countersign.infrastructure.bootstrap import bootstrap

    folder = Path(tempfile.mkdtemp(prefix="rebuild-instr-"))
    url = f"sqlite:///{folder}/countersign.db"
    if args.store and Path(args.store).exists():
        _copy_store(Path(args.store), folder / "countersign.db")
    else:
        cs = bootstrap(database_url=url)
        fill(cs, args.lifecycles)
        cs.close()
        if args.store:
            _copy_store(folder / "countersign.db", Path(args.store))
    out = args.keep or tempfile.mktemp(prefix="rebuild-instr-", suffix=".out")
    # The same hashes every run (``KeyFilter``'s bits, dicts' and sets' orders), so a count
    # over one ``--store`` repeats within a few hundred; set it to compare another seed.
    os.environ.setdefault("PYTHONHASHSEED", "0")
    total, inner_said = count(
        __file__,
        [
            f"--inner={url}",
            f"--projections={args.projections}",
            f"--bound={args.bound}",
            f"--chunk={args.chunk}",
            f"--batch={args.batch}",
        ],
        out,
        "rebuild-instr-",
    )
    misses = _misses(Path(out))
    if not args.keep:
        Path(out).unlink()
    events = inner_said["events"]
    said = {
        "projections": args.projections,
        "bound": args.bound or None,
        "chunk": args.chunk or None,
        "batch": args.batch or None,
        "events": events,
        "instructions": total,
        "per_event": round(total / events),
    }
    if "same_batches" in inner_said:
        said["same_batches"] = inner_said["same_batches"]
    if misses:
        said["misses_per_event"] = {name: round(n / events) for name, n in misses.items()}
    print(json.dumps(said))


def _copy_store(source: Path, target: Path) -> None:
    """A SQLite store with its write-ahead log, if it has one left."""
    for suffix in ("", "-wal"):
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


def _misses(out: Path) -> dict[str, int]:
    """Callgrind's cache misses in its output ``out`` (none unless it simulated the caches):
    first-level code (``I1mr``), data read and written (``D1mr``, ``D1mw``), and last-level
    (``LLmr``: code and data read)."""
    text = out.read_text()
    names = re.search(r"^events: (.*)$", text, re.MULTILINE)
    totals = re.search(r"^(?:summary|totals): (.*)$", text, re.MULTILINE)
    if names is None or totals is None:
        return {}
    found = dict(zip(names.group(1).split(), map(int, totals.group(1).split()), strict=False))
    if "I1mr" not in found:
        return {}
    return {
        "I1mr": found["I1mr"],
        "D1mr": found["D1mr"],
        "D1mw": found["D1mw"],
        "LLmr": found["ILmr"] + found["DLmr"],
    }


if __name__ == "__main__":
    main()
