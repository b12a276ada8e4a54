"""``countersign demo --serve``: after the story, the pages over the data it left, with the
address and the demo people's sign-ins (their local passwords) printed first."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import TYPE_CHECKING

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.entrypoints.cli.admin import browsed_host, cmd_serve
from countersign.infrastructure.entrypoints.cli.common import Result

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign


def cmd_demo_serve(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.demo.passwords import seed_passwords

    passwords = seed_passwords(cs)
    orders = orders_still_owed(cs)
    # The pages' passkeys belong to localhost (COUNTERSIGN_WEBAUTHN_RP_ID): at 127.0.0.1 the
    # browser refuses every one, so the address to open is localhost's (as serve says too).
    host = browsed_host(args.host, cs.settings.webauthn_rp_id)
    address = f"http://{host}:{args.port}"
    browse = browse_text(address, args.database, passwords, orders, args.language)
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


#: What ``demo --serve`` prints before serving, in English and French.
_BROWSE = {
    "role": Localized("{role} of {club}", "{role} de {club}"),
    "french": Localized(
        ", e-mails in French (FR at the top of a page)",
        ", e-mails en français (FR en haut d'une page)",
    ),
    "maple": Localized("{orders} (Maple, as Mia)", "{orders} (Maple, en tant que Mia)"),
    "or": Localized(" or ", " ou "),
    "assistant": Localized(
        "To talk to the order assistant, type an order number under Start a conversation: "
        "{where}. ",
        "Pour parler à l'assistant des commandes, tapez un numéro de commande sous « Démarrer "
        "une conversation » : {where}. ",
    ),
    "settled": Localized(
        "The story settled {orders}: serve a fresh `countersign seed` database to try them.",
        "L'histoire a réglé {orders} : servez une base de données neuve de `countersign seed` "
        "pour les essayer.",
    ),
    "see": Localized(
        "See it in the browser: {address} (Ctrl-C stops the server)",
        "À voir dans le navigateur : {address} (Ctrl-C arrête le serveur)",
    ),
    "stays": Localized(
        "  The demo's data stays in {database}.",
        "  Les données de la démo restent dans {database}.",
    ),
    "sign_in": Localized(
        "  Sign in as one of the demo people (their passwords are for local use only):",
        "  Connectez-vous comme l'une des personnes de la démo (leurs mots de passe ne servent "
        "qu'en local) :",
    ),
    "inbox": Localized(
        "  Ava's inbox holds the refund the demo left awaiting approval.",
        "  La boîte de réception d'Ava contient le remboursement que la démo a laissé en attente "
        "d'approbation.",
    ),
}


def browse_text(
    address: str,
    database_url: str,
    passwords: dict[str, str],
    orders: list[tuple[str, str]],
    language: str = "en",
) -> str:
    from countersign.infrastructure.demo.seed import USERS

    def said(key: str, **params: object) -> str:
        return _BROWSE[key].text(language, **params)

    people = [
        f"    {user.email:<22} {passwords[user.email]:<22} "
        + said("role", role=user.role, club=user.organization)
        + (said("french") if user.language == "fr" else "")
        for user in USERS
    ]
    granite = [key for key, club in orders if club == "granite"]
    maple = [key for key, club in orders if club == "maple"]
    where = [f"{', '.join(granite)} (Granite)"] if granite else []
    where += [said("maple", orders=", ".join(maple))] if maple else []
    settled = [key for key, _ in SUGGESTED_ORDERS if (key, _) not in orders]
    assistant = said("assistant", where=said("or").join(where)) if where else ""
    if settled:
        assistant += said("settled", orders=", ".join(settled))
    return "\n".join(
        [
            "",
            said("see", address=address),
            said("stays", database=database_url),
            said("sign_in"),
            *people,
            said("inbox"),
            *textwrap.wrap(
                assistant, 92, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False
            ),
        ]
    )
