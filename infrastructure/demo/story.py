"""``countersign demo``: the whole approve path as a story a newcomer can follow."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any
from uuid import UUID

from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.apply_broadcast_draft import ApplyBroadcastDraft
from countersign.domain.contracts.move_member import MoveMember
from countersign.domain.contracts.refund_missing_discount import RefundMissingDiscount
from countersign.domain.contracts.send_broadcast import SendBroadcast
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.adapters.email_sandbox import LOST_RESPONSE
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.cli import cards, listings, render
from countersign.infrastructure.entrypoints.status_path import with_status_path

AVA = "ava@granite.example"
NOAH = "noah@granite.example"
REFUND = RefundMissingDiscount.kind
DRAFT = ApplyBroadcastDraft.kind
MOVE = MoveMember.kind
SEND = SendBroadcast.kind
TO_ACCOUNT_CREDIT = {
    "payment": "P1",
    "line_item": "L1",
    "discount": "D1",
    "destination": "account_credit",
}
TO_CARD = {
    "payment": "P1",
    "line_item": "L1",
    "discount": "D1",
    "destination": "original_payment_method",
}


class Story:
    """Prints numbered chapters, or collects them for ``--json``."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.chapters: list[dict[str, Any]] = []
        self.number = 0

    def chapter(self, title: str) -> None:
        self.number += 1
        self.chapters.append({"title": title, "steps": []})
        if not self.as_json:
            heading = f"{self.number}. {title}"
            print(f"\n{heading}\n" + "=" * len(heading))

    def say(self, text: str, document: Any = None) -> None:
        self.chapters[-1]["steps"].append({"text": text, "data": document})
        if not self.as_json:
            print(text)

    def shows(self, kind: str) -> bool:
        """Whether a chapter told so far shows a proposal of the operation ``kind``."""
        return f'"operation": "{kind}"' in json.dumps(self.chapters, default=str)


def throwaway_database_url() -> str:
    """A new SQLite file in a temporary folder of its own: the demo's unless told otherwise."""
    folder = Path(tempfile.mkdtemp(prefix="countersign-demo-"))
    return f"sqlite:///{folder / 'demo.db'}"


def run_demo(database_url: str | None = None, as_json: bool = False) -> int:
    database_url = database_url or throwaway_database_url()
    clock = FakeClock()
    cs = bootstrap(database_url=database_url, clock=clock)
    story = Story(as_json)
    try:
        tell(cs, clock, story, database_url)
    finally:
        cs.close()
    if as_json:
        print(
            json.dumps(
                {"database": database_url, "chapters": story.chapters},
                default=str,
                ensure_ascii=False,
            )
        )
    return 0


