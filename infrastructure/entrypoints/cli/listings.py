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


def _registration(registration: dict[str, Any], language: str) -> str:
    status = str(registration.get("status") or "active")
    league = registration.get("league")
    if league and status == "active":
        return _ORDER["spot"].text(language, league=league)
    return _STATUS.get(status, Localized(status, status)).text(language)


#: An order investigation's words (the order's own records, a product's name or a
#: discount's eligibility, are shown as the club's system holds them).
_ORDER = {
    "title": Localized("Order investigation", "Enquête sur la commande"),
    "order": Localized("Order", "Commande"),
    "participant": Localized("Participant", "Participant"),
    "total": Localized("Total", "Total"),
    "registration": Localized("Registration", "Inscription"),
    "note": Localized("Note", "Remarque"),
    "spot": Localized("active, a spot in {league}", "active, une place dans {league}"),
    "discount": Localized(
        "{name} on {item} ({value}), {applied}; {eligibility}",
        "{name} sur {item} ({value}), {applied} ; {eligibility}",
    ),
    "applied": Localized("applied", "appliquée"),
    "not_applied": Localized("NOT applied", "NON appliquée"),
    "payment": Localized(
        "{label}: {amount}, {refundable} refundable",
        "{label} : {amount}, {refundable} remboursable",
    ),
    "refund": Localized(
        "{amount} from {payment} ({destination})", "{amount} de {payment} ({destination})"
    ),
}
#: A registration's status in words ("active" reads the same in both).
_STATUS = {"cancelled": Localized("cancelled", "annulée")}


def render_order(order: dict[str, Any], language: str = "en") -> str:
    currency = order["currency"]

    def money(cents: int) -> str:
        return format_money(cents, currency, language)

    def said(key: str) -> str:
        return _ORDER[key].text(language)

    rows = [
        (said("order"), order["order_id"]),
        (said("participant"), order["participant"]),
        (said("total"), money(order["total_cents"])),
        (said("registration"), _registration(order.get("registration") or {}, language)),
    ]
    colon = " : " if language == "fr" else ": "
    rows += [
        (item["ref"], f"{item['product']}{colon}{money(item['amount_cents'])}")
        for item in order["line_items"]
    ]
    rows += [
        (
            d["ref"],
            _ORDER["discount"].text(
                language,
                name=d["name"],
                item=d["line_item"],
                value=money(d["value_cents"]),
                applied=said("applied" if d["applied"] else "not_applied"),
                eligibility=d["eligibility"],
            ),
        )
        for d in order["discounts"]
    ]
    rows += [
        (
            p["ref"],
            _ORDER["payment"].text(
                language,
                label=p["label"],
                amount=money(p["amount_cents"]),
                refundable=money(p["refundable_cents"]),
            ),
        )
        for p in order["payments"]
    ]
    rows += [
        (
            r["ref"],
            _ORDER["refund"].text(
                language,
                amount=money(r["amount_cents"]),
                payment=r["payment"],
                destination=r["destination"].replace("_", " "),
            ),
        )
        for r in order["refunds"]
    ]
    if order.get("note"):
        rows.append((said("note"), order["note"]))
    return box(said("title"), rows)


