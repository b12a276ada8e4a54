"""The one shape every projection has.

A projection declares its tables and one handler per event type. Handlers read and write rows
through the ``Rows`` port only; the runner in ``infrastructure`` gives them a batch-scoped
implementation whose writes commit in the same transaction as the projection's tracking
position. That is what makes every projection exactly-once, resumable and rebuildable.
"""

from __future__ import annotations

import hashlib
from abc import ABC
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol, Self
from uuid import UUID

ColumnType = str  # "text" | "int" | "bool" | "time" | "json"


@dataclass(frozen=True)
class Column:
    """One column of a projection table."""

    name: str
    type: ColumnType = "text"


@dataclass(frozen=True)
class Table:
    """A projection table: its columns, primary key and secondary indexes."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    indexes: tuple[tuple[str, ...], ...] = ()
    #: Each row is put once and never changed or deleted (a log): the runner inserts instead
    #: of upserting (COPY straight into the table on PostgreSQL); putting a key again, or
    #: updating or deleting a row, stops the projection.
    append_only: bool = False

    def column_names(self) -> list[str]:
        return [column.name for column in self.columns]


class Rows(Protocol):
    """Row access for handlers, scoped to one batch of events."""

    #: Memory that lasts as long as this batch: a projection that gathers what a batch
    #: changes (its cards, its roll-ups) keeps it here under a key of its own (itself) and
    #: writes it in ``end_batch``; the next batch starts empty. Projections are shared by the
    #: threads that catch them up (the web server's, side by side), and each batch has its
    #: own rows, so what one thread gathers is never seen or lost by another, and a batch
    #: that fails takes what it gathered with it.
    batch: dict[Any, Any]

    def get(self, table: str, key: tuple[Any, ...]) -> Mapping[str, Any] | None:
        """The row with this primary key as it stands, including this batch's writes.

        Read-only: change rows with ``put`` or ``update``."""
        ...

    def put(self, table: str, row: dict[str, Any]) -> None:
        """Insert or replace the whole row (every column of the table).

        The row is taken as it is, not copied: the handler does not change the dict after
        putting it (``update`` does that). A row without exactly the table's columns raises
        ValueError, at once if it has too few or too many, or its key is missing, and by the
        end of the batch, before anything of it is written, if a column is misnamed."""
        ...

    def put_values(self, table: str, values: tuple[Any, ...]) -> None:
        """``put`` of the row given as a tuple of its values, in the order of the table's
        columns, e.g. ``rows.put_values("audit_approval_counts", (proposal_id, approvals))``.

        Rows are packed into such tuples to be written anyway, so no dict is made and none
        is looked up by name at the end of the batch: for a 10-column row about 4,800
        instructions less than ``put`` (callgrind). Worth it for a row put at nearly every
        event and not read back in its batch (a log's); a row ``get`` or ``update`` reads is
        made a dict then, which costs more than the dict would have (about 5,200
        instructions for 7 columns against 1,500), so ``put`` stays the choice there, and the
        readable one everywhere else. A tuple of another length, or anything but a tuple,
        raises ValueError at once, and a key an append-only table already holds raises as
        ``put`` does; nothing checks the order, so a value in the wrong place is stored in
        the wrong column (name each value's column in a comment where it is not plain).
        ``values_putter`` gives this method, or a stand-in for a ``Rows`` without it."""
        ...

    def update(self, table: str, key: tuple[Any, ...], **changes: Any) -> Mapping[str, Any] | None:
        """Change some columns of an existing row; a missing row stays missing (None).

        Returns the changed row, read-only like ``get``'s."""
        ...

    def delete(self, table: str, key: tuple[Any, ...]) -> None: ...


Handler = Callable[[Any, Any, int, Rows], None]


PutValues = Callable[[str, tuple[Any, ...]], None]


def values_putter(rows: Rows, tables: Iterable[Table]) -> PutValues:
    """``rows.put_values``, or, for a ``Rows`` written before that method (a plug-in's test
    double, say), a function that gives ``put`` the row as a dict of ``tables``' columns.

    Ask once a batch (a projection that keeps something per batch keeps this too), not once a
    row: a helper called for every row cost about 1,500 instructions a row (callgrind)."""
    put_values: PutValues | None = getattr(rows, "put_values", None)
    if put_values is not None:
        return put_values
    columns = {table.name: table.column_names() for table in tables}

    def put_as_dict(table: str, values: tuple[Any, ...]) -> None:
        rows.put(table, dict(zip(columns[table], values, strict=True)))

    return put_as_dict


def handles(*event_types: str) -> Callable[[Handler], Handler]:
    """Mark a projection method as the handler of events like ``"Proposal.Approved"``."""

    def mark(method: Handler) -> Handler:
        method._handles = event_types  # type: ignore[attr-defined]
        return method

    return mark


class Projection(ABC):
    """A read model of the application's single event stream."""

    name: ClassVar[str]
    tables: ClassVar[tuple[Table, ...]]
    #: Bump when the handlers write something else for the same events (a new status, an
    #: event newly handled): with the tables' shape it makes the ``fingerprint`` the runner
    #: compares with the one its tables were built under, rebuilding them when it differs.
    version: ClassVar[int] = 1
    _handlers: ClassVar[dict[str, Handler]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[str, Handler] = {}
        for klass in reversed(cls.__mro__):
            for attribute in vars(klass).values():
                for event_type in getattr(attribute, "_handles", ()):
                    handlers[event_type] = attribute
        cls._handlers = handlers

    def handles_topic(self, topic: str) -> bool:
        """Whether an event stored under this topic has a handler (else it is not decoded)."""
        return topic.rpartition(":")[2] in self._handlers

    def handler_for(self, topic: str) -> Callable[[Any, int, Rows], None] | None:
        """This projection's handler of events stored under ``topic``, bound to it, or None.

        The runners look it up once per topic, so an event costs a projection that ignores
        its type nothing, and one that handles it one call (no ``process`` in between)."""
        handler = self._handlers.get(topic.rpartition(":")[2])
        return None if handler is None else handler.__get__(self)

    def process(self, event: Any, position: int, rows: Rows) -> None:
        """Apply one event; events without a handler only advance the tracking position."""
        handler = self._handlers.get(type(event).__qualname__)
        if handler is not None:
            handler(self, event, position, rows)

    def end_batch(self, rows: Rows) -> None:  # noqa: B027 - optional, not abstract
        """Called once after the last handler of a batch, with the batch's rows, before they
        are written: a projection that gathers changes over a batch (``analytics``' roll-ups,
        in ``rows.batch``) writes them here. By default there is nothing to do."""

    def handled_event_types(self) -> list[str]:
        return sorted(self._handlers)

    def fingerprint(self) -> str:
        """What the stored rows were built by: ``version`` and every table's name, columns,
        types, key and kind. Indexes are left out: a new one is simply created."""
        shape = [
            (t.name, [(c.name, c.type) for c in t.columns], list(t.key), t.append_only)
            for t in self.tables
        ]
        digest = hashlib.sha256(repr(shape).encode()).hexdigest()[:16]
        return f"v{self.version}-{digest}"


class KeptRows:
    """Rows of one table (``table``, keyed by one text column) as one batch of ``rows`` has
    them: each read at most once (``row``: a copy, since the stored one is read-only; None:
    no such row), changed in place, and those in ``changed`` put once, at the batch's end
    (``put_changed``, from the projection's ``end_batch``), in the order they were first
    changed. A projection keeps one in ``rows.batch`` under itself.

    Why: a row that changes at nearly every event of its proposal, through a ``rows.get``
    and a ``rows.update`` with keywords each time (Python calls that check the columns,
    merge a dict of changes and hand out a read-only view), costs more than the change
    itself; most proposals live their whole lifecycle within one batch.

    ``texts``: the key of each proposal the batch made a row of, by the number of its UUID
    (``uuid.int``, the event's ``originator_id``). A handler of a later event of it finds the
    key with ``texts.get(uuid.int) or aggregate_text(uuid)``: one lookup of an integer, where
    ``aggregate_text`` (a call, ``id()`` and a lookup) costs about 1,000 instructions more
    (callgrind); a proposal of an earlier batch is not there, and its text is made.

    Each row is kept with its keys in the order of ``shape``'s columns (``table``'s
    declaration): a handler builds a new row with its keys in that order and only sets keys
    it has, and a row read is copied in that order, so the changed rows are put as their
    values (``Rows.put_values``), with no dict packed by name at the batch's end (about
    2,000 instructions a row less, callgrind). A row with a key its table lacks has a value
    too many, which ``put_values`` refuses; one built in another order stores its values in
    the wrong columns, which the golden digests of every kept table show
    (``tests/test_handler_rows.py``), and ``tests/test_s31_handlers.py`` checks the order."""

    __slots__ = ("changed", "kept", "rows", "texts")
    table: ClassVar[str]
    shape: ClassVar[Table]

    def __init__(self, rows: Rows) -> None:
        self.rows = rows
        self.kept: dict[str, dict[str, Any] | None] = {}
        self.changed: dict[str, dict[str, Any]] = {}
        self.texts: dict[int, str] = {}

    @classmethod
    def of(cls, owner: Any, rows: Rows) -> Self:
        """The one ``owner`` (a projection) keeps in this batch of ``rows``, made at its
        first use."""
        try:
            kept: Self = rows.batch[owner]
        except KeyError:
            kept = rows.batch[owner] = cls(rows)
        return kept

    @classmethod
    def end(cls, owner: Any, rows: Rows) -> None:
        """At the batch's end (``owner``'s ``end_batch``): its changed rows are put."""
        kept = rows.batch.pop(owner, None)
        if kept is not None:
            kept.put_changed()

    def row(self, key: str) -> dict[str, Any] | None:
        """The row as this batch has it, read first if an earlier batch wrote it; None if
        there is none."""
        found: dict[str, Any] | None = self.kept.get(key, _UNREAD)
        if found is _UNREAD:
            stored = self.rows.get(self.table, (key,))
            found = self.kept[key] = (
                None  # a copy in column order: ``put_changed`` puts its values
                if stored is None
                else {column.name: stored[column.name] for column in self.shape.columns}
            )
        return found

    def put_changed(self) -> None:
        """Each changed row put as its values, which are in column order (see above)."""
        put, table = values_putter(self.rows, (self.shape,)), self.table
        for row in self.changed.values():
            put(table, tuple(row.values()))


_UNREAD: Any = object()


#: id(UUID) -> (that UUID, its text), for ``aggregate_id`` and ``id_text``; emptied when full.
_ID_TEXTS: dict[int, tuple[Any, str]] = {}
_ID_TEXTS_MAX = 1024


def aggregate_id(event: Any) -> str:
    """``str(event.originator_id)``: the aggregate's id as every table keys it.

    Handlers ask for it about five times an event (every projection, twice in some), and
    ``str`` of a UUID is half a microsecond of Python: the texts of the ids seen lately are
    remembered (``id_text``), and looked up here without a call. (The last event's answer
    was kept too, until a rebuild of several projections together ran each over a chunk of
    events in turn, infrastructure/projection_engine/together.py: each projection then asks
    first about each event, and that memory missed most calls, each paying a tuple and a
    global store for the next; callgrind.)"""
    uuid = event.originator_id
    found = _ID_TEXTS.get(id(uuid))
    if found is not None and found[0] is uuid:
        return found[1]
    return id_text(uuid)


def aggregate_text(uuid: Any) -> str:
    """``aggregate_id`` of an event whose ``originator_id`` is ``uuid``: handlers write
    ``aggregate_text(event.originator_id)``, so that the event's attribute is read at the
    handler's own line, which sees one event class (or a few), not inside this function,
    whose one line sees every class: there the interpreter cannot specialise the read, and
    it took the generic path (about 220 instructions more a read, callgrind), at every call."""
    found = _ID_TEXTS.get(id(uuid))
    if found is not None and found[0] is uuid:
        return found[1]
    return id_text(uuid)


def id_text(uuid: Any) -> str:
    """``str(uuid)``, remembered for the last ids seen by the object's identity (the
    projection decoder hands out one object per id it has read lately: an aggregate's, an
    organization's, a resource's). The object is held here, so its ``id()`` cannot be reused
    by another while remembered.

    An exact ``str`` (an id stored as plain text, as the benchmark's lifecycles store their
    organization and resource) is its own text, given back as it is: each event decodes it
    to a new object, so remembering it missed every time, and filled the memory with texts
    that pushed out the aggregates' ids (callgrind, ``scripts/rebuild_instructions.py``)."""
    if type(uuid) is str:
        return uuid
    found = _ID_TEXTS.get(id(uuid))
    if found is not None and found[0] is uuid:
        return found[1]
    text = uuid_text(uuid)
    if len(_ID_TEXTS) >= _ID_TEXTS_MAX:
        _ID_TEXTS.clear()
    _ID_TEXTS[id(uuid)] = (uuid, text)
    return text


def uuid_text(uuid: Any) -> str:
    """``str(uuid)`` (and so ``f"{uuid}"``), not remembered: for an id seen once, such as a
    claim's attempt. A ``UUID``'s text is the hexadecimal digits of its 16 bytes, big-endian,
    in groups of 4, 2, 2, 2 and 6 bytes joined by dashes, as ``UUID.__str__`` writes them;
    here made from the bytes by ``bytes.hex`` (the middle three groups by one call, with its
    separator), three slices of bytes and an f-string, instead of the 32 digits by a %-format
    and five slices of text (a slice of text is about 700 instructions): about 4,800
    instructions against 7,000, and 7,700 for ``str`` (callgrind). Anything else, a subclass
    included, is its own ``str``."""
    if type(uuid) is not UUID:
        return str(uuid)
    data = uuid.int.to_bytes(16, "big")
    return f"{data[:4].hex()}-{data[4:10].hex('-', 2)}-{data[10:].hex()}"


def event_time(event: Any) -> datetime:
    """The time the event was recorded, in UTC (``utc(event.timestamp)``).

    Handlers run at every event of a rebuild write ``utc(event.timestamp)``, or that
    function's one line written out: read at the handler's line the attribute read is
    specialised for the handler's event class (``aggregate_text`` says why), and a Python
    call and the zone's read (a descriptor of ``datetime``) cost about 320 and 300
    instructions each (callgrind)."""
    timestamp: datetime = event.timestamp
    return timestamp if timestamp.tzinfo is UTC else timestamp.astimezone(UTC)


def utc(timestamp: datetime) -> datetime:
    """``timestamp`` in UTC: itself when its zone is UTC's own (``event_time``)."""
    return timestamp if timestamp.tzinfo is UTC else timestamp.astimezone(UTC)


def update(
    rows: Rows, table: str, key: tuple[Any, ...], **changes: Any
) -> Mapping[str, Any] | None:
    """Change some columns of an existing row; a missing row is left missing."""
    return rows.update(table, key, **changes)


def approvals_required(policy: Mapping[str, Any] | None) -> int:
    """How many distinct people a proposal frozen under ``policy`` needs (``Proposed.policy``,
    None before policies or where none is set: one), as ``Proposal.approvals_required``.

    Four projections ask at every ``Proposed``: an exact ``int`` is given back as it is and
    no policy needs no dict, where ``int()`` of a new ``{}``'s default was a type call each
    time (about 700 instructions, callgrind)."""
    if not policy:
        return 1
    required = policy.get("approvals_required", 1)
    return required if type(required) is int else int(required)