def tell(cs: Countersign, clock: FakeClock, story: Story, database_url: str) -> None:
    story.chapter("A club with orders, a roster, and sandboxes for payments and e-mail")
    data = seed(cs)
    orders = data["orders"]
    story.say(
        f"Database: {database_url}\nSeeded {len(orders)} orders in two clubs. "
        f"Ava manages the Granite Curling Club.",
        data,
    )
    story.say(listings.render_order(cs.club.investigate("granite", orders["refund-ok"])))

    story.chapter("Ava asks the order assistant; the application writes the contract")
    words = "Olivia says she registered early but never got her early-bird discount. Fix it?"
    story.say(f"ava> {words}")
    turn = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="orders",
        resource_id=orders["refund-ok"],
        message=words,
    ).to_json()
    asked = [
        f"{e['name']}({json.dumps(e['arguments'])})"
        for e in cs.audit_interaction(turn["interaction_id"])
    ]
    story.say(
        "The model read the order and asked for: " + "; ".join(asked) + "\nIt never names an "
        "amount. The application computed it and froze this preview:"
    )
    created = turn["proposal"]
    story.say(turn_text(cs, turn), turn)

    story.chapter("Ava approves by id alone")
    first = with_status_path(cs.proposals.approve(created["proposal_id"], AVA).to_json())
    story.say(cards.render_report(first), first)
    story.chapter("Approving again returns the stored outcome, executing nothing")
    again = with_status_path(cs.proposals.approve(created["proposal_id"], AVA).to_json())
    same = json.dumps(again["outcome"], sort_keys=True) == json.dumps(
        first["outcome"], sort_keys=True
    )
    story.say(
        cards.render_report(again) + f"\n  Same stored outcome, byte for byte: {same}. "
        f"Provider requests for it: {requests_for(cs, created['proposal_id'])}.",
        again,
    )

    story.chapter("State changes before approval: the proposal fails closed")
    stale = propose(cs, orders["refund-stale"], TO_CARD)
    story.say(cards.render_created(stale, cs.club.time_zone("granite"), cs.clock.now()))
    cs.club.refund_manually("granite", orders["refund-stale"], AVA, "P1", 34500)
    story.say("Meanwhile, in another tab, the whole payment is refunded by hand.")
    report = with_status_path(cs.proposals.approve(stale["proposal_id"], AVA).to_json())
    story.say(cards.render_report(report), report)

    story.chapter("The card provider's response is lost")
    lost = propose(cs, orders["refund-lost-response"], TO_CARD)
    report = with_status_path(cs.proposals.approve(lost["proposal_id"], AVA).to_json())
    story.say(cards.render_report(report), report)
    story.say(
        f"The provider did receive it: {requests_for(cs, lost['proposal_id'])} request. "
        "Nobody improvises a second call."
    )
    swept = [with_status_path(r.to_json()) for r in cs.sweepers.reconcile()]
    story.say(
        "The reconciler looks the original idempotency key up:\n  "
        + "\n  ".join(f"{r['proposal_id']}: {r['action']} -> {r['status']}" for r in swept),
        swept,
    )
    settled = with_status_path(cs.proposals.approve(lost["proposal_id"], AVA).to_json())
    story.say(
        cards.render_report(settled) + "\n  Provider requests for it, still: "
        f"{requests_for(cs, lost['proposal_id'])}.",
        settled,
    )

    story.chapter("A card that declines, and a refund to account credit instead")
    declined = propose(cs, orders["refund-declined"], TO_CARD)
    story.say(cards.render_report(cs.proposals.approve(declined["proposal_id"], AVA).to_json()))
    credit = propose(cs, orders["account-credit"], TO_ACCOUNT_CREDIT)
    story.say(cards.render_created(credit, cs.club.time_zone("granite"), cs.clock.now()))
    story.say(cards.render_report(cs.proposals.approve(credit["proposal_id"], AVA).to_json()))

    cancel_registration(cs, story, orders["refund-ok"])
    two_managers(cs, story, orders["refund-two-approvers"])

    story.chapter("An email draft from Ava's words: the audience is recounted at approval")
    form = data["broadcast_forms"]["granite"]
    words = (
        "Email the Thursday Seniors and Monday Night Open about ice times moving 30 minutes later."
    )
    story.say(f"ava> {words}")
    turn = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="email_broadcasts",
        resource_id=form,
        message=words,
    ).to_json()
    draft = turn["proposal"]
    story.say(turn_text(cs, turn), turn)
    draft_request = {
        "filters": {"leagues": ["Thursday Seniors", "Monday Night Open"]},
        "subject": draft["preview"]["subject"],
        "body": draft["preview"]["body"],
    }
    story.say(cards.render_report(cs.proposals.approve(draft["proposal_id"], AVA).to_json()))
    second = cs.proposals.propose(
        organization="granite", actor=AVA, operation=DRAFT, resource_id=form, request=draft_request
    ).to_json()
    cs.club.join("granite", "Thursday Seniors", "Grace Kim", "grace.kim@example.com")
    story.say("A second, identical draft is proposed; then Grace Kim joins Thursday Seniors.")
    story.say(cards.render_report(cs.proposals.approve(second["proposal_id"], AVA).to_json()))

    story.chapter("A member changes league from Ava's words: the roster is rechecked at approval")
    roster = data["rosters"]["granite"]
    words = "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors"
    story.say(f"ava> {words}")
    turn = cs.assistant.turn(
        organization="granite", actor=AVA, section="roster", resource_id=roster, message=words
    ).to_json()
    asked = [
        f"{e['name']}({json.dumps(e['arguments'])})"
        for e in cs.audit_interaction(turn["interaction_id"])
    ]
    story.say(
        "The model asked for: " + "; ".join(asked) + "\nIt names the member by the email the "
        "search showed; the application counted both leagues before and after the move:\n"
        + turn_text(cs, turn),
        turn,
    )
    story.say(
        cards.render_report(cs.proposals.approve(turn["proposal"]["proposal_id"], AVA).to_json())
    )
    lucas = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=MOVE,
        resource_id=roster,
        request={
            "email": "lucas.roy@example.com",
            "from_league": "Sunday Mixed Doubles",
            "to_league": "Junior Program",
        },
    ).to_json()
    cs.club.join("granite", "Junior Program", "Lucas Roy", "lucas.roy@example.com")
    story.say(
        "Ava also proposes moving Lucas Roy to the Junior Program; before she approves, the "
        "front desk signs him up for it directly."
    )
    story.say(cards.render_report(cs.proposals.approve(lucas["proposal_id"], AVA).to_json()))

    send_the_draft(cs, story, form)
    every_other_operation(cs, story, data)

    story.chapter("Proposals expire")
    # Proposed a day ago, looked at now: the clock goes back a day for the proposal only, so
    # that what the story leaves for the browser (`demo --serve`) is dated by the server's
    # clock (Emma's credit, below, read "expires in 47 h", and a notification made after a
    # day skipped ahead waited that day to be sent).
    ttl = cs.settings.proposal_ttl_seconds + 1
    clock.advance(seconds=-ttl)
    late = propose(cs, orders["provider-outage"], TO_CARD)
    clock.advance(seconds=ttl)
    story.say("A day passes before anyone looks at it.")
    story.say(cards.render_report(cs.proposals.approve(late["proposal_id"], AVA).to_json()))

    story.chapter("The auditor replays one proposal's history")
    history = cs.audit.history(lost["proposal_id"])
    story.say(listings.render_history(json.loads(render.to_json(history))))

    story.chapter("Read models, rebuilt from the one event stream")
    story.say(
        "Emma's card declined earlier; Ava proposes account credit instead and leaves it for later."
    )
    propose(cs, orders["refund-declined"], TO_ACCOUNT_CREDIT)
    for runner in cs.projection_runners():
        runner.catch_up()
    granite = data["organizations"][0]["id"]
    inbox = json.loads(render.to_json(cs.read_models.inbox(granite, clock.now())))
    story.say("Ava's inbox (the browser view projection):\n" + listings.render_inbox(inbox), inbox)
    card = cs.cards.card(lost["proposal_id"], AVA)
    messages = cs.read_models.handback(granite, card.interaction_id)
    story.say(
        "What the application said back into that conversation (never a model paraphrase):\n"
        + "\n".join(
            f"  [{m['outcome_kind']}] {m['text_en']}\n  [fr] {m['text_fr']}" for m in messages
        )
    )
    stale_card = cs.cards.card(stale["proposal_id"], AVA)
    context = cs.read_models.revision_context(granite, stale_card.interaction_id)
    if context:
        story.say("Revision context left for Ava's next message: " + context["context_en"])
    rows = list(cs.read_models.audit_trail(organization_id=granite))
    story.say(
        f"Audit export ({len(rows)} rows, first five):\n"
        + "\n".join(
            f"  {str(r['at'])[:19]}  {r['actor']:<22} {r['event_type']:<16} {r['summary'][:60]}"
            for r in rows[:5]
        )
    )
    report = verify(cs.app, cs.sql).to_json()
    story.say(
        f"audit verify: {'OK' if report['ok'] else 'BROKEN'}: {report['events_checked']} events "
        f"of {report['proposals_checked']} proposals, every hash-chain link holds.",
        report,
    )


