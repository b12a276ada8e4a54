"""roster.move_member: a manager moves a member between leagues. The preview shows who, from
where, to where and each league's count before and after; approval checks the member is still
in the first league, not yet in the second, and that the second has room, and moves them in
the commit that records the outcome."""

from __future__ import annotations

import json
import re
from typing import Any
from uuid import UUID

import pytest
from countersign.application.errors import ForbiddenError
from countersign.domain.club.organization import Organization
from countersign.domain.club.roster import Roster
from countersign.domain.contracts.move_member import MoveMember
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import NotFoundError
from countersign.domain.pending_slot import PendingSlot
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from fastapi.testclient import TestClient

from tests.conftest import AVA, BEN, MIA
from tests.support.proposing import MOVE, TO_SENIORS, proposal
from tests.test_projections import catch_up_all

OLIVIA = "olivia.chen@example.com"


def _roster(cs, seeded, club="granite") -> Roster:
    return cs.store.get(UUID(seeded["rosters"][club]), Roster)


def _leagues_of(cs, seeded, email=OLIVIA) -> list[str]:
    return _roster(cs, seeded).leagues_of(email)


# -- propose ------------------------------------------------------------------------------------


def test_the_preview_names_the_member_both_leagues_and_each_count_before_and_after(cs, seeded):
    created = proposal(
        cs, seeded, operation=MOVE, request={**TO_SENIORS, "email": "  Olivia.Chen@Example.com "}
    )

    assert created.preview == {
        "member_name": "Olivia Chen",
        "email": OLIVIA,
        "from_league": "Sunday Mixed Doubles",
        "to_league": "Thursday Seniors",
        "from_league_members_before": 2,
        "from_league_members_after": 1,
        "to_league_members_before": 4,
        "to_league_members_after": 5,
    }
    assert created.status == "pending"
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Sunday Mixed Doubles"]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            {"from_league": "Friday Fun"},
            "from_league",
            "there is no league of that name; list the leagues",
        ),
        (
            {"to_league": "Sunday Mixed Doubles"},
            "to_league",
            "must be another league than from_league",
        ),
        (
            {"email": "nobody@example.com"},
            "email",
            "no member with this email plays in 'Sunday Mixed Doubles'; search the members",
        ),
        (
            {"from_league": "Monday Night Open", "to_league": "Sunday Mixed Doubles"},
            "to_league",
            "Olivia Chen already plays in 'Sunday Mixed Doubles'",
        ),
    ],
)
def test_a_move_the_roster_does_not_allow_is_refused_with_a_problem(
    cs, seeded, change, field, message
):
    with pytest.raises(InvalidRequestError) as refused:
        proposal(cs, seeded, operation=MOVE, request={**TO_SENIORS, **change})
    assert [(p.field, p.message) for p in refused.value.problems] == [(field, message)]


def test_a_move_into_a_full_league_is_refused_before_anyone_reviews_it(cs, seeded):
    for n in range(4):
        cs.club.join("granite", "Thursday Seniors", f"Curler {n}", f"curler{n}@example.com")

    with pytest.raises(InvalidRequestError) as refused:
        proposal(cs, seeded, operation=MOVE)

    assert refused.value.problems[0].message == "'Thursday Seniors' is full (8 members)"


# -- approve ------------------------------------------------------------------------------------


def test_approval_moves_the_member_in_the_commit_that_records_the_outcome(cs, seeded):
    created = proposal(cs, seeded, operation=MOVE)
    start = cs.app.recorder.max_notification_id() or 0

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert (report.result, report.status) == ("executed", "succeeded")
    assert report.outcome == {
        "kind": "succeeded",
        "result": {
            "email": OLIVIA,
            "from_league": "Sunday Mixed Doubles",
            "to_league": "Thursday Seniors",
            "from_league_members": 1,
            "to_league_members": 5,
        },
    }
    assert report.message == (
        "Olivia Chen now plays in Thursday Seniors (5 members) instead of Sunday Mixed Doubles "
        "(1 member)."
    )
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Thursday Seniors"]
    written = cs.app.recorder.select_notifications(start + 1, limit=100)
    assert [n.topic.rsplit(".", 1)[-1] for n in written] == [
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
        "MemberMoved",
    ]
    # One commit: the claim, the outcome and the move, consecutive, nothing else.
    assert [n.id for n in written] == list(range(start + 1, start + 6))
    card = cs.cards.card(created.proposal_id, AVA, language="fr")
    assert card.message == (
        "Olivia Chen joue maintenant dans Thursday Seniors (5 membres) au lieu de "
        "Sunday Mixed Doubles (1 membre)."
    )


