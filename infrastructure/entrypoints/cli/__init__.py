"""The ``countersign`` command line, for application services and operators.

Every command takes ``--json`` and then prints exactly one JSON document on stdout. The exit
status is 0 whenever the command was processed, whatever its outcome; 2 for usage errors and
1 for internal errors (which print a correlation id, never a stack trace).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from countersign.application.authorization import member_of, organization_by_slug
from countersign.application.errors import (
    CorruptRecordError,
    ForbiddenError,
    UnknownOperationError,
    new_correlation_id,
)
from countersign.domain.contracts.base import InvalidRequestError
from countersign.domain.errors import ConcurrencyConflictError, CountersignError, NotFoundError
from countersign.infrastructure.audit_export import write_export
from countersign.infrastructure.audit_verify import verify
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.entrypoints.cli import render
from countersign.infrastructure.entrypoints.cli.progress import Progress
from countersign.infrastructure.projection_runner import (
    ProjectionStoppedError,
    rebuild_together,
    run_forever,
)
from countersign.infrastructure.settings import DATABASE_URL_ENV, SettingsError
from countersign.projections import PROJECTIONS

log = logging.getLogger("countersign.cli")

#: The application ``serve`` runs, named rather than imported: the CLI does not import the
#: HTTP API or the pages (each entry point is independent of the others).
SERVER_FACTORY = "countersign.infrastructure.server:create_app"


class UsageError(Exception):
    """Raised when the command line itself is wrong; the message says how to fix it."""


# -- commands ---------------------------------------------------------------------------------
# Each returns (json document, human text).

Result = tuple[Any, str]
_ALREADY_PRINTED = object()  # commands that stream their own output


def cmd_seed(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.demo.passwords import seed_passwords
    from countersign.infrastructure.demo.seed import seed

    data = seed(cs)
    data["passwords"] = seed_passwords(cs)
    lines = ["Seeded the demo clubs (running it again changes nothing):"]
    lines += [f"  organization {o['slug']}: {o['name']}" for o in data["organizations"]]
    lines += [
        f"  user {u['email']} ({u['role']} of {u['organization']}), "
        f"password for local use: {data['passwords'][u['email']]}"
        for u in data["users"]
    ]
    lines += [f"  order {key}: {order_id}" for key, order_id in data["orders"].items()]
    lines += [f"  broadcast form of {slug}: {fid}" for slug, fid in data["broadcast_forms"].items()]
    return data, "\n".join(lines)


def cmd_orders_show(cs: Countersign, args: argparse.Namespace) -> Result:
    order = cs.club.investigate(args.org, args.order_id)
    return order, render.render_order(order)


def cmd_orders_refund_manually(cs: Countersign, args: argparse.Namespace) -> Result:
    order = cs.club.refund_manually(args.org, args.order_id, args.actor, args.payment, args.amount)
    return order, "Refund recorded.\n" + render.render_order(order)


def cmd_roster_leagues(cs: Countersign, args: argparse.Namespace) -> Result:
    leagues = cs.club.leagues(args.org)
    text = "\n".join(f"{league['name']}: {league['active_members']} members" for league in leagues)
    return leagues, text


def cmd_roster_join(cs: Countersign, args: argparse.Namespace) -> Result:
    joined = cs.club.join(args.org, args.league, args.name, args.email)
    return joined, f"{args.name} joined {args.league} ({joined['active_members']} members)."


def cmd_propose(cs: Countersign, args: argparse.Namespace) -> Result:
    request = _read_request(args.request)
    created = cs.proposals.propose(
        organization=args.org,
        actor=args.actor,
        operation=args.operation,
        resource_id=args.resource,
        request=request,
    ).to_json()
    return created, render.render_created(created)


def cmd_approve(cs: Countersign, args: argparse.Namespace) -> Result:
    report = cs.proposals.approve(args.proposal_id, args.actor).to_json()
    return report, render.render_report(report)


def cmd_decline(cs: Countersign, args: argparse.Namespace) -> Result:
    report = cs.proposals.decline(args.proposal_id, args.actor, args.note).to_json()
    return report, render.render_report(report)


def cmd_show(cs: Countersign, args: argparse.Namespace) -> Result:
    card = cs.proposals.card(args.proposal_id, args.actor, args.language).to_json()
    return card, render.render_card(card)


def cmd_history(cs: Countersign, args: argparse.Namespace) -> Result:
    as_of = _version_or_time(args.as_of) if args.as_of else None
    history = json.loads(render.to_json(cs.audit.history(args.proposal_id, as_of)))
    return history, render.render_history(history)


def cmd_reconcile(cs: Countersign, args: argparse.Namespace) -> Result:
    reports = [report.to_json() for report in cs.proposals.reconcile()]
    return {"resolved": reports}, _sweep_text("reconcile", reports)


def cmd_expire(cs: Countersign, args: argparse.Namespace) -> Result:
    reports = [report.to_json() for report in cs.proposals.expire_due()]
    return {"expired": reports}, _sweep_text("expire", reports)


def cmd_provider_refunds(cs: Countersign, args: argparse.Namespace) -> Result:
    refunds = cs.sandbox.refunds()
    lines = [
        f"{r['idempotency_key']}: {r['status']}, {r['amount_cents']} cents, "
        f"{r['requests']} request(s)"
        for r in refunds
    ]
    return refunds, "\n".join(lines) or "The sandbox holds no refunds."


def cmd_chat(cs: Countersign, args: argparse.Namespace) -> Result:
    if args.message is not None:
        report = _turn(cs, args, args.message, args.interaction)
        document = json.loads(render.to_json(report.to_json()))
        return document, render.render_turn(document)
    return _chat_interactively(cs, args)


def _turn(cs: Countersign, args: argparse.Namespace, message: str, interaction: str | None) -> Any:
    return cs.assistant.turn(
        organization=args.org,
        actor=args.actor,
        section=args.section,
        resource_id=args.resource,
        message=message,
        interaction_id=interaction,
    )


def _chat_interactively(cs: Countersign, args: argparse.Namespace) -> Result:
    print(
        f"Chatting with the {args.section.replace('_', ' ')} assistant as {args.actor}. "
        "Commands: /approve, /decline [note], /quit.",
        flush=True,
    )
    interaction = args.interaction
    last_proposal: str | None = None
    turns = 0
    while True:
        try:
            line = input("you> ").strip()
        except EOFError:
            break
        if not line:
            continue
        if line in ("/quit", "/exit"):
            break
        if line.startswith(("/approve", "/decline")):
            if last_proposal is None:
                print("There is no proposal in this conversation yet.")
                continue
            if line.startswith("/approve"):
                report = cs.proposals.approve(last_proposal, args.actor).to_json()
            else:
                note = line[len("/decline") :].strip() or None
                report = cs.proposals.decline(last_proposal, args.actor, note).to_json()
            print(render.render_report(report), flush=True)
            continue
        turn = json.loads(render.to_json(_turn(cs, args, line, interaction).to_json()))
        interaction = turn["interaction_id"]
        turns += 1
        if turn["proposal"]:
            last_proposal = turn["proposal"]["proposal_id"]
        print(render.render_turn(turn), flush=True)
    return {"interaction_id": interaction, "turns": turns}, f"Conversation {interaction} ended."


def cmd_serve(cs: Countersign, args: argparse.Namespace) -> Result:
    import uvicorn
    from countersign.infrastructure.server_settings import (
        SECURE_ENV,
        is_loopback,
        secure_from_env,
        trusted_proxies_from_env,
        uvicorn_proxy_options,
    )

    # Settings first, so a wrong value stops the server before anything is served.
    trusted = trusted_proxies_from_env()
    # Secure cookies need HTTPS, and a browser on plain http://127.0.0.1 would never send them
    # back: on a loopback host the default is off. An explicit COUNTERSIGN_SECURE_COOKIES
    # always wins (an HTTPS reverse proxy on the same machine sets it to 1).
    secure = secure_from_env(default=not is_loopback(args.host))
    # The server wires its own countersign from the environment (server.create_app, once per
    # worker): this one has checked the settings and the database, and is done.
    configuration = {DATABASE_URL_ENV: cs.settings.database_url, SECURE_ENV: str(int(secure))}
    cs.close()
    print(
        f"countersign: serving on http://{args.host}:{args.port} (pages at /, API under "
        f"/api/v1, OpenAPI at /openapi.json); secure cookies {'on' if secure else 'off'}; "
        f"forwarded headers trusted from {', '.join(trusted) or 'nobody'}; Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    with _environment(configuration):
        uvicorn.run(
            SERVER_FACTORY,
            factory=True,
            host=args.host,
            port=args.port,
            log_level="warning",
            **uvicorn_proxy_options(trusted),
        )
    return {"stopped": True}, "countersign: server stopped."


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """These environment variables for the block (the server process reads them), then back."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def cmd_users_set_password(cs: Countersign, args: argparse.Namespace) -> Result:
    """A new password for EMAIL, read from standard input or a prompt (never the command
    line, where other users and the shell history would see it); every browser session of
    that person ends."""
    from countersign.infrastructure.identity.passwords import set_password

    password = _read_new_password()
    ended = set_password(cs, args.actor, password)
    email = args.actor.strip().lower()
    return {"email": email, "password_set": True, "sessions_ended": ended}, (
        f"Password set for {email}; {ended} browser session(s) ended."
    )


