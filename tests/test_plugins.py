"""Plug-ins (issue 26): a package other than countersign adds operations, a section, a provider
and an aggregate of its own, enabled per deployment by ``COUNTERSIGN_PLUGINS``.

The plug-in is ``tests/plugins/sample_plugin``. Nothing is installed: a ``*.dist-info`` folder
with its ``entry_points.txt`` is written to a temporary folder put on ``sys.path`` (and on
``PYTHONPATH`` for the commands run as processes), which is how importlib.metadata finds an
installed distribution.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from countersign.application.errors import CorruptRecordError
from countersign.domain.contracts import PERMISSIONS, REGISTRY, REVISION_REASONS
from countersign.domain.contracts.presentation import Localized, PreviewField, Shown
from countersign.domain.errors import NotFoundError
from countersign.domain.proposal import Proposal
from countersign.domain.scope import keyed_resource_id
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign, bootstrap, enable_plugins
from countersign.infrastructure.entrypoints.http.models.assistants import _known_section
from countersign.infrastructure.entrypoints.web.views import format_time
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.persistence.stored_events import (
    UnwritableEventError,
    topic_allowed,
)
from countersign.infrastructure.settings import Settings, SettingsError

from tests.conftest import AVA, MIA, TO_CARD, events_table
from tests.test_web_pages import _main, web_for

PLUGINS = Path(__file__).parent / "plugins"
COUNTERSIGN = Path(sys.executable).with_name("countersign")
ENTRY_POINTS = """\
[countersign.plugins]
sample = sample_plugin.plugin:build
sample-broken = sample_plugin.plugin:broken
sample-lacking = sample_plugin.plugin:lacking
sample-noevents = sample_plugin.plugin:noevents
sample-typo = sample_plugin.plugin:biuld
sample-section = sample_plugin.plugin:ASSISTANT
sample-misnamed = sample_plugin.plugin:build
sample-reshaped = sample_plugin.plugin:reshaped
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The sample plug-in's distribution, findable (not enabled); yields its data folder."""
    site = tmp_path_factory.mktemp("site")
    info = site / "countersign_sample_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: countersign-sample-plugin\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    data = tmp_path_factory.mktemp("company")
    sys.path[:0] = [str(site), str(PLUGINS)]
    os.environ["SAMPLE_PLUGIN_DATA"] = str(data)
    try:
        yield site
    finally:
        enable_plugins()  # the deployment's own again (COUNTERSIGN_PLUGINS)
        for path in (str(site), str(PLUGINS)):
            sys.path.remove(path)
        os.environ.pop("SAMPLE_PLUGIN_DATA", None)


@pytest.fixture
def company(installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's company data (its invoices, its ledger), with two invoices."""
    monkeypatch.setenv("SAMPLE_PLUGIN_DATA", str(tmp_path))
    from sample_plugin.company import Invoice, InvoiceBook

    book = InvoiceBook(tmp_path / "invoices.db")
    book.put(Invoice("INV-1", "granite", "Granite Hardware", 12_000))
    book.put(Invoice("INV 2/b", "granite", "Maple Supplies", 5_000))
    return tmp_path


@pytest.fixture
def wired(
    company: Path, database_url: str, clock: FakeClock, cs: Countersign, seeded: dict[str, Any]
) -> Iterator[Countersign]:
    """countersign with the sample plug-in enabled, over the seeded clubs; Ava may use it."""
    enable_plugins(())  # the data folder is read when the plug-in is built: build it again
    plugged = bootstrap(Settings(database_url=database_url, plugins=("sample",)), clock=clock)
    plugged.club.set_permissions("granite", AVA, sorted(PERMISSIONS))
    yield plugged
    plugged.close()
    enable_plugins()  # the deployment's own again (COUNTERSIGN_PLUGINS)


def _env(installed: Path, company: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNTERSIGN_")}
    env["PYTHONPATH"] = os.pathsep.join([str(installed), str(PLUGINS)])
    if company is not None:
        env["SAMPLE_PLUGIN_DATA"] = str(company)
    return {**env, **extra}


def _countersign(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(COUNTERSIGN), *argv], env=env, capture_output=True, text=True, timeout=120
    )


def _propose(cs: Countersign, operation: str, key: str, request: dict[str, Any]) -> str:
    created = cs.proposals.propose(
        organization="granite", actor=AVA, operation=operation, resource_id=key, request=request
    )
    return created.proposal_id


# -- enabled only when named ---------------------------------------------------------------------


def test_an_installed_plugin_is_listed_only_when_the_deployment_names_it(installed, tmp_path):
    without = _countersign(_env(installed, tmp_path), "operations", "--json")
    named = _countersign(
        _env(installed, tmp_path, COUNTERSIGN_PLUGINS="sample"), "operations", "--json"
    )

    assert without.returncode == 0, without.stderr
    assert named.returncode == 0, named.stderr
    kinds = [entry["kind"] for entry in json.loads(named.stdout)]
    assert "sample.invoice_credit" not in [e["kind"] for e in json.loads(without.stdout)]
    assert kinds[-2:] == ["sample.tag_invoice", "sample.invoice_credit"]
    assert "sample.tag_invoice" not in REGISTRY  # this process named none


def test_a_plugin_named_but_not_installed_stops_the_command_with_what_to_do(installed, tmp_path):
    done = _countersign(
        _env(installed, tmp_path, COUNTERSIGN_PLUGINS="sample,acme-payroll"), "operations"
    )

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [  # the example plug-in is installed (setup)
        "error: COUNTERSIGN_PLUGINS names plug-in 'acme-payroll', which is not installed "
        "(installed: acme-invoices, sample, sample-broken, sample-lacking, sample-misnamed, "
        "sample-noevents, sample-reshaped, sample-section, sample-typo); "
        "install its package or remove it from COUNTERSIGN_PLUGINS"
    ]
    assert "Traceback" not in done.stderr


def test_a_plugin_breaking_a_registry_rule_stops_the_command_with_what_to_fix(installed, tmp_path):
    done = _countersign(
        _env(installed, tmp_path, COUNTERSIGN_PLUGINS="sample-broken"), "operations", "--json"
    )

    assert done.returncode == 2
    assert json.loads(done.stdout)["error"] == "configuration"
    assert done.stderr.strip().splitlines() == [
        "error: plug-in 'sample-broken': operation 'orders.tag_invoice' must be named "
        "broken.<name>; fix the plug-in or remove it from COUNTERSIGN_PLUGINS"
    ]


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"event_packages": ("countersign.domain",)}, "is countersign's; name your own"),
        ({"namespace": "orders"}, "namespace 'orders' is countersign's own"),
        # countersign's own permissions' areas: every auditor would hold audit.<operation>
        ({"namespace": "audit"}, "namespace 'audit' is countersign's own"),
        ({"namespace": "members"}, "namespace 'members' is countersign's own"),
        ({"namespace": "policies"}, "namespace 'policies' is countersign's own"),
        ({"namespace": "webhooks"}, "namespace 'webhooks' is countersign's own"),
        ({"permissions": ("orders.refund",)}, "permission 'orders.refund' must be named"),
        ({"providers": {"payments": None}}, "provider 'payments' is countersign's own"),
        ({"providers": {"ledger": None}}, "provider 'ledger' must be named sample.<name>"),
    ],
)
def test_a_plugin_may_not_claim_what_is_countersigns(installed, company, change, refusal):
    from dataclasses import replace

    from countersign.application.plugins import PluginError, install
    from sample_plugin.plugin import build

    with pytest.raises(PluginError, match=refusal):
        install([replace(build(), **change)])
    assert "sample.tag_invoice" not in REGISTRY  # nothing was installed


