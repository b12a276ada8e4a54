"""What a reviewer reads of a proposal its seals do not vouch for (application/shown_seals.py).

With seal keys, approving such a proposal sets it aside (tests/test_event_seals.py), but the
manager deciding reads it first: the review page, the status page, the API's card and the
command line's ``show`` check its seals when they show it and say so before anything else,
with what approving it would do. A writer changed the database directly, as in the seal
tests; every reader here is a fresh process."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from countersign.domain.seals import SealKeys
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.identity.tokens import issue_token

from tests.conftest import AVA
from tests.test_audit_verify import _forge
from tests.test_event_seals import (
    K1,
    K2,
    SECRET_1,
    _forged_approval,
    _forged_outcome,
    _propose,
    _types,
)
from tests.test_web_pages import _main, web_for

FORGED_APPROVAL_EN = (
    "Its history holds an event that no seal of this server vouches for (event 2: an approval), "
    "so what it shows cannot be trusted. Approving it will not carry it out: countersign will "
    "set it aside and ask for a new proposal. Whoever runs countersign can find what was "
    "changed with countersign audit verify."
)
FORGED_APPROVAL_FR = (
    "Son historique contient un événement qu'aucun sceau de ce serveur ne garantit "
    "(événement 2 : une approbation) : ce qu'elle affiche n'est pas fiable. L'approuver ne "
    "l'exécutera pas : countersign la mettra de côté et demandera une nouvelle proposition. "
    "La personne qui administre countersign peut trouver ce qui a été modifié avec "
    "countersign audit verify."
)


def _read(fragment: str) -> str:
    """Text as a person reads it: tags out, entities read, spaces flattened."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _warning(page: Any) -> str | None:
    """The page's warning that the record is not vouched for, as read, if it shows one."""
    assert page.status_code == 200, page.text[:500]
    found = re.search(r'<section class="alert tone-bad unverified".*?</section>', _main(page))
    return _read(found.group(0)) if found else None


def _review(cs: Any, seeded: dict[str, Any], proposal_id: str, language: str = "en") -> Any:
    headers = {"Accept-Language": language}
    browser = web_for(cs, seeded).browser(AVA)
    return browser.client.get(f"/proposals/{proposal_id}", headers=headers)


def _api_card(
    cs: Any, seeded: dict[str, Any], proposal_id: str, token: str | None = None
) -> dict[str, Any]:
    """The card as the API answers it, read with ``token`` (by default an agent's of refunds)."""
    if token is None:
        token = issue_token(
            cs, "granite", "reader", ["orders.refund"], issued_by=AVA, kind="agent"
        ).token
    answer = (
        web_for(cs, seeded)
        .browser()
        .client.get(
            f"/api/v1/proposals/{proposal_id}", headers={"Authorization": f"Bearer {token}"}
        )
    )
    assert answer.status_code == 200, answer.text[:500]
    document: dict[str, Any] = answer.json()
    return document


def test_a_forged_approval_is_named_first_on_the_review_page_in_both_languages(
    cs, seeded, deployments
):
    proposal_id = _propose(deployments(K1), seeded, approvals=2)
    _forged_approval(cs, proposal_id)
    reader = deployments(K1)

    english = _review(reader, seeded, proposal_id)
    french = _review(reader, seeded, proposal_id, "fr")

    assert _warning(english) == f"countersign cannot vouch for this record {FORGED_APPROVAL_EN}"
    assert _warning(french) == (
        f"countersign ne peut pas garantir cet enregistrement {FORGED_APPROVAL_FR}"
    )
    # Said before the proposal's own words, and the lead's promise is not made.
    main_text = _main(english)
    assert main_text.index('id="unverified"') < main_text.index("preview")
    assert "This is exactly what approval will do" not in english.text
    # Its button does not promise the refund, nor a confirmation: approving sets it aside.
    assert 'aria-describedby="unverified-title">Approve</button>' in english.text
    assert "You will confirm once more" not in english.text
    assert _types(reader, proposal_id) == ["Proposed", "Approved"]  # reading recorded nothing
    browser = web_for(reader, seeded).browser(AVA)
    path = f"/proposals/{proposal_id}"
    answer = browser.form(f"{path}/approve", {}, path)
    assert (answer.status_code, answer.headers["location"]) == (303, path)
    assert _types(reader, proposal_id) == ["Proposed", "Approved", "RevisionRequired"]
    assert reader.sandbox.refunds() == []


