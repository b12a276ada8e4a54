"""Projection tables over SQL: the batch-scoped ``Rows`` implementation (its column codecs are
in ``codecs``), the tracking table, and the one transaction that writes a batch with its new
position. Kept apart from the runner (and from the event store) so that a writer process
imports only this, the SQL helper and the projections' table declarations."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.persistence.sql import Cursor, integrity_errors
from countersign.infrastructure.projection_engine.codecs import (
    _COPY_ROWS,
    _DELETES_PER_STATEMENT,
    _SQL_TYPES,
    _Codec,
    _codec,
)
from countersign.infrastructure.projection_engine.key_filter import KeyFilter
from countersign.projections.base import Table

TRACKING_TABLE = "projection_tracking"
#: Each projection's ``fingerprint`` as its tables were built: a different one rebuilds them.
SCHEMA_TABLE = "projection_schemas"


class ProjectionStoppedError(Exception):
    """Raised when a projection meets an event it cannot process; it resumes from that event.
    ``position``: that event's, where it is known; ``applied``: how many events before it
    were applied all the same (``ProjectionRunner.run_batch``)."""

    def __init__(self, message: str | Localized, position: int | None = None) -> None:
        #: What it says, in French too (``stops.stopped``; the English alone otherwise).
        self.said = message if isinstance(message, Localized) else Localized(message, message)
        super().__init__(self.said.en)
        self.position = position
        self.applied = 0


class ProjectionRaceError(Exception):
    """Raised when another runner of the same projection committed the batch first."""


_ABSENT: Any = object()


#: A row a batch wrote: a dict (``put``, or a row ``get`` or ``update`` made one), or its
#: values in column order as ``put_values`` took them.
WrittenRow = dict[str, Any] | tuple[Any, ...]
#: Per table, a batch's written rows by key (None: deleted): what ``SqlRows.written`` returns.
Written = Mapping[str, Mapping[tuple[Any, ...], WrittenRow | None]]
#: Per table, the values (in column order) of a batch's rows to write and the keys it deleted:
#: what ``SqlRows.packed`` returns, and a writer process is sent.
Packed = Mapping[str, tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]]


class SqlRows:
    """The ``Rows`` port over SQL, caching a batch's reads and writes until ``flush``.

    ``cursor`` serves the reads. ``overlay`` holds the previous batch's writes when those may
    not be committed yet (a writer process has them): a key it holds is read from it. ``known``
    (a rebuild's) tells keys no batch has written, which are not looked for.
    """

    def __init__(
        self,
        cursor: Cursor,
        tables: Iterable[Table],
        dialect: str,
        overlay: Written | None = None,
        known: KeyFilter | None = None,
    ) -> None:
        self.cursor = cursor
        self.overlay = overlay
        self.known = known
        #: The batch's writes packed (``pack``), or another process's batch (``of_packed``).
        self._packed: Packed | None = None
        self.tables = {table.name: table for table in tables}
        self.dialect = dialect
        self.codecs = {name: _codec(spec, dialect) for name, spec in self.tables.items()}
        # Per table, the rows written in this batch (None: deleted), in first-write order: a
        # dict, or a tuple of values in column order (``put_values``) until it is read ...
        self._written: dict[str, dict[tuple[Any, ...], WrittenRow | None]] = {
            name: {} for name in self.tables
        }
        # ... and the rows read from the database (None: no such row). A key is looked up in
        # the written rows first.
        self._read: dict[str, dict[tuple[Any, ...], dict[str, Any] | None]] = {
            name: {} for name in self.tables
        }
        #: Per table, its codec and written rows: one lookup for ``put`` and ``update``.
        self._slots = {name: (self.codecs[name], self._written[name]) for name in self.tables}
        #: What the projection gathers over this batch (``Rows.batch``).
        self.batch: dict[Any, Any] = {}
        #: PostgreSQL: the keys this caller's earlier batches wrote (``WrittenKeys``), if it
        #: keeps them: rows of other keys go straight into their table (``of_packed``).
        self.written_keys: WrittenKeys | None = None
        #: SQLite: ``_packed`` holds each table's rows flattened, their times as text
        #: (``flat_packed``), not the rows' values (``of_packed``).
        self._flat = False

    def _load(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        """The row as it stands in the database (before this batch), read at most once."""
        read = self._read[table]
        row: dict[str, Any] | None = read.get(key, _ABSENT)
        if row is _ABSENT and self.overlay is not None:
            pending = self.overlay[table].get(key, _ABSENT)
            if pending is not _ABSENT:
                # A copy: the previous batch's rows are on their way to the database.
                if pending is None:
                    row = read[key] = None
                elif type(pending) is tuple:
                    row = read[key] = dict(zip(self.codecs[table].names, pending))  # noqa: B905
                else:
                    row = read[key] = dict(pending)
        if row is _ABSENT and self.known is not None and not self.known.might_hold(table, key):
            row = read[key] = None
        if row is _ABSENT:
            codec = self.codecs[table]
            found = self.cursor.execute(codec.select, codec.key_params(key)).fetchone()
            row = read[key] = None if found is None else codec.row_from_db(found)
        return row

    def get(self, table: str, key: tuple[Any, ...]) -> Mapping[str, Any] | None:
        row: WrittenRow | None = self._written[table].get(key, _ABSENT)
        if row is _ABSENT:
            row = self._load(table, key)
        elif type(row) is tuple:
            row = self._as_dict(table, key, row)
        return None if row is None else MappingProxyType(row)  # type: ignore[arg-type]

    def _as_dict(self, table: str, key: tuple[Any, ...], values: tuple[Any, ...]) -> dict[str, Any]:
        """A row ``put_values`` wrote, read back (``get``, ``update``): made a dict once and
        kept in its place, so that it is packed from the dict (which ``update`` changes).
        ``zip`` is not strict: ``put_values`` checked the length (strict cost 1,400
        instructions more for 7 columns). A dict made so costs about 5,200 instructions for 7
        columns against about 1,500 for the handler's dict literal (callgrind): a row read
        back in its batch is best put as a dict."""
        row = self._written[table][key] = dict(zip(self.codecs[table].names, values))  # noqa: B905
        return row

    def update(self, table: str, key: tuple[Any, ...], **changes: Any) -> Mapping[str, Any] | None:
        codec, written = self._slots[table]
        if not codec.updatable.issuperset(changes):  # one test for both mistakes
            if codec.append_only:
                raise ValueError(f"{table} is append-only: its rows are never changed")
            raise ValueError(f"{table} has no column {sorted(set(changes) - codec.columns)}")
        row: WrittenRow | None = written.get(key, _ABSENT)
        if row is _ABSENT:
            row = self._load(table, key)
            if row is None:
                return None
            written[key] = row
        elif row is None:
            return None
        elif type(row) is tuple:
            row = self._as_dict(table, key, row)
        row.update(changes)  # type: ignore[union-attr]
        return MappingProxyType(row)  # type: ignore[arg-type]

    def put(self, table: str, row: dict[str, Any]) -> None:
        codec, written = self._slots[table]
        # A row with as many columns as the table, its key among them, is taken here; a name
        # the table does not have is found when the batch is packed (``pack`` looks every
        # column up anyway), before anything is written. Comparing the names here too cost
        # about 1,500 instructions a row (callgrind), 2.5% of a rebuild of all seven.
        if len(row) != codec.width:
            raise _not_the_columns(table, codec)
        try:
            key = codec.key_of(row)
        except KeyError:
            raise _not_the_columns(table, codec) from None
        if codec.append_only and key in written:
            raise ValueError(f"{table} is append-only: {key!r} was already put")
        written[key] = row  # the handler's own dict, which it no longer changes (``Rows.put``)

    def put_values(self, table: str, values: tuple[Any, ...]) -> None:
        """``put`` of a row given as its values in column order (``Rows.put_values``): kept as
        the tuple it is, which is what ``pack`` makes of a dict, so no dict is made, walked
        or looked up by name. A tuple of the wrong length, or anything but a tuple, is
        refused at once; the key is its values at the key's columns."""
        codec, written = self._slots[table]
        if type(values) is not tuple or len(values) != codec.width:
            raise _not_the_values(table, codec, values)
        key = codec.key_of_values(values)
        if codec.append_only and key in written:
            raise ValueError(f"{table} is append-only: {key!r} was already put")
        written[key] = values

    def delete(self, table: str, key: tuple[Any, ...]) -> None:
        if self.codecs[table].append_only:
            raise ValueError(f"{table} is append-only: its rows are never deleted")
        self._written[table][key] = None

    @property
    def written(self) -> Written:
        """Per table, the rows this batch wrote (None: deleted), unchanged by ``flush``."""
        return self._written

    def prune(self, known: KeyFilter) -> None:
        """Before the batch is written: ``KeyFilter.prune`` its writes."""
        known.prune(self._written)

    def packed(self) -> Packed:
        """The batch's writes as values in column order: a third of the time to pickle for a
        writer process, and half the size, of the rows as dicts. Packed once (``pack``)."""
        packed = self._packed
        return self.pack() if packed is None else packed

    def pack(self) -> Packed:
        """Pack the batch's writes (``packed``), once its handlers are done: ValueError if a
        row put has a column its table does not have (``put`` counted them). The engine
        packs each batch at its end (``stops.end_batch``), so that stops the projection at
        the batch's last event, and nothing of the batch is written."""
        packed = {}
        for name, changes in self._written.items():
            if changes:
                codec = self.codecs[name]
                values = codec.values
                try:
                    # A tuple is a row ``put_values`` took, in column order already.
                    puts = [
                        row if type(row) is tuple else values(row)  # type: ignore[arg-type]
                        for row in changes.values()
                        if row is not None
                    ]
                except KeyError:
                    raise _not_the_columns(name, codec) from None
                packed[name] = (puts, [key for key, row in changes.items() if row is None])
        self._packed = packed
        return packed

    @classmethod
    def of_packed(
        cls,
        cursor: Cursor,
        tables: Iterable[Table],
        dialect: str,
        packed: Packed,
        written_keys: WrittenKeys | None = None,
        *,
        flat: bool = False,
    ) -> SqlRows:
        """Rows to flush that another process prepared (``packed`` of its ``SqlRows``, or with
        ``flat`` on SQLite, ``flat_packed`` of that).

        ``written_keys``: see ``WrittenKeys``; the flush adds the keys it puts."""
        if flat and dialect != "sqlite":
            raise ValueError("only SQLite's rows are sent flat")
        rows = cls(cursor, tables, dialect)
        rows._packed = packed
        rows.written_keys = written_keys
        rows._flat = flat
        return rows

    def flush(
        self, cursor: Cursor | None = None, made: dict[int, tuple[Any, str]] | None = None
    ) -> int:
        """Write every changed row through ``cursor`` (by default the reading one); returns
        how many rows were written or deleted. Once per batch: the rows stay ``written``.
        ``made``: the texts of the batch's values made so far, shared by the projections
        written in one batch (``codecs._texts``)."""
        cursor = cursor or self.cursor
        written = 0
        packed = self.packed()
        if made is None:
            made = {}
        for name, (puts, deleted) in packed.items():
            codec = self.codecs[name]
            if deleted:
                deletes = codec.keys_to_db(deleted)
                if codec.postgres:
                    cursor.execute_native(codec.delete, deletes)
                else:
                    self._delete_sqlite(cursor, codec, deletes)
            if puts and self._flat:  # SQLite's rows flattened already (``flat_packed``)
                self._upsert_sqlite(cursor, codec, codec.flat_rest(puts, made))
                written += len(puts) // codec.width + len(deleted)
                continue
            if puts:
                if codec.postgres and len(puts) >= _COPY_ROWS and codec.append_only:
                    cursor.copy_in(codec.copy, codec.copy_types, codec.rows_to_copy(puts))
                elif codec.postgres and len(puts) >= _COPY_ROWS:
                    self._upsert_postgres(cursor, name, codec, puts)
                elif codec.postgres:
                    cursor.execute_native(codec.upsert, codec.rows_to_db(puts))
                else:
                    self._upsert_sqlite(cursor, codec, codec.flat_params(puts, made))
            written += len(puts) + len(deleted)
        return written

    def _upsert_postgres(
        self, cursor: Cursor, name: str, codec: _Codec, puts: list[tuple[Any, ...]]
    ) -> None:
        """PostgreSQL, many rows of a table rows are updated in: COPY into its staging table
        and one upsert from it; with ``written_keys``, the rows of keys never written go
        straight into the table by COPY, only the others through the staging table."""
        known = self.written_keys
        if known is not None:
            fresh, puts = known.split(name, codec.key_of_values, puts)
            if fresh:
                cursor.copy_in(codec.copy_into_table, codec.copy_types, codec.rows_to_copy(fresh))
            if len(puts) < _COPY_ROWS:
                if puts:
                    cursor.execute_native(codec.upsert, codec.rows_to_db(puts))
                return
        cursor.execute(codec.create_stage)
        cursor.copy_in(codec.copy, codec.copy_types, codec.rows_to_copy(puts))
        cursor.execute(codec.upsert_staged)

    @staticmethod
    def _delete_sqlite(cursor: Cursor, codec: _Codec, keys: list[Any]) -> None:
        size, many, whole = _DELETES_PER_STATEMENT, codec.delete_many, 0
        if many is not None:
            whole = len(keys) - len(keys) % size
            for start in range(0, whole, size):
                cursor.execute(many, [key[0] for key in keys[start : start + size]])
        if whole < len(keys):
            cursor.executemany(codec.delete, keys[whole:])

    @staticmethod
    def _upsert_sqlite(cursor: Cursor, codec: _Codec, flat: list[Any]) -> None:
        """SQLite: the rows' parameters, one after another (``_Codec.flat_params``), in
        multi-row INSERTs of ``rows_per_insert`` rows sliced from the flat list, the rest row
        by row."""
        step = len(codec.names)
        size = codec.rows_per_insert * step
        whole = len(flat) - len(flat) % size
        for start in range(0, whole, size):
            cursor.execute(codec.upsert_many, flat[start : start + size])
        if whole < len(flat):
            cursor.executemany(
                codec.upsert,
                [flat[start : start + step] for start in range(whole, len(flat), step)],
            )

    def decode(self, spec: Table, row: tuple[Any, ...]) -> dict[str, Any]:
        codec = self.codecs.get(spec.name) or _codec(spec, self.dialect)
        return codec.row_from_db(row)


def flat_packed(tables: Iterable[Table], packed: Packed) -> Packed:
    """SQLite: a batch's packed rows (``SqlRows.packed``) as a rebuild sends them to its
    writer process (``writer.flat_batch``): each table's rows in one flat list, their times
    already the text SQLite stores (``_Codec.flat_values``); the writer converts the rest
    (``SqlRows.of_packed`` with ``flat``, ``_Codec.flat_rest``). Flat lists of texts, ints
    and None cost both processes less to send than rows of tuples holding datetimes (each a
    ``__reduce_ex__`` call to pickle and a constructor call to unpickle), and the writer no
    longer flattens the rows nor formats the times."""
    codecs = {table.name: _codec(table, "sqlite") for table in tables}
    return {
        name: (codecs[name].flat_values(puts) if puts else puts, deleted)
        for name, (puts, deleted) in packed.items()
    }


class WrittenKeys:
    """Per table, the keys a writer has put since it started on emptied tables (a rebuild's
    writer process, ``writer.serve``), in a fixed-size Bloom filter per table as
    ``KeyFilter``'s: "never put" is always right, "put" sometimes wrong.

    A row whose key was never put is new: PostgreSQL takes it by COPY straight into its table,
    where the staging table and the upsert from it cost the server twice the work (replay of
    a rebuild's batches, ``scripts/writer_instructions.py --measure server``). If the tables
    were not empty after all, such a COPY fails on the row already there, and nothing of the
    batch is kept: the writer then forgets the filter and writes the batch again without it.
    """

    def __init__(self) -> None:
        self._bits: dict[str, bytearray] = {}

    def split(
        self,
        table: str,
        key_of: Callable[[tuple[Any, ...]], tuple[Any, ...]],
        puts: list[tuple[Any, ...]],
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The rows of keys never put (remembered from now on), and the others."""
        bits = self._bits.get(table)
        if bits is None:
            bits = self._bits[table] = bytearray(1 << (_KEY_BITS - 3))
        fresh, others = [], []
        for values in puts:
            h = hash(key_of(values))
            first, second = h & _KEY_MASK, (h >> _KEY_BITS) & _KEY_MASK
            if bits[first >> 3] & (1 << (first & 7)) and bits[second >> 3] & (1 << (second & 7)):
                others.append(values)
            else:
                fresh.append(values)
                bits[first >> 3] |= 1 << (first & 7)
                bits[second >> 3] |= 1 << (second & 7)
        return fresh, others


_KEY_BITS = 22  # 2**22 bits, 512 KB, per table: as ``key_filter._BITS``
_KEY_MASK = (1 << _KEY_BITS) - 1


def _not_the_columns(table: str, codec: _Codec) -> ValueError:
    return ValueError(f"{table} row must have exactly the columns {sorted(codec.columns)}")


def _not_the_values(table: str, codec: _Codec, values: Any) -> ValueError:
    given = f"{len(values)} values" if type(values) is tuple else f"a {type(values).__name__}"
    return ValueError(
        f"{table} row's values must be a tuple of {codec.width} values, in the order of its "
        f"columns {list(codec.names)}; it was given {given}"
    )


def create_statements(spec: Table, dialect: str, *, indexes: bool = True) -> list[str]:
    types = _SQL_TYPES[dialect]
    columns = ", ".join(f"{c.name} {types[c.type]}" for c in spec.columns)
    statements = [
        f"CREATE TABLE IF NOT EXISTS {spec.name} ({columns}, PRIMARY KEY ({', '.join(spec.key)}))"
    ]
    return statements + (index_statements(spec) if indexes else [])


def index_statements(spec: Table) -> list[str]:
    statements = []
    for index in spec.indexes:
        name = f"{spec.name}_{'_'.join(index)}_idx"
        statements.append(f"CREATE INDEX IF NOT EXISTS {name} ON {spec.name} ({', '.join(index)})")
    return statements


def lock_position(
    cursor: Cursor, name: str, position: int, *, postgres: bool, fingerprint: str | None = None
) -> None:
    """Lock a projection's tracking row; ProjectionRaceError if it is not at ``position`` or
    (given) another ``fingerprint`` built the tables since: the caller reads the position
    again, which settles whose tables they are (``ProjectionRunner._checked_position``)."""
    if fingerprint is None:
        locked = cursor.execute(
            f"SELECT position FROM {TRACKING_TABLE} WHERE projection = ?"
            + (" FOR UPDATE" if postgres else ""),
            (name,),
        ).fetchone()
    else:
        locked = cursor.execute(
            f"SELECT t.position, s.fingerprint FROM {TRACKING_TABLE} t"
            f" LEFT JOIN {SCHEMA_TABLE} s ON s.projection = t.projection"
            " WHERE t.projection = ?" + (" FOR UPDATE OF t" if postgres else ""),
            (name,),
        ).fetchone()
    if locked is None or int(locked[0]) != position:
        raise ProjectionRaceError(name)
    if fingerprint is not None and locked[1] != fingerprint:
        raise ProjectionRaceError(name)


def save_position(cursor: Cursor, name: str, last: int) -> None:
    cursor.execute(
        f"UPDATE {TRACKING_TABLE} SET position = ?, updated_at = ? WHERE projection = ?",
        (last, datetime.now(tz=UTC).isoformat(), name),
    )


def flush(
    name: str,
    rows: SqlRows,
    last: int,
    cursor: Cursor | None = None,
    made: dict[int, tuple[Any, str]] | None = None,
) -> None:
    """Write a batch's rows; a row an append-only table already holds stops the projection.
    ``made``: see ``SqlRows.flush``."""
    try:
        rows.flush(cursor, made)
    except Exception as error:
        if not isinstance(error, integrity_errors()):
            raise
        raise ProjectionStoppedError(
            f"projection {name!r} stopped writing the batch that ends at notification {last}: "
            f"{type(error).__name__} (a row it puts once is already there). Nothing of the "
            "batch was applied; fix the cause and run the projection again."
        ) from error


def commit_batch(
    cursor: Cursor,
    batches: Sequence[tuple[str, SqlRows]],
    position: int,
    last: int,
    *,
    postgres: bool,
    fingerprints: Mapping[str, str] = MappingProxyType({}),
) -> None:
    """Inside one transaction: for each projection, check it still stands at ``position``
    (under its fingerprint, if given), write its rows and move it to ``last``."""
    made: dict[int, tuple[Any, str]] = {}  # the texts of the batch's values, for them all
    for name, rows in batches:
        lock_position(cursor, name, position, postgres=postgres, fingerprint=fingerprints.get(name))
        flush(name, rows, last, cursor, made)
        save_position(cursor, name, last)
