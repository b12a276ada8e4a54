"""roster.remove_member: a manager takes a member out of one league. The preview shows who, from
which league, and the league's count before and after; approval checks that the member still
plays in that league under the name the manager read and that the league holds the members
the preview counted, and takes them out in the commit that records the outcome."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from countersign.application.errors import ForbiddenError
from countersign.domain.club.organization import Organization
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.contracts.remove_member import RemoveMember
from countersign.domain.errors import NotFoundError
from countersign.domain.pending_slot import PendingSlot

from tests.conftest import AVA, BEN, MIA
from tests.support.proposing import proposal
from tests.test_move_member import REPLACES, _ask, _ask_in, _cli, _roster  # roster helpers
from tests.test_projections import catch_up_all

REMOVE = "roster.remove_member"
ALREADY_OUT = (
    "Nothing was changed. Noah Fraser no longer plays in Thursday Seniors. That is already "
    "what this proposal asked for, so nothing is left to do."
)
ALREADY_OUT_FR = (
    "Rien n'a été modifié. Noah Fraser ne joue plus dans Thursday Seniors. C'est déjà ce que "
    "demandait cette proposition ; il ne reste donc rien à faire."
)
NOAH = "noah.fraser@example.com"  # plays in Monday Night Open and Thursday Seniors
OUT_OF_SENIORS = {"member": "Noah Fraser", "league": "Thursday Seniors"}


def _leagues_of(cs, seeded, email=NOAH) -> list[str]:
    return _roster(cs, seeded).leagues_of(email)


def _propose(cs, seeded, request: dict[str, Any] | None = None, **kwargs: Any):
    """Propose a removal on the club's roster (``organization``'s, unless ``resource_id``)."""
    kwargs.setdefault("resource_id", seeded["rosters"][kwargs.get("organization", "granite")])
    return proposal(cs, seeded, operation=REMOVE, request=request or OUT_OF_SENIORS, **kwargs)


# -- propose ------------------------------------------------------------------------------------


@pytest.mark.parametrize("said", ["Noah Fraser", "  noah   FRASER ", " Noah.Fraser@Example.com"])
def test_the_preview_names_the_member_the_league_and_its_count_before_and_after(cs, seeded, said):
    created = _propose(cs, seeded, {**OUT_OF_SENIORS, "member": said})

    assert created.preview == {
        "member_name": "Noah Fraser",
        "email": NOAH,
        "league": "Thursday Seniors",
        "league_members_before": 4,
        "league_members_after": 3,
    }
    assert created.status == "pending"
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Thursday Seniors"]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            {"league": "Friday Fun"},
            "league",
            "there is no league of that name; list the leagues",
        ),
        (
            {"member": "Olivia Chen"},
            "member",
            "no member of 'Thursday Seniors' has this name or email; search the members",
        ),
        (
            {"member": "nobody@example.com"},
            "member",
            "no member of 'Thursday Seniors' has this name or email; search the members",
        ),
    ],
)
def test_a_removal_the_roster_does_not_allow_is_refused_with_a_problem(
    cs, seeded, change, field, message
):
    with pytest.raises(InvalidRequestError) as refused:
        _propose(cs, seeded, {**OUT_OF_SENIORS, **change})

    assert [(p.field, p.message) for p in refused.value.problems] == [(field, message)]


def test_a_name_two_members_of_the_league_share_is_refused_until_named_by_email(cs, seeded):
    cs.club.join("granite", "Thursday Seniors", "Noah Fraser", "noah.f2@example.com")

    with pytest.raises(InvalidRequestError) as refused:
        _propose(cs, seeded)
    by_email = _propose(cs, seeded, {**OUT_OF_SENIORS, "member": "noah.f2@example.com"})

    problem = refused.value.problems[0]
    assert (problem.field, problem.message) == (
        "member",
        "2 members of 'Thursday Seniors' have this name; name one by email",
    )
    assert problem.for_people is not None
    assert problem.for_people.en == (
        "2 members of Thursday Seniors are named Noah Fraser: name the one to take out by "
        "their email address."
    )
    assert by_email.preview["email"] == "noah.f2@example.com"


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        ({"member": "Noah Fraser"}, "league"),  # missing
        ({**OUT_OF_SENIORS, "email": NOAH}, "email"),  # unknown
        ({**OUT_OF_SENIORS, "league": ["Thursday Seniors"]}, "league"),  # wrong type
        ({**OUT_OF_SENIORS, "member": "Noah\x00Fraser"}, "member"),  # control character
        ({**OUT_OF_SENIORS, "member": "x" * 300}, "member"),  # too long
    ],
)
def test_a_malformed_request_is_refused_safely_and_changes_nothing(cs, seeded, request_, field):
    version = _roster(cs, seeded).version

    with pytest.raises(InvalidRequestError) as refused:
        _propose(cs, seeded, request_)

    assert [p.field for p in refused.value.problems] == [field]
    assert "\x00" not in json.dumps([p.message for p in refused.value.problems])
    assert _roster(cs, seeded).version == version


def _awaiting(cs, clock) -> list[tuple[str, str]]:
    """What the roster's inbox shows the manager (the ``browser_view`` projection): who
    leaves which league, for each removal awaiting approval."""
    catch_up_all(cs)
    inbox = cs.read_models.inbox(cs.club.organization_id("granite"), clock.now(), section="roster")
    return sorted((card["preview"]["email"], card["preview"]["league"]) for card in inbox["items"])


def test_a_removal_proposed_again_replaces_the_pending_one_and_no_other(cs, seeded, clock):
    """A removal is about one member in one league: proposing it again replaces the pending
    one, while the same member out of another league (a member may play in two, and both
    removals may be wanted at the end of a season) or another member leaves it pending."""
    first = _propose(cs, seeded)

    again = _propose(cs, seeded, {"member": NOAH, "league": "Thursday Seniors"})
    elsewhere = _propose(cs, seeded, {"member": NOAH, "league": "Monday Night Open"})
    other = _propose(cs, seeded, {"member": "Walter Brooks", "league": "Thursday Seniors"})

    assert again.supersedes == [first.proposal_id]
    assert elsewhere.supersedes == []
    assert other.supersedes == []
    assert cs.cards.card(first.proposal_id, AVA).superseded_by == again.proposal_id
    assert _awaiting(cs, clock) == [
        (NOAH, "Monday Night Open"),
        (NOAH, "Thursday Seniors"),
        ("walter.brooks@example.com", "Thursday Seniors"),
    ]


def test_removals_of_one_member_from_two_leagues_both_await_approval_and_both_run(
    cs, seeded, clock
):
    """End of season: Noah leaves both his leagues. Neither proposal withdraws the other,
    before or after either is approved."""
    seniors = _propose(cs, seeded)
    monday = _propose(cs, seeded, {"member": "Noah Fraser", "league": "Monday Night Open"})

    cards = [cs.cards.card(created.proposal_id, AVA) for created in (seniors, monday)]
    first = cs.proposals.approve(seniors.proposal_id, AVA)
    still = cs.cards.card(monday.proposal_id, AVA)
    second = cs.proposals.approve(monday.proposal_id, AVA)

    assert [(card.status, card.withdraws) for card in cards] == [("pending", [])] * 2
    assert _awaiting(cs, clock) == []
    assert (first.status, still.status, second.status) == ("succeeded", "pending", "succeeded")
    assert second.message == "Noah Fraser no longer plays in Monday Night Open (members now: 5)."
    assert _leagues_of(cs, seeded) == []


def _as_the_last_release_froze_it(monkeypatch, cs, seeded, request=None):
    """A removal frozen by the release before removals were about a league: its slot held it
    under the member's email alone (that release's ``subject``, restored while it is frozen)."""
    with monkeypatch.context() as last_release:
        last_release.setattr(RemoveMember, "subject", lambda self, arguments: arguments.email)
        return _propose(cs, seeded, request)


@pytest.mark.parametrize("approved_first", ["held_before", "proposed_since"])
def test_a_removal_pending_from_the_last_release_runs_once_beside_the_same_one_proposed_since(
    cs, seeded, clock, monkeypatch, approved_first
):
    """A removal pending when a deployment upgrades was held under the member's email alone.
    The same removal proposed since no longer finds it (its subject names the league), so
    both await approval until the old one expires: whichever is approved first takes Noah out
    of the league, and the other fails closed at its recheck, changing nothing, and says that
    what it asked for already holds: it leaves Needs attention, in either order. A removal
    out of his other league replaces neither."""
    held = _as_the_last_release_froze_it(monkeypatch, cs, seeded)
    since = _propose(cs, seeded)
    elsewhere = _propose(cs, seeded, {"member": NOAH, "league": "Monday Night Open"})
    slot = cs.store.get(
        PendingSlot.create_id(Organization.create_id("granite"), _roster(cs, seeded).id),
        PendingSlot,
    )
    assert slot.latest[REMOVE] == {
        NOAH: UUID(held.proposal_id),
        f"{NOAH}/Thursday Seniors": UUID(since.proposal_id),
        f"{NOAH}/Monday Night Open": UUID(elsewhere.proposal_id),
    }
    assert (since.supersedes, elsewhere.supersedes) == ([], [])
    assert _awaiting(cs, clock) == [
        (NOAH, "Monday Night Open"),
        (NOAH, "Thursday Seniors"),
        (NOAH, "Thursday Seniors"),
    ]
    first, second = (held, since) if approved_first == "held_before" else (since, held)

    ran = cs.proposals.approve(first.proposal_id, AVA)
    version = _roster(cs, seeded).version
    refused = cs.proposals.approve(second.proposal_id, AVA)

    assert ran.message == "Noah Fraser no longer plays in Thursday Seniors (members now: 3)."
    assert (refused.result, refused.status) == ("executed", "revision_required")
    assert refused.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "member_left_league",
            "params": {"member": "Noah Fraser", "league": "Thursday Seniors"},
        },
        "already_so": True,
    }
    assert refused.message == ALREADY_OUT
    assert _roster(cs, seeded).version == version
    assert _leagues_of(cs, seeded) == ["Monday Night Open"]
    assert _awaiting(cs, clock) == [(NOAH, "Monday Night Open")]
    # What it asked for already holds: nothing is owed, so nothing needs attention.
    attention = cs.read_models.needs_attention(cs.club.organization_id("granite"))
    assert attention == {"items": [], "total": 0}
    assert cs.proposals.approve(elsewhere.proposal_id, AVA).status == "succeeded"
    assert _leagues_of(cs, seeded) == []


# -- approve ------------------------------------------------------------------------------------


def test_approval_takes_the_member_out_of_that_league_only_in_the_outcomes_commit(cs, seeded):
    created = _propose(cs, seeded)
    start = cs.app.recorder.max_notification_id() or 0

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert (report.result, report.status) == ("executed", "succeeded")
    assert report.outcome == {
        "kind": "succeeded",
        "result": {"email": NOAH, "league": "Thursday Seniors", "league_members": 3},
    }
    assert report.message == "Noah Fraser no longer plays in Thursday Seniors (members now: 3)."
    assert _leagues_of(cs, seeded) == ["Monday Night Open"]
    written = cs.app.recorder.select_notifications(start + 1, limit=100)
    assert [n.topic.rsplit(".", 1)[-1] for n in written] == [
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
        "MemberLeft",
    ]
    assert [n.id for n in written] == list(range(start + 1, start + 6))  # one commit
    card = cs.cards.card(created.proposal_id, AVA, language="fr")
    assert (
        card.message == "Noah Fraser ne joue plus dans Thursday Seniors (membres maintenant : 3)."
    )


def test_approving_twice_removes_once_and_returns_the_stored_outcome(cs, seeded, other):
    created = _propose(cs, seeded)
    first = cs.proposals.approve(created.proposal_id, AVA)
    version = _roster(cs, seeded).version

    again = other.proposals.approve(created.proposal_id, AVA)

    assert again.result == "already_completed"
    assert again.outcome == first.outcome
    assert _roster(other, seeded).version == version


def _at_the_desk(cs, seeded, change) -> None:
    roster = _roster(cs, seeded)
    change(roster)
    cs.store.save(roster)


@pytest.mark.parametrize(
    "meanwhile",
    [
        lambda roster: roster.leave("Thursday Seniors", NOAH),
        lambda roster: roster.move(NOAH, "Thursday Seniors", "Junior Program"),
    ],
    ids=["removed", "moved"],
)
def test_a_member_who_left_the_league_meanwhile_requires_revision(cs, seeded, meanwhile):
    """However Noah left the league, what the removal asked for already holds: it changes
    nothing, says so, and needs nobody's attention."""
    created = _propose(cs, seeded)
    _at_the_desk(cs, seeded, meanwhile)
    version = _roster(cs, seeded).version

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert report.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "member_left_league",
            "params": {"member": "Noah Fraser", "league": "Thursday Seniors"},
        },
        "already_so": True,
    }
    assert report.message == ALREADY_OUT
    assert cs.cards.card(created.proposal_id, AVA, language="fr").message == ALREADY_OUT_FR
    assert _roster(cs, seeded).version == version
    catch_up_all(cs)
    attention = cs.read_models.needs_attention(cs.club.organization_id("granite"))
    assert attention["total"] == 0