def cancel_registration(cs: Countersign, story: Story, order_id: str) -> None:
    """Olivia, refunded her missed discount earlier, cancels: what is left goes back to her
    card, and only the provider's answer cancels the order and releases her league spot."""
    story.chapter("A registration is cancelled: a card refund and a roster change, together")
    before = {league["name"]: league["active_members"] for league in cs.club.leagues("granite")}
    words = "Olivia can't play this season after all. Please cancel her registration."
    story.say(f"ava> {words}")
    turn = cs.assistant.turn(
        organization="granite", actor=AVA, section="orders", resource_id=order_id, message=words
    ).to_json()
    story.say(turn_text(cs, turn), turn)
    story.say(
        "The model chose only where the money goes. The application computed what is left to "
        "refund (what was paid, less the discount refunded earlier) and the spot to release."
    )
    proposal_id = turn["proposal"]["proposal_id"]
    report = with_status_path(cs.proposals.approve(proposal_id, AVA).to_json())
    story.say(cards.render_report(report), report)
    after = {league["name"]: league["active_members"] for league in cs.club.leagues("granite")}
    story.say(
        f"Provider requests for it: {requests_for(cs, proposal_id)}. The order was cancelled "
        "and the spot released in the commit that recorded the provider's answer:\n"
        + "\n".join(
            f"  {name}: {before[name]} -> {after[name]} members"
            for name in after
            if after[name] != before.get(name)
        )
    )
    story.say(listings.render_order(cs.club.investigate("granite", order_id)))


