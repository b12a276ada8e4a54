"""Commands for notifications: a club's webhooks and their deliveries, members' languages,
and the sender (``notify run``) that delivers the outbox.

The operator's command line acts for no member: it may manage any club's webhooks.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
from typing import TYPE_CHECKING, Any

from countersign.domain.club.organization import LanguageError
from countersign.domain.club.webhooks import WebhookUrlError
from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import NotMemberError
from countersign.infrastructure.entrypoints.cli import render
from countersign.infrastructure.entrypoints.cli.common import (
    RefusedError,
    Result,
    UsageError,
    service_stopped,
)
from countersign.infrastructure.observability.logs import say

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign
    from countersign.infrastructure.notifications.webhooks import Webhooks


def _webhooks(cs: Countersign) -> Webhooks:
    """The webhook endpoints' service (imported when a command about them runs)."""
    from countersign.infrastructure.notifications.webhooks import Webhooks

    return Webhooks(cs)


def cmd_webhooks_add(cs: Countersign, args: argparse.Namespace) -> Result:
    try:
        added = _webhooks(cs).add(None, args.org, args.url)
    except WebhookUrlError as error:
        said = str(error)
        if error.code == "internal_address":
            # The operator at the command line can allow it, for every process.
            said += (
                "; to post to an internal network, list it in COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS"
                " (127.0.0.0/8,10.1.0.0/16) in every process's environment"
            )
        raise UsageError(said) from None
    said = _SAID["added"].text(
        args.language, id=added.endpoint_id, organization=added.organization, url=added.url
    )
    return added.to_json(), f"{said}\n{added.secret}"


def cmd_webhooks_list(cs: Countersign, args: argparse.Namespace) -> Result:
    endpoints = _webhooks(cs).endpoints(None, args.org)
    by = _SAID["added_by"]
    lines = [
        f"{e['endpoint_id']}  {e['url']}  ({by.text(args.language, who=e['added_by'])})"
        for e in endpoints
    ]
    return endpoints, "\n".join(lines) or _SAID["none"].text(args.language, organization=args.org)


def cmd_webhooks_remove(cs: Countersign, args: argparse.Namespace) -> Result:
    _webhooks(cs).remove(None, args.org, args.endpoint_id)
    return {"endpoint_id": args.endpoint_id, "removed": True}, (
        _SAID["removed"].text(args.language, id=args.endpoint_id)
    )


def cmd_webhooks_deliveries(cs: Countersign, args: argparse.Namespace) -> Result:
    found = _webhooks(cs).deliveries(
        None, args.org, dead_only=args.dead, limit=args.limit, before=args.before
    )
    document: Any = _json(found)
    lines = []
    for delivery in found:
        lines.append(
            f"{delivery['delivery_id']}  {delivery['type']}  {delivery['channel']} "
            f"{delivery['target']}: {delivery['status']} "
            + _SAID["after"].text(args.language, n=delivery["attempts"])
            + (
                _SAID["endpoint_removed"].text(args.language)
                if delivery["endpoint_removed"]
                else ""
            )
        )
        for attempt in delivery["attempt_log"]:
            next_try = attempt["next_attempt_at"]
            lines.append(
                f"    #{attempt['attempt']} {attempt['started_at']:%Y-%m-%d %H:%M:%S}Z "
                f"{attempt['result']}"
                + (
                    _SAID["next_try"].text(args.language, at=f"{next_try:%Y-%m-%d %H:%M:%S}Z")
                    if next_try
                    else ""
                )
            )
    empty = _SAID["no_dead" if args.dead else "no_deliveries"].text(args.language)
    return document, "\n".join(lines) or empty


def cmd_webhooks_redeliver(cs: Countersign, args: argparse.Namespace) -> Result:
    if not args.all and not args.delivery_id:
        said = _SAID["name_one"]
        raise UsageError(said.en, said.fr)
    from countersign.infrastructure.notifications.webhooks import EndpointRemovedError

    try:
        ids = _webhooks(cs).redeliver(None, args.org, None if args.all else args.delivery_id)
    except EndpointRemovedError:
        said = Localized(EndpointRemovedError.MESSAGE, EndpointRemovedError.FRENCH)
        raise RefusedError("endpoint_removed", said.text(args.language)) from None
    key = "redelivered" if ids else ("none_put_back" if args.all else "no_such")
    text = _SAID[key].text(args.language, n=len(ids))
    return {"redelivered": ids}, text


