"""Held: ``next`` never sends a browser off the site.

The red team sent links like ``/sign-in?next=https://evil.example`` so that a person who signs
in lands on a look-alike page. Every place that redirects to a ``next`` value was tried (the
sign-in form, the sign-in page when already signed in, choosing a club, switching language)
with every way of spelling another host that browsers accept: a scheme, ``//``, backslashes,
percent-encoding (raw in the form body and literal), tabs and other control characters,
userinfo, dot segments, ``javascript:`` and ``data:``. Where a browser would go is worked out
the way browsers parse URLs (WHATWG: backslash is a slash, tabs and newlines vanish, any run
of slashes makes what follows a host), and it is always this site.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

from countersign.domain.club.organization import Permission

from tests.attacks.conftest import Browser, Web
from tests.conftest import AVA

SITE = ("http", "testserver")
RED_TEAM = ["https://evil.example", "//evil.example", "/\\evil.example", "%2F%2Fevil.example"]
HOSTILE = [
    *RED_TEAM,
    "\\\\evil.example",
    "/\\/evil.example",
    "\\/evil.example",
    "///evil.example",
    "////evil.example/",
    "https:evil.example",
    "https:/evil.example",
    "HTTPS://evil.example",
    "http://evil.example",
    " //evil.example",
    "\t//evil.example",
    "/\t/evil.example",
    "/\n/evil.example",
    "/\x00/evil.example",
    "/%09/evil.example",
    "%2f%2fevil.example",
    "/%2F/evil.example",
    "/%5Cevil.example",
    "//evil.example@testserver",
    "//testserver@evil.example",
    "/..//evil.example",
    "/.//evil.example",
    "\u3002/evil.example",
    "/\uff0fevil.example",
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
]


def where_a_browser_goes(location: str) -> tuple[str, str]:
    """(scheme, host) of ``location`` resolved against http://testserver/ as browsers do."""
    value = re.sub(r"[\t\n\r]", "", location.strip("".join(map(chr, range(0x21)))))
    scheme_and_rest = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", value, re.S)
    if scheme_and_rest:
        scheme, rest = scheme_and_rest.group(1).lower(), scheme_and_rest.group(2)
        if scheme not in ("http", "https"):
            return scheme, ""  # javascript:, data: ...: not a page of this site
        if scheme == "http" and not re.match(r"[/\\]{2}", rest):
            return SITE  # same scheme, no authority: a path on this site
    elif re.match(r"[/\\]{2}", value):
        scheme, rest = "http", value
    else:
        return SITE  # a path
    authority = re.split(r"[/\\?#]", rest.lstrip("/\\"), maxsplit=1)[0]
    host = authority.rsplit("@", 1)[-1].split(":", 1)[0].lower()
    return scheme, host


def test_the_resolver_recognises_what_browsers_treat_as_another_host():
    assert [where_a_browser_goes(v) for v in ("/", "/proposals/x", "/?next=//x")] == [SITE] * 3
    for other in ("//evil.example", "/\\evil.example", "\t/\t/evil.example", "https:evil.example",
                  "///evil.example", "//testserver@evil.example"):  # fmt: skip
        assert where_a_browser_goes(other) == (where_a_browser_goes(other)[0], "evil.example")
    assert where_a_browser_goes("javascript:alert(1)") == ("javascript", "")


def _sign_in_raw(browser: Browser, email: str, password: str, next_value: str) -> object:
    """The sign-in form with ``next`` exactly as given, unencoded, in the body."""
    fields = urlencode({"email": email, "password": password, "csrf_token": browser.csrf_token})
    return browser.client.post(
        "/sign-in",
        content=f"{fields}&next={quote(next_value, safe='%/:@')}".encode(),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )


def test_no_next_value_leads_off_the_site(web: Web):
    proposal_id = web.propose()
    local = f"/proposals/{proposal_id}"
    ava = web.member(AVA)
    wrong: list[str] = []

    def check(channel: str, hostile: str, answer: object) -> None:
        status = getattr(answer, "status_code", None)
        location = getattr(answer, "headers", {}).get("location", "")
        if "\x00" in hostile and status == 400 and not location:
            return  # a NUL: the page that cannot read the request, going nowhere
        if status != 303 or where_a_browser_goes(location) != SITE:
            wrong.append(f"{channel} {hostile!r}: {status} to {location!r}")

    # Signed in already, the sign-in page goes straight on to next; the language switch too.
    anonymous = web.browser()
    for hostile in [local, *HOSTILE]:
        check("GET /sign-in?next=", hostile, ava.get("/sign-in", params={"next": hostile}))
        check("POST /language", hostile, ava.submit("/language", {"lang": "en", "next": hostile}))
        # Signed out, the sign-in page keeps next for later in a hidden field: the same rule.
        page = anonymous.get("/sign-in", params={"next": hostile})
        kept = re.search(r'name="next" value="([^"]*)"', page.text)
        if "\x00" in hostile and page.status_code == 400 and kept is None:
            continue  # no form, so no next kept
        if kept is None or where_a_browser_goes(kept.group(1)) != SITE:
            wrong.append(f"hidden next {hostile!r}: {kept and kept.group(1)!r}")

    # Signing in with the red team's values (one Argon2 check each); the percent-encoded one
    # raw in the body, where form decoding turns it into //evil.example.
    for hostile in RED_TEAM:
        browser = web.browser()
        browser.page_token("/sign-in")
        if hostile.startswith("%"):
            answer = _sign_in_raw(browser, AVA, web.passwords[AVA], hostile)
        else:
            answer = browser.sign_in(AVA, web.passwords[AVA], hostile)
        check("POST /sign-in", hostile, answer)
    # And through choosing a club, where next waits in the session.
    web.add_member("nora@granite.example", "Nora", [Permission.REFUND_ORDERS], ("granite", "maple"))
    nora = web.browser()
    chooser = nora.sign_in("nora@granite.example", web.passwords["nora@granite.example"],
                           "//evil.example")  # fmt: skip
    assert "Choose a club" in chooser.text
    nora.page_token("/sign-in")
    check("POST /sign-in/club", "//evil.example", nora.submit("/sign-in/club", {"club": "maple"}))

    assert wrong == []
    # The rule is not "always go home": a local next is honoured.
    assert ava.get("/sign-in", params={"next": local}).headers["location"] == local
    assert ava.submit("/language", {"lang": "en", "next": local}).headers["location"] == local
