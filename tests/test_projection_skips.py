"""One club's unreadable event stopped every club's read models, with no way on but a restore.

A projection stops at an event it cannot read and resumes from it once the cause is fixed:
never a silent skip. But the log is every club's, so one club's damaged record left every
club's inbox and counts as they were, for as long as the record could not be restored. Now an
operator may pass that one event in every projection, with ``countersign projections skip
POSITION --reason TEXT``: refused for an event that reads (a handler's failure is a code fix)
or that is not there; recorded with the reason, the operator and the time; listed by
``projections status``; and a rebuild passes it too.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.club.organization import Organization
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError
from countersign.infrastructure.testing.deployment import MIA

from tests.support.proposing import propose
from tests.test_audit_verify import _sql


def _damaged(cs: Countersign, seeded: dict[str, Any]) -> tuple[int, str]:
    """Maple's proposal whose Proposed event no longer reads: its notification id, its id."""
    proposal_id = propose(cs, seeded, "maple-refund", actor=MIA, organization="maple")
    _sql(cs, "UPDATE {table} SET state=? WHERE originator_id=?", b"{not json", UUID(proposal_id))
    return _position(cs, proposal_id), proposal_id


def _position(cs: Countersign, proposal_id: str) -> int:
    """The notification id of the proposal's first event."""
    column = "rowid" if cs.database.kind == "sqlite" else "notification_id"
    found = _sql(
        cs, f"SELECT MIN({column}) FROM {{table}} WHERE originator_id=?", UUID(proposal_id)
    )
    return int(found[0][0])


def _cli(capsys: pytest.CaptureFixture[str], cs: Countersign, *argv: str) -> tuple[int, str]:
    status = main([*argv, "--database", cs.settings.database_url])
    out, err = capsys.readouterr()
    return status, out + err


def _granite_inbox(cs: Countersign) -> list[str]:
    inbox = cs.read_models.inbox(str(Organization.create_id("granite")), cs.clock.now())
    return [item["proposal_id"] for item in inbox["items"]]