def test_a_contract_breaking_a_registry_rule_installs_nothing(installed, company):
    from countersign.application.plugins import Plugin, PluginError, install
    from sample_plugin.plugin import ASSISTANT, build

    plugin = build()
    twice = Plugin(
        "twice",
        "sample",
        contracts=(*plugin.contracts, plugin.contracts[0]),
        sections=(ASSISTANT,),
        providers=plugin.providers,
    )

    with pytest.raises(PluginError, match=r"sample\.tag_invoice is registered twice"):
        install([twice])
    assert "sample.invoice_credit" not in REGISTRY
    assert "already_tagged" not in REVISION_REASONS


def test_enabling_the_deployments_plugins_again_undoes_an_operation_installed_otherwise(
    installed, tmp_path, cs, seeded
):
    """A test or a script that installs an operation in the orders section itself, and then
    enables the deployment's plug-ins again (as every test's teardown does), leaves the order
    assistant as it was. Enabling the same plug-ins again used to do nothing, so the extra
    operation stayed for the rest of the process: its company keys named every order, and a
    turn about the order ``refund-ok`` looked up another id (a NotFoundError for an Order)."""
    from countersign.application import plugins as registries
    from countersign.application.plugins import Plugin
    from countersign.domain.scope import Section
    from sample_plugin.company import InvoiceBook
    from sample_plugin.contracts import TagInvoice

    class TagOrder(TagInvoice):
        kind, permission, section = "extra.tag_order", "extra.manage", Section("orders")

    extra = TagOrder(InvoiceBook(tmp_path / "invoices.db"))
    registries.install([Plugin(name="extra", namespace="extra", contracts=(extra,))])
    assert "extra.tag_order" in REGISTRY

    enable_plugins()

    assert "extra.tag_order" not in REGISTRY
    turn = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="orders",
        resource_id=seeded["orders"]["refund-ok"],
        message="Refund the missing early-bird discount to the card",
    )
    assert turn.proposal is not None
    assert turn.proposal["operation"] == "order.refund_missing_discount"


def test_settings_read_the_plugins_the_deployment_names(monkeypatch):
    monkeypatch.setenv("COUNTERSIGN_PLUGINS", " sample, ,acme-invoices,sample ")

    assert Settings.from_env().plugins == ("sample", "acme-invoices")


# -- its operations, events and resources ---------------------------------------------------------


def test_a_plugin_operation_on_a_company_key_is_proposed_approved_and_read_back(
    wired, database_url
):
    proposal_id = _propose(wired, "sample.tag_invoice", "INV 2/b", {"tag": "disputed"})

    report = wired.proposals.approve(proposal_id, AVA)

    from sample_plugin.contracts import INVOICES
    from sample_plugin.domain import InvoiceTags

    resource = keyed_resource_id(INVOICES, "INV 2/b")
    assert report.status == "succeeded", report
    stored = wired.store.get(resource, InvoiceTags)
    assert (stored.invoice_key, stored.tags) == ("INV 2/b", ("disputed",))
    from countersign.domain.proposal import Proposal

    proposal = wired.store.get(UUID(proposal_id), Proposal)
    assert (proposal.resource_id, proposal.resource_key) == (resource, "INV 2/b")
    assert topic_allowed("sample_plugin.domain:InvoiceTags.Tagged")
    assert not topic_allowed("sample_plugin.company:Invoice")


def test_a_fresh_process_reads_the_plugin_events_and_the_audit_verifies(
    wired, company, database_url, installed
):
    proposal_id = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    wired.proposals.approve(proposal_id, AVA)
    env = _env(installed, company, COUNTERSIGN_PLUGINS="sample")
    read = (
        "from uuid import UUID\n"
        "from countersign.infrastructure.bootstrap import bootstrap\n"
        "from countersign.domain.scope import keyed_resource_id\n"
        "from sample_plugin.contracts import INVOICES\n"
        "from sample_plugin.domain import InvoiceTags\n"
        f"cs = bootstrap(database_url={database_url!r}, create=False)\n"
        "print(cs.store.get(keyed_resource_id(INVOICES, 'INV-1'), InvoiceTags).tags)\n"
    )

    fresh = subprocess.run(
        [sys.executable, "-c", read], env=env, capture_output=True, text=True, timeout=120
    )
    audited = _countersign(env, "audit", "verify", "--database", database_url, "--json")

    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == "('late',)"
    assert audited.returncode == 0, audited.stderr
    assert json.loads(audited.stdout)["ok"] is True
    assert verify(wired.app, wired.sql).broken == []


