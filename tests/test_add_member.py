"""roster.add_member: a manager adds a person to one league. The preview shows who (the name
the club knows a member by; a new person's name as given), to which league, whether they are
new to the club and where else they play, the league's count before and after and the spots it
has left; approval checks that they are not in the league yet, that it has room and that the
club still knows them by that name, and adds them in the commit that records the outcome."""

from __future__ import annotations

import re
from typing import Any

import pytest
from countersign.application.errors import ForbiddenError
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from fastapi.testclient import TestClient

from tests.conftest import AVA, BEN
from tests.support.proposing import proposal
from tests.test_move_member import REPLACES, _ask, _ask_in, _roster  # the roster's helpers
from tests.test_projections import catch_up_all

ADD = "roster.add_member"
CHLOE = "chloe.dubois@example.com"
NEW_JUNIOR = {"email": CHLOE, "league": "Junior Program", "name": "Chloe Dubois"}
OLIVIA = "olivia.chen@example.com"  # plays in Monday Night Open and Sunday Mixed Doubles


def _propose(cs, seeded, request: dict[str, Any] | None = None, **kwargs: Any):
    """Propose an addition to the club's roster."""
    kwargs.setdefault("resource_id", seeded["rosters"]["granite"])
    return proposal(cs, seeded, operation=ADD, request=request or NEW_JUNIOR, **kwargs)


def _at_the_desk(cs, seeded, change) -> None:
    roster = _roster(cs, seeded)
    change(roster)
    cs.store.save(roster)


# -- propose ------------------------------------------------------------------------------------


def test_a_new_person_joins_under_the_name_given_and_the_preview_counts_the_league(cs, seeded):
    created = _propose(
        cs, seeded, {**NEW_JUNIOR, "email": " Chloe.Dubois@Example.com", "name": "Chloe   Dubois"}
    )

    assert created.preview == {
        "member_name": "Chloe Dubois",
        "email": CHLOE,
        "league": "Junior Program",
        "new_to_club": True,
        "other_leagues": "",
        "league_members_before": 3,
        "league_members_after": 4,
        "spots_left_after": 8,
    }
    assert created.status == "pending"
    assert _roster(cs, seeded).leagues_of(CHLOE) == []


@pytest.mark.parametrize("name", [None, "olivia CHEN"])
def test_a_member_of_another_league_keeps_the_name_the_club_knows(cs, seeded, name):
    request = {"email": OLIVIA, "league": "Thursday Seniors"}

    created = _propose(cs, seeded, request if name is None else {**request, "name": name})

    assert created.preview["member_name"] == "Olivia Chen"
    assert created.preview["new_to_club"] is False
    assert created.preview["other_leagues"] == "Monday Night Open, Sunday Mixed Doubles"


@pytest.mark.parametrize(
    ("change", "field", "message", "sentence"),
    [
        (
            {"league": "Friday Fun"},
            "league",
            "there is no league of that name; list the leagues",
            "The club has no league named “Friday Fun”.",
        ),
        (
            {"email": "chloe at example dot com"},
            "email",
            "not an email address; ask for it",
            "The member's email is not an email address.",
        ),
        (
            {"name": None},
            "name",
            "this email is new to the club: give the person's full name",
            "No member has the email address chloe.dubois@example.com: give the full name of "
            "this new member.",
        ),
        (
            {"email": OLIVIA, "name": "Olive Chen"},
            "name",
            "the club knows this email as 'Olivia Chen'; leave the name out",
            "The club knows this email address as Olivia Chen, not Olive Chen.",
        ),
        (
            {"email": "maya.patel@example.com", "name": None},
            "email",
            "Maya Patel already plays in 'Junior Program'",
            "Maya Patel already plays in Junior Program.",
        ),
    ],
)
def test_an_addition_the_roster_does_not_allow_is_refused_with_a_problem(
    cs, seeded, change, field, message, sentence
):
    request = {key: value for key, value in {**NEW_JUNIOR, **change}.items() if value is not None}

    with pytest.raises(InvalidRequestError) as refused:
        _propose(cs, seeded, request)

    [problem] = refused.value.problems
    assert (problem.field, problem.message) == (field, message)
    assert problem.for_people is not None
    assert problem.for_people.en == sentence


