"""``countersign audit anchor`` and ``audit verify --anchor``: a record, kept outside the
database, of where every stream of the store stood, so that an event removed or changed
since, in any stream, shows.

Seals prove each stored event, but nothing in the database can say which event was a
stream's last: a writer who deletes a stream's last events leaves a shorter stream whose every
seal verifies (docs/design.md, "Seals"). An anchor is that last link, kept where the
database's writers cannot reach (an append-only store, another system). Its file is JSON
lines, in this order:

- a header: ``{"countersign_anchor": 2, "made_at", "log_position", "proposals", "signed",
  "key_id"}``, where ``log_position`` is the notification log's head when it was made: the
  anchor is the state of the log at that position, every event after it left out;
- one line a proposal, in the order of their ids: ``{"proposal_id", "organization_id",
  "version", "event", "chain"}``, its stream's last event at that position (its version,
  its type) and that event's chain link, which covers every event before it;
- then the lines of every other stream (the clubs, members, rosters, orders, forms,
  policies, a plug-in's aggregates: whatever the store holds), in the order of their ids,
  each event of them hashed (``stream_lines.py``);
- the integrity line: ``{"end": "countersign_anchor", "proposals", "streams",
  "stream_events", "sha256", "mac"}``, the
  SHA-256 of every byte before it and, with seal keys, its HMAC under the sealing key
  (``SealKeys.sign_anchor``: the key's id in the header, never the secret).

Checking one (``read_anchor`` then ``check_anchor``) reads the file twice, a line at a time:
first its form and its integrity line (a file that is not one, damaged, edited, or signed
under a key not held is refused before anything is checked), then, the same lines again (a
file changed in between is refused, its SHA-256 no longer the one checked), each proposal
against the store: it must still exist, have at least the anchored version, and its link at
that version must be the anchored one, and every other stream must still hold each of its
anchored events unchanged (``anchor_check.py``). Streams made after the anchor, and events
recorded after it, are what it does not cover: ``unanchored.py`` counts them.

An anchor of format 1 (the releases before this one) holds the proposals alone: it is read
and checked as it is, and the check says that it covers the proposals only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from uuid import UUID

from countersign.domain.contracts.presentation import Localized
from countersign.domain.seals import SealKeys, plain_key_id
from countersign.infrastructure.audit import anchor_words as words
from countersign.infrastructure.audit.stream_lines import StreamLine, read_line, stream_lines
from countersign.infrastructure.persistence import stored_keys
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.proposal_heads import ProposalHeads
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stream_heads import StreamHeads

#: The format this release writes: every stream. It reads this one and format 1 (the
#: proposals alone, as the releases before it wrote).
FORMAT = 2
PROPOSALS_ONLY = 1
READ = (PROPOSALS_ONLY, FORMAT)
_END = "countersign_anchor"
#: The longest line read (an anchored proposal's is about 250 bytes).
MAX_LINE = 4096
#: How many differences a report lists (each proposal's, in the anchor's order).
LISTED = 100


class AnchorChangedError(Exception):
    """The proposals below the log's head changed while they were read (an event committed
    late, or removed): the anchor written is incomplete, and is to be made again."""


class AnchorFileError(ValueError):
    """An anchor file that cannot be used: the message names what is wrong and the fix, never
    a secret (in French too: ``french``)."""

    def __init__(self, said: Localized, **params: object) -> None:
        filled = said.filled(how=words.HOW, **params)  # the fix most of them end with
        super().__init__(filled.en)
        self.french = filled.fr


def _line(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def make_anchor(
    app: CountersignApplication,
    sql: SqlDatabase,
    keys: SealKeys | None,
    out: IO[bytes],
    made_at: datetime,
    progress: Callable[[int], None] | None = None,
) -> tuple[int, int, int, int]:
    """Write an anchor of every stream at the log's head to ``out``, a line at a time (the
    proposals, then the other streams): its head position, the number of proposals anchored,
    and of the other streams and their events."""
    head = app.recorder.max_notification_id() or 0
    # An event whose key is no key would be left out unsaid: StoredKeyError, nothing written.
    stored_keys.refuse_malformed(sql, head)
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
    streams, events, last = 0, 0, None
    for stream in stream_lines(StreamHeads(sql, head).events()):
        line = _line(stream.to_json())
        digest.update(line)
        out.write(line)
        streams += stream.stream_id != last
        events += stream.version - stream.from_version + 1
        last = stream.stream_id
    hexdigest = digest.hexdigest()
    signature = None if keys is None else keys.sign_anchor(hexdigest)["mac"]
    end = {"end": _END, "proposals": count, "streams": streams, "stream_events": events}
    out.write(_line({**end, "sha256": hexdigest, "mac": signature}))
    out.flush()
    return head, count, streams, events


@dataclass(frozen=True)
class Anchor:
    """An anchor file whose form and integrity line held (``read_anchor``)."""

    path: Path
    made_at: str
    log_position: int
    proposals: int
    key_id: str | None
    #: The SHA-256 of its lines as read and checked: ``check_anchor`` reads them again, and
    #: refuses a file changed in between (``entries``).
    sha256: str = ""
    #: Whether its key is the configured sealing key (False: a retired key the key ring
    #: still lists; None: unsigned).
    key_current: bool | None = None
    #: Whether seal keys were configured when it was checked (an unsigned one is then said to
    #: be weaker than it could be).
    keys_configured: bool = False
    #: Its format: 2 covers every stream; 1 (an older release's) the proposals alone.
    format: int = FORMAT
    #: The streams that are no proposal's it holds (format 2), and their events.
    streams: int = 0
    stream_events: int = 0

    @property
    def covers_every_stream(self) -> bool:
        return self.format >= FORMAT

    @property
    def signed(self) -> bool:
        return self.key_id is not None


def read_anchor(path: Path, keys: SealKeys | None) -> Anchor:
    """The anchor at ``path``, its every line read and its integrity line checked (its
    signature too, under ``keys``: the sealing key or a retired one they still list);
    AnchorFileError saying what is wrong and the fix. Whether an unsigned one is accepted is
    the command's to say (``cli/anchors.read_anchor_option``)."""
    try:
        with path.open("rb") as file:
            anchor = _read(file, keys, path)
    except OSError as error:
        why = error.strerror or type(error).__name__
        raise AnchorFileError(words.UNREADABLE, why=why) from None
    return anchor


