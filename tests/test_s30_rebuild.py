"""The handlers' shortcuts of s30-rebuild (issue 27) keep every row as it was.

The handlers now read an event's fields at their own lines and pass them on (``_record``,
``_card``, ``_settle``, ``_status``, ``_say``, ``_notify``), write ``utc(event.timestamp)``
out, look an aggregate's text up in ``base.ID_TEXTS`` without a call, find their batch's
object with ``rows.batch.get`` and skip ``approvals_required`` and ``policy_applied`` when a
proposal has no policy. Each test below fails if one of those changes what is stored: a time
left in its own zone, an id's text other than its ``str``, a quorum or policy counted
otherwise. (The golden streams' digests, ``tests/test_handler_rows.py`` and the cards',
audit's and analytics' golden tests, hold the rows of real lifecycles.)
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.infrastructure.projection_engine.rows import SqlRows
from countersign.projections import base
from countersign.projections.analytics import Analytics
from countersign.projections.attention import Attention
from countersign.projections.audit_trail import AuditTrail
from countersign.projections.base import Projection
from countersign.projections.browser_view import BrowserView
from countersign.projections.handback import Handback
from countersign.projections.notifications import Notifications
from countersign.projections.open_work import OpenWork

PROJECTIONS: tuple[type[Projection], ...] = (
    BrowserView,
    AuditTrail,
    Analytics,
    Attention,
    Handback,
    Notifications,
    OpenWork,
)

#: The lifecycle's events in order, those that need no contract's messages (an outcome's
#: texts need a registered operation: the golden streams cover them); a success only for
#: the projections that say nothing of it (``QUIET``).
STEPS = ("Proposed", "Approved", "Claimed", "Revalidated", "Declined", "Expired")
QUIET = (AuditTrail, Analytics, Attention, OpenWork)
OPERATION = "update_member"


class _NoCursor:
    def execute(self, *args: Any) -> Any:
        return SimpleNamespace(fetchone=lambda: None)


def _rows(projection: Projection) -> SqlRows:
    return SqlRows(_NoCursor(), projection.tables, "sqlite")  # type: ignore[arg-type]


class _Event(SimpleNamespace):
    """An event of ``Proposal.<name>``: its handlers are found by its class's name."""


def _lifecycle(
    ids: Callable[[], Any],
    zone: Any,
    policy: Any = None,
    steps: tuple[str, ...] = STEPS,
) -> list[Any]:
    """One proposal's events, ``ids()`` its ``originator_id`` at each event, each stamped
    at the same instants in ``zone``."""
    start = datetime(2026, 12, 5, 3, 0, 7, 123456, tzinfo=UTC)
    events = []
    for version, name in enumerate(steps, start=1):
        fields: dict[str, Any] = {
            "originator_id": ids(),
            "originator_version": version,
            "timestamp": (start + timedelta(minutes=version)).astimezone(zone),
            "chain": f"chain-{version}",
        }
        if name == "Proposed":
            fields.update(
                organization_id="org-1",
                resource_id="resource-1",
                section="members",
                kind=OPERATION,
                requested_by="assistant",
                interaction_id="conversation-1",
                preview={"amount_cents": 1200, "currency": "EUR"},
                expires_at=start + timedelta(days=1),
                policy=policy,
            )
        elif name == "Approved":
            fields.update(approved_by="manager", approved_at=start, credential="password")
        elif name == "Claimed":
            fields.update(attempt_id=UUID(int=7), claimed_at=start)
        elif name == "Revalidated":
            fields.update(facts={"balance": 1, "member": 2})
        elif name == "Declined":
            fields.update(declined_by="manager", note="not now")
        elif name == "Succeeded":
            fields.update(outcome={"kind": "succeeded", "result": {}})
        event = type(name, (_Event,), {"__qualname__": f"Proposal.{name}"})(**fields)
        events.append(event)
    return events


def _rebuilt(
    events: list[Any], projections: tuple[type[Projection], ...] = PROJECTIONS
) -> dict[str, dict[str, list[tuple[Any, ...]]]]:
    """Every projection's rows after the events, in one batch each, as ``pack`` leaves them
    (values in column order; deletes as keys), each time by its ``isoformat`` (which shows
    its zone) and each value with its type."""
    rebuilt: dict[str, dict[str, list[tuple[Any, ...]]]] = {}
    base._ID_TEXTS.clear()
    for kind in projections:
        projection = kind()
        rows = _rows(projection)
        for position, event in enumerate(events, start=1):
            projection.process(event, position, rows)
        projection.end_batch(rows)
        packed = rows.pack()
        rebuilt[projection.name] = {
            table: [tuple(map(_shown, row)) for row in puts] + [("deleted", *k) for k in deletes]
            for table, (puts, deletes) in sorted(packed.items())
        }
    return rebuilt


def _each_step(
    events: list[Any], projections: tuple[type[Projection], ...] = PROJECTIONS
) -> list[dict[str, dict[str, list[tuple[Any, ...]]]]]:
    """``_rebuilt`` after each event of the lifecycle: a row a later event rewrites (a card's
    ``updated_at``) is seen as each handler left it."""
    return [_rebuilt(events[:n], projections) for n in range(1, len(events) + 1)]


def _shown(value: Any) -> Any:
    if isinstance(value, datetime):
        return ("time", value.isoformat(), value.tzinfo is UTC)
    return (type(value).__name__, repr(value))


