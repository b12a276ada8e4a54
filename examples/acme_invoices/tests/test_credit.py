"""ACME's credit as its managers live it, on every backend: proposed (by the assistant or
by a call), approved, issued once by ACME's ledger; an answer lost and reconciled; the
invoice changed before approval, or between the approval's check and the ledger's write;
the invoice deleted by ACME after approval; the ledger down."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from acme_invoices.company import Invoice
from conftest import Company, start_ledger
from countersign.application.errors import UnknownOperationError
from countersign.domain.contracts import PERMISSIONS
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import NotFoundError
from countersign.domain.messages import proposal_headline
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap, enable_plugins
from countersign.infrastructure.settings import Settings
from countersign.infrastructure.testing.deployment import AVA

PLUGINS = ("acme-invoices",)
CREDIT = {"amount_cents": 2_500, "reason": "The delivery was late."}


@pytest.fixture
def countersign_plugins() -> tuple[str, ...]:
    return PLUGINS


@pytest.fixture
def acme(cs: Countersign, seeded: dict[str, Any]) -> Countersign:
    """countersign with ACME's plug-in, over the seeded clubs; Ava may credit invoices."""
    cs.club.set_permissions("granite", AVA, sorted(PERMISSIONS))
    return cs


def propose(cs: Countersign, key: str = "INV-1042", request: dict[str, Any] = CREDIT) -> str:
    created = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation="acme.invoice_credit",
        resource_id=key,
        request=request,
    )
    return created.proposal_id


def settle(cs: Countersign) -> list[tuple[str, str]]:
    """One reconciler pass, once the approval's lease is over."""
    cs.clock.advance(seconds=cs.settings.reconcile_lease_seconds + 1)
    return [(report.action, report.status) for report in cs.sweepers.reconcile()]


def balance(company: Company, key: str = "INV-1042") -> int | None:
    invoice = company.invoice(key)
    return None if invoice is None else invoice.balance_cents


# -- proposed, approved, issued once ------------------------------------------------------------


def test_a_proposed_credit_shows_the_invoice_and_is_issued_once_on_approval(acme, company):
    proposal_id = propose(acme)
    card = acme.cards.card(proposal_id, AVA, "fr")

    report = acme.proposals.approve(proposal_id, AVA)

    assert proposal_headline(card.operation, card.preview, "fr") == (
        "Créditer 25,00\u00a0$\u00a0CA sur la facture INV-1042"  # Babel's French spaces
    )
    assert (card.preview["customer"], card.preview["balance_after_cents"]) == (
        "Granite Hardware",
        9_500,
    )
    assert report.status == "succeeded", report
    assert report.message == (
        "Credit note CN-000001 issued: $25.00 CAD on invoice INV-1042, whose balance is now "
        "$95.00 CAD."
    )
    assert balance(company) == 9_500
    key = f"countersign:acme.invoice_credit:{proposal_id}"
    assert [(c["idempotency_key"], c["status"], c["requests"]) for c in company.credits()] == [
        (key, "succeeded", 1)
    ]
    assert acme.proposals.approve(proposal_id, AVA).result == "already_completed"
    assert len(company.credits()) == 1


def test_the_assistant_proposes_the_credit_from_the_managers_words(acme, company):
    turn = acme.assistant.turn(
        organization="granite",
        actor=AVA,
        section="acme",
        resource_id="INV 2/b",  # ACME's own key, spaces and slash included
        message="Please credit 12.50, the parcel arrived damaged.",
    )

    assert turn.proposal is not None, turn.messages
    assert turn.proposal["preview"]["amount_cents"] == 1_250
    assert turn.proposal["preview"]["customer"] == "Maple Supplies"
    assert company.credits() == []  # proposed only: nothing reached the ledger


def test_the_assistant_reads_the_amount_not_the_invoice_number_in_french(acme, company):
    turn = acme.assistant.turn(
        organization="granite",
        actor=AVA,
        section="acme",
        resource_id="INV-1042",
        message="Créditez INV-1042 de 30,00 $ : colis en retard.",
        language="fr",
    )

    assert turn.proposal is not None, turn.messages
    assert turn.proposal["preview"]["amount_cents"] == 3_000


def test_a_credit_over_the_balance_is_refused_when_proposed_saying_the_balance(acme, company):
    with pytest.raises(InvalidRequestError) as refused:
        propose(acme, request={"amount_cents": 12_001, "reason": "Too much."})

    [problem] = refused.value.problems
    assert problem.field == "amount_cents"
    assert problem.for_people is not None
    assert problem.for_people.text("en") == (
        "The credit is more than the invoice's balance of $120.00 CAD."
    )


def test_an_invoice_acme_does_not_have_is_not_found(acme, company):
    with pytest.raises(NotFoundError):
        propose(acme, key="INV-404")


# -- a lost answer, reconciled ------------------------------------------------------------------


def test_a_lost_answer_is_reconciled_to_exactly_one_credit(acme, company):
    proposal_id = propose(acme)
    company.lose_next_answer()

    lost = acme.proposals.approve(proposal_id, AVA)
    swept = settle(acme)

    assert (lost.status, lost.outcome and lost.outcome["kind"]) == (
        "reconciling",
        "needs_reconciliation",
    )
    assert swept == [("settled", "succeeded")]  # found under the key: not sent again
    assert [c["requests"] for c in company.credits()] == [1]
    assert balance(company) == 9_500
    settled = acme.proposals.approve(proposal_id, AVA)
    assert (settled.result, settled.status) == ("already_completed", "succeeded")
    assert settled.message is not None
    assert "CN-000001" in settled.message


