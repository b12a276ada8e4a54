"""A path with a slash added was redirected to whatever host the request named, bare.

An attack run (hC) on ``countersign serve`` sent ``GET /webhooks/`` (a slash added to a page's
path) with ``Host: evil.example``: Starlette's router answered it itself, ``307`` to
``http://evil.example/webhooks``, an absolute address built from the request's Host header
(and its scheme: ``http://`` behind a TLS proxy), and without any of the pages' headers (no
Content-Security-Policy, no ``X-Frame-Options``, no ``Cache-Control: no-store``), though every
other page, error page and redirect carries them. The same for every route of the pages (a
POST's form, password included, sent again by the browser to that address: a 307 keeps the
method and the body), for the API (``/api/v1/inbox/``) and for ``mcp --http`` (``POST /mcp/``,
which an MCP client follows with its JSON-RPC body). Now no server redirects a slash away:
such a path is an unknown one, answered as any other unknown path is on that surface, with
that surface's headers, and no answer names a host; ``/mcp/`` alone is served as ``/mcp``,
where MCP clients set up with it reached it through the redirect.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from countersign.infrastructure.identity.tokens import issue_token
from fastapi import FastAPI
from starlette.routing import Route

from tests.attacks.conftest import Api, Web
from tests.conftest import AVA
from tests.servers import serving
from tests.support.mcp_requests import initialize

EVIL = "evil.example"


def _absolute(location: str) -> bool:
    """Whether a Location names a host of its own (a scheme, or a path that starts ``//``
    or ``/\\``, which browsers read as a host)."""
    value = location.strip()
    return bool(urlsplit(value).scheme) or bool(re.match(r"[/\\]{2}", value))


def _page_paths(app: FastAPI, ids: dict[str, str]) -> list[tuple[str, str]]:
    """(method, path) of every route of the pages, its ids filled in, with a slash added."""
    paths = []
    for route in app.routes:
        if not isinstance(route, Route) or route.path.startswith(("/api/", "/assets/")):
            continue
        if route.path in ("/openapi.json", "/healthz", "/readyz", "/metrics"):
            continue
        path = route.path
        for name, value in ids.items():
            path = re.sub(r"\{" + name + r"(:[a-z]+)?\}", value, path)
        for method in sorted((route.methods or set()) - {"HEAD"}):
            paths.append((method, path.rstrip("/") + "/"))
    return paths


def test_no_page_path_with_a_slash_added_is_sent_to_the_requests_host(web: Web, app: FastAPI):
    ids = {
        "proposal_id": web.propose(),
        "section": "orders",
        "resource_id": web.seeded["orders"]["refund-ok"],
        "name": "pages.css",
    }
    paths = _page_paths(app, ids)
    assert ("GET", "/webhooks/") in paths
    assert ("POST", "/sign-in/") in paths
    ava = web.member(AVA)
    for browser in (web.browser(), ava):
        for method, path in paths:
            answer = browser.client.request(
                method,
                path,
                headers={"host": EVIL},
                data={"csrf_token": ava.csrf_token} if method == "POST" else None,
            )
            where = f"{method} {path}"
            assert answer.status_code != 307, where
            assert not _absolute(answer.headers.get("location", "")), (where, answer.headers)
            assert "frame-ancestors 'none'" in answer.headers.get("content-security-policy", "")
            assert answer.headers.get("x-frame-options") == "DENY", where
            assert answer.headers.get("cache-control") == "no-store", where


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/v1/inbox/"), ("POST", "/api/v1/proposals/"), ("GET", "/api/v1/policies/")],
)
def test_no_api_path_with_a_slash_added_is_sent_to_the_requests_host(
    api: Api, method: str, path: str
):
    answer = api.client.request(
        method,
        path,
        headers={**api.headers(AVA), "host": EVIL},
        json={} if method == "POST" else None,
        follow_redirects=False,
    )

    assert answer.status_code == 404, answer.headers
    assert "location" not in answer.headers
    assert answer.json()["type"] == "urn:countersign:problem:not-found"
    assert answer.headers["cache-control"] == "no-store"


@pytest.fixture
def mcp_base(cs: Any, seeded: Any) -> Iterator[str]:
    from countersign.infrastructure.entrypoints.mcp import http_app

    with serving(http_app(cs), lifespan="on") as running:
        yield running.base


def test_the_mcp_path_with_a_slash_added_is_not_sent_to_the_requests_host(cs: Any, mcp_base: str):
    """Nor refused: an MCP client set up with ``/mcp/`` (as some are) reached the endpoint
    through the redirect; it is served there itself, never redirected."""
    token = issue_token(cs, "granite", "agent", ["orders.refund"], issued_by=AVA, kind="agent")
    headers = {
        "Authorization": f"Bearer {token.token}",
        "Accept": "application/json, text/event-stream",
    }
    with httpx2.Client(timeout=10) as client:
        evil = client.post(
            f"{mcp_base}/mcp/", json=initialize("slash"), headers={**headers, "Host": EVIL}
        )
        served = client.post(f"{mcp_base}/mcp/", json=initialize("slash"), headers=headers)

    assert evil.status_code != 307, evil.headers
    assert "location" not in evil.headers
    assert served.status_code == 200, served.text
    assert "location" not in served.headers
    assert served.headers.get("mcp-session-id")
    assert '"serverInfo"' in served.text
