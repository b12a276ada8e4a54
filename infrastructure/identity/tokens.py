"""Bearer API tokens for application services.

A token belongs to one organization, carries a set of permissions (its scopes) and names the
member who issued it: the person the service acts as where the application needs one (a
proposal's requester, an approver). Every request is checked against BOTH the token's scopes
and that member's current permissions (the application does it: ``ServicePrincipal.caller``
carries the scopes), and stops working when the member leaves.

Only a SHA-256 digest of the token is stored. The raw token is 256 random bits, so a fast
digest cannot be brute-forced (a slow password hash would only slow every request down); it
is shown once, by :func:`issue_token`, and never again.

The raw token reads ``cst_<token id>_<secret>``: the id finds the row, the digest of the whole
token is compared in constant time.

Actions a service takes through the API are recorded in ``api_service_actions`` under the
token's name (``service:<name>``), beside the acting member the event stream names.

A token is of one of two kinds (``kind``): an ``agent`` token (the default) reads, proposes
and follows its proposals, and never decides; an ``approver`` token acts for the person who
holds it (a service's own interface asked them) and may approve, decline and edit through the
JSON API, but the MCP server and the agent-framework adapters refuse it. Tokens stored before
tokens had kinds (no ``kind`` recorded) keep working as approver tokens.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from countersign.application.authorization import Caller, Credential
from countersign.application.errors import ForbiddenError
from countersign.domain.club.organization import Organization
from countersign.domain.contracts import PERMISSIONS
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import InvalidRequestError, Problem
from countersign.domain.errors import DuplicateError, NotFoundError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.storage import ensure_tables, made
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase, unique_violations
from countersign.infrastructure.persistence.unavailable import (
    database_unavailable,
    unavailable_reason,
)

TOKEN_PREFIX = "cst"  # noqa: S105 - a public prefix, not a secret
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
_TOKEN_PATTERN = re.compile(r"^cst_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS api_tokens ("
    " token_id TEXT PRIMARY KEY, organization_id TEXT NOT NULL,"
    " organization_slug TEXT NOT NULL, name TEXT NOT NULL, issued_by TEXT NOT NULL,"
    " permissions TEXT NOT NULL, token_sha256 TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL, revoked_at TEXT, membership_id TEXT, kind TEXT)",
    # One active token per name and organization: ``service:<name>`` must say who acted.
    "CREATE UNIQUE INDEX IF NOT EXISTS api_tokens_active_name"
    " ON api_tokens (organization_id, name) WHERE revoked_at IS NULL",
    "CREATE TABLE IF NOT EXISTS api_service_actions ("
    " action_id TEXT PRIMARY KEY, at TEXT NOT NULL, organization_id TEXT NOT NULL,"
    " token_id TEXT NOT NULL, service TEXT NOT NULL, acting_member TEXT NOT NULL,"
    " action TEXT NOT NULL, target TEXT NOT NULL, result TEXT NOT NULL,"
    " correlation_id TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS api_service_actions_by_organization"
    " ON api_service_actions (organization_id, at)",
)


AGENT = "agent"
APPROVER = "approver"
KINDS = (AGENT, APPROVER)
#: What a person reads about a token refused for its name or kind (the line under it, and the
#: API's problem, say it precisely).
_NAME_WORDS = Localized(
    "A token's name is 1 to 63 lowercase letters, digits, dots, dashes or underscores; "
    "nothing was issued.",
    "Le nom d'un jeton compte de 1 à 63 lettres minuscules, chiffres, points, tirets ou "
    "soulignés ; rien n'a été émis.",
)
_KIND_WORDS = Localized(
    "A token is an agent token or an approver token; nothing was issued.",
    "Un jeton est un jeton d'agent ou un jeton d'approbation ; rien n'a été émis.",
)


def ensure_token_tables(cs: Countersign) -> None:
    if made(cs.sql, "api_tokens.kind"):
        return  # (the last of the three, made after the others: every request after the first)
    ensure_tables(cs.sql, "api_tokens", _SCHEMA)
    ensure_tables(cs.sql, "api_tokens.membership_id", [], _add_membership_column)
    ensure_tables(cs.sql, "api_tokens.kind", [], _add_kind_column)


def _add_kind_column(sql: SqlDatabase, cursor: Cursor) -> None:
    """Tables made before tokens had kinds get the column, empty: those tokens were issued
    when every token could approve, so they stay approver tokens (``_kind``)."""
    if sql.is_postgres:
        cursor.execute("ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS kind TEXT")
        return
    columns = {row[1] for row in cursor.execute("PRAGMA table_info(api_tokens)").fetchall()}
    if "kind" not in columns:
        cursor.execute("ALTER TABLE api_tokens ADD COLUMN kind TEXT")


def _kind(stored: Any) -> str:
    """A stored kind; a token issued before kinds (NULL) is an approver token."""
    return AGENT if stored == AGENT else APPROVER


def _add_membership_column(sql: SqlDatabase, cursor: Cursor) -> None:
    """Tables made before tokens recorded the issuer's membership get the column; their
    tokens keep working for as long as that membership (recorded without an id) lasts."""
    if sql.is_postgres:
        cursor.execute("ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS membership_id TEXT")
        return
    columns = {row[1] for row in cursor.execute("PRAGMA table_info(api_tokens)").fetchall()}
    if "membership_id" not in columns:
        cursor.execute("ALTER TABLE api_tokens ADD COLUMN membership_id TEXT")


@dataclass(frozen=True)
class IssuedToken:
    """A newly issued token. ``token`` is the only copy of the secret: show it once."""

    token_id: str
    token: str
    organization: str
    name: str
    issued_by: str
    permissions: tuple[str, ...]
    kind: str = AGENT

    @property
    def service(self) -> str:
        return f"service:{self.name}"


@dataclass(frozen=True)
class ServicePrincipal:
    """An authenticated application service: one organization, only its permissions."""

    token_id: str
    name: str
    organization_id: UUID
    organization_slug: str
    acting_member: str
    scopes: frozenset[str]
    kind: str = AGENT

    @property
    def service(self) -> str:
        """How the service's actions are recorded: ``service:<token name>``."""
        return f"service:{self.name}"

    @property
    def may_decide(self) -> bool:
        """An approver token may decide; an agent token never."""
        return self.kind == APPROVER

    @property
    def caller(self) -> Caller:
        """Who the application sees: the acting member, in the token's organization, with
        at most the token's permissions, and the token's kind as its credential."""
        return Caller(
            email=self.acting_member,
            organization=self.organization_slug,
            scopes=self.scopes,
            credential=Credential.APPROVER_TOKEN if self.may_decide else Credential.AGENT_TOKEN,
            service=self.name,
        )


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _permissions(values: list[str] | tuple[str, ...] | set[str]) -> list[str]:
    problems: list[Problem] = []
    chosen: set[str] = set()
    for value in values:
        if str(value).strip() in PERMISSIONS:
            chosen.add(str(value).strip())
        else:
            known = ", ".join(sorted(PERMISSIONS))
            problems.append(
                Problem(field="permissions", message=f"unknown permission; known: {known}")
            )
    if not chosen and not problems:
        problems.append(Problem(field="permissions", message="name at least one permission"))
    if problems:
        raise InvalidRequestError(problems)
    return sorted(chosen)