def _read(file: IO[bytes], keys: SealKeys | None, path: Path) -> Anchor:
    first = file.readline(MAX_LINE)
    header = _document(first, 1)
    if header is None or "countersign_anchor" not in header:
        raise AnchorFileError(words.NOT_AN_ANCHOR, name=path.name)
    given = header.get("countersign_anchor")
    if type(given) is not int or given not in READ:
        named = given if type(given) is int else words.UNKNOWN
        read = words.AND.filled(first=READ[0], second=READ[1])
        raise AnchorFileError(words.OTHER_FORMAT, name=path.name, named=named, format=read)
    made_at, position, count = (header.get(k) for k in ("made_at", "log_position", "proposals"))
    key_id = header.get("key_id")
    if not (
        _moment(made_at)
        and _count(position)
        and _count(count)
        and header.get("signed") is (key_id is not None)
        and (key_id is None or isinstance(key_id, str))
    ):
        raise AnchorFileError(words.BAD_HEADER)
    digest = hashlib.sha256()
    digest.update(first)
    order, end = _Order(given), None
    for number, raw in enumerate(_lines(file), start=2):
        if end is not None:
            raise AnchorFileError(words.AFTER_END)
        document = _document(raw, number)
        if document is not None and document.get("end") == _END:
            end = document
            continue
        digest.update(raw)
        order.take(document, number)
    entries = order.proposals
    if end is None:
        raise AnchorFileError(words.INCOMPLETE)
    if (
        end.get("proposals") != entries
        or entries != count
        or end.get("sha256") != digest.hexdigest()
        or (given == FORMAT and (end.get("streams"), end.get("stream_events")) != order.counts)
    ):
        raise AnchorFileError(words.DAMAGED)
    if key_id is not None:
        _check_signature(keys, key_id, end.get("mac"), digest.hexdigest())
    elif end.get("mac") is not None:
        raise AnchorFileError(words.DISAGREE)
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
        format=given,
        streams=order.counts[0],
        stream_events=order.counts[1],
    )


