"""Commands for operators and auditors: run, rebuild and inspect the projections; export and
verify the audit trail."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any
from uuid import UUID

from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import NotFoundError
from countersign.infrastructure.entrypoints.cli.common import (
    ALREADY_PRINTED,
    FaultFoundError,
    ProjectionNotSetUpError,
    Result,
    UsageError,
    catch_up,
    parse_time,
)
from countersign.infrastructure.entrypoints.cli.progress import Progress
from countersign.infrastructure.observability.logs import say
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign

log = logging.getLogger("countersign.cli")


def cmd_projections_status(cs: Countersign, args: argparse.Namespace) -> Result:
    """Every projection named (all by default): where it stands, whose code built its
    tables and what to do next. Read-only: it sets nothing up, drops nothing, and lists
    every projection, a later release's too (``projection_engine/standing.py``)."""
    from countersign.infrastructure.projection_engine import skips
    from countersign.infrastructure.projection_engine.standing import standings

    statuses, lines = [], []
    for standing in standings(cs.app, cs.sql, cs.projections(args.names)):
        status = standing.to_json()
        statuses.append(status)
        lines.append(
            f"{status['name']:<14} position {status['position']:>9,}  lag {status['lag']:>9,}"
        )
        for said in (standing.note, standing.stopped):
            if said:
                lines.append(f"  {said}")
    skipped = skips.listed(cs.sql)
    for skip in skipped:
        lines.append(
            f"every projection passes notification {skip.position} ({skip.event}), skipped by "
            f"{skip.skipped_by} at {skip.skipped_at}: {skip.reason}"
        )
    if skipped and args.json:
        # The document stays a list of projections; each says which events it passes.
        for status in statuses:
            status["skipped"] = [skip.as_dict() for skip in skipped]
    return statuses, "\n".join(lines)


def cmd_projections_skip(cs: Countersign, args: argparse.Namespace) -> Result:
    """Record that every projection passes the event at ``args.position``, which must not
    decode (infrastructure/projection_engine/skips.py says why and when)."""
    from countersign.infrastructure.projection_engine import skips

    # Any projection's runner decodes alike; its tables are not set up (nor claimed, which
    # dropped an earlier release's audit trail, and stopped at a later release's).
    [runner] = cs.projection_runners(["audit_trail"], set_up=False)
    position = max(1, args.position)
    found = cs.app.recorder.select_notifications(position, limit=1)
    notification = found[0] if found else None
    try:
        skip = skips.record(
            cs.sql, notification, runner.decode_event.decode, args.position, args.reason
        )
    except skips.SkipRefusedError as refused:
        raise UsageError(str(refused)) from None
    document = {"skipped": skip.as_dict()}
    text = (
        f"every projection passes notification {skip.position} ({skip.event}) from now on, "
        f"recorded: {skip.reason}. 'countersign projections status' lists it; the stopped "
        "runners carry on at their next pass"
    )
    return document, text


def cmd_projections_rebuild(cs: Countersign, args: argparse.Namespace) -> Result:
    # An operator's rebuild makes the tables this release's, even a later release's.
    runners = cs.projection_runners(args.names, batch_size=args.batch_size, take_over=True)
    names = [runner.name for runner in runners]
    progress = Progress(f"rebuild {', '.join(names)}", runners[0].head() if runners else 0)
    from countersign.infrastructure.projection_engine.together import rebuild_together

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
            say("projections: " + ", ".join(f"{n} +{c:,}" for n, c in processed.items()))

    say(f"projections: following the log for {', '.join(processed)} (Ctrl-C stops)")
    from countersign.infrastructure.projection_engine.together import run_forever

    run_forever(runners, stop, on_batch=on_batch)
    from countersign.infrastructure.projection_engine.standing import standings

    # Read as stored, as `projections status` reads them: a runner's own status() sets a
    # projection up again if it finds other code's tables (and stops at a later release's).
    statuses = [s.to_json() for s in standings(cs.app, cs.sql, [r.projection for r in runners])]
    return {"stopped": True, "processed": processed, "status": statuses}, (
        "projections: stopped cleanly; " + ", ".join(f"{n} +{c:,}" for n, c in processed.items())
    )


