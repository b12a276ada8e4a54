"""A plug-in's section on the pages: named in the reader's language, its operations in its
lead, its conversation without the club's panel (the sample plug-in, tests/plugins)."""

from __future__ import annotations

from typing import Any

from countersign.infrastructure.bootstrap import enable_plugins

import tests.test_plugins as plugins
from tests.conftest import AVA

installed, company, wired = plugins.installed, plugins.company, plugins.wired


def test_a_plugin_operation_in_a_builtin_section_joins_its_pages_lead(installed, tmp_path):
    """The lead names what the section's assistant may propose: read from the registry as it
    is now, not as the pages first saw it."""
    from countersign.application import plugins as registry
    from countersign.application.plugins import Plugin
    from countersign.domain.scope import Section
    from countersign.infrastructure.entrypoints.web.i18n import translator
    from sample_plugin.company import InvoiceBook
    from sample_plugin.contracts import TagInvoice

    class TagOrder(TagInvoice):
        kind, permission, section = "extra.tag_order", "extra.manage", Section("orders")

    before = translator("en")("chat.lead.orders")  # made once, before the plug-in
    registry.install(
        [
            Plugin(
                name="extra", namespace="extra", contracts=(TagOrder(InvoiceBook(tmp_path / "i")),)
            )
        ]
    )
    try:
        assert "tag an invoice" not in before
        assert "tag an invoice" in translator("en")("chat.lead.orders")
    finally:
        enable_plugins(())


def test_a_plugin_sections_chat_page_reads_in_french_without_the_clubs_panel(wired):
    """The conversation on one of the company's invoices, by its key: the section's own words
    in the reader's language, and no side panel of the club's leagues beside it."""
    from tests.test_web_pages import web_for

    browser = web_for(wired, {}).browser(AVA)
    page = browser.get("/chat/sample/INV-1", **{"accept-language": "fr"})

    assert page.status_code == 200, page.text[:300]
    assert "<h1>Assistant des factures</h1>" in page.text
    assert 'class="context panel"' not in page.text  # no leagues beside an invoice
    assert "chat.title.sample" not in page.text


def test_the_pages_name_a_plugin_section_in_the_readers_language(wired):
    """Its words come from its assistant as enabled now, not from the catalogue as it was
    when the pages' module was imported (before any plug-in was)."""
    from countersign.infrastructure.entrypoints.web.i18n import translator

    assert translator("en")("section.sample") == "Invoices"
    assert translator("fr")("section.sample") == "Factures"
    assert translator("fr")("chat.title.sample") == "Assistant des factures"


def test_a_conversation_on_a_company_key_posts_redirects_and_links_back_by_that_key(
    wired, database_url, clock
):
    """A plug-in's section names its records by the company's key: the page's form posts to
    that key, the turn's answer comes back to it, and the proposal's review links to the
    conversation by it. (The form posted to the key's derived id, a 404; a turn posted to the
    key was recorded, then answered 500 "nothing was changed"; the review's link was a 404.)"""
    import re

    from tests.test_web_pages import web_for

    chatting = _chatting(database_url, clock)
    try:
        browser = web_for(chatting, {}).browser(AVA)
        page = browser.get("/chat/sample/INV%202%2Fb")
        assert page.status_code == 200, page.text[:300]
        assert 'action="/chat/sample/INV%202%2Fb"' in page.text
        sent = browser.form(
            "/chat/sample/INV%202%2Fb", {"message": "Tag it disputed."}, "/chat/sample/INV-1"
        )
        assert sent.status_code == 303, sent.text[:300]
        assert sent.headers["location"].startswith("/chat/sample/INV%202%2Fb?interaction=")
        answered = browser.get(sent.headers["location"])
        assert answered.status_code == 200, answered.text[:300]
        proposal = re.search(r'href="/proposals/([0-9a-f-]{36})"', answered.text)
        assert proposal is not None, answered.text[:2000]
        review = browser.get(f"/proposals/{proposal.group(1)}")
        link = re.search(r'href="(/chat/sample/[^"?]*)\?interaction=', review.text)
        assert link is not None
        assert link.group(1) == "/chat/sample/INV%202%2Fb"
    finally:
        chatting.close()


