"""``audit anchor``, and what ``audit verify --anchor`` says of one: where every stream of
the store stood, written for keeping outside the database (infrastructure/audit/anchor.py),
said in the reader's language (the words in audit_words.py)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import ConcurrencyConflictError
from countersign.infrastructure.entrypoints.cli import audit_words as words
from countersign.infrastructure.entrypoints.cli.common import (
    ALREADY_PRINTED,
    Result,
    UsageError,
)
from countersign.infrastructure.entrypoints.cli.progress import Progress
from countersign.infrastructure.entrypoints.cli.service_words import number
from countersign.infrastructure.observability.logs import say

if TYPE_CHECKING:
    from countersign.infrastructure.audit.anchor import Anchor
    from countersign.infrastructure.audit.anchor_check import AnchorReport
    from countersign.infrastructure.audit.unanchored import Unanchored
    from countersign.infrastructure.bootstrap import Countersign

log = logging.getLogger("countersign.cli")

#: Seconds a command runs before it shows its progress (a short run stays silent for cron).
QUIET_FOR = 2.0
#: Differences listed on the terminal (``--json`` lists anchor.LISTED).
SHOWN = words.SHOWN


def cmd_audit_anchor(cs: Countersign, args: argparse.Namespace) -> Result:
    """Write the anchor to ``--out`` (a new file: an anchor is kept, never replaced) or to
    stdout, and say on stderr what it holds."""
    from countersign.infrastructure.audit.anchor import AnchorChangedError, make_anchor
    from countersign.infrastructure.persistence.stored_keys import StoredKeyError

    keys, language = cs.settings.seal_keys, args.language
    progress = Progress(
        "audit anchor", 0, every=30.0, unit="proposals", quiet_for=QUIET_FOR, language=language
    )
    out_path = Path(args.out) if args.out else None
    try:
        with _output(out_path, language) as out:
            made = make_anchor(cs.app, cs.sql, keys, out, cs.clock.now(), progress.advance)
    except StoredKeyError as malformed:
        # A stored event in no stream (or at no place in one): the anchor would leave it out
        # unsaid. Nothing is kept (a --out file is removed); audit verify lists every one.
        from countersign.infrastructure.entrypoints.cli import key_words

        problem = key_words.problem(malformed.code, malformed.position, malformed.value)
        refused = key_words.NO_ANCHOR.filled(problem=problem)
        raise UsageError(refused.en, refused.fr) from None
    except AnchorChangedError as changed:
        # Answered as busy (exit 1, "try again"): what was written has no integrity line, and
        # is refused as incomplete; a --out file is removed.
        log.warning("audit anchor: the proposals changed while they were read (%s)", changed)
        raise ConcurrencyConflictError(str(changed)) from None
    progress.finish()
    if keys is not None:
        signed = words.ANCHOR_SIGNED.text(language, key=keys.sealing_id)
    else:
        signed = words.ANCHOR_UNSIGNED.text(language)
    if out_path is not None:
        where = words.TO_FILE.text(language, path=out_path)
    else:
        where = words.ON_STDOUT.text(language)
    head, count, streams, events = made
    said = words.ANCHOR_MADE.text(
        language,
        proposals=words.many(words.PROPOSALS_COUNTED, count, language),
        streams=words.many(words.STREAMS_COUNTED, streams, language),
        events=words.many(words.EVENTS_COUNTED, events, language),
        head=number(head, language),
        signed=signed,
        where=where,
    )
    say(said)
    return ALREADY_PRINTED, ""


@contextlib.contextmanager
def _output(path: Path | None, language: str) -> Any:
    if path is None:
        yield sys.stdout.buffer
        return
    try:
        file: IO[bytes] = path.open("xb")
    except FileExistsError:
        raise _usage(words.ANCHOR_EXISTS, path=path) from None
    except OSError as error:
        why = error.strerror or type(error).__name__
        raise _usage(words.ANCHOR_NOT_CREATED, path=path, why=why) from None
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
        raise _usage(words.MAX_WITHOUT_ANCHOR)
    if getattr(args, "require_signed_anchor", False) and not args.anchor:
        raise _usage(words.SIGNED_WITHOUT_ANCHOR)
    flag = bool(getattr(args, "require_signed_anchor", False))
    return read_anchor_option(cs, args.anchor, require_signed, flag) if args.anchor else None


def read_anchor_option(
    cs: Countersign, value: str, require_signed: bool = False, flag: bool = False
) -> Anchor:
    """The anchor ``audit verify --anchor`` names, read and checked before anything else is:
    UsageError (exit status 2) saying what is wrong with it and the fix (``require_signed``:
    an unsigned one is, where every proposal must be sealed; ``flag``: or where the auditor
    demands a signed one, ``--require-signed-anchor``)."""
    from countersign.infrastructure.audit.anchor import AnchorFileError, read_anchor

    try:
        anchor = read_anchor(Path(value), cs.settings.seal_keys)
    except AnchorFileError as error:
        raise UsageError(f"--anchor: {error}", f"--anchor : {error.french}") from None
    if (require_signed or flag) and not anchor.signed:
        said = words.REFUSED_UNSIGNED_FLAG if flag else words.REFUSED_UNSIGNED
        raise _usage(said, name=anchor.path.name)
    return anchor


def check_anchor_option(
    cs: Countersign, anchor: Anchor, limit: int | None, language: str = "en"
) -> AnchorReport:
    """Every proposal and other stream of the anchor ``read_anchor_option`` read against the
    store, then the events recorded after it counted, the proposals' and the other streams'
    (more than ``limit`` of either fail the check), each with its progress once it runs a
    while: UsageError (exit status 2) if the file changed since (replaced or edited while
    the chain was checked)."""
    from countersign.infrastructure.audit.anchor import AnchorFileError
    from countersign.infrastructure.audit.anchor_check import check_anchor

    against = Progress(
        "audit verify --anchor",
        anchor.proposals,
        every=30.0,
        unit="proposals",
        quiet_for=QUIET_FOR,
        language=language,
    )
    try:
        report = check_anchor(cs.app, anchor, against.advance, cs.sql)
    except AnchorFileError as error:
        raise UsageError(f"--anchor: {error}", f"--anchor : {error.french}") from None
    against.finish()
    report.unanchored = _count_unanchored(cs, anchor, limit, language)
    if anchor.covers_every_stream:
        report.unanchored_streams = _count_unanchored(cs, anchor, limit, language, streams=True)
    return report


def _count_unanchored(
    cs: Countersign, anchor: Anchor, limit: int | None, language: str, streams: bool = False
) -> Unanchored:
    """The proposals' events (``streams``: the other streams') recorded after ``anchor``, up
    to the log's head now (with the progress, a window of positions at a time, once it runs
    a while)."""
    from countersign.infrastructure.audit.unanchored import count_unanchored

    head = cs.app.recorder.max_notification_id() or 0
    label = words.STREAM_EVENTS_AFTER_IT if streams else words.EVENTS_AFTER_IT
    progress = Progress(
        label.text(language),
        max(head - anchor.log_position, 0),
        every=30.0,
        unit="log positions",
        quiet_for=QUIET_FOR,
        language=language,
    )
    found = count_unanchored(
        cs.sql, anchor.log_position, head, limit, progress.advance, streams=streams
    )
    progress.finish()
    return found


def anchor_summary(anchor: dict[str, Any], language: str = "en") -> str:
    """What the anchor showed, after the chain's verdict, when every stream it holds is as
    anchored: what it covers (every stream, or the proposals only), and whether it is signed,
    said every time."""
    filled = {
        "position": number(anchor["log_position"], language),
        "made_at": anchor["made_at"],
        "signed": _signed(anchor).text(language, key=repr(anchor["key_id"])),
        "proposals": words.many(words.PROPOSALS_COUNTED, anchor["proposals_checked"], language),
    }
    if anchor["covers"] == "every_stream":
        text = words.COVERS_EVERY_STREAM.text(
            language,
            **filled,
            streams=words.many(words.STREAMS_COUNTED, anchor["streams_checked"], language),
            events=words.many(words.EVENTS_COUNTED, anchor["anchored_stream_events"], language),
        )
    else:
        text = words.COVERS_PROPOSALS_ONLY.text(language, **filled)
    return text + not_covered(anchor, language)


def _signed(anchor: dict[str, Any]) -> Localized:
    if anchor["signed"]:
        return words.SIGNED if anchor["key_current"] else words.SIGNED_RETIRED
    return words.UNSIGNED_WITH_KEYS if anchor["keys_configured"] else words.UNSIGNED


def not_covered(anchor: dict[str, Any], language: str) -> str:
    """What the anchor does not cover: the events recorded after it, the proposals' and the
    other streams', or that there are none."""
    proposals, streams = anchor.get("unanchored"), anchor.get("unanchored_streams")
    if proposals is None:
        return ""
    if streams is None:  # format 1: the proposals alone
        if not proposals["events"]:
            return words.NO_PROPOSAL_EVENT_AFTER.text(language, head=_at(proposals, language))
        return unanchored_text(proposals, language)
    if not proposals["events"] and not streams["events"]:
        return words.NOTHING_AFTER.text(language, head=_at(proposals, language))
    said = [unanchored_text(u, language) for u in (proposals, streams) if u["events"]]
    return "\n".join(said)


