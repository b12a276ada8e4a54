"""The rows of the batches a writer process may not have committed yet, which the batch being
prepared reads instead of the database.

A rebuild sends up to ``WriterProcess.IN_FLIGHT`` batches to its writer process before the oldest is
answered. A batch prepared meanwhile looks its rows up in the database through a connection of
its own, which sees only committed rows: a row that a batch still in flight wrote (or deleted)
must be read from that batch's writes, the latest batch's first, or a keyed upsert would start
again from the row as it was before them.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from countersign.infrastructure.projection_engine.rows import Written, WrittenRow


class InFlight:
    """The writes of the last ``depth`` batches sent to a writer process, one ``Written`` per
    projection each; ``overlays`` gives what the next batch reads them through."""

    def __init__(self, depth: int) -> None:
        self._batches: deque[list[Written]] = deque(maxlen=depth)

    def add(self, written: list[Written]) -> None:
        """A batch was sent: its writes, one per projection, in the order of ``overlays``."""
        self._batches.append(written)

    def overlays(self) -> list[Written] | None:
        """Per projection, the rows of every batch in flight, a later batch's over an earlier
        one's (None: no batch sent yet). One batch's writes are given as they are."""
        batches = self._batches
        if not batches:
            return None
        if len(batches) == 1:
            return batches[0]
        return [_Merged(one_projection) for one_projection in zip(*batches, strict=True)]


class _Merged(dict[str, dict[tuple[Any, ...], WrittenRow | None]]):
    """Per table, several batches' writes of one projection, a later batch's over an earlier
    one's: merged when a table is first looked in, which most tables never are (they are only
    written), and then by ``dict.update`` in C, not a lookup in each batch on every read."""

    __slots__ = ("_batches",)

    def __init__(self, batches: tuple[Written, ...]) -> None:
        super().__init__()
        self._batches = batches

    def __missing__(self, table: str) -> dict[tuple[Any, ...], WrittenRow | None]:
        merged: dict[tuple[Any, ...], WrittenRow | None] = {}
        for written in self._batches:
            merged.update(written[table])
        self[table] = merged
        return merged