def test_approving_twice_moves_once_and_returns_the_stored_outcome(cs, seeded, other):
    created = proposal(cs, seeded, operation=MOVE)
    first = cs.proposals.approve(created.proposal_id, AVA)
    version = _roster(cs, seeded).version

    again = other.proposals.approve(created.proposal_id, AVA)

    assert again.result == "already_completed"
    assert again.outcome == first.outcome
    assert _roster(other, seeded).version == version


def test_a_member_who_left_the_source_league_meanwhile_requires_revision(cs, seeded):
    to_juniors = proposal(
        cs, seeded, operation=MOVE, request={**TO_SENIORS, "to_league": "Junior Program"}
    )
    roster = cs.store.get(UUID(seeded["rosters"]["granite"]), Roster)
    roster.move(OLIVIA, "Sunday Mixed Doubles", "Thursday Seniors")  # at the club's desk
    cs.store.save(roster)

    report = cs.proposals.approve(to_juniors.proposal_id, AVA)

    assert report.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "member_left_source_league",
            "params": {"member": "Olivia Chen", "league": "Sunday Mixed Doubles"},
        },
    }
    assert report.message == (
        "Nothing was changed. Olivia Chen no longer plays in Sunday Mixed Doubles. Ask the "
        "assistant for a new proposal if it is still needed."
    )
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Thursday Seniors"]


def test_a_member_already_in_the_destination_meanwhile_requires_revision(cs, seeded):
    created = proposal(cs, seeded, operation=MOVE)
    cs.club.join("granite", "Thursday Seniors", "Olivia Chen", OLIVIA)

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert report.outcome["reason"] == {
        "code": "member_already_in_destination",
        "params": {"member": "Olivia Chen", "league": "Thursday Seniors"},
    }
    assert "Olivia Chen joue déjà dans Thursday Seniors." in (
        cs.cards.card(created.proposal_id, AVA, language="fr").message or ""
    )
    assert _leagues_of(cs, seeded) == [
        "Monday Night Open",
        "Sunday Mixed Doubles",
        "Thursday Seniors",
    ]
    # She still plays in the league she was to leave: the move is not done, so it is no
    # "already so", and it stays under Needs attention.
    assert "already_so" not in report.outcome
    catch_up_all(cs)
    attention = cs.read_models.needs_attention(cs.club.organization_id("granite"))
    assert [card["proposal_id"] for card in attention["items"]] == [created.proposal_id]


def test_a_destination_that_filled_up_meanwhile_requires_revision(cs, seeded):
    created = proposal(cs, seeded, operation=MOVE)
    for n in range(4):
        cs.club.join("granite", "Thursday Seniors", f"Curler {n}", f"curler{n}@example.com")

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert report.outcome["reason"] == {
        "code": "destination_league_full",
        "params": {"league": "Thursday Seniors", "capacity": 8},
    }
    assert "Thursday Seniors is full: it holds its 8 members." in (report.message or "")
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Sunday Mixed Doubles"]
    assert _roster(cs, seeded).member_count("Thursday Seniors") == 8


# -- which pending move a new one replaces ------------------------------------------------------


def _move(cs, seeded, from_league: str, to_league: str, email: str = OLIVIA):
    request = {"email": email, "from_league": from_league, "to_league": to_league}
    return proposal(cs, seeded, operation=MOVE, request=request)


