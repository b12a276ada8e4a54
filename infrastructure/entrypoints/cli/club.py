"""Commands on the club's own records: the demo seed, orders, the roster, and what the
providers' sandboxes hold (the payment sandbox's refunds, the e-mail sandbox's deliveries)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from countersign.domain.errors import TimeZoneError
from countersign.infrastructure.entrypoints.cli import listings
from countersign.infrastructure.entrypoints.cli.common import (
    Result,
    UsageError,
)
from countersign.infrastructure.entrypoints.cli.resources import order_id

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign


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
    lines += [f"  roster of {slug}: {rid}" for slug, rid in data["rosters"].items()]
    return data, "\n".join(lines)


def cmd_org_set_timezone(cs: Countersign, args: argparse.Namespace) -> Result:
    try:
        zone = cs.club.set_time_zone(args.org, args.tz)
    except TimeZoneError as error:
        raise UsageError(str(error)) from None
    return {"organization": args.org, "time_zone": zone}, f"{args.org} shows times in {zone}."


def cmd_orders_show(cs: Countersign, args: argparse.Namespace) -> Result:
    order = cs.club.investigate(args.org, order_id(cs, args.org, args.order_id))
    return order, listings.render_order(order)


def cmd_orders_refund_manually(cs: Countersign, args: argparse.Namespace) -> Result:
    named = order_id(cs, args.org, args.order_id)
    order = cs.club.refund_manually(args.org, named, args.actor, args.payment, args.amount)
    return order, "Refund recorded.\n" + listings.render_order(order)


def cmd_roster_leagues(cs: Countersign, args: argparse.Namespace) -> Result:
    leagues = cs.club.leagues(args.org)
    text = "\n".join(
        f"{league['name']}: {league['active_members']} "
        + ("member, " if league["active_members"] == 1 else "members, ")
        + ("no limit" if league["capacity"] is None else f"capacity {league['capacity']}")
        for league in leagues
    )
    return leagues, text


def cmd_roster_join(cs: Countersign, args: argparse.Namespace) -> Result:
    joined = cs.club.join(args.org, args.league, args.name, args.email)
    count = joined["active_members"]
    members = "1 member" if count == 1 else f"{count} members"
    return joined, f"{args.name} joined {args.league} ({members})."


def cmd_provider_refunds(cs: Countersign, args: argparse.Namespace) -> Result:
    refunds = cs.sandbox.refunds()
    lines = [
        f"{r['idempotency_key']}: {r['status']}, {r['amount_cents']} cents, "
        f"{r['requests']} request(s)"
        for r in refunds
    ]
    return refunds, "\n".join(lines) or "The sandbox holds no refunds."


def cmd_provider_deliveries(cs: Countersign, args: argparse.Namespace) -> Result:
    deliveries = cs.email_sandbox.deliveries()
    lines = [
        f"{d['idempotency_key']}: {d['status']}"
        + (f" ({d['failure_code']})" if d["failure_code"] else "")
        + f", {len(d['recipients'])} recipient(s), {d['requests']} request(s)"
        for d in deliveries
    ]
    return deliveries, "\n".join(lines) or "The sandbox holds no deliveries."


def cmd_operations(_: Countersign | None, args: argparse.Namespace) -> Result:
    from countersign.application.assistant.schemas import operation_catalogue

    catalogue = operation_catalogue()
    lines = [f"{len(catalogue)} operations (propose with: countersign propose --operation KIND):"]
    for entry in catalogue:
        fields = ", ".join(entry["request_schema"].get("properties", {})) or "no fields"
        where = "may call a provider" if entry["external"] else "local"
        lines.append(
            f"  {entry['kind']:<32} section {entry['section']}, needs {entry['permission']}, "
            f"{where}; request: {{{fields}}}"
        )
    return catalogue, "\n".join(lines)
