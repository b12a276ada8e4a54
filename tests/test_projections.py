"""Projections: exactly-once, resumable after SIGKILL, rebuildable to the same rows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.projection_engine.runner import (
    ProjectionRunner,
    ProjectionStoppedError,
    SqlRows,
    create_statements,
)
from countersign.infrastructure.projection_engine.together import rebuild_together, run_forever
from countersign.infrastructure.projection_engine.writer import WriterProcess
from countersign.projections import PROJECTIONS
from countersign.projections.base import Column, Projection, Rows, Table, handles

from tests.conftest import AVA, DRAFT, MIA, REFUND, TO_CARD
from tests.support.proposing import TO_ACCOUNT_CREDIT, propose, propose_on

CANCEL = "order.cancel_registration"
NOAH = "noah@granite.example"
DRAFT_REQUEST = {"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Hi", "body": "Hello"}


def snapshot(cs) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every projection table, in key order."""
    tables = {}
    with cs.sql.transaction() as cursor:
        for projection in PROJECTIONS.values():
            for table in projection.tables:
                order = ", ".join(table.key)
                tables[table.name] = cursor.execute(
                    f"SELECT {', '.join(table.column_names())} FROM {table.name} ORDER BY {order}"
                ).fetchall()
    return tables


def catch_up_all(cs, batch_size: int = 1000) -> None:
    for runner in cs.projection_runners(batch_size=batch_size):
        runner.catch_up()


