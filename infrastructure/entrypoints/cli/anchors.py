"""``audit anchor``, and what ``audit verify --anchor`` says of one: where every proposal's
stream stood, written for keeping outside the database (infrastructure/audit/anchor.py)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from countersign.domain.errors import ConcurrencyConflictError
from countersign.infrastructure.entrypoints.cli.common import (
    ALREADY_PRINTED,
    Result,
    UsageError,
)
from countersign.infrastructure.entrypoints.cli.progress import Progress
from countersign.infrastructure.observability.logs import say

if TYPE_CHECKING:
    from countersign.infrastructure.audit.anchor import Anchor, AnchorReport
    from countersign.infrastructure.audit.unanchored import Unanchored
    from countersign.infrastructure.bootstrap import Countersign

log = logging.getLogger("countersign.cli")

#: Seconds a command runs before it shows its progress (a short run stays silent for cron).
QUIET_FOR = 2.0
#: Differences listed on the terminal (``--json`` lists anchor.LISTED).
SHOWN = 20


def cmd_audit_anchor(cs: Countersign, args: argparse.Namespace) -> Result:
    """Write the anchor to ``--out`` (a new file: an anchor is kept, never replaced) or to
    stdout, and say on stderr what it holds."""
    from countersign.infrastructure.audit.anchor import AnchorChangedError, make_anchor

    keys = cs.settings.seal_keys
    progress = Progress("audit anchor", 0, every=30.0, unit="proposals", quiet_for=QUIET_FOR)
    out_path = Path(args.out) if args.out else None
    try:
        with _output(out_path) as out:
            head, count = make_anchor(cs.app, cs.sql, keys, out, cs.clock.now(), progress.advance)
    except AnchorChangedError as changed:
        # Answered as busy (exit 1, "try again"): what was written has no integrity line, and
        # is refused as incomplete; a --out file is removed.
        log.warning("audit anchor: the proposals changed while they were read (%s)", changed)
        raise ConcurrencyConflictError(str(changed)) from None
    progress.finish()
    signed = (
        f"signed with seal key {keys.sealing_id!r}"
        if keys is not None
        else "unsigned (no seal keys are configured: it proves as much as where it is kept)"
    )
    where = f"to {out_path}" if out_path is not None else "on stdout"
    say(
        f"audit anchor: {count:,} proposals at log position {head:,}, {signed}, written {where}; "
        "keep it where the database's writers cannot reach, and check the database against it "
        "with `countersign audit verify --anchor FILE`"
    )
    return ALREADY_PRINTED, ""


@contextlib.contextmanager
def _output(path: Path | None) -> Any:
    if path is None:
        yield sys.stdout.buffer
        return
    try:
        file: IO[bytes] = path.open("xb")
    except FileExistsError:
        raise UsageError(
            f"{path} exists: an anchor is kept, never replaced; name a new file (one a run, "
            "such as anchor-2026-12-07T0900.jsonl)"
        ) from None
    except OSError as error:
        raise UsageError(
            f"cannot create {path} ({error.strerror or type(error).__name__}): choose a path "
            "this process may write"
        ) from None
    try:
        with file:
            yield file
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)  # a half-written anchor is no anchor
        raise


def anchor_options(
    cs: Countersign, args: argparse.Namespace, require_signed: bool
) -> Anchor | None:
    """``audit verify``'s ``--anchor``, read and checked (``read_anchor_option``), or None;
    UsageError for a ``--max-unanchored`` without it."""
    if getattr(args, "max_unanchored", None) is not None and not args.anchor:
        raise UsageError(
            "--max-unanchored counts the events recorded after an anchor: give the anchor "
            "with --anchor FILE"
        )
    return read_anchor_option(cs, args.anchor, require_signed) if args.anchor else None


def read_anchor_option(cs: Countersign, value: str, require_signed: bool = False) -> Anchor:
    """The anchor ``audit verify --anchor`` names, read and checked before anything else is:
    UsageError (exit status 2) saying what is wrong with it and the fix (``require_signed``:
    an unsigned one is, where every proposal must be sealed)."""
    from countersign.infrastructure.audit.anchor import AnchorFileError, read_anchor

    try:
        return read_anchor(Path(value), cs.settings.seal_keys, require_signed=require_signed)
    except AnchorFileError as error:
        raise UsageError(f"--anchor: {error}") from None


def check_anchor_option(cs: Countersign, anchor: Anchor, limit: int | None) -> AnchorReport:
    """Every proposal of the anchor ``read_anchor_option`` read against the store, then the
    proposals' events recorded after it counted (more than ``limit`` fail the check), each
    with its progress once it runs a while: UsageError (exit status 2) if the file changed
    since (replaced or edited while the chain was checked)."""
    from countersign.infrastructure.audit.anchor import AnchorFileError, check_anchor

    against = Progress(
        "audit verify --anchor", anchor.proposals, every=30.0, unit="proposals", quiet_for=QUIET_FOR
    )
    try:
        report = check_anchor(cs.app, anchor, against.advance)
    except AnchorFileError as error:
        raise UsageError(f"--anchor: {error}") from None
    against.finish()
    report.unanchored = _count_unanchored(cs, anchor, limit)
    return report


def _count_unanchored(cs: Countersign, anchor: Anchor, limit: int | None) -> Unanchored:
    """The proposals' events recorded after ``anchor``, up to the log's head now (with the
    progress, a window of positions at a time, once it runs a while)."""
    from countersign.infrastructure.audit.unanchored import count_unanchored

    head = cs.app.recorder.max_notification_id() or 0
    progress = Progress(
        "audit verify --anchor: events after it",
        max(head - anchor.log_position, 0),
        every=30.0,
        unit="log positions",
        quiet_for=QUIET_FOR,
    )
    found = count_unanchored(cs.sql, anchor.log_position, head, limit, progress.advance)
    progress.finish()
    return found


def anchor_summary(anchor: dict[str, Any]) -> str:
    """What the anchor showed, after the chain's verdict, when every proposal is as anchored."""
    if anchor["signed"] and anchor["key_current"]:
        signed = f"signed with key {anchor['key_id']!r}"
    elif anchor["signed"]:
        signed = (
            f"signed with key {anchor['key_id']!r}, a retired key the configured keys still "
            "list (not the sealing key): it verifies while they list it"
        )
    elif anchor["keys_configured"]:
        signed = (
            "unsigned: as strong as where it was kept, though seal keys are configured; "
            "`audit anchor` signs new ones, and --require-seals refuses an unsigned one"
        )
    else:
        signed = "unsigned: as strong as where it was kept"
    text = (
        f" Anchor: {anchor['proposals_checked']:,} proposals as anchored at log position "
        f"{anchor['log_position']:,} (made {anchor['made_at']}, {signed})."
    )
    unanchored = anchor.get("unanchored")
    return text if unanchored is None else text + unanchored_text(unanchored)


