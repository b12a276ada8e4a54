"""An upgrade that changes a projection rebuilds its tables by itself: each projection records
the fingerprint of the code that built its tables (``projection_schemas``), and a runner that
finds another one drops them and replays the log, so no deployment is left with tables its new
handlers cannot write."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from countersign.infrastructure.projection_engine.runner import (
    ProjectionRunner,
    ProjectionStoppedError,
    TablesInPlace,
)
from countersign.projections.base import Column, Projection, Rows, Table, handles

from tests.conftest import AVA
from tests.support.proposing import propose_on
from tests.test_upgrade_fixture import upgraded  # noqa: F401 (a fixture)


class _Proposals(Projection):
    """Version 1: one row per proposal with its operation."""

    name = "upgraded_proposals"
    columns: ClassVar[tuple[Column, ...]] = (Column("proposal_id"), Column("operation"))
    tables = (Table("upgraded_rows", columns, key=("proposal_id",)),)

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        rows.put("upgraded_rows", self.row(event))

    def row(self, event: Any) -> dict[str, Any]:
        return {"proposal_id": str(event.originator_id), "operation": event.kind}


class _WithRequester(_Proposals):
    """Version 2: a new column, which the old table does not have."""

    tables = (
        Table(
            "upgraded_rows",
            (*_Proposals.columns, Column("requested_by")),
            key=("proposal_id",),
        ),
    )

    def row(self, event: Any) -> dict[str, Any]:
        return {**super().row(event), "requested_by": event.requested_by}


class _Uppercase(_WithRequester):
    """The same table, written differently: its version says so."""

    version = 2

    def row(self, event: Any) -> dict[str, Any]:
        return {**super().row(event), "operation": event.kind.upper()}


def _rows(cs) -> list[tuple[Any, ...]]:
    with cs.sql.transaction() as cursor:
        return cursor.execute("SELECT * FROM upgraded_rows ORDER BY proposal_id").fetchall()


def test_tables_built_by_other_code_are_dropped_and_rebuilt_on_the_next_catch_up(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])
    first = ProjectionRunner(cs.app, cs.sql, _Proposals())
    first.catch_up()
    assert _rows(cs) == [(proposal_id, "order.refund_missing_discount")]

    # The same code again: nothing is rebuilt.
    again = ProjectionRunner(cs.app, cs.sql, _Proposals())
    assert again.position() == first.position() > 0

    # A new column: the table is recreated and the log replayed into it.
    widened = ProjectionRunner(cs.app, cs.sql, _WithRequester())
    assert widened.position() == 0
    widened.catch_up()
    assert _rows(cs) == [(proposal_id, "order.refund_missing_discount", AVA)]

    # Same tables, new version: the handlers' new rows replace the old ones.
    rewritten = ProjectionRunner(cs.app, cs.sql, _Uppercase())
    assert rewritten.position() == 0
    rewritten.catch_up()
    assert _rows(cs) == [(proposal_id, "ORDER.REFUND_MISSING_DISCOUNT", AVA)]
    assert rewritten.status().lag == 0


def test_a_process_that_knew_the_tables_in_place_sees_another_build_rebuilt_them(cs, seeded):
    """A page's runner (``in_place``) makes no table once its process made them; its first
    read of the position still finds that another build rebuilt them since. It does not take
    them back (before, it dropped them for its own code, and the other build's next batch
    dropped them again, and so on): it stops there; a process of its build that starts
    takes them for its code, as at any start."""
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])
    in_place = TablesInPlace()
    ProjectionRunner(cs.app, cs.sql, _Proposals(), in_place=in_place).catch_up()
    assert in_place.holds("upgraded_proposals", _Proposals().fingerprint())

    # Another process, of another build with the same version: a new column.
    ProjectionRunner(cs.app, cs.sql, _WithRequester()).catch_up()
    theirs = [(proposal_id, "order.refund_missing_discount", AVA)]
    assert _rows(cs) == theirs

    again = ProjectionRunner(cs.app, cs.sql, _Proposals(), in_place=in_place)
    with pytest.raises(ProjectionStoppedError, match="another build of countersign"):
        again.catch_up()
    assert _rows(cs) == theirs

    started = ProjectionRunner(cs.app, cs.sql, _Proposals())
    assert started.position() == 0  # dropped and made again, as this process's code has them
    started.catch_up()
    assert _rows(cs) == [(proposal_id, "order.refund_missing_discount")]


def test_two_builds_of_one_version_running_side_by_side_do_not_drop_each_others_tables(cs, seeded):
    """Two runners following the log, of two builds with the same projection version and
    other tables: the one that set the tables up last keeps them, the other stops at its
    next batch (before, each batch dropped the other's tables: a catch-up never ended)."""
    for order in ("refund-ok", "refund-stale", "refund-declined"):
        propose_on(cs, seeded["orders"][order])
    first = ProjectionRunner(cs.app, cs.sql, _Proposals(), batch_size=2)
    second = ProjectionRunner(cs.app, cs.sql, _WithRequester(), batch_size=2)
    second.catch_up()
    with pytest.raises(ProjectionStoppedError, match="another build of countersign"):
        first.catch_up()
    second.catch_up()
    assert second.status().lag == 0
    assert all(len(row) == 3 for row in _rows(cs))


def test_an_old_deployments_projections_rebuild_themselves_and_show_the_new_columns(upgraded):  # noqa: F811
    """The golden database's cards were built before approvals and supersession: today's
    runners rebuild them on their first catch-up, old proposals reading as one approval."""
    cs, manifest = upgraded
    ids = manifest["proposals"]
    cs.proposals.approve(ids["pending_card_refund"], AVA)
    for runner in cs.projection_runners():
        runner.catch_up()
        assert runner.status().lag == 0
    granite = manifest["seed"]["organizations"][0]["id"]
    approved = cs.read_models.card(granite, ids["pending_card_refund"])
    assert approved is not None
    assert (approved["status"], approved["approvals"], approved["approvals_required"]) == (
        "succeeded",
        [AVA],
        1,
    )
    declined = cs.read_models.card(granite, ids["declined"])
    assert declined is not None
    assert (declined["status"], declined["approvals"], declined["policy"]) == ("declined", [], None)
    with cs.sql.transaction() as cursor:
        facts = dict(
            cursor.execute("SELECT proposal_id, approvals_count FROM proposal_facts").fetchall()
        )
    assert facts[ids["pending_card_refund"]] == 1
    assert facts[ids["declined"]] == 0


def test_a_process_of_an_earlier_release_leaves_a_later_releases_tables_alone(cs, seeded):
    """During an upgrade, a process of the earlier release that starts (a worker restarted,
    a page's first view) meets tables the later release built: it leaves them as they are
    and says so, instead of dropping them (the later release then dropped them in turn, and
    so on). An operator's rebuild with the earlier release takes them over on purpose."""
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])
    later = ProjectionRunner(cs.app, cs.sql, _Uppercase())
    later.catch_up()
    built = _rows(cs)
    assert built == [(proposal_id, "ORDER.REFUND_MISSING_DISCOUNT", AVA)]

    for in_place in (None, TablesInPlace()):
        with pytest.raises(ProjectionStoppedError, match="built by a later release") as stopped:
            ProjectionRunner(cs.app, cs.sql, _WithRequester(), in_place=in_place).catch_up()
        assert "version 2; this one has version 1" in str(stopped.value)
        assert "countersign projections rebuild" in str(stopped.value)
    assert _rows(cs) == built
    assert later.position() == later.head()

    taken = ProjectionRunner(cs.app, cs.sql, _WithRequester(), take_over=True)
    assert taken.position() == 0
    taken.catch_up()
    assert _rows(cs) == [(proposal_id, "order.refund_missing_discount", AVA)]