def projected(cs, query: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """The rows ``query`` reads from the projections, once they have caught up."""
    catch_up_all(cs)
    with cs.sql.transaction() as cursor:
        return [tuple(row) for row in cursor.execute(query, params).fetchall()]


def lifecycle_history(cs, seeded, clock, after_each=lambda: None) -> dict[str, str]:
    """One proposal per outcome kind, and a pending one; then governance: a proposal replaced
    by a newer one, an edit, a two-approver refund whose success retires a pending
    cancellation, and a policy change that binds the pending refund."""
    orders = seeded["orders"]
    form = seeded["broadcast_forms"]["granite"]
    ids = {}
    ids["succeeded"] = propose_on(cs, orders["refund-ok"])
    after_each()
    cs.proposals.approve(ids["succeeded"], AVA)
    after_each()
    ids["stale"] = propose_on(cs, orders["refund-stale"])
    cs.club.refund_manually("granite", orders["refund-stale"], AVA, "P1", 34500)
    cs.proposals.approve(ids["stale"], AVA)
    after_each()
    ids["lost"] = propose_on(cs, orders["refund-lost-response"])
    cs.proposals.approve(ids["lost"], AVA)
    after_each()
    ids["declined"] = propose_on(cs, form, DRAFT_REQUEST, operation=DRAFT)
    cs.proposals.decline(ids["declined"], AVA, note="not this week")
    after_each()
    ids["card_declined"] = propose_on(cs, orders["refund-declined"])
    cs.proposals.approve(ids["card_declined"], AVA)
    cs.sweepers.reconcile()  # settles the lost response: succeeded
    after_each()
    ids["replaced"] = propose_on(cs, form, DRAFT_REQUEST, operation=DRAFT)
    ids["replacing"] = propose_on(cs, form, {**DRAFT_REQUEST, "subject": "Hi all"}, operation=DRAFT)
    after_each()
    ids["revision"] = cs.proposals.revise(
        ids["replacing"], AVA, {**DRAFT_REQUEST, "subject": "Hello all"}
    ).proposal_id
    after_each()
    # A cancellation's success retires the order's pending refund.
    ids["retired"] = propose_on(cs, orders["provider-outage"])
    ids["cancelled"] = propose_on(
        cs, orders["provider-outage"], {"destination": "account_credit"}, operation=CANCEL
    )
    assert cs.proposals.approve(ids["cancelled"], AVA).status == "succeeded"
    after_each()
    ids["two_approvers"] = propose_on(cs, orders["refund-two-approvers"])
    assert cs.proposals.approve(ids["two_approvers"], AVA).result == "awaiting_approvals"
    after_each()
    assert cs.proposals.approve(ids["two_approvers"], NOAH).status == "succeeded"
    after_each()
    cs.policies.set("granite", REFUND, 1, above_cents=None, requester_may_approve=False)
    ids["pending"] = propose_on(cs, orders["account-credit"], TO_ACCOUNT_CREDIT)
    ids["maple"] = propose_on(cs, orders["maple-refund"], actor=MIA, organization="maple")
    after_each()
    return ids


def test_a_rebuild_equals_the_incrementally_built_tables(cs, seeded, clock):
    lifecycle_history(cs, seeded, clock, after_each=lambda: catch_up_all(cs, batch_size=3))
    catch_up_all(cs, batch_size=3)
    incremental = snapshot(cs)
    assert len(incremental["proposal_cards"]) == 13
    assert len(incremental["audit_events"]) > 13
    assert len(incremental["policy_changes"]) == 2  # the seed's, and the history's
    assert len(incremental["proposal_approvals"]) == 7

    for runner in cs.projection_runners():
        runner.reset()
        runner.catch_up()

    assert snapshot(cs) == incremental
    statuses = [runner.status() for runner in cs.projection_runners()]
    assert {status.lag for status in statuses} == {0}


def test_cards_and_handback_speak_english_and_french_for_every_outcome(cs, seeded, clock):
    ids = lifecycle_history(cs, seeded, clock)
    catch_up_all(cs)
    org = seeded["organizations"][0]["id"]
    cards = {name: cs.read_models.card(org, pid) for name, pid in ids.items() if name != "maple"}

    assert cards["succeeded"]["message_en"].startswith("Refunded $48.00 CAD")
    assert cards["succeeded"]["message_fr"].startswith("Remboursement de 48,00\u00a0$\u00a0CA")
    assert "already been refunded" in cards["stale"]["message_en"]
    assert "a déjà été remboursé" in cards["stale"]["message_fr"]
    assert cards["declined"]["status"] == "declined"
    assert "declined this proposal" in cards["declined"]["message_en"]
    assert "a refusé cette proposition" in cards["declined"]["message_fr"]
    assert "card provider declined the refund" in cards["card_declined"]["message_en"]
    assert "fournisseur de paiement a refusé" in cards["card_declined"]["message_fr"]
    assert cards["pending"]["message_en"] is None

    # The lost response first said "needs reconciliation", then the reconciler's success.
    lost = cs.cards.card(ids["lost"], AVA)
    messages = cs.read_models.handback(org, lost.interaction_id)
    assert [m["outcome_kind"] for m in messages] == ["needs_reconciliation", "succeeded"]
    assert "Do not refund again, by hand or otherwise." in messages[0]["text_en"]
    assert "Ne remboursez pas de nouveau, ni à la main ni autrement." in messages[0]["text_fr"]
    assert "reconciler" not in messages[0]["text_en"]  # plain words, not the machinery's
    assert "/api/" not in messages[0]["text_en"] + messages[0]["text_fr"]
    assert messages[1]["text_fr"].startswith("Remboursement")


def test_terminal_failures_are_localized_with_their_correlation_id(cs, seeded):
    from countersign.domain.messages import outcome_message

    failure = {"kind": "terminal_failure", "correlation_id": "cs-0123456789abcdef"}
    english = outcome_message(REFUND, {}, failure, "en")
    french = outcome_message(REFUND, {}, failure, "fr")
    assert "cs-0123456789abcdef" in english
    assert "will not be retried" in english
    assert "cs-0123456789abcdef" in french
    assert "ne sera pas relancée" in french


def test_declined_and_revision_required_leave_bounded_revision_context(cs, seeded, clock):
    ids = lifecycle_history(cs, seeded, clock)
    catch_up_all(cs)
    org = seeded["organizations"][0]["id"]
    declined = cs.cards.card(ids["declined"], AVA)
    context = cs.read_models.revision_context(org, declined.interaction_id)
    assert context["reason_code"] == "declined_by_manager"
    assert len(context["context_en"]) <= 600
    assert "was not executed" in context["context_en"]
    # Another organization cannot read it.
    maple = seeded["organizations"][1]["id"]
    assert cs.read_models.revision_context(maple, declined.interaction_id) is None
    assert cs.read_models.handback(maple, declined.interaction_id) == []


def test_the_inbox_is_per_tenant_newest_first_paged_and_hides_expired(cs, seeded, clock):
    orders = seeded["orders"]
    first = propose_on(cs, orders["refund-ok"])
    time.sleep(0.01)
    second = propose_on(cs, orders["refund-stale"])
    time.sleep(0.01)
    draft = propose_on(cs, seeded["broadcast_forms"]["granite"], DRAFT_REQUEST, operation=DRAFT)
    maple = propose_on(cs, orders["maple-refund"], actor=MIA, organization="maple")
    catch_up_all(cs)
    granite_id, maple_id = (o["id"] for o in seeded["organizations"])
    now = clock.now()

    inbox = cs.read_models.inbox(granite_id, now)
    assert [card["proposal_id"] for card in inbox["items"]] == [draft, second, first]
    assert inbox["total"] == 3
    page2 = cs.read_models.inbox(granite_id, now, page=2, page_size=2)
    assert [card["proposal_id"] for card in page2["items"]] == [first]
    orders_only = cs.read_models.inbox(granite_id, now, section="orders")
    assert [card["proposal_id"] for card in orders_only["items"]] == [second, first]
    assert [c["proposal_id"] for c in cs.read_models.inbox(maple_id, now)["items"]] == [maple]

    cs.proposals.approve(second, AVA)
    catch_up_all(cs)
    assert cs.read_models.inbox(granite_id, now)["total"] == 2
    later = now.replace(year=now.year + 1)
    assert cs.read_models.inbox(granite_id, later)["items"] == []


class _Fragile(Projection):
    """A projection whose handler fails until it is 'fixed'."""

    name = "fragile"
    tables = (
        Table("fragile_rows", (Column("proposal_id"), Column("n", "int")), key=("proposal_id",)),
    )
    broken = True

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        if self.broken:
            raise RuntimeError("bug in the handler")
        rows.put("fragile_rows", {"proposal_id": str(event.originator_id), "n": position})

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        rows.put("fragile_rows", {"proposal_id": str(event.originator_id), "n": 0})


def test_a_projection_stops_at_the_event_it_cannot_process_and_resumes_once_fixed(cs, seeded):
    proposal_id = propose(cs, seeded, "refund-ok")
    cs.proposals.approve(proposal_id, AVA)
    projection = _Fragile()
    runner = ProjectionRunner(cs.app, cs.sql, projection, batch_size=1)

    with pytest.raises(ProjectionStoppedError) as stopped:
        runner.catch_up()

    message = str(stopped.value)
    approved_at = runner.position() + 1
    assert f"stopped at notification {approved_at}" in message
    assert "Proposal.Approved" in message
    assert "resumes from this event" in message
    assert runner.position() == approved_at - 1  # nothing skipped

    projection.broken = False
    runner.catch_up()
    assert runner.status().lag == 0
    with cs.sql.transaction() as cursor:
        n = cursor.execute("SELECT n FROM fragile_rows WHERE proposal_id = ?", (proposal_id,))
        assert n.fetchone()[0] == approved_at


def test_two_writers_and_a_runner_concurrently(cs, seeded, database_url):
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Settings

    stop = threading.Event()
    runner_cs = bootstrap(Settings(database_url=database_url))
    follower = threading.Thread(
        target=run_forever, args=(runner_cs.projection_runners(batch_size=50), stop, 0.01)
    )
    follower.start()
    form = seeded["broadcast_forms"]["granite"]
    errors: list[BaseException] = []
    statuses: list[str] = []

    def writer() -> None:
        other = None
        try:
            other = bootstrap(Settings(database_url=database_url))
            for _ in range(15):
                pid = propose_on(other, form, DRAFT_REQUEST, operation=DRAFT)
                # The other writer's draft, frozen in between, may have superseded this one.
                statuses.append(other.proposals.approve(pid, AVA).status or "")
        except BaseException as error:
            errors.append(error)
        finally:
            if other is not None:
                other.close()

    writers = [threading.Thread(target=writer) for _ in range(2)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    deadline = time.monotonic() + 20
    while any(r.status().lag for r in cs.projection_runners()) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    follower.join()
    runner_cs.close()

    assert errors == []
    live = snapshot(cs)
    assert len(live["proposal_cards"]) == 30
    cards = sorted(row[7] for row in live["proposal_cards"])  # status column
    assert cards == sorted(statuses)
    assert set(cards) <= {"succeeded", "superseded"}
    for runner in cs.projection_runners():
        runner.reset()
        runner.catch_up()
    assert snapshot(cs) == live


def test_a_runner_killed_mid_stream_resumes_with_no_duplicate_or_missing_row(
    cs, seeded, database_url
):
    form = seeded["broadcast_forms"]["granite"]
    lifecycles = 200
    for _ in range(lifecycles):
        pid = propose_on(cs, form, DRAFT_REQUEST, operation=DRAFT)
        cs.proposals.approve(pid, AVA)
    head = cs.projection_runners(["audit_trail"])[0].head()

    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "countersign.infrastructure.entrypoints.cli",
            "projections",
            "run",
            "--batch-size",
            "2",  # about 2,000 small commits: too many to finish before the kill
            "--database",
            database_url,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            positions = [r.position() for r in cs.projection_runners()]
            if min(positions) > 0:
                break
            time.sleep(0.005)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    killed_at = [r.position() for r in cs.projection_runners()]
    assert min(killed_at) < head, "the runner finished before it could be killed"

    catch_up_all(cs, batch_size=7)
    resumed = snapshot(cs)
    assert len(resumed["audit_events"]) == lifecycles * 5  # Proposed..Succeeded, each once
    assert len(resumed["proposal_cards"]) == lifecycles
    for runner in cs.projection_runners():
        runner.reset()
        runner.catch_up()
    assert snapshot(cs) == resumed


def create_tracked(database, dialect, *tables) -> None:
    """Create ``tables`` and their tracking rows at position 0, as a runner would."""
    with database.transaction() as cursor:
        for table in tables:
            for statement in create_statements(table, dialect):
                cursor.execute(statement)
            cursor.execute(
                "INSERT INTO projection_tracking (projection, position) VALUES (?, 0)"
                " ON CONFLICT (projection) DO NOTHING",
                (table.name,),
            )


def test_sql_rows_round_trip_every_column_type(cs):
    from datetime import UTC, datetime

    table = Table(
        "typed_rows",
        (
            Column("k"),
            Column("i", "int"),
            Column("b", "bool"),
            Column("t", "time"),
            Column("j", "json"),
            Column("r", "real"),
        ),
        key=("k",),
    )
    dialect = "postgres" if cs.sql.is_postgres else "sqlite"
    row = {
        "k": "a",
        "i": 2**40,
        "b": True,
        "t": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "j": {"x": [1, "é"]},
        "r": 1.5,
    }
    other = SqlDatabase(cs.database)
    try:
        with other.transaction() as cursor:
            for statement in create_statements(table, dialect):
                cursor.execute(statement)
            rows = SqlRows(cursor, [table], dialect)
            rows.put("typed_rows", row)
            rows.flush()
        with other.transaction() as cursor:
            assert SqlRows(cursor, [table], dialect).get("typed_rows", ("a",)) == row
    finally:
        other.close()


def test_rebuilding_together_equals_the_incrementally_built_tables(cs, seeded, clock):
    lifecycle_history(cs, seeded, clock, after_each=lambda: catch_up_all(cs, batch_size=3))
    catch_up_all(cs, batch_size=3)
    incremental = snapshot(cs)

    runners = cs.projection_runners(batch_size=4)  # many batches, each split across events
    events = rebuild_together(runners)

    assert events == runners[0].head()
    assert snapshot(cs) == incremental
    assert {runner.status().lag for runner in cs.projection_runners()} == {0}


def test_rebuilding_together_stops_at_the_event_a_projection_cannot_process(cs, seeded):
    proposal_id = propose(cs, seeded, "refund-ok")
    cs.proposals.approve(proposal_id, AVA)
    fragile = _Fragile()
    runners = [*cs.projection_runners(batch_size=1000), ProjectionRunner(cs.app, cs.sql, fragile)]

    with pytest.raises(ProjectionStoppedError) as stopped:
        rebuild_together(runners)

    assert "projection 'fragile' stopped at notification" in str(stopped.value)
    assert "Proposal.Approved" in str(stopped.value)
    # The batch was applied to no projection: every one resumes from the same place.
    assert {runner.position() for runner in runners} == {0}
    fragile.broken = False
    for runner in runners:
        runner.catch_up()
    assert {runner.status().lag for runner in runners} == {0}
    rebuilt = snapshot(cs)
    for runner in cs.projection_runners():
        runner.reset()
        runner.catch_up()
    assert snapshot(cs) == rebuilt


_MIXED = Table(
    "mixed_rows",
    (
        Column("k"),
        Column("n", "int"),
        Column("t", "time"),
        Column("j", "json"),
        Column("r", "real"),
        Column("note"),
    ),
    key=("k", "n"),
)


def _mixed_row(i: int) -> dict[str, Any]:
    from datetime import UTC, datetime, timedelta, timezone

    offset = timezone(timedelta(hours=-5)) if i % 3 else UTC  # stored as the same instant
    return {
        "k": f"k{i % 7}",
        "n": i,
        "t": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).astimezone(offset) if i % 5 else None,
        "j": {"i": i, "list": [i, "é"]} if i % 4 else None,
        "r": i if i % 2 else i + 0.5,  # ints and floats in one column
        "note": None if i % 6 == 0 else f"note {i}",
    }


def test_sql_rows_write_many_rows_in_one_flush_and_read_them_back(cs):
    dialect = "postgres" if cs.sql.is_postgres else "sqlite"
    other = SqlDatabase(cs.database)
    try:
        with other.transaction() as cursor:
            for statement in create_statements(_MIXED, dialect):
                cursor.execute(statement)
            rows = SqlRows(cursor, [_MIXED], dialect)
            for i in range(230):  # more rows than one SQLite statement takes
                rows.put("mixed_rows", _mixed_row(i))
            assert rows.flush() == 230
        with other.transaction() as cursor:
            rows = SqlRows(cursor, [_MIXED], dialect)
            for i in range(0, 230, 3):
                rows.delete("mixed_rows", (f"k{i % 7}", i))
            changed = rows.update("mixed_rows", ("k1", 1), note="changed", r=2)
            assert changed is not None
            assert changed["note"] == "changed"
            with pytest.raises(TypeError):
                changed["note"] = "read-only"  # type: ignore[index]
            assert rows.update("mixed_rows", ("k0", 0), note="gone") is None  # deleted above
            assert rows.get("mixed_rows", ("k0", 0)) is None
            rows.put("mixed_rows", {**_mixed_row(3), "note": "put again"})
            for i in range(230, 360):  # a second bulk write: nothing of the first comes back
                rows.put("mixed_rows", _mixed_row(i))
            rows.flush()
        with other.transaction() as cursor:
            rows = SqlRows(cursor, [_MIXED], dialect)
            for i in range(360):
                expected = _mixed_row(i)
                if i % 3 == 0 and i not in (3, *range(230, 360)):
                    expected = None
                elif i == 1:
                    expected.update(note="changed", r=2)
                elif i == 3:
                    expected["note"] = "put again"
                found = rows.get("mixed_rows", (f"k{i % 7}", i))
                assert (None if found is None else dict(found)) == expected, i
    finally:
        other.close()


def test_sql_rows_refuse_rows_that_do_not_match_the_table(cs):
    dialect = "postgres" if cs.sql.is_postgres else "sqlite"
    with cs.sql.transaction() as cursor:
        rows = SqlRows(cursor, [_MIXED], dialect)
        with pytest.raises(ValueError, match="exactly the columns"):
            rows.put("mixed_rows", {"k": "a", "n": 1})
        with pytest.raises(ValueError, match="exactly the columns"):
            rows.put("mixed_rows", {**_mixed_row(1), "extra": 1})
        with pytest.raises(ValueError, match="has no column"):
            rows.update("mixed_rows", ("a", 1), colour="red")


def test_a_row_with_a_misnamed_column_is_refused_before_anything_is_written(cs):
    """``put`` counts a row's columns and finds its key; a column the table does not have,
    in a row of the right count, is refused when the batch is packed, before any write."""
    dialect = "postgres" if cs.sql.is_postgres else "sqlite"
    misnamed = {**_mixed_row(1)}
    misnamed["colour"] = misnamed.pop("note")
    other = SqlDatabase(cs.database)
    try:
        with other.transaction() as cursor:
            for statement in create_statements(_MIXED, dialect):
                cursor.execute(statement)
            rows = SqlRows(cursor, [_MIXED], dialect)
            rows.put("mixed_rows", _mixed_row(2))
            rows.put("mixed_rows", misnamed)
            with pytest.raises(ValueError, match="exactly the columns"):
                rows.flush()
            with pytest.raises(ValueError, match="exactly the columns"):
                rows.pack()
            keyless = {**_mixed_row(3)}
            keyless["key"] = keyless.pop("k")
            with pytest.raises(ValueError, match="exactly the columns"):
                rows.put("mixed_rows", keyless)
            assert cursor.execute("SELECT count(*) FROM mixed_rows").fetchone()[0] == 0
    finally:
        other.close()


class _Misnamed(Projection):
    """A projection whose ``Approved`` handler puts a row with a column its table lacks."""

    name = "misnamed"
    tables = (
        Table("misnamed_rows", (Column("proposal_id"), Column("n", "int")), key=("proposal_id",)),
    )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        rows.put("misnamed_rows", {"proposal_id": str(event.originator_id), "n": position})

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        rows.put("misnamed_rows", {"proposal_id": str(event.originator_id), "m": position})


@pytest.mark.parametrize("together", [False, True])
def test_a_misnamed_column_stops_the_projection_at_its_batch(cs, seeded, together):
    """Found when the batch is packed (``stops.end_batch``): the projection stops at the
    batch's last event with the table's columns named, and nothing of the batch is written."""
    proposal_id = propose(cs, seeded, "refund-ok")
    cs.proposals.approve(proposal_id, AVA)
    runner = ProjectionRunner(cs.app, cs.sql, _Misnamed())
    run = (lambda: rebuild_together([runner])) if together else runner.catch_up
    with pytest.raises(ProjectionStoppedError) as stopped:
        run()
    assert "projection 'misnamed' stopped at notification" in str(stopped.value)
    assert "ValueError" in str(stopped.value)
    assert "exactly the columns ['n', 'proposal_id']" in str(stopped.value.__cause__)
    assert runner.position() == 0
    with cs.sql.transaction() as cursor:
        assert cursor.execute("SELECT count(*) FROM misnamed_rows").fetchone()[0] == 0


def test_stored_messages_are_the_domains_own_in_both_languages(cs, seeded, clock):
    from countersign.domain.messages import outcome_message, outcome_messages

    lifecycle_history(cs, seeded, clock)
    catch_up_all(cs)
    with cs.sql.transaction() as cursor:
        cards = cursor.execute(
            "SELECT proposal_id FROM proposal_cards WHERE outcome_kind IS NOT NULL"
        ).fetchall()
    org = seeded["organizations"][0]["id"]
    kinds = set()
    for (proposal_id,) in cards:
        card = cs.read_models.card(org, proposal_id)
        kinds.add(card["outcome_kind"])
        for language in ("en", "fr"):
            expected = outcome_message(
                card["operation"], card["preview"], card["outcome"], language
            )
            assert card[f"message_{language}"] == expected
    assert {"succeeded", "revision_required"} <= kinds
    failure = {"kind": "terminal_failure", "correlation_id": "cs-0123456789abcdef"}
    reconciling = {"kind": "needs_reconciliation"}
    for stored in (failure, reconciling):
        assert outcome_messages(REFUND, {}, stored) == tuple(
            outcome_message(REFUND, {}, stored, language) for language in ("en", "fr")
        )


def test_an_append_only_table_refuses_a_second_put_update_or_delete(cs, seeded):
    log = Table("log_rows", (Column("n", "int"), Column("text")), key=("n",), append_only=True)
    with cs.sql.transaction() as cursor:
        for statement in create_statements(log, "postgres" if cs.sql.is_postgres else "sqlite"):
            cursor.execute(statement)
        rows = SqlRows(cursor, [log], "postgres" if cs.sql.is_postgres else "sqlite")
        rows.put("log_rows", {"n": 1, "text": "one"})
        with pytest.raises(ValueError, match="append-only"):
            rows.put("log_rows", {"n": 1, "text": "again"})
        with pytest.raises(ValueError, match="append-only"):
            rows.update("log_rows", (1,), text="changed")
        with pytest.raises(ValueError, match="append-only"):
            rows.delete("log_rows", (1,))
        rows.flush()
    with cs.sql.transaction() as cursor:
        assert cursor.execute("SELECT n, text FROM log_rows").fetchall() == [(1, "one")]


def test_a_row_an_append_only_table_already_holds_stops_the_projection_by_name(cs, seeded):
    """Rows written by an earlier batch are not in the batch's memory: the database refuses
    the second insert, and the projection stops naming itself, with nothing of the batch."""
    runner = cs.projection_runners(["audit_trail"])[0]
    propose(cs, seeded, "refund-ok", request=TO_CARD)
    runner.catch_up()
    with cs.sql.transaction() as cursor:
        cursor.execute("DELETE FROM projection_tracking WHERE projection = ?", ("audit_trail",))
        cursor.execute(
            "INSERT INTO projection_tracking (projection, position) VALUES (?, 0)",
            ("audit_trail",),
        )
    runner.known_position = None
    with pytest.raises(ProjectionStoppedError, match="audit_trail"):
        runner.catch_up()
    assert runner.position() == 0


# -- long rebuilds: batches written by a writer process ------------------------------------


@pytest.mark.parametrize("batch_size", [1, 4, 1000])
def test_a_rebuild_with_a_writer_process_equals_the_incrementally_built_tables(
    cs, seeded, clock, batch_size
):
    """Each batch is prepared while the last one is written by the other process: rows the
    handlers read from the batch still in flight (a card updated by the next event, say)
    must come out as if written one batch at a time."""
    lifecycle_history(cs, seeded, clock, after_each=lambda: catch_up_all(cs, batch_size=3))
    catch_up_all(cs, batch_size=3)
    incremental = snapshot(cs)

    for runner in cs.projection_runners(batch_size=batch_size):
        assert runner.rebuild(parallel=True) == runner.head()
    assert snapshot(cs) == incremental

    runners = cs.projection_runners(batch_size=batch_size)
    assert rebuild_together(runners, parallel=True) == runners[0].head()
    assert snapshot(cs) == incremental
    assert {runner.status().lag for runner in cs.projection_runners()} == {0}


def test_a_writer_process_stops_at_the_event_a_projection_cannot_process(cs, seeded):
    proposal_id = propose(cs, seeded, "refund-ok")
    cs.proposals.approve(proposal_id, AVA)
    fragile = _Fragile()
    runners = [*cs.projection_runners(batch_size=2), ProjectionRunner(cs.app, cs.sql, fragile, 2)]

    with pytest.raises(ProjectionStoppedError) as stopped:
        rebuild_together(runners, parallel=True)

    assert "projection 'fragile' stopped at notification" in str(stopped.value)
    approved_at = int(str(stopped.value).split("notification ")[1].split(" ")[0])
    # Every batch before the failing one was committed, for every projection alike.
    positions = {runner.position() for runner in runners}
    assert len(positions) == 1
    assert positions.pop() < approved_at
    fragile.broken = False
    for runner in runners:
        runner.catch_up()
    rebuilt = snapshot(cs)
    for runner in cs.projection_runners():
        runner.reset()
        runner.catch_up()
    assert snapshot(cs) == rebuilt


def test_a_row_refused_in_the_writer_process_stops_the_projection_by_name(cs, seeded):
    propose(cs, seeded, "refund-ok", request=TO_CARD)
    runner = cs.projection_runners(["audit_trail"])[0]
    catch_up_all(cs)
    runner.rebuild(parallel=True)
    before = snapshot(cs)
    # An append-only row is already there when the writer inserts it again.
    runner.setup()
    with cs.sql.transaction() as cursor:
        cursor.execute(
            "UPDATE projection_tracking SET position = 0 WHERE projection = ?", ("audit_trail",)
        )
    runner.known_position = None

    writer = WriterProcess(cs.sql.database, runner.dialect, {runner.name: runner.projection.tables})
    try:
        with pytest.raises(ProjectionStoppedError, match=r"audit_trail.*already there"):
            runner._catch_up_with(writer, None)
    finally:
        writer.close()

    assert runner.position() == 0
    assert snapshot(cs) == before


def test_a_killed_writer_process_stops_the_rebuild_which_then_resumes(cs, seeded, monkeypatch):

    form = seeded["broadcast_forms"]["granite"]
    for _ in range(30):
        cs.proposals.approve(propose_on(cs, form, DRAFT_REQUEST, operation=DRAFT), AVA)
    catch_up_all(cs)
    complete = snapshot(cs)
    sent: list[int] = []
    submit = WriterProcess.submit

    def submit_then_kill(self, position, last, batches):
        submit(self, position, last, batches)
        sent.append(last)
        if len(sent) == 3:
            self._process.kill()

    monkeypatch.setattr(WriterProcess, "submit", submit_then_kill)
    runner = cs.projection_runners(["audit_trail"], batch_size=10)[0]
    with pytest.raises(ProjectionStoppedError, match="writer process ended unexpectedly"):
        runner.rebuild(parallel=True)

    # What was committed is whole batches, in order; the rest is simply done again.
    assert runner.position() in (0, *sent[:3])
    monkeypatch.undo()
    runner.catch_up()
    runner.create_indexes()
    assert snapshot(cs)["audit_events"] == complete["audit_events"]


@pytest.mark.parametrize("together", [False, True])
def test_a_rebuild_leaves_every_declared_index_in_place(cs, seeded, together):
    """Indexes are dropped with the tables and built once at the end (on PostgreSQL all at
    once, one connection each): every one a projection declares is there afterwards."""
    propose(cs, seeded, "refund-ok")
    runners = cs.projection_runners()
    if together:
        rebuild_together(runners, parallel=True)
    else:
        for runner in runners:
            runner.rebuild(parallel=False)
    declared = {
        f"{table.name}_{'_'.join(index)}_idx"
        for runner in runners
        for table in runner.projection.tables
        for index in table.indexes
    }
    with cs.sql.transaction() as cursor:
        if cs.sql.is_postgres:
            rows = cursor.execute("SELECT indexname FROM pg_indexes").fetchall()
        else:
            rows = cursor.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    assert declared
    assert declared <= {name for (name,) in rows}


def test_values_shared_by_rows_of_one_batch_are_stored_as_each_alone_would_be(cs):
    """A batch's time and JSON texts are made once per object, for every table of the batch
    (``codecs._texts``): a time or a preview shared by several rows and tables, an empty list,
    and equal values that are different objects are stored exactly as each alone would be
    (SQLite: orjson's sorted JSON and ISO text of the UTC time)."""
    from datetime import UTC, datetime, timedelta, timezone

    import orjson
    from countersign.infrastructure.projection_engine.rows import commit_batch

    sort = orjson.OPT_SORT_KEYS

    columns = (Column("k"), Column("t", "time"), Column("j", "json"), Column("e", "json"))
    first, second = Table("shared_a", columns, key=("k",)), Table("shared_b", columns, key=("k",))
    dialect = "postgres" if cs.sql.is_postgres else "sqlite"
    at = datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC)
    elsewhere = at.astimezone(timezone(timedelta(hours=-5)))  # the same instant
    preview = {"z": 1, "a": ["é", {"y": None, "b": 2.5}]}
    rows_a = [
        ("a1", at, preview, []),
        ("a2", elsewhere, dict(preview), [1]),
        ("a3", None, None, []),
    ]
    rows_b = [("b1", at, preview, []), ("b2", at, {"other": True}, None)]
    other = SqlDatabase(cs.database)
    try:
        create_tracked(other, dialect, first, second)
        with other.transaction() as cursor:
            commit_batch(
                cursor,
                [
                    (name, SqlRows.of_packed(cursor, [table], dialect, {table.name: (puts, [])}))
                    for name, table, puts in (
                        ("shared_a", first, rows_a),
                        ("shared_b", second, rows_b),
                    )
                ],
                0,
                7,
                postgres=cs.sql.is_postgres,
            )
        with other.transaction() as cursor:
            for table, puts in ((first, rows_a), (second, rows_b)):
                reader = SqlRows(cursor, [table], dialect)
                for k, t, j, e in puts:
                    expected = {"k": k, "t": t and t.astimezone(UTC), "j": j, "e": e}
                    assert dict(reader.get(table.name, (k,)) or {}) == expected
                if dialect == "sqlite":
                    stored = cursor.execute(f"SELECT k, t, j, e FROM {table.name} ORDER BY k")
                    assert stored.fetchall() == [
                        (
                            k,
                            None if t is None else t.astimezone(UTC).isoformat(),
                            None if j is None else orjson.dumps(j, option=sort).decode(),
                            None if e is None else orjson.dumps(e, option=sort).decode(),
                        )
                        for k, t, j, e in puts
                    ]
            cursor.execute(
                "DELETE FROM projection_tracking WHERE projection IN (?, ?)",
                ("shared_a", "shared_b"),
            )
    finally:
        other.close()