def _awaiting(cs, clock) -> list[tuple[str, str, str]]:
    """What the roster's inbox shows the manager (the ``browser_view`` projection): who moves
    from which league to which, for each move awaiting approval."""
    catch_up_all(cs)
    inbox = cs.read_models.inbox(cs.club.organization_id("granite"), clock.now(), section="roster")
    return sorted(
        (card["preview"]["email"], card["preview"]["from_league"], card["preview"]["to_league"])
        for card in inbox["items"]
    )


def test_a_move_out_of_the_same_league_replaces_the_pending_one_and_no_other(cs, seeded, clock):
    """A move is about one member leaving one league: another move of Olivia out of Sunday
    Mixed Doubles replaces the pending one (she can leave it once), while her move out of
    Monday Night Open, or another member's move, leaves it pending."""
    first = _move(cs, seeded, "Sunday Mixed Doubles", "Thursday Seniors")

    instead = _move(cs, seeded, "Sunday Mixed Doubles", "Junior Program")
    elsewhere = _move(cs, seeded, "Monday Night Open", "Thursday Seniors")
    other = _move(cs, seeded, "Sunday Mixed Doubles", "Junior Program", "lucas.roy@example.com")

    assert instead.supersedes == [first.proposal_id]
    assert elsewhere.supersedes == []
    assert other.supersedes == []
    assert cs.cards.card(first.proposal_id, AVA).superseded_by == instead.proposal_id
    assert _awaiting(cs, clock) == [
        ("lucas.roy@example.com", "Sunday Mixed Doubles", "Junior Program"),
        (OLIVIA, "Monday Night Open", "Thursday Seniors"),
        (OLIVIA, "Sunday Mixed Doubles", "Junior Program"),
    ]


def test_moves_of_one_member_out_of_two_leagues_both_await_approval_and_both_run(cs, seeded, clock):
    """Olivia plays in Monday Night Open and Sunday Mixed Doubles: moving her from each to
    another league are two independent changes. Neither withdraws the other, before or after
    either is approved."""
    monday = _move(cs, seeded, "Monday Night Open", "Junior Program")
    sunday = _move(cs, seeded, "Sunday Mixed Doubles", "Thursday Seniors")

    cards = [cs.cards.card(created.proposal_id, AVA) for created in (monday, sunday)]
    first = cs.proposals.approve(monday.proposal_id, AVA)
    still = cs.cards.card(sunday.proposal_id, AVA)
    second = cs.proposals.approve(sunday.proposal_id, AVA)

    assert [(card.status, card.withdraws) for card in cards] == [("pending", [])] * 2
    assert (first.status, still.status, second.status) == ("succeeded", "pending", "succeeded")
    assert _awaiting(cs, clock) == []
    assert second.message == (
        "Olivia Chen now plays in Thursday Seniors (5 members) instead of Sunday Mixed Doubles "
        "(1 member)."
    )
    assert _leagues_of(cs, seeded) == ["Junior Program", "Thursday Seniors"]


def test_moves_into_one_league_from_two_both_await_approval_and_the_second_fails_closed(
    cs, seeded, clock
):
    """The subject is the league the member leaves, so two moves of Olivia into Thursday
    Seniors, one from each of her leagues, replace nothing: both await approval, and once one
    runs the other requires revision (she already plays there) and changes nothing."""
    monday = _move(cs, seeded, "Monday Night Open", "Thursday Seniors")
    sunday = _move(cs, seeded, "Sunday Mixed Doubles", "Thursday Seniors")
    assert (monday.supersedes, sunday.supersedes) == ([], [])

    first = cs.proposals.approve(sunday.proposal_id, AVA)
    version = _roster(cs, seeded).version
    second = cs.proposals.approve(monday.proposal_id, AVA)

    assert first.status == "succeeded"
    assert second.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "member_already_in_destination",
            "params": {"member": "Olivia Chen", "league": "Thursday Seniors"},
        },
    }
    assert _roster(cs, seeded).version == version
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Thursday Seniors"]


