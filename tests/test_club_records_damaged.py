"""A club whose roster cannot be read (an event made unreadable in the database) keeps its
other pages: the navigation's roster link (application/assistant/conversations.py,
``club_records``) read the roster on every page, and a damaged one turned each page of the
club, the inbox with its pending refunds included, into the "damaged record" page."""

from __future__ import annotations

from uuid import UUID

from countersign.domain.club.organization import Organization
from countersign.domain.scope import Section

from tests.conftest import AVA, MIA
from tests.test_corrupt_records import _fresh, _rewrite_state
from tests.test_web_pages import web_for


def _unreadable(state):
    return {"_broken": state}  # no field the event needs: it cannot be constructed


def test_a_damaged_roster_leaves_the_clubs_inbox_and_offers_its_page(cs, seeded, clock):
    granite = UUID(str(Organization.create_id("granite")))
    roster_id = cs.assistant.assistants[Section("roster")].club_resource(granite)
    _rewrite_state(cs, str(roster_id), 1, _unreadable)
    other = _fresh(cs, clock)  # a process that never read the roster before
    try:
        web = web_for(other, seeded)
        ava = web.browser(AVA)

        inbox = ava.get("/")

        assert inbox.status_code == 200, inbox.text[:300]
        assert "Awaiting your decision" in inbox.text
        # The roster is there, damaged: its page says so (with its reference), as before.
        assert "Change the league rosters" in inbox.text
        roster_chat = inbox.text.split('href="/chat/roster/', 1)[1].split('"', 1)[0]
        damaged = ava.get(f"/chat/roster/{roster_chat}")
        assert damaged.status_code == 500
        assert "cs-" in damaged.text
        # Another club is untouched.
        assert web.browser(MIA).get("/").status_code == 200
    finally:
        other.close()