def test_an_addition_to_a_full_league_is_refused_before_anyone_reviews_it(cs, seeded):
    for n in range(6):
        cs.club.join("granite", "Sunday Mixed Doubles", f"Curler {n}", f"curler{n}@example.com")

    with pytest.raises(InvalidRequestError) as refused:
        _propose(cs, seeded, {**NEW_JUNIOR, "league": "Sunday Mixed Doubles"})

    assert refused.value.problems[0].message == "'Sunday Mixed Doubles' is full (8 members)"
    assert refused.value.problems[0].for_people is not None
    assert refused.value.problems[0].for_people.fr == (
        "Sunday Mixed Doubles est complète : elle compte déjà ses 8 membres."
    )


def test_a_second_addition_of_the_same_person_to_the_same_league_supersedes_the_first_only(
    cs, seeded
):
    """The thing an addition is about is the person in that league: proposing it again
    replaces the pending one, while the same person proposed for another league (curlers
    often play in two) or another person for the same league leaves it pending."""
    first = _propose(cs, seeded)

    second = _propose(cs, seeded)
    elsewhere = _propose(cs, seeded, {**NEW_JUNIOR, "league": "Thursday Seniors"})
    other = _propose(cs, seeded, {**NEW_JUNIOR, "email": "sam.roy@example.com", "name": "Sam"})

    assert second.supersedes == [first.proposal_id]
    assert elsewhere.supersedes == []
    assert other.supersedes == []


# -- approve ------------------------------------------------------------------------------------


def test_approval_adds_the_person_in_the_outcomes_commit_and_says_so_in_both_languages(cs, seeded):
    created = _propose(cs, seeded)
    start = cs.app.recorder.max_notification_id() or 0

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert (report.result, report.status) == ("executed", "succeeded")
    assert report.outcome == {
        "kind": "succeeded",
        "result": {"email": CHLOE, "league": "Junior Program", "league_members": 4},
    }
    assert report.message == "Chloe Dubois now plays in Junior Program (members now: 4)."
    assert _roster(cs, seeded).members_of("Junior Program")[CHLOE] == "Chloe Dubois"
    written = cs.app.recorder.select_notifications(start + 1, limit=100)
    assert [n.topic.rsplit(".", 1)[-1] for n in written] == [
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
        "MemberJoined",
    ]
    assert [n.id for n in written] == list(range(start + 1, start + 6))  # one commit
    card = cs.cards.card(created.proposal_id, AVA, language="fr")
    assert card.message == (
        "Chloe Dubois joue maintenant dans Junior Program (membres maintenant : 4)."
    )


@pytest.mark.parametrize(
    ("meanwhile", "reason", "sentence"),
    [
        (
            lambda roster: [
                roster.join("Sunday Mixed Doubles", f"C{n}", f"c{n}@example.com") for n in range(6)
            ],
            {
                "code": "league_to_join_full",
                "params": {"league": "Sunday Mixed Doubles", "capacity": 8},
            },
            "Sunday Mixed Doubles is full: it holds its 8 members.",
        ),
        (
            lambda roster: roster.join("Thursday Seniors", "Chloé Dubois-Roy", CHLOE),
            {
                "code": "member_known_by_another_name",
                "params": {"member": "Chloe Dubois", "known": "Chloé Dubois-Roy"},
            },
            "The club now knows this email address as Chloé Dubois-Roy, not Chloe Dubois.",
        ),
    ],
    ids=["league-filled", "joined-elsewhere-under-another-name"],
)
def test_a_fact_the_addition_relied_on_that_changed_meanwhile_requires_revision(
    cs, seeded, meanwhile, reason, sentence
):
    created = _propose(cs, seeded, {**NEW_JUNIOR, "league": "Sunday Mixed Doubles"})
    _at_the_desk(cs, seeded, meanwhile)
    version = _roster(cs, seeded).version

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert report.outcome == {"kind": "revision_required", "reason": reason}
    assert report.message == (
        f"Nothing was changed. {sentence} Ask the assistant for a new proposal if it is still "
        "needed."
    )
    assert _roster(cs, seeded).version == version