def test_the_plugin_proposals_are_shown_in_the_projections(wired):
    proposal_id = _propose(wired, "sample.invoice_credit", "INV-1", {"amount_cents": 2500})
    tagged = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    wired.proposals.approve(tagged, AVA)

    for runner in wired.projection_runners():
        runner.catch_up()
    listed = wired.read_models.inbox(
        _organization_id(wired),
        wired.clock.now(),
        section="sample",
    )

    assert [item["proposal_id"] for item in listed["items"]] == [proposal_id]
    assert _known_section("sample") == "sample"  # the API takes the plug-in's section


def _organization_id(cs: Countersign) -> str:
    from countersign.domain.club.organization import Organization

    return str(Organization.create_id("granite"))


def test_a_tampered_topic_outside_the_declared_packages_is_still_refused(wired):
    proposal_id = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    wired.proposals.approve(proposal_id, AVA)
    table = events_table(wired)
    from sample_plugin.contracts import INVOICES

    resource = keyed_resource_id(INVOICES, "INV-1")
    with wired.sql.transaction() as cursor:
        cursor.execute(
            f"UPDATE {table} SET topic = ? WHERE originator_id = ? AND originator_version = 2",
            (
                "sample_plugin.company:Invoice",
                resource.hex if wired.database.kind == "sqlite" else str(resource),
            ),
        )
    fresh = bootstrap(Settings(database_url=wired.settings.database_url, plugins=("sample",)))
    from sample_plugin.domain import InvoiceTags

    try:
        with pytest.raises(CorruptRecordError):
            fresh.store.get(resource, InvoiceTags)
    finally:
        fresh.close()


def test_a_plugin_event_stored_by_an_earlier_version_is_upcast_when_read(wired):
    proposal_id = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    wired.proposals.approve(proposal_id, AVA)
    from sample_plugin.contracts import INVOICES
    from sample_plugin.domain import InvoiceTags

    resource = keyed_resource_id(INVOICES, "INV-1")
    stored_id = resource.hex if wired.database.kind == "sqlite" else str(resource)
    table = events_table(wired)
    with wired.sql.transaction() as cursor:  # the Tagged event as version 1 stored it
        state = cursor.execute(
            f"SELECT state FROM {table} WHERE originator_id = ? AND originator_version = 2",
            (stored_id,),
        ).fetchone()[0]
        v1 = json.loads(bytes(state))
        assert (v1.pop("class_version"), v1.pop("source")) == (2, "proposal")
        cursor.execute(
            f"UPDATE {table} SET state = ? WHERE originator_id = ? AND originator_version = 2",
            (json.dumps(v1).encode(), stored_id),
        )
    fresh = bootstrap(Settings(database_url=wired.settings.database_url, plugins=("sample",)))
    try:
        tags = fresh.store.get(resource, InvoiceTags)
    finally:
        fresh.close()

    assert (tags.tags, tags.sources) == (("late",), ("proposal",))


def test_a_plugins_own_events_are_read_by_the_projections_as_the_mapper_reads_them(wired):
    """The projections' struct decoder (log_structs.py) makes a struct for a plug-in's own
    event classes from their fields as for countersign's: nothing to add for them."""
    import msgspec
    from countersign.infrastructure.persistence.log_structs import StructDecoder

    from tests.test_projection_structs import all_entries, as_notification, reads_alike

    proposal_id = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    wired.proposals.approve(proposal_id, AVA)
    decode = StructDecoder(wired.app.mapper)
    entries = all_entries(wired)
    for entry in entries:
        fast = decode(entry)
        reads_alike(fast, wired.app.mapper.to_domain_event(as_notification(entry)))
        assert isinstance(fast, msgspec.Struct), entry.topic
    plugins = {e.topic for e in entries if e.topic.startswith("sample_plugin.")}
    assert plugins == {
        "sample_plugin.domain:InvoiceTags.Started",
        "sample_plugin.domain:InvoiceTags.Tagged",
    }


def test_without_the_plugin_its_stored_events_are_refused(wired, database_url):
    proposal_id = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    wired.proposals.approve(proposal_id, AVA)
    from sample_plugin.contracts import INVOICES
    from sample_plugin.domain import InvoiceTags

    plain = bootstrap(Settings(database_url=database_url, plugins=()))
    try:
        with pytest.raises(CorruptRecordError):
            plain.store.get(keyed_resource_id(INVOICES, "INV-1"), InvoiceTags)
    finally:
        plain.close()


def test_a_plugin_section_assistant_proposes_on_the_company_key(wired, database_url, clock):
    """The assistant's conversation is about a key (``INV 2/b``); its propose call goes out
    on that key, which the contract maps to the proposal's id (not on the id, mapped twice)."""
    from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
    from countersign.infrastructure.adapters.scripted_model import Call, Script, ScriptedEndpoint

    script = Script(Call("propose_tag_invoice", {"tag": "disputed"}))
    model = OpenAIChatModel(ScriptedEndpoint(script).client(), "scripted")
    chatting = bootstrap(
        Settings(database_url=database_url, plugins=("sample",)), clock=clock, model=model
    )
    try:
        turn = chatting.assistant.turn(
            organization="granite",
            actor=AVA,
            section="sample",
            resource_id="INV 2/b",
            message="Tag it disputed.",
        )
    finally:
        chatting.close()

    assert turn.proposal is not None, turn.messages
    assert turn.proposal["preview"] == {
        "invoice_key": "INV 2/b",
        "customer": "Maple Supplies",
        "tag": "disputed",
    }


def test_an_unknown_company_key_is_not_found(wired):
    with pytest.raises(NotFoundError):
        _propose(wired, "sample.tag_invoice", "INV-404", {"tag": "late"})


@pytest.mark.parametrize(
    ("operation", "request_"),
    [("tag_invoice", {"tag": "x"}), ("invoice_credit", {"amount_cents": 1})],
)
def test_another_clubs_manager_finds_no_invoice_of_granites(wired, operation, request_):
    wired.club.set_permissions("maple", MIA, sorted(PERMISSIONS))

    with pytest.raises(NotFoundError):
        wired.proposals.propose(
            organization="maple",
            actor=MIA,
            operation=f"sample.{operation}",
            resource_id="INV-1",
            request=request_,
        )


# -- contracts over the company's services --------------------------------------------------------


