"""A plug-in's section on the pages: named in the reader's language, its operations in its
lead, its conversation without the club's panel (the sample plug-in, tests/plugins)."""

from __future__ import annotations

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
