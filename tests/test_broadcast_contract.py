"""email_broadcast.apply_draft: the audience is counted, frozen, and recounted at approval."""

from __future__ import annotations

from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.organization import Organization

from tests.conftest import AVA, DRAFT
from tests.support.proposing import ICE_TIMES_DRAFT, proposal


def _form(cs):
    return cs.store.get(BroadcastForm.create_id(Organization.create_id("granite")), BroadcastForm)


def test_the_preview_counts_distinct_members_and_says_nothing_is_sent(cs, seeded):
    created = proposal(cs, seeded, operation=DRAFT)
    # Noah Fraser plays in both leagues and is counted once: 6 + 4 - 1.
    assert created.preview == {
        "filters_in_words": "members of Monday Night Open or Thursday Seniors",
        "audience_count": 9,
        "subject": "Ice times change next week",
        "body": "Draws move 30 minutes later.",
        "sends_email": False,
    }


def test_approval_copies_the_frozen_draft_into_the_form_and_sends_nothing(cs, seeded):
    created = proposal(cs, seeded, operation=DRAFT)

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert report.outcome == {
        "kind": "succeeded",
        "result": {
            "form_id": seeded["broadcast_forms"]["granite"],
            "audience_count": 9,
            "subject": "Ice times change next week",
        },
    }
    assert "Nothing has been sent" in report.message
    form = _form(cs)
    assert form.subject == "Ice times change next week"
    assert form.filters == {"leagues": ["Monday Night Open", "Thursday Seniors"]}
    assert form.applied_from == created.proposal_id
    again = cs.proposals.approve(created.proposal_id, AVA)
    assert again.outcome == report.outcome
    # The executing approval writes its text from the typed result in hand; a repeat, from
    # the stored outcome: the same words.
    assert (again.result, again.message) == ("already_completed", report.message)


def test_an_applied_draft_says_how_to_send_it_in_countersign(cs, seeded):
    """The outcome of an applied draft said "review and send it from the form", in both
    languages, but no page or command sends from the form: the send is a proposal of its own
    (email_broadcast.send), made by asking the email assistant (found walking the pages as a
    newcomer, hC). It now says so."""
    created = proposal(cs, seeded, operation=DRAFT)
    report = cs.proposals.approve(created.proposal_id, AVA)

    english = report.message or ""
    assert english.endswith(
        "Nothing has been sent: review it, then ask the email assistant to send it (a proposal "
        "of its own, approved like this one)."
    )
    french = cs.cards.card(created.proposal_id, AVA, language="fr").message or ""
    assert french.endswith(
        "Rien n'a été envoyé : relisez-le, puis demandez à l'assistant courriel de l'envoyer "
        "(une proposition à part, approuvée comme celle-ci)."
    )
    assert "from the form" not in english
    assert "depuis le formulaire" not in french


def test_a_changed_audience_requires_revision_and_leaves_the_form_alone(cs, seeded):
    created = proposal(cs, seeded, operation=DRAFT)
    cs.club.join("granite", "Thursday Seniors", "Grace Kim", "grace.kim@example.com")

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert report.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "audience_changed",
            "params": {"approved_count": 9, "current_count": 10},
        },
    }
    assert _form(cs).subject == ""


def test_a_draft_expires(cs, seeded, clock):
    created = proposal(cs, seeded, operation=DRAFT)
    clock.advance(days=1)
    assert cs.proposals.approve(created.proposal_id, AVA).reason == "expired"
    assert _form(cs).subject == ""


def test_declining_leaves_revision_context_and_cannot_then_be_approved(cs, seeded):
    created = proposal(cs, seeded, operation=DRAFT)

    declined = cs.proposals.decline(created.proposal_id, AVA, note="  Wrong leagues  ")

    assert (declined.result, declined.status) == ("declined", "declined")
    assert declined.outcome == {
        "kind": "revision_required",
        "reason": {"code": "declined_by_manager", "params": {}},
    }
    assert cs.proposals.approve(created.proposal_id, AVA).reason == "not_pending"
    events = cs.audit.history(created.proposal_id)["events"]
    assert [e["type"] for e in events] == ["Proposed", "Declined", "RevisionRequired"]
    assert events[1]["note"] == "Wrong leagues"
    assert cs.proposals.decline(created.proposal_id, AVA).reason == "not_pending"


def test_model_written_text_is_stored_verbatim_not_interpreted(cs, seeded):
    body = "<script>alert('x')</script> {amount_cents} ${HOME}"
    created = proposal(cs, seeded, operation=DRAFT, request={**ICE_TIMES_DRAFT, "body": body})
    cs.proposals.approve(created.proposal_id, AVA)
    assert _form(cs).body == body