def test_the_reconciler_settles_a_credit_after_the_company_deleted_the_invoice(wired, company):
    from sample_plugin.company import InvoiceBook

    ledger = wired.plugins[0].providers["sample.ledger"]
    proposal_id = _propose(wired, "sample.invoice_credit", "INV-1", {"amount_cents": 2500})
    ledger.lose_next = True  # type: ignore[attr-defined]

    lost = wired.proposals.approve(proposal_id, AVA)
    InvoiceBook(company / "invoices.db").delete("INV-1")
    wired.clock.advance(seconds=wired.settings.reconcile_lease_seconds + 1)
    swept = wired.sweepers.reconcile()

    assert (lost.status, lost.outcome["kind"]) == ("reconciling", "needs_reconciliation")
    assert [(s.action, s.status) for s in swept] == [("settled", "succeeded")]
    key = f"countersign:sample.invoice_credit:{proposal_id}"
    assert ledger.credits() == [  # type: ignore[attr-defined]
        (key, {"invoice_key": "INV-1", "amount_cents": 2500})
    ]


def test_a_credit_whose_invoice_was_deleted_before_approval_is_not_sent(wired, company):
    from sample_plugin.company import InvoiceBook

    proposal_id = _propose(wired, "sample.invoice_credit", "INV-1", {"amount_cents": 2500})
    InvoiceBook(company / "invoices.db").delete("INV-1")

    report = wired.proposals.approve(proposal_id, AVA)

    assert (report.status, report.outcome["reason"]["code"]) == (
        "revision_required",
        "resource_unavailable",
    )
    assert wired.plugins[0].providers["sample.ledger"].credits() == []  # type: ignore[attr-defined]


def test_a_failing_configuration_is_a_settings_error():
    try:
        with pytest.raises(SettingsError, match="not installed"):
            enable_plugins(("nowhere",))
        assert "sample.tag_invoice" not in REGISTRY
    finally:
        enable_plugins()  # the deployment's own again (COUNTERSIGN_PLUGINS)


# -- the plug-in's own repository runs the conformance kit ---------------------------------------


