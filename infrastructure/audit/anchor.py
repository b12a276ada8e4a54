"""``countersign audit anchor`` and ``audit verify --anchor``: a record, kept outside the
database, of where every proposal's stream stood, so that a stream cut back since shows.

Seals prove each stored event, but nothing in the database can say which event was a
stream's last: a writer who deletes a stream's last events leaves a shorter stream whose every
seal verifies (docs/design.md, "Seals"). An anchor is that last link, kept where the
database's writers cannot reach (an append-only store, another system). Its file is JSON
lines, in this order:

- a header: ``{"countersign_anchor": 1, "made_at", "log_position", "proposals", "signed",
  "key_id"}``, where ``log_position`` is the notification log's head when it was made: the
  anchor is the state of the log at that position, every event after it left out;
- one line a proposal, in the order of their ids: ``{"proposal_id", "organization_id",
  "version", "event", "chain"}``, its stream's last event at that position (its version,
  its type) and that event's chain link, which covers every event before it;
- the integrity line: ``{"end": "countersign_anchor", "proposals", "sha256", "mac"}``, the
  SHA-256 of every byte before it and, with seal keys, its HMAC under the sealing key
  (``SealKeys.sign_anchor``: the key's id in the header, never the secret).

Checking one (``read_anchor`` then ``check_anchor``) reads the file twice, a line at a time:
first its form and its integrity line (a file that is not one, damaged, edited, or signed
under a key not held is refused before anything is checked), then, the same lines again (a
file changed in between is refused, its SHA-256 no longer the one checked), each proposal
against the store: it must still exist, have at least the anchored version, and its link at
that version must be the anchored one. Otherwise it is named: removed (no stream), cut back
(the events removed, from which version) or rewritten (its link differs: changed, or cut back
and made again, sealed or not). Proposals made after the anchor, and events recorded after
it, are what it does not cover: ``unanchored.py`` counts them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from uuid import UUID

from countersign.domain.seals import SealKeys, plain_key_id
from countersign.infrastructure.audit.unanchored import Unanchored
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.proposal_heads import ProposalHeads
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stored_events import written_fields

#: The format this release writes and reads.
FORMAT = 1
_END = "countersign_anchor"
#: The longest line read (an anchored proposal's is about 250 bytes).
MAX_LINE = 4096
#: How many differences a report lists (each proposal's, in the anchor's order).
LISTED = 100
_HOW = (
    "use a copy as `countersign audit anchor` wrote it, kept where the database's writers "
    "cannot reach"
)


class AnchorChangedError(Exception):
    """The proposals below the log's head changed while they were read (an event committed
    late, or removed): the anchor written is incomplete, and is to be made again."""


class AnchorFileError(ValueError):
    """An anchor file that cannot be used: the message names what is wrong and the fix, never
    a secret."""


def _line(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def make_anchor(
    app: CountersignApplication,
    sql: SqlDatabase,
    keys: SealKeys | None,
    out: IO[bytes],
    made_at: datetime,
    progress: Callable[[int], None] | None = None,
) -> tuple[int, int]:
    """Write an anchor of every proposal at the log's head to ``out``, a line at a time;
    its head position and the number of proposals anchored."""
    head = app.recorder.max_notification_id() or 0
    reader = ProposalHeads(sql, head)
    count = reader.count()
    header = {
        "countersign_anchor": FORMAT,
        "made_at": made_at.isoformat(),
        "log_position": head,
        "proposals": count,
        "signed": keys is not None,
        "key_id": None if keys is None else keys.sealing_id,
    }
    digest = hashlib.sha256()
    written = 0
    line = _line(header)
    digest.update(line)
    out.write(line)
    for entry in reader.entries(app):
        line = _line(entry)
        digest.update(line)
        out.write(line)
        written += 1
        if progress is not None:
            progress(1)
    if written != count:  # the store changed below the head as it was read: no anchor
        raise AnchorChangedError(f"{count:,} proposals counted, {written:,} read")
    hexdigest = digest.hexdigest()
    signature = None if keys is None else keys.sign_anchor(hexdigest)["mac"]
    out.write(_line({"end": _END, "proposals": count, "sha256": hexdigest, "mac": signature}))
    out.flush()
    return head, count


@dataclass(frozen=True)
class Anchor:
    """An anchor file whose form and integrity line held (``read_anchor``)."""

    path: Path
    made_at: str
    log_position: int
    proposals: int
    key_id: str | None
    #: The SHA-256 of its lines as read and checked: ``check_anchor`` reads them again, and
    #: refuses a file changed in between (``_entries``).
    sha256: str = ""
    #: Whether its key is the configured sealing key (False: a retired key the key ring
    #: still lists; None: unsigned).
    key_current: bool | None = None
    #: Whether seal keys were configured when it was checked (an unsigned one is then said to
    #: be weaker than it could be).
    keys_configured: bool = False

    @property
    def signed(self) -> bool:
        return self.key_id is not None


def read_anchor(path: Path, keys: SealKeys | None, *, require_signed: bool = False) -> Anchor:
    """The anchor at ``path``, its every line read and its integrity line checked (its
    signature too, under ``keys``: the sealing key or a retired one they still list);
    AnchorFileError saying what is wrong and the fix. ``require_signed`` (with keys, where
    every proposal must be sealed: ``--require-seals``, ``COUNTERSIGN_SEALS_REQUIRED``):
    an unsigned anchor is refused too, since whoever reaches where it is kept can make one."""
    try:
        with path.open("rb") as file:
            anchor = _read(file, keys, path)
    except OSError as error:
        raise AnchorFileError(
            f"the anchor file cannot be read ({error.strerror or type(error).__name__}): "
            "name a file `countersign audit anchor` wrote"
        ) from None
    if require_signed and not anchor.signed:
        raise AnchorFileError(
            f"{path.name} is unsigned, and every anchor must be signed here (--require-seals, "
            "or COUNTERSIGN_SEALS_REQUIRED=true): whoever can write where an unsigned anchor "
            "is kept can make one of a store cut back. Check against an anchor "
            "`countersign audit anchor` wrote with the seal keys configured (it signs it); "
            "an unsigned one made before the keys can only be checked without --require-seals "
            "and with COUNTERSIGN_SEALS_REQUIRED=false"
        )
    return anchor


def _read(file: IO[bytes], keys: SealKeys | None, path: Path) -> Anchor:
    first = file.readline(MAX_LINE)
    header = _document(first, 1)
    if header is None or "countersign_anchor" not in header:
        raise AnchorFileError(
            f"{path.name} is not an anchor (its first line is not an anchor's header): "
            "give a file `countersign audit anchor` wrote"
        )
    if header.get("countersign_anchor") != FORMAT:
        given = header.get("countersign_anchor")
        named = given if type(given) is int else "unknown"
        raise AnchorFileError(
            f"{path.name} is an anchor of another format ({named}, this release reads "
            f"{FORMAT}): check it with the release that made it"
        )
    made_at, position, count = (header.get(k) for k in ("made_at", "log_position", "proposals"))
    key_id = header.get("key_id")
    if not (
        _moment(made_at)
        and _count(position)
        and _count(count)
        and header.get("signed") is (key_id is not None)
        and (key_id is None or isinstance(key_id, str))
    ):
        raise AnchorFileError(f"the anchor's header is not one countersign writes: {_HOW}")
    digest = hashlib.sha256()
    digest.update(first)
    entries, previous, end = 0, None, None
    for number, raw in enumerate(_lines(file), start=2):
        if end is not None:
            raise AnchorFileError(f"the anchor has lines after its integrity line: {_HOW}")
        document = _document(raw, number)
        if document is not None and document.get("end") == _END:
            end = document
            continue
        digest.update(raw)
        entry = _entry(document, number)
        if previous is not None and entry[0] <= previous:
            raise AnchorFileError(f"line {number} of the anchor is out of order: {_HOW}")
        previous = entry[0]
        entries += 1
    if end is None:
        raise AnchorFileError(
            "the anchor ends before its integrity line: it is incomplete (cut short, or still "
            f"being written); {_HOW}"
        )
    if (
        end.get("proposals") != entries
        or entries != count
        or end.get("sha256") != digest.hexdigest()
    ):
        raise AnchorFileError(
            "the anchor's lines do not match its integrity line: it was damaged or edited "
            f"after it was made; {_HOW}"
        )
    if key_id is not None:
        _check_signature(keys, key_id, end.get("mac"), digest.hexdigest())
    elif end.get("mac") is not None:
        raise AnchorFileError(f"the anchor's header and its integrity line disagree: {_HOW}")
    position = position if isinstance(position, int) else 0
    current = None if key_id is None else keys is not None and key_id == keys.sealing_id
    return Anchor(
        path,
        str(made_at),
        position,
        entries,
        key_id,
        digest.hexdigest(),
        key_current=current,
        keys_configured=keys is not None,
    )


def _lines(file: IO[bytes]) -> Iterator[bytes]:
    """The file's lines from where it stands, each read up to ``MAX_LINE`` bytes: a longer
    one (no anchor's line is) is read as a line cut short, never held whole."""
    return iter(lambda: file.readline(MAX_LINE), b"")


def _check_signature(keys: SealKeys | None, key_id: str, mac: Any, digest: str) -> None:
    named = f"key {key_id!r}" if _plain(key_id) else "an unreadable key id"
    if keys is None:
        raise AnchorFileError(
            f"the anchor is signed with {named}, and no seal keys are configured: set "
            "COUNTERSIGN_SEAL_KEYS (or COUNTERSIGN_SEAL_KEYS_FILE) as the deployment does"
        )
    problem = keys.anchor_problem(key_id, mac, digest)
    if problem is None:
        return
    if problem.kind == "unknown_key":
        raise AnchorFileError(
            f"the anchor is signed with {named}, which is not configured: list it in "
            "COUNTERSIGN_SEAL_KEYS (a key rotated out stays listed after the new one) to "
            "check this anchor"
        )
    raise AnchorFileError(
        f"the anchor's signature ({named}) does not match its lines: it was edited after it "
        f"was made; {_HOW}"
    )


def _plain(key_id: str) -> bool:
    return plain_key_id(key_id) is not None


def _moment(value: Any) -> bool:
    """Whether ``value`` is a time as ``audit anchor`` writes it (an ISO 8601 text): what is
    printed of an anchor is never a line or a control sequence of the file's own."""
    if not isinstance(value, str) or len(value) > 64:
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _document(raw: bytes, number: int) -> dict[str, Any] | None:
    if not raw.endswith(b"\n"):
        return None if number == 1 else _refuse_cut(number)  # the header: no anchor
    try:
        document = json.loads(raw)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _refuse_cut(number: int) -> dict[str, Any]:
    raise AnchorFileError(
        f"the anchor's line {number} is cut short (incomplete, or still being written) or "
        f"longer than an anchor's line; {_HOW}"
    )


_HEX = frozenset("0123456789abcdef")


def _entry(document: dict[str, Any] | None, number: int) -> tuple[UUID, str, int, str, str]:
    """An anchored proposal's line: its id, club, version, last event and link."""
    entry = _entry_or_none(document)
    if entry is None:
        raise AnchorFileError(f"line {number} of the anchor is not an anchored proposal: {_HOW}")
    return entry


def _entry_or_none(document: dict[str, Any] | None) -> tuple[UUID, str, int, str, str] | None:
    if document is None:
        return None
    version, event, chain = document.get("version"), document.get("event"), document.get("chain")
    organization, raw_id = document.get("organization_id"), document.get("proposal_id")
    if not (
        type(version) is int
        and version >= 1
        and isinstance(event, str)
        and event.isidentifier()  # an event class's name, printed as it is
        and isinstance(organization, str)
        and isinstance(raw_id, str)
        and isinstance(chain, str)
        and len(chain) == 64
        and set(chain) <= _HEX
    ):
        return None
    try:
        return UUID(raw_id), organization, version, event, chain
    except ValueError:
        return None


def _entries(anchor: Anchor) -> Iterator[tuple[UUID, str, int, str, str]]:
    """The anchored proposals of a file ``read_anchor`` has checked, read again: the same
    lines, or AnchorFileError once they are found not to be (a file replaced or edited since
    it was checked, its signature then never checked)."""
    changed = AnchorFileError(
        f"{anchor.path.name} changed while it was checked (its lines are not the ones read "
        f"and verified first): {_HOW}"
    )
    digest = hashlib.sha256()
    try:
        with anchor.path.open("rb") as file:
            digest.update(file.readline(MAX_LINE))
            for number, raw in enumerate(_lines(file), start=2):
                document = _document(raw, number)
                if document is not None and document.get("end") == _END:
                    break
                digest.update(raw)
                entry = _entry_or_none(document)
                if entry is None:
                    raise changed
                yield entry
    except OSError as error:
        raise AnchorFileError(
            f"the anchor file cannot be read again ({error.strerror or type(error).__name__}): "
            f"{_HOW}"
        ) from None
    except AnchorFileError:
        raise changed from None
    if digest.hexdigest() != anchor.sha256:
        raise changed


@dataclass
class AnchorReport:
    """What the store showed against an anchor."""

    anchor: Anchor
    checked: int = 0
    #: The first ``LISTED`` proposals not as anchored, in the anchor's order.
    differences: list[dict[str, Any]] = field(default_factory=list)
    different: int = 0
    #: The proposals' events recorded after it, which it does not cover (unanchored.py).
    unanchored: Unanchored | None = None

    @property
    def ok(self) -> bool:
        return not self.different and (self.unanchored is None or self.unanchored.ok)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "made_at": self.anchor.made_at,
            "log_position": self.anchor.log_position,
            "signed": self.anchor.signed,
            "key_id": self.anchor.key_id,
            # True: the sealing key; False: a retired key the key ring still lists.
            "key_current": self.anchor.key_current,
            "keys_configured": self.anchor.keys_configured,
            "anchored_proposals": self.anchor.proposals,
            "proposals_checked": self.checked,
            "not_as_anchored": self.different,
            "differences": self.differences,
            "unanchored": None if self.unanchored is None else self.unanchored.to_json(),
        }


