"""The command line's grammar: every command, its arguments and the handler that runs it.

A handler is named (``Handler("club", "cmd_seed")``) and imported when its command runs: the
grammar itself imports no handler module, so ``countersign --help`` and each command import
only what that command needs (the client's budget is 60 MB; scripts/bench_memory.py).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, NoReturn

from countersign.domain.contracts import REGISTRY
from countersign.infrastructure.entrypoints.cli.common import Handler, whole_number
from countersign.infrastructure.entrypoints.cli.grammar_services import (
    add_notification_commands,
    add_service_commands,
    add_sweepers_option,
    port_number,
)
from countersign.infrastructure.entrypoints.cli.members import permission_list
from countersign.infrastructure.entrypoints.cli.policies import (
    LEFT_OUT,
    approvals_count,
    cents,
    true_or_false,
)

#: The languages the command line answers in (``--language``, on every command).
LANGUAGES = ("en", "fr")
#: ``--as``'s help where a member acts on a proposal by its id.
ACTING = "the member acting, by email; they must belong to the proposal's club"


class _Version(argparse.Action):
    """``--version``: the installed version (and the checkout's commit), read only when it is
    asked for (cli/version.py)."""

    def __init__(self, option_strings: list[str], dest: str, **_: Any) -> None:
        super().__init__(
            option_strings,
            dest=argparse.SUPPRESS,
            default=argparse.SUPPRESS,
            nargs=0,
            help="show program's version number and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from countersign.infrastructure.entrypoints.cli.version import installed_version

        print(f"countersign {installed_version()}", flush=True)
        parser.exit()


#: What --resource takes, as `orders show` takes an order (cli/resources.py).
_RESOURCE = (
    "the order: its number, as the registration system shows it (refund-ok), or its id; left "
    "out for the club's own roster or broadcast form; another section's record by its id or key"
)


class _Sections:
    """The sections with an assistant, as ``--section``'s choices: the section registry (and
    its assistants' schemas) is imported when a command reads them, not to build the grammar
    (its metavar is SECTION, so argparse does not list them until a help is shown)."""

    def __contains__(self, value: object) -> bool:
        from countersign.application.assistant.sections import ASSISTANTS

        return value in ASSISTANTS

    def __iter__(self) -> Iterator[str]:
        from countersign.application.assistant.sections import ASSISTANTS

        return iter(list(ASSISTANTS))


class CommandParser(argparse.ArgumentParser):
    """argparse's parser (its sub-commands' too), whose usage errors keep the command line's
    promise: with ``--json`` anywhere on the command line (``main`` says so), one JSON
    document on stdout, ``{"error": "usage", "message": ...}``, besides argparse's usage and
    message on stderr and exit status 2."""

    json_errors = False
    #: The language its help and usage errors are in: the command line's ``--language``,
    #: read first.
    language = "en"

    def _get_formatter(self) -> argparse.HelpFormatter:
        """Its help and usage in the command line's ``--language`` (help_fr.py for French,
        imported only then)."""
        if CommandParser.language == "fr":
            from countersign.infrastructure.entrypoints.cli.help_fr import FrenchHelpFormatter

            return FrenchHelpFormatter(prog=self.prog)
        return super()._get_formatter()

    def error(self, message: str) -> NoReturn:
        from countersign.infrastructure.entrypoints.cli.answers import ERROR_LINE, usage_error

        message = usage_error(message, CommandParser.language)
        if CommandParser.json_errors:
            from countersign.infrastructure.entrypoints.cli import render

            print(render.to_json({"error": "usage", "message": message}), flush=True)
        from countersign.infrastructure.observability.logs import json_logs, say

        said = f"{self.prog}: {ERROR_LINE.text(CommandParser.language, message=message)}"
        if json_logs():  # COUNTERSIGN_LOG_FORMAT=json: one JSON object, as every stderr line
            say(said, logging.ERROR)
            raise SystemExit(2)
        self.print_usage(sys.stderr)
        self.exit(2, f"{said}\n")


def command_parser() -> argparse.ArgumentParser:
    """The grammar ``main`` parses with, built once a process for each set of operations
    (a plug-in adds its own): building it costs about 9 ms of CPU (argparse makes a help
    formatter and looks up translations for each of its ~190 arguments), which every command
    run in one process paid, a few thousand in the test suite's. Parsing leaves it as it was."""
    return _parser_for(tuple(REGISTRY))