def issue_token(
    cs: Countersign,
    organization_slug: str,
    name: str,
    permissions: list[str] | tuple[str, ...] | set[str],
    *,
    issued_by: str,
    kind: str,
) -> IssuedToken:
    """Create a token for ``organization_slug``; the raw token is returned exactly once.
    ``kind``: ``agent`` (it never decides) or ``approver``, always said by the caller: a
    token that can decide is never issued by default. (``countersign tokens issue`` issues
    agent tokens unless told ``--approver``.)

    ``issued_by`` is the member the service acts as; the token may carry only permissions
    that member holds now. Raises NotFoundError (unknown organization, or ``issued_by`` is
    not a member), ForbiddenError (a permission the member lacks), InvalidRequestError (a
    malformed name or an unknown permission) and DuplicateError (an active token of the
    organization already has that name).
    """
    ensure_token_tables(cs)
    clean_name = name.strip().lower()
    if not NAME_PATTERN.match(clean_name):
        raise InvalidRequestError.one(
            "name", "1-63 lowercase letters, digits, dots, dashes or underscores", _NAME_WORDS
        )
    if kind not in KINDS:
        raise InvalidRequestError.one("kind", "agent or approver", _KIND_WORDS)
    granted = _permissions(permissions)
    issuer = cs.club.membership(organization_slug, issued_by)
    member = issuer.member
    missing = [p for p in granted if not member.may(p)]
    if missing:
        raise ForbiddenError(f"{member.email} may not grant {', '.join(missing)}")
    token_id = secrets.token_hex(8)
    raw = f"{TOKEN_PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
    duplicate = DuplicateError(f"an active token named {clean_name!r} exists; revoke it first")
    try:
        with cs.sql.transaction() as cursor:
            taken = cursor.execute(
                "SELECT 1 FROM api_tokens WHERE organization_id = ? AND name = ?"
                " AND revoked_at IS NULL",
                (str(issuer.organization_id), clean_name),
            ).fetchone()
            if taken:
                raise duplicate
            cursor.execute(
                "INSERT INTO api_tokens (token_id, organization_id, organization_slug, name,"
                " issued_by, permissions, token_sha256, created_at, revoked_at, membership_id,"
                " kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
                (
                    token_id,
                    str(issuer.organization_id),
                    issuer.organization,
                    clean_name,
                    member.email,
                    json.dumps([str(p) for p in granted]),
                    _digest(raw),
                    cs.clock.now().isoformat(),
                    member.membership_id,
                    kind,
                ),
            )
    except unique_violations():
        raise duplicate from None  # another process issued the same name just now
    return IssuedToken(
        token_id=token_id,
        token=raw,
        organization=issuer.organization,
        name=clean_name,
        issued_by=member.email,
        permissions=tuple(str(p) for p in granted),
        kind=kind,
    )


