"""A proposal's history page, without a browser (the ASGI app, on both databases).

Before it, an auditor replayed a proposal's history only from the command line (``countersign
history``) and the API (``GET /api/v1/proposals/{id}/history``): no page showed what happened
to a proposal, in order, and who did it. ``/proposals/{id}/history`` lists every event of its
stream, each with when (the club's zone, the page's language), who and a plain sentence, and
from any event shows the proposal as it stood then (``?as_of=<event>``). Who may read it is
the API's rule (``ProposalAccess.history``)."""

from __future__ import annotations

import html
import re
from typing import Any
from uuid import UUID

import pytest
from countersign.application.authorization import Caller, Credential
from countersign.domain.club.organization import Organization
from countersign.domain.proposal import Proposal
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, enable_plugins
from countersign.infrastructure.persistence.stored_events import allow_event_packages
from eventsourcing.domain import Aggregate

from tests.conftest import AVA, DRAFT, MIA, REFUND, TO_CARD, events_table
from tests.support.proposing import BACK_TO_CARD, CANCEL, propose
from tests.support.store_queries import store_queries
from tests.test_corrupt_records import _fresh, _rewrite_state
from tests.test_web_pages import UNKNOWN, Web, _main, web_for

BEN = "ben@granite.example"  # seeded with no permission
NOAH = "noah@granite.example"  # a manager, as Ava
AVA_IS = "Ava Lindqvist (ava@granite.example)"
NOAH_IS = "Noah Bergeron (noah@granite.example)"
BEN_IS = "Ben Okafor (ben@granite.example)"
FR = {"Accept-Language": "fr"}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _text(fragment: str) -> str:
    """What a person reads of a piece of the page: its text, spaces flattened (an inline
    ``<span>`` or a line-break opportunity, ``<wbr>``, adds none)."""
    inline = re.sub(r"</?(?:span|wbr)\b[^>]*>", "", fragment)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", inline)).split())


def _events(page: Any) -> list[str]:
    """Each event as it reads: its sentence, then each line beneath it, split by " / "."""
    assert page.status_code == 200, page.text[:500]
    items = re.findall(r'<li class="event"[^>]*>(.*?)</li>', _main(page))
    read = []
    for item in items:
        lines = re.findall(r'<p class="(?:event-text|hint)">(.*?)</p>', item)
        quoted = re.findall(r"<blockquote[^>]*>(.*?)</blockquote>", item)
        read.append(" / ".join(_text(line) for line in [*lines, *quoted]))
    return read


def _history(web: Web, proposal_id: str, who: str = AVA, query: str = "", **headers: str) -> Any:
    return web.browser(who).get(f"/proposals/{proposal_id}/history{query}", **headers)


# -- each kind of event, in English and French ---------------------------------------------


def test_a_refund_carried_out_reads_event_by_event_in_english_and_french(web: Web) -> None:
    proposal_id = web.propose()
    web.cs.proposals.approve(proposal_id, AVA)

    english = _history(web, proposal_id)
    french = _history(web, proposal_id, **FR)

    refunded = (
        "Refunded $48.00 CAD for Olivia Chen's missed Early-bird 15% discount to "
        "Visa •••• 4242. The order total is now $297.00 CAD."
    )
    assert _events(english) == [
        f"{AVA_IS} proposed it. / To be approved by 2026-12-01 04:00 EST.",
        f"{AVA_IS} approved it. / Their role in the club then: manager.",
        "Approved in full: the application started carrying it out.",
        "The application checked again that the facts it was approved on still held: they did.",
        f"The application carried it out. / {refunded}",
    ]
    assert _events(french)[0] == (
        f"{AVA_IS} l'a proposée. / À approuver avant le 1er déc. 2026, 4 h 00 HNE."
    )
    assert _events(french)[1:3] == [
        f"{AVA_IS} l'a approuvée. / Son rôle dans le club alors : gestionnaire.",
        "Approuvée en entier : l'application a commencé à l'exécuter.",
    ]
    assert _events(french)[4].startswith("L'application l'a exécutée. / Remboursement de 48,00")
    # When: the club's zone, as the other pages write it, and the instant for machines.
    main = _main(english)
    assert re.search(
        r'<time datetime="20[0-9-]+T[0-9:.]+\+00:00">20[0-9-]+ [0-9:]+ ES?T</time>', main
    )
    assert "Now: Succeeded" in _text(main)
    assert "Actuellement\u00a0: Réussie" in html.unescape(french.text)  # not "today"
    assert "5 events" in _text(main)
    assert "5 événements" in _text(_main(french))
    assert "<form" not in _main(english)  # nothing to decide here