def _times(rebuilt: dict[str, dict[str, list[tuple[Any, ...]]]]) -> list[Any]:
    return [
        value
        for tables in rebuilt.values()
        for rows in tables.values()
        for row in rows
        for value in row
        if type(value) is tuple and value[0] == "time"
    ]


def test_times_in_another_zone_are_stored_in_utc_as_before() -> None:
    """The same instants stamped in UTC, in a zone two hours east, and in a zone equal to UTC
    that is not ``datetime.UTC`` itself: every projection stores the same rows, each time in
    UTC (``utc`` written out in the handlers converts as ``event_time`` did)."""
    proposal = uuid4()
    in_utc = _each_step(_lifecycle(lambda: proposal, UTC))
    east = _each_step(_lifecycle(lambda: proposal, timezone(timedelta(hours=2))))
    alike = _each_step(_lifecycle(lambda: proposal, timezone(timedelta(0))))
    assert east == in_utc
    assert alike == in_utc
    succeeded = (*STEPS[:4], "Succeeded")
    quiet_utc = _each_step(_lifecycle(lambda: proposal, UTC, steps=succeeded), QUIET)
    quiet_east = _each_step(
        _lifecycle(lambda: proposal, timezone(timedelta(hours=-5)), steps=succeeded), QUIET
    )
    assert quiet_east == quiet_utc
    quorum = {"rule": {"operation": OPERATION, "approvals": 2}, "approvals_required": 2}
    told_utc = _each_step(_lifecycle(lambda: proposal, UTC, quorum))  # "1 of 2" is told
    told_east = _each_step(_lifecycle(lambda: proposal, timezone(timedelta(hours=9)), quorum))
    assert told_east == told_utc
    assert told_utc[-1]["handback"]["handback_messages"]
    times = [time for step in in_utc + quiet_utc + told_utc for time in _times(step)]
    # every projection that stores a time stored some
    assert len(times) > 10
    assert all(is_utc for _, _, is_utc in times)
    assert any(text.endswith(".123456+00:00") for _, text, _ in times)


def test_an_aggregates_text_is_its_str_whatever_object_carries_it() -> None:
    """One UUID object for all events (as the decoder hands out) and a new equal object at
    each event (as the mapper makes them): the same rows. A UUID subclass with
    its own ``str`` keys every row by that text (``ID_TEXTS`` holds only what ``id_text``
    made, for the very object it holds)."""
    proposal = uuid4()
    one = _rebuilt(_lifecycle(lambda: proposal, UTC))
    fresh = _rebuilt(_lifecycle(lambda: UUID(int=proposal.int), UTC))
    assert fresh == one
    assert repr(str(proposal)) in repr(one["audit_trail"]["audit_events"][0])

    class Shown(UUID):
        def __str__(self) -> str:
            return "shown-proposal"

    shown = _rebuilt(_lifecycle(lambda: Shown(int=proposal.int), UTC))
    assert shown != one
    assert repr(str(proposal)) not in repr(shown)
    for name, tables in shown.items():
        for table, rows in tables.items():
            if table in {"proposal_approvals", "audit_events", "proposal_cards"}:
                assert all(repr("shown-proposal") in repr(row) for row in rows), (name, table)


def test_a_remembered_text_is_found_only_for_the_object_it_was_made_of() -> None:
    """``ID_TEXTS`` by ``id()``: an entry holds its object, so a lookup for a live object
    finds only that object's text; an equal object made later is not found, and gets the
    same text made again."""
    base._ID_TEXTS.clear()
    first = uuid4()
    assert base.id_text(first) == str(first)
    found = base._ID_TEXTS.get(id(first))
    assert found is not None
    assert found[0] is first
    assert found[1] == str(first)
    again = UUID(int=first.int)
    assert base._ID_TEXTS.get(id(again)) is None
    assert base.aggregate_text(again) == str(first)
    base._ID_TEXTS.clear()


@pytest.mark.parametrize(
    ("policy", "required", "applied"),
    [
        (None, 1, False),
        ({}, 1, False),
        (
            {"rule": {"operation": "update_member", "approvals": 2}, "approvals_required": 2},
            2,
            True,
        ),
        (
            {"rule": {"operation": "update_member", "approvals": 3}, "approvals_required": "3"},
            3,
            True,
        ),
    ],
)
def test_a_quorum_and_a_policy_are_counted_as_before(
    policy: Any, required: int, applied: bool
) -> None:
    """No policy, an empty one (falsy, but not None: ``policy_applied`` reads its rule, as
    before), and a quorum of 2 and of "3": every projection stores what
    ``approvals_required`` and ``policy_applied`` say."""
    assert base.approvals_required(policy) == required
    if policy == {}:
        with pytest.raises(KeyError):
            _rebuilt(_lifecycle(uuid4, UTC, policy))
        return
    rebuilt = _rebuilt(_lifecycle(uuid4, UTC, policy))
    card = rebuilt["browser_view"]["proposal_cards"][0]
    assert ("int", repr(required)) in card
    proposal = rebuilt["audit_trail"]["audit_proposals"][0]
    assert proposal[-1] == ("int", repr(required))
    fact = rebuilt["analytics"]["proposal_facts"][0]
    assert fact[19:21] == (("int", repr(required)), ("bool", repr(applied)))
    handed = rebuilt["handback"]["handback_proposals"][0]
    assert handed[7] == ("int", repr(required))