def unanchored_text(unanchored: dict[str, Any]) -> str:
    """What the anchor does not cover: the proposals' events recorded after it, how many, of
    which proposals (``SHOWN`` of them listed, each on a line of its own)."""
    events, proposals = unanchored["events"], unanchored["proposals"]
    if not events:
        return (
            f" No proposal's event was recorded after it (up to log position "
            f"{unanchored['up_to_log_position']:,}): it covers every one."
        )
    new = unanchored["new_proposals"]
    made = f", {new:,} of them made since" if new else ""
    lines = [
        f" Not covered by it: {events:,} event{'s' if events != 1 else ''} of "
        f"{proposals:,} proposal{'s' if proposals != 1 else ''}{made}, recorded after it "
        f"(log positions {unanchored['after_log_position'] + 1:,} to "
        f"{unanchored['up_to_log_position']:,}): an event among them removed is shown by no "
        "anchor until the next one is made:"
    ]
    lines += _first_shown(unanchored["listed"], proposals, _after)
    return "\n".join(lines)


def _first_shown(
    listed: list[dict[str, Any]], count: int, said: Callable[[dict[str, Any]], str]
) -> list[str]:
    """A line for each of the first ``SHOWN`` proposals ``listed`` (of ``count`` in all),
    then how many more, and how many ``--json`` lists."""
    shown = listed[:SHOWN]
    lines = [f"  proposal {item['proposal_id']}: {said(item)}" for item in shown]
    if count > len(shown):
        lines.append(f"  and {count - len(shown):,} more (--json lists the first {len(listed):,})")
    return lines


def _after(listed: dict[str, Any]) -> str:
    first, last = listed["first_version"], listed["last_version"]
    events = f"event {first}" if first == last else f"events {first} to {last}"
    return f"made after it ({events})" if listed["made_after_anchor"] else f"{events} after it"


def anchor_faults_text(anchor: dict[str, Any]) -> str:
    """The proposals not as the anchor has them, each named (``SHOWN`` of them); the
    proposals' events after it, failing the check when more than ``--max-unanchored``."""
    lines = []
    count = anchor["not_as_anchored"]
    if count:
        lines.append(
            f"audit verify: NOT AS ANCHORED: {count} proposal{'s' if count != 1 else ''} of "
            f"the anchor made {anchor['made_at']} (log position {anchor['log_position']:,}) "
            "removed, cut back or rewritten since:"
        )
        lines += _first_shown(anchor["differences"], count, lambda d: str(d["text"]))
    unanchored = anchor.get("unanchored")
    if unanchored is not None and not unanchored["ok"]:
        lines.append(
            f"audit verify: UNANCHORED: {unanchored['events']:,} events of proposals recorded "
            f"after the anchor made {anchor['made_at']} (log position "
            f"{anchor['log_position']:,}), more than --max-unanchored "
            f"{unanchored['max_unanchored']:,}: make an anchor now (`countersign audit "
            "anchor`), keep it, and check against it; anchor more often if this recurs."
        )
    if unanchored is not None:
        lines.append("audit verify:" + unanchored_text(unanchored))
    return "\n".join(lines)