@pytest.mark.slow
def test_the_plugin_repository_passes_the_conformance_checks_its_in_tree_peers_pass(
    installed, tmp_path
):
    """``sample_plugin_tests/`` is what the plug-in's own repository would hold: a pytest
    configuration that turns the kit on, its cases, its golden previews and one subclass of
    the kit's suite. Run in a process of its own, from its own folder (countersign's
    ``tests/`` is neither its rootdir nor importable), it passes every check of
    ``ConformanceSuite``, the class tests/contracts/test_conformance.py runs, for each of the
    plug-in's operations on every backend."""
    from countersign.infrastructure.testing.suite import ConformanceSuite

    repository = PLUGINS / "sample_plugin_tests"
    env = _env(installed, tmp_path)
    env.update({k: v for k, v in os.environ.items() if k.startswith("COUNTERSIGN_TEST_")})
    ran = subprocess.run(
        [str(COUNTERSIGN.with_name("pytest")), "-v", "-n", "0"],
        cwd=repository,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert f"rootdir: {repository}" in ran.stdout
    passed = re.findall(
        r"::TestConformance::(test_\w+)(?:\[([\w.]+)(?:-(\w+))?\])? PASSED", ran.stdout
    )
    checks = {name for name in dir(ConformanceSuite) if name.startswith("test_")}
    kinds = {"sample.tag_invoice", "sample.invoice_credit"}
    assert {check for check, _, _ in passed} == checks
    assert {kind for _, kind, _ in passed} - {""} == kinds
    backends = os.environ.get("COUNTERSIGN_TEST_BACKENDS", "sqlite,postgres").split(",")
    assert {backend for _, _, backend in passed} - {""} == {b.strip() for b in backends}
    assert " failed" not in ran.stdout


def test_a_plugin_turned_off_leaves_every_projection_rebuildable_and_its_proposals_readable(
    wired, database_url, installed
):
    """The deployment stops naming the plug-in: its proposals stay readable (with
    ``audit.read``), every projection rebuilds (a success of its operation had stopped the
    rebuild of all of them, every club's inbox empty), and ``audit verify`` says its
    aggregates' streams are no proposals it checks rather than broken chains (a plug-in
    author's findings)."""
    done = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    assert wired.proposals.approve(done, AVA).status == "succeeded"
    refunded = wired.proposals.propose(
        organization="granite",
        actor=AVA,
        operation="order.refund_missing_discount",
        resource_id=str(wired.club.order_id("granite", "refund-ok")),
        request=TO_CARD,
    ).proposal_id
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNTERSIGN_")}

    rebuilt = _countersign(env, "projections", "rebuild", "--database", database_url)
    shown = _countersign(env, "show", done, "--as", AVA, "--json", "--database", database_url)
    audited = _countersign(env, "audit", "verify", "--database", database_url, "--json")

    assert rebuilt.returncode == 0, rebuilt.stderr
    assert shown.returncode == 0, shown.stderr
    card = json.loads(shown.stdout)
    assert card["status"] == "succeeded"
    assert card["message"].startswith("Carried out as approved. Its operation is no longer")
    assert audited.returncode == 0, audited.stdout
    report = json.loads(audited.stdout)
    assert report["ok"] is True
    assert report["streams_not_read"] == {"sample_plugin.domain": 1}
    # Every club's inbox is back (this test's clock, not the commands', says what is pending).
    listed = wired.read_models.inbox(_organization_id(wired), wired.clock.now(), section="orders")
    assert [item["proposal_id"] for item in listed["items"]] == [refunded]


@pytest.mark.parametrize(
    "part",
    ["title", "assistant_instructions", "contract_version", "preview_fields", "revision_reasons"],
)
def test_a_contract_missing_a_required_part_stops_the_start_naming_it(installed, company, part):
    """A contract without its title was accepted, then every page of every club answered
    500; without its instructions or version, its chat or every proposal failed later; without
    its preview labels or reasons, the start was a traceback (a plug-in author's findings)."""
    from countersign.application.plugins import Plugin, PluginError, install
    from sample_plugin.contracts import TagInvoice
    from sample_plugin.plugin import ASSISTANT, build

    plugin = build()
    lacking = type("Lacking", (TagInvoice,), {part: None})(plugin.contracts[0].book)
    broken = Plugin(
        "lacking",
        "sample",
        contracts=(lacking, plugin.contracts[1]),
        sections=(ASSISTANT,),
        providers=plugin.providers,
    )

    with pytest.raises(PluginError, match=rf"sample\.tag_invoice lacks {part} \("):
        install([broken])
    assert "sample.invoice_credit" not in REGISTRY


def test_a_plugin_missing_a_part_is_one_line_at_the_start(installed, company, tmp_path):
    env = _env(installed, company, COUNTERSIGN_PLUGINS="sample-lacking")
    started = _countersign(env, "operations", "--database", f"sqlite:///{tmp_path / 'x.db'}")
    assert started.returncode == 2, started
    assert started.stderr.count("\n") == 1
    assert "sample.tag_invoice lacks title (Localized)" in started.stderr
    assert "Traceback" not in started.stderr


@pytest.mark.parametrize(
    ("kind", "section", "refusal"),
    [
        # In the roster, beside countersign's roster.move_member: two tools of one name, and
        # the plug-in's could never be proposed (a plug-in author's finding).
        (
            "sample.move_member",
            "roster",
            "operation 'sample.move_member' and 'roster.move_member' would both be the tool "
            "propose_move_member of section 'roster'; name it otherwise",
        ),
        ("sample.change locker!", "sample", "the name of lower-case letters, digits and _"),
        ("sample.", "sample", "the name of lower-case letters, digits and _"),
        ("sample.a.b", "sample", "the name of lower-case letters, digits and _"),
    ],
)
def test_an_operation_name_a_model_could_not_call_or_tell_apart_is_refused(
    installed, company, kind, section, refusal
):
    from countersign.application.plugins import Plugin, PluginError, install
    from countersign.domain.scope import Section
    from sample_plugin.contracts import TagInvoice
    from sample_plugin.plugin import ASSISTANT, build

    plugin = build()
    renamed = type("Renamed", (TagInvoice,), {"kind": kind, "section": Section(section)})
    broken = Plugin(
        "renamed",
        "sample",
        contracts=(renamed(plugin.contracts[0].book), plugin.contracts[1]),
        sections=(ASSISTANT,),
        providers=plugin.providers,
    )
    with pytest.raises(PluginError) as refused:
        install([broken])
    assert refusal in str(refused.value)
    assert "sample.invoice_credit" not in REGISTRY


def test_a_plugin_that_forgot_its_event_packages_writes_nothing_unreadable(
    company, database_url, clock, cs, seeded
):
    """Its events were stored, the approval said succeeded, and every later read of its
    record was an internal error naming nothing (a plug-in author's finding). Now nothing of
    the execution is stored, and the log says what to add."""
    enable_plugins(())
    forgot = bootstrap(
        Settings(database_url=database_url, plugins=("sample-noevents",)), clock=clock
    )
    try:
        forgot.club.set_permissions("granite", AVA, sorted(PERMISSIONS))
        proposal_id = _propose(forgot, "sample.tag_invoice", "INV-1", {"tag": "late"})
        # Refused as its events are written: the entry points answer it as an internal error
        # with a reference, and the log says what to add.
        with pytest.raises(UnwritableEventError, match="its event_packages"):
            forgot.proposals.approve(proposal_id, AVA)
        from sample_plugin.contracts import INVOICES
        from sample_plugin.domain import InvoiceTags

        with pytest.raises(NotFoundError):  # nothing of it was stored
            forgot.store.get(keyed_resource_id(INVOICES, "INV-1"), InvoiceTags)
        assert forgot.cards.card(proposal_id, AVA).status == "pending"  # nothing decided
    finally:
        forgot.close()
        enable_plugins()


def test_a_finding_without_its_sentence_reads_as_its_own_message():
    """A contract's rule finding a problem its ``request_problems`` has no sentence for was an
    internal error (KeyError), not a refusal the model could correct (a plug-in author's
    finding): it reads as the finding's own message."""
    from countersign.domain.contracts.findings import Finding
    from countersign.domain.contracts.presentation import Localized

    finding = Finding("same_locker", "locker", "the member already has locker B12")
    assert finding.for_people({}) == Localized(
        "the member already has locker B12", "the member already has locker B12"
    )
    told = Localized("Already in {locker}.", "Déjà au casier {locker}.")
    named = Finding("same_locker", "locker", "x", locker="B12")
    assert named.for_people({"same_locker": told}).text("fr") == "Déjà au casier B12."


def test_a_pending_proposal_of_a_plugin_turned_off_says_why_it_cannot_be_decided(
    wired, database_url
):
    """The deployment stops naming the plug-in while one of its proposals waits. Approving or
    declining it answered "forbidden", telling its manager to grant themselves a permission
    that no longer exists, and its card said nothing (a plug-in author's finding). It says
    the operation is not enabled and what to do; nothing is recorded, and once the plug-in
    is enabled again it is approved as ever."""
    pending = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNTERSIGN_")}
    off = ("--as", AVA, "--database", database_url)

    approved = _countersign(env, "approve", pending, *off)
    declined = _countersign(env, "decline", pending, *off, "--language", "fr")
    answered = _countersign(env, "approve", pending, *off, "--json")
    shown = _countersign(env, "show", pending, *off, "--json")

    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.startswith(
        "Not approvable: its operation is not enabled in this deployment (the plug-in that "
        "adds it is not named in COUNTERSIGN_PLUGINS). Nothing changed: enable the plug-in again"
    )
    assert "set-permissions" not in approved.stdout
    assert declined.stdout.startswith("Non approuvable : son opération n'est pas activée")
    report = json.loads(answered.stdout)
    assert (report["reason"], report["status"]) == ("operation_not_enabled", "pending")
    assert json.loads(shown.stdout)["message"].startswith("Its operation is not enabled here")
    assert "Traceback" not in approved.stderr + declined.stderr + shown.stderr
    assert wired.proposals.approve(pending, AVA).status == "succeeded"  # enabled: as ever


def _with_changed_tag_invoice(**change: Any) -> Any:
    """``build``'s plug-in whose ``sample.tag_invoice`` has ``change`` (class attributes;
    ``more_preview_fields`` replace or add to its own)."""
    from countersign.application.plugins import Plugin
    from sample_plugin.contracts import TagInvoice
    from sample_plugin.plugin import ASSISTANT, build

    plugin = build()
    changed_class = type("Changed", (TagInvoice,), {})
    change = dict(change)  # a test's parameters, used again on the next backend
    more = change.pop("more_preview_fields", {})
    changed_class.preview_fields = {**TagInvoice.preview_fields, **more}
    for name, value in change.items():
        setattr(changed_class, name, value)
    changed = changed_class(plugin.contracts[0].book)
    return Plugin(
        "sample",
        "sample",
        contracts=(changed, plugin.contracts[1]),
        sections=(ASSISTANT,),
        providers=plugin.providers,
    )


TAG, MONEY = Localized("Tag", "Étiquette"), Shown.MONEY


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (
            {"title": Localized("Tag an invoice", "")},
            "sample.tag_invoice's title has no French text: everything people read is "
            "written in English and French, Localized(en, fr)",
        ),
        (
            {"revision_reasons": {"already_tagged": Localized("", "La facture a ce tag.")}},
            "sample.tag_invoice's revision reason 'already_tagged' has no English text",
        ),
        (
            {"preview_fields": {"tag": PreviewField(Localized("Tag", " "))}},
            "sample.tag_invoice's preview field 'customer' has no label: add it to "
            "preview_fields (a row the approver reads) or to preview_hidden",
        ),
        (
            {"more_preview_fields": {"tag": PreviewField(TAG, MONEY)}},
            "sample.tag_invoice shows money (tag) but its Preview has no currency field, so "
            "the card reads 50.00 with no currency",
        ),
    ],
)
def test_a_contract_with_a_blank_text_or_an_unlabelled_field_is_refused_saying_which(
    installed, company, change, refusal
):
    """An empty French title or reason was accepted, and French managers read a blank; a
    preview field without a label was refused by listing both sets of names, for the author
    to compare (a newcomer's findings writing a plug-in)."""
    from countersign.application.plugins import PluginError, install

    with pytest.raises(PluginError) as refused:
        install([_with_changed_tag_invoice(**change)])

    assert str(refused.value).startswith(f"plug-in 'sample': {refusal}")
    assert "sample.invoice_credit" not in REGISTRY