def _as_the_last_release_froze_it(monkeypatch, cs, seeded, from_league: str, to_league: str):
    """A move frozen by the release before moves were about the league left: its slot held it
    under the member's email alone (that release's ``subject``, restored while it is frozen)."""
    with monkeypatch.context() as last_release:
        last_release.setattr(MoveMember, "subject", lambda self, arguments: arguments.email)
        return _move(cs, seeded, from_league, to_league)


@pytest.mark.parametrize("approved_first", ["held_before", "proposed_since"])
def test_a_move_pending_from_the_last_release_runs_once_beside_one_proposed_since(
    cs, seeded, clock, monkeypatch, approved_first
):
    """A move pending when a deployment upgrades was held under the member's email alone. A
    move of Olivia out of the same league proposed since no longer finds it (its subject
    names the league), so both await approval until the old one expires: whichever is
    approved first moves her, and the other fails closed at its recheck, changing nothing."""
    held = _as_the_last_release_froze_it(
        monkeypatch, cs, seeded, "Sunday Mixed Doubles", "Thursday Seniors"
    )
    since = _move(cs, seeded, "Sunday Mixed Doubles", "Junior Program")
    slot = cs.store.get(
        PendingSlot.create_id(Organization.create_id("granite"), _roster(cs, seeded).id),
        PendingSlot,
    )
    assert slot.latest[MOVE] == {
        OLIVIA: UUID(held.proposal_id),
        f"{OLIVIA}/Sunday Mixed Doubles": UUID(since.proposal_id),
    }
    assert since.supersedes == []
    assert _awaiting(cs, clock) == [
        (OLIVIA, "Sunday Mixed Doubles", "Junior Program"),
        (OLIVIA, "Sunday Mixed Doubles", "Thursday Seniors"),
    ]
    first, second = (held, since) if approved_first == "held_before" else (since, held)

    ran = cs.proposals.approve(first.proposal_id, AVA)
    version = _roster(cs, seeded).version
    refused = cs.proposals.approve(second.proposal_id, AVA)

    assert ran.status == "succeeded"
    assert (refused.result, refused.status) == ("executed", "revision_required")
    assert refused.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "member_left_source_league",
            "params": {"member": "Olivia Chen", "league": "Sunday Mixed Doubles"},
        },
    }
    assert refused.message == (
        "Nothing was changed. Olivia Chen no longer plays in Sunday Mixed Doubles. Ask the "
        "assistant for a new proposal if it is still needed."
    )
    assert _roster(cs, seeded).version == version
    assert _leagues_of(cs, seeded) == sorted(["Monday Night Open", first.preview["to_league"]])


@pytest.mark.parametrize("approved_first", ["held_before", "proposed_since"])
def test_the_same_move_pending_from_the_last_release_and_proposed_since_runs_once(
    cs, seeded, clock, monkeypatch, approved_first
):
    """The same move twice, once held under the last release's subject: both await approval,
    whichever is approved first moves Olivia, and the other finds her already where it would
    leave her. It changes nothing, says so, and needs nobody's attention, in either order."""
    held = _as_the_last_release_froze_it(
        monkeypatch, cs, seeded, "Sunday Mixed Doubles", "Thursday Seniors"
    )
    since = _move(cs, seeded, "Sunday Mixed Doubles", "Thursday Seniors")
    assert since.supersedes == []
    first, second = (held, since) if approved_first == "held_before" else (since, held)

    assert cs.proposals.approve(first.proposal_id, AVA).status == "succeeded"
    version = _roster(cs, seeded).version
    refused = cs.proposals.approve(second.proposal_id, AVA)

    assert (refused.result, refused.status) == ("executed", "revision_required")
    assert refused.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "member_already_moved",
            "params": {
                "member": "Olivia Chen",
                "league": "Thursday Seniors",
                "left_league": "Sunday Mixed Doubles",
            },
        },
        "already_so": True,
    }
    assert refused.message == (
        "Nothing was changed. Olivia Chen already plays in Thursday Seniors and no longer in "
        "Sunday Mixed Doubles. That is already what this proposal asked for, so nothing is "
        "left to do."
    )
    assert cs.cards.card(second.proposal_id, AVA, language="fr").message == (
        "Rien n'a été modifié. Olivia Chen joue déjà dans Thursday Seniors et ne joue plus "
        "dans Sunday Mixed Doubles. C'est déjà ce que demandait cette proposition ; il ne "
        "reste donc rien à faire."
    )
    assert _roster(cs, seeded).version == version
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Thursday Seniors"]
    catch_up_all(cs)
    attention = cs.read_models.needs_attention(cs.club.organization_id("granite"))
    assert attention["total"] == 0


