"""Commands on proposals: propose, revise, approve, decline, show, history, the sweepers, the
assistants' chat, the inbox and a conversation's hand-back."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from countersign.application.assistant.sections import ASSISTANTS
from countersign.application.authorization import Caller
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.contracts.request_errors import MALFORMED_REQUEST
from countersign.infrastructure.entrypoints.cli import cards, listings, render
from countersign.infrastructure.entrypoints.cli.common import (
    Result,
    UsageError,
    catch_up,
    parse_time,
)
from countersign.infrastructure.entrypoints.status_path import (
    history_with_status_paths,
    with_status_path,
)

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign


def _caller(args: argparse.Namespace) -> Caller:
    """``--as`` in ``--org`` where the command names one (else the proposal's organization)."""
    return Caller(email=args.actor, organization=getattr(args, "org", None))


def cmd_propose(cs: Countersign, args: argparse.Namespace) -> Result:
    request = _read_request(args.request)
    created = cs.access.propose(
        _caller(args),
        operation=args.operation,
        resource_id=args.resource,
        request=request,
    ).to_json()
    zone = cs.club.time_zone(args.org)
    now = cs.clock.now()
    return created, cards.render_created(created, zone, now, args.language)


def cmd_revise(cs: Countersign, args: argparse.Namespace) -> Result:
    """An edit: the whole contract runs again on the edited request and freezes a new
    proposal (``revision_of`` the old one, which it supersedes if it was pending). Prints the
    new card with what changed against the old preview, field by field."""
    request = _read_request(args.request)
    created = cs.access.revise(args.proposal_id, _caller(args), request).to_json()
    card = cs.access.card(created["proposal_id"], _caller(args), args.language).to_json()
    document = {**created, "changes": card["changes"]}
    now = cs.clock.now()
    return document, cards.render_revision(created, card, args.language, now, args.actor)


def cmd_approve(cs: Countersign, args: argparse.Namespace) -> Result:
    report = with_status_path(cs.access.approve(args.proposal_id, _caller(args)).to_json())
    return report, cards.render_report(report, args.actor)


def cmd_decline(cs: Countersign, args: argparse.Namespace) -> Result:
    report = with_status_path(
        cs.access.decline(args.proposal_id, _caller(args), args.note).to_json()
    )
    return report, cards.render_report(report, args.actor)


def cmd_show(cs: Countersign, args: argparse.Namespace) -> Result:
    card = with_status_path(
        cs.access.card(args.proposal_id, _caller(args), args.language).to_json()
    )
    now = cs.clock.now()
    return card, cards.render_card(card, args.language, now, args.actor)


def cmd_history(cs: Countersign, args: argparse.Namespace) -> Result:
    as_of = _version_or_time(args.as_of) if args.as_of else None
    history = json.loads(render.to_json(cs.audit.history(args.proposal_id, as_of)))
    history = history_with_status_paths(history)
    return history, listings.render_history(history)


def cmd_reconcile(cs: Countersign, args: argparse.Namespace) -> Result:
    reports = [with_status_path(report.to_json()) for report in cs.sweepers.reconcile()]
    return {"resolved": reports}, _sweep_text("reconcile", reports)


def cmd_expire(cs: Countersign, args: argparse.Namespace) -> Result:
    reports = [report.to_json() for report in cs.sweepers.expire_due()]
    return {"expired": reports}, _sweep_text("expire", reports)


def cmd_chat(cs: Countersign, args: argparse.Namespace) -> Result:
    if args.message is not None:
        report = _turn(cs, args, args.message, args.interaction)
        document = json.loads(render.to_json(report.to_json()))
        return document, _turn_text(cs, args, document)
    return _chat_interactively(cs, args)


def _turn_text(cs: Countersign, args: argparse.Namespace, turn: dict[str, Any]) -> str:
    """A turn in the chat's language, its card's times in the club's zone."""
    zone = cs.club.time_zone(args.org)
    return listings.render_turn(turn, args.language, zone, cs.clock.now())


def _turn(cs: Countersign, args: argparse.Namespace, message: str, interaction: str | None) -> Any:
    return cs.assistant.turn(
        organization=args.org,
        actor=args.actor,
        section=args.section,
        resource_id=args.resource,
        message=message,
        interaction_id=interaction,
        language=args.language,
    )


_CHATTING = Localized(
    "{assistant}, for {actor}. Commands: /approve, /decline [note], /quit.",
    "{assistant}, pour {actor}. Commandes : /approve, /decline [note], /quit.",
)
_NO_PROPOSAL_YET = Localized(
    "There is no proposal in this conversation yet.",
    "Cette conversation n'a encore fait aucune proposition.",
)
_ENDED = Localized("Conversation {id} ended.", "Conversation {id} terminée.")
_NOTHING_SAID = Localized("Nothing was said.", "Rien n'a été dit.")
_YOU = Localized("you> ", "vous> ")


def _chat_interactively(cs: Countersign, args: argparse.Namespace) -> Result:
    assistant = ASSISTANTS[args.section].texts.assistant.text(args.language)
    print(_CHATTING.text(args.language, assistant=assistant, actor=args.actor), flush=True)
    interaction = args.interaction
    last_proposal: str | None = None
    turns = 0
    while True:
        try:
            line = input(_YOU.text(args.language)).strip()
        except EOFError:
            break
        if not line:
            continue
        if line in ("/quit", "/exit"):
            break
        if line.startswith(("/approve", "/decline")):
            if last_proposal is None:
                print(_NO_PROPOSAL_YET.text(args.language))
                continue
            if line.startswith("/approve"):
                report = cs.access.approve(last_proposal, _caller(args)).to_json()
            else:
                note = line[len("/decline") :].strip() or None
                report = cs.access.decline(last_proposal, _caller(args), note).to_json()
            print(render.terminal(cards.render_report(report, args.actor)), flush=True)
            continue
        turn = json.loads(render.to_json(_turn(cs, args, line, interaction).to_json()))
        interaction = turn["interaction_id"]
        turns += 1
        if turn["proposal"]:
            last_proposal = turn["proposal"]["proposal_id"]
        print(render.terminal(_turn_text(cs, args, turn)), flush=True)
    ended = (
        _ENDED.text(args.language, id=interaction)
        if interaction
        else _NOTHING_SAID.text(args.language)
    )
    return {"interaction_id": interaction, "turns": turns}, ended


def cmd_inbox(cs: Countersign, args: argparse.Namespace) -> Result:
    listed = cs.access.inbox_scope(_caller(args), args.section)
    catch_up(cs, ["browser_view"])
    inbox = cs.read_models.inbox(
        listed.organization_id,
        cs.clock.now(),
        sections=listed.sections,
        page=args.page,
        page_size=args.page_size,
    )
    document = json.loads(render.to_json(inbox))
    return document, listings.render_inbox(document)


def cmd_handback(cs: Countersign, args: argparse.Namespace) -> Result:
    organization_id = str(cs.club.membership(args.org, args.actor).organization_id)
    catch_up(cs, ["handback"])
    messages = cs.read_models.handback(organization_id, args.interaction_id)
    context = cs.read_models.revision_context(organization_id, args.interaction_id)
    document = json.loads(render.to_json({"messages": messages, "revision_context": context}))
    text_key = f"text_{args.language}"
    lines = [m[text_key] for m in document["messages"]] or ["No messages."]
    if context:
        lines.append(
            f"Revision context for the next message: {context[f'context_{args.language}']}"
        )
    return document, "\n".join(lines)


def _version_or_time(value: str) -> int | datetime:
    # isascii: str.isdigit() is also true for '¹', which int() refuses.
    return int(value) if value.isascii() and value.isdigit() else parse_time(value)


def _sweep_text(what: str, reports: list[dict[str, Any]]) -> str:
    if not reports:
        return f"{what}: nothing to do."
    return "\n".join(
        f"{what}: {r['proposal_id']} {r['action'].replace('_', ' ')} -> {r['status']}"
        for r in reports
    )


def _read_request(raw: str) -> Any:
    text = raw
    if raw.startswith("@"):
        try:
            text = Path(raw[1:]).read_text(encoding="utf-8")
        except OSError:
            raise UsageError(f"cannot read the request file {raw[1:]!r}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidRequestError.one(
            "request", f"not valid JSON ({error.msg})", MALFORMED_REQUEST
        ) from None