def test_a_quorum_with_an_approval_that_stopped_counting_and_a_decline_with_its_note(
    web: Web,
) -> None:
    web.cs.policies.set("granite", REFUND, 2, above_cents=None)
    proposal_id = web.propose()
    web.cs.proposals.approve(proposal_id, NOAH)
    web.cs.club.set_permissions("granite", NOAH, ["audit.read"])
    web.cs.proposals.approve(proposal_id, AVA)  # Noah's no longer counts: 1 of 2 again
    web.cs.club.set_permissions("granite", BEN, ["orders.refund"])
    web.cs.proposals.decline(proposal_id, BEN, 'Too much <b>"now"</b>')

    english = _events(_history(web, proposal_id))
    french = _events(_history(web, proposal_id, **FR))

    lost = (
        "No longer counts: Noah Bergeron (noah@granite.example) lost the permission to "
        "approve “Refund a missed discount” (orders.refund)"
    )
    assert english[1:] == [
        f"{NOAH_IS} approved it: approval 1 of 2. / Their role in the club then: manager.",
        f"The approval by {NOAH_IS} stopped counting. / {lost}",
        f"{AVA_IS} approved it: approval 1 of 2. / Their role in the club then: manager.",
        f'{BEN_IS} declined it. / Their note: / Too much <b>"now"</b>',
        "The decline closed it: nothing will be carried out.",
    ]
    assert french[1].startswith(f"{NOAH_IS} l'a approuvée : approbation 1 sur 2.")
    assert french[2].startswith(f"L'approbation de {NOAH_IS} a cessé de compter. / Ne compte")
    assert french[4] == f'{BEN_IS} l\'a refusée. / Sa note : / Too much <b>"now"</b>'
    assert french[5] == "Le refus l'a close : rien ne sera exécuté."
    # As it stood after the lapse: no approval counting, and why Noah's stopped.
    then = _text(_main(_history(web, proposal_id, query="?as_of=3")))
    assert f"Approvals so far 0 of 2 {lost}" in then


def test_a_lost_answer_settled_by_the_check_with_the_provider(web: Web) -> None:
    proposal_id = propose(web.cs, web.seeded, "refund-lost-response")
    web.cs.proposals.approve(proposal_id, AVA)
    web.cs.sweepers.reconcile()

    english = _events(_history(web, proposal_id))
    french = _events(_history(web, proposal_id, **FR))

    assert english[4].startswith(
        "The provider's answer was not known: the application had to confirm with the "
        "provider what happened. / "
    )
    assert english[5].startswith(
        "The application carried it out. / The check with the provider settled it. / Refunded"
    )
    assert french[4].startswith("La réponse du fournisseur était inconnue")
    assert french[5].startswith(
        "L'application l'a exécutée. / La vérification auprès du fournisseur l'a réglée."
    )


