"""The grammar of the commands that run countersign's services and look after its data:
``projections``, ``audit``, ``users``, ``serve``, ``worker``, ``mcp``, ``tokens``, ``webhooks``
and ``notify`` (``parser.build_parser`` adds them). Like the rest of the grammar, it names each
handler and imports none.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from countersign.infrastructure.entrypoints.cli.common import (
    Handler,
    positive_whole_number,
    whole_number,
)


class _ProjectionNames:
    """The projections' names, in a command's help: the projections are imported when the
    help is shown, not to build the grammar."""

    def __str__(self) -> str:
        from countersign.projections import PROJECTIONS

        return ", ".join(PROJECTIONS)


def worker_count(value: str) -> int:
    """A number of server processes: 1 to 64."""
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 64:
        raise argparse.ArgumentTypeError(f"a number of processes from 1 to 64, not {value!r}")
    return int(value)


def event_count(value: str) -> int:
    """A number of events: 0 or more."""
    if not (value.isascii() and value.isdigit()):
        raise argparse.ArgumentTypeError(f"a number of events, 0 or more, not {value!r}")
    return int(value)


def port_number(value: str) -> int:
    """A TCP port to listen on: 1 to 65535."""
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"a port from 1 to 65535, not {value!r}")
    return int(value)


def positive_seconds(value: str) -> float:
    """A pause between passes: a positive number of seconds."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"a positive number of seconds, not {value!r}")
    return seconds


