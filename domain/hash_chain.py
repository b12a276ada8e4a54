"""A proposal's digests: the contract digest (what the approver is shown and what will run)
and the hash chain, each event's link SHA-256 over the previous link and the canonical JSON of
the event, its time included, so an audit can tell a stream that was altered.

An event's time (its ``timestamp``) is linked since 2026-12-06: a link made before covers the
event's fields alone (``at`` None), and ``audit verify`` tells the two apart by which of them
the stored link is (an event whose time was changed matches neither)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from countersign.domain import plain_json


def canonical(value: Any) -> Any:
    """The JSON-ready form used for hashing: ids and times as strings, keys sorted later."""
    if isinstance(value, dict):
        return {str(key): canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value


class _CanonicalEncoder(json.JSONEncoder):
    """Writes ids and times as ``canonical`` does, when json.dumps meets them."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime):
            return o.isoformat()
        if isinstance(o, UUID):
            return str(o)
        return super().default(o)


# Built once: json.dumps would build an encoder with these options on every call.
_CHAIN_JSON = _CanonicalEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

# Exact types the encoder writes just as it writes their ``canonical`` form.
_PLAIN: frozenset[type] = frozenset({str, int, float, bool, type(None), datetime, UUID})


def _encodes_as_canonical(value: Any) -> bool:
    """Whether the encoder can take ``value`` as it is, skipping ``canonical``: every dict key
    is a str (json writes other keys its own way: True as "true", ints sorted as numbers) and
    every container is an exact dict, list or tuple."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not (type(item) in _PLAIN or _encodes_as_canonical(item)):
                return False
        return True
    if kind is list or kind is tuple:
        return all(type(item) in _PLAIN or _encodes_as_canonical(item) for item in value)
    return not isinstance(value, dict | list | tuple)


def chain_content(
    previous: str,
    version: int,
    event_type: str,
    fields: dict[str, Any],
    at: datetime | None = None,
) -> str:
    """What a link hashes, as the standard library's encoder writes it: the definition.
    ``at``: the event's time (None: a link made before times were linked)."""
    ready = fields if _encodes_as_canonical(fields) else canonical(fields)
    content: dict[str, Any] = {
        "previous": previous,
        "version": version,
        "type": event_type,
        "fields": ready,
    }
    if at is not None:
        content["at"] = at
    return _CHAIN_JSON.encode(content)


def _id_or_time(value: Any) -> Any:
    # Exactly what _CanonicalEncoder.default writes; anything else, the encoder writes itself.
    # orjson writes an exact UUID as ``str`` does, and an exact datetime in UTC as
    # ``isoformat`` does (``+00:00``, microseconds only when there are any): those are
    # handed to it as they are, without the string built in Python
    # (tests/test_chain_link.py compares them).
    kind = type(value)
    if kind is UUID:
        return value
    if kind is datetime:
        return value if value.tzinfo is UTC else value.isoformat()
    raise plain_json.NotPlain


_chain_ready = plain_json.preparer(_id_or_time)
_digest_ready = plain_json.preparer(plain_json.not_plain)


def chain_link(
    previous: str,
    version: int,
    event_type: str,
    fields: dict[str, Any],
    at: datetime | None = None,
) -> str:
    """One link of a proposal's hash chain: SHA-256 over the previous link and this event,
    its fields and its time (``at``; None: the link of an event written before times were
    linked). The bytes are ``chain_content``'s, written by orjson where it writes the same
    (``plain_json``; tests/test_chain_link.py compares them)."""
    # Fields of plain values, exact ids and UTC times alone (an approval's, a claim's) are
    # what the walk would return as they are: tested here, without its call and one for
    # each id and time.
    ready: dict[str, Any] | None = fields
    for value in fields.values():
        kind = type(value)
        if not (
            kind is str
            or value is None
            or kind is int
            or kind is bool
            or kind is UUID
            or (kind is datetime and value.tzinfo is UTC)
        ):
            ready = None
            break
    try:
        linked: dict[str, Any] = {
            "previous": previous,
            "version": version,
            "type": event_type,
            "fields": _chain_ready(fields) if ready is None else ready,
        }
        if at is not None:
            linked["at"] = at if at.tzinfo is UTC else at.isoformat()
        content = plain_json.dumps(linked, option=plain_json.SORT_KEYS)
    except plain_json.REFUSED:
        content = chain_content(previous, version, event_type, fields, at).encode()
    return hashlib.sha256(content).hexdigest()