def revoke_token(cs: Countersign, token_id: str) -> bool:
    """Revoke a token at once; False if no active token has that id."""
    ensure_token_tables(cs)
    with cs.sql.transaction() as cursor:
        changed = cursor.execute(
            "UPDATE api_tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL",
            (cs.clock.now().isoformat(), token_id.strip()),
        ).rowcount
    return changed == 1


def list_tokens(cs: Countersign, organization_slug: str) -> list[dict[str, Any]]:
    """The organization's tokens (never a secret or its digest), newest first."""
    ensure_token_tables(cs)
    organization_id = Organization.create_id(organization_slug.strip().lower())
    with cs.sql.transaction() as cursor:
        rows = cursor.execute(
            "SELECT token_id, name, issued_by, permissions, created_at, revoked_at, kind"
            " FROM api_tokens WHERE organization_id = ? ORDER BY created_at DESC, token_id",
            (str(organization_id),),
        ).fetchall()
    return [
        {
            "token_id": row[0],
            "name": row[1],
            "service": f"service:{row[1]}",
            "issued_by": row[2],
            "permissions": json.loads(row[3]),
            "created_at": row[4],
            "revoked_at": row[5],
            "kind": _kind(row[6]),
        }
        for row in rows
    ]


def authenticate(cs: Countersign, raw: str) -> ServicePrincipal | None:
    """The principal a raw token stands for, or None (unknown, malformed, revoked, or its
    issuer is no longer the member who issued it: gone, or gone and back)."""
    match = _TOKEN_PATTERN.match(raw.strip())
    if match is None:
        return None
    ensure_token_tables(cs)
    # One statement on the connection for reads of committed data (as a browser session's
    # lookup): one round trip, where a transaction took three (BEGIN, SELECT, COMMIT) on the
    # connection every write of this process waits for. A revocation is a committed UPDATE:
    # the next request reads it.
    with cs.sql.reading() as cursor:
        row = cursor.execute(
            "SELECT organization_id, organization_slug, name, issued_by, permissions,"
            " token_sha256, membership_id, kind FROM api_tokens"
            " WHERE token_id = ? AND revoked_at IS NULL",
            (match.group(1),),
        ).fetchone()
    if row is None or not hmac.compare_digest(str(row[5]), _digest(raw.strip())):
        return None
    try:
        issuer = cs.club.membership(str(row[1]), str(row[3]))
    except NotFoundError:
        return None
    if str(issuer.organization_id) != str(row[0]) or issuer.member.membership_id != row[6]:
        return None  # the issuer left since, and joined again (or the address was reused)
    return ServicePrincipal(
        token_id=match.group(1),
        name=str(row[2]),
        organization_id=issuer.organization_id,
        organization_slug=issuer.organization,
        acting_member=issuer.member.email,
        scopes=frozenset(str(p) for p in json.loads(row[4])),
        kind=_kind(row[7]),
    )


