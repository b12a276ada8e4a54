"""An attack run (hC): ``/metrics`` (proposal counts across every club) answered any request
from a loopback address that carried no forwarding header. A TCP-level proxy on the same
host (stunnel, haproxy in tcp mode) connects from 127.0.0.1 and adds no header, so every
request it relayed from the world got the metrics. Nothing the server sees tells such a
relayed request from the operator's own scrape, so neither is believed by default: the
operator sets ``COUNTERSIGN_METRICS_TOKEN`` (Prometheus sends it), or says with
``COUNTERSIGN_METRICS_LOCAL=1`` that nothing forwards to this port. A refused local scrape
is told why in the server's log (once), never in the answer.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.observability.health import METRICS_LOCAL_ENV, METRICS_TOKEN_ENV
from countersign.infrastructure.server import compose
from countersign.infrastructure.settings import SettingsError
from fastapi.testclient import TestClient


def _from_this_machine(cs: Countersign) -> TestClient:
    """What a TCP-level proxy's relayed request looks like: 127.0.0.1, no header added."""
    return TestClient(compose(cs), raise_server_exceptions=False, client=("127.0.0.1", 50000))


def test_a_request_relayed_by_a_tcp_proxy_does_not_get_the_metrics_by_default(
    cs: Countersign, seeded: dict[str, Any], monkeypatch, caplog
) -> None:
    monkeypatch.delenv(METRICS_TOKEN_ENV, raising=False)
    monkeypatch.delenv(METRICS_LOCAL_ENV, raising=False)
    with caplog.at_level(logging.WARNING), _from_this_machine(cs) as relayed:
        first = relayed.get("/metrics")
        second = relayed.get("/metrics")
        unknown = relayed.get("/no-such-operator-path")

    for answer in (first, second):
        assert answer.status_code == 404
        assert "countersign_proposals" not in answer.text
        assert answer.headers["content-type"] == unknown.headers["content-type"]
        assert METRICS_LOCAL_ENV not in answer.text  # the answer says nothing of why
    told = [r.getMessage() for r in caplog.records if "/metrics asked" in r.getMessage()]
    assert told == [
        "/metrics asked from this machine and refused: set COUNTERSIGN_METRICS_TOKEN "
        "(Prometheus sends it as a bearer token), or COUNTERSIGN_METRICS_LOCAL=1 if no proxy "
        "of any kind forwards to this port (docs/deploy.md, Metrics)"
    ]


def test_the_operator_says_nothing_forwards_here_and_the_local_scrape_works(
    cs: Countersign, seeded: dict[str, Any], monkeypatch
) -> None:
    monkeypatch.delenv(METRICS_TOKEN_ENV, raising=False)
    monkeypatch.setenv(METRICS_LOCAL_ENV, "1")
    with _from_this_machine(cs) as local:
        answer = local.get("/metrics")
        relayed = local.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
    assert answer.status_code == 200
    assert "countersign_proposals" in answer.text
    assert relayed.status_code == 404  # a reverse proxy's header still refuses it
    with TestClient(compose(cs), client=("203.0.113.9", 50000)) as remote:
        assert remote.get("/metrics").status_code == 404


@pytest.mark.parametrize("wrong", ["maybe", "2"])
def test_a_wrong_value_stops_the_server_before_it_serves(
    cs: Countersign, monkeypatch, wrong: str
) -> None:
    monkeypatch.setenv(METRICS_LOCAL_ENV, wrong)
    with pytest.raises(SettingsError, match="COUNTERSIGN_METRICS_LOCAL must be 1 or 0"):
        compose(cs)