class _Order:
    """The lines of an anchor as they are read: the proposals in the order of their ids,
    then (format 2) the other streams in the order of theirs, each stream's lines in the
    order of its versions; AnchorFileError at the first that is not."""

    def __init__(self, format_: int) -> None:
        self.streams_too = format_ == FORMAT
        self.proposals = 0
        self.previous: UUID | None = None
        self.stream: StreamLine | None = None
        self.counts = (0, 0)

    def take(self, document: dict[str, Any] | None, number: int) -> None:
        if self.stream is None and not (self.streams_too and _is_stream(document)):
            proposal = _entry(document, number)[0]
            if self.previous is not None and proposal <= self.previous:
                raise AnchorFileError(words.OUT_OF_ORDER, number=number)
            self.previous = proposal
            self.proposals += 1
            return
        line = read_line(document)
        if line is None:
            raise AnchorFileError(words.NOT_STREAM, number=number)
        last, (streams, events) = self.stream, self.counts
        same = last is not None and last.stream_id == line.stream_id
        if last is not None and (
            line.stream_id < last.stream_id or (same and line.from_version <= last.version)
        ):
            raise AnchorFileError(words.OUT_OF_ORDER, number=number)
        self.stream = line
        self.counts = (streams + (not same), events + line.version - line.from_version + 1)


def _is_stream(document: dict[str, Any] | None) -> bool:
    return document is not None and "stream_id" in document


def _lines(file: IO[bytes]) -> Iterator[bytes]:
    """The file's lines from where it stands, each read up to ``MAX_LINE`` bytes: a longer
    one (no anchor's line is) is read as a line cut short, never held whole."""
    return iter(lambda: file.readline(MAX_LINE), b"")


def _check_signature(keys: SealKeys | None, key_id: str, mac: Any, digest: str) -> None:
    named = words.KEY_NAMED.filled(key=key_id) if _plain(key_id) else words.KEY_UNREADABLE
    if keys is None:
        raise AnchorFileError(words.NO_KEYS, named=named)
    problem = keys.anchor_problem(key_id, mac, digest)
    if problem is None:
        return
    if problem.kind == "unknown_key":
        raise AnchorFileError(words.KEY_NOT_CONFIGURED, named=named)
    raise AnchorFileError(words.BAD_SIGNATURE, named=named)


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
    raise AnchorFileError(words.CUT, number=number)


_HEX = frozenset("0123456789abcdef")


def _entry(document: dict[str, Any] | None, number: int) -> tuple[UUID, str, int, str, str]:
    """An anchored proposal's line: its id, club, version, last event and link."""
    entry = _entry_or_none(document)
    if entry is None:
        raise AnchorFileError(words.NOT_ENTRY, number=number)
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


def entries(
    anchor: Anchor, part: str | None = None
) -> Iterator[tuple[UUID, str, int, str, str] | StreamLine]:
    """The anchored proposals and streams of a file ``read_anchor`` has checked, read again:
    the same lines, or AnchorFileError once they are found not to be (a file replaced or
    edited since it was checked, its signature then never checked). ``part``: "proposals"
    or "streams" alone, the other lines hashed but not read."""
    changed = AnchorFileError(words.CHANGED, name=anchor.path.name)
    digest = hashlib.sha256()
    try:
        with anchor.path.open("rb") as file:
            digest.update(file.readline(MAX_LINE))
            for number, raw in enumerate(_lines(file), start=2):
                if part is not None and (part == "streams") != (b'"stream_id":' in raw):
                    if raw.startswith(b'{"end":'):
                        break  # the integrity line (sorted keys): the file's digest is checked
                    digest.update(raw)  # the same bytes as checked, or the digest says not
                    continue
                document = _document(raw, number)
                if document is not None and document.get("end") == _END:
                    break
                digest.update(raw)
                entry: tuple[UUID, str, int, str, str] | StreamLine | None = (
                    read_line(document)
                    if anchor.covers_every_stream and _is_stream(document)
                    else _entry_or_none(document)
                )
                if entry is None:
                    raise changed
                yield entry
    except OSError as error:
        why = error.strerror or type(error).__name__
        raise AnchorFileError(words.UNREADABLE_AGAIN, why=why) from None
    except AnchorFileError:
        raise changed from None
    if digest.hexdigest() != anchor.sha256:
        raise changed
