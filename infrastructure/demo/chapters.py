"""The demo's longer chapters (``story.tell`` tells them in turn): a cancelled registration,
two managers and an edit, the applied draft sent once, and every other operation."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.money import format_money
from countersign.infrastructure.adapters.email_sandbox import LOST_RESPONSE
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo import story_words as words
from countersign.infrastructure.demo.story import (
    AVA,
    NOAH,
    REFUND,
    TO_ACCOUNT_CREDIT,
    TO_CARD,
    Story,
    ask,
    created_text,
    deliveries_for,
    propose,
    reconcile,
    report_text,
    requests_for,
    turn_text,
)
from countersign.infrastructure.entrypoints.cli import cards, listings, render
from countersign.infrastructure.entrypoints.status_path import with_status_path


def cancel_registration(cs: Countersign, story: Story, order_id: str) -> None:
    """Olivia, refunded her missed discount earlier, cancels: what is left goes back to her
    card, and only the provider's answer cancels the order and releases her league spot."""
    language = story.language
    story.chapter(words.CANCEL_TITLE)
    before = {league["name"]: league["active_members"] for league in cs.club.leagues("granite")}
    turn = ask(cs, story, "orders", order_id, words.CANCEL_WORDS)
    story.say(turn_text(cs, turn, language), turn)
    story.say(story.t(words.CANCEL_EXPLAINED))
    proposal_id = turn["proposal"]["proposal_id"]
    report = with_status_path(cs.proposals.approve(proposal_id, AVA).to_json())
    story.say(report_text(cs, story, report), report)
    after = {league["name"]: league["active_members"] for league in cs.club.leagues("granite")}
    story.say(
        story.t(words.CANCELLED, requests=requests_for(cs, proposal_id))
        + "\n".join(
            story.t(words.MEMBERS_CHANGED, name=name, before=before[name], after=after[name])
            for name in after
            if after[name] != before.get(name)
        )
    )
    story.say(listings.render_order(cs.club.investigate("granite", order_id), language))


def two_managers(cs: Countersign, story: Story, order_id: str) -> None:
    """Granite's policy: a refund above $100 needs two managers. Ava proposes one, edits it
    (a new revision, never an in-place change), approves, and Noah's approval runs it."""
    language = story.language
    story.chapter(words.TWO_TITLE)
    policy = next(p for p in cs.policies.in_force("granite") if p["operation"] == REFUND)
    # In the money's own format, as the cards beneath it show the same threshold.
    amount = format_money(policy["above_cents"], "CAD", language)
    story.say(story.t(words.POLICY, operation=REFUND, approvals=policy["approvals"], amount=amount))
    first = propose(cs, order_id, TO_CARD)
    story.say(created_text(cs, first, language))
    revised = cs.access.revise(first["proposal_id"], AVA, TO_ACCOUNT_CREDIT).to_json()
    card = cs.cards.card(revised["proposal_id"], AVA, language).to_json()
    story.say(
        story.t(words.AVA_EDITS)
        + cards.render_revision(
            json.loads(render.to_json(revised)),
            json.loads(render.to_json(card)),
            language,
            actor=AVA,
        ),
        card,
    )
    stale = with_status_path(cs.proposals.approve(first["proposal_id"], AVA).to_json())
    story.say(story.t(words.APPROVING_THE_FIRST) + report_text(cs, story, stale, AVA), stale)
    for approver in (AVA, AVA, NOAH):
        report = with_status_path(cs.proposals.approve(revised["proposal_id"], approver).to_json())
        said = report_text(cs, story, report, approver)
        story.say(story.t(words.APPROVES, who=approver) + said, report)


def send_the_draft(cs: Countersign, story: Story, form: str) -> None:
    """The applied draft is sent once, ever; the e-mail service's answer is lost on the way."""
    language = story.language
    story.chapter(words.SEND_TITLE)
    cs.club.join("granite", "Thursday Seniors", "Delivery test", LOST_RESPONSE)
    story.say(story.t(words.TEST_ADDRESS, address=LOST_RESPONSE))
    turn = ask(cs, story, "email_broadcasts", form, words.SEND_WORDS)
    story.say(story.t(words.MODEL_CHOOSES_NOTHING) + turn_text(cs, turn, language), turn)
    send = turn["proposal"]
    report = with_status_path(cs.proposals.approve(send["proposal_id"], AVA).to_json())
    story.say(report_text(cs, story, report), report)
    requests = deliveries_for(cs, send["proposal_id"])
    story.say(story.t(words.SERVICE_RECEIVED, requests=requests))
    reconcile(cs, story, words.RECONCILE_COMMAND)
    deliveries = cs.email_sandbox.deliveries()
    listed = "; ".join(
        story.t(
            words.DELIVERY,
            recipients=len(d["recipients"]),
            status=d["status"],
            requests=d["requests"],
        )
        for d in deliveries
    )
    story.say(story.t(words.SANDBOX_HOLDS, deliveries=listed), deliveries)
    message = story.t(words.SEND_AGAIN_WORDS)
    story.say(f"ava> {message}")
    again = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="email_broadcasts",
        resource_id=form,
        message=message,
        interaction_id=turn["interaction_id"],
        language=language,
    ).to_json()
    story.say(turn_text(cs, again, language) + story.t(words.ONCE_EVER), again)


def every_other_operation(cs: Countersign, story: Story, data: dict[str, Any]) -> None:
    """Every registered operation no chapter above showed, from the words its contract
    declares for the demo (``demo_scene``) to its outcome: Ava says them to the section's
    assistant, the offline stand-in model proposes, and the managers the scene names approve.
    A scene's words are its contract's, in the story's language when it gives them in more
    than one (``DemoScene.said``): the stand-in reads them as said."""
    language = story.language
    others = [contract for contract in REGISTRY.values() if not story.shows(contract.kind)]
    if not others:
        return
    story.chapter(words.OTHERS_TITLE)
    for contract in others:
        scene = contract.demo_scene
        title = contract.title.text(language)
        if scene is None:
            story.say(story.t(words.NO_SCENE, title=title))
            continue
        said = scene.said(language)
        story.say(f"{title}\nava> {said}")
        turn = cs.assistant.turn(
            organization="granite",
            actor=AVA,
            section=str(contract.section),
            resource_id=scene_resource(cs, contract, data),
            message=said,
            language=language,
        ).to_json()
        story.say(turn_text(cs, turn, language), turn)
        if turn["proposal"] is None:
            continue
        for approver in scene.approvers or (AVA,):
            report = cs.proposals.approve(turn["proposal"]["proposal_id"], approver).to_json()
            said = report_text(cs, story, report, approver)
            story.say(story.t(words.APPROVES, who=approver) + said, report)


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