def test_a_move_expires(cs, seeded, clock):
    created = proposal(cs, seeded, operation=MOVE)
    clock.advance(days=1, seconds=1)

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert (report.result, report.reason) == ("not_approvable", "expired")
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Sunday Mixed Doubles"]


# -- who may ------------------------------------------------------------------------------------


def test_ava_manages_the_roster_and_ben_may_neither_propose_nor_approve_a_move(cs, seeded):
    assert cs.club.membership("granite", AVA).member.may("roster.manage")
    assert not cs.club.membership("granite", BEN).member.may("roster.manage")
    with pytest.raises(ForbiddenError):
        proposal(cs, seeded, operation=MOVE, actor=BEN)
    created = proposal(cs, seeded, operation=MOVE)

    refused = cs.proposals.approve(created.proposal_id, BEN)

    assert (refused.result, refused.reason) == ("not_approvable", "forbidden")
    assert cs.cards.card(created.proposal_id, AVA).status == "pending"
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Sunday Mixed Doubles"]


def test_another_club_neither_moves_nor_sees_this_clubs_members(cs, seeded):
    # Another club's roster, or a resource that is not a roster, is not found.
    with pytest.raises(NotFoundError):
        proposal(cs, seeded, operation=MOVE, resource_id=seeded["rosters"]["maple"])
    with pytest.raises(NotFoundError):
        proposal(cs, seeded, operation=MOVE, resource_id=seeded["broadcast_forms"]["granite"])
    # Mia manages maple: granite's roster and proposals do not exist for her.
    with pytest.raises(NotFoundError):
        proposal(
            cs,
            seeded,
            operation=MOVE,
            actor=MIA,
            organization="maple",
            resource_id=seeded["rosters"]["granite"],
        )
    created = proposal(cs, seeded, operation=MOVE)
    foreign = cs.proposals.approve(created.proposal_id, MIA)
    unknown = cs.proposals.approve("0f6b3a52-8d1e-4c57-9a3e-5b1f2c7d9e10", MIA)
    assert (foreign.result, foreign.reason) == (unknown.result, unknown.reason)
    assert foreign.reason == "not_found"
    # Her own club's member moves in her own roster only.
    cs.club.join("maple", "Tuesday Draw", "Ruth Lee", "ruth.lee@example.com")
    with pytest.raises(InvalidRequestError):
        proposal(cs, seeded, operation=MOVE, actor=MIA, organization="maple")
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Sunday Mixed Doubles"]


# -- the command line ---------------------------------------------------------------------------