def check_anchor(
    app: CountersignApplication, anchor: Anchor, progress: Callable[[int], None] | None = None
) -> AnchorReport:
    """Every anchored proposal against the store as it is now; AnchorFileError if the file
    is no longer the one ``read_anchor`` checked."""
    report = AnchorReport(anchor)
    for proposal_id, organization, version, event, chain in _entries(anchor):
        report.checked += 1
        found = _difference(app, proposal_id, version, event, chain)
        if found is not None:
            report.different += 1
            if len(report.differences) < LISTED:
                report.differences.append(
                    {"proposal_id": str(proposal_id), "organization_id": organization, **found}
                )
        if progress is not None:
            progress(1)
    return report


def _difference(
    app: CountersignApplication, proposal_id: UUID, version: int, event: str, chain: str
) -> dict[str, Any] | None:
    """How a proposal's stream differs from its anchored last event, or None if it has it."""
    anchored = {"anchored_version": version, "anchored_event": event}
    at = list(app.recorder.select_events(proposal_id, gt=version - 1, limit=1))
    if at and at[0].originator_version == version:
        try:
            stored = written_fields(app.mapper, at[0]).get("chain")
        except Exception:
            stored = None  # unreadable: ``verify`` names it; here, not the anchored link
        if stored == chain:
            return None
        return {
            "problem": "rewritten",
            "stored_version": _last_version(app, proposal_id),
            **anchored,
            "text": f"rewritten: its link at version {version} ({event}) is not the anchored "
            "one (an event up to it was changed, or removed and made again)",
        }
    if at:  # its next event is later: the anchored one is gone from the middle
        return {
            "problem": "rewritten",
            "stored_version": _last_version(app, proposal_id),
            **anchored,
            "text": f"rewritten: its event {version} ({event}) is gone (the stream has a gap)",
        }
    last = _last_version(app, proposal_id)
    if last is None:
        return {
            "problem": "removed",
            "stored_version": None,
            **anchored,
            "text": f"removed: no stream (anchored at version {version}, {event})",
        }
    gone = f"event {version}" if last + 1 == version else f"events {last + 1} to {version}"
    return {
        "problem": "cut_back",
        "stored_version": last,
        "removed_from": last + 1,
        **anchored,
        "text": f"cut back: {gone} removed, the last anchored {event} (the stream now ends "
        f"at version {last})",
    }


def _last_version(app: CountersignApplication, proposal_id: UUID) -> int | None:
    last = list(app.recorder.select_events(proposal_id, desc=True, limit=1))
    return last[0].originator_version if last else None