def test_a_person_added_to_the_league_meanwhile_needs_nothing_more(cs, seeded):
    """Chloe joined the league at the desk, under the name the manager read: what the
    addition asked for already holds. It changes nothing, says so, and needs nobody's
    attention."""
    created = _propose(cs, seeded)
    _at_the_desk(cs, seeded, lambda roster: roster.join("Junior Program", "Chloe Dubois", CHLOE))
    version = _roster(cs, seeded).version

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert report.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "member_already_in_league",
            "params": {"member": "Chloe Dubois", "league": "Junior Program"},
        },
        "already_so": True,
    }
    assert report.message == (
        "Nothing was changed. Chloe Dubois already plays in Junior Program. That is already "
        "what this proposal asked for, so nothing is left to do."
    )
    assert _roster(cs, seeded).version == version
    catch_up_all(cs)
    assert cs.read_models.needs_attention(cs.club.organization_id("granite"))["total"] == 0


def test_additions_to_one_league_each_run_though_the_count_changed_between_them(cs, seeded):
    """The count and the spots left are what the reviewer reads, not a condition: signing up
    three juniors is three approvals, none of which withdraws the others."""
    additions = [
        _propose(cs, seeded, {**NEW_JUNIOR, "email": f"junior{n}@example.com", "name": f"J {n}"})
        for n in range(3)
    ]

    reports = [cs.proposals.approve(created.proposal_id, AVA) for created in additions]

    assert [report.status for report in reports] == ["succeeded"] * 3
    assert [report.outcome["result"]["league_members"] for report in reports] == [4, 5, 6]


def test_the_roster_permission_decides_who_may_propose_and_approve(cs, seeded):
    with pytest.raises(ForbiddenError):
        _propose(cs, seeded, actor=BEN)
    created = _propose(cs, seeded)

    refused = cs.proposals.approve(created.proposal_id, BEN)

    assert (refused.result, refused.reason) == ("not_approvable", "forbidden")
    assert _roster(cs, seeded).leagues_of(CHLOE) == []


# -- the assistant and the review page ----------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "request_"),
    [
        ("Add Chloe Dubois, chloe.dubois@example.com, to Junior Program", NEW_JUNIOR),
        (
            "Ajouter Chloe Dubois (chloe.dubois@example.com) à Junior Program",
            NEW_JUNIOR,
        ),
        (
            "Please add Olivia Chen to Thursday Seniors",
            {"email": OLIVIA, "league": "Thursday Seniors"},
        ),
    ],
)
def test_the_offline_stand_in_proposes_the_addition_the_manager_asked_for(
    cs, seeded, words, request_
):
    turn = _ask(cs, seeded, words)

    assert turn.ended == "proposal"
    assert turn.proposal is not None
    assert turn.proposal["operation"] == ADD
    preview = turn.proposal["preview"]
    assert (preview["email"], preview["league"], preview["member_name"]) == (
        request_["email"],
        request_["league"],
        request_.get("name", "Olivia Chen"),
    )


def test_the_stand_in_asks_when_the_words_do_not_say_who_or_where(cs, seeded):
    nobody = _ask(cs, seeded, "Add Grace Kim to Junior Program")
    nowhere = _ask(cs, seeded, "Ajouter Olivia Chen")

    assert (nobody.ended, nobody.proposal) == ("reply", None)
    assert "give a new person's name and email address" in nobody.messages[-1]["text"]
    assert (nowhere.ended, nowhere.proposal) == ("reply", None)
    assert "Quelle ligue Olivia Chen doit rejoindre ?" in nowhere.messages[-1]["text"]


@pytest.mark.parametrize(
    ("words", "language", "said"),
    [
        (
            "Add Olivia Chen to Monday Night Open",
            "en",
            "Olivia Chen already plays in Monday Night Open.",
        ),
        (
            "Ajoute Olivia Chen à Monday Night Open",
            "fr",
            "Olivia Chen joue déjà dans Monday Night Open.",
        ),
    ],
)
def test_the_stand_in_says_the_member_already_plays_in_the_league_named(
    cs, seeded, words, language, said
):
    """The manager named the league: asking them which league reads as if they had not."""
    turn = _ask_in(cs, seeded, words, language)

    assert (turn.ended, turn.proposal) == ("reply", None)
    assert turn.messages[-1]["text"] == said
    assert _roster(cs, seeded).members_of("Monday Night Open")[OLIVIA] == "Olivia Chen"


