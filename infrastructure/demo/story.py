"""``countersign demo``: the whole approve path as a story a newcomer can follow."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from countersign.domain.contracts.apply_broadcast_draft import ApplyBroadcastDraft
from countersign.domain.contracts.move_member import MoveMember
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.refund_missing_discount import RefundMissingDiscount
from countersign.domain.contracts.send_broadcast import SendBroadcast
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo import story_words as words
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

    def __init__(self, as_json: bool, language: str = "en") -> None:
        self.as_json = as_json
        self.language = language
        self.chapters: list[dict[str, Any]] = []
        self.number = 0

    def t(self, text: Localized, **params: object) -> str:
        """``text`` in the story's language, with ``params`` filled in."""
        return text.text(self.language, **params)

    def chapter(self, title: Localized | str) -> None:
        self.number += 1
        title_said = title if isinstance(title, str) else self.t(title)
        self.chapters.append({"title": title_said, "steps": []})
        if not self.as_json:
            heading = f"{self.number}. {title_said}"
            print(f"\n{heading}\n" + "=" * len(heading))

    def say(self, text: str, document: Any = None) -> None:
        self.chapters[-1]["steps"].append({"text": text, "data": document})
        if not self.as_json:
            print(text)

    def shows(self, kind: str) -> bool:
        """Whether a chapter told so far shows a proposal of the operation ``kind``."""
        return f'"operation": "{kind}"' in json.dumps(self.chapters, default=str)


class Terminated(Exception):
    """SIGTERM, raised where the demo was (``throwaway_database``)."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


@contextmanager
def _terminated_raises() -> Iterator[None]:
    """SIGTERM raises ``Terminated`` meanwhile (its default ends the process without
    unwinding: the folder was left behind), the handler before put back after; ``serve``
    takes the signal over while it serves, then gives it back. Only the main thread may set
    one: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextmanager
def throwaway_database(keep: bool, as_json: bool, language: str = "en") -> Iterator[str]:
    """A new SQLite file in a temporary folder of its own, the demo's unless told otherwise:
    removed with its folder when the demo ends (its story told, its server stopped, Ctrl-C,
    SIGTERM: ``Terminated``),
    unless ``keep`` (``--keep``): one folder a run was left behind in the temporary directory
    for ever. Either way the last line says so, and where (on stderr under ``--json``, whose
    stdout is one document)."""
    folder = Path(tempfile.mkdtemp(prefix="countersign-demo-"))
    database_url = f"sqlite:///{folder / 'demo.db'}"
    try:
        with _terminated_raises():
            yield database_url
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
        said = words.DATABASE_KEPT if keep else words.DATABASE_REMOVED
        print(
            said.text(language, database=database_url, folder=folder),
            file=sys.stderr if as_json else sys.stdout,
            flush=True,
        )


