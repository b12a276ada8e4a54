"""E-mail notifications: sent over SMTP to a real local server (aiosmtpd), in each member's
language, with the review link and never an approve link."""

from __future__ import annotations

import email
import email.policy
import threading
from collections.abc import Iterator
from dataclasses import replace
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from countersign.application.authorization import Caller, Credential
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.messages import origin_line
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.notifications.ledger import DeliveryLedger
from countersign.infrastructure.notifications.messages import Mail, email_message
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender

from tests.conftest import AVA, BEN, MIA, REFUND, TO_CARD
from tests.receivers import (
    allow_loopback,  # noqa: F401 - autouse
    free_port,
    receiving,
)
from tests.support.golden_tables import open_golden
from tests.support.proposing import propose

CLEO = "cleo@granite.example"  # may approve refunds, reads French
DAN = "dan@granite.example"  # may approve refunds, reads English
NOAH = "noah@granite.example"  # the seeded second manager: may approve refunds, English


class Inbox:
    """What the SMTP server accepted, one message per recipient."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self._lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        with self._lock:
            self.messages.append(parsed)
        return "250 Message accepted for delivery"

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.messages if m["To"] == address]


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


def settings(port: int) -> NotifySettings:
    return NotifySettings(
        public_url="https://club.example",
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_from="countersign@club.example",
        max_attempts=3,
        first_retry_seconds=10,
        timeout_seconds=5,
    )


def approvers(cs: Countersign) -> None:
    granite = cs.store.get(Organization.create_id("granite"), Organization)
    granite.add_member(CLEO, "Cléo Roy", "manager", [Permission.REFUND_ORDERS])
    granite.add_member(DAN, "Dan Ng", "manager", [Permission.REFUND_ORDERS])
    cs.store.save(granite)
    cs.notifications.set_member_language("granite", CLEO, "fr")


def body(message: EmailMessage) -> str:
    part = message.get_body(("plain",))
    assert part is not None
    return str(part.get_content())


def test_members_who_may_approve_are_emailed_in_their_language(cs, seeded, smtp):
    inbox, port = smtp
    approvers(cs)
    proposal_id = propose(cs, seeded, "refund-ok")
    report = notification_sender(cs, settings(port)).run_once()
    assert (report.fanned_out, report.delivered) == (3, 3)
    # The requester and a member without the permission are not asked to approve.
    assert sorted(m["To"] for m in inbox.messages) == [CLEO, DAN, NOAH]
    link = f"https://club.example/proposals/{proposal_id}"

    [french] = inbox.to(CLEO)
    assert french["Content-Language"] == "fr"
    assert "attend votre approbation" in french["Subject"]
    assert "Granite Curling Club" in french["Subject"]
    assert "Bonjour Cléo Roy" in body(french)
    assert link in body(french)

    [english] = inbox.to(DAN)
    assert english["Content-Language"] == "en"
    assert "awaits your approval" in english["Subject"]
    assert "Hello Dan Ng" in body(english)
    assert f"Ava Lindqvist ({AVA}) proposed an operation" in body(english)  # as "Requested by"
    assert link in body(english)

    for message in inbox.messages:
        assert "/approve" not in message.as_string()  # a review link, never an approve link
        # No amounts, no arguments (the link's random id could hold "4800" by chance).
        assert "4800" not in body(message).replace(proposal_id, "")
        assert message["From"] == "countersign@club.example"
    # One notification, one event id, on every message.
    assert len({m["X-Countersign-Event-Id"] for m in inbox.messages}) == 1
    assert notification_sender(cs, settings(port)).run_once().attempted == 0


def test_an_outcome_needing_a_person_is_mailed_to_its_requester_and_approver(cs, seeded, smtp):
    inbox, port = smtp
    approvers(cs)
    proposal_id = propose(cs, seeded, "refund-lost-response")
    notification_sender(cs, settings(port)).run_once()
    inbox.messages.clear()
    assert cs.proposals.approve(proposal_id, CLEO).status == "reconciling"
    notification_sender(cs, settings(port)).run_once()
    assert sorted(m["To"] for m in inbox.messages) == [AVA, CLEO]
    [french] = inbox.to(CLEO)
    assert "vérification auprès du fournisseur" in french["Subject"]
    assert f"https://club.example/proposals/{proposal_id}" in body(french)
    [english] = inbox.to(AVA)
    assert "being checked with the provider" in english["Subject"]
    assert BEN not in [m["To"] for m in inbox.messages]


def test_mail_waits_while_the_relay_is_down_and_arrives_once_it_is_up(cs, seeded, clock):
    approvers(cs)
    port = free_port()
    propose(cs, seeded, "refund-ok")
    sender = notification_sender(cs, settings(port))
    first = sender.run_once()
    assert (first.attempted, first.retrying) == (3, 3)
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        clock.advance(seconds=25)
        assert sender.run_once().delivered == 3
    finally:
        controller.stop()
    assert sorted(m["To"] for m in inbox.messages) == [CLEO, DAN, NOAH]


def test_without_a_relay_only_webhooks_are_sent(cs, seeded):
    approvers(cs)
    with receiving() as receiver:
        Webhooks(cs).add(None, "granite", receiver.url)
        propose(cs, seeded, "refund-ok")
        quiet = replace(settings(1), smtp_host=None)
        report = notification_sender(cs, quiet).run_once()
        assert (report.fanned_out, report.delivered) == (1, 1)
    assert [d["channel"] for d in Webhooks(cs).deliveries(None, "granite")] == ["webhook"]


def test_the_seeded_maple_manager_reads_french(cs, seeded):
    assert cs.club.membership("maple", MIA).member.language == "fr"
    assert cs.club.membership("granite", AVA).member.language == "en"


class Refusing(Inbox):
    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        return "550 mailbox unavailable"


class RefusingTheAddress(Inbox):
    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:
        return "550 no such user here"


def _the_one_attempt_through(relay: Inbox, cs: Any, seeded: Any) -> dict[str, Any]:
    """A proposal's e-mail sent once through ``relay``: its one delivery's one attempt."""
    port = free_port()
    controller = Controller(relay, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        propose(cs, seeded)
        notification_sender(cs, settings(port)).run_once()
    finally:
        controller.stop()
    [delivery] = Webhooks(cs).deliveries(None, "granite")
    assert delivery["channel"] == "email"
    [attempt] = delivery["attempt_log"]
    return dict(attempt)


def test_a_relay_refusing_a_message_is_said_of_the_relay_not_an_endpoint(cs, seeded):
    attempt = _the_one_attempt_through(Refusing(), cs, seeded)
    assert attempt["status_code"] == 550
    assert attempt["result"] == "failed: the e-mail relay answered 550"
    assert attempt["result_key"] == "relay_answered"


def test_a_relay_refusing_the_address_is_said_so_not_could_not_connect(cs, seeded):
    """The relay answered, and took no recipient: smtplib raises SMTPRecipientsRefused, which
    read "failed: could not connect", as if no relay had answered (the consumer's walk)."""
    attempt = _the_one_attempt_through(RefusingTheAddress(), cs, seeded)
    assert attempt["status_code"] is None
    assert attempt["result"] == "failed: the e-mail relay refused the address"
    assert attempt["result_key"] == "address_refused"


def _propose_as(cs: Countersign, seeded: Any, credential: Credential, service: str) -> str:
    """A refund Ava's token named ``service`` proposed (an agent token proposes, never decides)."""
    caller = Caller(AVA, "granite", frozenset({"orders.refund"}), credential, service)
    return cs.access.propose(
        caller, operation=REFUND, resource_id=seeded["orders"]["refund-ok"], request=TO_CARD
    ).proposal_id


@pytest.mark.parametrize("rebuilt", [False, True], ids=["followed", "rebuilt"])
def test_an_agent_tokens_proposal_is_mailed_as_the_token_acting_for_its_member(
    cs, seeded, smtp, rebuilt
):
    """A manager reads that Ava's agent token proposed it, not that Ava asked: the token's name
    and whose it is, in the review page's words, in English and French; the same from the
    outbox as the runner followed the log and as a rebuild made it again."""
    inbox, port = smtp
    approvers(cs)
    proposal_id = _propose_as(cs, seeded, Credential.AGENT_TOKEN, "front-desk")
    if rebuilt:
        [runner] = cs.projection_runners(["notifications"])
        runner.rebuild()
    assert notification_sender(cs, settings(port)).run_once().delivered == 3
    [english] = inbox.to(DAN)
    assert (
        "The agent “front-desk” (agent token), acting for Ava Lindqvist"
        f" ({AVA}), proposed an operation that needs a person's approval"
    ) in " ".join(body(english).split())
    assert f"Ava Lindqvist ({AVA}) proposed" not in body(english)
    [french] = inbox.to(CLEO)
    assert (
        "L'agent « front-desk » (jeton d'agent), agissant pour Ava Lindqvist"
        f" ({AVA}), a proposé une opération"
    ) in " ".join(body(french).split())
    # The review page names the token in the same words, in each language.
    through = cs.access.record(proposal_id, DAN)["requested_through"]
    assert origin_line(None, "en", through) == "Proposed by the agent “front-desk” (agent token)"
    assert origin_line(None, "fr", through) == "Proposée par l'agent « front-desk » (jeton d'agent)"


def test_an_approver_tokens_and_an_assistants_proposals_are_named_too(cs, seeded, smtp):
    inbox, port = smtp
    approvers(cs)
    _propose_as(cs, seeded, Credential.APPROVER_TOKEN, "billing")
    notification_sender(cs, settings(port)).run_once()
    [english] = inbox.to(DAN)
    assert (
        f"The service “billing” (approver token), acting for Ava Lindqvist ({AVA}), proposed"
    ) in " ".join(body(english).split())
    [french] = inbox.to(CLEO)
    assert "Le service « billing » (jeton d'approbateur), agissant pour" in " ".join(
        body(french).split()
    )
    inbox.messages.clear()
    _propose_as(cs, seeded, Credential.ASSISTANT, "")
    notification_sender(cs, settings(port)).run_once()
    [english] = inbox.to(DAN)
    assert f"The assistant, on behalf of Ava Lindqvist ({AVA}), proposed" in " ".join(
        body(english).split()
    )


def test_a_token_name_cannot_write_lines_of_the_mail(cs, seeded, smtp):
    """A token's name is the club's text: one recorded with line breaks and punctuation (an
    earlier release's, or written to the log by other means) is shown as a plain name, on the
    proposer's line, and no header or line of the message is its own."""
    inbox, port = smtp
    approvers(cs)
    _propose_as(cs, seeded, Credential.AGENT_TOKEN, 'bot"\r\nBcc: x@evil.example\n\nClick <a>')
    notification_sender(cs, settings(port)).run_once()
    [english] = inbox.to(DAN)
    assert english["Bcc"] is None
    text = body(english)
    assert "The agent “botBcc xevil.exampleClick a” (agent token), acting for" in text
    assert not any(line.startswith(("Bcc", "Click")) for line in text.splitlines())


def test_a_proposal_recorded_before_credentials_were_is_mailed_as_its_members(tmp_path):
    """Old rows: a golden stream of a release before ``requested_through`` was recorded,
    rebuilt into this release's outbox, reads as the member's own proposal."""
    cs = open_golden("golden_0a9997d", tmp_path)
    try:
        [runner] = cs.projection_runners(["notifications"])
        runner.rebuild()
        rows = DeliveryLedger(cs.sql).outbox_after(0, 100)
        awaiting = [r for r in rows if r["reason"] == "awaiting_approval"]
        assert awaiting
        assert all(r["requested_through"] is None for r in awaiting)
        for row in awaiting:
            name = cs.notifications.member_name(row["organization_id"], row["requester"])
            message = email_message(
                row, Mail(DAN, "Dan Ng", "en", name), "Granite", "https://x/p", "cs@x"
            )
            assert f"{name} ({row['requester']}) proposed an operation" in body(message)
    finally:
        cs.close()


def test_a_review_link_by_default_opens_where_the_pages_passkeys_work(monkeypatch):
    """Unset, the e-mails' review links point at the address the pages' passkeys belong to
    by default (a browser refuses a passkey of localhost at 127.0.0.1, so a manager who
    followed a link there could not approve with one)."""
    from countersign.infrastructure.notifications.settings import NotifySettings
    from countersign.infrastructure.settings import Settings

    monkeypatch.delenv("COUNTERSIGN_PUBLIC_URL", raising=False)
    link = NotifySettings.from_env().review_url("p-1")
    assert link == f"{Settings().webauthn_origins[0]}/proposals/p-1"
