"""Webhooks: approvers' systems are told through the notifications outbox, at least once.

Every delivery is a real HTTP POST to a receiver on 127.0.0.1, and every signature is checked
with the reference ``standardwebhooks`` package, not with our own code.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from datetime import timedelta
from typing import Any

import pytest
from countersign.application.authorization import Caller
from countersign.application.errors import MissingPermissionError
from countersign.domain.club.webhooks import WebhookUrlError
from countersign.domain.errors import DuplicateError, NotFoundError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.notifications.sender import NotificationSender
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender
from standardwebhooks.webhooks import Webhook

from tests.conftest import AVA, BEN, MIA, REFUND
from tests.receivers import (
    LOOPBACK_NETWORKS,
    Receiver,
    allow_loopback,  # noqa: F401 - autouse
    free_port,
    receiving,
)
from tests.support.proposing import propose

SETTINGS = NotifySettings(
    public_url="https://club.example",
    max_attempts=4,
    first_retry_seconds=10,
    timeout_seconds=5,
    allowed_networks=LOOPBACK_NETWORKS,
)


def sender(cs: Countersign, **options: Any) -> NotificationSender:
    return notification_sender(cs, SETTINGS, **options)


def outbox(cs: Countersign) -> list[tuple[str, str, str]]:
    with cs.sql.transaction() as cursor:
        rows = cursor.execute(
            "SELECT event_id, proposal_id, reason FROM notifications ORDER BY position"
        ).fetchall()
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def _is_an_id(key: str) -> bool:
    """An id, or the time it was sent: random hex, or a clock's digits, which can hold an
    amount's digits by chance (a send at 12:24:48.006 holds "48.00")."""
    return key in ("id", "proposal_id", "review_url", "occurred_at")


def test_a_proposal_awaiting_approval_is_posted_signed_to_each_endpoint(cs, seeded):
    webhooks = Webhooks(cs)
    with receiving() as first, receiving() as second:
        added = [webhooks.add(None, "granite", r.url) for r in (first, second)]
        proposal_id = propose(cs, seeded)
        report = sender(cs).run_once()
        assert (report.fanned_out, report.delivered, report.dead) == (2, 2, 0)
        for receiver, endpoint in zip((first, second), added, strict=True):
            [request] = receiver.received
            # The reference verifier accepts it: our signing is checked independently.
            payload = Webhook(endpoint.secret).verify(request.body, request.headers)
            assert payload == json.loads(request.body)
            assert payload["type"] == "proposal.awaiting_approval"
            assert payload["proposal_id"] == proposal_id
            assert payload["operation"] == REFUND
            assert payload["organization"] == "granite"
            assert payload["review_url"] == f"https://club.example/proposals/{proposal_id}"
            assert request.headers["webhook-id"] == payload["id"]
            # What a card shows at most: no arguments, amounts, or approve link. (Ids are
            # random hex, which can hold "4800" by chance: once in about a thousand runs.)
            assert "/approve" not in request.body.decode()
            named = json.dumps({k: v for k, v in payload.items() if not _is_an_id(k)})
            assert "4800" not in named
            assert "48.00" not in named
            assert "P1" not in named
            # Another endpoint's secret does not verify it.
            other = added[1] if endpoint is added[0] else added[0]
            with pytest.raises(Exception, match=r"(?i)signature"):
                Webhook(other.secret).verify(request.body, request.headers)
        assert first.ids() == second.ids()  # one notification, one id, for every target
        assert sender(cs).run_once().attempted == 0  # nothing is sent twice


