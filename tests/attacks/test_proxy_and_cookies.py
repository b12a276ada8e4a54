"""Attacks on the server's configuration (issue 10, part 3).

* ``countersign serve --host 127.0.0.1`` used to force insecure cookies whatever
  COUNTERSIGN_SECURE_COOKIES said, so behind an HTTPS reverse proxy on the same machine the
  session cookie went without ``Secure`` and without the ``__Host-`` prefix. An explicit
  setting now always wins; a loopback host only changes the default.
* uvicorn's defaults believed ``X-Forwarded-For``/``X-Forwarded-Proto`` from any loopback
  client, so a local client could give every sign-in attempt a new address and never reach
  the per-address throttle. Forwarded headers are now believed only from the addresses in
  COUNTERSIGN_TRUSTED_PROXIES (nobody by default). The tests run the app the way uvicorn
  serves it with that configuration: ``uvicorn.Config(...).load()`` and a real server on a
  free port.
"""

from __future__ import annotations

import http.client
import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvicorn
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.entrypoints.cli import admin, main
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.entrypoints.web.throttle import address_key
from countersign.infrastructure.server_settings import (
    SECURE_ENV,
    TRUSTED_PROXIES_ENV,
    trusted_proxies_from_env,
    uvicorn_proxy_options,
)
from countersign.infrastructure.settings import DATABASE_URL_ENV, ORIGIN_ENV, SettingsError
from fastapi.testclient import TestClient

from tests.conftest import AVA, count_events
from tests.servers import serving
from tests.test_web_pages import CSRF

WRONG = "not-the-password-at-all"
SPOOFED = ["203.0.113.1", "203.0.113.2", "203.0.113.3"]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (SECURE_ENV, TRUSTED_PROXIES_ENV, "FORWARDED_ALLOW_IPS", ORIGIN_ENV):
        monkeypatch.delenv(name, raising=False)


def served(app: Any) -> Any:
    """``app`` wrapped exactly as uvicorn serves it with the configured proxy settings."""
    config = uvicorn.Config(
        app, log_config=None, lifespan="off", **uvicorn_proxy_options(trusted_proxies_from_env())
    )
    config.load()
    return config.loaded_app


async def echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """What the application is told about the connection."""
    body = json.dumps({"client": scope["client"][0], "scheme": scope["scheme"]}).encode()
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def seen_by_app(peer: str) -> dict[str, str]:
    client = TestClient(served(echo), client=(peer, 50000))
    forwarded = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}
    return dict(client.get("/", headers=forwarded).json())


# -- forwarded headers ------------------------------------------------------------------------


@pytest.mark.parametrize("peer", ["127.0.0.1", "::1", "198.51.100.20"])
def test_forwarded_headers_are_ignored_from_everyone_by_default(peer):
    assert uvicorn_proxy_options(trusted_proxies_from_env())["proxy_headers"] is False
    assert seen_by_app(peer) == {"client": peer, "scheme": "http"}


def test_uvicorns_own_variable_does_not_reopen_the_hole(monkeypatch):
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")
    assert seen_by_app("127.0.0.1") == {"client": "127.0.0.1", "scheme": "http"}


@pytest.mark.parametrize(
    ("trusted", "peer", "honoured"),
    [
        ("127.0.0.1", "127.0.0.1", True),
        ("127.0.0.1", "::1", False),
        ("127.0.0.1", "198.51.100.20", False),
        ("127.0.0.1, ::1", "::1", True),
        ("10.0.0.0/8", "10.1.2.3", True),
        ("10.0.0.0/8", "127.0.0.1", False),
    ],
)
def test_forwarded_headers_are_honoured_only_from_a_configured_proxy(
    monkeypatch, trusted, peer, honoured
):
    monkeypatch.setenv(TRUSTED_PROXIES_ENV, trusted)
    if honoured:
        assert seen_by_app(peer) == {"client": "203.0.113.9", "scheme": "https"}
    else:
        assert seen_by_app(peer) == {"client": peer, "scheme": "http"}


@pytest.mark.parametrize("value", ["*", "proxy.example", "10.0.0.1/8", "127.0.0.1;::1"])
def test_a_trusted_proxy_must_be_an_address_or_a_network(monkeypatch, value):
    monkeypatch.setenv(TRUSTED_PROXIES_ENV, value)
    with pytest.raises(SettingsError, match=TRUSTED_PROXIES_ENV):
        trusted_proxies_from_env()


# -- the sign-in throttle's address ---------------------------------------------------------


@pytest.fixture
def pages(cs: Countersign, seeded: dict[str, Any]) -> Any:
    seed_passwords(cs)
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    return app


def counted_addresses(cs: Countersign) -> list[str]:
    """The address keys the sign-in throttle holds failures for, one per failure."""
    with cs.sql.reading() as cursor:
        rows = cursor.execute(
            "SELECT digest FROM sign_in_failures WHERE scope = ? ORDER BY failed_at, digest",
            ("address",),
        ).fetchall()
    return [str(row[0]) for row in rows]


