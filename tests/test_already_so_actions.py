"""What a manager may still do with a proposal that was already so: nothing.

A removal of Noah from Thursday Seniors, approved after he had left the league, changed
nothing and owes nothing ("already so"). Its page offers no Edit and no "ask the assistant
for a new proposal", in English and French, and an edit sent anyway (the edit page opened
from an old tab, the form posted, the API's revisions, the command line's ``revise``) is
refused with words that say why, and proposes nothing. A different change is a new
proposal, not an edit of one that got what it asked for. A removal that failed closed and
still owes something (Noah back in the league under another name) still offers both.

The command line says it too: ``show`` and ``approve`` read "nothing to do: it was already
so", not "revision required", while ``--json`` keeps ``status: revision_required`` and
``outcome.already_so: true`` for the scripts that read it.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from countersign.application.errors import NotRevisableError
from countersign.infrastructure.entrypoints.cli import cards
from countersign.infrastructure.identity.tokens import issue_token

from tests.conftest import AVA, count_events
from tests.test_remove_member import NOAH, OUT_OF_SENIORS, REMOVE, _at_the_desk, _propose
from tests.test_web_pages import Web, _main, _notice, web_for

FR = {"Accept-Language": "fr"}
TO_MONDAY = {"member": "Noah Fraser", "league": "Monday Night Open"}
NOTHING_TO_EDIT = {
    "en": (
        "There is nothing to edit: what this proposal asked for was already so, and nothing "
        "is left to do. For a different change, ask for a new proposal."
    ),
    "fr": (
        "Il n'y a rien à modifier : ce que demandait cette proposition était déjà le cas, et "
        "il ne reste rien à faire. Pour un autre changement, demandez une nouvelle proposition."
    ),
}


@pytest.fixture
def web(cs: Any, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _read(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _already_so(cs: Any, seeded: dict[str, Any]) -> str:
    """A removal approved after Noah had left the league: already so."""
    created = _propose(cs, seeded)
    _at_the_desk(cs, seeded, lambda roster: roster.leave("Thursday Seniors", NOAH))
    assert cs.proposals.approve(created.proposal_id, AVA).outcome["already_so"] is True
    return str(created.proposal_id)


def _still_owed(cs: Any, seeded: dict[str, Any]) -> str:
    """A removal approved after Noah left and came back under another name: not done."""
    created = _propose(cs, seeded)
    _at_the_desk(cs, seeded, lambda roster: roster.leave("Thursday Seniors", NOAH))
    cs.club.join("granite", "Thursday Seniors", "Noah F. Junior", NOAH)
    outcome = cs.proposals.approve(created.proposal_id, AVA).outcome
    assert outcome["kind"] == "revision_required"
    assert "already_so" not in outcome
    return str(created.proposal_id)


def _actions(main: str, proposal_id: str) -> list[str]:
    """Every link and form on the page that would act on this proposal, or ask for another
    one (the crumbs' link back to the conversation, to read it, is no action)."""
    crumbs_gone = re.sub(r'<p class="crumbs">.*?</p>', "", main, flags=re.S)
    acting = re.findall(
        rf'(?:href|action)="(/proposals/{proposal_id}/(?:edit|approve|decline))"', crumbs_gone
    )
    return acting + re.findall(r'class="next-step"', crumbs_gone)


# -- the pages ----------------------------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_page_of_an_already_so_proposal_offers_nothing_to_do(web: Web, language: str) -> None:
    already = _already_so(web.cs, web.seeded)
    browser = web.browser(AVA)
    headers = FR if language == "fr" else {}

    page = browser.get(f"/proposals/{already}", **headers)
    status = browser.get(f"/proposals/{already}/status", **headers)

    assert page.status_code == status.status_code == 200
    assert _actions(_main(page), already) == []
    assert _actions(_main(status), already) == []
    words = _read(_main(page))
    assert ("Modifier" if language == "fr" else "Edit") not in words.split()
    assert "new proposal" not in words
    assert "nouvelle proposition" not in words


def test_a_proposal_that_still_owes_something_keeps_its_edit_and_its_next_step(
    web: Web,
) -> None:
    owed = _still_owed(web.cs, web.seeded)

    main = _main(web.browser(AVA).get(f"/proposals/{owed}"))

    assert sorted(_actions(main, owed)) == sorted([f"/proposals/{owed}/edit", 'class="next-step"'])


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_edit_page_of_an_already_so_proposal_says_there_is_nothing_to_edit(
    web: Web, language: str
) -> None:
    already = _already_so(web.cs, web.seeded)
    browser = web.browser(AVA)
    headers = FR if language == "fr" else {}

    form = browser.get(f"/proposals/{already}/edit", **headers)

    assert form.status_code == 303
    assert form.headers["location"] == f"/proposals/{already}"
    page = browser.get(f"/proposals/{already}", **headers)
    assert _read(_notice(page)) == NOTHING_TO_EDIT[language]


def test_an_edit_posted_anyway_is_refused_and_proposes_nothing(web: Web) -> None:
    already = _already_so(web.cs, web.seeded)
    browser = web.browser(AVA)
    proposed = count_events(web.cs, "Proposal.Proposed")
    path = f"/proposals/{already}"

    posted = browser.form(f"{path}/edit", TO_MONDAY, path)

    assert posted.status_code == 303
    assert posted.headers["location"] == path
    assert _read(_notice(browser.get(path))) == NOTHING_TO_EDIT["en"]
    assert count_events(web.cs, "Proposal.Proposed") == proposed
    assert web.cs.cards.card(already, AVA).superseded_by is None


# -- the application and the API ------------------------------------------------------------


def test_the_application_refuses_the_edit_and_says_why(cs: Any, seeded: dict[str, Any]) -> None:
    already = _already_so(cs, seeded)
    proposed = count_events(cs, "Proposal.Proposed")

    with pytest.raises(NotRevisableError) as refused:
        cs.access.revise(already, AVA, TO_MONDAY)

    assert refused.value.already_so is True
    assert refused.value.status == "revision_required"
    assert "already so" in str(refused.value)
    assert count_events(cs, "Proposal.Proposed") == proposed


def test_an_api_client_is_refused_the_edit_with_the_marker_and_the_words(web: Web) -> None:
    already = _already_so(web.cs, web.seeded)
    token = issue_token(
        web.cs, "granite", "roster-bot", ["roster.manage"], issued_by=AVA, kind="approver"
    ).token
    client = web.browser().client
    headers = {"Authorization": f"Bearer {token}"}

    refused = client.post(
        f"/api/v1/proposals/{already}/revisions", json={"request": TO_MONDAY}, headers=headers
    )

    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert problem["type"] == "urn:countersign:problem:not-revisable"
    assert problem["proposal_status"] == "revision_required"
    assert problem["already_so"] is True
    assert problem["superseded_by"] is None
    assert problem["detail"] == (
        "This proposal was not executed because what it asked for was already so: nothing is "
        "left to do, so there is nothing to edit. For a different change, propose it anew."
    )


# -- the command line ---------------------------------------------------------------------------


@pytest.fixture
def command(command, seeded):
    """``countersign`` in this process (tests/conftest.py), on the seeded clubs."""
    return command


def _status_row(card: str) -> str:
    (row,) = [line for line in card.splitlines() if "│ Status" in line or "│ Statut" in line]
    return " ".join(row.strip("│ ").split())


def test_the_command_line_card_says_nothing_to_do_and_its_json_is_unchanged(
    cs: Any, seeded: dict[str, Any], command: Any
) -> None:
    already = _already_so(cs, seeded)

    _, english, _ = command("show", already, "--as", AVA)
    _, french, _ = command("show", already, "--as", AVA, "--language", "fr")
    _, document, _ = command("show", already, "--as", AVA, "--json")

    assert _status_row(english) == "Status nothing to do: it was already so"
    assert "revision required" not in english
    assert _status_row(french) == "Statut rien à faire : c'était déjà le cas"
    assert "révision requise" not in french
    card = json.loads(document)
    assert card["status"] == "revision_required"
    assert card["outcome"]["already_so"] is True


def test_the_command_line_approval_says_nothing_to_do_and_its_json_is_unchanged(
    cs: Any, seeded: dict[str, Any], command: Any
) -> None:
    # Proposed by the command, on the clock it runs by (the fixtures' clock stands still).
    propose = ["propose", "--org", "granite", "--operation", REMOVE, "--as", AVA]
    roster = ["--resource", seeded["rosters"]["granite"], "--request", json.dumps(OUT_OF_SENIORS)]
    _, created, _ = command(*propose, *roster, "--json")
    pid = json.loads(created)["proposal_id"]
    _at_the_desk(cs, seeded, lambda roster: roster.leave("Thursday Seniors", NOAH))

    _, approved, _ = command("approve", pid, "--as", AVA)
    _, again, _ = command("approve", pid, "--as", AVA)
    _, document, _ = command("approve", pid, "--as", AVA, "--json")

    assert approved.splitlines()[0] == (
        "Approved, but not executed: it was already so. Nothing is left to do."
    )
    assert "revision required" not in approved
    assert again.splitlines()[0] == (
        "Already completed (stored outcome): it was already so. Nothing is left to do."
    )
    assert "revision required" not in again
    report = json.loads(document)
    assert (report["result"], report["status"]) == ("already_completed", "revision_required")
    assert report["outcome"]["already_so"] is True


def test_the_command_line_approval_reads_french_in_a_french_chat() -> None:
    """The chat's /approve prints the report in the chat's language."""
    report = {
        "result": "executed",
        "status": "revision_required",
        "outcome": {"kind": "revision_required", "already_so": True},
        "message": "Rien n'a été modifié.",
    }

    text = cards.render_report(report, AVA, "fr")

    assert text.splitlines()[0] == (
        "Approuvée, mais non exécutée : c'était déjà le cas. Il ne reste rien à faire."
    )


def test_the_command_line_refuses_the_edit_and_says_why(
    cs: Any, seeded: dict[str, Any], command: Any
) -> None:
    already = _already_so(cs, seeded)
    request = json.dumps(TO_MONDAY)

    status, out, text = command("revise", already, "--as", AVA, "--request", request)
    _, _, french = command("revise", already, "--as", AVA, "--request", request, "--language", "fr")
    _, document, _ = command("revise", already, "--as", AVA, "--request", request, "--json")

    assert (status, out) == (3, "")  # the command cannot apply to the record it names
    assert text.strip() == (
        "Not revisable: what this proposal asked for was already so when it was approved, "
        "and nothing is left to do, so there is nothing to edit. For a different change, "
        "propose it anew (the assistant, or countersign propose). Nothing was changed."
    )
    assert french.strip() == (
        "Modification impossible : ce que demandait cette proposition était déjà le cas "
        "quand elle a été approuvée, et il ne reste rien à faire ; il n'y a donc rien à "
        "modifier. Pour un autre changement, proposez-le de nouveau (l'assistant, ou "
        "countersign propose). Rien n'a été changé."
    )
    refused = json.loads(document)
    assert refused["error"] == "not_revisable"
    assert (refused["status"], refused["already_so"]) == ("revision_required", True)
