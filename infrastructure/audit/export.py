"""Streams audit rows as JSON lines or CSV, one row at a time (CSV's cells never a formula)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any, TextIO

COLUMNS = [
    "position",
    "at",
    "organization_id",
    "proposal_id",
    "version",
    "operation",
    "event_type",
    "actor",
    "summary",
    "chain",
]


def write_export(rows: Iterable[dict[str, Any]], fmt: str, out: TextIO) -> int:
    count = 0
    writer = (
        csv.DictWriter(out, fieldnames=COLUMNS, extrasaction="ignore") if fmt == "csv" else None
    )
    if writer is not None:
        writer.writeheader()
    for row in rows:
        clean = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in row.items()}
        if writer is not None:
            writer.writerow({k: _inert(v) for k, v in clean.items()})
        else:
            out.write(json.dumps({k: clean[k] for k in COLUMNS}, ensure_ascii=False) + "\n")
        count += 1
    out.flush()
    return count


#: What a spreadsheet opening the CSV reads as the start of a formula.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _inert(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula (a member's address may begin with
    "=", which an auditor's spreadsheet would evaluate), written after an apostrophe, which
    spreadsheets show as text; JSON lines give every value as stored."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value
