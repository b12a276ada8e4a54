"""Streams audit rows as JSON lines or CSV, one row at a time."""

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
            writer.writerow(clean)
        else:
            out.write(json.dumps({k: clean[k] for k in COLUMNS}, ensure_ascii=False) + "\n")
        count += 1
    out.flush()
    return count
