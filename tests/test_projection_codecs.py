"""The projection codecs' conversions of values for the database, unit by unit: each fast
path must give exactly the text the plain conversion gives (stored rows never change)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from countersign.infrastructure.projection_engine import codecs
from countersign.projections.base import Column, Table


class _Moment(datetime):
    """A datetime subclass: not the exact type the fast path takes."""


_TIMES = [
    datetime(2026, 12, 3, 9, 10, 11, 123456, tzinfo=UTC),
    datetime(2026, 12, 3, 9, 10, 11, tzinfo=UTC),  # no microseconds: none written
    datetime(2026, 12, 3, 9, 10, 11, 120000, tzinfo=UTC),  # trailing zeros kept
    datetime(2026, 12, 3, 9, 10, 11, 1, tzinfo=UTC),
    datetime(2026, 1, 1, tzinfo=UTC),
    datetime(5, 1, 2, 3, 4, 5, 6, tzinfo=UTC),  # a year of one digit
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 3, 29, 1, 30, tzinfo=UTC, fold=1),
    None,
]


def _reference(values: list[Any]) -> list[Any]:
    return [None if v is None else v.astimezone(UTC).isoformat() for v in values]


def test_utc_times_are_written_as_isoformat_writes_them():
    assert codecs._times_to_text(_TIMES) == _reference(_TIMES)
    assert codecs._times_to_text(tuple(_TIMES)) == _reference(_TIMES)
    assert codecs._times_to_text([]) == []
    assert codecs._times_to_text([None, None]) == [None, None]


@pytest.mark.parametrize(
    "odd",
    [
        datetime(2026, 12, 3, 9, 10, 11, 5, tzinfo=timezone(timedelta(hours=-5))),
        datetime(2026, 12, 3, 9, 10, 11, tzinfo=timezone(timedelta(0))),  # UTC, not the object
        datetime(2026, 12, 3, 9, 10, 11, tzinfo=timezone(timedelta(seconds=30))),
        _Moment(2026, 12, 3, 9, 10, 11, 7, tzinfo=UTC),
    ],
)
def test_a_column_with_any_other_time_is_written_value_by_value(odd):
    values = [*_TIMES, odd]
    assert codecs._times_to_text(values) == _reference(values)


def test_a_utc_column_is_written_without_isoformat(monkeypatch):
    """The whole column in C (orjson), not one ``isoformat`` a time (``_time_text``)."""

    def refuse(value: Any) -> str:
        raise AssertionError("isoformat called for a UTC column")

    monkeypatch.setattr(codecs, "_time_text", refuse)
    table = Table("timed", (Column("k"), Column("t", "time"), Column("j", "json")), key=("k",))
    codec = codecs._Codec(table, "sqlite")
    at = _TIMES[0]
    rows = [("a", at, {"b": 1, "a": [2]}), ("b", at, []), ("c", None, None)]
    assert codec.rows_to_db(rows, {}) == [
        ("a", at.isoformat(), '{"a":[2],"b":1}'),
        ("b", at.isoformat(), "[]"),
        ("c", None, None),
    ]
    with pytest.raises(AssertionError):
        codecs._times_to_text([at.astimezone(timezone(timedelta(hours=1)))])