def test_a_broken_contract_names_its_own_plugin_not_every_plugin_enabled(installed, company):
    """With two plug-ins enabled, one's broken contract was reported as "plug-in acme-rentals,
    acme-invoices: ...", blaming both."""
    from countersign.application.plugins import Plugin, PluginError, install

    other = Plugin("other", "other")
    broken = _with_changed_tag_invoice(title=Localized("Tag an invoice", ""))

    with pytest.raises(PluginError) as refused:
        install([other, broken])

    assert str(refused.value).startswith("plug-in 'sample': sample.tag_invoice's title")


def test_a_request_letting_the_model_pick_an_amount_is_refused_unless_a_person_chooses_it(
    installed, company
):
    """A contract whose request took the amount from the model (``amount_cents``) was
    enabled, though the model never picks an amount (a newcomer's finding writing a deposit
    refund whose amount the application computes). An amount only a person can choose is
    declared so, as the sample's credit does."""
    from countersign.application.plugins import PluginError, install

    priced = _priced()
    with pytest.raises(PluginError) as refused:
        install([_with_changed_tag_invoice(Request=priced["Request"])])

    assert str(refused.value).startswith(
        "plug-in 'sample': sample.tag_invoice's request lets the model pick an amount "
        "(fee_cents): compute it in resolve from the facts the request names; only an amount "
        "a person chooses"
    )
    install([_with_changed_tag_invoice(**priced)])
    assert "sample.tag_invoice" in REGISTRY


def _priced(**change: Any) -> dict[str, Any]:
    """``sample.tag_invoice`` asking for a fee a person names (``fee_cents``), shown on the
    card as money, with ``change``; a change to None leaves that part the contract's own."""
    from pydantic import Field
    from sample_plugin.contracts import TagPreview, TagRequest

    class PricedTag(TagRequest):
        fee_cents: int = Field(ge=0, description="The fee.")

    class PricedPreview(TagPreview):
        fee_cents: int
        currency: str

    priced = {
        "Request": PricedTag,
        "Preview": PricedPreview,
        "more_preview_fields": {"fee_cents": PreviewField(Localized("Fee", "Frais"), MONEY)},
        "preview_hidden": frozenset({"currency"}),
        "requested_amounts": frozenset({"fee_cents"}),
        **change,
    }
    return {name: value for name, value in priced.items() if value is not None}


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (
            {"Preview": None, "more_preview_fields": None, "preview_hidden": None},
            "sample.tag_invoice's requested amount 'fee_cents' is not shown to the approver, "
            "who must never approve an amount they were not shown: its Preview holds "
            "'fee_cents' too (the amount resolve keeps), as a row of preview_fields shown as "
            "money (Shown.MONEY)",
        ),
        (
            {"more_preview_fields": {"fee_cents": PreviewField(TAG)}},
            "sample.tag_invoice's requested amount 'fee_cents' is not shown to the approver",
        ),
        (
            {"more_preview_fields": {}, "preview_hidden": {"currency", "fee_cents"}},
            "sample.tag_invoice's requested amount 'fee_cents' is not shown to the approver",
        ),
        (
            {"requested_amounts": {"fee_cents", "fees_cents"}},
            "sample.tag_invoice lists 'fees_cents' in requested_amounts, which is not a money "
            "field (*_cents) of its Request: list the Request's amount by its dotted path",
        ),
    ],
)
def test_an_amount_a_person_names_that_the_card_would_not_show_is_refused(
    installed, company, change, refusal
):
    """An amount listed in ``requested_amounts`` was accepted whether or not the preview
    showed it, so a manager could approve a fee the card never read (or read as 5000 for
    $50.00, shown as text): it must be a row of the preview, shown as money."""
    from countersign.application.plugins import PluginError, install

    with pytest.raises(PluginError) as refused:
        install([_with_changed_tag_invoice(**_priced(**change))])

    assert str(refused.value).startswith(f"plug-in 'sample': {refusal}")
    assert "sample.tag_invoice" not in REGISTRY