def run_demo(
    database_url: str | None = None,
    as_json: bool = False,
    language: str = "en",
    passwords: bool = False,
) -> int:
    """Tell the story on ``database_url`` (a new SQLite file by default, left behind: the
    command line's ``throwaway_database`` removes it), in ``language``; with ``passwords``,
    then give the demo's people their local passwords, as ``countersign seed`` does (a kept
    database served again refused every sign-in)."""
    database_url = (
        database_url or f"sqlite:///{tempfile.mkdtemp(prefix='countersign-demo-')}/demo.db"
    )
    clock = FakeClock()
    cs = bootstrap(database_url=database_url, clock=clock)
    story = Story(as_json, language)
    try:
        tell(cs, clock, story, database_url)
        if passwords:
            from countersign.infrastructure.demo.passwords import seed_passwords

            seed_passwords(cs)
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
    from countersign.infrastructure.demo import chapters  # which tells with this module's

    language = story.language
    story.chapter(words.SEEDED_TITLE)
    data = seed(cs)
    orders = data["orders"]
    story.say(story.t(words.SEEDED, database=database_url, orders=len(orders)), data)
    refund_ok = cs.club.investigate("granite", orders["refund-ok"])
    story.say(listings.render_order(refund_ok, language))

    story.chapter(words.ASKS_TITLE)
    turn = ask(cs, story, "orders", orders["refund-ok"], words.REFUND_WORDS)
    asked = [
        f"{e['name']}({json.dumps(e['arguments'])})"
        for e in cs.audit_interaction(turn["interaction_id"])
    ]
    story.say(story.t(words.MODEL_READ, asked="; ".join(asked)))
    created = turn["proposal"]
    story.say(turn_text(cs, turn, language), turn)

    story.chapter(words.APPROVES_TITLE)
    first = with_status_path(cs.proposals.approve(created["proposal_id"], AVA).to_json())
    story.say(report_text(cs, story, first), first)
    story.chapter(words.AGAIN_TITLE)
    again = with_status_path(cs.proposals.approve(created["proposal_id"], AVA).to_json())
    same = json.dumps(again["outcome"], sort_keys=True) == json.dumps(
        first["outcome"], sort_keys=True
    )
    requests = requests_for(cs, created["proposal_id"])
    said_same = story.t(words.YES if same else words.NO)
    story.say(
        report_text(cs, story, again)
        + story.t(words.SAME_OUTCOME, same=said_same, requests=requests),
        again,
    )

    story.chapter(words.STALE_TITLE)
    stale = propose(cs, orders["refund-stale"], TO_CARD)
    story.say(created_text(cs, stale, language))
    cs.club.refund_manually("granite", orders["refund-stale"], AVA, "P1", 34500)
    story.say(story.t(words.REFUNDED_BY_HAND))
    approve(cs, story, stale["proposal_id"], status_path=True)

    story.chapter(words.LOST_TITLE)
    lost = propose(cs, orders["refund-lost-response"], TO_CARD)
    approve(cs, story, lost["proposal_id"], status_path=True)
    story.say(story.t(words.PROVIDER_RECEIVED, requests=requests_for(cs, lost["proposal_id"])))
    reconcile(cs, story, words.RECONCILER)
    settled = with_status_path(cs.proposals.approve(lost["proposal_id"], AVA).to_json())
    story.say(
        report_text(cs, story, settled)
        + story.t(words.STILL_REQUESTS, requests=requests_for(cs, lost["proposal_id"])),
        settled,
    )

    story.chapter(words.CREDIT_TITLE)
    declined = propose(cs, orders["refund-declined"], TO_CARD)
    approve(cs, story, declined["proposal_id"], data=False)
    credit = propose(cs, orders["account-credit"], TO_ACCOUNT_CREDIT)
    story.say(created_text(cs, credit, language))
    approve(cs, story, credit["proposal_id"], data=False)

    chapters.cancel_registration(cs, story, orders["refund-ok"])
    chapters.two_managers(cs, story, orders["refund-two-approvers"])

    story.chapter(words.DRAFT_TITLE)
    form = data["broadcast_forms"]["granite"]
    turn = ask(cs, story, "email_broadcasts", form, words.DRAFT_WORDS)
    draft = turn["proposal"]
    story.say(turn_text(cs, turn, language), turn)
    draft_request = {
        "filters": {"leagues": ["Thursday Seniors", "Monday Night Open"]},
        "subject": draft["preview"]["subject"],
        "body": draft["preview"]["body"],
    }
    approve(cs, story, draft["proposal_id"], data=False)
    second = cs.proposals.propose(
        organization="granite", actor=AVA, operation=DRAFT, resource_id=form, request=draft_request
    ).to_json()
    cs.club.join("granite", "Thursday Seniors", "Grace Kim", "grace.kim@example.com")
    story.say(story.t(words.SECOND_DRAFT))
    approve(cs, story, second["proposal_id"], data=False)

    story.chapter(words.MOVE_TITLE)
    roster = data["rosters"]["granite"]
    turn = ask(cs, story, "roster", roster, words.MOVE_WORDS)
    asked = [
        f"{e['name']}({json.dumps(e['arguments'])})"
        for e in cs.audit_interaction(turn["interaction_id"])
    ]
    story.say(
        story.t(words.MODEL_ASKED, asked="; ".join(asked)) + turn_text(cs, turn, language), turn
    )
    approve(cs, story, turn["proposal"]["proposal_id"], data=False)
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
    story.say(story.t(words.LUCAS))
    approve(cs, story, lucas["proposal_id"], data=False)

    chapters.send_the_draft(cs, story, form)
    chapters.every_other_operation(cs, story, data)

    story.chapter(words.EXPIRE_TITLE)
    # Proposed a day ago, looked at now: the clock goes back a day for the proposal only, so
    # that what the story leaves for the browser (`demo --serve`) is dated by the server's
    # clock (Emma's credit, below, read "expires in 47 h", and a notification made after a
    # day skipped ahead waited that day to be sent).
    ttl = cs.settings.proposal_ttl_seconds + 1
    clock.advance(seconds=-ttl)
    late = propose(cs, orders["provider-outage"], TO_CARD)
    clock.advance(seconds=ttl)
    story.say(story.t(words.A_DAY_PASSES))
    approve(cs, story, late["proposal_id"], data=False)

    story.chapter(words.HISTORY_TITLE)
    history = cs.audit.history(lost["proposal_id"])
    story.say(listings.render_history(json.loads(render.to_json(history)), language))

    story.chapter(words.READ_MODELS_TITLE)
    story.say(story.t(words.LEFT_FOR_LATER))
    propose(cs, orders["refund-declined"], TO_ACCOUNT_CREDIT)
    for runner in cs.projection_runners():
        runner.catch_up()
    granite = data["organizations"][0]["id"]
    inbox = json.loads(render.to_json(cs.read_models.inbox(granite, clock.now())))
    story.say(story.t(words.INBOX) + listings.render_inbox(inbox, language), inbox)
    card = cs.cards.card(lost["proposal_id"], AVA)
    messages = cs.read_models.handback(granite, card.interaction_id)
    story.say(
        story.t(words.HANDBACK)
        + "\n".join(
            f"  [{m['outcome_kind']}] {m['text_en']}\n  [fr] {m['text_fr']}" for m in messages
        )
    )
    stale_card = cs.cards.card(stale["proposal_id"], AVA)
    context = cs.read_models.revision_context(granite, stale_card.interaction_id)
    if context:
        said = context["context_fr" if language == "fr" else "context_en"]
        story.say(story.t(words.REVISION_CONTEXT, context=said))
    rows = list(cs.read_models.audit_trail(organization_id=granite))
    story.say(
        story.t(words.AUDIT_EXPORT, rows=len(rows))
        + "\n".join(
            f"  {str(r['at'])[:19]}  {r['actor']:<22} {r['event_type']:<16} {r['summary'][:60]}"
            for r in rows[:5]
        )
    )
    report = verify(cs.app, cs.sql).to_json()
    verdict = "OK" if report["ok"] else story.t(words.BROKEN)
    events, proposals = report["events_checked"], report["proposals_checked"]
    story.say(story.t(words.VERIFIED, verdict=verdict, events=events, proposals=proposals), report)


