"""``countersign demo --serve``: after the story, the pages over the data it left, with the
address and the demo people's sign-ins (their local passwords) printed first."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from countersign.infrastructure.entrypoints.cli.admin import cmd_serve
from countersign.infrastructure.entrypoints.cli.common import Result

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign


def cmd_demo_serve(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.demo.passwords import seed_passwords

    passwords = seed_passwords(cs)
    browse = browse_text(f"http://{args.host}:{args.port}", args.database, passwords)
    # stdout holds the story (or, with --json, its one document): the address goes beside it.
    print(browse, file=sys.stderr if args.json else sys.stdout, flush=True)
    return cmd_serve(cs, args)


def browse_text(address: str, database_url: str, passwords: dict[str, str]) -> str:
    from countersign.infrastructure.demo.seed import USERS

    people = [
        f"    {user.email:<22} {passwords[user.email]:<22} {user.role} of {user.organization}"
        + (", reads French" if user.language == "fr" else "")
        for user in USERS
    ]
    return "\n".join(
        [
            "",
            f"See it in the browser: {address} (Ctrl-C stops the server)",
            f"  The demo's data stays in {database_url}.",
            "  Sign in as one of the demo people (their passwords are for local use only):",
            *people,
            "  Ava's inbox holds the refund the demo left awaiting approval. To talk to the order",
            "  assistant, type an order number under Start a conversation: refund-ok,",
            "  refund-two-approvers, refund-lost-response, account-credit (Granite), or",
            "  maple-refund (Maple, as Mia).",
        ]
    )