def test_not_carried_out_and_a_failure_with_its_support_reference(
    web: Web, clock: FakeClock
) -> None:
    stale = propose(web.cs, web.seeded, "refund-declined")  # the card provider refuses it
    web.cs.proposals.approve(stale, AVA)
    failing = propose(web.cs, web.seeded)

    def undecodable(state: dict[str, Any]) -> dict[str, Any]:
        return {**state, "arguments": {**state["arguments"], "amount_cents": "lots"}}

    _rewrite_state(web.cs, failing, 1, undecodable)
    other = _fresh(web.cs, clock)
    try:
        report = other.proposals.approve(failing, AVA)
    finally:
        other.close()
    reference = report.outcome["correlation_id"]

    assert _events(_history(web, stale))[-1].startswith(
        "The application did not carry it out: it needs a new proposal. / "
    )
    assert _events(_history(web, stale, **FR))[-1].startswith(
        "L'application ne l'a pas exécutée : il faut une nouvelle proposition. / "
    )
    failed = _events(_history(web, failing))[-1].split(" / ")
    assert failed[:2] == [
        "It failed inside the application: nothing more will be tried.",
        "Why: the arguments it was approved with could no longer be read.",
    ]
    assert failed[-1] == f"Support reference: {reference}"
    # In French, in French words: never the exception's class name.
    french = _events(_history(web, failing, **FR))[-1].split(" / ")
    assert french[:2] == [
        "Elle a échoué dans l'application : rien d'autre ne sera tenté.",
        "Cause : les arguments approuvés ne pouvaient plus être lus.",
    ]
    assert french[-1] == f"Référence pour le support : {reference}"
    assert "UndecodableContractError" not in _history(web, failing, **FR).text

    # A failure this page has no words for (a newer release's) stays a code, labelled.
    failure = [e["version"] for e in web.cs.audit.history(failing)["events"]][-1]
    _rewrite_state(web.cs, failing, failure, lambda s: {**s, "error_class": "QuotaExceeded"})
    assert _events(_history(web, failing))[-1].split(" / ")[1] == "Error code: QuotaExceeded."
    assert _events(_history(web, failing, **FR))[-1].split(" / ")[1] == (
        "Code d'erreur : QuotaExceeded."
    )


def test_expired_and_each_way_another_proposal_takes_its_place(web: Web, clock: FakeClock) -> None:
    cs, seeded = web.cs, web.seeded
    expiring = propose(cs, seeded, "refund-two-approvers")
    clock.advance(days=30)
    cs.sweepers.expire_due()
    draft = {"filters": {"leagues": ["Monday Night Open"]}, "subject": "Ice", "body": "Hello"}
    edited = propose(cs, seeded, operation=DRAFT, request=draft)
    edit = cs.access.revise(edited, AVA, {**draft, "subject": "Ice times"}).proposal_id
    withdrawn = propose(cs, seeded, "refund-ok", operation=CANCEL, request=BACK_TO_CARD)
    carried_out = propose(cs, seeded, "refund-ok")
    cs.proposals.approve(carried_out, AVA)

    assert _events(_history(web, expiring))[-1] == (
        "It expired before it was approved in full: it can no longer be approved."
    )
    assert _events(_history(web, expiring, **FR))[-1] == (
        "Elle a expiré avant d'être approuvée en entier : elle ne peut plus être approuvée."
    )
    assert _events(_history(web, edited))[-1] == "An edit of it took its place."
    assert _events(_history(web, edited, **FR))[-1] == "Une modification l'a remplacée."
    assert f'href="/proposals/{edit}">The proposal that took its place</a>' in _main(
        _history(web, edited)
    )
    # The edit's own history begins with it, and leads back to the version it edited.
    revised = _history(web, edit)
    assert _events(revised)[0].startswith(f"{AVA_IS} proposed it, as an edit of an earlier")
    assert (
        f'href="/proposals/{edited}/history">The earlier version\'s history</a>'
        in html.unescape(_main(revised))
    )
    assert _events(_history(web, withdrawn))[-1] == (
        "Another proposal was carried out, which withdrew it."
    )
    # Its link names it as the review page does: it withdrew this one, it took no place.
    withdrawing = _main(_history(web, withdrawn))
    assert f'href="/proposals/{carried_out}">The proposal that withdrew it</a>' in withdrawing
    assert "The proposal that took its place" not in withdrawing
    assert "La proposition qui l'a retirée</a>" in html.unescape(
        _main(_history(web, withdrawn, **FR))
    )
    assert _events(_history(web, withdrawn, **FR))[-1] == (
        "Une autre proposition a été exécutée, ce qui l'a retirée."
    )
    first = propose(cs, seeded, "refund-stale")
    propose(cs, seeded, "refund-stale")  # the same refund again: the newer takes its place
    assert _events(_history(web, first))[-1] == (
        "A newer proposal for the same thing took its place."
    )
    assert _events(_history(web, first, **FR))[-1] == (
        "Une proposition plus récente pour la même chose l'a remplacée."
    )