def test_a_sealed_proposal_shows_no_warning_and_the_lead_stays(cs, seeded, deployments):
    reader = deployments(K1)
    proposal_id = _propose(reader, seeded, approvals=2)

    page = _review(reader, seeded, proposal_id)

    assert _warning(page) is None
    assert "This is exactly what approval will do" in page.text
    assert _api_card(reader, seeded, proposal_id)["unverified"] is None


def test_without_keys_nothing_is_checked_and_nothing_is_said(cs, seeded, deployments):
    proposal_id = _propose(deployments(K1), seeded, approvals=2)
    _forged_approval(cs, proposal_id)
    reader = deployments(None)

    assert _warning(_review(reader, seeded, proposal_id)) is None
    assert _api_card(reader, seeded, proposal_id)["unverified"] is None


def test_an_api_client_and_the_command_line_read_the_same_warning(
    cs, seeded, deployments, database_url, capsys, monkeypatch
):
    proposal_id = _propose(deployments(K1), seeded, approvals=2)
    _forged_approval(cs, proposal_id)

    card = _api_card(deployments(K1), seeded, proposal_id)

    assert card["status"] == "pending"
    assert card["unverified"] == {
        "reason": "proposal_seal_invalid",
        "event_version": 2,
        "event_type": "Approved",
        "message": FORGED_APPROVAL_EN,
    }
    monkeypatch.setenv("COUNTERSIGN_SEAL_KEYS", f"k1:{SECRET_1}")
    capsys.readouterr()
    assert main(["show", proposal_id, "--as", AVA, "--database", database_url]) == 0
    shown = " ".join(line.strip("│ ") for line in capsys.readouterr().out.splitlines())
    assert "NOT VOUCHED FOR" in shown
    assert "no seal of this server vouches for (event 2: an approval)" in " ".join(shown.split())


def test_what_people_approve_changed_in_the_database_is_named(cs, seeded, deployments):
    """The frozen preview edited in place, every link made again: the chain holds, the seal
    of ``Proposed`` does not."""
    proposal_id = _propose(deployments(K1), seeded)

    def smaller(state: dict[str, Any]) -> None:
        state["preview"]["amount_cents"] = 1

    _forge(cs, proposal_id, 1, smaller, through_the_end=True)

    warning = _warning(_review(deployments(K1), seeded, proposal_id))

    assert warning is not None
    assert (
        "This proposal's stored record is not the one sealed when it was proposed: it was "
        "changed in the database. Approving it will not carry it out"
    ) in warning


def test_a_forged_outcome_is_named_on_the_review_and_status_pages(cs, seeded, deployments):
    """A writer changes what a success recorded, its link made again: the pages would show
    it as it was done."""
    proposal_id, last = _forged_outcome(cs, seeded, deployments)
    reader = deployments(K1)

    for path in ("", "/status"):
        page = web_for(reader, seeded).browser(AVA).get(f"/proposals/{proposal_id}{path}")
        warning = _warning(page)
        assert warning is not None, path
        assert f"(event {last}: its success)" in warning
        assert "What it shows may not be what happened." in warning
        assert "Approving it" not in warning


def test_a_proposal_sealed_under_a_key_not_held_is_named_with_its_key(cs, seeded, deployments):
    proposal_id = _propose(deployments(K2), seeded)

    card = _api_card(deployments(K1), seeded, proposal_id)

    assert card["unverified"]["reason"] == "proposal_seal_key_unknown"
    assert card["unverified"]["message"].startswith(
        "This proposal was sealed with the key k2, which this server does not hold, so what "
        "it says cannot be verified. Approving it here changes nothing: a server that holds "
        "this key can verify it, and approve it."
    )


