"""What every sandbox provider shares: its tables in the application's database, its scripted
faults, and the way a request under an idempotency key is answered: once (a racing duplicate
is answered as the winner was), refused before anything is applied during an outage, or
applied with its answer lost on the way back."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Generic, TypeVar

from countersign.infrastructure.adapters.sandbox_faults import ScriptedFaults
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase, unique_violations

HeldT = TypeVar("HeldT")

Once = Callable[[bool], tuple[HeldT | None, bool]]
"""One transaction for a request (``declined`` by a fault script or not): what the sandbox now
holds under its key (None: an outage answered before applying anything), and whether the
answer is lost on the way back."""


class SandboxProvider(Generic[HeldT]):
    """The skeleton of a sandbox provider; a subclass names its tables and its errors."""

    name: ClassVar[str]
    """The name its EffectProvider is registered under ("payments"), and its faults' scope."""
    schema: ClassVar[tuple[str, ...]]
    postgres_schema: ClassVar[tuple[str, ...]] = ()
    """What PostgreSQL also needs (server-side functions), made after ``schema``."""
    table: ClassVar[str]
    """The requests held, by ``idempotency_key``, each with the ``requests`` it got."""
    outages_table: ClassVar[str]
    """The keys an outage already refused once: the provider has recovered for them."""
    unavailable: ClassVar[type[Exception]]
    lost: ClassVar[type[Exception]]
    unavailable_message: ClassVar[str] = "503 Service Unavailable"

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        postgres = self.postgres_schema if self.db.is_postgres else ()
        self.db.make_schema([*self.schema, *postgres])
        self.faults = ScriptedFaults(db, self.name)

    def _request(self, key: str, once: Once[HeldT]) -> HeldT:
        """``once`` under ``key``, through the key's scripted faults."""

        def request(declined: bool) -> HeldT:
            try:
                held, answer_lost = once(declined)
            except unique_violations():
                # A concurrent request with the same key won the insert: answer as it did.
                held, answer_lost = once(declined)
            if held is None:
                raise self.unavailable(self.unavailable_message)
            if answer_lost:
                raise self.lost("read timed out")
            return held

        return self.faults.around(key, request, unavailable=self.unavailable, lost=self.lost)

    def _first_outage(self, cursor: Cursor, key: str) -> bool:
        """Whether this is the outage's first request under ``key`` (it refuses that one)."""
        inserted = cursor.execute(
            f"INSERT INTO {self.outages_table} (idempotency_key) VALUES (?)"
            " ON CONFLICT (idempotency_key) DO NOTHING",
            (key,),
        ).rowcount
        return bool(inserted == 1)

    def _count_request(self, cursor: Cursor, key: str) -> None:
        """One more request under ``key`` for what is already held: answered as before."""
        cursor.execute(
            f"UPDATE {self.table} SET requests = requests + 1 WHERE idempotency_key = ?", (key,)
        )
