"""Each of ACME's invoices is one club's, on every backend: a manager of another club reaches
it nowhere (proposing, the assistant, its read tool, approving once it moved), and is answered
exactly as for an invoice ACME does not have. The outside review's reproduction (Maple's
manager credited Granite's invoice to nothing, and Granite's own credit was then refused for
lack of balance) is the first two tests, in process and from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from acme_invoices.company import Invoice
from acme_invoices.contracts import SECTION
from acme_invoices.plugin import DATABASE_ENV, LEDGER_ENV
from conftest import Company
from countersign.application.assistant.sections import ASSISTANTS
from countersign.domain.club.organization import Organization
from countersign.domain.contracts import PERMISSIONS, REGISTRY
from countersign.domain.errors import NotFoundError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.deployment import AVA, MIA, count_events

PLUGINS = ("acme-invoices",)
CREDIT = "acme.invoice_credit"
#: The review's request: all of Granite's invoice.
EVERYTHING = {"amount_cents": 12_000, "reason": "The delivery was late."}
COUNTERSIGN = os.path.join(os.path.dirname(sys.executable), "countersign")


@pytest.fixture
def countersign_plugins() -> tuple[str, ...]:
    return PLUGINS


@pytest.fixture
def clubs(cs: Countersign, seeded: dict[str, Any]) -> Countersign:
    """Both clubs' managers may credit invoices, as after the README's setup (seeded with the
    plug-in enabled, every manager holds its permission): only the club can refuse them."""
    cs.club.set_permissions("granite", AVA, sorted(PERMISSIONS))
    cs.club.set_permissions("maple", MIA, sorted(PERMISSIONS))
    return cs


def propose(cs: Countersign, org: str, actor: str, key: str, request: dict[str, Any]) -> str:
    created = cs.proposals.propose(
        organization=org, actor=actor, operation=CREDIT, resource_id=key, request=request
    )
    return created.proposal_id


def refusal(call: Any) -> type[BaseException] | None:
    """What ``call`` raised (its class), None if it raised nothing."""
    try:
        call()
    except Exception as error:
        return type(error)
    return None


# -- the review's reproduction ------------------------------------------------------------------


def test_maple_cannot_credit_granites_invoice_and_granites_own_credit_still_runs(clubs, company):
    stored = count_events(clubs)

    foreign = refusal(lambda: propose(clubs, "maple", MIA, "INV-1042", EVERYTHING))
    unknown = refusal(lambda: propose(clubs, "maple", MIA, "INV-404", EVERYTHING))

    assert foreign is NotFoundError, "Maple's manager reached Granite's invoice"
    assert unknown is NotFoundError  # answered exactly as an invoice ACME does not have
    assert count_events(clubs) == stored  # nothing recorded
    assert company.credits() == []
    assert balance(company) == 12_000
    granites = propose(clubs, "granite", AVA, "INV-1042", EVERYTHING)
    report = clubs.proposals.approve(granites, AVA)
    assert report.status == "succeeded", report
    assert report.message is not None
    assert report.message.endswith("whose balance is now $0.00 CAD.")


def test_the_reviews_commands_answer_not_found_to_maple(clubs, company, database_url):
    """The review's commands, as it ran them (``countersign propose --org maple`` on
    ``INV-1042``), on this test's database: Maple is answered "Not found: ..." as for a key ACME
    does not have, and Granite's credit of the whole balance then runs."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("COUNTERSIGN_", "ACME_"))},
        "COUNTERSIGN_PLUGINS": "acme-invoices",
        "COUNTERSIGN_DATABASE_URL": database_url,
        DATABASE_ENV: str(company.database.path),
        LEDGER_ENV: company.ledger_url,
    }
    request = json.dumps(EVERYTHING)

    def countersign(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [COUNTERSIGN, *argv], env=env, capture_output=True, text=True, timeout=120
        )

    def proposing(org: str, actor: str, key: str, *more: str) -> subprocess.CompletedProcess[str]:
        return countersign(
            *("propose", "--org", org, "--as", actor, "--operation", CREDIT),
            *("--resource", key, "--request", request, *more),
        )

    maple = proposing("maple", MIA, "INV-1042")
    unknown = proposing("maple", MIA, "INV-404")
    granite = proposing("granite", AVA, "INV-1042", "--json")

    assert maple.returncode == 0, maple.stderr
    assert maple.stdout.startswith("Not found: check the club, the member and the id named")
    assert (unknown.returncode, unknown.stdout) == (maple.returncode, maple.stdout)
    assert company.credits() == []
    assert granite.returncode == 0, granite.stderr
    proposal_id = json.loads(granite.stdout)["proposal_id"]
    approved = countersign("approve", proposal_id, "--as", AVA)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.splitlines() == [
        "Executed: succeeded.",
        "  Credit note CN-000001 issued: $120.00 CAD on invoice INV-1042, whose balance is "
        "now $0.00 CAD.",
    ]