def _cli(database_url: str, capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> Any:
    code = main([*argv, "--json", "--database", database_url])
    out = capsys.readouterr().out
    assert code == status, out
    return json.loads(out)


@pytest.mark.usefixtures("seeded_database")  # seed runs on a copy of the seeded template
def test_the_command_line_proposes_shows_and_approves_a_move(database_url, capsys):
    seeded = _cli(database_url, capsys, "seed")
    roster = seeded["rosters"]["granite"]
    propose = ["propose", "--org", "granite", "--operation", MOVE, "--resource", roster]

    refused = _cli(database_url, capsys, *propose, "--as", BEN, "--request", json.dumps(TO_SENIORS))
    created = _cli(database_url, capsys, *propose, "--as", AVA, "--request", json.dumps(TO_SENIORS))
    bad = _cli(
        database_url,
        capsys,
        *propose,
        "--as",
        AVA,
        "--request",
        json.dumps({**TO_SENIORS, "to_league": "Friday Fun", "rank": 1}),
        status=4,  # a refused request
    )

    assert refused["error"] == "forbidden"
    assert created["preview"]["to_league_members_after"] == 5
    assert bad["error"] == "invalid_request"
    assert {p["field"] for p in bad["problems"]} == {"rank"}
    card = _cli(database_url, capsys, "show", created["proposal_id"], "--as", AVA)
    assert (card["operation"], card["status"]) == (MOVE, "pending")
    assert card["preview"] == created["preview"]
    by_ben = _cli(database_url, capsys, "approve", created["proposal_id"], "--as", BEN)
    assert (by_ben["result"], by_ben["reason"]) == ("not_approvable", "forbidden")

    approved = _cli(database_url, capsys, "approve", created["proposal_id"], "--as", AVA)
    again = _cli(database_url, capsys, "approve", created["proposal_id"], "--as", AVA)

    assert (approved["result"], approved["outcome"]["kind"]) == ("executed", "succeeded")
    assert again["result"] == "already_completed"
    assert again["outcome"] == approved["outcome"]
    leagues = _cli(database_url, capsys, "roster", "leagues", "--org", "granite")
    assert {"name": "Thursday Seniors", "active_members": 5, "capacity": 8} in leagues
    assert {"name": "Sunday Mixed Doubles", "active_members": 1, "capacity": 8} in leagues


# -- the assistant and the pages ----------------------------------------------------------------


def _ask(cs, seeded, words):
    return cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="roster",
        resource_id=seeded["rosters"]["granite"],
        message=words,
    )


def _ask_in(cs, seeded, words, language):
    """The roster assistant's turn for Ava's words, on a page in ``language``."""
    return cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="roster",
        resource_id=seeded["rosters"]["granite"],
        message=words,
        language=language,
    )


#: What the assistant adds when its proposal replaced one awaiting approval.
REPLACES = {
    "en": "It replaces an earlier proposal that was awaiting approval, which can no longer be "
    "approved.",
    "fr": "Elle remplace une proposition antérieure qui attendait une approbation et qui ne peut "
    "plus être approuvée.",
}


@pytest.mark.parametrize(
    "words",
    [
        "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors",
        "Olivia Chen should switch to Thursday Seniors from Sunday Mixed Doubles, please.",
        "Déplacer Olivia Chen de Sunday Mixed Doubles à Thursday Seniors",
    ],
)
def test_the_offline_stand_in_proposes_the_move_the_manager_asked_for(cs, seeded, words):
    turn = _ask(cs, seeded, words)

    assert turn.ended == "proposal"
    assert turn.proposal is not None
    assert turn.proposal["operation"] == MOVE
    preview = turn.proposal["preview"]
    assert (preview["email"], preview["from_league"], preview["to_league"]) == (
        OLIVIA,
        "Sunday Mixed Doubles",
        "Thursday Seniors",
    )


@pytest.mark.parametrize(
    ("language", "words", "instead", "elsewhere"),
    [
        (
            "en",
            "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors",
            "Move Olivia Chen from Sunday Mixed Doubles to Junior Program",
            "Move Olivia Chen from Monday Night Open to Thursday Seniors",
        ),
        (
            "fr",
            "Déplacer Olivia Chen de Sunday Mixed Doubles à Thursday Seniors",
            "Déplacer Olivia Chen de Sunday Mixed Doubles à Junior Program",
            "Déplacer Olivia Chen de Monday Night Open à Thursday Seniors",
        ),
    ],
)
def test_the_assistant_says_when_a_new_move_replaces_one_awaiting_approval(
    cs, seeded, language, words, instead, elsewhere
):
    """Another move of the member out of the same league replaces the pending one, and the
    manager reads it where the new card appears; a move out of another league replaces
    nothing."""
    asked = _ask_in(cs, seeded, words, language)
    again = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="roster",
        resource_id=seeded["rosters"]["granite"],
        message=instead,
        interaction_id=asked.interaction_id,
        language=language,
    )
    another = _ask_in(cs, seeded, elsewhere, language)

    assert again.proposal is not None
    assert again.proposal["supersedes"] == [asked.proposal["proposal_id"]]
    assert again.messages[-1]["text"].endswith(REPLACES[language])
    assert another.proposal is not None
    assert another.proposal["supersedes"] == []
    assert REPLACES[language] not in asked.messages[-1]["text"]
    assert REPLACES[language] not in another.messages[-1]["text"]


