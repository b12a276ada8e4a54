"""A dead session cookie, replayed, stored a new session row each time.

The pages keep no row for a signed-out visitor; a browser whose session ended (signed out,
signed out everywhere, a new password, removed from the club, past its limits) gets one
"Your session ended" notice, in a fresh row of ``web_sessions``. An attack run (hC) kept the
cookie of a session it had signed out of and sent it again in a loop, without a password: each
request stored one more notice row (100 requests, 100 rows), each kept for the idle limit (8
hours), in the table every club's sessions share, as fast as the server answered; the revoked
row it replayed stays until its own expiry. Signing out from such a notice row (its CSRF token
is on any page, the 404 page's language form included) did the same, one row each time. Now
a dead session gives its notice once: replaying it again stores nothing, and signing out
where nobody is signed in stores nothing either. The browser that signed out still reads "You
are signed out.", and the first replay of a dead cookie still reads that its session ended.
"""

from __future__ import annotations

from countersign.domain.club.organization import Organization
from countersign.infrastructure.identity import session_store

from tests.attacks.test_sessions import COOKIE, Site, cookie_of, site  # noqa: F401
from tests.conftest import AVA

ENDED = "Your session ended"
REPLAYS = 20


def rows(site: Site) -> int:  # noqa: F811
    with site.cs.sql.reading() as cursor:
        found = cursor.execute(f"SELECT COUNT(*) FROM {session_store.TABLE}").fetchone()
    return int(found[0])


def test_a_signed_out_cookie_replayed_stores_one_notice_then_nothing(site: Site):  # noqa: F811
    ava = site.browser(AVA)
    cookie = cookie_of(ava)
    out = ava.post("/sign-out", {"csrf_token": ava.csrf("/")})
    assert out.headers["location"] == "/sign-in"
    assert "You are signed out." in ava.get("/sign-in").text
    before = rows(site)

    first = site.replay(cookie)
    assert first.get("/").headers["location"] == "/sign-in"
    assert ENDED in first.get("/sign-in").text  # the notice, once
    for _ in range(REPLAYS):
        again = site.replay(cookie)
        answer = again.get("/")
        assert answer.status_code == 303
        assert answer.headers["location"] == "/sign-in"

    assert rows(site) <= before + 1


def test_a_removed_members_cookie_replayed_stores_one_notice_then_nothing(
    site: Site,  # noqa: F811
):
    ava = site.browser(AVA)
    cookie = cookie_of(ava)
    granite = site.cs.store.get(Organization.create_id("granite"), Organization)
    granite.remove_member(AVA)
    site.cs.store.save(granite)
    assert ava.get("/").headers["location"] == "/sign-in"
    before = rows(site)

    for _ in range(REPLAYS):
        assert site.replay(cookie).get("/proposals").status_code in (303, 404)

    assert rows(site) <= before + 1


def test_signing_out_where_nobody_is_signed_in_stores_nothing(site: Site):  # noqa: F811
    ava = site.browser(AVA)
    ava.post("/sign-out", {"csrf_token": ava.csrf("/")})
    before = rows(site)

    for _ in range(REPLAYS):
        token = ava.csrf("/no-such-page")  # a page that does not read the notice
        answer = ava.post("/sign-out", {"csrf_token": token})
        assert answer.status_code == 303
        assert answer.headers["location"] == "/sign-in"

    assert rows(site) <= before
    assert ava.client.cookies.get(COOKIE)


def test_a_notice_row_signed_out_of_and_replayed_in_turn_stores_nothing_more(
    site: Site,  # noqa: F811
):
    """Each notice row is a cookie too: signing out of it revoked it, and a revoked row gave
    its own "session ended" notice once, in a new row, whose cookie could be signed out of and
    replayed in turn: one more row a round, for ever, without a password. A row nobody was
    signed in to gives no such notice: no one's session ended."""
    ava = site.browser(AVA)
    cookie = cookie_of(ava)
    ava.post("/sign-out", {"csrf_token": ava.csrf("/")})
    before = rows(site)

    for _ in range(REPLAYS):
        answer = site.replay(cookie).get("/")  # the dead cookie: a notice row's in its place
        assert answer.headers["location"] == "/sign-in"
        cookie = answer.cookies.get(COOKIE) or cookie  # none: the same dead one again
        holder = site.replay(cookie)
        token = holder.csrf("/no-such-page")  # a page that does not read the notice
        out = holder.post("/sign-out", {"csrf_token": token})
        assert out.headers["location"] == "/sign-in"  # that row revoked: dead in turn

    assert rows(site) <= before + 1