def test_a_runner_of_the_earlier_release_stops_writing_once_a_later_one_rebuilt(cs, seeded):
    """A runner of the earlier release still following the log when the later release's
    first process rebuilt the tables: its next batch finds the tables are not its code's
    and it stops there; before, it wrote its rows into the later release's tables."""
    first = propose_on(cs, seeded["orders"]["refund-ok"])
    earlier = ProjectionRunner(cs.app, cs.sql, _WithRequester())
    earlier.catch_up()
    ProjectionRunner(cs.app, cs.sql, _Uppercase()).catch_up()

    second = propose_on(cs, seeded["orders"]["refund-stale"])
    with pytest.raises(ProjectionStoppedError, match="built by a later release"):
        earlier.catch_up()
    ProjectionRunner(cs.app, cs.sql, _Uppercase()).catch_up()
    assert _rows(cs) == sorted(
        [
            (first, "ORDER.REFUND_MISSING_DISCOUNT", AVA),
            (second, "ORDER.REFUND_MISSING_DISCOUNT", AVA),
        ]
    )


def test_a_workers_pass_that_meets_a_later_releases_tables_says_so_in_one_line(caplog):
    """A worker of the earlier release during an upgrade: its passes that read a projection
    the later release built say why, in the operator's words, and the others carry on."""
    from countersign.infrastructure.projection_engine.releases import BuiltByLaterReleaseError
    from countersign.infrastructure.sweepers import Sweeper, run_pass

    def stopped() -> int:
        raise BuiltByLaterReleaseError("projection 'open_work' was built by a later release")

    report = run_pass(
        [Sweeper("expire", "expired", stopped), Sweeper("notify", "sent", lambda: 2)], 1
    )
    assert report.failed == ["expire"]
    assert report.done == {"notify": 2}
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert record.getMessage() == (
        "expire pass: projection 'open_work' was built by a later release;"
        " the next pass tries again"
    )
    assert record.exc_info is None  # no traceback: not a defect


@pytest.mark.parametrize("parallel", [False, True], ids=["in_process", "writer_process"])
def test_a_rebuild_stops_once_another_release_claimed_the_tables_at_its_position(
    cs, seeded, parallel
):
    """A rebuild with the earlier release (an operator's, taking the tables over) while a
    process of the later release still runs: that one claims the tables again and may be at
    the very position the rebuild's next batch starts from (both read batches of the same
    size from 0). The rebuild's batches check the fingerprint under their lock, as every
    runner's do, whether they commit in this process or in the writer process; before, the
    writer's checked only the position and wrote the earlier release's rows into the later
    release's tables."""
    from countersign.infrastructure.projection_engine.together import rebuild_together

    for _ in range(3):
        propose_on(cs, seeded["orders"]["refund-ok"])
    runners = cs.projection_runners(["audit_trail"], batch_size=5, take_over=True)
    claimed: list[int] = []

    def later_release_claims(count: int) -> None:
        if not claimed:  # as the later release's setup does, here without moving the position
            with cs.sql.transaction() as cursor:
                cursor.execute(
                    "UPDATE projection_schemas SET fingerprint = ? WHERE projection = ?",
                    ("v999-0123456789abcdef", "audit_trail"),
                )
        claimed.append(count)

    with pytest.raises(ProjectionStoppedError, match="taken by a process of another release"):
        rebuild_together(runners, later_release_claims, parallel=parallel)
    assert len(claimed) < -(-runners[0].head() // 5)  # it stopped before the log's end