def render_history(
    history: dict[str, Any], language: str = "en", together: int | None = None
) -> str:
    """A proposal's events, oldest first, each with its time in UTC to the millisecond (an
    auditor compares them with the server's logs, which are in UTC too: the heading says so,
    since a card shows the club's own zone). Each is named by its stable name
    (``proposal.approved``), not the module it is stored under (``--json`` has both).
    ``together``: the event recorded in one step with the ``as_of`` point, if one was."""
    lines = [_HISTORY["title"].text(language, id=history["proposal_id"])]
    if history.get("unverified"):  # its seals do not vouch for it (application/shown_seals.py)
        lines += [
            f"  {_HISTORY['unvouched'].text(language)} {line}" if i == 0 else f"  {line}"
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
        said = _HISTORY["as_of"].text(language, version=state["version"])
        lines.append(f"  {said} {state['status']}")
        if together is not None:
            lines.append(f"  {_HISTORY['together'].text(language, next=together)}")
        lines += _fields({k: v for k, v in state.items() if k not in {"version", "status"}})
    return "\n".join(lines)


_HISTORY = {
    "title": Localized(
        "History of proposal {id} (times in UTC)", "Historique de la proposition {id} (heures UTC)"
    ),
    "unvouched": Localized("NOT VOUCHED FOR:", "NON GARANTI :"),
    "as_of": Localized("State as of v{version}:", "État à la v{version} :"),
    "together": Localized(
        "(recorded in the same step as v{next}: nobody could have seen the proposal as it "
        "stands here, only as it stood after v{next})",
        "(enregistré dans la même étape que la v{next} : personne n'a pu voir la proposition "
        "telle qu'elle est ici, seulement telle qu'elle était après la v{next})",
    ),
}


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


def render_inbox(inbox: dict[str, Any], language: str = "en") -> str:
    lines = [_INBOX["empty"].text(language)]
    if inbox["items"]:
        lines = [_INBOX["title"].text(language, total=inbox["total"], page=inbox["page"])]
    for card in inbox["items"]:
        headline = proposal_headline(card["operation"], card["preview"], language)
        by = _INBOX["by"].text(language, who=card["requested_by"])
        lines.append(f"  {card['proposal_id']}  {card['operation']}  {headline}  ({by})")
    off = inbox.get("not_enabled") or {"total": 0}
    if off["total"]:
        key = "not_enabled_one" if off["total"] == 1 else "not_enabled"
        first = _utc_time(off["first_expires_at"])[:16]
        lines.append(_INBOX[key].text(language, count=off["total"], expires=f"{first} UTC"))
    return "\n".join(lines)


_INBOX = {
    "empty": Localized(
        "The inbox is empty: nothing awaits approval.",
        "La boîte de réception est vide : rien n'attend d'approbation.",
    ),
    "title": Localized(
        "Awaiting approval ({total}), page {page}:",
        "En attente d'approbation ({total}), page {page} :",
    ),
    "by": Localized("by {who}", "par {who}"),
    "not_enabled": Localized(
        "{count} pending proposals of the club are of operations not enabled here (their "
        "plug-in is not named in COUNTERSIGN_PLUGINS): nobody can approve or decline them. "
        "Enable the plug-in again to decide them, or let them expire (the first at {expires}).",
        "{count} propositions en attente du club relèvent d'opérations non activées ici (leur "
        "module d'extension n'est pas nommé dans COUNTERSIGN_PLUGINS) : personne ne peut les "
        "approuver ni les refuser. Réactivez le module pour en décider, ou laissez-les expirer "
        "(la première le {expires}).",
    ),
    "not_enabled_one": Localized(
        "1 pending proposal of the club is of an operation not enabled here (its plug-in is "
        "not named in COUNTERSIGN_PLUGINS): nobody can approve or decline it. Enable the "
        "plug-in again to decide it, or let it expire (at {expires}).",
        "1 proposition en attente du club relève d'une opération non activée ici (son module "
        "d'extension n'est pas nommé dans COUNTERSIGN_PLUGINS) : personne ne peut l'approuver "
        "ni la refuser. Réactivez le module pour en décider, ou laissez-la expirer (le "
        "{expires}).",
    ),
}


_BY_ID = Localized(
    "Approve or decline it by id (/approve or /decline in a chat).",
    "Approuvez-la ou refusez-la par son identifiant (/approve ou /decline dans une conversation).",
)


def render_turn(
    turn: dict[str, Any],
    language: str = "en",
    zone: str = DEFAULT_TIME_ZONE,
    now: datetime | None = None,
    by_id: str | None = None,
) -> str:
    """One turn of a conversation: its messages, and the card of what it proposed, then how
    to decide it (``by_id``: how outside a chat, where /approve is no command)."""
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
        lines.append(by_id or _BY_ID.text(language))
    return "\n".join(lines)