def _read_new_password() -> str:
    if not sys.stdin.isatty():
        # Piped: the first line, without its line ending (a password may hold other spaces).
        return sys.stdin.readline().rstrip("\r\n")
    import getpass

    first = getpass.getpass("New password: ")
    if getpass.getpass("Repeat it: ") != first:
        raise UsageError("the two passwords differ; nothing was changed")
    return first


def cmd_tokens_issue(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.identity.tokens import issue_token

    issued = issue_token(
        cs,
        args.org,
        args.name,
        [p.strip() for p in args.permissions.split(",") if p.strip()],
        issued_by=args.actor,
    )
    document = {
        "token_id": issued.token_id,
        "token": issued.token,
        "organization": issued.organization,
        "name": issued.name,
        "issued_by": issued.issued_by,
        "permissions": list(issued.permissions),
    }
    text = (
        f"Token {issued.token_id} for {issued.organization} ({', '.join(issued.permissions)}), "
        f"acting as {issued.issued_by}. Shown once; store it now:\n{issued.token}"
    )
    return document, text


def cmd_tokens_revoke(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.identity.tokens import revoke_token

    revoked = revoke_token(cs, args.token_id)
    return {"token_id": args.token_id, "revoked": revoked}, (
        f"Token {args.token_id} revoked." if revoked else f"No active token {args.token_id}."
    )


def cmd_tokens_list(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.identity.tokens import list_tokens

    tokens = json.loads(render.to_json(list_tokens(cs, args.org)))
    lines = [
        f"{t['token_id']}  {t['name']:<20} {','.join(t['permissions'])}"
        + ("  (revoked)" if t.get("revoked_at") else "")
        for t in tokens
    ]
    return tokens, "\n".join(lines) or "No tokens."


def cmd_inbox(cs: Countersign, args: argparse.Namespace) -> Result:
    org = organization_by_slug(cs.store, args.org)
    member_of(cs.store, org.id, args.actor)
    _catch_up(cs, ["browser_view"])
    inbox = cs.read_models.inbox(
        str(org.id),
        cs.proposals.clock.now(),
        section=args.section,
        page=args.page,
        page_size=args.page_size,
    )
    document = json.loads(render.to_json(inbox))
    return document, render.render_inbox(document)


def cmd_handback(cs: Countersign, args: argparse.Namespace) -> Result:
    org = organization_by_slug(cs.store, args.org)
    member_of(cs.store, org.id, args.actor)
    _catch_up(cs, ["handback"])
    messages = cs.read_models.handback(str(org.id), args.interaction_id)
    context = cs.read_models.revision_context(str(org.id), args.interaction_id)
    document = json.loads(render.to_json({"messages": messages, "revision_context": context}))
    text_key = f"text_{args.language}"
    lines = [m[text_key] for m in document["messages"]] or ["No messages."]
    if context:
        lines.append(
            f"Revision context for the next message: {context[f'context_{args.language}']}"
        )
    return document, "\n".join(lines)


def cmd_projections_status(cs: Countersign, args: argparse.Namespace) -> Result:
    statuses = [runner.status().to_json() for runner in cs.projection_runners(args.names)]
    lines = [f"{s['name']:<14} position {s['position']:>9,}  lag {s['lag']:>9,}" for s in statuses]
    return statuses, "\n".join(lines)


def cmd_projections_rebuild(cs: Countersign, args: argparse.Namespace) -> Result:
    runners = cs.projection_runners(args.names, batch_size=args.batch_size)
    names = [runner.name for runner in runners]
    progress = Progress(f"rebuild {', '.join(names)}", runners[0].head() if runners else 0)
    events = rebuild_together(runners, progress.advance)
    progress.finish()
    result = {
        "projections": names,
        "events": events,
        "seconds": round(progress.elapsed, 3),
        "events_per_second": round(progress.rate),
    }
    text = (
        f"rebuilt {', '.join(names)} from {events:,} events in {result['seconds']} s "
        f"({result['events_per_second']:,} events/s, the log read once for all)"
    )
    return result, text


def cmd_projections_run(cs: Countersign, args: argparse.Namespace) -> Result:
    runners = cs.projection_runners(args.names, batch_size=args.batch_size)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    processed: dict[str, int] = {runner.name: 0 for runner in runners}
    last_report = [time.monotonic()]

    def on_batch(name: str, count: int) -> None:
        processed[name] += count
        if time.monotonic() - last_report[0] >= 5:
            last_report[0] = time.monotonic()
            print(
                "projections: " + ", ".join(f"{n} +{c:,}" for n, c in processed.items()),
                file=sys.stderr,
                flush=True,
            )

    print(
        f"projections: following the log for {', '.join(processed)} (Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    run_forever(runners, stop, on_batch=on_batch)
    statuses = [runner.status().to_json() for runner in runners]
    return {"stopped": True, "processed": processed, "status": statuses}, (
        "projections: stopped cleanly; " + ", ".join(f"{n} +{c:,}" for n, c in processed.items())
    )


def cmd_audit_export(cs: Countersign, args: argparse.Namespace) -> Result:
    org_id = str(organization_by_slug(cs.store, args.org).id) if args.org else None
    since = _time(args.since) if args.since else None
    _catch_up(cs, ["audit_trail"])
    rows = cs.read_models.audit_trail(organization_id=org_id, since=since)
    count = write_export(rows, args.format, sys.stdout)
    print(f"audit export: {count} rows", file=sys.stderr)
    return _ALREADY_PRINTED, ""


def cmd_audit_verify(cs: Countersign, args: argparse.Namespace) -> Result:
    try:
        _catch_up(cs, ["audit_trail"])
    except ProjectionStoppedError as stopped:
        # A tampered event can be one the trail cannot process; verify the chain regardless.
        log.warning("audit trail not caught up: %s", stopped)
    report = verify(cs.app, cs.sql).to_json()
    if report["ok"]:
        text = (
            f"audit verify: OK, {report['events_checked']:,} events of "
            f"{report['proposals_checked']:,} proposals; every hash-chain link holds."
        )
    else:
        broken = report["first_broken_link"]
        text = (
            f"audit verify: BROKEN. First broken link: proposal {broken['proposal_id']} "
            f"version {broken['version']}: {broken['problem']}. "
            f"{report['broken_proposals']} proposal(s) affected."
        )
    return report, text


def _catch_up(cs: Countersign, names: list[str]) -> None:
    for runner in cs.projection_runners(names):
        runner.catch_up()


def _version_or_time(value: str) -> int | datetime:
    # isascii: str.isdigit() is also true for '¹', which int() refuses.
    return int(value) if value.isascii() and value.isdigit() else _time(value)


def _time(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{value!r} is not a version or an ISO time like 2026-11-30T09:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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
        raise InvalidRequestError.one("request", f"not valid JSON ({error.msg})") from None


# -- parser -----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON document")
    common.add_argument("--database", metavar="URL", help="sqlite:///file.db or postgresql://...")

    parser = argparse.ArgumentParser(
        prog="countersign",
        description="AI assistants propose; people approve; the application executes.",
    )
    # Also accepted before the command; merged in main() (argparse sub-parsers would clobber it).
    parser.add_argument("--database", dest="database_first", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--json", dest="json_first", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str, handler: Callable[..., Result] | None, help_text: str, parent: Any = sub
    ) -> Any:
        command = parent.add_parser(name, parents=[common], help=help_text, description=help_text)
        command.set_defaults(handler=handler)
        return command

    add("seed", cmd_seed, "create the demo club data (idempotent)")

    orders = sub.add_parser("orders", help="order investigations and manual refunds")
    orders_sub = orders.add_subparsers(dest="orders_command", required=True, metavar="COMMAND")
    show = add("show", cmd_orders_show, "the order investigation", orders_sub)
    show.add_argument("order_id")
    show.add_argument("--org", required=True)
    manual = add("refund-manually", cmd_orders_refund_manually, "a manual refund", orders_sub)
    manual.add_argument("order_id")
    manual.add_argument("--org", required=True)
    manual.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    manual.add_argument("--payment", required=True, metavar="REF")
    manual.add_argument("--amount", required=True, type=int, metavar="CENTS")

    roster = sub.add_parser("roster", help="leagues and members")
    roster_sub = roster.add_subparsers(dest="roster_command", required=True, metavar="COMMAND")
    leagues = add("leagues", cmd_roster_leagues, "leagues and member counts", roster_sub)
    leagues.add_argument("--org", required=True)
    join = add("join", cmd_roster_join, "add a member to a league", roster_sub)
    join.add_argument("--org", required=True)
    join.add_argument("--league", required=True)
    join.add_argument("--name", required=True)
    join.add_argument("--email", required=True)

    propose = add("propose", cmd_propose, "turn a model-facing request into a proposal")
    propose.add_argument("--org", required=True)
    propose.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    propose.add_argument("--operation", required=True, metavar="KIND")
    propose.add_argument("--resource", required=True, metavar="ID")
    propose.add_argument("--request", required=True, metavar="JSON|@FILE")

    approve = add("approve", cmd_approve, "approve a proposal by its id")
    approve.add_argument("proposal_id")
    approve.add_argument("--as", dest="actor", required=True, metavar="EMAIL")

    decline = add("decline", cmd_decline, "decline a proposal by its id")
    decline.add_argument("proposal_id")
    decline.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    decline.add_argument("--note")

    card = add("show", cmd_show, "a proposal's review card")
    card.add_argument("proposal_id")
    card.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    card.add_argument("--language", default="en", choices=["en", "fr"])

    history = add("history", cmd_history, "a proposal's full event history (auditors)")
    history.add_argument("proposal_id")
    history.add_argument("--as-of", metavar="VERSION|TIME", help="a version, or an ISO time")

    add("reconcile", cmd_reconcile, "one reconciliation pass over uncertain executions")
    add("expire", cmd_expire, "one pass recording Expired for overdue proposals")

    provider = sub.add_parser("provider", help="the payment-provider sandbox")
    provider_sub = provider.add_subparsers(dest="provider_command", required=True)
    add("refunds", cmd_provider_refunds, "refunds the sandbox holds", provider_sub)

    chat = add("chat", cmd_chat, "talk to a section assistant (interactive, or one --message)")
    chat.add_argument("--org", required=True)
    chat.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    chat.add_argument("--section", required=True, choices=["orders", "email_broadcasts"])
    chat.add_argument("--resource", required=True, metavar="ID", help="order id or form id")
    chat.add_argument("--message", help="one turn, then exit")
    chat.add_argument("--interaction", metavar="ID", help="continue this conversation")

    inbox = add("inbox", cmd_inbox, "pending proposals awaiting approval, newest first")
    inbox.add_argument("--org", required=True)
    inbox.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    inbox.add_argument("--section", choices=["orders", "email_broadcasts"])
    inbox.add_argument("--page", type=int, default=1)
    inbox.add_argument("--page-size", type=int, default=20)

    handback = add("handback", cmd_handback, "app-authored messages of one conversation")
    handback.add_argument("interaction_id")
    handback.add_argument("--org", required=True)
    handback.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    handback.add_argument("--language", default="en", choices=["en", "fr"])

    projections = sub.add_parser("projections", help="run, rebuild and inspect read models")
    projections_sub = projections.add_subparsers(
        dest="projections_command", required=True, metavar="COMMAND"
    )
    for name, handler, help_text in (
        ("run", cmd_projections_run, "follow the log (stops cleanly on SIGTERM or Ctrl-C)"),
        ("rebuild", cmd_projections_rebuild, "drop and rebuild from the whole log"),
        ("status", cmd_projections_status, "position and lag of each projection"),
    ):
        command = add(name, handler, help_text, projections_sub)
        command.add_argument("names", nargs="*", metavar="NAME", help=", ".join(PROJECTIONS))
        command.add_argument("--batch-size", type=int, default=1000, help=argparse.SUPPRESS)

    audit = sub.add_parser("audit", help="export and verify the audit trail")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True, metavar="COMMAND")
    export = add("export", cmd_audit_export, "stream the audit trail", audit_sub)
    export.add_argument("--org")
    export.add_argument("--since", metavar="TIME")
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    add("verify", cmd_audit_verify, "prove no proposal event was altered or removed", audit_sub)

    users = sub.add_parser("users", help="people's sign-in credentials")
    users_sub = users.add_subparsers(dest="users_command", required=True, metavar="COMMAND")
    set_password = add(
        "set-password",
        cmd_users_set_password,
        "set a person's password (read from stdin or a prompt) and end their browser sessions",
        users_sub,
    )
    set_password.add_argument("--as", dest="actor", required=True, metavar="EMAIL")

    serve = add("serve", cmd_serve, "serve the HTTP API (FastAPI over uvicorn)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)

    tokens = sub.add_parser("tokens", help="API tokens for application services")
    tokens_sub = tokens.add_subparsers(dest="tokens_command", required=True, metavar="COMMAND")
    issue = add("issue", cmd_tokens_issue, "issue a token (shown once)", tokens_sub)
    issue.add_argument("--org", required=True)
    issue.add_argument(
        "--as", dest="actor", required=True, metavar="EMAIL", help="the member the service acts as"
    )
    issue.add_argument("--name", required=True)
    issue.add_argument(
        "--permissions",
        required=True,
        help="comma-separated, e.g. orders.refund,email_broadcasts.prepare",
    )
    revoke = add("revoke", cmd_tokens_revoke, "revoke a token at once", tokens_sub)
    revoke.add_argument("token_id")
    listing = add("list", cmd_tokens_list, "tokens of an organization", tokens_sub)
    listing.add_argument("--org", required=True)

    add("demo", None, "the guided story, on a fresh SQLite file unless --database is given")
    return parser


# -- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = build_parser()
    args = parser.parse_args(argv)
    args.database = getattr(args, "database", None) or args.database_first
    args.json = getattr(args, "json", False) or args.json_first
    if args.command == "demo":
        from countersign.infrastructure.demo.story import run_demo

        return run_demo(database_url=args.database, as_json=args.json)
    return run(args)


def run(args: argparse.Namespace) -> int:
    emit = _emitter(args.json)
    try:
        cs = bootstrap(database_url=args.database)
    except SettingsError as error:
        return emit({"error": "configuration", "message": str(error)}, f"error: {error}", 2)
    except psycopg.OperationalError:
        message = "cannot reach the PostgreSQL server; check COUNTERSIGN_DATABASE_URL or --database"
        return emit({"error": "database_unavailable", "message": message}, f"error: {message}", 1)
    try:
        document, text = args.handler(cs, args)
        return emit(document, text, 0)
    except InvalidRequestError as invalid:
        problems = [problem.model_dump() for problem in invalid.problems]
        return emit(
            {"error": "invalid_request", "problems": problems}, render.render_problems(problems), 0
        )
    except UnknownOperationError:
        problems = [{"field": "operation", "message": "no such operation"}]
        return emit(
            {"error": "invalid_request", "problems": problems}, render.render_problems(problems), 0
        )
    except NotFoundError:
        return emit({"error": "not_found"}, "Not found.", 0)
    except ForbiddenError:
        return emit({"error": "forbidden"}, "You do not have permission to do that.", 0)
    except UsageError as error:
        return emit({"error": "usage", "message": str(error)}, f"error: {error}", 2)
    except SettingsError as error:
        return emit({"error": "configuration", "message": str(error)}, f"error: {error}", 2)
    except ConcurrencyConflictError:
        message = "the records this command acts on are busy with other changes; try again"
        return emit({"error": "busy", "message": message}, f"Busy: {message}.", 1)
    except ProjectionStoppedError as stopped:
        return emit({"error": "projection_stopped", "message": str(stopped)}, str(stopped), 1)
    except CorruptRecordError as corrupt:
        return _internal(emit, corrupt.correlation_id)
    except CountersignError as error:
        # A domain rule refused the command (for example a manual refund above the balance).
        return emit({"error": "rejected", "message": str(error)}, f"Rejected: {error}.", 0)
    except Exception:
        correlation_id = new_correlation_id()
        log.exception("internal error, correlation id %s", correlation_id)
        return _internal(emit, correlation_id)
    finally:
        cs.close()


def _internal(emit: Callable[[Any, str, int], int], correlation_id: str) -> int:
    return emit(
        {"error": "internal_error", "correlation_id": correlation_id},
        f"Internal error. Reference: {correlation_id}",
        1,
    )


def _emitter(as_json: bool) -> Callable[[Any, str, int], int]:
    def emit(document: Any, text: str, status: int) -> int:
        if document is not _ALREADY_PRINTED:
            print(render.to_json(document) if as_json else text)
        return status

    return emit