def test_an_operator_passes_one_clubs_unreadable_event_and_every_club_goes_on(
    cs: Countersign, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    position, maple_id = _damaged(cs, seeded)
    granite_id = propose(cs, seeded)  # another club's work, after the damaged event
    with pytest.raises(ProjectionStoppedError) as stopped:
        cs.catch_up(["browser_view"])
    said = str(stopped.value)
    assert f"stopped at notification {position} (Proposal.Proposed of {maple_id})" in said
    assert f"'countersign projections skip {position} --reason TEXT'" in said
    assert granite_id not in _granite_inbox(cs)  # every club waits on the one record

    status, out = _cli(
        capsys, cs, "projections", "skip", str(position), "--reason", "backup lost, ticket 42"
    )

    assert status == 0, out
    assert f"every projection passes notification {position} (Proposal.Proposed of " in out
    assert "recorded: backup lost, ticket 42 (" in out
    # Again, with another reason: said as it stands, not "recorded" (the first is kept).
    status, out = _cli(capsys, cs, "projections", "skip", str(position), "--reason", "again")
    assert status == 2
    assert f"error: the event at position {position} is skipped already, by " in out
    assert ": backup lost, ticket 42 (" in out
    for runner in cs.projection_runners():
        assert runner.catch_up() > 0  # every projection carries on past it
    assert granite_id in _granite_inbox(cs)
    status, out = _cli(capsys, cs, "projections", "status", "--json")
    assert status == 0
    documents = json.loads(out)
    assert all(document["lag"] == 0 for document in documents)
    [skip] = documents[0]["skipped"]
    assert skip["position"] == position
    assert skip["event"] == f"Proposal.Proposed of {maple_id}"
    assert skip["reason"].startswith("backup lost, ticket 42 (")
    assert skip["skipped_by"]
    status, out = _cli(capsys, cs, "projections", "status", "browser_view")
    assert f"every projection passes notification {position} (Proposal.Proposed of " in out
    assert ": backup lost, ticket 42 (" in out

    # A rebuild passes it too, and the other clubs' cards are all there.
    status, out = _cli(capsys, cs, "projections", "rebuild")
    assert status == 0, out
    assert granite_id in _granite_inbox(cs)


def test_an_event_that_reads_or_is_not_there_is_not_skipped(
    cs: Countersign, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    readable = propose(cs, seeded)
    position = _position(cs, readable)
    head = cs.projection_runners(["browser_view"])[0].head()

    status, out = _cli(capsys, cs, "projections", "skip", str(position), "--reason", "why not")
    assert status == 2
    assert f"error: the event at position {position} (Proposal.Proposed of {readable}) reads" in out
    assert "needs a fix of the code, not a skip" in out
    status, out = _cli(capsys, cs, "projections", "skip", str(head + 5), "--reason", "gone")
    assert (status, out.strip()) == (2, f"error: the log has no event at position {head + 5}")
    status, out = _cli(capsys, cs, "projections", "skip", str(position), "--reason", "   ")
    assert (status, out.strip()) == (2, "error: say why the event is skipped: --reason TEXT")
    status, out = _cli(capsys, cs, "projections", "status", "--json")
    assert "skipped" not in json.loads(out)[0]  # nothing was recorded
    assert "Traceback" not in out


def test_a_skip_never_passes_an_event_that_reads(
    cs: Countersign, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Recorded for a damaged event that is then restored from a backup: the event reads
    again, and every projection applies it, the rebuild included."""
    proposal_id = propose(cs, seeded, "maple-refund", actor=MIA, organization="maple")
    key = UUID(proposal_id)
    [(original,)] = _sql(cs, "SELECT state FROM {table} WHERE originator_id=?", key)
    _sql(cs, "UPDATE {table} SET state=? WHERE originator_id=?", b"{not json", key)
    position = _position(cs, proposal_id)
    assert _cli(capsys, cs, "projections", "skip", str(position), "--reason", "r")[0] == 0
    _sql(cs, "UPDATE {table} SET state=? WHERE originator_id=?", bytes(original), key)

    assert _cli(capsys, cs, "projections", "rebuild")[0] == 0
    maple = str(Organization.create_id("maple"))
    listed = cs.read_models.inbox(maple, cs.clock.now())["items"]
    assert proposal_id in [item["proposal_id"] for item in listed]


def test_a_following_runner_waits_at_the_unreadable_event_and_carries_on_once_it_is_skipped(
    cs: Countersign,
    seeded: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``projections run`` exited at the event: under a service manager it was restarted,
    stopped again at once, and once the manager gave up, a skip or a restore brought back
    nothing, although the skip said "the stopped runners carry on at their next pass"."""
    import threading
    import time

    from countersign.infrastructure.projection_engine.together import run_forever

    position, _ = _damaged(cs, seeded)
    granite_id = propose(cs, seeded)
    stop = threading.Event()
    failed: list[BaseException] = []
    #: Each try of a runner at the event that stops it, by runner; set once one tried thrice.
    tries: list[str] = []
    retried = threading.Event()
    runners = cs.projection_runners()
    for runner in runners:
        runner.run_batch = _counting_stops(runner, tries, retried)  # type: ignore[method-assign]

    def follow() -> None:
        try:
            run_forever(runners, stop, 0.01, stopped_retry=0.05)
        except BaseException as error:
            failed.append(error)

    follower = threading.Thread(target=follow)
    with caplog.at_level("WARNING", logger="countersign.projections"):
        follower.start()
        try:
            deadline = time.monotonic() + 20
            while f"stopped at notification {position}" not in caplog.text and not failed:
                assert time.monotonic() < deadline, caplog.text
                time.sleep(0.02)
            # Several tries, counted (a pause of 0.3 s saw none at all on a loaded machine):
            # the hang guard is the deadline's rest.
            assert retried.wait(max(deadline - time.monotonic(), 0)), tries
            assert failed == []
            assert follower.is_alive()
            said = [
                r.getMessage()
                for r in caplog.records
                if f"stopped at notification {position}" in r.getMessage()
            ]
            assert said, caplog.text
            assert len(set(said)) == len(said), said  # each runner's said once, not each try
            assert granite_id not in _granite_inbox(cs)

            status, out = _cli(capsys, cs, "projections", "skip", str(position), "--reason", "t")
            assert status == 0, out
            while granite_id not in _granite_inbox(cs):
                assert time.monotonic() < deadline
                time.sleep(0.02)
        finally:
            stop.set()
            follower.join(10)
    assert failed == []
    assert "past the event that stopped it; carrying on" in caplog.text


def _counting_stops(runner: Any, tries: list[str], retried: Any) -> Any:
    """``runner.run_batch``, noting in ``tries`` each try that stops at an event, and setting
    ``retried`` once the runner has tried three times."""
    run_batch = runner.run_batch

    def counted(*args: Any, **kwargs: Any) -> int:
        try:
            return int(run_batch(*args, **kwargs))
        except ProjectionStoppedError:
            tries.append(runner.name)
            if tries.count(runner.name) >= 3:
                retried.set()
            raise

    return counted


def test_a_runner_behind_applies_the_events_before_the_unreadable_one(
    cs: Countersign, seeded: dict[str, Any]
) -> None:
    """A runner catching up (after a restart, an upgrade's reset) read the damaged event in
    the same batch as the events before it, and the batch was applied all or nothing: the
    other clubs' work before it stayed out of every read model although the runner said it
    "stopped at" the damaged event and "nothing after it was applied"."""
    granite_before = propose(cs, seeded)
    position, _ = _damaged(cs, seeded)
    [runner] = cs.projection_runners(["browser_view"])
    assert runner.position() < position - 1  # one batch holds them all

    with pytest.raises(ProjectionStoppedError) as stopped:
        runner.run_batch()

    assert f"stopped at notification {position} " in str(stopped.value)
    assert runner.position() == position - 1
    assert stopped.value.applied > 0  # what `projections run` counts as done
    assert granite_before in _granite_inbox(cs)
    with pytest.raises(ProjectionStoppedError) as again:
        runner.run_batch()  # and it stays stopped at the damaged one
    assert runner.position() == position - 1
    assert again.value.applied == 0


def test_a_projection_held_at_an_event_is_said_again_every_ten_minutes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``projections run`` no longer exits at the event: one ERROR line, then silence, would
    leave an alert on the last hour's ERROR lines blind to a projection stopped since."""
    from countersign.infrastructure.projection_engine.stops import held_batch

    class Stuck:
        name = "browser_view"
        known_position: int | None = 5

        def run_batch(self) -> int:
            raise ProjectionStoppedError("projection 'browser_view' stopped at notification 7", 7)

    held: dict[str, tuple[float, str, float]] = {}
    with caplog.at_level("ERROR", logger="countersign.projections"):
        for now in (0.0, 10.0, 599.0, 600.0, 610.0, 1199.0, 1200.0):
            assert held_batch(Stuck(), held, now, 10.0) == 0  # type: ignore[arg-type]
    said = [r for r in caplog.records if "stopped at notification 7" in r.getMessage()]
    assert len(said) == 3  # at once, and at 600 and 1200 s