def test_tokens_and_clients_are_named_as_the_review_page_names_them(web: Web) -> None:
    """An agent's token proposed it through an MCP client whose name carries markup, and an
    approver token approved it: the history says so in the review page's own words, the
    client's name cleaned as that page cleans it."""
    refunds = frozenset({"orders.refund"})
    agent = Caller(AVA, "granite", refunds, Credential.AGENT_TOKEN, "ops-bot")
    created = web.cs.access.propose(
        agent,
        operation=REFUND,
        resource_id=web.seeded["orders"]["refund-ok"],
        request=TO_CARD,
        origin={
            "channel": "mcp",
            "client": 'Claude<img src=x onerror="1">',
            "client_version": "1.2",
        },
    )
    billing = Caller(AVA, "granite", refunds, Credential.APPROVER_TOKEN, "billing")
    web.cs.access.approve(created.proposal_id, billing)

    ava = web.browser(AVA)
    for language in ("en", "fr"):
        review = _text(
            _main(ava.get(f"/proposals/{created.proposal_id}", **{"Accept-Language": language}))
        )
        history = _history(web, created.proposal_id, **{"Accept-Language": language})
        proposed, approved = _events(history)[:2]
        origin = proposed.split(" / ")[1]
        assert origin.startswith(("Proposed by the agent “ops-bot”", "Proposée par l'agent"))
        assert origin in review
        assert "<img" not in history.text
        how = approved.split(" / ")[-1]
        assert how in (
            "Through the service “billing” (approver token).",
            "Via le service « billing » (jeton d'approbateur).",
        )


class NotedByPlugin(Aggregate.Event):
    """A plug-in's event on a proposal: a type the history page has no sentence for."""

    note: str

    def apply(self, aggregate: Any) -> None:
        pass


def test_an_event_the_page_does_not_know_is_listed_by_its_type(web: Web) -> None:
    proposal_id = web.propose()
    # As a plug-in's events are stored: its package declared (``event_packages``).
    allow_event_packages([__name__])
    try:
        proposal = web.cs.store.get(UUID(proposal_id), Proposal)
        proposal.trigger_event(NotedByPlugin, note="<i>checked</i>")
        web.cs.store.save(proposal)
        web.cs.proposals.approve(proposal_id, AVA)

        english = _events(_history(web, proposal_id))
        french = _events(_history(web, proposal_id, **FR))
        then = _history(web, proposal_id, query="?as_of=2")
    finally:
        enable_plugins()  # the deployment's own again

    assert english[1] == "An event this page does not describe: “NotedByPlugin”."
    assert french[1] == "Un événement que cette page ne décrit pas : « NotedByPlugin »."
    assert english[2].startswith(f"{AVA_IS} approved it.")  # and the rest after it
    assert len(english) == 6
    # As it stood after it: pending, as before it.
    assert _events(then)[-1] == english[1]
    assert "Status then Awaiting approval" in _text(_main(then))


class PluginChecks:
    """A plug-in's own events, in its own module: one is named as countersign's is."""

    class Approved(Aggregate.Event):
        """The plug-in's check passed: no person approved anything."""

        check: str

        def apply(self, aggregate: Any) -> None:
            pass


