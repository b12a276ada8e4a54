"""Commands on proposals: propose, revise, approve, decline, show, history, the sweepers, the
assistants' chat, the inbox and a conversation's hand-back."""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from countersign.application.assistant.conversations import MAX_TURNS, ConversationFullError
from countersign.application.assistant.sections import ASSISTANTS
from countersign.application.assistant.turn_limits import TooManyTurnsError
from countersign.application.authorization import Caller
from countersign.application.errors import ForbiddenError
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.contracts.request_errors import MALFORMED_REQUEST
from countersign.domain.errors import NotFoundError
from countersign.domain.messages import proposal_headline
from countersign.domain.times import seconds_wait
from countersign.domain.untrusted_json import UnreadableJsonError, read_json
from countersign.domain.visible_text import blank
from countersign.infrastructure.entrypoints.cli import cards, listings, render
from countersign.infrastructure.entrypoints.cli.common import (
    Result,
    UsageError,
    catch_up,
    parse_time,
)
from countersign.infrastructure.entrypoints.cli.resources import (
    UnknownProposalError,
    operation_resource,
    section_resource,
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
    resource = operation_resource(cs, args.org, args.operation, args.resource, args.language)
    created = cs.access.propose(
        _caller(args),
        operation=args.operation,
        resource_id=resource,
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
    return report, cards.render_report(_in_language(cs, args, report), args.actor, args.language)


def cmd_decline(cs: Countersign, args: argparse.Namespace) -> Result:
    report = with_status_path(
        cs.access.decline(args.proposal_id, _caller(args), args.note).to_json()
    )
    return report, cards.render_report(_in_language(cs, args, report), args.actor, args.language)


def cmd_show(cs: Countersign, args: argparse.Namespace) -> Result:
    card = with_status_path(
        cs.access.card(args.proposal_id, _caller(args), args.language).to_json()
    )
    now = cs.clock.now()
    return card, cards.render_card(card, args.language, now, args.actor)


def cmd_history(cs: Countersign, args: argparse.Namespace) -> Result:
    as_of = _version_or_time(args.as_of) if args.as_of else None
    try:
        document, stored = cs.audit.checked_history(args.proposal_id, as_of)
    except NotFoundError:  # history names no club: the id alone is what to check
        raise UnknownProposalError from None
    history = json.loads(render.to_json(document))
    # As the API's history says it, with seal keys (the operator's command: no member), of
    # the events it lists.
    history["unverified"] = cs.cards.unverified_json(stored)
    history = history_with_status_paths(history)
    together = None
    if "as_of" in history:
        # The last approval with the claim, say: a state nobody could see, said as the page
        # says it. The events after the point are read for it (the document stops there).
        from countersign.application.audit import recorded_with_next

        topics = [e["topic"] for e in cs.audit.history(args.proposal_id)["events"]]
        together = recorded_with_next(topics, history["as_of"]["version"])
    return history, listings.render_history(history, args.language, together)


def cmd_reconcile(cs: Countersign, args: argparse.Namespace) -> Result:
    reports = [with_status_path(report.to_json()) for report in cs.sweepers.reconcile()]
    return {"resolved": reports}, _sweep_text("reconcile", reports, args.language)


def cmd_expire(cs: Countersign, args: argparse.Namespace) -> Result:
    reports = [report.to_json() for report in cs.sweepers.expire_due()]
    return {"expired": reports}, _sweep_text("expire", reports, args.language)


def cmd_chat(cs: Countersign, args: argparse.Namespace) -> Result:
    args.resource = section_resource(cs, args.org, args.section, args.resource, args.language)
    if args.message is not None:
        try:
            report = _turn(cs, args, args.message, args.interaction)
        except TooManyTurnsError as too_many:
            return _too_many_turns(too_many, args.language)
        document = json.loads(render.to_json(report.to_json()))
        return document, _one_turn_text(cs, args, document)
    return _chat_interactively(cs, args)


_TOO_MANY_TURNS = Localized(
    "You have sent the assistants many messages in a short time. Nothing was sent or "
    "changed; try again in {wait}.",
    "Vous avez envoyé beaucoup de messages aux assistants en peu de temps. Rien n'a été "
    "envoyé ni modifié ; réessayez dans {wait}.",
)


def _too_many_turns(refused: TooManyTurnsError, language: str) -> Result:
    """A message the turn limit refused (nothing recorded): when to try again."""
    document = {
        "error": "too_many_turns",
        "message": str(refused),
        "retry_after": refused.retry_after,
    }
    wait = seconds_wait(refused.retry_after, language)
    return document, _TOO_MANY_TURNS.text(language, wait=wait)


def _turn_text(cs: Countersign, args: argparse.Namespace, turn: dict[str, Any]) -> str:
    """A turn in the chat's language, its card's times in the club's zone."""
    zone = cs.club.time_zone(args.org)
    return listings.render_turn(turn, args.language, zone, cs.clock.now())


#: After one --message turn, where /approve and the next message are no commands: the
#: commands that decide its card and continue its conversation.
_DECIDE_IT = Localized(
    "Approve it with: countersign approve {id} --as {actor} (or decline it: countersign "
    "decline {id} --as {actor} --note TEXT)",
    "Approuvez-la avec : countersign approve {id} --as {actor} (ou refusez-la : countersign "
    "decline {id} --as {actor} --note TEXTE)",
)
_CONTINUE_IT = Localized(
    "Conversation {id}: add --interaction {id} to the next --message to continue it.",
    "Conversation {id} : ajoutez --interaction {id} au prochain --message pour la poursuivre.",
)


def _one_turn_text(cs: Countersign, args: argparse.Namespace, turn: dict[str, Any]) -> str:
    """A --message turn: said as in a chat, then how to decide its card and go on with it
    (the line said "/approve or /decline in a chat", and nothing printed the conversation's
    id, which --interaction takes)."""
    language, zone = args.language, cs.club.time_zone(args.org)
    proposal = turn.get("proposal") or {}
    decide = _DECIDE_IT.text(language, id=proposal.get("proposal_id"), actor=args.actor)
    said = listings.render_turn(turn, language, zone, cs.clock.now(), by_id=decide)
    interaction = turn.get("interaction_id")
    return f"{said}\n{_CONTINUE_IT.text(language, id=interaction)}" if interaction else said


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
    "{assistant}, for {actor}. Commands: /approve [id], /decline [id] [note], /quit.",
    "{assistant}, pour {actor}. Commandes : /approve [id], /decline [id] [note], /quit.",
)
_NO_PROPOSAL_YET = Localized(
    "There is no proposal in this conversation yet.",
    "Cette conversation n'a encore fait aucune proposition.",
)
_UNKNOWN_COMMAND = Localized(
    "Unknown command {command}; nothing was sent. Commands: /approve [id], /decline [id] "
    "[note], /quit.",
    "Commande inconnue {command} ; rien n'a été envoyé. Commandes : /approve [id], "
    "/decline [id] [note], /quit.",
)
_CONFIRM = Localized(
    "Approve {id}: {headline}? Type yes to approve: ",
    "Approuver {id} : {headline} ? Tapez oui pour approuver : ",
)
_NOT_APPROVED = Localized("Not approved; nothing changed.", "Non approuvée ; rien n'a changé.")
_FULL = Localized(
    "This conversation holds its {limit} messages, the most one may; nothing was sent. Send "
    "it again: your next message starts a new conversation.",
    "Cette conversation compte ses {limit} messages, le plus qu'une puisse en compter ; rien "
    "n'a été envoyé. Renvoyez-le : votre prochain message commence une nouvelle conversation.",
)
_ENDED = Localized("Conversation {id} ended.", "Conversation {id} terminée.")
_NOTHING_SAID = Localized("Nothing was said.", "Rien n'a été dit.")
_YOU = Localized("you> ", "vous> ")
#: The chat's commands; a line that starts with "/" and is none of them is sent nowhere.
_COMMANDS = ("/approve", "/decline", "/quit", "/exit")


def _chat_interactively(cs: Countersign, args: argparse.Namespace) -> Result:
    """A conversation in the terminal. ``/approve`` and ``/decline`` act on the proposal
    whose id follows them, or without one on the last card this chat showed; an approval
    first restates, in the application's words, which proposal and what it does, and waits
    for "yes" (a model's words cannot steer it: they never name what is approved)."""
    language = args.language
    assistant = ASSISTANTS[args.section].texts.assistant.text(language)
    print(_CHATTING.text(language, assistant=assistant, actor=args.actor), flush=True)
    interaction = args.interaction
    last_proposal: str | None = None
    turns = 0
    while True:
        try:
            line = input(_YOU.text(language)).strip()
        except EOFError:
            break
        if blank(line):  # nothing written, or only spaces and invisible characters
            continue
        command, _, rest = line.partition(" ")
        if command in ("/quit", "/exit"):
            break
        if command.startswith("/"):
            if command not in _COMMANDS:
                print(_UNKNOWN_COMMAND.text(language, command=render.printable(command)))
                continue
            named, note = _named_proposal(rest)
            proposal = named or last_proposal
            if proposal is None:
                print(_NO_PROPOSAL_YET.text(language))
                continue
            if command == "/approve":
                if not _confirmed(cs, args, proposal):
                    print(_NOT_APPROVED.text(language), flush=True)
                    continue
                report = cs.access.approve(proposal, _caller(args)).to_json()
            else:
                report = cs.access.decline(proposal, _caller(args), note or None).to_json()
            report = _in_language(cs, args, report)
            print(render.terminal(cards.render_report(report, args.actor, language)), flush=True)
            continue
        try:
            report = _turn(cs, args, line, interaction)
        except (TooManyTurnsError, InvalidRequestError) as refused:
            print(_not_sent(refused, language), flush=True)
            # A full conversation: the next message starts a new one.
            interaction = None if isinstance(refused, ConversationFullError) else interaction
            continue
        turn = json.loads(render.to_json(report.to_json()))
        interaction = turn["interaction_id"]
        turns += 1
        if turn["proposal"]:
            last_proposal = turn["proposal"]["proposal_id"]
        print(render.terminal(_turn_text(cs, args, turn)), flush=True)
    ended = _ENDED.text(language, id=interaction) if interaction else _NOTHING_SAID.text(language)
    return {"interaction_id": interaction, "turns": turns}, ended


def _not_sent(refused: TooManyTurnsError | InvalidRequestError, language: str) -> str:
    """What the chat says of a message it did not send: when to try again, that the
    conversation is full, or what is wrong with the message (one too long to read)."""
    if isinstance(refused, TooManyTurnsError):
        return render.terminal(_too_many_turns(refused, language)[1])
    if isinstance(refused, ConversationFullError):
        return _FULL.text(language, limit=MAX_TURNS)
    return render.render_refusal(refused.problems, language, refused.more_problems)


def _in_language(cs: Countersign, args: argparse.Namespace, report: dict[str, Any]) -> Any:
    """An approval's answer with its outcome's sentence in the chat's language (the answer
    carries it in English; the card says it in any)."""
    if args.language == "en" or not report.get("message"):
        return report
    try:
        card = cs.access.card(report["proposal_id"], _caller(args), args.language).to_json()
    except (NotFoundError, ForbiddenError):  # the answer said so already, in English
        return report
    return {**report, "message": card["message"] or report["message"]}


def _named_proposal(rest: str) -> tuple[str | None, str]:
    """The proposal id a command names first (a UUID), if it does, and the words after it
    (a decline's note)."""
    first, _, after = rest.strip().partition(" ")
    try:
        return str(UUID(first)), after.strip()
    except ValueError:
        return None, rest.strip()


def _confirmed(cs: Countersign, args: argparse.Namespace, proposal_id: str) -> bool:
    """Whether the person, told which proposal and what it does (the card's headline, the
    application's words), typed yes. A proposal they may not see is not described: the
    approval that follows answers for it (not found, forbidden) as it would anywhere."""
    try:
        card = cs.access.card(proposal_id, _caller(args), args.language).to_json()
    except (NotFoundError, ForbiddenError):
        return True  # nothing to restate; approve answers "not found" or "forbidden"
    headline = proposal_headline(card["operation"], card["preview"], args.language)
    asked = _CONFIRM.text(args.language, id=proposal_id, headline=render.printable(headline))
    try:
        answer = input(asked).strip().lower()
    except EOFError:
        return False
    return answer in {"yes", "y", "oui", "o"}


def cmd_inbox(cs: Countersign, args: argparse.Namespace) -> Result:
    listed = cs.access.inbox_scope(_caller(args), args.section)
    catch_up(cs, ["browser_view"])
    inbox = cs.read_models.inbox(
        listed.organization_id,
        cs.clock.now(),
        sections=listed.sections,
        operations=listed.pending_operations,
        enabled=listed.enabled,  # counted apart: nobody decides them (not_enabled)
        page=args.page,
        page_size=args.page_size,
    )
    document = json.loads(render.to_json(inbox))
    return document, listings.render_inbox(document, args.language)


def cmd_handback(cs: Countersign, args: argparse.Namespace) -> Result:
    organization_id = str(cs.club.membership(args.org, args.actor).organization_id)
    catch_up(cs, ["handback"])
    messages = cs.read_models.handback(organization_id, args.interaction_id)
    context = cs.read_models.revision_context(organization_id, args.interaction_id)
    document = json.loads(render.to_json({"messages": messages, "revision_context": context}))
    text_key = f"text_{args.language}"
    lines = [m[text_key] for m in document["messages"]] or [_NO_MESSAGES.text(args.language)]
    if context:
        said = context[f"context_{args.language}"]
        lines.append(_REVISION_CONTEXT.text(args.language, context=said))
    return document, "\n".join(lines)


#: Said alike for a conversation whose proposals have no outcome yet and for an id the club
#: has no conversation under (a typo, another club's: the same answer, as everywhere).
_NO_MESSAGES = Localized(
    "No messages in this conversation: none of its proposals has an outcome yet, or the club "
    "has no conversation with that id (countersign chat prints a conversation's id when it "
    "ends; the chat page shows it after interaction= in its address).",
    "Aucun message dans cette conversation : aucune de ses propositions n'a encore de "
    "résultat, ou le club n'a aucune conversation avec cet identifiant (countersign chat "
    "affiche l'identifiant d'une conversation quand elle se termine ; la page de conversation "
    "le montre après interaction= dans son adresse).",
)
_REVISION_CONTEXT = Localized(
    "Revision context for the next message: {context}",
    "Contexte de révision pour le prochain message : {context}",
)


def _version_or_time(value: str) -> int | datetime:
    """A version, or a time taken as the end of the last unit it gives: ``05:15:21.081``, a
    time copied from ``history`` (which shows milliseconds), holds the events shown at it,
    as ``05:15:21`` holds that whole second, ``05:15`` that minute, ``05`` that hour and a
    date that day (the events at 21.081 fell after 21.081000)."""
    # isascii: str.isdigit() is also true for '¹', which int() refuses.
    if value.isascii() and value.isdigit():
        return int(value)
    moment = parse_time(value)
    if _DATE.fullmatch(value.strip()):
        return moment + timedelta(days=1, microseconds=-1)
    found = _TIME.search(_ZONE.sub("", value.strip()))
    if found is None:
        return moment
    minutes, seconds, fraction = found.group(1), found.group(2), found.group(3)
    if minutes is None:
        return moment + timedelta(hours=1, microseconds=-1)
    if seconds is None:
        return moment + timedelta(minutes=1, microseconds=-1)
    if fraction is None:
        return moment + timedelta(seconds=1, microseconds=-1)
    if len(fraction) < 6:
        return moment + timedelta(microseconds=10 ** (6 - len(fraction)) - 1)
    return moment


#: A time's zone at its end (``Z``, ``+05:00``), left out to read its precision.
_ZONE = re.compile(r"(Z|[+-]\d\d(:?\d\d)?)$")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
#: hours, then :minutes, :seconds and a fraction, each if given.
_TIME = re.compile(r"[T ]\d\d(?::(\d\d)(?::(\d\d)(?:[.,](\d+))?)?)?$")


def _sweep_text(what: str, reports: list[dict[str, Any]], language: str) -> str:
    if not reports:
        return Localized("{what}: nothing to do.", "{what} : rien à faire.").text(
            language, what=what
        )
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
            french = f"impossible de lire le fichier de la demande « {raw[1:]} »"
            raise UsageError(f"cannot read the request file {raw[1:]!r}", french) from None
    try:
        return read_json(text)
    except UnreadableJsonError as refused:
        why = f"not valid JSON ({refused.why})"
        raise InvalidRequestError.one("request", why, MALFORMED_REQUEST) from None