@lru_cache(maxsize=4)
def _parser_for(operations: tuple[str, ...]) -> argparse.ArgumentParser:
    return build_parser()


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON document")
    common.add_argument("--database", metavar="URL", help="sqlite:///file.db or postgresql://...")
    common.add_argument(
        "--language",
        choices=LANGUAGES,
        help="the language countersign answers in: en (the default) or fr",
    )
    common.add_argument(
        "--create",
        action="store_true",
        help="create countersign's tables (and a SQLite file) if the database has none; only "
        "seed, demo and org create do without it",
    )

    parser = CommandParser(
        prog="countersign",
        description="AI assistants propose; people approve; the application executes.",
    )
    # Also accepted before the command; merged in main() (argparse sub-parsers would clobber it).
    parser.add_argument("--database", dest="database_first", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--json", dest="json_first", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--create", dest="create_first", action="store_true", help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--language", dest="language_first", choices=LANGUAGES, help=argparse.SUPPRESS
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, handler: Handler | None, help_text: str, parent: Any = sub) -> Any:
        command = parent.add_parser(name, parents=[common], help=help_text, description=help_text)
        command.set_defaults(handler=handler)
        return command

    add("seed", Handler("club", "cmd_seed"), "create the demo club data (idempotent)")
    operations = add(
        "operations",
        Handler("club", "cmd_operations"),
        "every registered operation and its request schema",
    )
    operations.set_defaults(opens_database=False)  # the contracts' own: no database to read

    org = sub.add_parser("org", help="the club's own settings")
    org_sub = org.add_subparsers(dest="org_command", required=True, metavar="COMMAND")
    set_timezone = add(
        "set-timezone",
        Handler("club", "cmd_org_set_timezone"),
        "show the club's times in a time zone",
        org_sub,
    )
    set_timezone.add_argument("--org", required=True)
    set_timezone.add_argument("--tz", required=True, metavar="ZONE", help="e.g. America/Toronto")
    create = add(
        "create",
        Handler("club_admin", "cmd_org_create"),
        "register a new club (then add its first manager with members add)",
        org_sub,
    )
    create.add_argument("slug", metavar="SHORT_NAME", help="the club's id for good: granite")
    create.add_argument("--name", required=True, help="the club's name as people read it")
    create.add_argument("--tz", metavar="ZONE", help="where its people read times")

    policy = sub.add_parser("policy", help="approval policies: who and how many approve")
    policy_sub = policy.add_subparsers(dest="policy_command", required=True, metavar="COMMAND")
    policy_set = add(
        "set",
        Handler("policies", "cmd_policy_set"),
        "how many distinct people approve an operation's proposals",
        policy_sub,
    )
    policy_set.add_argument("--org", required=True)
    policy_set.add_argument("--operation", required=True, metavar="KIND", choices=list(REGISTRY))
    policy_set.add_argument("--approvals", required=True, type=approvals_count, metavar="N")
    policy_set.add_argument(
        "--above-cents",
        type=cents,
        default=LEFT_OUT,
        metavar="AMOUNT|none",
        help="only proposals above this amount in cents; none: every proposal (default: as it is)",
    )
    policy_set.add_argument(
        "--requester-may-approve",
        type=true_or_false,
        metavar="true|false",
        help="may the person who requested a proposal approve it (default: as it is)",
    )
    policy_set.add_argument(
        "--require-passkey",
        type=true_or_false,
        metavar="true|false",
        help="must each approval be signed with the approver's passkey (default: as it is)",
    )
    policy_show = add(
        "show",
        Handler("policies", "cmd_policy_show"),
        "every operation's policy in force",
        policy_sub,
    )
    policy_show.add_argument("--org", required=True)

    members = sub.add_parser("members", help="the club's members")
    members_sub = members.add_subparsers(dest="members_command", required=True, metavar="COMMAND")
    language = add(
        "set-language",
        Handler("notify", "cmd_members_set_language"),
        "the language countersign writes to a member in (its e-mails)",
        members_sub,
    )
    language.add_argument(
        "member_language",
        nargs="?",  # the old spelling, --language LANG alone, still names it (notify.py)
        metavar="LANG",
        help="the member's language: en or fr",
    )
    language.add_argument("--org", required=True)
    language.add_argument("--email", required=True)
    member_add = add(
        "add",
        Handler("club_admin", "cmd_members_add"),
        "add a person to the club, with exactly these permissions",
        members_sub,
    )
    member_add.add_argument("--org", required=True)
    member_add.add_argument("--email", required=True)
    member_add.add_argument("--name", required=True, help="as the pages show them")
    member_add.add_argument("--role", required=True, help="manager, treasurer, coach...")
    member_add.add_argument(
        "--permissions",
        default=[],
        type=permission_list,
        metavar="A,B,C",
        help="permission names separated by commas (none if left out)",
    )
    member_remove = add(
        "remove",
        Handler("club_admin", "cmd_members_remove"),
        "take a person off the club (never its last holder of members.manage)",
        members_sub,
    )
    member_remove.add_argument("--org", required=True)
    member_remove.add_argument("--email", required=True)
    member_list = add(
        "list", Handler("club_admin", "cmd_members_list"), "the club's members", members_sub
    )
    member_list.add_argument("--org", required=True)
    permissions = add(
        "set-permissions",
        Handler("members", "cmd_members_set_permissions"),
        "give a member exactly these permissions (the ones not named are withdrawn)",
        members_sub,
    )
    permissions.add_argument("--org", required=True)
    permissions.add_argument("--email", required=True)
    permissions.add_argument(
        "--permissions",
        required=True,
        type=permission_list,
        metavar="A,B,C",
        help="permission names separated by commas; an empty value withdraws them all",
    )

    add_notification_commands(sub, add)

    orders = sub.add_parser("orders", help="order investigations and manual refunds")
    orders_sub = orders.add_subparsers(dest="orders_command", required=True, metavar="COMMAND")
    show = add("show", Handler("club", "cmd_orders_show"), "the order investigation", orders_sub)
    show.add_argument("order_id")
    show.add_argument("--org", required=True)
    manual = add(
        "refund-manually",
        Handler("club", "cmd_orders_refund_manually"),
        "a manual refund",
        orders_sub,
    )
    manual.add_argument("order_id")
    manual.add_argument("--org", required=True)
    manual.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    manual.add_argument("--payment", required=True, metavar="REF")
    manual.add_argument("--amount", required=True, type=whole_number, metavar="CENTS")

    roster = sub.add_parser("roster", help="leagues and members")
    roster_sub = roster.add_subparsers(dest="roster_command", required=True, metavar="COMMAND")
    leagues = add(
        "leagues", Handler("club", "cmd_roster_leagues"), "leagues and member counts", roster_sub
    )
    leagues.add_argument("--org", required=True)
    join = add("join", Handler("club", "cmd_roster_join"), "add a member to a league", roster_sub)
    join.add_argument("--org", required=True)
    join.add_argument("--league", required=True)
    join.add_argument("--name", required=True)
    join.add_argument("--email", required=True)

    propose = add(
        "propose",
        Handler("proposals", "cmd_propose"),
        "turn a model-facing request into a proposal",
    )
    propose.add_argument("--org", required=True, help="the club's short name (granite)")
    propose.add_argument(
        "--as", dest="actor", required=True, metavar="EMAIL", help="the member who requests it"
    )
    propose.add_argument(
        "--operation",
        required=True,
        metavar="KIND",
        help="the operation's kind; `countersign operations` lists them and their requests",
    )
    propose.add_argument("--resource", metavar="ORDER|ID", help=_RESOURCE)
    propose.add_argument(
        "--request",
        required=True,
        metavar="JSON|@FILE",
        help="the operation's request as a JSON object, or @ and a file holding it",
    )

    revise = add(
        "revise",
        Handler("proposals", "cmd_revise"),
        "edit a proposal: a new revision of it from an edited request",
    )
    revise.add_argument("proposal_id")
    revise.add_argument("--as", dest="actor", required=True, metavar="EMAIL", help=ACTING)
    revise.add_argument(
        "--request",
        required=True,
        metavar="JSON|@FILE",
        help="the whole edited request as a JSON object, or @ and a file holding it",
    )

    approve = add("approve", Handler("proposals", "cmd_approve"), "approve a proposal by its id")
    approve.add_argument("proposal_id")
    approve.add_argument("--as", dest="actor", required=True, metavar="EMAIL", help=ACTING)

    decline = add("decline", Handler("proposals", "cmd_decline"), "decline a proposal by its id")
    decline.add_argument("proposal_id")
    decline.add_argument("--as", dest="actor", required=True, metavar="EMAIL", help=ACTING)
    decline.add_argument("--note")

    card = add("show", Handler("proposals", "cmd_show"), "a proposal's review card")
    card.add_argument("proposal_id")
    card.add_argument("--as", dest="actor", required=True, metavar="EMAIL", help=ACTING)

    history = add(
        "history", Handler("proposals", "cmd_history"), "a proposal's full event history (auditors)"
    )
    history.add_argument("proposal_id")
    history.add_argument(
        "--as-of",
        metavar="VERSION|TIME",
        help="a version, or an ISO time, which holds the whole of its last unit (a time as "
        "history shows it, to the millisecond, holds the events shown at it)",
    )

    add(
        "reconcile",
        Handler("proposals", "cmd_reconcile"),
        "one reconciliation pass over uncertain executions",
    )
    add(
        "expire",
        Handler("proposals", "cmd_expire"),
        "one pass recording Expired for overdue proposals",
    )

    provider = sub.add_parser("provider", help="the providers' sandboxes")
    provider_sub = provider.add_subparsers(dest="provider_command", required=True)
    add(
        "refunds",
        Handler("club", "cmd_provider_refunds"),
        "refunds the payment sandbox holds",
        provider_sub,
    )
    add(
        "deliveries",
        Handler("club", "cmd_provider_deliveries"),
        "deliveries the e-mail sandbox holds",
        provider_sub,
    )

    chat = add(
        "chat",
        Handler("proposals", "cmd_chat"),
        "talk to a section assistant (interactive, or one --message)",
    )
    chat.add_argument("--org", required=True)
    chat.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    chat.add_argument(
        "--section", required=True, choices=_Sections(), metavar="SECTION", help="%(choices)s"
    )
    chat.add_argument("--resource", metavar="ORDER|ID", help=_RESOURCE)
    chat.add_argument("--message", help="one turn, then exit")
    chat.add_argument("--interaction", metavar="ID", help="continue this conversation")

    inbox = add(
        "inbox",
        Handler("proposals", "cmd_inbox"),
        "pending proposals awaiting approval, newest first",
    )
    inbox.add_argument("--org", required=True)
    inbox.add_argument("--as", dest="actor", required=True, metavar="EMAIL")
    inbox.add_argument("--section", choices=_Sections(), metavar="SECTION", help="%(choices)s")
    inbox.add_argument("--page", type=whole_number, default=1)
    inbox.add_argument("--page-size", type=whole_number, default=20)

    handback = add(
        "handback",
        Handler("proposals", "cmd_handback"),
        "app-authored messages of one conversation",
    )
    handback.add_argument("interaction_id")
    handback.add_argument("--org", required=True)
    handback.add_argument("--as", dest="actor", required=True, metavar="EMAIL")

    add_service_commands(sub, add)

    demo = add("demo", None, "the guided story, on a fresh SQLite file unless --database is given")
    demo.add_argument(
        "--serve",
        action="store_true",
        help="then serve the pages over the demo's data, and print the address and sign-ins",
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="keep the demo's fresh SQLite file (its path is printed last) instead of removing "
        "it when the demo ends",
    )
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=port_number, default=8000)
    add_sweepers_option(demo)
    demo.set_defaults(workers=1)
    return parser