@pytest.mark.parametrize(
    ("language", "words", "asked"),
    [
        (
            "en",
            "Move Olivia Chen from Thursday Seniors to Sunday Mixed Doubles",
            "Olivia Chen plays in Monday Night Open, Sunday Mixed Doubles. Which league should "
            "they leave, and which should they join?",
        ),
        (
            "fr",
            "Déplacer Olivia Chen de Thursday Seniors à Sunday Mixed Doubles",
            "Olivia Chen joue dans Monday Night Open, Sunday Mixed Doubles. Quelle ligue ce "
            "membre doit-il quitter, et laquelle rejoindre ?",
        ),
    ],
)
def test_the_stand_in_never_proposes_the_move_the_other_way(cs, seeded, language, words, asked):
    """Asked to move a member into a league they already play in, out of one they do not
    (the demo's data, once its story moved Olivia, and the page's own example), the stand-in
    asks, saying where they play: it does not propose the opposite move."""
    turn = _ask_in(cs, seeded, words, language)

    assert (turn.ended, turn.proposal) == ("reply", None)
    assert turn.messages[-1]["text"] == asked


def test_the_stand_in_asks_when_the_words_do_not_say_which_move(cs, seeded):
    # Olivia plays in two leagues: which one she leaves is not said.
    unclear = _ask(cs, seeded, "Move Olivia Chen to Junior Program")
    nobody = _ask(cs, seeded, "Move Grace Kim to Junior Program")
    # Margaret plays in one league only: naming where she goes is enough.
    clear = _ask(cs, seeded, "Move Margaret Hughes to Monday Night Open")

    assert (unclear.ended, unclear.proposal) == ("reply", None)
    assert (
        "Olivia Chen plays in Monday Night Open, Sunday Mixed Doubles"
        in (unclear.messages[-1]["text"])
    )
    assert (nobody.ended, nobody.proposal) == ("reply", None)
    assert clear.ended == "proposal"
    assert clear.proposal is not None
    assert clear.proposal["preview"]["from_league"] == "Thursday Seniors"


def test_the_inbox_and_review_page_show_the_roster_section_in_english_and_french(cs, seeded):
    passwords = seed_passwords(cs)
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    created = proposal(cs, seeded, operation=MOVE)
    browser = TestClient(app, follow_redirects=False)
    token = re.search(r'name="csrf_token" value="([^"]+)"', browser.get("/sign-in").text)
    assert token is not None
    signed = browser.post(
        "/sign-in",
        data={"email": AVA, "password": passwords[AVA], "csrf_token": token.group(1)},
    )
    assert signed.status_code == 303

    inbox = browser.get("/?section=roster")
    french = browser.get("/?section=roster", headers={"Accept-Language": "fr"})
    review = browser.get(f"/proposals/{created.proposal_id}")
    revue = browser.get(f"/proposals/{created.proposal_id}", headers={"Accept-Language": "fr"})

    assert "Roster" in inbox.text
    assert "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors" in inbox.text
    assert "Effectifs" in french.text
    assert "Faire passer Olivia Chen de Sunday Mixed Doubles à Thursday Seniors" in french.text
    assert "Move a member to another league" in review.text
    assert "To league: members after" in review.text
    assert f'action="/proposals/{created.proposal_id}/approve"' in review.text
    assert "Changer un membre de ligue" in revue.text
    assert "Ligue rejointe : membres après" in revue.text
    chat = browser.get(f"/chat/roster/{seeded['rosters']['granite']}")
    assert chat.status_code == 200
    assert "Roster assistant" in chat.text
