"""Terminal rendering of proposal cards, approval reports, orders and histories."""

from __future__ import annotations

import json
import textwrap
from datetime import datetime
from typing import Any
from uuid import UUID

from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE
from countersign.domain.contracts.base import Problem
from countersign.domain.contracts.presentation import Localized
from countersign.domain.messages import origin_line, preview_rows_of, proposal_headline
from countersign.domain.money import format_money
from countersign.domain.times import expiry, local_time

WIDTH = 72


def to_json(document: Any) -> str:
    return json.dumps(document, default=_default, ensure_ascii=False, indent=2)


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def printable(text: str) -> str:
    """Show control characters as escapes so stored text cannot move the terminal's cursor."""
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)


def box(title: str, rows: list[tuple[str, str]]) -> str:
    label_width = max((len(label) for label, _ in rows), default=0)
    value_width = WIDTH - label_width - 5
    lines = [f"┌─ {title} " + "─" * max(0, WIDTH - len(title) - 4) + "┐"]
    for label, value in rows:
        # A multi-line value (an e-mail body) keeps its lines; each is wrapped on its own.
        wrapped = [
            part
            for line in str(value).split("\n")
            for part in (textwrap.wrap(printable(line), value_width) or [""])
        ]
        for i, part in enumerate(wrapped):
            shown = label if i == 0 else ""
            lines.append(f"│ {shown:<{label_width}}  {part:<{value_width}} │")
    lines.append("└" + "─" * (WIDTH - 1) + "┘")
    return "\n".join(lines)


def preview_rows(
    operation: str, preview: dict[str, Any], language: str = "en"
) -> list[tuple[str, str]]:
    """The preview's labelled rows, in the order the operation's contract declares."""
    return [(row.label, row.value) for row in preview_rows_of(operation, preview, language)]


def expires(
    value: Any, zone: str = DEFAULT_TIME_ZONE, now: datetime | None = None, language: str = "en"
) -> str:
    """'2026-11-30 04:00 EST (expires in 23 h)': in the club's zone, and how far away."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    shown = local_time(moment, zone)
    return f"{shown} ({expiry(moment, now, language)})" if now is not None else shown


_CARD = {
    "title": Localized("Review", "Examen"),
    "proposal": Localized("Proposal", "Proposition"),
    "operation": Localized("Operation", "Opération"),
    "requested_by": Localized("Requested by", "Demandée par"),
    "origin": Localized("Origin", "Origine"),
    "status": Localized("Status", "Statut"),
    "expires": Localized("Expires", "Expire le"),
    "approved_by": Localized("Approved by", "Approuvée par"),
    "outcome": Localized("Outcome", "Résultat"),
}
"""The review card's own labels: the preview's rows are labelled by the operation's contract."""


def render_card(card: dict[str, Any], language: str = "en", now: datetime | None = None) -> str:
    """The review card in ``language``: its frame, the preview's rows and the outcome. The
    operation and status stay the machine's names, which scripts and support search for."""

    def label(key: str) -> str:
        return _CARD[key].text(language)

    rows = [
        (label("proposal"), card["proposal_id"]),
        (label("operation"), card["operation"]),
        (label("requested_by"), card["requested_by"]),
    ]
    origin = origin_line(card.get("origin"), language)
    if origin:
        rows.append((label("origin"), origin))
    rows += [
        (label("status"), card["status"].replace("_", " ")),
        (
            label("expires"),
            expires(card["expires_at"], card.get("time_zone") or "UTC", now, language),
        ),
    ]
    rows += preview_rows(card["operation"], card["preview"], language)
    if card.get("approved_by"):
        rows.append((label("approved_by"), card["approved_by"]))
    if card.get("message"):
        rows.append((label("outcome"), card["message"]))
    return box(label("title"), rows)


def render_created(
    created: dict[str, Any], zone: str = DEFAULT_TIME_ZONE, now: datetime | None = None
) -> str:
    rows = [
        ("Proposal", created["proposal_id"]),
        ("Operation", created["operation"]),
        ("Status", created["status"]),
        ("Expires", expires(created["expires_at"], zone, now)),
    ]
    rows += preview_rows(created["operation"], created["preview"])
    return box("Review: approve or decline", rows)


def render_report(report: dict[str, Any]) -> str:
    if report["result"] == "not_approvable":
        return f"Not approvable: {report['reason'].replace('_', ' ')}."
    outcome = report.get("outcome") or {}
    headline = {
        "executed": "Executed",
        "already_completed": "Already completed (stored outcome)",
        "declined": "Declined",
    }[report["result"]]
    kind = str(outcome.get("kind", "")).replace("_", " ")
    return f"{headline}: {kind}.\n  {report.get('message') or ''}".rstrip()


_NOT_ACCEPTED = Localized("The request was not accepted:", "La demande n'a pas été acceptée :")
_FIELDS_IN_JSON = Localized(
    "(--json gives each problem's field and message.)",
    "(--json donne le champ et le message de chaque problème.)",
)


def render_refusal(problems: list[Problem], language: str = "en") -> str:
    """A refused request in the manager's words: each distinct sentence once."""
    sentences = dict.fromkeys(problem.explain(language) for problem in problems)
    lines = [_NOT_ACCEPTED.text(language)]
    lines += [f"  - {sentence}" for sentence in sentences]
    return "\n".join([*lines, _FIELDS_IN_JSON.text(language)])


def render_problems(problems: list[dict[str, str]]) -> str:
    lines = ["The request was not accepted:"]
    lines += [f"  - {problem['field']}: {problem['message']}" for problem in problems]
    return "\n".join(lines)


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
    lines = [f"History of proposal {history['proposal_id']}"]
    for event in history["events"]:
        at = str(event["at"])[:23].replace("T", " ")
        details = {
            k: v
            for k, v in event.items()
            if k not in {"version", "type", "at", "arguments", "preview"}
        }
        lines.append(f"  v{event['version']:<3} {at}  {event['type']}")
        for key, value in details.items():
            shown = json.dumps(value, default=_default, ensure_ascii=False)
            lines.append(f"         {key}: {textwrap.shorten(shown, 90)}")
    if "as_of" in history:
        lines.append(f"  State as of v{history['as_of']['version']}: {history['as_of']['status']}")
    return "\n".join(lines)


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


def render_turn(turn: dict[str, Any]) -> str:
    lines = []
    for message in turn["messages"]:
        who = "assistant" if message["author"] == "model" else "countersign"
        lines.append(f"{who}> {message['text']}")
    if turn.get("proposal"):
        lines.append(render_created(turn["proposal"]))
        lines.append("Approve or decline it by id (/approve or /decline in a chat).")
    return "\n".join(lines)