def _at(unanchored: dict[str, Any], language: str) -> str:
    return number(unanchored["up_to_log_position"], language)


def unanchored_text(unanchored: dict[str, Any], language: str = "en") -> str:
    """What the anchor does not cover of the proposals (or of the other streams): their
    events recorded after it, how many, of which (``SHOWN`` of them listed, each on a line
    of its own)."""
    streams = "streams" in unanchored
    count = unanchored["streams" if streams else "proposals"]
    new = unanchored["new_streams" if streams else "new_proposals"]
    lines = [
        words.NOT_COVERED.text(
            language,
            events=words.many(words.EVENTS_COUNTED, unanchored["events"], language),
            count=words.many(
                words.STREAMS_COUNTED if streams else words.PROPOSALS_COUNTED, count, language
            ),
            made=words.MADE_SINCE.text(language, new=number(new, language)) if new else "",
            low=number(unanchored["after_log_position"] + 1, language),
            head=_at(unanchored, language),
        )
    ]
    lines += _first_shown(
        unanchored["listed"], count, lambda item: _after(item, language), language
    )
    return "\n".join(lines)


def _first_shown(
    listed: list[dict[str, Any]],
    count: int,
    said: Callable[[dict[str, Any]], str],
    language: str = "en",
) -> list[str]:
    """A line for each of the first ``SHOWN`` proposals or streams ``listed`` (of ``count``
    in all), then how many more, and how many ``--json`` lists."""
    shown = listed[:SHOWN]
    lines = [_item(item, said(item), language) for item in shown]
    if count > len(shown):
        more, many = number(count - len(shown), language), number(len(listed), language)
        lines.append(words.MORE.text(language, more=more, listed=many))
    return lines


