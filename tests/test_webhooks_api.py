"""The webhooks in the JSON API: /api/v1/webhooks..., for tokens holding webhooks.manage."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from countersign.domain.club.organization import Organization
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import notification_sender
from fastapi.testclient import TestClient
from standardwebhooks.webhooks import Webhook

from tests.conftest import AVA, BEN, MIA, REFUND, TO_CARD
from tests.receivers import (
    allow_loopback,  # noqa: F401 - autouse
    free_port,
    receiving,
)

HOOKS = "/api/v1/webhooks"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def client(cs: Countersign, seeded: dict[str, Any]) -> Iterator[TestClient]:
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def manager(cs: Countersign, seeded: dict[str, Any]) -> str:
    return issue_token(
        cs, "granite", "hooks-bot", ["webhooks.manage"], issued_by=AVA, kind="approver"
    ).token


def test_a_service_registers_lists_and_removes_an_endpoint(cs, seeded, client, manager):
    with receiving() as receiver:
        added = client.post(HOOKS, headers=auth(manager), json={"url": receiver.url})
        assert added.status_code == 201, added.text
        document = added.json()
        assert document["secret"].startswith("whsec_")
        assert document["organization"] == "granite"
        listed = client.get(HOOKS, headers=auth(manager)).json()
        assert listed == {
            "items": [
                {"endpoint_id": document["endpoint_id"], "url": receiver.url, "added_by": AVA}
            ]
        }
        cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=seeded["orders"]["refund-ok"],
            request=TO_CARD,
        )
        notification_sender(cs, NotifySettings(public_url="https://club.example")).run_once()
        [request] = receiver.received
        Webhook(document["secret"]).verify(request.body, request.headers)
    [delivery] = client.get(f"{HOOKS}/deliveries", headers=auth(manager)).json()["items"]
    assert delivery["status"] == "delivered"
    assert delivery["event_id"] == request.headers["webhook-id"]
    assert delivery["attempt_log"][0]["status_code"] == 200
    removed = client.delete(f"{HOOKS}/{document['endpoint_id']}", headers=auth(manager))
    assert removed.json() == {"endpoint_id": document["endpoint_id"], "removed": True}
    assert client.get(HOOKS, headers=auth(manager)).json() == {"items": []}
    gone = client.delete(f"{HOOKS}/{document['endpoint_id']}", headers=auth(manager))
    assert gone.status_code == 404


def test_dead_letters_are_listed_and_redelivered_over_the_api(cs, seeded, client, manager):
    port = free_port()
    client.post(HOOKS, headers=auth(manager), json={"url": f"http://127.0.0.1:{port}/h"})
    cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    one_try = NotifySettings(max_attempts=1)
    assert notification_sender(cs, one_try).run_once().dead == 1
    [dead] = client.get(f"{HOOKS}/deliveries?dead=true", headers=auth(manager)).json()["items"]
    assert dead["status"] == "dead"
    assert dead["attempt_log"][0]["result"] == "failed: could not connect"
    assert dead["last_error"] == "failed: could not connect"
    path = f"{HOOKS}/deliveries/{dead['delivery_id']}/redeliver"
    with receiving(port=port) as receiver:
        assert client.post(path, headers=auth(manager)).json() == {
            "redelivered": [dead["delivery_id"]]
        }
        assert notification_sender(cs, one_try).run_once().delivered == 1
        assert len(receiver.received) == 1
    delivered = client.post(path, headers=auth(manager))  # not dead any more
    assert delivered.status_code == 404
    assert "only a delivery whose last try failed" in delivered.json()["detail"]
    everything = client.post(f"{HOOKS}/dead-letters/redeliver", headers=auth(manager))
    assert everything.json() == {"redelivered": []}


def test_a_dead_letter_of_a_removed_endpoint_says_so_and_is_not_redelivered(
    cs, seeded, client, manager
):
    """It was put back in line by name and by "redeliver all", and failed again at once:
    nothing is there to deliver it to. 409 says why, and what to do."""
    added = client.post(
        HOOKS, headers=auth(manager), json={"url": f"http://127.0.0.1:{free_port()}/h"}
    ).json()
    cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    assert notification_sender(cs, NotifySettings(max_attempts=1)).run_once().dead == 1
    assert client.delete(f"{HOOKS}/{added['endpoint_id']}", headers=auth(manager)).is_success

    [dead] = client.get(f"{HOOKS}/deliveries?dead=true", headers=auth(manager)).json()["items"]
    assert dead["endpoint_removed"] is True
    named = client.post(
        f"{HOOKS}/deliveries/{dead['delivery_id']}/redeliver", headers=auth(manager)
    )
    assert named.status_code == 409, named.text
    assert named.json()["detail"] == (
        "This dead letter was for a webhook endpoint that has since been removed, so there is "
        "nothing to deliver it to and it is not redelivered. To receive new notifications "
        "there, add the endpoint again."
    )
    everything = client.post(f"{HOOKS}/dead-letters/redeliver", headers=auth(manager))
    assert everything.json() == {"redelivered": []}
    [still] = client.get(f"{HOOKS}/deliveries?dead=true", headers=auth(manager)).json()["items"]
    assert still["attempts"] == 1


@pytest.mark.parametrize("named", ["dlv_%00", "dlv_a%00b", "%00"])
def test_a_delivery_id_holding_a_nul_is_refused_on_every_backend(
    cs, seeded, client, manager, named
):
    """A NUL byte, which PostgreSQL's text refuses, in a delivery id (it was a 500 on
    PostgreSQL): the gate's 400 for any path or query holding one (the ledger itself also
    reads such an id as unknown, for the command line), and nothing is put back in line."""
    port = free_port()
    client.post(HOOKS, headers=auth(manager), json={"url": f"http://127.0.0.1:{port}/h"})
    cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    assert notification_sender(cs, NotifySettings(max_attempts=1)).run_once().dead == 1
    again = client.post(f"{HOOKS}/deliveries/{named}/redeliver", headers=auth(manager))
    assert again.status_code == 400, again.text
    assert "holds a NUL character" in again.json()["detail"]
    paged = client.get(f"{HOOKS}/deliveries?before={named}", headers=auth(manager))
    assert paged.status_code == 400, paged.text
    assert paged.headers["content-type"].startswith("application/problem+json")
    [dead] = client.get(f"{HOOKS}/deliveries?dead=true", headers=auth(manager)).json()["items"]
    assert dead["status"] == "dead"


@pytest.mark.parametrize(
    "url", ["ftp://x.example/h", "javascript:alert(1)", "https://u:p@x.example/", "no url"]
)
def test_a_bad_url_is_a_422_naming_the_field(client, manager, url):
    refused = client.post(HOOKS, headers=auth(manager), json={"url": url})
    assert refused.status_code == 422
    assert refused.headers["content-type"].startswith("application/problem+json")
    [problem] = refused.json()["problems"]
    assert problem["field"] == "url"
    assert "webhook URL" in problem["message"]
    assert client.get(HOOKS, headers=auth(manager)).json() == {"items": []}


def test_permissions_and_tenants(cs, seeded, client, manager):
    refunds_only = issue_token(
        cs, "granite", "refunds", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token
    assert client.get(HOOKS, headers=auth(refunds_only)).status_code == 403
    # A token with the scope, whose member has since lost the permission: 403.
    granite = cs.store.get(Organization.create_id("granite"), Organization)
    granite.change_permissions(BEN, ["webhooks.manage"])
    cs.store.save(granite)
    ben = issue_token(
        cs, "granite", "ben-bot", ["webhooks.manage"], issued_by=BEN, kind="approver"
    ).token
    granite.change_permissions(BEN, [])
    cs.store.save(granite)
    assert client.post(HOOKS, headers=auth(ben), json={"url": "https://x.example"}).status_code == (
        403
    )
    assert client.get(HOOKS).status_code == 401
    # Another club's endpoint and delivery ids are simply not found.
    maple = issue_token(
        cs, "maple", "maple-hooks", ["webhooks.manage"], issued_by=MIA, kind="approver"
    ).token
    granite_endpoint = client.post(
        HOOKS, headers=auth(manager), json={"url": "https://granite.example/h"}
    ).json()["endpoint_id"]
    assert client.delete(f"{HOOKS}/{granite_endpoint}", headers=auth(maple)).status_code == 404
    assert client.get(HOOKS, headers=auth(maple)).json() == {"items": []}
    assert len(client.get(HOOKS, headers=auth(manager)).json()["items"]) == 1


def test_a_duplicate_url_is_a_409_that_says_so(cs, seeded, client, manager):
    url = "https://hooks.example/countersign"
    assert client.post(HOOKS, headers=auth(manager), json={"url": url}).status_code == 201
    again = client.post(HOOKS, headers=auth(manager), json={"url": url})
    assert again.status_code == 409
    assert again.json()["type"] == "urn:countersign:problem:rejected"
    assert "already registered" in again.json()["detail"]
    assert len(client.get(HOOKS, headers=auth(manager)).json()["items"]) == 1


def test_deliveries_page_on_by_the_last_one_listed_and_new_ones_do_not_shift_the_pages(
    cs, seeded, client, manager, clock
):
    # An integrator auditing failures lists every delivery, not only the newest 100: each
    # full page names where the next starts, and a delivery made between two pages neither
    # repeats nor hides one. (They were at most ?limit=100, with no way further back.)
    def propose_on(order: str) -> None:
        cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=seeded["orders"][order],
            request=TO_CARD,
        )

    with receiving() as receiver:
        client.post(HOOKS, headers=auth(manager), json={"url": receiver.url})
        client.post(HOOKS, headers=auth(manager), json={"url": receiver.url + "/second"})
        for order in ("refund-ok", "refund-stale"):
            propose_on(order)
        notification_sender(cs, NotifySettings(public_url="https://club.example")).run_once()
        everything = client.get(f"{HOOKS}/deliveries?limit=100", headers=auth(manager)).json()
        all_ids = [d["delivery_id"] for d in everything["items"]]
        assert len(all_ids) >= 4  # two proposals, two endpoints (and e-mails)
        assert everything["next_before"] is None

        paged: list[str] = []
        page = client.get(f"{HOOKS}/deliveries?limit=2", headers=auth(manager)).json()
        clock.advance(minutes=1)  # later, as a delivery made after a page is
        propose_on("refund-declined")  # made between two pages: on none of these
        notification_sender(cs, NotifySettings(public_url="https://club.example")).run_once()
        while True:
            paged += [d["delivery_id"] for d in page["items"]]
            assert len(page["items"]) <= 2
            if page["next_before"] is None:
                break
            page = client.get(
                f"{HOOKS}/deliveries",
                params={"limit": 2, "before": page["next_before"]},
                headers=auth(manager),
            ).json()
    assert paged == all_ids
    newest = client.get(f"{HOOKS}/deliveries?limit=100", headers=auth(manager)).json()["items"]
    assert len(newest) > len(all_ids)
    assert [d["delivery_id"] for d in newest][-len(all_ids) :] == all_ids

    # Another club's delivery id, or none at all, is not a place to start from.
    maple = issue_token(
        cs, "maple", "hooks-bot", ["webhooks.manage"], issued_by=MIA, kind="approver"
    ).token
    for token, before in ((maple, all_ids[0]), (manager, "no-such-delivery")):
        refused = client.get(f"{HOOKS}/deliveries", params={"before": before}, headers=auth(token))
        assert refused.status_code == 404, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