def test_a_member_who_left_and_rejoined_under_another_name_requires_revision(cs, seeded):
    """He plays in the league again, under another name: the removal did not happen, so it
    is no "already so", and it stays under Needs attention."""
    created = _propose(cs, seeded)
    _at_the_desk(cs, seeded, lambda roster: roster.leave("Thursday Seniors", NOAH))
    cs.club.join("granite", "Thursday Seniors", "Noah F. Junior", NOAH)

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert report.outcome is not None
    assert report.outcome["reason"]["code"] == "member_left_league"
    assert "already_so" not in report.outcome
    assert report.message is not None
    assert report.message.endswith("Ask the assistant for a new proposal if it is still needed.")
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Thursday Seniors"]
    catch_up_all(cs)
    attention = cs.read_models.needs_attention(cs.club.organization_id("granite"))
    assert [card["proposal_id"] for card in attention["items"]] == [created.proposal_id]


def test_removals_from_one_league_each_run_though_the_count_changed_between_them(cs, seeded):
    """The count is what the reviewer reads, not a condition: taking three people out at the
    end of a season is three approvals, none of which withdraws the others."""
    removals = [
        _propose(cs, seeded, {**OUT_OF_SENIORS, "member": name})
        for name in ("Noah Fraser", "Walter Brooks", "Helen Park")
    ]
    cs.club.join("granite", "Thursday Seniors", "Grace Kim", "grace.kim@example.com")

    reports = [cs.proposals.approve(created.proposal_id, AVA) for created in removals]

    assert [report.status for report in reports] == ["succeeded"] * 3
    assert [report.outcome["result"]["league_members"] for report in reports] == [4, 3, 2]
    assert _leagues_of(cs, seeded) == ["Monday Night Open"]