#: The webhook commands' answers.
_SAID = {
    "added": Localized(
        "Webhook {id} of {organization} posts to {url}.\nIts signing secret is shown once; "
        "store it now:",
        "Le webhook {id} de {organization} envoie à {url}.\nSon secret de signature n'est "
        "montré qu'une fois ; conservez-le maintenant :",
    ),
    "added_by": Localized("added by {who}", "ajouté par {who}"),
    "none": Localized("{organization} has no webhooks.", "{organization} n'a aucun webhook."),
    "removed": Localized(
        "Webhook {id} removed: nothing more is posted to it.",
        "Webhook {id} retiré : plus rien ne lui est envoyé.",
    ),
    "after": Localized("after {n} attempt(s)", "après {n} tentative(s)"),
    "next_try": Localized(", next try {at}", ", prochain essai {at}"),
    "endpoint_removed": Localized(
        " (its endpoint was removed: not tried again)",
        " (son webhook a été retiré : plus d'essai)",
    ),
    "no_dead": Localized("No dead letters.", "Aucun envoi abandonné."),
    "no_deliveries": Localized("No deliveries yet.", "Aucun envoi pour l'instant."),
    "name_one": Localized(
        "name a dead letter's delivery id, or --all for every dead letter",
        "nommez l'identifiant d'un envoi abandonné, ou --all pour tous",
    ),
    "redelivered": Localized(
        "{n} dead letter(s) put back in line; the next 'countersign notify run' sends them.",
        "{n} envoi(s) abandonné(s) remis en file ; le prochain 'countersign notify run' les "
        "envoie.",
    ),
    "no_such": Localized("No such dead letter.", "Aucun envoi abandonné de ce nom."),
    "none_put_back": Localized(
        "No dead letter put back: there are none, or only ones to webhooks removed since, "
        "which are not redelivered.",
        "Aucun envoi abandonné remis en file : il n'y en a pas, ou seulement pour des "
        "webhooks retirés depuis, qui ne sont pas renvoyés.",
    ),
}


def cmd_members_set_language(cs: Countersign, args: argparse.Namespace) -> Result:
    """The language countersign writes to a member in: ``members set-language LANG``. The
    old spelling, ``--language LANG`` alone, still names it, and says that ``--language`` now
    chooses the language of the answer, on this command as on every other."""
    chosen = args.member_language
    if chosen is None:
        if not args.language_named:
            raise UsageError(_NAME_IT.text("en"), _NAME_IT.text("fr"))
        chosen = args.language_named
        say(_OLD_SPELLING.text(args.language, chosen=chosen), logging.WARNING)
    try:
        language = cs.notifications.set_member_language(args.org, args.email, chosen)
    except LanguageError as error:
        french = _NOT_A_LANGUAGE.text("fr", chosen=chosen[:20])
        raise UsageError(str(error), french) from None
    except NotMemberError:
        said = _NOT_MEMBER.filled(email=args.email, organization=args.org)
        raise UsageError(said.en, said.fr) from None
    email = args.email.strip().lower()
    return {"organization": args.org, "email": email, "language": language}, (
        _WRITTEN_TO.text(args.language, email=email, chosen=language)
    )


_NAME_IT = Localized(
    "name the member's language: countersign members set-language LANG --org ORG --email "
    "EMAIL (en or fr)",
    "nommez la langue du membre : countersign members set-language LANGUE --org CLUB --email "
    "EMAIL (en ou fr)",
)
_OLD_SPELLING = Localized(
    "note: the member's language is now named on its own (members set-language {chosen} "
    "--org ... --email ...); --language chooses the language countersign answers in",
    "remarque : la langue du membre se nomme maintenant seule (members set-language "
    "{chosen} --org ... --email ...) ; --language choisit la langue des réponses de "
    "countersign",
)
_NOT_A_LANGUAGE = Localized(
    "{chosen!r} is not a language; use one of: en, fr",
    "« {chosen} » n'est pas une langue ; utilisez en ou fr",
)
_NOT_MEMBER = Localized(
    "{email} is not a member of {organization}", "{email} n'est pas membre de {organization}"
)
_WRITTEN_TO = Localized(
    "{email} is written to in {chosen}.", "countersign écrit à {email} en {chosen}."
)


def cmd_notify_run(cs: Countersign, args: argparse.Namespace) -> Result:
    """Pass after pass (or one, with --once), a progress line per pass that did something."""
    from countersign.infrastructure.entrypoints.cli import service_words as words
    from countersign.infrastructure.notifications.sender import PassReport
    from countersign.infrastructure.notifications.webhooks import notification_sender

    sender = notification_sender(cs)
    language = args.language
    if args.once:
        report = sender.run_once()
        return report.to_json(), words.NOTIFY_PASS.text(
            language, line=words.notify_line(report, language)
        )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    totals = PassReport()

    def progress(report: PassReport) -> None:
        for name in ("fanned_out", "attempted", "delivered", "retrying", "dead"):
            setattr(totals, name, getattr(totals, name) + getattr(report, name))
        if report.fanned_out or report.attempted:
            say(words.NOTIFY_PASS.text(language, line=words.notify_line(report, language)))

    say(words.NOTIFY_RUNNING.text(language, every=f"{args.interval:g}"))
    sender.run(stop, args.interval, progress)
    document = {"stopped": True, **totals.to_json()}
    said = words.NOTIFY_STOPPED.text(language, line=words.notify_line(totals, language))
    return service_stopped(args, document, said)


def _json(value: Any) -> Any:
    return json.loads(render.to_json(value))