def test_a_plugin_event_named_as_countersigns_is_not_worded_as_countersigns(web: Web) -> None:
    """A plug-in's ``Approved`` (another module's, another meaning) was worded as a person's
    approval ("Ava approved it." with no one named, and counted towards the quorum); it is
    known by its whole topic, so it is listed as an event the page does not describe, named
    so that it is not taken for countersign's: by its stable name, under its plug-in's
    namespace (it was its topic, the module path, "tests.test_history_page:PluginChecks.
    Approved": an implementation's name on a manager's page)."""
    proposal_id = web.propose()
    allow_event_packages([__name__])
    # As a deployment enables a plug-in "checks" declaring this package (bootstrap).
    web.cs.audit.namespaces[__name__] = "checks"
    try:
        proposal = web.cs.store.get(UUID(proposal_id), Proposal)
        proposal.trigger_event(PluginChecks.Approved, check="address")
        web.cs.store.save(proposal)
        english_page = _history(web, proposal_id)
        french = _events(_history(web, proposal_id, **FR))
    finally:
        enable_plugins()
        web.cs.audit.namespaces.pop(__name__, None)

    english = _events(english_page)
    name = "checks.plugin_checks.approved"
    assert english[1] == f"An event this page does not describe: “{name}”."
    assert french[1] == f"Un événement que cette page ne décrit pas : « {name} »."
    assert len(english) == 2
    assert not any("approved it" in line for line in english)
    # A line may break after each dot and underscore of the name (a phone wraps it between
    # its words, not in the middle of one), and nowhere else in it.
    assert '<span class="event-name">checks.<wbr>plugin_<wbr>checks.<wbr>approved</span>' in (
        english_page.text
    )


# -- as it stood then ------------------------------------------------------------------------


def test_from_any_event_the_proposal_as_it_stood_then(web: Web) -> None:
    web.cs.policies.set("granite", REFUND, 2, above_cents=None)
    proposal_id = web.propose()
    web.cs.proposals.approve(proposal_id, NOAH)
    web.cs.proposals.approve(proposal_id, AVA)  # the second: carried out

    whole = _history(web, proposal_id)
    assert (
        f'href="/proposals/{proposal_id}/history?as_of=2#as-of">As it stood after event 2</a>'
        in (_main(whole))
    )
    then = _history(web, proposal_id, query="?as_of=2")
    main = _main(then)
    section = _text(re.search(r'<section class="as-of".*?</section>', main).group(0))

    assert section.startswith("As it stood after event 2 ")
    assert "Status then Awaiting approval" in section
    assert f"Approvals so far 1 of 2 — {NOAH_IS}" in section
    assert "Outcome" not in section
    # The preview exactly as the review page shows it, by the same template.
    review = _main(web.browser(AVA).get(f"/proposals/{proposal_id}"))
    preview = re.search(r'<dl class="preview">.*?</dl>', review).group(0)
    assert preview in main
    # Only what had happened by then.
    assert len(_events(then)) == 2
    assert "Events 1 to 2 of 6" in _text(main)
    assert 'aria-current="step"' in main
    assert "Now: Succeeded" in _text(main)  # and what it is today, said as today's
    # After the last event: the outcome.
    last = _main(_history(web, proposal_id, query="?as_of=6", **FR))
    section = _text(re.search(r'<section class="as-of".*?</section>', last).group(0))
    assert "Statut alors Réussie" in section
    assert "Résultat Remboursement envoyé Remboursement de 48,00 $ CA" in section


@pytest.mark.parametrize(
    "as_of",
    [
        *("0", "7", "99999999999", "two", "-1", "1.5"),
        "2" + "%20" * 11 + "x",  # a number, then more than the page reads of it
        "%D9%A3",  # an Arabic-Indic three
        "%EF%BC%93",  # a full-width three
    ],
)
def test_an_event_the_history_does_not_have_is_a_clear_not_found(web: Web, as_of: str) -> None:
    proposal_id = web.propose()
    web.cs.proposals.approve(proposal_id, AVA)  # 5 events

    page = _history(web, proposal_id, query=f"?as_of={as_of}")

    assert page.status_code == 404
    assert "No such point in the history" in page.text
    assert "This proposal's history has no such event." in html.unescape(page.text)
    assert "Traceback" not in page.text
    french = _history(web, proposal_id, query=f"?as_of={as_of}", **FR)
    assert "Ce point n'existe pas dans l'historique" in html.unescape(french.text)


