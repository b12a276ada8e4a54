"""Commands for operators and auditors: run, rebuild and inspect the projections; export and
verify the audit trail."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING
from uuid import UUID

from countersign.domain.errors import NotFoundError
from countersign.infrastructure.entrypoints.cli import audit_words, snapshot_words, verify_texts
from countersign.infrastructure.entrypoints.cli import service_words as words
from countersign.infrastructure.entrypoints.cli.common import (
    ALREADY_PRINTED,
    FaultFoundError,
    ProjectionNotSetUpError,
    Result,
    UsageError,
    catch_up,
    parse_time,
    service_stopped,
)
from countersign.infrastructure.entrypoints.cli.progress import Progress
from countersign.infrastructure.entrypoints.cli.service_words import number
from countersign.infrastructure.observability.logs import say
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError

if TYPE_CHECKING:
    from countersign.infrastructure.audit.verify import VerifyReport
    from countersign.infrastructure.bootstrap import Countersign
    from countersign.infrastructure.projection_engine.standing import Standing

log = logging.getLogger("countersign.cli")


def cmd_projections_status(cs: Countersign, args: argparse.Namespace) -> Result:
    """Every projection named (all by default): where it stands, whose code built its
    tables and what to do next. Read-only: it sets nothing up, drops nothing, and lists
    every projection, a later release's too (``projection_engine/standing.py``)."""
    from countersign.infrastructure.projection_engine import skips
    from countersign.infrastructure.projection_engine.standing import standings

    language = args.language
    statuses, lines = [], []
    projections = cs.projections(args.names)
    for projection, standing in zip(
        projections, standings(cs.app, cs.sql, projections), strict=True
    ):
        status = standing.to_json()
        statuses.append(status)
        position, lag = (number(status[key], language) for key in ("position", "lag"))
        lines.append(
            words.STATUS_LINE.text(
                language, name=f"{standing.name:<14}", position=f"{position:>9}", lag=f"{lag:>9}"
            )
        )
        stopped = standing.stopped.text(language) if standing.stopped is not None else None
        for said in (_note(standing, projection.version, language), stopped):
            if said:
                lines.append(f"  {said}")
    skipped = skips.listed(cs.sql)
    for skip in skipped:
        lines.append(
            words.SKIPPED_LINE.text(
                language,
                position=skip.position,
                event=skip.event,
                who=skip.skipped_by,
                at=skip.skipped_at,
                reason=skip.reason,
            )
        )
    if skipped and args.json:
        # The document stays a list of projections; each says which events it passes.
        for status in statuses:
            status["skipped"] = [skip.as_dict() for skip in skipped]
    return statuses, "\n".join(lines)


def _note(standing: Standing, ours: int, language: str) -> str | None:
    """What ``projections status`` says of tables this release's code (its projection's
    version ``ours``) did not build."""
    french = words.STATUS_NOTES_FR.get(standing.state) if language == "fr" else None
    if french is None or standing.note is None:
        return standing.note
    theirs = standing.built_version
    return french.format(
        name=standing.name,
        theirs=theirs,
        ours=ours,
        theirs_said=f" (v{theirs})" if theirs is not None else "",
    )


def cmd_projections_skip(cs: Countersign, args: argparse.Namespace) -> Result:
    """Record that every projection passes the event at ``args.position``, which must not
    decode (infrastructure/projection_engine/skips.py says why and when)."""
    from countersign.infrastructure.projection_engine import skips

    # Any projection's runner decodes alike; its tables are not set up (nor claimed, which
    # dropped an earlier release's audit trail, and stopped at a later release's).
    [runner] = cs.projection_runners(["audit_trail"], set_up=False)
    position = max(1, args.position)
    # The log's row as the runners read it (an id that is no UUID stopped the library's
    # read with a traceback: persistence/stored_keys.py).
    found = runner.read_log(position - 1, 1)
    notification = found[0] if found else None
    try:
        skip = skips.record(
            cs.sql, notification, runner.decode_event.decode, args.position, args.reason
        )
    except skips.SkipRefusedError as refused:
        raise UsageError(str(refused), refused.french) from None
    document = {"skipped": skip.as_dict()}
    text = words.SKIP_RECORDED.text(
        args.language, position=skip.position, event=skip.event, reason=skip.reason
    )
    return document, text