# -- who may ------------------------------------------------------------------------------------


def test_the_roster_permission_decides_who_may_propose_and_approve(cs, seeded):
    assert not cs.club.membership("granite", BEN).member.may("roster.manage")
    with pytest.raises(ForbiddenError):
        _propose(cs, seeded, actor=BEN)
    created = _propose(cs, seeded)

    refused = cs.proposals.approve(created.proposal_id, BEN)

    assert (refused.result, refused.reason) == ("not_approvable", "forbidden")
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Thursday Seniors"]


def test_another_clubs_member_and_roster_are_refused(cs, seeded):
    # Maple's member is no member of Granite's league.
    with pytest.raises(InvalidRequestError) as refused:
        _propose(cs, seeded, {"member": "jack.wilson@example.com", "league": "Thursday Seniors"})
    assert refused.value.problems[0].field == "member"
    # Granite's league is not Maple's: Mia's club has none of that name.
    with pytest.raises(InvalidRequestError):
        _propose(cs, seeded, actor=MIA, organization="maple")
    # Another club's roster, or Mia on Granite's roster, is not found.
    with pytest.raises(NotFoundError):
        _propose(cs, seeded, resource_id=seeded["rosters"]["maple"])
    with pytest.raises(NotFoundError):
        _propose(
            cs, seeded, actor=MIA, organization="maple", resource_id=seeded["rosters"]["granite"]
        )
    created = _propose(cs, seeded)
    foreign = cs.proposals.approve(created.proposal_id, MIA)
    assert (foreign.result, foreign.reason) == ("not_approvable", "not_found")
    assert _roster(cs, seeded, "maple").leagues_of("jack.wilson@example.com") == ["Tuesday Draw"]
    assert _leagues_of(cs, seeded) == ["Monday Night Open", "Thursday Seniors"]


