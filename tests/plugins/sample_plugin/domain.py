"""The plug-in's own aggregate, stored in countersign's event store: its topics are
``sample_plugin.domain:…``, a package the plug-in declares (``event_packages``)."""

from __future__ import annotations

from uuid import UUID

from eventsourcing.domain import Aggregate, event


class InvoiceTags(Aggregate):
    """The tags a club put on one of the company's invoices, by the invoice's key."""

    @event("Started")
    def __init__(self, *, id: UUID, invoice_key: str) -> None:
        self.invoice_key = invoice_key
        self.tags: tuple[str, ...] = ()

    @event("Tagged")
    def tag(self, tag: str) -> None:
        self.tags = (*self.tags, tag)