def cmd_projections_rebuild(cs: Countersign, args: argparse.Namespace) -> Result:
    # An operator's rebuild makes the tables this release's, even a later release's.
    runners = cs.projection_runners(args.names, batch_size=args.batch_size, take_over=True)
    names = [runner.name for runner in runners]
    language = args.language
    label = words.REBUILDING.text(language, names=", ".join(names))
    progress = Progress(label, runners[0].head() if runners else 0, language=language)
    from countersign.infrastructure.projection_engine.together import rebuild_together

    events = rebuild_together(runners, progress.advance)
    progress.finish()
    seconds, rate = round(progress.elapsed, 3), round(progress.rate)
    result = {"projections": names, "events": events, "seconds": seconds, "events_per_second": rate}
    text = words.REBUILT.text(
        language,
        names=", ".join(names),
        events=number(events, language),
        seconds=str(seconds).replace(".", ",") if language == "fr" else seconds,
        rate=number(rate, language),
    )
    return result, text


def cmd_projections_run(cs: Countersign, args: argparse.Namespace) -> Result:
    runners = cs.projection_runners(args.names, batch_size=args.batch_size)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    processed: dict[str, int] = {runner.name: 0 for runner in runners}
    last_report = [time.monotonic()]
    language = args.language

    def counts() -> str:
        return ", ".join(f"{n} +{number(c, language)}" for n, c in processed.items())

    def on_batch(name: str, count: int) -> None:
        processed[name] += count
        if time.monotonic() - last_report[0] >= 5:
            last_report[0] = time.monotonic()
            say(words.PROCESSED.text(language, counts=counts()))

    say(words.FOLLOWING.text(language, names=", ".join(processed)))
    from countersign.infrastructure.projection_engine.together import run_forever

    run_forever(runners, stop, on_batch=on_batch)
    from countersign.infrastructure.projection_engine.standing import standings

    # Read as stored, as `projections status` reads them: a runner's own status() sets a
    # projection up again if it finds other code's tables (and stops at a later release's).
    statuses = [s.to_json() for s in standings(cs.app, cs.sql, [r.projection for r in runners])]
    document = {"stopped": True, "processed": processed, "status": statuses}
    return service_stopped(
        args, document, words.PROJECTIONS_STOPPED.text(language, counts=counts())
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
            said = {lang: words.NO_SUCH_CLUB.text(lang, name=args.org) for lang in ("en", "fr")}
            raise UsageError(said["en"], said["fr"]) from None
    proposal_id = None
    if args.proposal is not None:
        try:  # the trail's form of an id (it read no rows for another spelling of it)
            proposal_id = str(UUID(args.proposal.strip()))
        except ValueError:
            said = {
                lang: words.NOT_A_PROPOSAL_ID.text(lang, value=args.proposal)
                for lang in ("en", "fr")
            }
            raise UsageError(said["en"], said["fr"]) from None
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
    say(audit_words.many(words.EXPORTED, count, args.language))
    return ALREADY_PRINTED, ""


def cmd_audit_verify(cs: Countersign, args: argparse.Namespace) -> Result:
    keys = cs.settings.seal_keys
    language = args.language
    # COUNTERSIGN_SEALS_REQUIRED says it for every check, as the flag does for one.
    required = keys is not None and keys.required
    require_seals = bool(getattr(args, "require_seals", False)) or required
    if require_seals and keys is None:
        said = audit_words.SEALS_WITHOUT_KEYS
        raise UsageError(said.text("en"), said.text("fr"))
    from countersign.infrastructure.entrypoints.cli import anchors

    # The anchor is read and checked first: a file that is not one stops before the long part.
    anchor = anchors.anchor_options(cs, args, require_seals)
    try:
        catch_up(cs, ["audit_trail"])
    except (ProjectionStoppedError, ProjectionNotSetUpError) as stopped:
        # A tampered event can be one the trail cannot process, and a check sets nothing up
        # either (the chain alone is verified where no trail was built): verify regardless.
        log.warning("audit trail not caught up: %s", stopped)
    checked = _verified(cs, language, require_seals)
    if anchor is not None:
        checked.anchor = anchors.check_anchor_option(
            cs, anchor, getattr(args, "max_unanchored", None), language
        )
    report = checked.to_json()
    more = verify_texts.unlinked_and_unread(report, language)
    seals = report.get("seals")
    if seals is not None:
        more += verify_texts.seals_summary(seals, language)
    anchored = report.get("anchor")
    if anchored is not None:
        more += anchors.anchor_summary(anchored, language)
    if report["ok"]:
        return report, verify_texts.verified(report, more, language)
    from countersign.infrastructure.entrypoints.cli.key_words import malformed_text

    # An event in no stream first: the gap it leaves in its stream is named after it.
    lines = malformed_text(report, language) + verify_texts.broken_text(report, language)
    if seals is not None and not seals["ok"]:
        lines.append(verify_texts.seal_faults_text(seals, language))
    if anchored is not None and not anchored["ok"]:
        lines.append(anchors.anchor_faults_text(anchored, language))
    snapshots = report.get("snapshots")
    if snapshots is not None and not snapshots["ok"]:
        lines.append(verify_texts.snapshot_faults_text(snapshots, language))
    # What a broken chain leaves true is said too, as an OK says it: the times it cannot
    # prove, and the events recorded after an anchor that held, which it does not cover (they
    # were left out: an auditor read a broken chain as all there was to know). Not that the
    # seals or the anchor vouch for the rest: they vouch for links, and a content changed
    # under its link is the chain's finding alone.
    held = verify_texts.unlinked_and_unread(report, language)
    if anchored is not None and anchored["ok"]:
        held += anchors.not_covered(anchored, language)
    lines += verify_texts.still_said(held, language)
    raise FaultFoundError(report, "\n".join(lines))  # exit status 5: checked, and broken


def _verified(cs: Countersign, language: str, require_seals: bool) -> VerifyReport:
    """``verify`` with its progress on stderr once it runs a while: the proposals', then the
    stored snapshots' (each a replay of its aggregate: thousands take a while too)."""
    from countersign.infrastructure.audit.snapshot_check import count_snapshots
    from countersign.infrastructure.audit.verify import verify

    # A proposal's stored events read at a time: minutes on a large log, so say how it goes
    # once it has run a while (a short check stays silent, for the cron job reading stderr),
    # and, off a terminal, every half minute rather than every second (a cron job's mail).
    progress = Progress(
        "audit verify",
        0,
        every=30.0,
        unit="proposals",
        quiet_for=VERIFY_QUIET_FOR,
        language=language,
    )
    replays = Progress(
        snapshot_words.SNAPSHOTS_PROGRESS.text(language),
        count_snapshots(cs.app, cs.sql),
        every=30.0,
        unit="snapshots",
        quiet_for=VERIFY_QUIET_FOR,
        language=language,
    )
    proposals_done = [False]

    def snapshots_progress(count: int) -> None:
        if not proposals_done[0] and count:  # the proposals' line ends where theirs begins
            progress.finish()
            proposals_done[0] = True
        replays.advance(count)

    checked = verify(
        cs.app,
        cs.sql,
        progress.advance,
        cs.settings.seal_keys,
        require_seals=require_seals,
        snapshots_progress=snapshots_progress,
    )
    if not proposals_done[0]:
        progress.finish()
    if replays.done:  # none stored: nothing to say of them
        replays.finish()
    return checked


#: Seconds ``audit verify`` runs before it shows its progress.
VERIFY_QUIET_FOR = 2.0