_RECORD_COLUMNS = (
    "api_service_actions (action_id, at, organization_id, token_id, service, acting_member,"
    " action, target, result, correlation_id)"
)
_RECORD = f"INSERT INTO {_RECORD_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
# PostgreSQL: the same INSERT, whose commit does not wait for the disk (``synchronous_commit``
# off for its own transaction, as the payment sandbox's refunds: ``record_action`` says why).
_RECORD_POSTGRES = (
    "WITH no_wait AS (SELECT set_config('synchronous_commit', 'off', true))"
    f" INSERT INTO {_RECORD_COLUMNS} SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM no_wait"
)


def record_action(
    cs: Countersign,
    principal: ServicePrincipal,
    *,
    action: str,
    target: str,
    result: str,
    correlation_id: str,
) -> None:
    """Record that the service (by its token's name) did something through the API: one
    INSERT, committed on its own (one round trip, on the connection the token lookups use).

    On PostgreSQL its commit does not wait for the disk. Every API request ends with this
    record, once its answer is decided, and a durable commit made it wait for a flush of
    the log while holding the connection every token check of the process takes: under
    load, the largest wait of a repeated approve. What it records is already in the event
    stream wherever it changed anything (who decided, with which token, durable before the
    answer); the record is in the write-ahead log before any later commit, so the next
    durable commit (any process's) makes it durable too, and only a crash of the database
    server within that moment (a fraction of a second) can lose it, with nothing else."""
    ensure_token_tables(cs)
    with cs.sql.statements() as cursor:
        cursor.execute(
            _RECORD_POSTGRES if cs.sql.is_postgres else _RECORD,
            (
                f"{time.time_ns():020d}-{uuid4().hex[:12]}",  # sorts in recording order
                cs.clock.now().isoformat(),
                str(principal.organization_id),
                principal.token_id,
                principal.service,
                principal.acting_member,
                action,
                target,
                result,
                correlation_id,
            ),
        )


def say_not_recorded(
    log: logging.Logger,
    error: Exception,
    principal: ServicePrincipal,
    *,
    action: str,
    correlation_id: str,
) -> None:
    """Log that ``record_action`` failed, where a caller (the JSON API, the MCP server) answers
    its client anyway: what the service did stands in the event stream. The database being
    unavailable just then (a restart, an outage) is a warning with its reason, no traceback;
    anything else is a defect, logged with one."""
    who = f"{principal.service}'s {action} [{correlation_id}]"
    if database_unavailable(error):
        log.warning(
            "could not record %s in api_service_actions: the %s stands, in the event stream;"
            " the database is unavailable (%s)",
            who,
            action,
            unavailable_reason(error),
        )
        return
    log.error("could not record %s", who, exc_info=error)


def service_actions(cs: Countersign, organization_slug: str) -> list[dict[str, Any]]:
    """What the organization's services did through the API, oldest first."""
    ensure_token_tables(cs)
    organization_id = Organization.create_id(organization_slug.strip().lower())
    with cs.sql.transaction() as cursor:
        rows = cursor.execute(
            "SELECT at, service, acting_member, action, target, result, correlation_id"
            " FROM api_service_actions WHERE organization_id = ? ORDER BY action_id",
            (str(organization_id),),
        ).fetchall()
    keys = ("at", "service", "acting_member", "action", "target", "result", "correlation_id")
    return [dict(zip(keys, row, strict=True)) for row in rows]