def fail_sign_in(client: TestClient, forwarded_for: str) -> None:
    token = CSRF.search(client.get("/sign-in").text).group(1)
    answer = client.post(
        "/sign-in",
        data={"email": AVA, "password": WRONG, "csrf_token": token},
        headers={"X-Forwarded-For": forwarded_for},
    )
    assert answer.status_code == 200
    assert "That email and password do not match." in answer.text


def test_a_loopback_client_cannot_rotate_its_throttle_address(cs, pages):
    before = count_events(cs)
    local = TestClient(served(pages), client=("127.0.0.1", 50000), follow_redirects=False)
    for spoofed in SPOOFED:
        fail_sign_in(local, spoofed)
    assert counted_addresses(cs) == [address_key("127.0.0.1")] * len(SPOOFED)
    assert count_events(cs) == before


def test_a_configured_proxy_names_the_client_the_throttle_counts(cs, pages, monkeypatch):
    monkeypatch.setenv(TRUSTED_PROXIES_ENV, "127.0.0.1")
    proxy = TestClient(served(pages), client=("127.0.0.1", 50000), follow_redirects=False)
    fail_sign_in(proxy, "203.0.113.50")
    # A client that is not the proxy still counts as itself, whatever it sends.
    stranger = TestClient(served(pages), client=("198.51.100.20", 50000), follow_redirects=False)
    fail_sign_in(stranger, "203.0.113.51")
    assert sorted(counted_addresses(cs)) == sorted(
        [address_key("203.0.113.50"), address_key("198.51.100.20")]
    )


@pytest.fixture
def real_server(pages: Any) -> Iterator[int]:
    """The pages behind a real uvicorn on 127.0.0.1, configured as ``countersign serve`` is."""
    with serving(
        pages, log_config=None, **uvicorn_proxy_options(trusted_proxies_from_env())
    ) as running:
        yield running.port


def _request(
    port: int, method: str, path: str, body: str = "", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body or None, headers=headers or {})
        response = connection.getresponse()
        cookies = [v for k, v in response.getheaders() if k.lower() == "set-cookie"]
        return response.status, {"set-cookie": "\n".join(cookies)}, response.read().decode()
    finally:
        connection.close()


def test_a_real_server_on_loopback_ignores_forwarded_headers(cs, real_server):
    before = count_events(cs)
    for spoofed in SPOOFED:
        status, headers, page = _request(real_server, "GET", "/sign-in")
        assert status == 200
        cookie = headers["set-cookie"].split(";")[0]
        token = CSRF.search(page).group(1)
        form = f"email={AVA}&password={WRONG}&csrf_token={token}"
        status, _, page = _request(
            real_server,
            "POST",
            "/sign-in",
            form,
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Cookie": cookie,
                "X-Forwarded-For": spoofed,
                "X-Forwarded-Proto": "https",
            },
        )
        assert status == 200
        assert "That email and password do not match." in page
    assert counted_addresses(cs) == [address_key("127.0.0.1")] * len(SPOOFED)
    assert count_events(cs) == before


# -- Secure cookies and `countersign serve` ---------------------------------------------------


@pytest.fixture
def serve(
    database_url: str,
    cs: Countersign,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., dict[str, Any]]:
    """Run ``countersign serve`` with uvicorn replaced by a probe of what it would serve, on a
    database countersign has made (``cs``: serve makes none)."""

    def run(host: str, port: int = 8000, **environment: str) -> dict[str, Any]:
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        seen: dict[str, Any] = {}
        before = {name: os.environ.get(name) for name in (SECURE_ENV, DATABASE_URL_ENV, ORIGIN_ENV)}

        def fake_run(config: Any) -> bool:
            # The server builds its own application from the environment, as each uvicorn
            # worker would: by calling the factory `serve` names.
            app = config.app
            assert app == "countersign.infrastructure.server:create_app"
            assert config.factory is True
            seen["options"] = {
                "proxy_headers": config.proxy_headers,
                "forwarded_allow_ips": config.forwarded_allow_ips,
            }
            built = uvicorn.importer.import_from_string(app)()
            assert built.state.countersign.settings.database_url == database_url
            seen["origins"] = built.state.countersign.settings.webauthn_origins
            with TestClient(built, base_url="https://testserver", follow_redirects=False) as https:
                page = https.get("/sign-in")
                seen["cookie"] = page.headers.get("set-cookie", "")
                seen["hsts"] = page.headers.get("strict-transport-security")
                token = CSRF.search(page.text).group(1)
                switched = https.post("/language", data={"lang": "fr", "csrf_token": token})
                seen["language_cookie"] = switched.headers.get("set-cookie", "")
            return True

        # What `serve` runs the configured server with (one worker or several), replaced, and
        # its probe of the address (192.0.2.10 is no address of this machine; port 8000 may be
        # taken here): tests/test_operations.py tests the probe.
        monkeypatch.setattr(admin, "_run", fake_run)
        monkeypatch.setattr(admin, "check_port_free", lambda *address: None)
        seen["status"] = main(
            ["serve", "--host", host, "--port", str(port), "--database", database_url]
        )
        seen["output"] = capsys.readouterr()
        # What `serve` handed the server through the environment is taken back afterwards.
        assert {name: os.environ.get(name) for name in before} == before
        return seen

    return run


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
@pytest.mark.parametrize("value", ["1", "true", "on"])
def test_an_explicit_secure_setting_wins_on_a_loopback_host(serve, host, value):
    seen = serve(host, **{SECURE_ENV: value})
    assert seen["status"] == 0
    assert seen["cookie"].startswith("__Host-countersign=")
    assert "Secure" in seen["cookie"].split("; ")
    assert "HttpOnly" in seen["cookie"].split("; ")
    assert seen["hsts"] is not None
    assert seen["language_cookie"].startswith("__Host-countersign-lang=fr;")
    assert "Secure" in seen["language_cookie"].split("; ")
    assert "secure cookies on" in seen["output"].err