# -- every other way in -------------------------------------------------------------------------


def test_the_assistant_of_another_club_cannot_open_the_invoice(clubs, company):
    stored = count_events(clubs)

    with pytest.raises(NotFoundError):
        clubs.assistant.turn(
            organization="maple",
            actor=MIA,
            section="acme",
            resource_id="INV-1042",
            message="Please credit 120.00, the delivery was late.",
        )

    assert count_events(clubs) == stored  # not even a conversation
    assert company.credits() == []


def test_the_read_tool_and_the_contract_answer_another_clubs_invoice_as_unknown(clubs, company):
    """Each read of an invoice the plug-in makes, called directly with Maple's scope (as a
    caller that skipped countersign's own checks would), finds nothing of Granite's."""
    contract = REGISTRY[CREDIT]
    [read_invoice] = ASSISTANTS[SECTION].read_tools
    maple, granite = Organization.create_id("maple"), Organization.create_id("granite")

    def loaded(org: Any, key: str) -> Any:
        return lambda: contract.load(contract.scope(org, key), clubs.store)

    def read(org: Any, key: str) -> Any:
        scope = contract.scope(org, key)
        return lambda: read_invoice.run(read_invoice.request(), scope, clubs.store)

    for reading in (loaded, read):
        assert refusal(reading(maple, "INV-1042")) is NotFoundError
        assert refusal(reading(maple, "INV-404")) is NotFoundError
        assert refusal(reading(granite, "INV-1042")) is None  # Granite's own reads it

    summary = ASSISTANTS[SECTION].summary(contract.scope(maple, "INV-1042"), clubs.store)
    assert "Granite Hardware" not in summary


def test_each_club_credits_its_own_invoices_only(clubs, company):
    company.database.put(Invoice("INV-7001", "maple", "Maple Pro Shop", "CAD", 8_000))

    assert refusal(lambda: propose(clubs, "granite", AVA, "INV-7001", EVERYTHING)) is NotFoundError
    mias = propose(clubs, "maple", MIA, "INV-7001", {"amount_cents": 500, "reason": "Late."})
    report = clubs.proposals.approve(mias, MIA)

    assert report.status == "succeeded", report
    assert balance(company, "INV-7001") == 7_500
    assert balance(company) == 12_000


def test_an_invoice_acme_gives_to_another_club_before_approval_is_not_credited(clubs, company):
    proposal_id = propose(clubs, "granite", AVA, "INV-1042", EVERYTHING)
    invoice = company.invoice("INV-1042")
    assert invoice is not None
    company.database.put(
        Invoice(invoice.key, "maple", invoice.customer, invoice.currency, invoice.balance_cents)
    )

    report = clubs.proposals.approve(proposal_id, AVA)

    assert report.status == "revision_required", report
    assert report.outcome is not None
    assert report.outcome["reason"]["code"] == "resource_unavailable"
    assert company.credits() == []  # the ledger was never asked
    assert balance(company) == 12_000


def balance(company: Company, key: str = "INV-1042") -> int | None:
    invoice = company.invoice(key)
    return None if invoice is None else invoice.balance_cents