def test_the_api_assistant_takes_a_company_key_holding_a_slash(wired, database_url, clock):
    """``INV 2/b`` (a key the plug-in guide gives as valid): the turn reaches the assistant
    over the API with the slash escaped, as it does on the pages (both answered 404)."""
    from countersign.domain.contracts import PERMISSIONS
    from countersign.infrastructure.entrypoints.http import create_app
    from countersign.infrastructure.identity.tokens import issue_token
    from fastapi.testclient import TestClient

    chatting = _chatting(database_url, clock)
    try:
        token = issue_token(
            chatting, "granite", "invoices-bot", sorted(PERMISSIONS), issued_by=AVA, kind="agent"
        ).token
        with TestClient(create_app(chatting), raise_server_exceptions=False) as client:
            answered = client.post(
                "/api/v1/assistants/sample/resources/INV%202%2Fb/messages",
                headers={"Authorization": f"Bearer {token}"},
                json={"message": "Tag it disputed."},
            )
        assert answered.status_code == 200, answered.text
        assert answered.json()["proposal"]["preview"]["invoice_key"] == "INV 2/b"
    finally:
        chatting.close()


def test_a_company_key_written_like_a_guid_comes_back_as_written(
    wired, database_url, clock, company
):
    """A key an invoice system writes as an upper-case GUID: the turn's answer redirected to
    it rewritten as a UUID, which names another record (a 404; a review's finding)."""
    from sample_plugin.company import Invoice, InvoiceBook

    from tests.test_web_pages import web_for

    key = "0B7E2A4C-3F1D-4E8A-9C55-2D6F1A7B9E10"
    InvoiceBook(company / "invoices.db").put(Invoice(key, "granite", "Guid Co", 7_000))
    chatting = _chatting(database_url, clock)
    try:
        browser = web_for(chatting, {}).browser(AVA)
        sent = browser.form(
            f"/chat/sample/{key}", {"message": "Tag it disputed."}, f"/chat/sample/{key}"
        )
        assert sent.headers["location"].startswith(f"/chat/sample/{key}?interaction=")
        assert browser.get(sent.headers["location"]).status_code == 200
    finally:
        chatting.close()


def _chatting(database_url: str, clock: Any) -> Any:
    """countersign with the sample plug-in, its model scripted to tag the invoice disputed."""
    from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
    from countersign.infrastructure.adapters.scripted_model import Call, Script, ScriptedEndpoint
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Settings

    script = Script(Call("propose_tag_invoice", {"tag": "disputed"}))
    model = OpenAIChatModel(ScriptedEndpoint(script).client(), "scripted")
    return bootstrap(
        Settings(database_url=database_url, plugins=("sample",)), clock=clock, model=model
    )


def test_a_pending_proposal_of_a_plugin_turned_off_says_so_on_its_page(wired, database_url, clock):
    """The deployment stops naming the plug-in while one of its proposals waits: its page
    told its manager "Your role does not allow approving this kind of proposal", and an
    approval posted anyway read "forbidden" (a plug-in author's finding). Both say the
    operation is not enabled here, in the reader's language, and nothing changes."""
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Settings

    from tests.test_web_pages import web_for

    pending = plugins._propose(wired, "sample.tag_invoice", "INV-1", {"tag": "late"})
    enable_plugins(())
    off = bootstrap(Settings(database_url=database_url, plugins=()), clock=clock)
    try:
        ava = web_for(off, {}).browser(AVA)
        page = ava.get(f"/proposals/{pending}")
        french = ava.get(f"/proposals/{pending}", **{"accept-language": "fr"})
        answer = ava.form(f"/proposals/{pending}/approve", {})
        told = ava.get(answer.headers["location"])
    finally:
        off.close()
        enable_plugins(("sample",))  # as ``wired`` enabled it

    assert page.status_code == 200, page.text[:300]
    assert "is not enabled on this server (its plug-in is turned off), so nobody" in page.text
    assert "Your role does not allow" not in page.text
    assert "pas activée sur ce serveur (son module" in french.text
    assert answer.status_code == 303
    assert "operation is not enabled on this server (its plug-in is turned off), so" in told.text
    assert wired.proposals.approve(pending, AVA).status == "succeeded"  # nothing had changed
