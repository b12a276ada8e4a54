"""Item 5 of issue 13: times in the club's own time zone, and how far an expiry is.

The demo clubs read times in America/Toronto; a club that never set a zone (its events stored
before zones existed) reads UTC. The pages and the command line show "2026-12-01 04:00 EST"
with "expires in 23 h" (or "expire dans 23 h") beside it.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from countersign.domain.club.organization import Organization
from countersign.domain.errors import TimeZoneError
from countersign.domain.times import expiry, local_day, local_time
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.cli.cards import expires
from countersign.infrastructure.entrypoints.cli.render import box

from tests.conftest import AVA, DRAFT, REFUND, TO_CARD
from tests.test_web_pages import Web, web  # noqa: F401  (the pages fixture)

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
NBSP = "\N{NO-BREAK SPACE}"


def test_a_club_without_a_time_zone_reads_utc_and_can_set_one() -> None:
    club = Organization(slug="curl", name="Curl")
    assert club.time_zone == "UTC"
    club.set_time_zone(" America/Toronto ")
    assert club.time_zone == "America/Toronto"
    version = club.version
    club.set_time_zone("America/Toronto")  # the same zone again records nothing
    assert club.version == version


@pytest.mark.parametrize("name", ["", "Toronto", "Mars/Olympus", "../../etc/passwd", "x" * 300])
def test_a_name_that_is_not_a_time_zone_is_refused_clearly(name: str) -> None:
    club = Organization(slug="curl", name="Curl")
    with pytest.raises(TimeZoneError, match="use an IANA name such as America/Toronto"):
        club.set_time_zone(name)
    assert club.time_zone == "UTC"


def test_times_read_in_the_zone_with_its_abbreviation_summer_and_winter() -> None:
    assert local_time(NOW, "America/Toronto") == "2026-11-30 04:00 EST"
    assert local_time(datetime(2026, 7, 1, 12, 0, tzinfo=UTC), "America/Toronto") == (
        "2026-07-01 08:00 EDT"
    )
    assert local_time(NOW, "UTC") == "2026-11-30 09:00 UTC"


def test_french_reads_the_day_month_and_hour_as_french_does() -> None:
    afternoon = datetime(2026, 12, 1, 19, 52, tzinfo=UTC)
    assert local_time(afternoon, "America/Toronto", "fr") == (
        f"1er{NBSP}déc.{NBSP}2026, 14{NBSP}h{NBSP}52 HNE"
    )
    assert local_time(datetime(2026, 7, 1, 12, 5, tzinfo=UTC), "America/Toronto", "fr") == (
        f"1er{NBSP}juil.{NBSP}2026, 8{NBSP}h{NBSP}05 HAE"
    )
    assert local_time(NOW, "UTC", "fr") == f"30{NBSP}nov.{NBSP}2026, 9{NBSP}h{NBSP}00 UTC"
    assert local_day(afternoon, "America/Toronto") == "Dec 1"
    assert local_day(afternoon, "America/Toronto", "fr") == f"1er{NBSP}déc."


@pytest.mark.parametrize(
    ("left", "en", "fr"),
    [
        (timedelta(hours=23, minutes=59), "expires in 23 h", "expire dans 23 h"),
        (timedelta(minutes=45), "expires in 45 min", "expire dans 45 min"),
        (timedelta(seconds=70), "expires in 1 min", "expire dans 1 min"),
        (
            timedelta(seconds=10),
            "expires in less than a minute",
            "expire dans moins d'une minute",
        ),
        (timedelta(days=3, hours=2), "expires in 3 days", "expire dans 3 jours"),
        (-timedelta(hours=2, minutes=5), "expired 2 h ago", "a expiré il y a 2 h"),
        (timedelta(0), "expired just now", "a expiré à l'instant"),
        (-timedelta(seconds=59), "expired just now", "a expiré à l'instant"),
        (-timedelta(seconds=61), "expired 1 min ago", "a expiré il y a 1 min"),
    ],
)
def test_an_expiry_reads_as_a_distance_in_both_languages(left: timedelta, en: str, fr: str) -> None:
    assert expiry(NOW + left, NOW, "en") == en
    assert expiry(NOW + left, NOW, "fr") == fr


def test_the_pages_show_the_clubs_local_time_and_the_time_left(
    web: Web,  # noqa: F811
    clock: FakeClock,
) -> None:
    proposal_id = web.propose()
    clock.advance(hours=1)
    browser = web.browser(AVA)

    review = browser.get(f"/proposals/{proposal_id}").text
    assert re.search(
        r'<time datetime="2026-12-01T09:00\+00:00">2026-12-01 04:00 EST</time>'
        r' · <strong class="nowrap">expires in 23 h</strong>',
        review,
    ), review
    # Proposed at (the event's own time), in Toronto too.
    assert re.search(r"<dd>\d{4}-\d\d-\d\d \d\d:\d\d E[SD]T</dd>", review), review
    assert " UTC" not in review
    inbox = browser.get("/").text
    assert "Expires in 23 h" in inbox
    assert "2026-12-01 04:00 EST" in inbox

    browser.form("/language", {"lang": "fr", "next": "/"})
    french_inbox = browser.get("/").text
    assert "Expire dans 23 h" in french_inbox
    assert f"1er{NBSP}déc.{NBSP}2026, 4{NBSP}h{NBSP}00 HNE" in french_inbox
    assert " EST" not in french_inbox
    french_review = browser.get(f"/proposals/{proposal_id}").text
    assert "expire dans 23 h" in french_review
    assert f">1er{NBSP}déc.{NBSP}2026, 4{NBSP}h{NBSP}00 HNE</time>" in french_review


def test_the_command_line_sets_the_zone_and_shows_cards_in_it(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database", database_url]
    assert main(["seed", *db]) == 0
    order_id = seed_output_order(capsys)

    assert main(["org", "set-timezone", "--org", "granite", "--tz", "Mars/Olympus", *db]) == 2
    refused = capsys.readouterr()
    shown = refused.out + refused.err
    assert "'Mars/Olympus' is not a time zone; use an IANA name such as America/Toronto" in shown
    assert "Traceback" not in shown
    assert main(["org", "set-timezone", "--org", "nowhere", "--tz", "UTC", *db]) == 0
    assert capsys.readouterr().out.strip().startswith("Not found: check the club")

    assert main(["org", "set-timezone", "--org", "granite", "--tz", "Europe/Paris", *db]) == 0
    assert capsys.readouterr().out.strip() == "granite shows times in Europe/Paris."
    request = json.dumps(TO_CARD)
    propose = ["propose", "--org", "granite", "--as", AVA, "--operation", REFUND]
    assert main([*propose, "--resource", order_id, "--request", request, *db]) == 0
    created = read(capsys)
    # Proposed "now" (the real clock): a day from now, in Paris time.
    assert re.search(r"Expires\s+\d{4}-\d\d-\d\d \d\d:\d\d CES?T \(expires in 23 h\)", created)
    proposal_id = re.search(r"Proposal\s+([0-9a-f-]{36})", created)
    assert proposal_id, created
    assert main(["show", proposal_id.group(1), "--as", AVA, "--language", "fr", *db]) == 0
    assert "(expire dans 23 h)" in read(capsys)


def read(capsys: pytest.CaptureFixture[str]) -> str:
    """What the terminal shows: a no-break space reads as a space."""
    return capsys.readouterr().out.replace(NBSP, " ")


def seed_output_order(capsys: pytest.CaptureFixture[str]) -> str:
    """The refund-ok order's id, from the seed command's text."""
    found = re.search(r"order refund-ok: ([0-9a-f-]{36})", capsys.readouterr().out)
    assert found
    return found.group(1)


def test_the_command_lines_french_card_reads_its_times_as_the_french_pages_do(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Granite reads America/Toronto: the French card says "HNE" (or "HAE" in summer) and
    the day as the French pages write it, never the English "EST"."""
    db = ["--database", database_url]
    assert main(["seed", *db]) == 0
    order_id = seed_output_order(capsys)
    propose = ["propose", "--org", "granite", "--as", AVA, "--operation", REFUND]
    request = json.dumps(TO_CARD)
    assert (
        main([*propose, "--resource", order_id, "--request", request, "--language", "fr", *db]) == 0
    )
    created = read(capsys)
    french_time = r"\d+(er)? \S+ \d{4}, \d+ h \d\d H[NA]E"
    assert re.search(rf"Expire le\s+{french_time}[\s│]+\(expire dans 23 h\)", created), created
    assert not re.search(r" E[SD]T\b", created)
    proposal_id = re.search(r"Proposition\s+([0-9a-f-]{36})", created)
    assert proposal_id, created
    assert main(["show", proposal_id.group(1), "--as", AVA, "--language", "fr", *db]) == 0
    card = read(capsys)
    assert re.search(rf"Expire le\s+{french_time}[\s│]+\(expire dans 23 h\)", card), card
    assert main(["show", proposal_id.group(1), "--as", AVA, *db]) == 0
    english = read(capsys)
    assert re.search(r"Expires\s+\d{4}-\d\d-\d\d \d\d:\d\d E[SD]T \(expires in 23 h\)", english)