def cmd_audit_export(cs: Countersign, args: argparse.Namespace) -> Result:
    """The audit trail's rows on stdout, one a line, in ``--format`` (``--json`` changes
    nothing: the rows are the stream); anything that stops it is said on stderr with a status
    other than 0, never written among the rows (an unknown club's "Not found." went into the
    CSV file, exit 0). Its rows are filtered by club, proposal, actor and a stretch of time
    (``--since`` inclusive, ``--until`` exclusive), all together."""
    org_id = None
    if args.org:
        try:
            org_id = cs.club.organization_id(args.org)
        except NotFoundError:
            raise UsageError(f"no club is named {args.org!r}") from None
    proposal_id = None
    if args.proposal is not None:
        try:  # the trail's form of an id (it read no rows for another spelling of it)
            proposal_id = str(UUID(args.proposal.strip()))
        except ValueError:
            raise UsageError(f"{args.proposal!r} is not a proposal id") from None
    # Emails are kept lower-cased, as every command reads them.
    actor = args.actor.strip().lower() if args.actor is not None else None
    since = parse_time(args.since, versions=False) if args.since else None
    until = parse_time(args.until, versions=False) if args.until else None
    catch_up(cs, ["audit_trail"])
    rows = cs.read_models.audit_trail(
        organization_id=org_id, proposal_id=proposal_id, actor=actor, since=since, until=until
    )
    from countersign.infrastructure.audit.export import write_export

    count = write_export(rows, args.format, sys.stdout)
    say(f"audit export: {count} rows")
    return ALREADY_PRINTED, ""


def cmd_audit_verify(cs: Countersign, args: argparse.Namespace) -> Result:
    keys = cs.settings.seal_keys
    # COUNTERSIGN_SEALS_REQUIRED says it for every check, as the flag does for one.
    required = keys is not None and keys.required
    require_seals = bool(getattr(args, "require_seals", False)) or required
    if require_seals and keys is None:
        raise UsageError(
            "--require-seals checks seals, and no seal keys are configured: set "
            "COUNTERSIGN_SEAL_KEYS (or COUNTERSIGN_SEAL_KEYS_FILE) as the deployment does"
        )
    from countersign.infrastructure.entrypoints.cli import anchors

    # The anchor is read and checked first: a file that is not one stops before the long part.
    anchor = anchors.anchor_options(cs, args, require_seals)
    try:
        catch_up(cs, ["audit_trail"])
    except (ProjectionStoppedError, ProjectionNotSetUpError) as stopped:
        # A tampered event can be one the trail cannot process, and a check sets nothing up
        # either (the chain alone is verified where no trail was built): verify regardless.
        log.warning("audit trail not caught up: %s", stopped)
    from countersign.infrastructure.audit.verify import verify

    # A proposal's stored events read at a time: minutes on a large log, so say how it goes
    # once it has run a while (a short check stays silent, for the cron job reading stderr),
    # and, off a terminal, every half minute rather than every second (a cron job's mail).
    progress = Progress("audit verify", 0, every=30.0, unit="proposals", quiet_for=VERIFY_QUIET_FOR)
    checked = verify(
        cs.app, cs.sql, progress.advance, cs.settings.seal_keys, require_seals=require_seals
    )
    progress.finish()
    if anchor is not None:
        checked.anchor = anchors.check_anchor_option(
            cs, anchor, getattr(args, "max_unanchored", None)
        )
    report = checked.to_json()
    unlinked = report["events_with_unlinked_times"]
    times = (
        f" {unlinked:,} events written before events' times were linked: their content is"
        " proved, their times are not."
        if unlinked
        else ""
    )
    unread = report["streams_not_read"]
    if unread:
        times += (
            " Not proposals, not checked: streams of events countersign does not read, of "
            + ", ".join(f"{package} ({count:,})" for package, count in unread.items())
            + " (a plug-in that is not enabled?)."
        )
    seals = report.get("seals")
    if seals is not None:
        times += seals_summary(seals)
    anchored = report.get("anchor")
    if anchored is not None:
        times += anchors.anchor_summary(anchored, args.language)
    if report["ok"]:
        text = VERIFIED.text(
            args.language,
            events=f"{report['events_checked']:,}",
            proposals=f"{report['proposals_checked']:,}",
        )
        return report, text + times
    lines = []
    count = report["broken_proposals"]
    if count:
        lines.append(
            f"audit verify: BROKEN: {count} proposal{'s' if count != 1 else ''} affected, "
            "each at its first broken link:"
        )
        shown = report["broken_links"][:BROKEN_SHOWN]
        lines += [
            f"  proposal {b['proposal_id']} version {b['version']}: {b['problem']}" for b in shown
        ]
        if count > len(shown):
            lines.append(
                f"  and {count - len(shown):,} more (--json lists the first "
                f"{len(report['broken_links']):,})"
            )
    if seals is not None and not seals["ok"]:
        lines.append(seal_faults_text(seals))
    if anchored is not None and not anchored["ok"]:
        lines.append(anchors.anchor_faults_text(anchored, args.language))
    raise FaultFoundError(report, "\n".join(lines))  # exit status 5: checked, and broken