def test_a_batch_deleting_many_rows_deletes_exactly_those(cs):
    """SQLite deletes a hundred keys of a one-column key per statement, the rest one by one
    (``SqlRows._delete_sqlite``); PostgreSQL all in one. Keys of rows never written go too."""
    from countersign.infrastructure.projection_engine.rows import commit_batch

    one = Table("deleting_one", (Column("k"), Column("v", "int")), key=("k",))
    two = Table(
        "deleting_two", (Column("k"), Column("n", "int"), Column("v", "int")), key=("k", "n")
    )
    dialect = "postgres" if cs.sql.is_postgres else "sqlite"
    puts = {one.name: [(f"k{i}", i) for i in range(260)], two.name: []}
    puts[two.name] = [(f"k{i}", i % 3, i) for i in range(260)]
    other = SqlDatabase(cs.database)

    def commit(position, last, packed):
        with other.transaction() as cursor:
            commit_batch(
                cursor,
                [
                    (table.name, SqlRows.of_packed(cursor, [table], dialect, packed[table.name]))
                    for table in (one, two)
                ],
                position,
                last,
                postgres=cs.sql.is_postgres,
            )

    try:
        create_tracked(other, dialect, one, two)
        commit(0, 1, {name: {name: (rows, [])} for name, rows in puts.items()})
        # 250 deletes: two statements of a hundred and 50 one by one; 5 of them never written.
        gone = {
            one.name: [(f"k{i}",) for i in (*range(5, 250), *range(1000, 1005))],
            two.name: [(f"k{i}", i % 3) for i in (*range(5, 250), *range(1000, 1005))],
        }
        commit(1, 2, {name: {name: ([], keys)} for name, keys in gone.items()})
        with other.transaction() as cursor:
            left = cursor.execute(f"SELECT k, v FROM {one.name} ORDER BY v").fetchall()
            assert [tuple(row) for row in left] == [
                (f"k{i}", i) for i in (*range(5), *range(250, 260))
            ]
            left = cursor.execute(f"SELECT k, n, v FROM {two.name} ORDER BY v").fetchall()
            assert [tuple(row) for row in left] == [
                (f"k{i}", i % 3, i) for i in (*range(5), *range(250, 260))
            ]
            cursor.execute(
                "DELETE FROM projection_tracking WHERE projection IN (?, ?)",
                (one.name, two.name),
            )
            for table in (one, two):
                cursor.execute(f"DROP TABLE {table.name}")
    finally:
        other.close()
