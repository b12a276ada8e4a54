"""An agent token that keeps asking to decide cannot fill the operator's log with warnings.

An agent token asking to approve, decline, edit or change a club's rules is refused (403
``agent-cannot-decide``) and, being worth a look, logged as a WARNING. One warning for each
request: an attack run's agent sent 2,000 approvals in a loop and wrote 2,000 warnings, the
same line each time. At the default level (``COUNTERSIGN_LOG_LEVEL=WARNING``, no access
lines) they were the log, and the alerting that listens to warnings: a tenant's agent buried
every other club's warnings (an outage, a locked table) among its own. Now the
warning says which token and club it was, once a while (``Countersign.outages``, as an
outage's: the next one after 30 s counts the refusals not logged since); every request is
still refused (and its access line, at INFO, stands).
"""

from __future__ import annotations

import logging

from countersign.application.authorization import Caller
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.attacks.conftest import snapshot
from tests.conftest import AVA, MIA, REFUND, TO_CARD

AGENT_DECIDING = "an agent token asked to decide"


def test_an_agent_tokens_loop_of_decisions_is_one_warning_naming_it(cs, seeded, caplog):
    granite = issue_token(cs, "granite", "loop-bot", ["orders.refund"], issued_by=AVA, kind="agent")
    maple = issue_token(cs, "maple", "maple-bot", ["orders.refund"], issued_by=MIA, kind="agent")
    orders = seeded["orders"]
    avas, mias = (
        cs.access.propose(
            Caller(who, club), operation=REFUND, resource_id=orders[order], request=TO_CARD
        ).proposal_id
        for who, club, order in ((AVA, "granite", "refund-ok"), (MIA, "maple", "maple-refund"))
    )
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        before = snapshot(cs)
        with caplog.at_level(logging.WARNING, logger="countersign.http"):
            for _ in range(40):
                answer = client.post(
                    f"/api/v1/proposals/{avas}/approve",
                    headers={"Authorization": f"Bearer {granite.token}"},
                )
                assert answer.status_code == 403
                assert answer.json()["type"].endswith("agent-cannot-decide")
            # Another club's agent, meanwhile, is said at once: its own token, its own line.
            answer = client.post(
                f"/api/v1/proposals/{mias}/decline",
                headers={"Authorization": f"Bearer {maple.token}"},
            )
            assert answer.status_code == 403
    warned = [r.getMessage() for r in caplog.records if AGENT_DECIDING in r.getMessage()]
    assert len(warned) == 2, warned
    assert "'loop-bot' of granite" in warned[0]
    assert "'maple-bot' of maple" in warned[1]
    assert snapshot(cs) == before  # nothing recorded, no service action either
