"""``audit verify``'s check of the stored snapshots (infrastructure/persistence/
stored_snapshots.py): each must be what replaying its aggregate's events up to its version
gives.

A snapshot is a cache, never the record, but a cold load starts from it: a writer who edits
one (an organization's, to grant a member a permission or lower an approval policy; a
passkey ring's, to add a key) changes what every process that loads the aggregate cold then
decides, while every event, hash-chain link and anchor still holds. So each stored snapshot
the store would read (one it cannot read is ignored at load, and here) is compared with its
aggregate replayed from the events, as the stored-snapshot tests compare a cold load with a
replay; one that differs, or whose events no longer replay, is named by its stream, class and
version (at most ``LISTED``; all counted). Only the newest snapshot of each aggregate is kept,
and only aggregates of a hundred events or more have one, so this replays a few streams.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.snapshot_replay import (
    count_snapshots,
    replayed_snapshots,
)

__all__ = ["SnapshotReport", "check_snapshots", "count_snapshots"]
from countersign.infrastructure.persistence.sql import SqlDatabase

#: Snapshots a report names.
LISTED = 100


@dataclass
class SnapshotReport:
    """The stored snapshots checked, and those that are not their events replayed."""

    checked: int = 0
    different: int = 0
    differences: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.different

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "not_as_events": self.different,
            "differences": self.differences,
        }


def check_snapshots(
    app: CountersignApplication,
    sql: SqlDatabase,
    progress: Callable[[int], None] | None = None,
) -> SnapshotReport:
    """Every stored snapshot the store would read against its aggregate's events replayed
    (``progress`` told of each stored snapshot read: a replay each, long at thousands)."""
    report = SnapshotReport()
    for stream_id, kind, version, problem in replayed_snapshots(app, sql, progress):
        report.checked += 1
        if problem is None:
            continue
        report.different += 1
        if len(report.differences) < LISTED:
            report.differences.append(
                {"stream_id": str(stream_id), "kind": kind, "version": version, "problem": problem}
            )
    return report