# Built once: json.dumps would build an encoder with these options on every call.
_DIGEST_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_content(kind: str, version: int, arguments: Any, preview: Any) -> str:
    """What a contract digest hashes, as the standard library's encoder writes it: the
    definition (an id or a time in the arguments is refused: they are JSON already)."""
    return _DIGEST_JSON.encode(
        {"kind": kind, "version": version, "arguments": arguments, "preview": preview}
    )


def contract_digest(kind: str, version: int, arguments: Any, preview: Any) -> str:
    """SHA-256 over the canonical JSON of what the approver is shown and what will run,
    written by orjson where it writes ``digest_content``'s bytes (``plain_json``)."""
    try:
        content = plain_json.dumps(
            {
                "kind": kind,
                "version": version,
                "arguments": _digest_ready(arguments),
                "preview": _digest_ready(preview),
            },
            option=plain_json.SORT_KEYS,
        )
    except plain_json.REFUSED:
        content = digest_content(kind, version, arguments, preview).encode()
    return hashlib.sha256(content).hexdigest()


#: What ``proposed_digest_and_link`` walks apart from the rest of a ``Proposed`` event's fields.
_CONTRACT_FIELDS = frozenset({"id", "arguments", "preview"})


def proposed_digest_and_link(fields: dict[str, Any], at: datetime) -> tuple[str, str]:
    """A proposal's contract digest and the first link of its chain (over its ``Proposed``
    fields, ``id`` left out, with that digest), exactly ``contract_digest`` and
    ``chain_link`` of them, from one walk of the arguments and preview: the walk's output,
    private to this call, is what both hash. (The digest's walk refuses every id and time,
    so what it returns is also what the chain's walk would.) Anything either refuses takes
    the two functions themselves."""
    kind, version = fields["kind"], fields["contract_version"]
    try:
        arguments = _digest_ready(fields["arguments"])
        preview = _digest_ready(fields["preview"])
        digest = hashlib.sha256(
            plain_json.dumps(
                {"kind": kind, "version": version, "arguments": arguments, "preview": preview},
                option=plain_json.SORT_KEYS,
            )
        ).hexdigest()
    except plain_json.REFUSED:
        digest = contract_digest(kind, version, fields["arguments"], fields["preview"])
        return digest, _first_link(fields, digest, at)
    try:
        # The other fields, ``id`` left out, as the walk of them would return them, in one
        # pass: a copy made in C, into which only the values the walk changes are written
        # (plain values, exact ids and UTC times it returns as they are; a dict is walked).
        # A key that is not an exact str is refused by orjson, as by the walk.
        ready = fields.copy()
        ready.pop("id", None)
        for key, value in fields.items():
            value_kind = type(value)
            if (
                value_kind is str
                or value is None
                or value_kind is int
                or value_kind is bool
                or value_kind is UUID
                or (value_kind is datetime and value.tzinfo is UTC)
                or key in _CONTRACT_FIELDS
            ):
                continue
            ready[key] = _chain_ready(value)
        ready["digest"] = digest
        ready["arguments"] = arguments
        ready["preview"] = preview
        content = plain_json.dumps(
            {
                "previous": "",
                "version": 1,
                "type": "Proposed",
                "fields": ready,
                "at": at if at.tzinfo is UTC else at.isoformat(),
            },
            option=plain_json.SORT_KEYS,
        )
    except plain_json.REFUSED:
        return digest, _first_link(fields, digest, at)
    return digest, hashlib.sha256(content).hexdigest()


def _first_link(fields: dict[str, Any], digest: str, at: datetime) -> str:
    content = {key: value for key, value in fields.items() if key != "id"}
    content["digest"] = digest
    return chain_link("", 1, "Proposed", content, at)