@pytest.mark.parametrize(
    ("words", "language", "said"),
    [
        (
            "Add Olivia Chan, olivia.chen@example.com, to Junior Program",
            "en",
            "The club knows this email address as Olivia Chen, not Olivia Chan.",
        ),
        (
            "Ajoute Olivia Chan (olivia.chen@example.com) à Junior Program",
            "fr",
            "Le club connaît cette adresse courriel sous le nom Olivia Chen, pas Olivia Chan.",
        ),
    ],
)
def test_the_stand_in_says_the_club_knows_the_email_by_another_name(
    cs, seeded, words, language, said
):
    """A name that is not the one the club knows may be another person with a mistyped
    email: the manager is told, and nothing is proposed under the club's name instead."""
    turn = _ask_in(cs, seeded, words, language)

    assert (turn.ended, turn.proposal) == ("reply", None)
    assert turn.messages[-1]["text"] == said
    assert _roster(cs, seeded).leagues_of(OLIVIA) == ["Monday Night Open", "Sunday Mixed Doubles"]


@pytest.mark.parametrize(
    ("words", "language", "said"),
    [
        (
            "Add Zoe Park, zoe@example, to Junior Program",
            "en",
            "The member's email is not an email address.",
        ),
        (
            "Ajoute Zoe Park (zoe@example) à Junior Program",
            "fr",
            "Le courriel du membre n'est pas une adresse courriel.",
        ),
    ],
)
def test_the_stand_in_says_an_address_without_a_domain_is_not_an_email(
    cs, seeded, words, language, said
):
    """The manager gave a name and an address: "who should join?" would read as if they
    had given neither."""
    turn = _ask_in(cs, seeded, words, language)

    assert (turn.ended, turn.proposal) == ("reply", None)
    assert turn.messages[-1]["text"] == said


def test_the_stand_in_proposes_a_member_named_as_the_club_knows_them_with_their_email(cs, seeded):
    turn = _ask(cs, seeded, "Add olivia chen, olivia.chen@example.com, to Junior Program")

    assert turn.proposal is not None
    assert turn.proposal["preview"]["member_name"] == "Olivia Chen"


@pytest.mark.parametrize(
    ("language", "first", "second", "other"),
    [
        (
            "en",
            "Add Pat Lee, pat.lee@example.com, to Junior Program",
            "Add Pat Lee, pat.lee@example.com, to Junior Program",
            "Add Pat Lee, pat.lee@example.com, to Thursday Seniors",
        ),
        (
            "fr",
            "Ajoute Pat Lee, pat.lee@example.com, à Junior Program",
            "Ajoute Pat Lee, pat.lee@example.com, à Junior Program",
            "Ajoute Pat Lee, pat.lee@example.com, à Thursday Seniors",
        ),
    ],
)
def test_the_assistant_says_when_a_new_addition_replaces_one_awaiting_approval(
    cs, seeded, language, first, second, other
):
    """The same addition proposed again replaces the pending one (the contract's subject is
    the person in that league): the manager reads it where the new card appears, not only on
    the old one; the same person proposed for another league replaces nothing."""
    asked = _ask_in(cs, seeded, first, language)
    again = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="roster",
        resource_id=seeded["rosters"]["granite"],
        message=second,
        interaction_id=asked.interaction_id,
        language=language,
    )
    another = _ask_in(cs, seeded, other, language)

    assert again.proposal is not None
    assert again.proposal["supersedes"] == [asked.proposal["proposal_id"]]
    assert again.messages[-1]["text"].endswith(REPLACES[language])
    assert REPLACES[language] not in asked.messages[-1]["text"]
    assert REPLACES[language] not in another.messages[-1]["text"]