def test_a_receiver_answering_500_then_200_gets_the_same_id_and_a_rebuild_resends_nothing(
    cs, seeded, clock
):
    with receiving(Receiver(statuses=[500])) as receiver:
        Webhooks(cs).add(None, "granite", receiver.url)
        propose(cs, seeded)
        first = sender(cs).run_once()
        assert (first.attempted, first.delivered, first.retrying) == (1, 0, 1)
        assert sender(cs).run_once().attempted == 0  # not due yet
        clock.advance(seconds=25)  # past the first wait (10 s, plus up to 10 s of jitter)
        second = sender(cs).run_once()
        assert (second.attempted, second.delivered) == (1, 1)
        [(event_id, _, reason)] = outbox(cs)
        assert reason == "awaiting_approval"
        assert receiver.ids() == [event_id, event_id]  # the same id on the retry

        [runner] = cs.projection_runners(["notifications"])
        runner.rebuild()
        assert outbox(cs) == [(event_id, *outbox(cs)[0][1:])]  # the same id after a rebuild
        assert sender(cs).run_once().attempted == 0
        assert len(receiver.received) == 2
    [delivery] = Webhooks(cs).deliveries(None, "granite")
    assert delivery["status"] == "delivered"
    assert [(a["status_code"], a["outcome"]) for a in delivery["attempt_log"]] == [
        (500, "retry"),
        (200, "delivered"),
    ]
    assert delivery["attempt_log"][0]["next_attempt_at"] is not None


def test_a_receiver_that_is_down_is_retried_ever_later_then_dead_then_redelivered(
    cs, seeded, clock
):
    port = free_port()
    webhooks = Webhooks(cs)
    webhooks.add(None, "granite", f"http://127.0.0.1:{port}/hooks")
    propose(cs, seeded)
    waits = []
    for _ in range(SETTINGS.max_attempts):
        report = sender(cs).run_once()
        assert report.attempted == 1
        assert report.delivered == 0
        [delivery] = webhooks.deliveries(None, "granite")
        last = delivery["attempt_log"][-1]
        assert last["result"] == "failed: could not connect"
        assert "error_class" not in last
        assert "latency_ms" not in last
        if delivery["status"] == "pending":
            waits.append(last["next_attempt_at"] - last["started_at"])
            clock.advance(seconds=(last["next_attempt_at"] - clock.now()).total_seconds())
    assert delivery["status"] == "dead"
    assert len(waits) == SETTINGS.max_attempts - 1
    assert waits == sorted(waits)
    assert waits[0] >= timedelta(seconds=10)
    assert waits[-1] >= timedelta(seconds=10 * 2 ** (len(waits) - 1))  # exponential
    [dead] = webhooks.deliveries(None, "granite", dead_only=True)
    assert dead["delivery_id"] == delivery["delivery_id"]
    clock.advance(days=1)
    assert sender(cs).run_once().attempted == 0  # a dead letter waits for a person

    with receiving(port=port) as receiver:
        assert webhooks.redeliver(None, "granite") == [delivery["delivery_id"]]
        assert webhooks.deliveries(None, "granite", dead_only=True) == []
        report = sender(cs).run_once()
        assert (report.attempted, report.delivered) == (1, 1)
        assert len(receiver.received) == 1
    [delivered] = webhooks.deliveries(None, "granite")
    assert delivered["status"] == "delivered"
    assert len(delivered["attempt_log"]) == SETTINGS.max_attempts + 1
    assert webhooks.redeliver(None, "granite") == []  # nothing dead is left


