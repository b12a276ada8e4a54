"""Commands on the club's own records: the demo seed, orders, the roster, and what the
providers' sandboxes hold (the payment sandbox's refunds, the e-mail sandbox's deliveries)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import TimeZoneError
from countersign.infrastructure.entrypoints.cli import listings
from countersign.infrastructure.entrypoints.cli.common import (
    Result,
    UsageError,
)
from countersign.infrastructure.entrypoints.cli.resources import order_id, section_resource

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign


def cmd_seed(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.demo.passwords import seed_passwords
    from countersign.infrastructure.demo.seed import seed

    data = seed(cs)
    data["passwords"] = seed_passwords(cs)
    # The projections' tables and positions too, as a start of `projections run` makes them:
    # the commands that read them (inbox, handback, audit export) set nothing up.
    cs.projection_runners()
    said = _SEEDED
    lines = [said["title"].text(args.language)]
    lines += [
        said["organization"].text(args.language, slug=o["slug"], name=o["name"])
        for o in data["organizations"]
    ]
    lines += [
        said["user"].text(
            args.language,
            email=u["email"],
            role=u["role"],
            organization=u["organization"],
            password=data["passwords"][u["email"]],
        )
        for u in data["users"]
    ]
    lines += [
        said["order"].text(args.language, key=key, id=found)
        for key, found in data["orders"].items()
    ]
    lines += [
        said["form"].text(args.language, slug=slug, id=found)
        for slug, found in data["broadcast_forms"].items()
    ]
    lines += [
        said["roster"].text(args.language, slug=slug, id=found)
        for slug, found in data["rosters"].items()
    ]
    return data, "\n".join(lines)


_SEEDED = {
    "title": Localized(
        "Seeded the demo clubs (running it again changes nothing):",
        "Clubs de démonstration créés (relancer la commande ne change rien) :",
    ),
    "organization": Localized("  organization {slug}: {name}", "  club {slug} : {name}"),
    "user": Localized(
        "  user {email} ({role} of {organization}), password for local use: {password}",
        "  utilisateur {email} ({role} de {organization}), mot de passe pour un usage local : "
        "{password}",
    ),
    "order": Localized("  order {key}: {id}", "  commande {key} : {id}"),
    "form": Localized(
        "  broadcast form of {slug}: {id}", "  formulaire d'annonce de {slug} : {id}"
    ),
    "roster": Localized("  roster of {slug}: {id}", "  effectif de {slug} : {id}"),
}


def cmd_org_set_timezone(cs: Countersign, args: argparse.Namespace) -> Result:
    try:
        zone = cs.club.set_time_zone(args.org, args.tz)
    except TimeZoneError as error:
        french = (
            f"« {args.tz.strip()[:64]} » n'est pas un fuseau horaire ; utilisez un nom IANA "
            "comme America/Toronto"
        )
        raise UsageError(str(error), french) from None
    return {"organization": args.org, "time_zone": zone}, _SHOWS_TIMES.text(
        args.language, organization=args.org, zone=zone
    )


_SHOWS_TIMES = Localized(
    "{organization} shows times in {zone}.", "{organization} affiche les heures en {zone}."
)


def cmd_orders_show(cs: Countersign, args: argparse.Namespace) -> Result:
    order = cs.club.investigate(args.org, order_id(cs, args.org, args.order_id))
    return order, listings.render_order(order, args.language)


def cmd_orders_refund_manually(cs: Countersign, args: argparse.Namespace) -> Result:
    named = order_id(cs, args.org, args.order_id)
    order = cs.club.refund_manually(args.org, named, args.actor, args.payment, args.amount)
    recorded = Localized("Refund recorded.", "Remboursement enregistré.").text(args.language)
    return order, f"{recorded}\n{listings.render_order(order, args.language)}"


def cmd_roster_leagues(cs: Countersign, args: argparse.Namespace) -> Result:
    section_resource(cs, args.org, "roster", None, args.language)  # a club without a roster
    leagues = cs.club.leagues(args.org)
    text = "\n".join(
        _LEAGUE.text(
            args.language,
            name=league["name"],
            members=_members(league["active_members"], args.language),
            capacity=(
                _NO_LIMIT if league["capacity"] is None else _CAPACITY.filled(n=league["capacity"])
            ).text(args.language),
        )
        for league in leagues
    )
    return leagues, text


_LEAGUE = Localized("{name}: {members}, {capacity}", "{name} : {members}, {capacity}")
_NO_LIMIT = Localized("no limit", "sans limite")
_CAPACITY = Localized("capacity {n}", "capacité {n}")


def _members(count: int, language: str) -> str:
    """'1 member', '3 members' ('1 membre', '3 membres')."""
    one = Localized("1 member", "1 membre")
    return (
        one.text(language)
        if count == 1
        else Localized("{n} members", "{n} membres").text(language, n=count)
    )


def cmd_roster_join(cs: Countersign, args: argparse.Namespace) -> Result:
    joined = cs.club.join(args.org, args.league, args.name, args.email)
    members = _members(joined["active_members"], args.language)
    said = Localized(
        "{name} joined {league} ({members}).", "{name} a rejoint {league} ({members})."
    )
    return joined, said.text(args.language, name=args.name, league=args.league, members=members)


def cmd_provider_refunds(cs: Countersign, args: argparse.Namespace) -> Result:
    refunds = cs.sandbox.refunds()
    said = _SANDBOX["refund"]
    lines = [
        said.text(
            args.language,
            key=r["idempotency_key"],
            status=r["status"],
            cents=r["amount_cents"],
            requests=r["requests"],
        )
        for r in refunds
    ]
    return refunds, "\n".join(lines) or _SANDBOX["no_refunds"].text(args.language)


def cmd_provider_deliveries(cs: Countersign, args: argparse.Namespace) -> Result:
    deliveries = cs.email_sandbox.deliveries()
    said = _SANDBOX["delivery"]
    lines = [
        said.text(
            args.language,
            key=d["idempotency_key"],
            status=d["status"] + (f" ({d['failure_code']})" if d["failure_code"] else ""),
            recipients=len(d["recipients"]),
            requests=d["requests"],
        )
        for d in deliveries
    ]
    return deliveries, "\n".join(lines) or _SANDBOX["no_deliveries"].text(args.language)


#: What the providers' sandboxes hold, in words.
_SANDBOX = {
    "refund": Localized(
        "{key}: {status}, {cents} cents, {requests} request(s)",
        "{key} : {status}, {cents} cents, {requests} demande(s)",
    ),
    "no_refunds": Localized(
        "The sandbox holds no refunds.", "Le bac à sable ne contient aucun remboursement."
    ),
    "delivery": Localized(
        "{key}: {status}, {recipients} recipient(s), {requests} request(s)",
        "{key} : {status}, {recipients} destinataire(s), {requests} demande(s)",
    ),
    "no_deliveries": Localized(
        "The sandbox holds no deliveries.", "Le bac à sable ne contient aucun envoi."
    ),
}


def cmd_operations(_: Countersign | None, args: argparse.Namespace) -> Result:
    from countersign.application.assistant.schemas import operation_catalogue

    catalogue = operation_catalogue()
    said = _OPERATIONS
    lines = [said["title"].text(args.language, n=len(catalogue))]
    for entry in catalogue:
        fields = ", ".join(entry["request_schema"].get("properties", {}))
        line = said["line"].text(
            args.language,
            section=entry["section"],
            permission=entry["permission"],
            where=said["external" if entry["external"] else "local"].text(args.language),
            fields=fields or said["no_fields"].text(args.language),
        )
        lines.append(f"  {entry['kind']:<32} {line}")
    return catalogue, "\n".join(lines)


_OPERATIONS = {
    "title": Localized(
        "{n} operations (propose with: countersign propose --operation KIND):",
        "{n} opérations (proposer avec : countersign propose --operation KIND) :",
    ),
    "line": Localized(
        "section {section}, needs {permission}, {where}; request: {{{fields}}}",
        "section {section}, demande {permission}, {where} ; requête : {{{fields}}}",
    ),
    "external": Localized("may call a provider", "peut appeler un fournisseur"),
    "local": Localized("local", "locale"),
    "no_fields": Localized("no fields", "aucun champ"),
}
