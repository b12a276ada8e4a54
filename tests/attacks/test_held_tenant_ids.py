"""Held: another club's proposal ids are as unknown as ids that name nothing.

Mia manages the maple club. She holds granite proposal ids (leaked in a screenshot, say) and
tries them on every API route and every page that takes one: she gets the very 404 an unknown
id gets (status, body apart from the correlation id, headers), in every spelling of the id,
and as fast; and nothing happens to granite's proposal.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from httpx2 import Response

from tests.attacks.conftest import (
    Api,
    Web,
    assert_nothing_changed,
    assert_similar_timing,
    header_shape,
    problem,
    snapshot,
)
from tests.conftest import MIA

Request = Callable[[str], Response]


def _api_routes(api: Api) -> dict[str, Request]:
    """Every API route that takes a proposal id, as Mia (full permissions in maple)."""
    base = "/api/v1/proposals/"
    return {
        "GET card": lambda pid: api.get(base + pid, as_=MIA),
        "POST approve": lambda pid: api.post(f"{base}{pid}/approve", as_=MIA),
        "POST decline": lambda pid: api.post(f"{base}{pid}/decline", {"note": "no"}, as_=MIA),
        "GET history": lambda pid: api.get(f"{base}{pid}/history", as_=MIA),
        "GET status": lambda pid: api.get(f"{base}{pid}/status", as_=MIA),
    }


def _page_routes(web: Web) -> dict[str, Request]:
    """Every page that takes a proposal id, in Mia's signed-in browser, forms with her token."""
    mia = web.member(MIA)
    return {
        "page card": lambda pid: mia.get(f"/proposals/{pid}"),
        "page approve form": lambda pid: mia.submit(f"/proposals/{pid}/approve", {}),
        "page decline form": lambda pid: mia.submit(f"/proposals/{pid}/decline", {"note": "no"}),
        "page status": lambda pid: mia.get(f"/proposals/{pid}/status"),
    }


def _spellings(proposal_id: str) -> list[str]:
    """Ways to write one id that a lenient parser would accept."""
    hex_id = uuid.UUID(proposal_id).hex
    return [
        proposal_id,
        proposal_id.upper(),
        hex_id,
        f"{{{proposal_id}}}",
        f"urn:uuid:{proposal_id}",
        f" {proposal_id} ",
    ]


def test_mia_gets_the_unknown_id_answer_for_every_granite_id_on_every_route(api: Api, web: Web):
    granite_id = api.propose()  # Ava's pending card refund
    unknown_id = str(uuid.uuid4())
    api_routes, page_routes = _api_routes(api), _page_routes(web)
    before = snapshot(api.cs)

    for foreign, unknown in zip(_spellings(granite_id), _spellings(unknown_id), strict=True):
        for name, request in api_routes.items():
            theirs, nothing = request(foreign), request(unknown)
            assert theirs.status_code == 404, (name, foreign, theirs.text)
            assert problem(theirs) == problem(nothing), (name, foreign)
            assert header_shape(theirs) == header_shape(nothing), (name, foreign)
            assert granite_id not in theirs.text
        for name, request in page_routes.items():
            theirs, nothing = request(foreign), request(unknown)
            assert theirs.status_code == 404, (name, foreign)
            assert theirs.content == nothing.content, (name, foreign)
            assert header_shape(theirs) == header_shape(nothing), (name, foreign)
            assert "Not found" in theirs.text
            assert granite_id not in theirs.text

    assert_nothing_changed(api.cs, before)
    assert web.status(granite_id) == "pending"
    assert api.get(f"/api/v1/proposals/{granite_id}").json()["status"] == "pending"  # Ava's view


def test_a_granite_id_answers_mia_as_fast_as_an_unknown_one(api: Api, web: Web):
    granite_ids = [api.propose(order) for order in ("refund-ok", "refund-stale")]
    routes = list(_api_routes(api).items()) + list(_page_routes(web).items())
    unknown_ids = [str(uuid.uuid4()) for _ in range(4)]
    before = snapshot(api.cs)
    # Warm up every route and every id the way the measurement will use them.
    for _, request in routes:
        for some_id in granite_ids + unknown_ids:
            assert request(some_id).status_code == 404

    def foreign(i: int) -> Any:
        return routes[i % len(routes)][1](granite_ids[i % len(granite_ids)])

    def unknown(i: int) -> Any:
        return routes[i % len(routes)][1](unknown_ids[i % len(unknown_ids)])

    rounds = 4 * len(routes)  # 36: four of each route, foreign and unknown interleaved
    assert_similar_timing(foreign, unknown, rounds)
    assert_nothing_changed(api.cs, before)
    assert {web.status(pid) for pid in granite_ids} == {"pending"}
