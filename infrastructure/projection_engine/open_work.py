"""The OpenWorkIndex port over the ``open_work`` projection, caught up before every query."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.projection_engine.runner import ProjectionRunner
from countersign.projections.open_work import OPEN, OpenWork


class ProjectedOpenWork:
    """Finds sweep candidates in a handful of rows instead of scanning every proposal."""

    def __init__(self, app: CountersignApplication, sql: SqlDatabase) -> None:
        self.sql = sql
        self._runner: ProjectionRunner | None = None
        self._app = app

    @property
    def runner(self) -> ProjectionRunner:
        if self._runner is None:  # created on first use: most commands never sweep
            self._runner = ProjectionRunner(self._app, self.sql, OpenWork())
        return self._runner

    def _param(self, moment: datetime) -> object:
        # SQLite compares ISO text: it must be UTC like the stored values.
        return moment if self.sql.is_postgres else moment.astimezone(UTC).isoformat()

    def expiry_candidates(self, now: datetime) -> list[UUID]:
        self.runner.catch_up()
        return self._ids(
            f"SELECT proposal_id FROM {OPEN} WHERE status = 'pending' AND expires_at <= ?"
            " ORDER BY expires_at",
            now,
        )

    def reconciliation_candidates(self, claimed_before: datetime) -> list[UUID]:
        self.runner.catch_up()
        return self._ids(
            f"SELECT proposal_id FROM {OPEN} WHERE status = 'reconciling'"
            " OR (status = 'executing' AND claimed_at <= ?) ORDER BY claimed_at",
            claimed_before,
        )

    def _ids(self, sql: str, moment: datetime) -> list[UUID]:
        with self.sql.transaction() as cursor:
            rows = cursor.execute(sql, (self._param(moment),)).fetchall()
        return [UUID(str(row[0])) for row in rows]
