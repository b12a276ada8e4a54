"""Proposing in tests: one pending proposal through the Python API, in one line.

Every function here proposes through ``cs.proposals.propose``, as an assistant would, and
leaves a **pending** proposal: nothing is approved, declined or executed. What differs is how
the test names what is proposed on, and what it wants back:

=================  ======================================  ============================
                   on a seeded record (``seeded``)         on a resource id in hand
=================  ======================================  ============================
the proposal's id  :func:`propose`                         :func:`propose_on`
the whole report   :func:`proposal`                        :func:`proposal_on`
=================  ======================================  ============================

Left unsaid, a proposal is Ava's (``AVA``, a seeded Granite manager), in the
Granite club, a card refund (``REFUND``) of the seeded order ``refund-ok``, asking what
:data:`REQUESTS` gives for its operation. A test that needs another actor, club, operation or
request says so by keyword.

Proposing over HTTP, the command line or a browser is not this: those tests keep their own
helpers, since the way in is what they test.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from countersign.application.reports import ProposalCreated
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, DRAFT, REFUND, TO_CARD

Seeded = dict[str, Any]
"""What the ``seeded`` fixture gives: the demo clubs' ids (``orders``, ``rosters``,
``broadcast_forms``, keyed by order name or club slug)."""

CANCEL = "order.cancel_registration"
MOVE = "roster.move_member"
SEND = "email_broadcast.send"

#: A refund of the missing discount as account credit, not to the card.
TO_ACCOUNT_CREDIT: Mapping[str, Any] = {**TO_CARD, "destination": "account_credit"}
#: A cancellation's money back to the card it was paid with.
BACK_TO_CARD: Mapping[str, Any] = {"destination": "original_payment_method"}
#: Olivia Chen, from Sunday Mixed Doubles to Thursday Seniors (which has room for her).
TO_SENIORS: Mapping[str, Any] = {
    "email": "olivia.chen@example.com",
    "from_league": "Sunday Mixed Doubles",
    "to_league": "Thursday Seniors",
}
#: A draft for the members of two leagues: nine people (Noah Fraser plays in both).
ICE_TIMES_DRAFT: Mapping[str, Any] = {
    "filters": {"leagues": ["Thursday Seniors", "Monday Night Open"]},
    "subject": "Ice times change next week",
    "body": "Draws move 30 minutes later.",
}

#: What each operation asks when the test does not say: a request valid on the demo data.
REQUESTS: Mapping[str, Mapping[str, Any]] = {
    REFUND: TO_CARD,
    CANCEL: BACK_TO_CARD,
    MOVE: TO_SENIORS,
    DRAFT: ICE_TIMES_DRAFT,
    SEND: {},  # a send takes nothing: it sends the draft applied to the form
}

#: Which of the seeded records each operation acts on: an order by name, or the club's own.
RESOURCES: Mapping[str, str] = {
    REFUND: "orders",
    CANCEL: "orders",
    MOVE: "rosters",
    DRAFT: "broadcast_forms",
    SEND: "broadcast_forms",
}


def resource_of(
    seeded: Seeded,
    operation: str = REFUND,
    order: str = "refund-ok",
    organization: str = "granite",
) -> str:
    """The id of the seeded record ``operation`` acts on: the order named ``order`` for an
    order operation (refund, cancellation), else the club's roster (a move) or broadcast form
    (a draft, a send)."""
    kind = RESOURCES[operation]
    return str(seeded[kind][order if kind == "orders" else organization])


def proposal_on(
    cs: Countersign,
    resource_id: str,
    request: Mapping[str, Any] | None = None,
    *,
    operation: str = REFUND,
    actor: str = AVA,
    organization: str = "granite",
) -> ProposalCreated:
    """Propose ``operation`` on ``resource_id``; the report propose answered (its id, preview,
    what it superseded). ``request`` defaults to the operation's entry in :data:`REQUESTS`
    (a copy: the test cannot change the default). Raises whatever propose raises."""
    asked = copy.deepcopy(dict(REQUESTS[operation])) if request is None else request
    return cs.proposals.propose(
        organization=organization,
        actor=actor,
        operation=operation,
        resource_id=resource_id,
        request=asked,
    )


def propose_on(
    cs: Countersign,
    resource_id: str,
    request: Mapping[str, Any] | None = None,
    *,
    operation: str = REFUND,
    actor: str = AVA,
    organization: str = "granite",
) -> str:
    """:func:`proposal_on`, giving only the new pending proposal's id."""
    return proposal_on(
        cs, resource_id, request, operation=operation, actor=actor, organization=organization
    ).proposal_id


def proposal(
    cs: Countersign,
    seeded: Seeded,
    order: str = "refund-ok",
    *,
    operation: str = REFUND,
    request: Mapping[str, Any] | None = None,
    actor: str = AVA,
    organization: str = "granite",
    resource_id: str | None = None,
) -> ProposalCreated:
    """Propose ``operation`` on the seeded record it acts on (:func:`resource_of`: the order
    named ``order``, or ``organization``'s roster or broadcast form), or on ``resource_id``
    when given; the report propose answered."""
    on = resource_id or resource_of(seeded, operation, order, organization)
    return proposal_on(cs, on, request, operation=operation, actor=actor, organization=organization)


def propose(
    cs: Countersign,
    seeded: Seeded,
    order: str = "refund-ok",
    *,
    operation: str = REFUND,
    request: Mapping[str, Any] | None = None,
    actor: str = AVA,
    organization: str = "granite",
    resource_id: str | None = None,
) -> str:
    """:func:`proposal`, giving only the new pending proposal's id: by default Ava's card
    refund of the seeded order ``refund-ok``."""
    return proposal(
        cs,
        seeded,
        order,
        operation=operation,
        request=request,
        actor=actor,
        organization=organization,
        resource_id=resource_id,
    ).proposal_id
