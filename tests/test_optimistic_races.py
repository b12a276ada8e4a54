"""Races around optimistic reads and the read-set check: a change during the provider call,
a retried insert that had committed, a slow reader putting an old snapshot back, and a commit
that waited for the writers' lock.

Two wired instances over one database stand for two processes, as in
tests/test_optimistic_reads.py.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from uuid import UUID

import psycopg
import pytest
from countersign.domain.club.organization import Permission
from countersign.domain.proposal import Proposal
from countersign.infrastructure.persistence import pg_statements
from countersign.infrastructure.persistence.recorders import EXPECTED_VERSIONS, ReadSetChangedError
from eventsourcing.persistence import OperationalError

from tests.conftest import AVA, BEN, count_events, events_table
from tests.support import lock_waits
from tests.support.proposing import propose_on
from tests.test_optimistic_reads import Counter, _set_permissions, _stored

# -- post-claim commits ----------------------------------------------------------------------


def test_a_permission_change_during_the_provider_call_does_not_lose_the_reconciling_record(
    cs, other, seeded, monkeypatch
):
    """After the claim the decision is taken: recording what the provider did must not depend
    on the organization (read by the approval) staying unchanged while the provider answered."""
    proposal_id = propose_on(cs, seeded["orders"]["refund-lost-response"])
    payments = cs.proposals.settlement.providers["payments"]
    real_perform = payments.perform

    def perform_while_someone_edits_permissions(key, request):
        _set_permissions(other, BEN, [Permission.REFUND_ORDERS])  # unrelated to this approval
        return real_perform(key, request)

    monkeypatch.setattr(payments, "perform", perform_while_someone_edits_permissions)

    report = cs.proposals.approve(proposal_id, AVA)

    stored = cs.store.get(UUID(proposal_id), Proposal)
    assert (report.status, str(stored.status)) == ("reconciling", "reconciling")
    assert report.outcome is not None
    assert report.outcome["kind"] == "needs_reconciliation"


# -- a retried insert that had committed -----------------------------------------------------


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)  # only it retries
def test_a_retried_insert_that_had_committed_does_not_make_propose_freeze_a_second_proposal(
    cs, other, seeded, monkeypatch
):
    """The connection drops after the commit; before the library's @retry runs the insert
    again, another process changes the organization propose read. The retry is then refused
    as a stale read (not as an IntegrityError), and propose freezes the request again."""
    recorder = cs.app.recorder
    real_run = pg_statements.run_then
    dropped: list[bool] = []

    # The recorder runs its insert, and the transaction that waits for the disk after it, on
    # the connection's libpq object (pg_statements).
    def flaky_run(conn, statement, params, then):
        result = real_run(conn, statement, params, then)
        if statement is recorder._insert_statement and not dropped:
            dropped.append(True)  # committed, then the connection is lost
            _set_permissions(other, BEN, [Permission.REFUND_ORDERS])
            raise OperationalError("server closed the connection unexpectedly")
        return result

    monkeypatch.setattr(pg_statements, "run_then", flaky_run)
    before = count_events(cs, "Proposal.Proposed")

    created = propose_on(cs, seeded["orders"]["refund-ok"])

    assert dropped
    assert count_events(cs, "Proposal.Proposed") == before + 1, "one request, two proposals"
    assert cs.store.get(UUID(created), Proposal)


# -- the snapshot cache after a conflict -----------------------------------------------------


def test_after_a_lost_claim_the_answer_is_not_taken_from_a_snapshot_another_thread_put_back(
    cs, other, seeded, monkeypatch
):
    """Thread B of this process reads the proposal while another process is mid-approval
    (Claimed, before Reconciling) and stores that snapshot just after the main thread's claim
    commit failed and dropped it. The main thread's reload then answers from B's old snapshot,
    without a query, instead of from the database."""
    proposal_id = propose_on(cs, seeded["orders"]["refund-lost-response"])
    pid = UUID(proposal_id)
    snapshots = cs.store._snapshots
    real_put, real_drop = snapshots.put, snapshots.drop
    queried, may_put = threading.Event(), threading.Event()
    reader: list[threading.Thread] = []

    def put(aggregate_id, aggregate, *since):
        if threading.current_thread() in reader:
            queried.set()
            may_put.wait(10)  # B is descheduled between its query and its put
        real_put(aggregate_id, aggregate, *since)

    def drop(aggregate_id):
        real_drop(aggregate_id)
        if aggregate_id == pid and reader and not may_put.is_set():
            may_put.set()
            reader[0].join(10)

    monkeypatch.setattr(snapshots, "put", put)
    monkeypatch.setattr(snapshots, "drop", drop)
    payments = other.proposals.settlement.providers["payments"]
    real_perform = payments.perform

    def perform_while_b_reads(key, request):
        # The other process has committed its claim; B (a thread of `cs`) reads it now.
        reader.append(threading.Thread(target=lambda: cs.store.read(pid, Proposal)))
        reader[0].start()
        assert queried.wait(10)
        return real_perform(key, request)

    monkeypatch.setattr(payments, "perform", perform_while_b_reads)
    assert other.proposals.approve(proposal_id, AVA).status == "reconciling"

    report = cs.proposals.approve(proposal_id, AVA)

    assert reader
    assert not reader[0].is_alive()
    assert (report.result, report.status) == ("already_completed", "reconciling")


# -- the recorder ----------------------------------------------------------------------------


def test_the_read_set_check_sees_a_commit_made_while_it_waited_for_the_writers_lock(cs, seeded):
    """Not covered by test_optimistic_reads.py: the check must run AFTER the writers' lock is
    taken (PostgreSQL: a fresh snapshot per plpgsql statement; SQLite: BEGIN IMMEDIATE), and
    a refused commit must leave the pooled connection usable."""
    recorder = cs.app.recorder
    read = Counter()
    recorder.insert_events(_stored(cs, read))
    read.increment()
    moved = _stored(cs, read)[0]  # version 2, committed by a writer holding the lock
    written = Counter()
    writes = _stored(cs, written)
    outcome: list[object] = []

    def commit_relying_on_version_1() -> None:
        try:
            recorder.insert_events(writes, **{EXPECTED_VERSIONS: {read.id: 1}})
            outcome.append("committed")
        except Exception as error:
            outcome.append(error)

    table = events_table(cs)
    columns = "(originator_id, originator_version, topic, state)"
    if cs.database.kind == "sqlite":
        holder = sqlite3.connect(cs.database.sqlite_path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        holder.execute(
            f"INSERT INTO {table} {columns} VALUES (?, ?, ?, ?)",
            (moved.originator_id.hex, 2, moved.topic, moved.state),
        )
    else:
        holder = psycopg.connect(cs.settings.database_url)
        holder.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")
        holder.execute(
            f"INSERT INTO {table} {columns} VALUES (%s, %s, %s, %s)",
            (moved.originator_id, 2, moved.topic, moved.state),
        )
    writer = threading.Thread(target=commit_relying_on_version_1)
    writer.start()
    if cs.database.kind == "sqlite":
        time.sleep(0.3)  # a connection waiting for SQLite's lock shows it nowhere
    else:
        lock_waits.until_blocked(holder, table, lambda: bool(outcome))
    assert not outcome, "a commit went past another writer's lock"
    holder.commit()
    holder.close()
    writer.join(timeout=15)

    assert len(outcome) == 1, outcome
    assert isinstance(outcome[0], ReadSetChangedError), outcome
    assert list(recorder.select_events(written.id)) == []
    # The refused commit's connection went back to the pool without an open transaction.
    recorder.insert_events(writes)
    assert [e.originator_version for e in recorder.select_events(written.id)] == [1]