def _signed_in(cs) -> TestClient:
    """Ava's browser, signed in to the pages."""
    passwords = seed_passwords(cs)
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    browser = TestClient(app, follow_redirects=False)
    token = re.search(r'name="csrf_token" value="([^"]+)"', browser.get("/sign-in").text)
    assert token is not None
    browser.post(
        "/sign-in",
        data={"email": AVA, "password": passwords[AVA], "csrf_token": token.group(1)},
    )
    return browser


@pytest.mark.parametrize(
    ("language", "words"),
    [("en", "Add Chloe Dubois to Junior Program"), ("fr", "Ajouter Chloe Dubois à Junior Program")],
)
def test_the_inbox_card_says_what_approval_does_once(cs, seeded, language, words):
    """The addition's headline is what its approval does: the card does not say it twice."""
    created = _propose(cs, seeded)

    inbox = _signed_in(cs).get("/", headers={"Accept-Language": language}).text

    card = re.search(
        rf'<a class="inbox-card[^"]*" href="/proposals/{created.proposal_id}">(.*?)</a>',
        inbox,
        re.DOTALL,
    )
    assert card is not None
    assert card.group(1).count(words) == 1


@pytest.mark.parametrize(
    ("language", "lead"),
    [
        (
            "en",
            "Ask to add a member to a league, to move them from one league to another, or to "
            "take them out of one.",
        ),
        (
            "fr",
            "Demandez d'ajouter un membre à une ligue, de le faire passer d'une ligue à une "
            "autre, ou de l'en retirer.",
        ),
    ],
)
def test_the_roster_assistant_says_it_adds_members_before_anything_is_asked(
    cs, seeded, language, lead
):
    chat = _signed_in(cs).get(
        f"/chat/roster/{seeded['rosters']['granite']}", headers={"Accept-Language": language}
    )

    assert lead in chat.text.replace("&#39;", "'")


@pytest.mark.parametrize(
    ("language", "full", "room"),
    [("en", "8 members · full", "2 members"), ("fr", "8 membres · complète", "2 membres")],
)
def test_the_roster_assistant_page_shows_which_league_is_full(cs, seeded, language, full, room):
    """The manager sees which league has no room before asking to add someone to it."""
    for n in range(2):  # 6 of its 8 are taken
        cs.club.join("granite", "Monday Night Open", f"Curler {n}", f"curler{n}@example.com")

    chat = _signed_in(cs).get(
        f"/chat/roster/{seeded['rosters']['granite']}", headers={"Accept-Language": language}
    )

    leagues = dict(
        re.findall(r'<li><span>([^<]+)</span><span class="hint">([^<]+)</span></li>', chat.text)
    )
    assert leagues["Monday Night Open"] == full
    assert leagues["Sunday Mixed Doubles"] == room


def test_the_review_page_reads_a_league_without_a_limit_in_english_and_french(cs, seeded):
    _at_the_desk(cs, seeded, lambda roster: roster.add_league("Friday Fun"))
    passwords = seed_passwords(cs)
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    created = _propose(cs, seeded, {**NEW_JUNIOR, "league": "Friday Fun"})
    browser = TestClient(app, follow_redirects=False)
    token = re.search(r'name="csrf_token" value="([^"]+)"', browser.get("/sign-in").text)
    assert token is not None
    browser.post(
        "/sign-in",
        data={"email": AVA, "password": passwords[AVA], "csrf_token": token.group(1)},
    )

    review = browser.get(f"/proposals/{created.proposal_id}").text
    revue = browser.get(f"/proposals/{created.proposal_id}", headers={"Accept-Language": "fr"}).text

    assert "Add Chloe Dubois to Friday Fun" in review
    assert re.search(r"Spots left after</[^>]+>\s*<[^>]+>no limit<", review)
    assert re.search(r"Already plays in</[^>]+>\s*<[^>]+>none<", review)
    assert "Ajouter Chloe Dubois à Friday Fun" in revue
    assert re.search(r"Places restantes après</[^>]+>\s*<[^>]+>sans limite<", revue)
    assert re.search(r"Nouveau au club</[^>]+>\s*<[^>]+>oui<", revue)