def seals_summary(seals: dict[str, Any]) -> str:
    """What the seals showed, after the chain's verdict (with seal keys configured)."""
    text = f" Seals: {seals['sealed_proposals']:,} proposals sealed and verified"
    unsealed = seals["unsealed_proposals"]
    if unsealed and not seals["required"]:
        text += (
            f"; {unsealed:,} without a seal (made before seal keys were configured, or their "
            "seal removed): proved by the chain alone, and refused at approval (--json lists "
            "them)"
        )
    return text + "."


def seal_faults_text(seals: dict[str, Any]) -> str:
    """The proposals whose seal does not verify, each named (``BROKEN_SHOWN`` of them), and,
    where every proposal must be sealed (``--require-seals``), those without a seal."""
    lines: list[str] = []
    count = seals["badly_sealed_proposals"]
    if count:
        lines.append(
            f"audit verify: BADLY SEALED: {count} proposal{'s' if count != 1 else ''} whose "
            "seal does not verify under the configured keys:"
        )
        shown = seals["badly_sealed"][:BROKEN_SHOWN]
        lines += [f"  proposal {b['proposal_id']}: {b['problem']}" for b in shown]
        if count > len(shown):
            lines.append(f"  and {count - len(shown):,} more (--json lists them)")
    unsealed = seals["unsealed_proposals"]
    if seals["required"] and unsealed:
        lines.append(
            f"audit verify: UNSEALED: {unsealed} proposal{'s' if unsealed != 1 else ''} "
            "without a seal, where every proposal must have one (--require-seals):"
        )
        listed = seals["unsealed"][:BROKEN_SHOWN]
        lines += [
            f"  proposal {u['proposal_id']}, proposed {u['proposed_at'] or 'at an unreadable time'}"
            for u in listed
        ]
        if unsealed > len(listed):
            lines.append(f"  and {unsealed - len(listed):,} more (--json lists the first ones)")
    return "\n".join(lines)


#: ``audit verify``'s verdict when every check held (what the anchor showed follows it).
VERIFIED = Localized(
    "audit verify: OK, {events} events of {proposals} proposals; every hash-chain link holds.",
    "audit verify : OK, {events} événements sur {proposals} propositions ; chaque maillon de "
    "la chaîne de hachage tient.",
)

#: Broken proposals ``audit verify`` lists on the terminal (``--json``: verify.LISTED).
BROKEN_SHOWN = 20
#: Seconds ``audit verify`` runs before it shows its progress.
VERIFY_QUIET_FOR = 2.0