def _item(item: dict[str, Any], said: str, language: str) -> str:
    if item.get("kind") == "Proposal" and "anchored_version" in item and "version" in item:
        return words.PROPOSAL_ITEM.text(language, id=item["stream_id"], said=said)
    if "stream_id" in item:
        return words.STREAM_ITEM.text(language, kind=item["kind"], id=item["stream_id"], said=said)
    return words.PROPOSAL_ITEM.text(language, id=item["proposal_id"], said=said)


def _after(listed: dict[str, Any], language: str) -> str:
    first, last = listed["first_version"], listed["last_version"]
    events = _versions(first, last, language)
    if listed["made_after_anchor"]:
        return words.MADE_AFTER.text(language, events=events)
    return words.AFTER.text(language, events=events)


def _versions(first: int, last: int, language: str) -> str:
    if first == last:
        return words.ONE_EVENT.text(language, first=first)
    return words.EVENTS.text(language, first=first, last=last)


def anchor_faults_text(anchor: dict[str, Any], language: str = "en") -> str:
    """The proposals and the other streams not as the anchor has them, each named (``SHOWN``
    of them); the events after it, failing the check when more than ``--max-unanchored``."""
    lines = []
    made = {"made_at": anchor["made_at"], "position": number(anchor["log_position"], language)}
    count = anchor["not_as_anchored"]
    if count:
        counted = words.many(words.PROPOSALS_COUNTED, count, language)
        lines.append(words.NOT_AS_ANCHORED.text(language, count=counted, **made))
        lines += _first_shown(
            anchor["differences"], count, lambda d: _proposal_said(d, language), language
        )
    count = anchor["streams_not_as_anchored"]
    if count:
        counted = words.many(words.STREAMS_COUNTED, count, language)
        lines.append(words.STREAMS_NOT_AS_ANCHORED.text(language, count=counted, **made))
        lines += _first_shown(
            anchor["stream_differences"], count, lambda d: _stream_said(d, language), language
        )
    added = anchor.get("added_before_position")
    if added:
        events = words.many(words.EVENTS_COUNTED, added, language)
        lines.append(words.ADDED_BEFORE.text(language, events=events, **made))
        listed = anchor.get("added_before_events") or []
        lines += _first_shown(listed, added, lambda e: _added_said(e, language), language)
    for unanchored, what in (
        (anchor.get("unanchored"), words.OF_PROPOSALS),
        (anchor.get("unanchored_streams"), words.OF_OTHER_STREAMS),
    ):
        if unanchored is not None and not unanchored["ok"]:
            lines.append(
                words.UNANCHORED_FAULT.text(
                    language,
                    events=number(unanchored["events"], language),
                    what=what.text(language),
                    limit=number(unanchored["max_unanchored"], language),
                    **made,
                )
            )
    covered = not_covered(anchor, language)
    if covered:
        lines.append(words.VERIFY_PREFIX.text(language) + covered)
    return "\n".join(lines)