@pytest.mark.parametrize("language", ["en", "fr"])
def test_approving_on_a_server_without_the_key_says_so_and_changes_nothing(
    cs, seeded, deployments, language
):
    """A rotation's new key not yet on this server: the page's approval says what happened,
    in the person's language, and the API's refusal says so too; the proposal stays
    pending."""
    proposal_id = _propose(deployments(K2), seeded)
    without = deployments(K1)
    browser = web_for(without, seeded).browser(AVA)
    headers = {"Accept-Language": language}
    page = browser.client.get(f"/proposals/{proposal_id}", headers=headers)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token is not None
    answer = browser.client.post(
        f"/proposals/{proposal_id}/approve",
        data={"csrf_token": token.group(1)},
        headers=headers,
    )
    shown = _read(browser.client.get(answer.headers["location"], headers=headers).text)
    said = {
        "en": "This proposal is sealed with a key this server does not hold yet (a seal key "
        "being changed), so it could not be verified here. Nothing was approved or changed, "
        "and the proposal is still waiting for approval.",
        "fr": "Cette proposition est scellée avec une clé que ce serveur n'a pas encore (une "
        "clé de scellement en cours de changement) : elle n'a pas pu être vérifiée ici. Rien "
        "n'a été approuvé ni modifié, et la proposition attend toujours son approbation.",
    }[language]
    assert said in shown.replace("\N{NO-BREAK SPACE}", " ")
    assert without.access.card(proposal_id, AVA).status == "pending"

    approver = issue_token(
        without, "granite", "approver", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token
    refused = (
        web_for(without, seeded)
        .browser()
        .client.post(
            f"/api/v1/proposals/{proposal_id}/approve",
            headers={"Authorization": f"Bearer {approver}"},
        )
    )
    body = refused.json()
    assert (body["result"], body["reason"], body["status"]) == (
        "not_approvable",
        "not_verifiable_here",
        "pending",
    )
    assert body["message"].startswith("This proposal is sealed with a key this server does not")


@pytest.mark.parametrize("pending", [True, False])
def test_a_proposal_made_before_the_keys_is_named_only_while_it_can_be_approved(
    cs, seeded, deployments, pending
):
    """Made without keys: while pending, approving it will set it aside, so the reader is
    told; once decided it is shown as it always was (nothing to act on, nobody's doing)."""
    made_before = deployments(None)
    proposal_id = _propose(made_before, seeded)
    if not pending:
        assert made_before.proposals.approve(proposal_id, AVA).status == "succeeded"

    warning = _warning(_review(deployments(K1), seeded, proposal_id))

    if pending:
        assert warning == (
            "countersign cannot vouch for this record This proposal has no seal from this "
            "server (it was made before proposals were sealed, or its seal was removed), so "
            "what it says cannot be verified. Approving it will not carry it out: countersign "
            "will set it aside and ask for a new proposal."
        )
    else:
        assert warning is None


@pytest.mark.parametrize("pending", [True, False])
def test_where_every_proposal_is_sealed_an_unsealed_one_is_named_whatever_its_status(
    cs, seeded, deployments, pending
):
    """A deployment that has held its keys since it started says so
    (``COUNTERSIGN_SEALS_REQUIRED``): a proposal without a seal there had it removed in the
    database, so it is named even once decided, as a changed record is, and who can find
    out more is told, in English and French."""
    unsealed = deployments(None)  # a record with no seal, as one whose seal was removed
    proposal_id = _propose(unsealed, seeded)
    if not pending:
        assert unsealed.proposals.approve(proposal_id, AVA).status == "succeeded"
    required = deployments(SealKeys([("k1", SECRET_1.encode())], required=True))

    english = _warning(_review(required, seeded, proposal_id))
    french = _warning(_review(required, seeded, proposal_id, "fr"))

    then_en = (
        "Approving it will not carry it out"
        if pending
        else "What it shows may not be what happened."
    )
    assert english == (
        "countersign cannot vouch for this record This proposal has no seal, and this server "
        "has sealed every proposal it made: its seal was removed in the database, so what it "
        f"says cannot be verified. {then_en}"
        + (": countersign will set it aside and ask for a new proposal." if pending else "")
        + " Whoever runs countersign can find what was changed with countersign audit verify."
    )
    assert french is not None
    assert "son sceau a été retiré dans la base de données" in french
    card = _api_card(required, seeded, proposal_id)
    assert card["unverified"]["reason"] == "proposal_unsealed"


# -- the history ---------------------------------------------------------------------------------


def test_the_history_page_says_it_first_and_marks_the_event_no_seal_vouches_for(
    cs, seeded, deployments
):
    proposal_id = _propose(deployments(K1), seeded, approvals=2)
    _forged_approval(cs, proposal_id)
    reader = deployments(K1)
    browser = web_for(reader, seeded).browser(AVA)

    for language, warning, marked in (
        ("en", FORGED_APPROVAL_EN, "No seal of this server vouches for this event"),
        ("fr", FORGED_APPROVAL_FR, "Aucun sceau de ce serveur ne garantit cet événement"),
    ):
        page = browser.client.get(
            f"/proposals/{proposal_id}/history", headers={"Accept-Language": language}
        )
        shown = _warning(page)
        assert shown is not None, language
        assert shown.endswith(warning), language
        event_2 = re.search(r'<li class="event" id="event-2".*?</li>', _main(page))
        event_1 = re.search(r'<li class="event" id="event-1".*?</li>', _main(page))
        assert event_2 is not None
        assert event_1 is not None
        assert marked in _read(event_2.group(0))
        assert marked not in _read(event_1.group(0))
        # Its point in time shows the warning too (it is about the stored stream).
        then = browser.client.get(
            f"/proposals/{proposal_id}/history?as_of=1", headers={"Accept-Language": language}
        )
        assert _warning(then) is not None


def test_the_api_and_the_command_lines_history_say_it_too(
    cs, seeded, deployments, database_url, capsys, monkeypatch
):
    proposal_id = _propose(deployments(K1), seeded, approvals=2)
    _forged_approval(cs, proposal_id)
    reader = deployments(K1)
    token = issue_token(reader, "granite", "auditor", ["audit.read"], issued_by=AVA, kind="agent")
    client = web_for(reader, seeded).browser().client
    headers = {"Authorization": f"Bearer {token.token}"}

    history = client.get(f"/api/v1/proposals/{proposal_id}/history", headers=headers)
    french = client.get(f"/api/v1/proposals/{proposal_id}/history?language=fr", headers=headers)
    sealed_id = _propose(reader, seeded, order="refund-declined")
    sealed = client.get(f"/api/v1/proposals/{sealed_id}/history", headers=headers)

    assert history.status_code == french.status_code == sealed.status_code == 200
    assert history.json()["unverified"] == {
        "reason": "proposal_seal_invalid",
        "event_version": 2,
        "event_type": "Approved",
        "message": FORGED_APPROVAL_EN,
    }
    assert french.json()["unverified"]["message"] == FORGED_APPROVAL_FR
    assert sealed.json()["unverified"] is None
    monkeypatch.setenv("COUNTERSIGN_SEAL_KEYS", f"k1:{SECRET_1}")
    capsys.readouterr()
    assert main(["history", proposal_id, "--database", database_url]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "NOT VOUCHED FOR: Its history holds an event that no seal" in printed
    assert "(event 2: an approval)" in printed


def test_the_history_checks_the_events_it_shows_not_a_snapshot_this_process_holds(
    cs, seeded, deployments
):
    """The history lists the stored events; its warning must be about those. The proposing
    process holds its own proposal (``sealed_here``), and any reader holds what it read
    before: a record changed in the database since is what their history shows, so it is
    what they check, in the API's history and on the page."""
    proposer = deployments(K1)
    proposal_id = _propose(proposer, seeded)
    reader = deployments(K1)
    reader.cards.card(proposal_id, AVA)  # read (and held) before the change

    def smaller(state: dict[str, Any]) -> None:
        state["arguments"]["amount_cents"] = 1
        state["preview"]["amount_cents"] = 1

    _forge(cs, proposal_id, 1, smaller, through_the_end=True)

    for process in (proposer, reader):
        history = process.access.history(proposal_id, AVA, None, "en")
        assert history["events"][0]["preview"]["amount_cents"] == 1  # what it shows
        assert history["unverified"] is not None
        assert history["unverified"]["reason"] == "proposal_seal_invalid"
        page = web_for(process, seeded).browser(AVA).client.get(f"/proposals/{proposal_id}/history")
        shown = _warning(page)
        assert shown is not None
        assert "it was changed in the database" in shown


def test_the_history_as_of_a_version_shows_the_state_of_the_events_it_checked(
    cs, seeded, deployments, monkeypatch
):
    """``as_of``'s state (what the approver was shown then) is made from the very rows the
    history lists and checks, not from a second read (which another process's write could
    land between, or which a process's own copies could answer): a record changed in the
    database shows the same in the events, the state and the warning."""
    proposer = deployments(K1)
    proposal_id = _propose(proposer, seeded)

    def smaller(state: dict[str, Any]) -> None:
        state["arguments"]["amount_cents"] = 1
        state["preview"]["amount_cents"] = 1

    _forge(cs, proposal_id, 1, smaller, through_the_end=True)

    def no_second_read(*_: Any, **__: Any) -> Any:
        raise AssertionError("the history read the proposal a second time")

    monkeypatch.setattr(proposer.audit.store, "get", no_second_read)
    history, checked = proposer.audit.checked_history(proposal_id, 1)
    assert history["events"][0]["preview"]["amount_cents"] == 1
    assert history["as_of"]["preview"]["amount_cents"] == 1
    assert history["as_of"]["version"] == 1
    unverified = proposer.cards.unverified_json(checked)
    assert unverified is not None
    assert unverified["reason"] == "proposal_seal_invalid"


def _changed_behind_its_proposer(cs: Any, seeded: dict[str, Any], deployments: Any) -> Any:
    """Two server processes with the same key: the one that proposed a draft (and holds what
    it sealed), and another; then a writer changes the draft's record in the database."""
    proposer = deployments(K1)
    proposal_id = web_for(proposer, seeded).draft("Ice times", "Monday at 7")
    reader = deployments(K1)

    def changed(state: dict[str, Any]) -> None:
        state["request"]["subject"] = "Something else"

    _forge(cs, proposal_id, 1, changed, through_the_end=True)
    return proposer, reader, proposal_id


def test_an_approval_from_a_warning_is_not_carried_out_by_a_process_holding_it_unchanged(
    cs, seeded, deployments
):
    """Two server processes: the one that proposed it holds what it sealed, the other reads
    the record changed in the database and warns that approving sets it aside. The approve
    form, sent from that warning to the first process (a load balancer's choice), must not
    carry out what the person never saw (a draft sent to members asks for no confirmation
    page): nothing is approved, and they are asked to read it again, where that process
    shows what it would carry out."""
    proposer, reader, proposal_id = _changed_behind_its_proposer(cs, seeded, deployments)
    page = _review(reader, seeded, proposal_id)
    assert _warning(page) is not None
    assert 'name="unverified" value="yes"' in page.text  # the form says what it was sent from

    path = f"/proposals/{proposal_id}"
    browser = web_for(proposer, seeded).browser(AVA)
    answer = browser.form(f"{path}/approve", {"unverified": "yes"}, path)

    assert (answer.status_code, answer.headers["location"]) == (303, path)
    assert _types(cs, proposal_id) == ["Proposed"]
    shown = _read(browser.get(path).text)
    assert "Nothing was approved: the page you approved from said" in shown
    # Sent to the process that reads what the page read, it is set aside, as the page said.
    reading = web_for(reader, seeded).browser(AVA)
    reading.form(f"{path}/approve", {"unverified": "yes"}, path)
    assert _types(cs, proposal_id) == ["Proposed", "RevisionRequired"]


def _api(process: Any, seeded: dict[str, Any], token: str, path: str, body: Any = None) -> Any:
    client = web_for(process, seeded).browser().client
    return client.post(path, json=body, headers={"Authorization": f"Bearer {token}"})


def test_an_api_approval_sent_as_read_unverified_is_not_carried_out_where_it_is_vouched_for(
    cs, seeded, deployments
):
    """The JSON API approves by id, so what the approver read travels as ``unverified``: the
    card it read said its seals do not vouch for it. Sent to the process that proposed it
    (which holds what it sealed), nothing is approved and the answer says to read it again;
    sent to one that reads what the card read, it is set aside, as the card said."""
    proposer, reader, proposal_id = _changed_behind_its_proposer(cs, seeded, deployments)
    approver = issue_token(
        cs, "granite", "desk", ["email_broadcasts.prepare"], issued_by=AVA, kind="approver"
    ).token
    card = _api_card(reader, seeded, proposal_id, approver)
    assert card["unverified"]["reason"] == "proposal_seal_invalid"
    path = f"/api/v1/proposals/{proposal_id}/approve"

    answer = _api(proposer, seeded, approver, path, {"unverified": True})

    assert answer.status_code == 409, answer.text[:500]
    problem = answer.json()
    assert problem["type"] == "urn:countersign:problem:unverified-elsewhere"
    assert problem["detail"].startswith("Nothing was approved: the card you read said")
    assert _types(cs, proposal_id) == ["Proposed"]

    # An agent token is told it cannot decide, whatever it says it read.
    agent = issue_token(
        cs, "granite", "bot", ["email_broadcasts.prepare"], issued_by=AVA, kind="agent"
    ).token
    refused = _api(proposer, seeded, agent, path, {"unverified": True})
    assert refused.status_code == 403
    assert refused.json()["type"] == "urn:countersign:problem:agent-cannot-decide"
    assert _api(proposer, seeded, approver, path, {"unverified": "maybe"}).status_code == 422
    assert _types(cs, proposal_id) == ["Proposed"]

    set_aside = _api(reader, seeded, approver, path, {"unverified": True})
    assert set_aside.status_code == 200, set_aside.text[:500]
    assert _types(cs, proposal_id) == ["Proposed", "RevisionRequired"]


def test_an_api_approval_read_unverified_of_a_decided_proposal_answers_as_always(
    cs, seeded, deployments
):
    """Approving a decided proposal carries out nothing and answers what it holds, so the
    ``unverified`` a client read says nothing about what would run: the answer is the usual
    one, not ``unverified-elsewhere``. A process holding no keys, which would carry out a
    pending one unchecked, refuses as one holding it sealed does."""
    proposer, reader, proposal_id = _changed_behind_its_proposer(cs, seeded, deployments)
    approver = issue_token(
        cs, "granite", "desk", ["email_broadcasts.prepare"], issued_by=AVA, kind="approver"
    ).token
    path = f"/api/v1/proposals/{proposal_id}/approve"

    keyless = _api(deployments(None), seeded, approver, path, {"unverified": True})
    assert keyless.status_code == 409, keyless.text[:500]
    assert keyless.json()["detail"].endswith(
        "this server would carry out the record as it holds it, which is not what you read. "
        "Read the card again before deciding."
    )
    assert _types(cs, proposal_id) == ["Proposed"]

    _api(reader, seeded, approver, path, {"unverified": True})  # set aside, as the card said
    again = _api(proposer, seeded, approver, path, {"unverified": True})
    assert again.status_code == 200, again.text[:500]
    assert again.json()["result"] == "already_completed"  # its stored outcome, as ever
    assert _types(cs, proposal_id) == ["Proposed", "RevisionRequired"]