def two_managers(cs: Countersign, story: Story, order_id: str) -> None:
    """Granite's policy: a refund above $100 needs two managers. Ava proposes one, edits it
    (a new revision, never an in-place change), approves, and Noah's approval runs it."""
    story.chapter("Two managers for a refund above $100, and an edit that is a new revision")
    policy = next(p for p in cs.policies.in_force("granite") if p["operation"] == REFUND)
    story.say(
        f"Granite's approval policy for {REFUND}: {policy['approvals']} distinct managers "
        f"above {policy['above_cents'] / 100:.2f} CAD (set by command: countersign policy set)."
    )
    first = propose(cs, order_id, TO_CARD)
    story.say(cards.render_created(first, cs.club.time_zone("granite"), cs.clock.now()))
    revised = cs.access.revise(first["proposal_id"], AVA, TO_ACCOUNT_CREDIT).to_json()
    card = cs.cards.card(revised["proposal_id"], AVA).to_json()
    story.say(
        "Ava edits it: account credit instead of the card. The whole contract ran again on the "
        "edited request; the first proposal is superseded in the same commit.\n"
        + cards.render_revision(
            json.loads(render.to_json(revised)), json.loads(render.to_json(card)), actor=AVA
        ),
        card,
    )
    stale = with_status_path(cs.proposals.approve(first["proposal_id"], AVA).to_json())
    story.say("Approving the first one now:\n" + cards.render_report(stale, AVA), stale)
    for approver in (AVA, AVA, NOAH):
        report = with_status_path(cs.proposals.approve(revised["proposal_id"], approver).to_json())
        story.say(f"{approver} approves:\n" + cards.render_report(report, approver), report)