# -- who may read it -------------------------------------------------------------------------


def test_who_may_read_a_history_is_who_may_read_it_through_the_api(web: Web) -> None:
    """Ava (a manager) and Ben as an auditor only (audit.read, no operation's permission)
    read it, and their review pages link it; Ben without a permission, or with the refunds'
    permission alone, gets the forbidden page, as from the API's history route, and no link.
    Nobody gets a control to decide from it."""
    proposal_id = web.propose()
    path = f"/proposals/{proposal_id}/history"
    link = f'<a href="{path}">Its history: who did what, and when</a>'
    api = web.app

    assert link in _main(web.browser(AVA).get(f"/proposals/{proposal_id}"))
    assert link in _main(web.browser(AVA).get(f"/proposals/{proposal_id}/status"))
    for permissions in ([], ["orders.refund"]):
        web.cs.club.set_permissions("granite", BEN, permissions)
        ben = web.browser(BEN)
        refused = ben.get(path)
        assert refused.status_code == 403, permissions
        assert "Not allowed" in refused.text
        assert ben.get(f"{path}?as_of=1").status_code == 403
        assert link not in ben.get(f"/proposals/{proposal_id}").text
    token = _api_token(web, BEN, ["orders.refund"])
    assert _api_history(api, proposal_id, token) == 403  # the API's answer, the same

    web.cs.club.set_permissions("granite", BEN, ["audit.read"])
    ben = web.browser(BEN)
    review = ben.get(f"/proposals/{proposal_id}")
    assert link in _main(review)
    assert 'action="/proposals/' not in _main(review)  # an auditor decides nothing
    for shown in (ben.get(path), ben.get(f"{path}?as_of=1")):
        assert shown.status_code == 200
        assert _events(shown)[0].startswith(f"{AVA_IS} proposed it.")
        assert "<form" not in _main(shown)
        assert "<button" not in _main(shown)
    assert _api_history(api, proposal_id, _api_token(web, BEN, ["audit.read"])) == 200


def test_another_clubs_id_answers_as_an_unknown_one(web: Web) -> None:
    maple = web.propose("maple-refund", actor=MIA, org="maple")
    ava = web.browser(AVA)

    answers = {
        (ava.get(f"/proposals/{some}/history{query}").status_code,
         ava.get(f"/proposals/{some}/history{query}").text)
        for some in (maple, UNKNOWN, "not-a-uuid", web.seeded["orders"]["refund-ok"])
        for query in ("", "?as_of=1", "?as_of=x")
    }  # fmt: skip

    assert len(answers) == 1
    [(status, text)] = answers
    assert status == 404
    assert "Not found" in text
    signed_out = web.browser().get(f"/proposals/{maple}/history")
    assert signed_out.status_code == 303
    assert signed_out.headers["location"].startswith("/sign-in?next=")


def _api_token(web: Web, email: str, permissions: list[str]) -> str:
    from countersign.infrastructure.identity.tokens import issue_token

    name = f"audit-{len(permissions)}-{permissions[0].replace('.', '-')}"
    issued = issue_token(web.cs, "granite", name, permissions, issued_by=email, kind="approver")
    return issued.token


def _api_history(app: Any, proposal_id: str, token: str) -> int:
    from fastapi.testclient import TestClient

    client = TestClient(app)
    answer = client.get(
        f"/api/v1/proposals/{proposal_id}/history",
        headers={"Authorization": f"Bearer {token}"},
    )
    return int(answer.status_code)


# -- a long history, a damaged record ----------------------------------------------------------