def test_an_amount_the_model_would_fill_in_a_nested_model_is_refused_too(installed, company):
    """The rule read the request's own fields only: a list of lines each holding its
    ``amount_cents`` let the model pick the amounts all the same."""
    from countersign.application.plugins import PluginError, install
    from pydantic import BaseModel, Field
    from sample_plugin.contracts import TagPreview, TagRequest

    class Line(BaseModel):
        label: str = Field(max_length=40, description="What the line is for.")
        amount_cents: int = Field(ge=0, description="How much.")

    class LinedTag(TagRequest):
        lines: list[Line] | None = Field(default=None, description="The lines.")

    class LinedPreview(TagPreview):
        lines: list[Line]
        currency: str

    with pytest.raises(PluginError) as refused:
        install([_with_changed_tag_invoice(Request=LinedTag)])

    assert "request lets the model pick an amount (lines.amount_cents)" in str(refused.value)
    with pytest.raises(PluginError) as refused:
        install(
            [_with_changed_tag_invoice(Request=LinedTag, requested_amounts={"lines.amount_cents"})]
        )

    assert "requested amount 'lines.amount_cents' is not shown to the approver" in str(
        refused.value
    )
    install(
        [
            _with_changed_tag_invoice(
                Request=LinedTag,
                Preview=LinedPreview,
                more_preview_fields={"lines": PreviewField(Localized("Lines", "Lignes"))},
                preview_hidden=frozenset({"currency"}),
                requested_amounts={"lines.amount_cents"},
            )
        ]
    )
    assert "sample.tag_invoice" in REGISTRY


def test_a_nested_amount_reads_as_money_in_its_row_and_needs_a_currency(installed, company):
    """A requested amount in a list of lines was shown on its row as the list's raw text,
    "[{'label': 'Setup fee', 'amount_cents': 2500}]": cents, where a manager approves an
    amount. Each reads as money now, a line each, in the terminal and on the page, English
    and French;
    and such a row, like a field shown as money, needs the Preview's currency."""
    from countersign.application.plugins import PluginError, install
    from countersign.infrastructure.entrypoints.cli import cards
    from countersign.infrastructure.entrypoints.web.i18n import translator
    from countersign.infrastructure.entrypoints.web.views import proposal_view
    from pydantic import BaseModel, Field
    from sample_plugin.contracts import TagPreview, TagRequest

    class Line(BaseModel):
        label: str = Field(max_length=40, description="What the line is for.")
        amount_cents: int = Field(ge=0, description="How much.")

    class LinedTag(TagRequest):
        lines: list[Line] | None = Field(default=None, description="The lines.")

    class NoCurrency(TagPreview):
        lines: list[Line]

    class LinedPreview(NoCurrency):
        currency: str

    lined = {
        "Request": LinedTag,
        "more_preview_fields": {"lines": PreviewField(Localized("Lines", "Lignes"))},
        "requested_amounts": {"lines.amount_cents"},
    }
    with pytest.raises(PluginError) as refused:
        install([_with_changed_tag_invoice(Preview=NoCurrency, **lined)])

    assert "sample.tag_invoice shows money (lines) but its Preview has no currency" in str(
        refused.value
    )
    hidden = frozenset({"currency"})
    for hiding in (
        PreviewField(Localized("Lines", "Lignes"), Shown.FLAG),  # "yes"
        PreviewField(Localized("Lines", "Lignes"), words=lambda value, language: "see PDF"),
    ):
        with pytest.raises(PluginError) as refused:
            install(
                [
                    _with_changed_tag_invoice(
                        Preview=LinedPreview,
                        preview_hidden=hidden,
                        **{**lined, "more_preview_fields": {"lines": hiding}},
                    )
                ]
            )
        assert "requested amount 'lines.amount_cents' is not shown to the approver" in str(
            refused.value
        )
    install([_with_changed_tag_invoice(Preview=LinedPreview, preview_hidden=hidden, **lined)])
    preview = {
        "invoice_key": "INV-1",
        "customer": "Granite Hardware",
        "tag": "fees",
        "lines": [
            {"label": "Setup fee", "amount_cents": 2500},
            {"label": "Travel", "amount_cents": 120050},
        ],
        "currency": "CAD",
    }
    said = {
        "en": "Setup fee · $25.00 CAD\nTravel · $1,200.50 CAD",
        "fr": "Setup fee · 25,00 $ CA\nTravel · 1 200,50 $ CA",
    }
    for language, lines in said.items():
        label = "Lines" if language == "en" else "Lignes"
        terminal = dict(cards.preview_rows("sample.tag_invoice", preview, language))
        assert _spaced(terminal[label]) == lines
        record = {
            "proposal_id": "p",
            "operation": "sample.tag_invoice",
            "status": "pending",
            "preview": preview,
        }
        view = proposal_view(record, translator(language), language, datetime.now(UTC))
        row = next(row for row in view["rows"] if row.label == label)
        assert _spaced(row.value) == lines
        assert row.multiline  # a line each on the page too


def _spaced(text: str) -> str:
    """``text`` with its no-break spaces (French money's) as spaces."""
    return text.replace("\u00a0", " ").replace("\u202f", " ")