def propose(cs: Countersign, order_id: str, request: dict[str, Any]) -> dict[str, Any]:
    return cs.proposals.propose(
        organization="granite", actor=AVA, operation=REFUND, resource_id=order_id, request=request
    ).to_json()


def ask(cs: Countersign, story: Story, section: str, resource_id: str, said: Localized) -> Any:
    """Ava's words to a section's assistant, told, and its turn (as a JSON document)."""
    message = story.t(said)
    story.say(f"ava> {message}")
    return cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section=section,
        resource_id=resource_id,
        message=message,
        language=story.language,
    ).to_json()


def approve(
    cs: Countersign,
    story: Story,
    proposal_id: str,
    *,
    status_path: bool = False,
    data: bool = True,
) -> dict[str, Any]:
    """Ava approves ``proposal_id``; its report told (with its document unless not ``data``)."""
    report = cs.proposals.approve(proposal_id, AVA).to_json()
    if status_path:
        report = with_status_path(report)
    story.say(report_text(cs, story, report), report if data else None)
    return report


def report_text(
    cs: Countersign, story: Story, report: dict[str, Any], actor: str | None = None
) -> str:
    """An approval's answer as ``countersign approve`` says it, its outcome's sentence in the
    story's language (the answer carries it in English; the card says it in any)."""
    if story.language != "en" and report.get("message"):
        card = cs.cards.card(report["proposal_id"], actor or AVA, story.language).to_json()
        report = {**report, "message": card["message"] or report["message"]}
    return cards.render_report(report, actor, story.language)


def reconcile(cs: Countersign, story: Story, said: Localized) -> None:
    """One reconciliation pass, each proposal it looked at told after ``said``."""
    swept = [with_status_path(r.to_json()) for r in cs.sweepers.reconcile()]
    story.say(
        story.t(said)
        + "\n  "
        + "\n  ".join(f"{r['proposal_id']}: {r['action']} -> {r['status']}" for r in swept),
        swept,
    )


def created_text(cs: Countersign, created: dict[str, Any], language: str) -> str:
    """A proposal just frozen, in Granite's time zone."""
    zone = cs.club.time_zone("granite")
    return cards.render_created(created, zone, cs.clock.now(), language)


def turn_text(cs: Countersign, turn: Any, language: str = "en") -> str:
    """A turn as ``countersign chat`` shows it: Granite's cards in the club's own time zone,
    as every other card of the story (a turn's card in UTC beside them read as another time)."""
    shown = json.loads(render.to_json(turn))
    return listings.render_turn(
        shown, language, zone=cs.club.time_zone("granite"), now=cs.clock.now()
    )


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