def test_a_dead_letter_of_a_removed_endpoint_is_listed_so_and_never_redelivered(cs, seeded, clock):
    """A dead letter stayed one after its endpoint was removed: listed with a Redeliver
    button for ever, "redeliver all" put it back each time, and the sender failed it again
    at once (nothing to deliver it to). It is listed as the removed endpoint's, left by
    "redeliver all", and redelivering it by name says why it is not."""
    from countersign.infrastructure.notifications.webhooks import EndpointRemovedError

    webhooks = Webhooks(cs)
    removed = webhooks.add(None, "granite", f"http://127.0.0.1:{free_port()}/hooks")
    kept = webhooks.add(None, "granite", f"http://127.0.0.1:{free_port()}/hooks")
    propose(cs, seeded)
    for _ in range(SETTINGS.max_attempts):
        sender(cs).run_once()
        clock.advance(days=1)
    dead = {d["target"]: d for d in webhooks.deliveries(None, "granite", dead_only=True)}
    assert [d["endpoint_removed"] for d in dead.values()] == [False, False]
    webhooks.remove(None, "granite", removed.endpoint_id)

    listed = {d["target"]: d for d in webhooks.deliveries(None, "granite", dead_only=True)}
    assert listed[removed.endpoint_id]["endpoint_removed"] is True
    assert listed[kept.endpoint_id]["endpoint_removed"] is False
    assert webhooks.redeliver(None, "granite") == [dead[kept.endpoint_id]["delivery_id"]]
    with pytest.raises(EndpointRemovedError):
        webhooks.redeliver(None, "granite", dead[removed.endpoint_id]["delivery_id"])
    [still] = webhooks.deliveries(None, "granite", dead_only=True)
    assert still["delivery_id"] == dead[removed.endpoint_id]["delivery_id"]
    assert sender(cs).run_once().attempted == 1  # the kept endpoint's, put back
    assert webhooks.redeliver(None, "granite") == []  # it is retrying; the other one is left


def test_a_slow_receiver_does_not_hold_up_a_healthy_one(cs, seeded):
    held = threading.Event()
    webhooks = Webhooks(cs)
    with receiving(Receiver(hold=held)) as slow, receiving() as healthy:
        webhooks.add(None, "granite", slow.url)
        webhooks.add(None, "granite", healthy.url)
        propose(cs, seeded)
        recorded: list[tuple[str, str]] = []
        healthy_recorded = threading.Event()

        def note(delivery: Any, status: str) -> None:
            recorded.append((delivery.target, status))
            if len(recorded) == 1:
                healthy_recorded.set()

        passing = threading.Thread(target=sender(cs, recorded=note).run_once)
        passing.start()
        try:
            assert healthy_recorded.wait(20), "the healthy delivery waited for the slow one"
            assert slow.arrived.wait(5)  # attempted at the same time, and still held
            assert not held.is_set()
            assert len(healthy.received) == 1
            [(first_target, first_status)] = recorded
            assert first_status == "delivered"
            assert first_target != _endpoint_of(webhooks, slow.url)
        finally:
            held.set()
            passing.join(20)
        assert [status for _, status in recorded] == ["delivered", "delivered"]


def _endpoint_of(webhooks: Webhooks, url: str) -> str:
    [endpoint] = [e for e in webhooks.endpoints(None, "granite") if e["url"] == url]
    return endpoint["endpoint_id"]


class Killed(Exception):
    """The sender process dying mid-batch."""


def test_a_sender_killed_mid_batch_resumes_and_every_notification_arrives(cs, seeded, clock):
    webhooks = Webhooks(cs)
    with receiving() as receiver:
        webhooks.add(None, "granite", receiver.url)
        for order in ("refund-ok", "refund-stale", "refund-declined", "provider-outage"):
            propose(cs, seeded, order)
        count = 0

        def die_after_two(delivery: Any, status: str) -> None:
            nonlocal count
            count += 1
            if count == 2:
                raise Killed

        # All four claimed at once (the endpoint may take four attempts at a time).
        batch = dataclasses.replace(SETTINGS, per_endpoint=4)
        with pytest.raises(Killed):
            notification_sender(cs, batch, recorded=die_after_two).run_once()
        statuses = [d["status"] for d in webhooks.deliveries(None, "granite")]
        assert statuses.count("delivered") == 2
        assert statuses.count("pending") == 2
        assert sender(cs).run_once().attempted == 0  # claimed by the dead sender, for a lease
        clock.advance(seconds=SETTINGS.lease_seconds + 1)
        resumed = sender(cs).run_once()
        assert resumed.attempted == 2
        assert resumed.delivered == 2

        expected = {event_id for event_id, _, _ in outbox(cs)}
        assert len(expected) == 4
        # At least once: every notification arrived, and only unrecorded ones came again.
        assert set(receiver.ids()) == expected
        assert all(receiver.ids().count(event_id) <= 2 for event_id in expected)
        assert len(receiver.received) <= 4 + 2
        # The receiver deduplicates by webhook-id: four notifications.
        assert len(set(receiver.ids())) == 4
    assert {d["status"] for d in webhooks.deliveries(None, "granite")} == {"delivered"}


