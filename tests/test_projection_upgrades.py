"""An upgrade that changes a projection rebuilds its tables by itself: each projection records
the fingerprint of the code that built its tables (``projection_schemas``), and a runner that
finds another one drops them and replays the log, so no deployment is left with tables its new
handlers cannot write."""

from __future__ import annotations

from typing import Any, ClassVar

from countersign.infrastructure.projection_engine.runner import ProjectionRunner, TablesInPlace
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


def test_a_process_that_knew_the_tables_in_place_sees_another_version_rebuilt_them(cs, seeded):
    """A page's runner (``in_place``) makes no table once its process made them; its first
    read of the position still finds that another version rebuilt them since, and rebuilds
    them for its own code, as any runner of the old code would."""
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])
    in_place = TablesInPlace()
    ProjectionRunner(cs.app, cs.sql, _Proposals(), in_place=in_place).catch_up()
    assert in_place.holds("upgraded_proposals", _Proposals().fingerprint())

    # Another process, of the next version: a new column.
    ProjectionRunner(cs.app, cs.sql, _WithRequester()).catch_up()
    assert _rows(cs) == [(proposal_id, "order.refund_missing_discount", AVA)]

    again = ProjectionRunner(cs.app, cs.sql, _Proposals(), in_place=in_place)
    assert again.position() == 0  # dropped and made again, as this process's code has them
    again.catch_up()
    assert _rows(cs) == [(proposal_id, "order.refund_missing_discount")]
    assert in_place.holds("upgraded_proposals", _Proposals().fingerprint())


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
