"""``countersign demo --serve``: after the story, the pages over the data it left, with the
address and the demo people's sign-ins (their local passwords) printed first."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import TYPE_CHECKING

from countersign.infrastructure.entrypoints.cli.admin import cmd_serve
from countersign.infrastructure.entrypoints.cli.common import Result

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign


def cmd_demo_serve(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.demo.passwords import seed_passwords

    passwords = seed_passwords(cs)
    orders = orders_still_owed(cs)
    # The pages' passkeys belong to localhost (COUNTERSIGN_WEBAUTHN_RP_ID): at 127.0.0.1 the
    # browser refuses every one, so the address to open is localhost's.
    host = "localhost" if args.host == "127.0.0.1" else args.host
    browse = browse_text(f"http://{host}:{args.port}", args.database, passwords, orders)
    # stdout holds the story (or, with --json, its one document): the address goes beside it.
    print(browse, file=sys.stderr if args.json else sys.stdout, flush=True)
    return cmd_serve(cs, args)


#: The demo's orders the order assistant is offered on, in this order, with their clubs.
SUGGESTED_ORDERS = (
    ("refund-ok", "granite"),
    ("refund-two-approvers", "granite"),
    ("refund-lost-response", "granite"),
    ("account-credit", "granite"),
    ("maple-refund", "maple"),
)


def orders_still_owed(cs: Countersign) -> list[tuple[str, str]]:
    """The suggested orders on which a missed discount is still owed and a payment can still
    be refunded, as the story left them (it refunds some): the ones worth typing."""
    from countersign.domain.errors import NotFoundError

    found = []
    for key, club in SUGGESTED_ORDERS:
        try:
            if cs.club.still_owes_a_discount(club, key):
                found.append((key, club))
        except NotFoundError:
            continue
    return found


def browse_text(
    address: str, database_url: str, passwords: dict[str, str], orders: list[tuple[str, str]]
) -> str:
    from countersign.infrastructure.demo.seed import USERS

    people = [
        f"    {user.email:<22} {passwords[user.email]:<22} {user.role} of {user.organization}"
        + (", e-mails in French (FR at the top of a page)" if user.language == "fr" else "")
        for user in USERS
    ]
    granite = [key for key, club in orders if club == "granite"]
    maple = [key for key, club in orders if club == "maple"]
    where = [f"{', '.join(granite)} (Granite)"] if granite else []
    where += [f"{', '.join(maple)} (Maple, as Mia)"] if maple else []
    settled = [key for key, _ in SUGGESTED_ORDERS if (key, _) not in orders]
    assistant = ""
    if where:
        assistant = (
            "To talk to the order assistant, type an order number under Start a conversation: "
            + " or ".join(where)
            + ". "
        )
    if settled:
        assistant += (
            f"The story settled {', '.join(settled)}: serve a fresh `countersign seed` database"
            " to try them."
        )
    return "\n".join(
        [
            "",
            f"See it in the browser: {address} (Ctrl-C stops the server)",
            f"  The demo's data stays in {database_url}.",
            "  Sign in as one of the demo people (their passwords are for local use only):",
            *people,
            "  Ava's inbox holds the refund the demo left awaiting approval.",
            *textwrap.wrap(
                assistant, 92, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False
            ),
        ]
    )
