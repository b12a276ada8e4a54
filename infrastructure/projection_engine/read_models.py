"""Queries over the projection tables, always scoped to the caller's organization."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from countersign.application.policy_recheck import OwnBarred
from countersign.domain.contracts import REGISTRY
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase
from countersign.infrastructure.persistence.unavailable import TableRebuiltError, missing_table
from countersign.infrastructure.projection_engine.runner import SqlRows
from countersign.projections import PROJECTIONS
from countersign.projections.base import Table

_TABLES = {table.name: table for p in PROJECTIONS.values() for table in p.tables}
MAX_PAGE_SIZE = 100
#: The last page a list reads (the API's bound too): past it, its offset (page times page
#: size) would pass what SQLite's INTEGER and PostgreSQL's bigint hold, from the command line.
MAX_PAGE = 100_000


def in_contract_order(operation: str, preview: Any) -> Any:
    """A stored preview's fields in its contract's ``Preview`` order, as its card gives them
    (what the proposal froze): SQLite's JSON text holds them sorted and PostgreSQL's jsonb by
    length, so a service showing them in the order received showed each backend's. Fields
    the contract does not name (or an operation no longer registered) follow as stored."""
    contract = REGISTRY.get(operation) if isinstance(preview, dict) else None
    if contract is None:
        return preview
    ordered = {name: preview[name] for name in contract.Preview.model_fields if name in preview}
    return ordered | preview if len(ordered) != len(preview) else ordered


class ReadModels:
    """What the browser, the conversation and the auditors read."""

    def __init__(self, sql: SqlDatabase) -> None:
        self.sql = sql
        self.dialect = "postgres" if sql.is_postgres else "sqlite"

    @contextmanager
    def _transaction(self) -> Iterator[Cursor]:
        """Reads of the projections' tables, taking no write lock (``SqlDatabase.snapshot``).
        A table that is not there was dropped by another process's rebuild after this one's
        catch-up read its position (which makes them again when they are gone:
        ``ProjectionRunner._checked_position``): TableRebuiltError, the database unavailable
        for a moment, not an internal error."""
        try:
            with self.sql.snapshot() as cursor:
                yield cursor
        except Exception as error:
            if missing_table(error):
                raise TableRebuiltError(str(error)) from error
            raise

    def _select(
        self, table: str, where: str, params: list[Any], tail: str = ""
    ) -> list[dict[str, Any]]:
        spec: Table = _TABLES[table]
        with self._transaction() as cursor:
            rows = cursor.execute(
                f"SELECT {', '.join(spec.column_names())} FROM {table} WHERE {where} {tail}",
                params,
            ).fetchall()
            decoder = SqlRows(cursor, [spec], self.dialect)
            decoded = [decoder.decode(spec, row) for row in rows]
        if "preview" in spec.column_names() and "operation" in spec.column_names():
            for item in decoded:
                item["preview"] = in_contract_order(item["operation"], item["preview"])
        return decoded

    def _time(self, moment: datetime) -> Any:
        # SQLite compares ISO text: it must be UTC like the stored values.
        return moment if self.dialect == "postgres" else moment.astimezone(UTC).isoformat()

    def inbox(
        self,
        organization_id: str,
        now: datetime,
        *,
        section: str | None = None,
        sections: Sequence[str] | None = None,
        operations: Sequence[str] | None = None,
        resource_id: str | None = None,
        approved_by: str | None = None,
        not_approved_by: str | None = None,
        deciding: Sequence[str] | None = None,
        not_deciding: Sequence[str] | None = None,
        barred: OwnBarred | None = None,
        enabled: Sequence[str] | None = None,
        page: int = 1,
        page_size: int = 20,
    ) -> dict[str, Any]:
        """Pending, unexpired proposals of one organization (of ``section``, or of any of
        ``sections``), newest first: a partly approved one still awaits the rest, a superseded
        one awaits nobody. ``approved_by`` keeps those that person already approved (they
        wait on others), ``not_approved_by`` those they have not. ``deciding`` keeps those of
        these operations (the ones a person may decide), ``not_deciding`` the others (the
        ones they may only follow). ``barred``: that person's own proposals a policy bars
        them from approving, which they do not decide and where their approval no longer
        counts. With ``enabled`` (the operations enabled here), also ``not_enabled``: how many
        of the organization's pending proposals are of another operation (a plug-in turned
        off: nobody can decide them, and no list shows them to whom their permission would),
        and when the first of them expires; counted by the same statement as ``total``."""
        page = min(max(1, page), MAX_PAGE)
        page_size = min(max(1, page_size), MAX_PAGE_SIZE)
        pending = "organization_id = ? AND status = 'pending' AND expires_at > ?"
        pending_params: list[Any] = [organization_id, self._time(now)]
        params: list[Any] = []
        where = _in_sections("section", section, sections, params, operations)
        bars = self._barred(barred)
        where += _deciding("operation", deciding, not_deciding, params, bars)
        where += self._approvals("approvals", approved_by, not_approved_by, params, bars)
        if resource_id:
            where += " AND resource_id = ?"
            params.append(resource_id)
        counted: dict[str, Any] = {}
        with self._transaction() as cursor:
            if enabled is None:
                total = cursor.execute(
                    f"SELECT COUNT(*) FROM proposal_cards WHERE {pending}{where}",
                    [*pending_params, *params],
                ).fetchone()
            else:
                total, counted["not_enabled"] = self._counts(
                    cursor, pending, pending_params, where, params, enabled
                )
        items = self._select(
            "proposal_cards",
            pending + where,
            [*pending_params, *params, page_size, (page - 1) * page_size],
            "ORDER BY proposed_at DESC, proposal_id LIMIT ? OFFSET ?",
        )
        return {
            "items": items,
            "page": page,
            "page_size": page_size,
            "total": int(total[0]) if total else 0,
            **counted,
        }

    def _counts(
        self,
        cursor: Cursor,
        pending: str,
        pending_params: list[Any],
        where: str,
        params: list[Any],
        enabled: Sequence[str],
    ) -> tuple[Any, dict[str, Any]]:
        """In one statement over the organization's pending proposals: how many ``where``
        keeps (the list's total), how many are of no operation in ``enabled``, and when the
        first of those expires."""
        outside = (
            "operation NOT IN (" + ", ".join("?" for _ in enabled) + ")" if enabled else "1 = 1"
        )
        row = cursor.execute(
            f"SELECT COALESCE(SUM(CASE WHEN 1 = 1{where} THEN 1 ELSE 0 END), 0),"
            f" COALESCE(SUM(CASE WHEN {outside} THEN 1 ELSE 0 END), 0),"
            f" MIN(CASE WHEN {outside} THEN expires_at END)"
            f" FROM proposal_cards WHERE {pending}",
            [*params, *enabled, *enabled, *pending_params],
        ).fetchone()
        first = as_datetime(row[2]) if row else None
        return row, {"total": int(row[1]) if row else 0, "first_expires_at": first}

    def needs_attention(
        self,
        organization_id: str,
        *,
        section: str | None = None,
        sections: Sequence[str] | None = None,
        operations: Sequence[str] | None = None,
        limit: int = 20,
        overdue_before: datetime | None = None,
    ) -> dict[str, Any]:
        """Decided proposals of one organization that need someone's attention (the
        ``attention`` projection says which), newest first: their cards, and how many. With
        ``overdue_before``, also those still executing although approved by then (a claim
        whose process died, that no reconciler has settled: ``ProposalCards.settling``)."""
        where, params = self._attention(organization_id, overdue_before)
        where += _in_sections("a.section", section, sections, params, operations, "c.operation")
        joined = "proposal_cards c JOIN attention_items a ON a.proposal_id = c.proposal_id"
        spec = _TABLES["proposal_cards"]
        columns = ", ".join(f"c.{name}" for name in spec.column_names())
        limit = min(max(1, limit), MAX_PAGE_SIZE)
        with self._transaction() as cursor:
            total = cursor.execute(
                f"SELECT COUNT(*) FROM {joined} WHERE {where}", params
            ).fetchone()
            rows = cursor.execute(
                f"SELECT {columns} FROM {joined} WHERE {where}"
                " ORDER BY a.since DESC, c.proposal_id LIMIT ?",
                [*params, limit],
            ).fetchall()
            decoder = SqlRows(cursor, [spec], self.dialect)
            items = [decoder.decode(spec, row) for row in rows]
        return {"items": items, "total": int(total[0]) if total else 0}

    def _attention(
        self, organization_id: str, overdue_before: datetime | None
    ) -> tuple[str, list[Any]]:
        """Which attention items need attention: the open ones, and executing ones approved
        by ``overdue_before``."""
        where = "a.organization_id = ? AND (a.open = ?"
        params: list[Any] = [organization_id, True]
        if overdue_before is not None:
            where += " OR (a.status = 'executing' AND c.approved_at <= ?)"
            params.append(self._time(overdue_before))
        return where + ")", params

    def recent(
        self,
        organization_id: str,
        *,
        section: str | None = None,
        sections: Sequence[str] | None = None,
        operations: Sequence[str] | None = None,
        page: int = 1,
        page_size: int = 20,
    ) -> dict[str, Any]:
        """Decided proposals of one organization (any outcome, declined, expired and superseded
        ones too), the most recently changed first."""
        page = min(max(1, page), MAX_PAGE)
        page_size = min(max(1, page_size), MAX_PAGE_SIZE)
        where = "organization_id = ? AND status NOT IN ('pending', 'executing')"
        params: list[Any] = [organization_id]
        where += _in_sections("section", section, sections, params, operations)
        with self._transaction() as cursor:
            total = cursor.execute(
                f"SELECT COUNT(*) FROM proposal_cards WHERE {where}", params
            ).fetchone()
        items = self._select(
            "proposal_cards",
            where,
            [*params, page_size, (page - 1) * page_size],
            "ORDER BY updated_at DESC, proposal_id LIMIT ? OFFSET ?",
        )
        return {
            "items": items,
            "page": page,
            "page_size": page_size,
            "total": int(total[0]) if total else 0,
        }

    def counts(
        self,
        organization_id: str,
        now: datetime,
        *,
        section: str | None = None,
        sections: Sequence[str] | None = None,
        operations: Sequence[str] | None = None,
        not_approved_by: str | None = None,
        deciding: Sequence[str] | None = None,
        barred: OwnBarred | None = None,
        overdue_before: datetime | None = None,
    ) -> dict[str, int]:
        """How many proposals await a decision (of ``not_approved_by``: those they have not
        approved yet; with ``deciding``, of those operations alone: the ones they may
        decide, less their own that ``barred`` bars them from approving), and how many need
        attention (with ``overdue_before``, as ``needs_attention`` counts them)."""
        awaiting = "organization_id = ? AND status = 'pending' AND expires_at > ?"
        awaiting_params: list[Any] = [organization_id, self._time(now)]
        awaiting += _in_sections("section", section, sections, awaiting_params, operations)
        bars = self._barred(barred)
        awaiting += _deciding("operation", deciding, None, awaiting_params, bars)
        awaiting += self._approvals("approvals", None, not_approved_by, awaiting_params, bars)
        open_items, open_params = self._attention(organization_id, overdue_before)
        open_items += _in_sections(
            "a.section", section, sections, open_params, operations, "c.operation"
        )
        joined = "attention_items a JOIN proposal_cards c ON c.proposal_id = a.proposal_id"
        with self._transaction() as cursor:
            pending = cursor.execute(
                f"SELECT COUNT(*) FROM proposal_cards WHERE {awaiting}", awaiting_params
            ).fetchone()
            attention = cursor.execute(
                f"SELECT COUNT(*) FROM {joined} WHERE {open_items}", open_params
            ).fetchone()
        return {
            "awaiting": int(pending[0]) if pending else 0,
            "attention": int(attention[0]) if attention else 0,
        }

    def _approvals(
        self,
        column: str,
        by: str | None,
        not_by: str | None,
        params: list[Any],
        barred: Condition | None = None,
    ) -> str:
        """The condition (appended to a WHERE) on whether a person's approval is among a
        card's ``approvals`` (a JSON list of e-mails; a card without it has none) and counts:
        not on the cards ``barred`` selects (``_barred``), where it no longer does."""
        condition = ""
        for email, negated in ((by, False), (not_by, True)):
            if email is None:
                continue
            params.append(email.strip().lower())
            if self.dialect == "postgres":
                found = f"COALESCE({column}, '[]'::jsonb) @> jsonb_build_array(CAST(? AS text))"
            else:
                found = (
                    f"EXISTS (SELECT 1 FROM json_each(COALESCE({column}, '[]')) WHERE value = ?)"
                )
            if barred is None:
                condition += f" AND {'NOT ' if negated else ''}{found}"
            elif negated:
                condition += f" AND (NOT {found} OR {barred.sql})"
                params.extend(barred.params)
            else:
                condition += f" AND {found} AND NOT {barred.sql}"
                params.extend(barred.params)
        return condition

    def _barred(self, barred: OwnBarred | None) -> Condition | None:
        """The cards of ``barred.requester``'s that a policy bars them from approving
        (``policy_recheck.barred``): frozen under one that bars the requester, or of an
        operation whose policy in force bars the requester at their amount. Never NULL, so
        it may be negated."""
        if barred is None:
            return None
        if self.dialect == "postgres":
            frozen = "COALESCE(policy ->> 'requester_may_approve' = 'false', FALSE)"
        else:
            frozen = "COALESCE(json_extract(policy, '$.requester_may_approve') = 0, FALSE)"
        covered = [frozen]
        params: list[Any] = [barred.requester]
        for operation, above_cents in barred.in_force.items():
            params.append(operation)
            if above_cents is None:
                covered.append("operation = ?")
            else:
                covered.append("(operation = ? AND COALESCE(amount_cents > ?, FALSE))")
                params.append(above_cents)
        return Condition(f"(LOWER(requested_by) = ? AND ({' OR '.join(covered)}))", params)

    def card(self, organization_id: str, proposal_id: str) -> dict[str, Any] | None:
        rows = self._select(
            "proposal_cards",
            "proposal_id = ? AND organization_id = ?",
            [proposal_id, organization_id],
        )
        return rows[0] if rows else None

    def handback(self, organization_id: str, interaction_id: str) -> list[dict[str, Any]]:
        return self._select(
            "handback_messages",
            "interaction_id = ? AND organization_id = ?",
            [interaction_id, organization_id],
            "ORDER BY position",
        )

    def revision_context(self, organization_id: str, interaction_id: str) -> dict[str, Any] | None:
        rows = self._select(
            "revision_context",
            "interaction_id = ? AND organization_id = ?",
            [interaction_id, organization_id],
        )
        return rows[0] if rows else None

    def policy_changes(
        self, organization_id: str, operation: str | None = None
    ) -> list[dict[str, Any]]:
        """One organization's approval policy changes (of one operation), oldest first."""
        where, params = "organization_id = ?", [organization_id]
        if operation is not None:
            where += " AND operation = ?"
            params.append(operation)
        return self._select("policy_changes", where, params, "ORDER BY position")

    def permission_changes(self, organization_id: str) -> list[dict[str, Any]]:
        """One organization's changes of its members' permissions, oldest first."""
        return self._select(
            "permission_changes", "organization_id = ?", [organization_id], "ORDER BY position"
        )

    def audit_trail(
        self,
        *,
        organization_id: str | None = None,
        proposal_id: str | None = None,
        actor: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        batch: int = 1000,
    ) -> Iterator[dict[str, Any]]:
        """Stream audit rows in log order, a page at a time (memory stays flat)."""
        where = ["position > ?"]
        params: list[Any] = []
        for column, value in (
            ("organization_id", organization_id),
            ("proposal_id", proposal_id),
            ("actor", actor),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            where.append("at >= ?")
            params.append(self._time(since))
        if until is not None:
            where.append("at < ?")
            params.append(self._time(until))
        position = 0
        while True:
            rows = self._select(
                "audit_events",
                " AND ".join(where),
                [position, *params, batch],
                "ORDER BY position LIMIT ?",
            )
            yield from rows
            if len(rows) < batch:
                return
            position = rows[-1]["position"]


def as_datetime(value: Any) -> datetime | None:
    """A time a statement answered: PostgreSQL's a datetime, SQLite's the ISO text stored."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def _in_sections(
    column: str,
    section: str | None,
    sections: Sequence[str] | None,
    params: list[Any],
    operations: Sequence[str] | None = None,
    operation_column: str = "operation",
) -> str:
    """The condition (appended to a WHERE) that keeps ``section``'s rows, or those of any of
    ``sections``, and of them those of any of ``operations`` (an empty list keeps none, never
    every one); its values go to ``params``."""
    condition = ""
    if section:
        condition += f" AND {column} = ?"
        params.append(section)
    for name, values in ((column, sections), (operation_column, operations)):
        if values is not None:
            condition += f" AND {name} IN (" + (", ".join("?" for _ in values) or "NULL") + ")"
            params.extend(values)
    return condition


@dataclass(frozen=True)
class Condition:
    """A part of a WHERE and the values of its placeholders, in order."""

    sql: str
    params: list[Any]


def _deciding(
    column: str,
    deciding: Sequence[str] | None,
    not_deciding: Sequence[str] | None,
    params: list[Any],
    barred: Condition | None = None,
) -> str:
    """The condition (appended to a WHERE) that keeps the rows of any of ``deciding`` (an
    empty list keeps none) and leaves out those of any of ``not_deciding`` (an empty list
    leaves out none); its values go to ``params``. The rows ``barred`` selects count as
    of no operation decided (``ReadModels._barred``)."""
    condition = ""
    if deciding is not None:
        condition += f" AND {column} IN (" + (", ".join("?" for _ in deciding) or "NULL") + ")"
        params.extend(deciding)
        if barred is not None:
            condition += f" AND NOT {barred.sql}"
            params.extend(barred.params)
    if not_deciding:
        followed = f"{column} NOT IN (" + ", ".join("?" for _ in not_deciding) + ")"
        params.extend(not_deciding)
        if barred is not None:
            followed = f"({followed} OR {barred.sql})"
            params.extend(barred.params)
        condition += f" AND {followed}"
    return condition
