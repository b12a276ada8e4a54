"""What a rebuild has written so far, so that a row it never wrote is not looked for.

A rebuild starts from empty tables, so a row is in a table only if an earlier batch of the
same rebuild wrote it. Handlers look rows up all the time, and many lookups are of rows that
do not exist yet (the conversation of a new proposal, the approval count of a first approval):
each is a query, a round trip on PostgreSQL, and they were most of the time of the projections
that make them (measured on 100,000 events: ``attention`` and ``audit_trail`` at a fifth of the
store's read rate on PostgreSQL, 40,000 lookups of rows that were not there).

``KeyFilter`` remembers the keys of the rows each batch leaves in the tables, in a fixed-size
Bloom filter per table: "not written" is always right, "written" is sometimes wrong (then the
row is looked for, as before). Memory does not grow with the log: 512 KB per table looked up
in, under 1% false "written" at 200,000 keys (a million events). The same knowledge drops
deletes of rows that were never written (``prune``), which a batch makes when a row it
created is gone again by its end.

It is only right while nothing else writes the tables: a rebuild checks, in the transaction of
every batch, that its projections' positions are where it left them, and stops otherwise, so a
batch prepared with a filter that another runner has made wrong is never committed.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

_BITS = 22  # 2**22 bits, 512 KB, per table remembered
_MASK = (1 << _BITS) - 1


class KeyFilter:
    """Per table, the keys of the rows written since the tables were emptied (approximately).

    Only tables that handlers look rows up in are worth it (most tables are only written):
    a table is remembered from the first batch after a lookup in it, and one written before
    that is never remembered (``might_hold`` always says True for it, and it is looked in as
    before): a filter that missed a batch's keys would be wrong.
    """

    def __init__(self) -> None:
        self._bits: dict[str, bytearray] = {}
        self._looked_up: set[str] = set()
        self._unknown: set[str] = set()

    def might_hold(self, table: str, key: tuple[Any, ...]) -> bool:
        """False: no row with this key was written (certain). True: one may have been."""
        bits = self._bits.get(table)
        if bits is None:
            self._looked_up.add(table)
            return table in self._unknown
        h = hash(key)
        first, second = h & _MASK, (h >> _BITS) & _MASK
        return bool(
            bits[first >> 3] & (1 << (first & 7)) and bits[second >> 3] & (1 << (second & 7))
        )

    def prune(self, written: Mapping[str, MutableMapping[tuple[Any, ...], Any]]) -> None:
        """A batch's writes (per table, key -> row, None: deleted) about to be committed:
        drop the deletes of rows no earlier batch wrote, then remember the rows it leaves."""
        for table, changes in written.items():
            if not changes or table in self._unknown:
                continue
            bits = self._bits.get(table)
            if bits is None:
                if table not in self._looked_up:
                    self._unknown.add(table)  # not remembered: never said absent
                    continue
                bits = self._bits[table] = bytearray(1 << (_BITS - 3))
            absent = [
                key
                for key, row in changes.items()
                if row is None and not self.might_hold(table, key)
            ]
            for key in absent:
                del changes[key]
            for key, row in changes.items():
                if row is not None:
                    h = hash(key)
                    first, second = h & _MASK, (h >> _BITS) & _MASK
                    bits[first >> 3] |= 1 << (first & 7)
                    bits[second >> 3] |= 1 << (second & 7)