def add_service_commands(sub: Any, add: Callable[..., Any]) -> None:
    """The services' and the data's commands, on the command line's ``sub`` parsers."""
    projections = sub.add_parser("projections", help="run, rebuild and inspect read models")
    projections_sub = projections.add_subparsers(
        dest="projections_command", required=True, metavar="COMMAND"
    )
    for name, handler, help_text in (
        (
            "run",
            Handler("projections", "cmd_projections_run"),
            "follow the log (stops cleanly on SIGTERM or Ctrl-C)",
        ),
        (
            "rebuild",
            Handler("projections", "cmd_projections_rebuild"),
            "drop and rebuild from the whole log",
        ),
        (
            "status",
            Handler("projections", "cmd_projections_status"),
            "position and lag of each projection",
        ),
    ):
        command = add(name, handler, help_text, projections_sub)
        if name == "rebuild":
            command.set_defaults(maintenance=True)
        names = command.add_argument("names", nargs="*", metavar="NAME", help="%(known)s")
        names.known = _ProjectionNames()  # what its help's %(known)s shows
        command.add_argument(
            "--batch-size", type=positive_whole_number, default=None, help=argparse.SUPPRESS
        )
    skip = add(
        "skip",
        Handler("projections", "cmd_projections_skip"),
        "pass one event that cannot be read, in every projection, recorded with a reason",
        projections_sub,
    )
    skip.add_argument(
        "position", type=whole_number, metavar="POSITION", help="the event's notification id"
    )
    skip.add_argument(
        "--reason", required=True, metavar="TEXT", help="why (kept, and shown by status)"
    )

    audit = sub.add_parser("audit", help="export and verify the audit trail")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True, metavar="COMMAND")
    export = add(
        "export", Handler("projections", "cmd_audit_export"), "stream the audit trail", audit_sub
    )
    export.add_argument("--org", help="one club's rows (its slug)")
    export.add_argument("--proposal", metavar="PROPOSAL_ID", help="one proposal's rows")
    export.add_argument("--actor", metavar="EMAIL", help="the rows of one actor (or countersign)")
    export.add_argument("--since", metavar="TIME", help="rows at or after this ISO time")
    export.add_argument("--until", metavar="TIME", help="rows before this ISO time")
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    # The maintenance commands read or write everything: no statement timeout
    # (COUNTERSIGN_DATABASE_TIMEOUT bounds the services' requests, not these).
    export.set_defaults(maintenance=True)
    verify = add(
        "verify",
        Handler("projections", "cmd_audit_verify"),
        "prove no proposal event was altered or removed",
        audit_sub,
    )
    verify.add_argument(
        "--require-seals",
        action="store_true",
        help="with seal keys configured: a proposal without a seal fails the check too (for a "
        "deployment that held its keys from its start; COUNTERSIGN_SEALS_REQUIRED=true says "
        "it for every check)",
    )
    verify.add_argument(
        "--anchor",
        metavar="FILE",
        help="also check the store against an anchor `audit anchor` wrote: every stream it "
        "holds (the proposals, the clubs, members, orders, forms, policies...) must still have "
        "each anchored event (none removed, changed or cut back); the events recorded after "
        "it, which it does not cover, are counted (an anchor of an earlier release covers "
        "the proposals only, and is said to)",
    )
    verify.add_argument(
        "--require-signed-anchor",
        action="store_true",
        help="with --anchor: refuse an unsigned anchor (exit status 2, as for any anchor that "
        "cannot be trusted), whatever the deployment requires of seals",
    )
    verify.add_argument(
        "--max-unanchored",
        type=event_count,
        metavar="N",
        help="with --anchor: fail the check (exit status 5) when more than N of the proposals' "
        "events were recorded after the anchor (it is older than the deployment's anchors "
        "should be)",
    )
    verify.set_defaults(maintenance=True)
    anchor = add(
        "anchor",
        Handler("anchors", "cmd_audit_anchor"),
        "write where every stream stood, to keep outside the database (verify --anchor)",
        audit_sub,
    )
    anchor.add_argument("--out", metavar="FILE", help="a new file to write it to (default: stdout)")
    anchor.set_defaults(maintenance=True)

    users = sub.add_parser("users", help="people's sign-in credentials")
    users_sub = users.add_subparsers(dest="users_command", required=True, metavar="COMMAND")
    set_password = add(
        "set-password",
        Handler("admin", "cmd_users_set_password"),
        "set a person's password (read from stdin or a prompt) and end their browser sessions",
        users_sub,
    )
    set_password.add_argument("--as", dest="actor", required=True, metavar="EMAIL")

    serve = add("serve", Handler("admin", "cmd_serve"), "serve the web pages and the JSON API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=port_number, default=8000)
    serve.add_argument(
        "--workers",
        type=worker_count,
        default=1,
        metavar="N",
        help="server processes sharing the port (default 1); the projection runner runs as "
        "its own service",
    )
    add_sweepers_option(serve)

    worker = add(
        "worker",
        Handler("worker", "cmd_worker"),
        "run the sweepers (reconcile, expire, notify) on a schedule until SIGTERM or Ctrl-C",
    )
    worker.add_argument(
        "--interval",
        type=positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="pause between passes",
    )
    worker.add_argument("--once", action="store_true", help="one pass of each sweeper, then stop")
    worker.add_argument(
        "--metrics-port", type=port_number, metavar="PORT", help="serve its metrics"
    )
    worker.add_argument("--metrics-host", default="127.0.0.1")

    mcp = add(
        "mcp",
        Handler("admin", "cmd_mcp"),
        "serve the propose-only MCP server (stdio, or --http with tokens)",
    )
    mcp.add_argument("--org", help="stdio: the club the member acts in")
    mcp.add_argument("--as", dest="actor", metavar="EMAIL", help="stdio: the member")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP, API tokens as bearer")
    mcp.add_argument("--host", default="127.0.0.1")
    mcp.add_argument("--port", type=port_number, default=8001)

    tokens = sub.add_parser("tokens", help="API tokens for application services")
    tokens_sub = tokens.add_subparsers(dest="tokens_command", required=True, metavar="COMMAND")
    issue = add(
        "issue", Handler("admin", "cmd_tokens_issue"), "issue a token (shown once)", tokens_sub
    )
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
    issue.add_argument(
        "--approver",
        action="store_true",
        help="an approver token, for a service that acts for this person after they decided in"
        " its own interface (it may approve, decline and edit; MCP refuses it). Without it: an"
        " agent token, which reads and proposes and never decides",
    )
    revoke = add(
        "revoke", Handler("admin", "cmd_tokens_revoke"), "revoke a token at once", tokens_sub
    )
    revoke.add_argument("token_id")
    listing = add(
        "list", Handler("admin", "cmd_tokens_list"), "tokens of an organization", tokens_sub
    )
    listing.add_argument("--org", required=True)


def add_sweepers_option(command: argparse.ArgumentParser) -> None:
    """``--sweepers``/``--no-sweepers`` of the commands that serve the pages."""
    command.add_argument(
        "--sweepers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run the sweepers (reconcile, expire, notify) in this process, once however many "
        "workers; default: on for SQLite, off for PostgreSQL, where countersign worker runs them",
    )


def add_notification_commands(sub: Any, add: Callable[..., Any]) -> None:
    """``webhooks ...`` and ``notify run`` (listed with the club's own settings)."""
    webhooks = sub.add_parser("webhooks", help="where a club's notifications are POSTed")
    webhooks_sub = webhooks.add_subparsers(
        dest="webhooks_command", required=True, metavar="COMMAND"
    )
    added = add(
        "add",
        Handler("notify", "cmd_webhooks_add"),
        "register an endpoint (prints its secret once)",
        webhooks_sub,
    )
    added.add_argument("--org", required=True)
    added.add_argument("--url", required=True, help="https://... (or http://)")
    listing = add(
        "list", Handler("notify", "cmd_webhooks_list"), "a club's endpoints", webhooks_sub
    )
    listing.add_argument("--org", required=True)
    removed = add(
        "remove",
        Handler("notify", "cmd_webhooks_remove"),
        "stop posting to an endpoint",
        webhooks_sub,
    )
    removed.add_argument("endpoint_id")
    removed.add_argument("--org", required=True)
    deliveries = add(
        "deliveries",
        Handler("notify", "cmd_webhooks_deliveries"),
        "a club's deliveries, newest first, each attempt with its result and next try",
        webhooks_sub,
    )
    deliveries.add_argument("--org", required=True)
    deliveries.add_argument("--dead", action="store_true", help="only the dead letters")
    deliveries.add_argument("--limit", type=positive_whole_number, default=50)
    deliveries.add_argument(
        "--before",
        metavar="DELIVERY_ID",
        help="the next page: the deliveries listed after this one (the last line's id)",
    )
    redeliver = add(
        "redeliver",
        Handler("notify", "cmd_webhooks_redeliver"),
        "put dead letters back in line",
        webhooks_sub,
    )
    redeliver.add_argument("delivery_id", nargs="?")
    redeliver.add_argument("--org", required=True)
    redeliver.add_argument("--all", action="store_true", help="every dead letter of the club")

    notify = sub.add_parser("notify", help="deliver the notifications (webhooks and e-mail)")
    notify_sub = notify.add_subparsers(dest="notify_command", required=True, metavar="COMMAND")
    run = add(
        "run",
        Handler("notify", "cmd_notify_run"),
        "deliver the outbox, pass after pass (stops cleanly on SIGTERM or Ctrl-C)",
        notify_sub,
    )
    run.add_argument("--once", action="store_true", help="one pass, then exit")
    run.add_argument("--interval", type=positive_seconds, default=5.0, metavar="SECONDS")