def test_an_outcome_that_needs_a_person_is_notified(cs, seeded):
    with receiving() as receiver:
        Webhooks(cs).add(None, "granite", receiver.url)
        proposal_id = propose(cs, seeded, "refund-lost-response")
        assert cs.proposals.approve(proposal_id, AVA).status == "reconciling"
        report = sender(cs).run_once()
        # Approved before the sender ran: "awaits your approval" is no longer true, so it is
        # skipped (and says so); the outcome that needs a person is sent.
        assert (report.delivered, report.skipped) == (1, 1)
        types = [json.loads(r.body)["type"] for r in receiver.received]
        assert types == ["proposal.needs_reconciliation"]
    statuses = {d["type"]: d["status"] for d in Webhooks(cs).deliveries(None, "granite")}
    assert statuses == {
        "proposal.awaiting_approval": "skipped",
        "proposal.needs_reconciliation": "delivered",
    }


def test_a_removed_endpoint_gets_nothing_more_and_other_clubs_get_nothing(cs, seeded):
    webhooks = Webhooks(cs)
    with receiving() as granite, receiving() as maple:
        endpoint = webhooks.add(None, "granite", granite.url)
        webhooks.add(None, "maple", maple.url)
        propose(cs, seeded)
        sender(cs).run_once()
        assert len(granite.received) == 1
        assert maple.received == []
        webhooks.remove(None, "granite", endpoint.endpoint_id)
        assert webhooks.endpoints(None, "granite") == []
        propose(cs, seeded, "refund-stale")
        assert sender(cs).run_once().fanned_out == 0
        assert len(granite.received) == 1


@pytest.mark.parametrize(
    "url",
    [
        "",
        "not a url",
        "ftp://example.com/hook",
        "javascript:alert(1)",
        "https://",
        "https://user:pw@example.com/hook",
        "https://example.com/hook#frag",
        "https://exa mple.com/hook",
        'https://example.com/"><script>alert(1)</script>',
        "https://example.com/" + "a" * 2100,
    ],
)
def test_garbage_urls_are_refused_with_a_clear_error_and_nothing_is_recorded(cs, seeded, url):
    with pytest.raises(WebhookUrlError) as refused:
        Webhooks(cs).add(None, "granite", url)
    assert "webhook URL" in str(refused.value)
    assert Webhooks(cs).endpoints(None, "granite") == []


def test_who_may_manage_a_clubs_webhooks(cs, seeded):
    webhooks = Webhooks(cs)
    ava = Caller(AVA, organization="granite")
    added = webhooks.add(ava, "granite", "https://hooks.example/granite")
    assert webhooks.endpoints(ava, "granite")[0]["added_by"] == AVA
    with pytest.raises(NotFoundError):
        webhooks.add(None, "nowhere", "https://hooks.example/x")  # unknown club
    mia = Caller(MIA, organization="maple")
    for attempt in (
        lambda: webhooks.endpoints(mia, "granite"),  # another club's, by its slug
        lambda: webhooks.remove(mia, "granite", added.endpoint_id),
        lambda: webhooks.deliveries(mia, "granite"),
        lambda: webhooks.redeliver(mia, "granite"),
        lambda: webhooks.remove(Caller(MIA, organization="maple"), "maple", added.endpoint_id),
    ):
        with pytest.raises(NotFoundError):
            attempt()
    with pytest.raises(MissingPermissionError):
        webhooks.add(Caller(BEN, organization="granite"), "granite", "https://hooks.example/b")
    with pytest.raises(MissingPermissionError):
        webhooks.endpoints(Caller(BEN, organization="granite"), "granite")
    assert len(webhooks.endpoints(None, "granite")) == 1