def _added_said(event: dict[str, Any], language: str) -> str:
    """Where an event the anchor does not hold is: its version, class and log position,
    and the anchored event it follows (or that its stream is not anchored)."""
    anchored = event["anchored_version"]
    said = words.ADDED_AFTER if anchored is not None else words.ADDED_NEW_STREAM
    return said.text(
        language,
        version=event["version"],
        event=event["event"],
        position=number(event["log_position"], language),
        anchored=anchored,
    )


def _proposal_said(difference: dict[str, Any], language: str) -> str:
    if language != "fr":
        return str(difference["text"])  # the JSON's own words
    problem = difference["problem"]
    stored = difference.get("stored_version")
    gone = ""
    if problem == "cut_back":
        gone = _versions(difference["removed_from"], difference["anchored_version"], language)
    return words.PROPOSAL_PROBLEMS[problem].text(
        language,
        anchored_version=difference["anchored_version"],
        anchored_event=difference["anchored_event"],
        stored_version=stored,
        gone=gone,
    )


def _stream_said(difference: dict[str, Any], language: str) -> str:
    problem = difference["problem"]
    if problem == "changed" and "from_version" in difference:
        problem = "changed_among"
    return words.STREAM_PROBLEMS[problem].text(
        language,
        version=difference["version"],
        from_version=difference.get("from_version"),
        anchored_version=difference["anchored_version"],
        stored_version=difference.get("stored_version"),
        stored_event=difference.get("stored_event"),
    )


def _usage(said: Localized, **params: object) -> UsageError:
    """A usage error in both languages (the command line says the reader's)."""
    return UsageError(said.text("en", **params), said.text("fr", **params))