@pytest.mark.parametrize(
    ("host", "environment", "secure"),
    [
        ("127.0.0.1", {}, False),  # loopback: plain-HTTP local use by default
        ("localhost", {}, False),
        ("0.0.0.0", {}, True),  # anywhere else: secure by default
        ("192.0.2.10", {}, True),
        ("0.0.0.0", {SECURE_ENV: "0"}, False),  # an explicit off wins too
        ("127.0.0.1", {SECURE_ENV: "off"}, False),
    ],
)
def test_loopback_only_changes_the_default(serve, host, environment, secure):
    seen = serve(host, **environment)
    assert seen["status"] == 0
    if secure:
        assert seen["cookie"].startswith("__Host-countersign=")
        assert "Secure" in seen["cookie"].split("; ")
    else:
        assert seen["cookie"].startswith("countersign_session=")
        assert "Secure" not in seen["cookie"].split("; ")
        assert seen["hsts"] is None


def test_serve_trusts_no_forwarded_headers_unless_told(serve):
    seen = serve("127.0.0.1")
    assert seen["options"]["proxy_headers"] is False
    assert seen["options"]["forwarded_allow_ips"] == []
    assert "forwarded headers trusted from nobody" in seen["output"].err

    seen = serve("127.0.0.1", **{TRUSTED_PROXIES_ENV: "127.0.0.1, ::1", SECURE_ENV: "1"})
    assert seen["options"]["proxy_headers"] is True
    assert seen["options"]["forwarded_allow_ips"] == ["127.0.0.1", "::1"]


@pytest.mark.parametrize(
    ("port", "setting", "origins"),
    [
        (8000, {}, ("http://localhost:8000",)),
        (8765, {}, ("http://localhost:8765",)),  # the port served, not 8000
        (8765, {ORIGIN_ENV: "https://cs.example.org"}, ("https://cs.example.org",)),
        (8765, {"COUNTERSIGN_WEBAUTHN_RP_ID": "cs.example.org"}, ("https://cs.example.org",)),
    ],
)
def test_passkeys_verify_from_the_origin_serve_listens_on(serve, port, setting, origins):
    """A passkey's assertion verifies only from the page's own origin: by default on localhost,
    the port ``serve`` was given; a configured origin or another relying party is kept."""
    seen = serve("127.0.0.1", port, **setting)
    assert seen["status"] == 0
    assert seen["origins"] == origins


@pytest.mark.parametrize(
    "environment",
    [{SECURE_ENV: "maybe"}, {TRUSTED_PROXIES_ENV: "*"}, {TRUSTED_PROXIES_ENV: "proxy.example"}],
)
def test_a_wrong_setting_stops_serve_before_anything_is_served(serve, environment):
    seen = serve("127.0.0.1", **environment)
    assert seen["status"] == 2
    assert "options" not in seen  # uvicorn never ran
    name = next(iter(environment))
    assert name in seen["output"].err  # a refusal says why on stderr
    assert seen["output"].out == ""
    assert "Traceback" not in seen["output"].out + seen["output"].err


def test_the_session_cookie_never_depends_on_the_scheme_a_client_claims(cs, pages):
    """With secure cookies off (plain HTTP), a client claiming HTTPS changes nothing."""
    local = TestClient(served(pages), client=("127.0.0.1", 50000))
    page = local.get("/sign-in", headers={"X-Forwarded-Proto": "https"})
    cookie = page.headers["set-cookie"]
    assert cookie.startswith("countersign_session=")
    assert "strict-transport-security" not in page.headers
    assert re.search(r"Max-Age=\d+", cookie)
