"""Issue 23, part 5: ``/metrics`` was served to anyone on the pages' port, with proposal
counts across all clubs. Now it answers only the operator: a request with the operator's
token (``COUNTERSIGN_METRICS_TOKEN``), or, without one and with
``COUNTERSIGN_METRICS_LOCAL=1``, a request made directly from this machine
(test_metrics_behind_tcp_proxy.py). ``/healthz`` and ``/readyz`` carry no tenant data.
"""

from __future__ import annotations

from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.observability.health import METRICS_LOCAL_ENV, METRICS_TOKEN_ENV
from countersign.infrastructure.server import compose
from countersign.infrastructure.settings import SettingsError
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND, TO_CARD

TOKEN = "operator-scrape-token-0123456789abcdef"


def _client(cs: Countersign, address: str = "203.0.113.9") -> TestClient:
    return TestClient(compose(cs), raise_server_exceptions=False, client=(address, 50000))


@pytest.fixture
def busy(cs: Countersign, seeded: dict[str, Any], monkeypatch) -> Countersign:
    monkeypatch.delenv(METRICS_TOKEN_ENV, raising=False)
    cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    return cs


def test_an_outsider_does_not_get_the_metrics(busy: Countersign) -> None:
    with _client(busy) as outsider:
        answer = outsider.get("/metrics")
        unknown = outsider.get("/no-such-operator-path")
    assert answer.status_code == 404
    assert "countersign_proposals" not in answer.text
    assert (answer.status_code, answer.headers["content-type"]) == (
        unknown.status_code,
        unknown.headers["content-type"],
    )


def test_a_request_relayed_by_a_proxy_on_this_machine_does_not_get_them(busy, monkeypatch) -> None:
    monkeypatch.setenv(METRICS_LOCAL_ENV, "1")  # (without it, no local scrape at all)
    with _client(busy, "127.0.0.1") as relayed:
        for header in ("X-Forwarded-For", "Forwarded", "X-Real-IP"):
            answer = relayed.get("/metrics", headers={header: "203.0.113.9"})
            assert answer.status_code == 404, header
        assert relayed.get("/metrics").status_code == 200  # the operator's own scrape


def test_with_an_operator_token_only_its_bearer_gets_them(busy, monkeypatch) -> None:
    monkeypatch.setenv(METRICS_TOKEN_ENV, TOKEN)
    with _client(busy, "127.0.0.1") as local, _client(busy) as remote:
        assert local.get("/metrics").status_code == 404  # the token is needed from anywhere
        wrong = {"Authorization": "Bearer " + "x" * len(TOKEN)}
        assert remote.get("/metrics", headers=wrong).status_code == 404
        right = remote.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 200
        assert "countersign_proposals" in right.text
    monkeypatch.setenv(METRICS_TOKEN_ENV, "short")
    with pytest.raises(SettingsError, match="at least 24"):
        compose(busy)


def test_health_and_readiness_carry_no_tenant_data(busy, seeded) -> None:
    with _client(busy) as outsider:
        health = outsider.get("/healthz")
        ready = outsider.get("/readyz")
    assert health.json() == {"status": "ok"}
    assert ready.status_code in (200, 503)
    text = health.text + ready.text
    clubs = [org["slug"] for org in seeded["organizations"]]
    names = [org["name"] for org in seeded["organizations"]]
    for tenant in (*clubs, *names, AVA, "granite", "proposal", "pending"):
        assert tenant not in text, tenant
