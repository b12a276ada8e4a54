"""A rebuild of several projections together runs them chunk by chunk, each projection over a
chunk's decoded events in turn (``together._prepare_together``): what users see is the same
as event by event, the same rows and, when something fails, the same event and projection
named."""

from __future__ import annotations

from typing import Any

import pytest
from countersign.infrastructure.projection_engine import together
from countersign.infrastructure.projection_engine.runner import (
    ProjectionRunner,
    ProjectionStoppedError,
)
from countersign.infrastructure.projection_engine.together import rebuild_together
from countersign.projections import messages
from countersign.projections.base import Column, Projection, Rows, Table, handles

from tests.conftest import AVA
from tests.support.proposing import propose
from tests.test_projections import catch_up_all, lifecycle_history, snapshot


def _failing(name: str, *failing_at: str) -> Projection:
    """A projection that keeps a row per proposal and whose handler of each topic in
    ``failing_at`` fails."""

    class Failing(Projection):
        tables = (
            Table(f"{name}_rows", (Column("proposal_id"), Column("n", "int")), ("proposal_id",)),
        )

        @handles("Proposal.Proposed", "Proposal.Approved", "Proposal.Succeeded")
        def keep(self, event: Any, position: int, rows: Rows) -> None:
            if type(event).__qualname__ in failing_at:
                raise LookupError(f"{name} cannot")
            rows.put(f"{name}_rows", {"proposal_id": str(event.originator_id), "n": position})

    Failing.name = name
    return Failing()


def _runners(cs: Any, first: Projection, second: Projection) -> list[ProjectionRunner]:
    """Countersign's own runners with ``first`` before them and ``second`` among them."""
    own = cs.projection_runners()
    one, other = (ProjectionRunner(cs.app, cs.sql, projection) for projection in (first, second))
    return [one, *own[:3], other, *own[3:]]


def _position_of(cs: Any, topic: str) -> int:
    """The log position of the only event stored under ``topic``."""
    found = [e.id for e in cs.app.recorder.select_log(0, 1000) if e.topic.endswith(topic)]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(params=[1, 2, 250], ids=["chunk1", "chunk2", "chunk250"])
def chunk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(together, "CHUNK", request.param)
    return int(request.param)


@pytest.mark.parametrize(
    ("first_fails_at", "second_fails_at", "named", "at"),
    [
        ("Proposal.Succeeded", "Proposal.Approved", "second", "Proposal.Approved"),
        ("Proposal.Approved", "Proposal.Approved", "first", "Proposal.Approved"),
        ("Proposal.Approved", "Proposal.Proposed", "second", "Proposal.Proposed"),
    ],
    ids=["earlier_event_later_runner", "same_event", "earliest_event"],
)
def test_the_first_event_that_fails_is_named_and_there_the_first_projection_in_order(
    cs, seeded, chunk, first_fails_at, second_fails_at, named, at
):
    """``second`` runs after ``first`` over each chunk; what is named is what would have
    stopped the rebuild first event by event: the earliest event that fails, and at that
    event the first projection of the rebuild's order whose handler fails."""
    cs.proposals.approve(propose(cs, seeded, "refund-ok"), AVA)
    first, second = _failing("first", first_fails_at), _failing("second", second_fails_at)
    runners = _runners(cs, first, second)

    with pytest.raises(ProjectionStoppedError) as stopped:
        rebuild_together(runners, parallel=False)

    said = str(stopped.value)
    assert said.startswith(
        f"projection '{named}' stopped at notification {_position_of(cs, at)} ({at} of "
    )
    assert "LookupError" in said
    assert isinstance(stopped.value.__cause__, LookupError)
    assert {runner.position() for runner in runners} == {0}


@pytest.mark.parametrize("fails_before", [True, False], ids=["handler_first", "decode_first"])
def test_an_event_that_does_not_decode_stops_the_rebuild_unless_a_handler_failed_before_it(
    cs, seeded, chunk, monkeypatch, fails_before
):
    """The Approved event does not decode: the rebuild stops there, naming the first runner
    that handles it, unless a handler failed at an earlier event (then that one is named);
    a handler that would fail only after it is never reached."""
    cs.proposals.approve(propose(cs, seeded, "refund-ok"), AVA)
    approved_at = _position_of(cs, "Proposal.Approved")
    proposed_at = _position_of(cs, "Proposal.Proposed")
    failing = _failing("failing", "Proposal.Proposed" if fails_before else "Proposal.Succeeded")
    runners = _runners(cs, _failing("keeping"), failing)
    decoder = runners[0].decode_event
    decode = decoder.decode

    def does_not_decode_approved(entry: Any) -> Any:
        if entry.id == approved_at:
            raise ValueError("not JSON")
        return decode(entry)

    monkeypatch.setattr(decoder, "decode", does_not_decode_approved)
    with pytest.raises(ProjectionStoppedError) as stopped:
        rebuild_together(runners, parallel=False)

    said = str(stopped.value)
    if fails_before:
        assert said.startswith(f"projection 'failing' stopped at notification {proposed_at} ")
    else:
        assert said.startswith(f"projection 'keeping' stopped at notification {approved_at} ")
        assert "ValueError" in said
        assert stopped.value.__cause__ is None


def test_rebuilt_together_in_small_chunks_the_tables_equal_those_built_event_by_event(
    cs, seeded, clock, chunk
):
    lifecycle_history(cs, seeded, clock)
    catch_up_all(cs, batch_size=1)
    one_by_one = snapshot(cs)

    rebuild_together(cs.projection_runners(batch_size=7), parallel=False)

    assert snapshot(cs) == one_by_one


def test_the_outcome_messages_are_made_once_an_outcome_for_the_card_and_the_hand_back(
    cs, seeded, clock, monkeypatch
):
    """The browser view runs over a chunk before the hand-back does; the hand-back's messages
    of each outcome are still the ones the card's were made with, not made again."""
    lifecycle_history(cs, seeded, clock)
    made: list[Any] = []
    success_texts = messages._success_texts

    def counted(operation: str, preview: Any, outcome: Any) -> Any:
        made.append(outcome)
        return success_texts(operation, preview, outcome)

    monkeypatch.setattr(messages, "_success_texts", counted)
    runners = {runner.name: runner for runner in cs.projection_runners()}
    rebuild_together([runners["browser_view"]], parallel=False)
    alone = len(made)
    made.clear()
    rebuild_together(list(runners.values()), parallel=False)

    assert alone >= 5
    assert len(made) == alone
    assert len({id(outcome) for outcome in made}) == alone  # each outcome once
