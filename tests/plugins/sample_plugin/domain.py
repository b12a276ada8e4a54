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
        self.sources: tuple[str, ...] = ()

    class Tagged(Aggregate.Event):
        """Version 2 says where a tag came from; version 1 events (stored before it) are
        upcast as the library upcasts countersign's own: they came from a proposal."""

        class_version = 2
        tag: str
        source: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, object]) -> None:
            state["source"] = "proposal"

    @event(Tagged)
    def tag(self, tag: str, source: str) -> None:
        self.tags = (*self.tags, tag)
        self.sources = (*self.sources, source)