def test_a_long_history_is_still_one_readable_page(web: Web) -> None:
    """Five approvals needed; four given, then the four approvers lose the permission, and
    four more come: each earlier approval stops counting as a later one rechecks it. Every
    event is on the one page, in order, each approver named once per event."""
    web.cs.policies.set("granite", REFUND, 5, above_cents=None)
    club = web.cs.store.get(Organization.create_id("granite"), Organization)
    helpers = [f"helper{n}@granite.example" for n in range(1, 9)]
    for n, email in enumerate(helpers, 1):
        club.add_member(email, f"Helper {n}", "manager", ["orders.refund"])
    web.cs.store.save(club)
    proposal_id = web.propose()
    for email in helpers[:4]:
        web.cs.proposals.approve(proposal_id, email)
    for email in helpers[:4]:
        web.cs.club.set_permissions("granite", email, [])
    for email in [*helpers[4:], AVA]:
        web.cs.proposals.approve(proposal_id, email)

    page = _history(web, proposal_id)
    events = _events(page)
    stream = web.cs.audit.history(proposal_id)["events"]

    assert len(events) == len(stream) >= 16
    main = _main(page)
    numbers = [int(n) for n in re.findall(r'<li class="event" id="event-([0-9]+)"', main)]
    assert numbers == list(range(1, len(stream) + 1))
    assert events[1].startswith("Helper 1 (helper1@granite.example) approved it: approval 1 of 5.")
    assert events[4].startswith("Helper 4 (helper4@granite.example) approved it: approval 4 of 5.")
    lapsed = [e for e in events if "stopped counting" in e]
    assert len(lapsed) == 4
    assert events[-1].startswith("The application carried it out.")
    assert "?page=" not in main  # one page, no pagination
    assert len(page.text) < 60_000


def test_a_damaged_record_answers_as_the_review_page_does(web: Web, clock: FakeClock) -> None:
    """One of its events stored under a topic nothing may import: the page says something
    went wrong, with the reference the logs hold, as the review page does; never the topic,
    the table or a trace."""
    proposal_id = web.propose()
    web.cs.proposals.approve(proposal_id, AVA)
    _rewrite_topic(web.cs, proposal_id, 2, "os:system")
    other = _fresh(web.cs, clock)
    try:
        fresh = web_for(other, web.seeded)
        ava = fresh.browser(AVA)
        history = ava.get(f"/proposals/{proposal_id}/history")
        review = ava.get(f"/proposals/{proposal_id}")
    finally:
        other.close()

    assert history.status_code == review.status_code == 500
    titles = [re.findall(r"<h1[^>]*>(.*?)</h1>", page.text) for page in (history, review)]
    assert titles[0] == titles[1] == ["Something went wrong"]
    assert "Something went wrong" in history.text
    assert re.search(r"cs-[0-9a-z-]+", _main(history))
    for leak in ("os:system", "Traceback", events_table(web.cs), "SELECT"):
        assert leak not in history.text, leak


def _rewrite_topic(cs: Countersign, proposal_id: str, version: int, topic: str) -> None:
    """Store one event under another topic, directly in SQL, as a bad migration would."""
    table, key = events_table(cs), UUID(proposal_id)
    where = "WHERE originator_id={0} AND originator_version={0}"
    if cs.database.kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(cs.database.sqlite_path)
        conn.execute(f"UPDATE {table} SET topic=? {where.format('?')}", (topic, key.hex, version))
        conn.commit()
        conn.close()
        return
    import psycopg

    db = cs.database
    with psycopg.connect(host=db.host, port=db.port, user=db.user, dbname=db.dbname) as conn:
        conn.execute(f"UPDATE {table} SET topic=%s {where.format('%s')}", (topic, key, version))


