"""Orders, histories, inboxes and assistant turns in the terminal."""

from __future__ import annotations

import json
import textwrap
from datetime import UTC, datetime
from typing import Any

from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE
from countersign.domain.contracts.presentation import Localized
from countersign.domain.messages import proposal_headline
from countersign.domain.money import format_money
from countersign.infrastructure.entrypoints.cli.cards import render_created
from countersign.infrastructure.entrypoints.cli.render import box, json_value, printable


def _registration(registration: dict[str, Any]) -> str:
    status = str(registration.get("status") or "active")
    league = registration.get("league")
    return f"{status}, a spot in {league}" if league and status == "active" else status


def render_order(order: dict[str, Any]) -> str:
    currency = order["currency"]
    rows = [
        ("Order", order["order_id"]),
        ("Participant", order["participant"]),
        ("Total", format_money(order["total_cents"], currency)),
        ("Registration", _registration(order.get("registration") or {})),
    ]
    rows += [
        (item["ref"], f"{item['product']}: {format_money(item['amount_cents'], currency)}")
        for item in order["line_items"]
    ]
    rows += [
        (
            d["ref"],
            f"{d['name']} on {d['line_item']} ({format_money(d['value_cents'], currency)}), "
            + ("applied" if d["applied"] else "NOT applied")
            + f"; {d['eligibility']}",
        )
        for d in order["discounts"]
    ]
    rows += [
        (
            p["ref"],
            f"{p['label']}: {format_money(p['amount_cents'], currency)}, "
            f"{format_money(p['refundable_cents'], currency)} refundable",
        )
        for p in order["payments"]
    ]
    rows += [
        (
            r["ref"],
            f"{format_money(r['amount_cents'], currency)} from {r['payment']} "
            f"({r['destination'].replace('_', ' ')})",
        )
        for r in order["refunds"]
    ]
    if order.get("note"):
        rows.append(("Note", order["note"]))
    return box("Order investigation", rows)


def render_history(history: dict[str, Any]) -> str:
    """A proposal's events, oldest first, each with its time in UTC to the millisecond (an
    auditor compares them with the server's logs, which are in UTC too: the heading says so,
    since a card shows the club's own zone). Each is named by its stable name
    (``proposal.approved``), not the module it is stored under (``--json`` has both)."""
    lines = [f"History of proposal {history['proposal_id']} (times in UTC)"]
    if history.get("unverified"):  # its seals do not vouch for it (application/shown_seals.py)
        lines += [
            f"  NOT VOUCHED FOR: {line}" if i == 0 else f"  {line}"
            for i, line in enumerate(textwrap.wrap(history["unverified"]["message"], 86))
        ]
    for event in history["events"]:
        at = _utc_time(event["at"])
        lines.append(f"  v{event['version']:<3} {at}  {event.get('event') or event['type']}")
        # Every field, whole (what was approved: the arguments and preview; policies, facts,
        # outcomes), wrapped rather than cut short.
        envelope = {"version", "type", "event", "topic", "at"}
        details = {k: v for k, v in event.items() if k not in envelope}
        lines += _fields(details)
    if "as_of" in history:
        state = history["as_of"]
        lines.append(f"  State as of v{state['version']}: {state['status']}")
        lines += _fields({k: v for k, v in state.items() if k not in {"version", "status"}})
    return "\n".join(lines)


def _fields(fields: dict[str, Any]) -> list[str]:
    """Each field as JSON on lines of its own, wrapped at 90 characters, nothing left out."""
    lines = []
    for key, value in fields.items():
        shown = json.dumps(value, default=json_value, ensure_ascii=False)
        wrapped = textwrap.wrap(shown, 90, break_on_hyphens=False, drop_whitespace=False) or [""]
        lines.append(f"         {key}: {wrapped[0]}")
        lines += [f"           {more}" for more in wrapped[1:]]
    return lines


def _utc_time(at: Any) -> str:
    """An event's time (a datetime, or its ISO text in --json's form) in UTC, to the
    millisecond; text that is not a time is shown as it is."""
    try:
        when = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
    except ValueError:
        return printable(str(at))
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:23]


def render_inbox(inbox: dict[str, Any]) -> str:
    if not inbox["items"]:
        return "The inbox is empty: nothing awaits approval."
    lines = [f"Awaiting approval ({inbox['total']}), page {inbox['page']}:"]
    for card in inbox["items"]:
        lines.append(
            f"  {card['proposal_id']}  {card['operation']}  "
            f"{proposal_headline(card['operation'], card['preview'])}  (by {card['requested_by']})"
        )
    return "\n".join(lines)


_BY_ID = Localized(
    "Approve or decline it by id (/approve or /decline in a chat).",
    "Approuvez-la ou refusez-la par son identifiant (/approve ou /decline dans une conversation).",
)


def render_turn(
    turn: dict[str, Any],
    language: str = "en",
    zone: str = DEFAULT_TIME_ZONE,
    now: datetime | None = None,
) -> str:
    """One turn of a conversation: its messages, and the card of what it proposed."""
    lines = []
    for message in turn["messages"]:
        who = "assistant" if message["author"] == "model" else "countersign"
        # Each line of it marked as its author's: a model's second line cannot pass for
        # countersign's own ("countersign> ...") or draw a card of its own.
        first, *more = str(message["text"]).split("\n")
        lines.append(f"{who}> {printable(first)}")
        lines.extend(f"{who}| {printable(line)}" for line in more)
    if turn.get("proposal"):
        lines.append(render_created(turn["proposal"], zone, now, language))
        lines.append(_BY_ID.text(language))
    return "\n".join(lines)