@pytest.mark.parametrize("spelling", ["HTTP://127.0.0.1:9/hooks", "Http://127.0.0.1:9/hooks"])
def test_the_same_url_spelt_otherwise_is_a_duplicate(cs, seeded, spelling):
    """A scheme or host in capitals is the same endpoint: registering it twice would post
    every notification twice to one receiver."""
    webhooks = Webhooks(cs)
    webhooks.add(None, "granite", "http://127.0.0.1:9/hooks")
    with pytest.raises(DuplicateError, match="already registered"):
        webhooks.add(None, "granite", spelling)
    assert len(webhooks.endpoints(None, "granite")) == 1


def test_a_default_port_or_an_empty_path_is_the_same_url(cs, seeded):
    webhooks = Webhooks(cs)
    webhooks.add(None, "granite", "https://hooks.example/")
    for spelling in (
        "https://HOOKS.example:443/",
        "https://hooks.example",
        "https://hooks.example:443",
    ):
        with pytest.raises(DuplicateError):
            webhooks.add(None, "granite", spelling)
    webhooks.add(None, "granite", "https://hooks.example/Other")  # a path's case counts
    assert len(webhooks.endpoints(None, "granite")) == 2


def test_a_redelivered_letter_counts_every_attempt_it_had(cs, seeded, clock):
    port = free_port()
    webhooks = Webhooks(cs)
    webhooks.add(None, "granite", f"http://127.0.0.1:{port}/hooks")
    propose(cs, seeded)
    for _ in range(SETTINGS.max_attempts):
        sender(cs).run_once()
        clock.advance(days=1)
    webhooks.redeliver(None, "granite")
    with receiving(port=port):
        sender(cs).run_once()
    [delivered] = webhooks.deliveries(None, "granite")
    assert delivered["status"] == "delivered"
    assert delivered["attempts"] == len(delivered["attempt_log"]) == SETTINGS.max_attempts + 1


def test_redelivering_every_dead_letter_of_a_club_takes_any_number_of_them(cs, seeded, clock):
    """ "Redeliver all" put the club's dead letters back with one statement naming each id as a
    parameter: past 65,535 of them PostgreSQL refused it, and the club's page answered 500."""
    webhooks = Webhooks(cs)
    endpoint = webhooks.add(None, "granite", "https://hooks.example/a").endpoint_id
    granite = str(cs.notifications.managed_organization(None, "granite").id)
    maple = str(cs.notifications.managed_organization(None, "maple").id)
    now = webhooks.ledger._t(clock.now())
    # PostgreSQL takes at most 65,535 parameters a statement; SQLite 250,000, which the same
    # statement meets as PostgreSQL's limit shows it, so it is not made to write as many.
    dead = 66_000 if webhooks.ledger.sql.is_postgres else 1_000
    with webhooks.ledger.sql.transaction() as cursor:  # made by the database: fast on both
        cursor.execute(
            "INSERT INTO notification_deliveries (delivery_id, event_id, organization_id,"
            " channel, target, language, status, attempts, next_attempt_at, created_at)"
            " WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < ?)"
            " SELECT 'd' || (100000 + x), 'e' || x, CASE WHEN x < ? THEN ? ELSE ? END,"
            " 'webhook', ?, 'en', 'dead', 8, ?, ? FROM n",
            (dead + 2, dead, granite, maple, endpoint, now, now),
        )
    put_back = webhooks.redeliver(None, "granite")
    assert put_back == [f"d{100000 + n}" for n in range(dead)]
    with webhooks.ledger.sql.reading() as reader:
        counts = reader.execute(
            "SELECT organization_id, status, attempts, COUNT(*) FROM notification_deliveries"
            " GROUP BY organization_id, status, attempts ORDER BY organization_id"
        ).fetchall()
    assert sorted(counts) == sorted([(granite, "pending", 0, dead), (maple, "dead", 8, 3)])
    assert webhooks.redeliver(None, "granite") == []  # nothing dead is left