def test_a_history_with_many_people_reads_the_club_once_not_once_a_person(
    web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forty approvers, each named on the page: the club (who each one is) is read once for
    the page, as the proposal is, however many people its history names."""
    web.cs.policies.set("granite", REFUND, 5, above_cents=None)
    club = web.cs.store.get(Organization.create_id("granite"), Organization)
    helpers = [f"helper{n}@granite.example" for n in range(1, 41)]
    for n, email in enumerate(helpers, 1):
        club.add_member(email, f"Helper {n}", "manager", ["orders.refund"])
    web.cs.store.save(club)
    proposal_id = web.propose()
    for start in range(0, 40, 4):
        for email in helpers[start : start + 4]:
            web.cs.proposals.approve(proposal_id, email)
        for email in helpers[start : start + 4]:
            web.cs.club.set_permissions("granite", email, [])
    short = web.propose()  # one person: Ava proposed it
    _history(web, short)  # signed in: the first visit's own reads are not the page's
    asked = store_queries(web.cs, monkeypatch)
    _history(web, short)
    one_person = list(asked)
    asked.clear()

    page = _history(web, proposal_id)

    events = _events(page)
    assert any(e.startswith("Helper 40 (helper40@granite.example) approved it") for e in events)
    assert len(asked) == len(one_person), (asked, one_person)


def test_a_point_recorded_in_one_step_with_the_next_event_says_nobody_could_see_it(
    web: Web,
) -> None:
    """The last approval and the claim are committed together, and the claim with what
    follows it (Proposal.approve_and_claim), and a decline with its closing: the proposal
    never stood, where anyone could read it, as it stands after the first of them. The page
    says so there, rather than offer it as a state the approvers saw; a point that did stand
    (after the first approval of two) carries no such line."""
    web.cs.policies.set("granite", REFUND, 2, above_cents=None)
    proposal_id = web.propose()
    web.cs.proposals.approve(proposal_id, NOAH)
    web.cs.proposals.approve(proposal_id, AVA)  # events 3 (approved), 4 (claimed), 5, 6
    declined = web.propose("refund-stale")
    web.cs.proposals.decline(declined, AVA, "no")  # events 2 (declined), 3 (closed)

    def as_of(pid: str, version: int, **headers: str) -> str:
        page = _history(web, pid, query=f"?as_of={version}", **headers)
        assert page.status_code == 200
        return _text(re.search(r'<section class="as-of".*?</section>', _main(page)).group(0))

    together = "Recorded in the same step as event {n}: no one could have seen the proposal as "
    assert together.format(n=4) in as_of(proposal_id, 3)
    assert together.format(n=5) in as_of(proposal_id, 4)
    assert together.format(n=3) in as_of(declined, 2)
    assert "Enregistré dans la même étape que l'événement 4 : personne n'a pu voir" in (
        as_of(proposal_id, 3, **FR)
    )
    for version in (1, 2, 6):
        assert "Recorded in the same step" not in as_of(proposal_id, version)


def test_a_quorum_that_expired_half_approved_is_not_said_never_approved(
    web: Web, clock: FakeClock
) -> None:
    """One approval of two, then the expiry: the page lists the approval, and the expiry
    says what it cut short (not "before it was approved", which the line above belies)."""
    web.cs.policies.set("granite", REFUND, 2, above_cents=None)
    proposal_id = web.propose()
    web.cs.proposals.approve(proposal_id, NOAH)
    clock.advance(days=30)
    web.cs.sweepers.expire_due()

    english = _events(_history(web, proposal_id))
    french = _events(_history(web, proposal_id, **FR))

    assert english[1].startswith(f"{NOAH_IS} approved it: approval 1 of 2.")
    assert english[2] == "It expired before it was approved in full: it can no longer be approved."
    assert french[2] == (
        "Elle a expiré avant d'être approuvée en entier : elle ne peut plus être approuvée."
    )


def test_an_approval_signed_with_a_passkey_names_the_passkey_as_the_card_does(
    web: Web,
) -> None:
    """The passkey's name is what its owner typed: it reads as text, in both languages."""
    from tests.test_passkeys import register, require_passkey, signed

    require_passkey(web.cs)
    key = register(web.cs, AVA, "Ava's <b>laptop</b>")
    proposal_id = web.propose()
    web.cs.proposals.approve(proposal_id, AVA, signed(web.cs, proposal_id, AVA, key))

    english = _history(web, proposal_id)
    french = _history(web, proposal_id, **FR)

    assert _events(english)[1].endswith('Approved with a passkey ("Ava\'s <b>laptop</b>")')
    assert _events(french)[1].endswith("Approuvée avec une clé d'accès (« Ava's <b>laptop</b> »)")
    assert "<b>laptop" not in english.text
