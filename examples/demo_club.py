"""What the three agent-framework examples share: a demo club in a temporary SQLite file, and
the approval by id that follows the agent's run. Approval is the application's alone: it
executes the frozen proposal once, and no agent or model takes part in it."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from countersign.application.authorization import Caller
from countersign.domain.contracts.refund_missing_discount import RefundMissingDiscount
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.seed import seed

REFUND = RefundMissingDiscount.kind
#: What the scripted models ask for: references read from the order, never an amount.
REQUEST = {
    "payment": "P1",
    "line_item": "L1",
    "discount": "D1",
    "destination": "original_payment_method",
}
MESSAGE = "Olivia Chen missed her early-bird discount; refund it to her card."


@dataclass(frozen=True)
class Club:
    cs: Countersign
    ava: Caller  # the member every tool is bound to, in her club
    order_id: str  # the order the refund tool is bound to


@contextmanager
def demo_club() -> Iterator[Club]:
    """The demo clubs, seeded into a SQLite file that is gone afterwards."""
    with tempfile.TemporaryDirectory() as folder:
        cs = bootstrap(database_url=f"sqlite:///{folder}/countersign.db")
        try:
            order_id = seed(cs)["orders"]["refund-ok"]
            yield Club(cs, Caller("ava@granite.example", "granite"), order_id)
        finally:
            cs.close()


def print_refusal(tool_output: str) -> None:
    """What the model read after its first call: the problems, not a proposal."""
    problems = json.loads(tool_output)["problems"]
    shown = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    print(f"First call refused, nothing frozen ({shown})")


def approve_by_id(club: Club, proposal_id: str, model_calls: Callable[[], int]) -> None:
    """A manager approves by id, twice; print what happened and that no model ran."""
    before = model_calls()
    first = club.cs.access.approve(proposal_id, club.ava)
    print(f"Approved by id: {first.result}, {first.status}. {first.message}")
    again = club.cs.access.approve(proposal_id, club.ava)
    print(f"Approved again: {again.result} (the stored outcome; nothing ran twice)")
    refunds = [r for r in club.cs.sandbox.refunds() if r["metadata"]["proposal_id"] == proposal_id]
    sent = sum(int(r["requests"]) for r in refunds)
    print(f"Refunds the payment sandbox received for it: {sent}")
    print(f"Model calls: {before} before approval, {model_calls()} after")