def test_a_card_too_narrow_for_the_expiry_moves_the_time_left_whole_to_the_next_line() -> None:
    afternoon = datetime(2026, 12, 1, 17, 44, tzinfo=UTC)
    value = expires(afternoon, "America/Toronto", afternoon - timedelta(hours=23, minutes=59), "fr")
    shown = box("Examen", [("Approbations manquantes", value)]).replace(NBSP, " ")
    assert "1er déc. 2026, 12 h 44 HNE" in shown
    assert "(expire dans 23 h)" in shown


def test_the_text_cards_of_mcp_and_the_agent_frameworks_read_french_times_in_french(
    cs, seeded
) -> None:
    """An MCP client or an agent framework asked for French reads the expiry as the French
    pages write it, "HNE" and not "EST"."""
    from countersign.application.authorization import Caller
    from countersign.infrastructure.adapters.agent_frameworks.card_text import card_text
    from countersign.infrastructure.entrypoints.mcp import answers

    created = cs.access.propose(
        Caller(AVA, "granite"),
        operation=DRAFT,
        resource_id=seeded["broadcast_forms"]["granite"],
        request={"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Hi", "body": "Hello"},
    )
    card = cs.access.card(created.proposal_id, Caller(AVA, "granite"))
    french = local_time(card.expires_at, "America/Toronto", "fr")
    assert french.endswith((" HNE", " HAE"))
    for text in (answers.card_text(card, "fr"), card_text(card, "fr")):
        assert french in text, text
        assert not re.search(r" E[SD]T\b", text), text
    english = local_time(card.expires_at, "America/Toronto")
    for text in (answers.card_text(card, "en"), card_text(card, "en")):
        assert english in text, text