def test_the_company_deleting_the_invoice_after_approval_never_blocks_the_settlement(acme, company):
    proposal_id = propose(acme)
    company.lose_next_answer()
    acme.proposals.approve(proposal_id, AVA)

    company.database.delete("INV-1042")  # ACME's invoicing removes it meanwhile
    swept = settle(acme)

    assert swept == [("settled", "succeeded")]
    assert [c["status"] for c in company.credits()] == ["succeeded"]
    report = acme.proposals.approve(proposal_id, AVA)
    assert report.message is not None
    assert "CN-000001" in report.message


# -- the invoice changed ------------------------------------------------------------------------


def test_an_invoice_changed_after_the_proposal_requires_revision_and_credits_nothing(acme, company):
    proposal_id = propose(acme)
    reissued = Invoice("INV-1042", "granite", "Granite Hardware", "CAD", 12_000)
    company.database.put(reissued)

    report = acme.proposals.approve(proposal_id, AVA)

    assert report.status == "revision_required"
    assert report.outcome is not None
    assert report.outcome["reason"]["code"] == "invoice_changed"
    assert report.message is not None
    assert "The invoice changed" in report.message
    assert company.credits() == []  # the ledger was never asked
    assert balance(company) == 12_000


class _ChangeTheInvoiceJustBeforeTheCall:
    """Fault points: ACME changes the invoice after the approval's check, just before the
    ledger is called: the gap only the conditional write closes."""

    def __init__(self, company: Company) -> None:
        self.company = company

    def reached(self, point: str) -> None:
        if point == "before_provider_call":
            changed = Invoice("INV-1042", "granite", "Granite Hardware", "CAD", 1_000)
            self.company.database.put(changed)


@pytest.fixture
def racing(
    acme: Countersign, company: Company, database_url: str, clock: FakeClock
) -> Iterator[Countersign]:
    wired = bootstrap(
        Settings(database_url=database_url, plugins=PLUGINS),
        clock=clock,
        faults=_ChangeTheInvoiceJustBeforeTheCall(company),
    )
    yield wired
    wired.close()


def test_a_change_between_the_check_and_the_ledgers_write_is_refused_by_the_ledger(racing, company):
    proposal_id = propose(racing)

    report = racing.proposals.approve(proposal_id, AVA)

    assert report.status == "revision_required"
    assert report.outcome is not None
    assert report.outcome["reason"]["code"] == "invoice_changed"
    assert [(c["status"], c["requests"]) for c in company.credits()] == [("refused", 1)]
    assert balance(company) == 1_000  # ACME's change stands; nothing was credited on it


# -- the ledger down -----------------------------------------------------------------------------


def test_a_credit_approved_while_the_ledger_is_down_is_sent_once_it_is_back(
    acme, company, monkeypatch
):
    proposal_id = propose(acme)
    port = company.ledger_url.rsplit(":", 1)[1]
    _stop_the_ledger(company)

    down = acme.proposals.approve(proposal_id, AVA)
    still = settle(acme)
    ledger, _ = start_ledger(company.database.path, port=int(port))  # back, same address
    try:
        back = settle(acme)
    finally:
        ledger.terminate()
        ledger.wait(timeout=10)
        assert ledger.stdout is not None
        ledger.stdout.close()

    assert (down.status, down.outcome and down.outcome["kind"]) == (
        "reconciling",
        "needs_reconciliation",
    )
    assert still == [("still_uncertain", "reconciling")]
    assert back == [("replayed", "succeeded")]  # nothing under the key: sent, once
    assert balance(company) == 9_500


def _stop_the_ledger(company: Company) -> None:
    company.process.terminate()
    company.process.wait(timeout=10)


def test_without_the_plugin_enabled_the_operation_does_not_exist(cs, seeded, company):
    enable_plugins(())
    plain = bootstrap(Settings(database_url=cs.settings.database_url, plugins=()), clock=cs.clock)
    try:
        with pytest.raises(UnknownOperationError):
            propose(plain)
    finally:
        plain.close()


# -- read by the projections as stored ----------------------------------------------------------


def test_its_events_are_read_by_the_projections_as_the_mapper_reads_them(acme, company):
    """The projections decode stored events with msgspec into structs made from each event
    class (countersign's log_structs.py): a credit's events, its arguments, preview and
    outcomes among them, read there as the library's mapper reads them, field for field."""
    from uuid import UUID

    import msgspec
    from countersign.infrastructure.persistence.log_structs import StructDecoder
    from eventsourcing.persistence import Notification

    propose(acme)  # left pending
    company.lose_next_answer()
    acme.proposals.approve(propose(acme, "INV 2/b", {**CREDIT, "amount_cents": 1_000}), AVA)
    settle(acme)
    entries: list[Any] = []
    while batch := acme.app.recorder.select_log(entries[-1].id if entries else 0, 500):
        entries.extend(batch)
    decode = StructDecoder(acme.app.mapper)
    credits = 0
    for entry in entries:
        slow = acme.app.mapper.to_domain_event(
            Notification(
                id=entry.id,
                originator_id=UUID(str(entry.originator_id)),
                originator_version=entry.originator_version,
                topic=entry.topic,
                state=entry.state,
            )
        )
        fast = decode(entry)
        assert isinstance(fast, msgspec.Struct), entry.topic
        assert type(fast).__qualname__ == type(slow).__qualname__
        for name, value in vars(slow).items():
            assert (name, getattr(fast, name), type(getattr(fast, name))) == (
                name,
                value,
                type(value),
            )
        credits += entry.topic.endswith(":Proposal.Proposed") and slow.kind == "acme.invoice_credit"
    assert credits >= 2
