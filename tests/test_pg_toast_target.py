"""PostgreSQL: the events table keeps states of rows up to ``TOAST_TARGET`` bytes as they are.

PostgreSQL compresses any row over about 2 kB (a proposal's ``Proposed`` event, about 2.8 kB)
until it fits in 2 kB; the events table's ``toast_tuple_target`` raises that to
``TOAST_TARGET``. A database made by an earlier version is given it at start, as LZ4 was;
what was stored before stays as it was, reads return the same bytes either way, and a row
over the target is still compressed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.settings import Settings
from eventsourcing.persistence import StoredEvent

from tests.conftest import _truncate_postgres

pytestmark = pytest.mark.postgres


@pytest.fixture
def recorder(postgres_url: str, clock: Any) -> Iterator[Any]:
    """The PostgreSQL recorder of a fresh Countersign (PostgreSQL only: under CI an
    unreachable server fails these tests, it does not skip them)."""
    from countersign.infrastructure.persistence.recorders_postgres import (
        CountersignPostgresRecorder,
    )

    _truncate_postgres(postgres_url)
    cs: Countersign = bootstrap(Settings(database_url=postgres_url), clock=clock)
    try:
        assert isinstance(cs.app.recorder, CountersignPostgresRecorder)
        yield cs.app.recorder
    finally:
        cs.close()


def _event(originator: UUID, state: bytes) -> StoredEvent:
    return StoredEvent(originator_id=originator, originator_version=1, topic="t:E", state=state)


def _state(size: int) -> bytes:
    """A compressible JSON state of ``size`` bytes, as a proposal's is."""
    body = b"abcdefghij" * size
    return (b'{"text":"' + body)[: size - 2] + b'"}'


def _options(conn: Any, table: str) -> list[str]:
    row = conn.execute(
        "SELECT reloptions FROM pg_class WHERE oid = %s::regclass", (table,)
    ).fetchone()
    return list(row["reloptions"] or [])


def _methods(conn: Any, table: str, ids: list[UUID]) -> dict[UUID, str | None]:
    return {
        row["originator_id"]: row["method"]
        for row in conn.execute(
            f"SELECT originator_id, pg_column_compression(state) AS method FROM {table} "
            "WHERE originator_id = ANY(%s)",
            (ids,),
        )
    }


def test_states_up_to_the_target_are_stored_as_they_are_and_larger_ones_compressed(
    recorder: Any,
) -> None:
    from countersign.infrastructure.persistence.recorders_postgres import TOAST_TARGET

    table = recorder.events_table_name
    proposal_sized, over = uuid4(), uuid4()
    states = {proposal_sized: _state(2_800), over: _state(TOAST_TARGET + 500)}
    recorder.insert_events([_event(i, s) for i, s in states.items()])
    with recorder.datastore.get_connection() as conn:
        assert f"toast_tuple_target={TOAST_TARGET}" in _options(conn, table)
        methods = _methods(conn, table, list(states))
    assert methods == {proposal_sized: None, over: "lz4"}
    for originator, state in states.items():
        assert [e.state for e in recorder.select_events(originator)] == [state]


def test_a_table_made_by_an_earlier_version_takes_the_target_at_start(recorder: Any) -> None:
    table = recorder.events_table_name
    before, after = uuid4(), uuid4()
    state = _state(2_800)
    with recorder.datastore.get_connection() as conn:
        conn.execute(f"ALTER TABLE {table} RESET (toast_tuple_target)")
        assert not any(o.startswith("toast_tuple_target") for o in _options(conn, table))
    recorder.insert_events([_event(before, state)])
    recorder.create_table()
    recorder.insert_events([_event(after, state)])
    with recorder.datastore.get_connection() as conn:
        methods = _methods(conn, table, [before, after])
    assert methods == {before: "lz4", after: None}
    assert [e.state for e in recorder.select_events(before)] == [state]
    assert [e.state for e in recorder.select_events(after)] == [state]