def test_a_plugin_section_in_a_shell_without_the_setting_says_where_sections_come_from(
    installed, tmp_path
):
    """A new shell without COUNTERSIGN_PLUGINS refused the plug-in's section as an invalid
    choice among countersign's own, as if it were a typo (a newcomer's finding)."""
    env = _env(installed, tmp_path)
    chat = ("chat", "--org", "granite", "--as", AVA, "--section", "sample", "--message", "hi")

    english = _countersign(env, *chat)
    french = _countersign(env, *chat, "--language", "fr")

    assert english.returncode == 2
    assert english.stderr.strip().endswith(
        "invalid choice: 'sample' (choose from 'orders', 'email_broadcasts', 'roster'); a "
        "plug-in's sections and operations are offered only where COUNTERSIGN_PLUGINS names "
        "it (countersign operations lists what is enabled)"
    )
    assert "là où COUNTERSIGN_PLUGINS le nomme" in french.stderr


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (
            "sample-typo",
            "error: plug-in 'sample-typo' (sample_plugin.plugin:biuld) could not be loaded: "
            "AttributeError: module 'sample_plugin.plugin' has no attribute 'biuld'; fix its "
            "package (the entry point's module:name, or what importing or building it raised) "
            "or remove it from COUNTERSIGN_PLUGINS",
        ),
        (
            "sample-section",
            "error: plug-in 'sample-section': sample_plugin.plugin:ASSISTANT is a "
            "SectionAssistant, not a countersign Plugin: its entry point names a Plugin or a "
            "function of no arguments that returns one",
        ),
        (
            "sample-misnamed",
            "error: plug-in 'sample-misnamed': its entry point names a Plugin called 'sample'; "
            "the entry point's name and the Plugin's name must be the same: rename one",
        ),
    ],
)
def test_a_plugin_whose_entry_point_is_wrong_stops_the_start_saying_what_to_do(
    installed, tmp_path, name, said
):
    """A typo in the entry point, one naming something else than a Plugin, or a name that
    is not the Plugin's: each was one line at the start, but said what went wrong and not
    what to change (a newcomer's finding)."""
    done = _countersign(_env(installed, tmp_path, COUNTERSIGN_PLUGINS=name), "operations")

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [said]


def test_a_preview_given_a_required_field_since_stops_the_projections_saying_what_to_do(
    wired, database_url, installed, company
):
    """A plug-in author added a required field to a Preview while proposals stored without it
    existed: every projection stopped there, saying only "ValidationError" (a newcomer's
    finding). It names the type and the field, and what to do."""
    done = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    assert wired.proposals.approve(done, AVA).status == "succeeded"
    env = _env(installed, company, COUNTERSIGN_PLUGINS="sample-reshaped")

    rebuilt = _countersign(env, "projections", "rebuild", "--database", database_url)

    assert rebuilt.returncode != 0
    assert (
        "ValidationError: a stored _ReshapedPreview no longer reads as its contract's type "
        "(origin: missing): stored proposals keep the shape they were frozen with, so "
        "a field added to a contract's Preview, Arguments or Result since needs a default"
    ) in rebuilt.stderr
    assert "Traceback" not in rebuilt.stderr


def test_a_stop_on_a_stored_value_never_names_the_value():
    """A contract's own validator may write the value it refused into its message (an
    email, a name): the stop names the field and pydantic's error type, never the message."""
    from countersign.infrastructure.projection_engine.stops import _reason
    from pydantic import BaseModel, ValidationError, field_validator

    class StoredPreview(BaseModel):
        member: str

        @field_validator("member")
        @classmethod
        def known(cls, value: str) -> str:
            raise ValueError(f"{value} is not a member")

    with pytest.raises(ValidationError) as refused:
        StoredPreview.model_validate({"member": "ella@granite.example"})

    said = _reason(refused.value)
    assert "ella@granite.example" not in said
    assert "(member: value_error)" in said


def test_the_inbox_says_how_many_pending_proposals_a_plugin_turned_off_left(
    wired, cs, seeded, clock, database_url
):
    """The deployment stops naming the plug-in while two of its proposals wait. They left
    every inbox without a word (nobody holds their permission any more), so their manager
    lost sight of them. The inbox page, the API's and the command line's say, for the club,
    how many there are, what to do and when the first expires, EN and FR; nothing of another
    club, nothing once they expired, and nothing while the plug-in is enabled."""
    clock.advance(seconds=(datetime.now(UTC) - clock.now()).total_seconds())  # the CLI's now
    first = _propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    clock.advance(minutes=5)
    _propose(wired, "sample.invoice_credit", "INV 2/b", {"amount_cents": 500})
    web = web_for(cs, seeded)
    on = _main(web.browser(AVA).get("/"))
    enable_plugins(())  # turned off in this process, as on the next start of a deployment
    token = issue_token(
        cs, "granite", "inbox-bot", ["orders.refund"], issued_by=AVA, kind="approver"
    )

    browser = web.browser(AVA)
    page = _main(browser.get("/"))
    french = html.unescape(_main(browser.get("/", **{"Accept-Language": "fr"})))
    api = web.browser().get("/api/v1/inbox", Authorization=f"Bearer {token.token}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNTERSIGN_")}
    cli = ("inbox", "--org", "granite", "--as", AVA, "--database", database_url)
    told = _countersign(env, *cli)
    dit = _countersign(env, *cli, "--language", "fr")
    other = _main(web.browser(MIA).get("/"))

    expires = format_time(cs.store.get(UUID(first), Proposal).expires_at, "America/Toronto")
    assert "pending proposals" not in on  # enabled: each is listed, to be decided
    assert f"/proposals/{first}" in on
    # Not offered as awaiting anyone's decision, not even to Ava who may read every
    # operation's (audit.read): nobody can decide them.
    assert f"/proposals/{first}" not in page
    assert "sample." not in page
    assert (
        "2 pending proposals of this club are of operations not enabled on this server (their "
        "plug-in is turned off), so nobody can approve or decline them here. Ask whoever runs "
        "countersign to turn the plug-in back on to decide them, or let them expire: the "
        f"first expires {expires}." in page
    )
    assert "2 propositions en attente de ce club relèvent d'opérations non activées" in french
    assert "laissez-les expirer : la première expire le " in french
    assert api.status_code == 200, api.text
    assert api.json()["not_enabled"]["total"] == 2
    assert api.json()["not_enabled"]["first_expires_at"] is not None
    assert told.returncode == 0, told.stderr
    assert "2 pending proposals of the club are of operations not enabled here" in told.stdout
    assert "Enable the plug-in again to decide them, or let them expire" in told.stdout
    assert told.stdout.startswith("The inbox is empty")
    assert "sample." not in told.stdout
    assert "2 propositions en attente du club relèvent" in dit.stdout
    assert "Traceback" not in told.stderr + dit.stderr
    assert "not enabled" not in other  # another club's inbox: not its proposals

    clock.advance(days=30)
    later = _main(web.browser(AVA).get("/"))
    assert "not enabled on this server" not in later  # expired: nothing left to decide
