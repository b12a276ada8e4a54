"""What a decision has read, per thread, and what a request fetches along with its first
query: the read set a commit is checked against (``EventSourcedStore.reading``,
``EventSourcedStore.read_along``)."""

from __future__ import annotations

import threading
from uuid import UUID

from eventsourcing.domain import Aggregate


class DecisionReads:
    """What the decision running in one thread has read (see ``EventSourcedStore.reading``).

    Keyed by each id's ``int``, not the ``UUID``: the ``UUID``'s hash is a Python method
    (about 950 instructions under callgrind), an int's is C, and a cycle looks ids up here
    well over a hundred times. ``ids`` keeps the ``UUID`` of each id read."""

    def __init__(self) -> None:
        #: Whether a decision is running; only then are reads recorded.
        self.open = False
        #: Whether reads may come from the snapshots this process holds, without a query.
        self.held = False
        #: Fetched before the decision ran: its reads take these instead of querying.
        self.preloaded: dict[int, Aggregate] = {}
        #: Asked for in that same round trip and not found: a read of one finds nothing
        #: again without a second query (a new resource's pending slot, say). Creating one
        #: is checked by the primary key, as ever.
        self.absent: set[int] = set()
        #: Aggregate id -> the version the decision read (and based itself on); None for one
        #: it looked for and did not find (the commit is refused if it exists by then).
        self.versions: dict[int, int | None] = {}
        #: The ``UUID`` of each id in ``versions``, in the order they were read.
        self.read_ids: dict[int, UUID] = {}
        #: Aggregate types the decision only points at, and the ids it read of them.
        self.targets: frozenset[type[Aggregate]] = frozenset()
        self.unchecked: set[int] = set()
        #: The ids served from a held snapshot rather than by a query of this decision.
        self.from_held: set[int] = set()

    def saw(self, key: int, aggregate: Aggregate) -> None:
        """The decision read ``aggregate`` (``key``: its id's ``int``). ``EventSourcedStore.get``
        does this inline: a change here is a change there."""
        if self.open and key not in self.versions:
            # The library's ``version`` and ``id`` are properties, a Python call each: their
            # attributes are read here, and wherever a commit reads them for every aggregate.
            self.versions[key] = aggregate._version
            self.read_ids[key] = aggregate._id
            if type(aggregate) in self.targets:
                self.unchecked.add(key)

    def missed(self, aggregate_id: UUID, key: int, as_type: type[Aggregate]) -> None:
        """The decision looked for this aggregate and it does not exist: deciding on its
        absence is relying on it, like a read (a commit that creates it is checked by the
        primary key instead)."""
        if self.open and as_type not in self.targets and key not in self.versions:
            self.versions[key] = None
            self.read_ids[key] = aggregate_id

    def __enter__(self) -> DecisionReads:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def relied_on(self, written: dict[int, UUID]) -> dict[UUID, int | None]:
        """What a commit that writes ``written`` (by their ``int``) relied on without writing
        it, by id: the version read (None: found absent). What it writes, the primary key
        checks; the ``targets`` it only points at are not checked."""
        read_ids = self.read_ids
        unchecked = self.unchecked
        expected: dict[UUID, int | None] = {}
        for key, version in self.versions.items():  # a loop: no comprehension's function
            if key not in written and key not in unchecked:
                expected[read_ids[key]] = version
        return expected

    def ids(self) -> list[UUID]:
        """Every aggregate the decision read so far."""
        return list(self.read_ids.values())

    def close(self) -> None:
        self.open = self.held = False
        self.preloaded = {}
        self.absent = set()
        self.versions = {}
        self.read_ids = {}
        self.targets = frozenset()
        self.unchecked = set()
        self.from_held = set()


class ReadAlong:
    """A request's ``read_along``: ids for its next query, and those it fetched absent."""

    def __init__(self) -> None:
        self.ids: list[UUID] = []
        self.absent: set[UUID] = set()


class ThreadReads(threading.local):
    """Each thread's ``DecisionReads``, made the first time the thread looks (``threading.local``
    runs ``__init__`` once in every thread that uses it)."""

    def __init__(self) -> None:
        self.reads = DecisionReads()