# -- the assistant and the command line ---------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "member"),
    [
        ("Take Noah Fraser out of Thursday Seniors", "Noah Fraser"),
        ("Please remove noah.fraser@example.com from Thursday Seniors.", NOAH),
        ("Retirer Noah Fraser de Thursday Seniors", "Noah Fraser"),
    ],
)
def test_the_offline_stand_in_proposes_the_removal_the_manager_asked_for(cs, seeded, words, member):
    turn = _ask(cs, seeded, words)

    assert turn.ended == "proposal"
    assert turn.proposal is not None
    assert turn.proposal["operation"] == REMOVE
    assert (turn.proposal["preview"]["email"], turn.proposal["preview"]["league"]) == (
        NOAH,
        "Thursday Seniors",
    )
    asked = [c for c in cs.audit_interaction(turn.interaction_id) if c["name"].startswith("prop")]
    assert asked[-1]["arguments"] == {"member": member, "league": "Thursday Seniors"}


@pytest.mark.parametrize(
    ("language", "words", "elsewhere"),
    [
        (
            "en",
            "Take Noah Fraser out of Thursday Seniors",
            "Take Noah Fraser out of Monday Night Open",
        ),
        (
            "fr",
            "Retirer Noah Fraser de Thursday Seniors",
            "Retirer Noah Fraser de Monday Night Open",
        ),
    ],
)
def test_the_assistant_says_when_a_new_removal_replaces_one_awaiting_approval(
    cs, seeded, language, words, elsewhere
):
    """The same removal asked for again replaces the pending one, and the manager reads it
    where the new card appears; the same member out of another league replaces nothing."""
    asked = _ask_in(cs, seeded, words, language)
    again = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="roster",
        resource_id=seeded["rosters"]["granite"],
        message=words,
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