def send_the_draft(cs: Countersign, story: Story, form: str) -> None:
    """The applied draft is sent once, ever; the e-mail service's answer is lost on the way."""
    story.chapter("Sending the applied draft: once, though the e-mail service's answer is lost")
    cs.club.join("granite", "Thursday Seniors", "Delivery test", LOST_RESPONSE)
    story.say(
        f"The club's e-mail test address, {LOST_RESPONSE}, joins Thursday Seniors: the "
        "e-mail sandbox delivers to it, then loses its answer."
    )
    words = "The draft looks good: send the draft to them."
    story.say(f"ava> {words}")
    turn = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="email_broadcasts",
        resource_id=form,
        message=words,
    ).to_json()
    story.say(
        "The model chooses nothing: the application froze the applied draft with its counted "
        "audience and every address.\n" + turn_text(cs, turn),
        turn,
    )
    send = turn["proposal"]
    report = with_status_path(cs.proposals.approve(send["proposal_id"], AVA).to_json())
    story.say(cards.render_report(report), report)
    story.say(
        f"The service did receive it: {deliveries_for(cs, send['proposal_id'])} request. "
        "Nobody sends it again."
    )
    swept = [with_status_path(r.to_json()) for r in cs.sweepers.reconcile()]
    story.say(
        "countersign reconcile looks the original idempotency key up:\n  "
        + "\n  ".join(f"{r['proposal_id']}: {r['action']} -> {r['status']}" for r in swept),
        swept,
    )
    deliveries = cs.email_sandbox.deliveries()
    story.say(
        "What the e-mail sandbox holds (countersign provider deliveries): "
        + "; ".join(
            f"{len(d['recipients'])} recipients, {d['status']}, {d['requests']} request(s)"
            for d in deliveries
        )
        + ". Exactly one delivery.",
        deliveries,
    )
    words = "Send the draft again, just to be sure."
    story.say(f"ava> {words}")
    again = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="email_broadcasts",
        resource_id=form,
        message=words,
        interaction_id=turn["interaction_id"],
    ).to_json()
    story.say(
        turn_text(cs, again) + "\n  One send per applied draft, ever.",
        again,
    )


def every_other_operation(cs: Countersign, story: Story, data: dict[str, Any]) -> None:
    """Every registered operation no chapter above showed, from the words its contract
    declares for the demo (``demo_scene``) to its outcome: Ava says them to the section's
    assistant, the offline stand-in model proposes, and the managers the scene names approve."""
    others = [contract for contract in REGISTRY.values() if not story.shows(contract.kind)]
    if not others:
        return
    story.chapter("Every other operation, from a manager's words to its outcome")
    for contract in others:
        scene = contract.demo_scene
        title = contract.title.text("en")
        if scene is None:
            story.say(f"{title}: its contract declares no demo scene (demo_scene).")
            continue
        story.say(f"{title}\nava> {scene.words}")
        turn = cs.assistant.turn(
            organization="granite",
            actor=AVA,
            section=str(contract.section),
            resource_id=scene_resource(cs, contract, data),
            message=scene.words,
        ).to_json()
        story.say(turn_text(cs, turn), turn)
        if turn["proposal"] is None:
            continue
        for approver in scene.approvers or (AVA,):
            report = cs.proposals.approve(turn["proposal"]["proposal_id"], approver).to_json()
            story.say(f"{approver} approves:\n" + cards.render_report(report, approver), report)


def scene_resource(cs: Countersign, contract: AnyContract, data: dict[str, Any]) -> str:
    """What a demo scene's words are about: the seeded order it names, else the club's own
    record of the contract's section (its roster, its broadcast form)."""
    scene = contract.demo_scene
    if scene is not None and scene.order is not None:
        return str(data["orders"][scene.order])
    club_resource = cs.assistant.assistants[contract.section].club_resource
    if club_resource is None:
        raise ValueError(f"the demo scene of {contract.kind} names no seeded order")
    return str(club_resource(UUID(data["organizations"][0]["id"])))


def propose(cs: Countersign, order_id: str, request: dict[str, Any]) -> dict[str, Any]:
    return cs.proposals.propose(
        organization="granite", actor=AVA, operation=REFUND, resource_id=order_id, request=request
    ).to_json()


def turn_text(cs: Countersign, turn: Any) -> str:
    """A turn as ``countersign chat`` shows it: Granite's cards in the club's own time zone,
    as every other card of the story (a turn's card in UTC beside them read as another time)."""
    shown = json.loads(render.to_json(turn))
    return listings.render_turn(shown, zone=cs.club.time_zone("granite"), now=cs.clock.now())


def deliveries_for(cs: Countersign, proposal_id: str) -> int:
    return sum(
        int(d["requests"])
        for d in cs.email_sandbox.deliveries()
        if d["metadata"].get("proposal_id") == proposal_id
    )


def requests_for(cs: Countersign, proposal_id: str) -> int:
    return sum(
        int(str(r["requests"]))
        for r in cs.sandbox.refunds()
        if isinstance(r["metadata"], dict) and r["metadata"].get("proposal_id") == proposal_id
    )
