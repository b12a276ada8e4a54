"""A history's events carry a stable name (``event``) beside their stored type (``topic``).

``topic`` is the module and class the event is stored under ("countersign.domain.proposal:
Proposal.Approved"): an implementation's name, which a refactoring of countersign's modules
could change, and which tells a client where countersign's code lives. ``event`` is the name a
client keys by: "proposal.approved", and a plug-in's event under its plug-in's namespace (its
permissions and operations are named so too), so that it never reads as one of countersign's.
"""

from __future__ import annotations

import pytest
from countersign.application.audit import event_name
from countersign.infrastructure.entrypoints.http.models.history import HistoryEventOut

SAMPLE = {"sample_plugin.domain": "sample"}


@pytest.mark.parametrize(
    ("topic", "name"),
    [
        ("countersign.domain.proposal:Proposal.Approved", "proposal.approved"),
        ("countersign.domain.proposal:Proposal.ApprovalLapsed", "proposal.approval_lapsed"),
        ("countersign.domain.proposal:Proposal.RevisionRequired", "proposal.revision_required"),
        ("countersign.domain.club.organization:Organization.Registered", "organization.registered"),
        # A plug-in's, by its namespace: never "proposal.approved", whatever its class is named.
        ("sample_plugin.domain:InvoiceTags.Tagged", "sample.invoice_tags.tagged"),
        ("sample_plugin.domain.deeper:Proposal.Approved", "sample.proposal.approved"),
        # A package no enabled plug-in declares (the store refuses to read one): not countersign's.
        ("elsewhere.events:Proposal.Approved", "unknown.proposal.approved"),
        ("sample_plugin.domainx:Book.Made", "unknown.book.made"),
    ],
)
def test_each_event_has_a_stable_name_that_names_no_module(topic: str, name: str) -> None:
    assert event_name(topic, SAMPLE) == name


def test_the_api_documents_the_name_and_what_the_topic_is() -> None:
    fields = HistoryEventOut.model_fields
    assert "stable" in (fields["event"].description or "")
    assert "stored event type" in (fields["topic"].description or "")
