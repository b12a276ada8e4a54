"""Which projections' tables a process knows to be in place (``TablesInPlace``), so that a
request's catch-up sends no DDL and takes no schema lock."""

from __future__ import annotations


class TablesInPlace:
    """The projections whose tables one process has made, or found in place, on one
    database, and under which ``Projection.fingerprint``: a runner built with it
    (``ProjectionRunner(in_place=...)``, what a request's catch-up builds:
    ``Countersign.catch_up``) runs ``setup`` only for a projection it does not hold.

    ``setup`` takes the schema lock and sends a dozen statements (CREATE TABLE and INDEX IF
    NOT EXISTS, the fingerprint's check): every page view did it for the inbox's two
    projections, so a rebuild's index builds (which hold the schema lock) or a writer's
    transaction on a card table (which CREATE INDEX IF NOT EXISTS waits for) made every page
    wait out the database timeout; and when nothing was new it was 19 of the catch-up's 27
    statements on PostgreSQL, 17 of 29 on SQLite (``scripts/measure_page_catch_up.py``).
    Another process may drop the tables since (a rebuild's reset, another version of
    countersign): the runner's every read of its position checks for it
    (``ProjectionRunner._checked_position``), and makes them again if need be.

    Shared by a process's request threads: each holds or adds one entry at a time (a dict's
    own operations, atomic)."""

    def __init__(self) -> None:
        self._built: dict[str, str] = {}

    def holds(self, name: str, fingerprint: str) -> bool:
        return self._built.get(name) == fingerprint

    def add(self, name: str, fingerprint: str) -> None:
        self._built[name] = fingerprint

    def forget(self, name: str) -> None:
        self._built.pop(name, None)