def test_the_stand_in_asks_which_league_when_the_words_do_not_say(cs, seeded):
    unclear = _ask(cs, seeded, "Remove Noah Fraser")
    nobody = _ask(cs, seeded, "Remove Grace Kim from Thursday Seniors")

    assert (unclear.ended, unclear.proposal) == ("reply", None)
    assert (
        "Noah Fraser plays in Monday Night Open, Thursday Seniors" in unclear.messages[-1]["text"]
    )
    assert (nobody.ended, nobody.proposal) == ("reply", None)
    assert "Which member should leave which league?" in nobody.messages[-1]["text"]


def test_the_command_line_proposes_and_approves_a_removal(database_url, capsys):
    roster = _cli(database_url, capsys, "seed")["rosters"]["granite"]
    propose = ["propose", "--org", "granite", "--operation", REMOVE, "--resource", roster]

    created = _cli(
        database_url, capsys, *propose, "--as", AVA, "--request", json.dumps(OUT_OF_SENIORS)
    )
    approved = _cli(database_url, capsys, "approve", created["proposal_id"], "--as", AVA)

    assert created["preview"]["league_members_after"] == 3
    assert (approved["result"], approved["outcome"]["kind"]) == ("executed", "succeeded")
    leagues = _cli(database_url, capsys, "roster", "leagues", "--org", "granite")
    assert {"name": "Thursday Seniors", "active_members": 3, "capacity": 8} in leagues
