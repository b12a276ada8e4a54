"""tests.support.club_day: a test clock's span kept on one day of the clubs' zone, so that
pages' times without a date stay right whenever the suite runs (it once failed two browser
tests run between 05:00 and 05:10 UTC, the first minutes of Toronto's day)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from countersign.domain.times import since_time

from tests.support.club_day import CLUB_ZONE, start_within_one_club_day

TORONTO = ZoneInfo(CLUB_ZONE)


def test_a_span_within_the_clubs_day_starts_where_it_was_asked_to() -> None:
    start = datetime(2026, 12, 5, 17, 0, tzinfo=UTC)  # 12:00 in Toronto
    assert start_within_one_club_day(start, 10) == start


def test_a_span_across_the_clubs_midnight_ends_before_it_and_reads_without_a_date() -> None:
    start = datetime(2026, 12, 5, 4, 55, tzinfo=UTC)  # 23:55 in Toronto, ten minutes to 00:05
    moved = start_within_one_club_day(start, 10)
    end = moved + timedelta(minutes=10)
    assert moved.tzinfo is UTC
    assert moved == datetime(2026, 12, 5, 4, 49, tzinfo=UTC)
    assert moved.astimezone(TORONTO).date() == end.astimezone(TORONTO).date()
    # What the pages would say: the time alone, as the browser tests expect it.
    assert since_time(moved, end, CLUB_ZONE, "en") == "23:49"
    # Unmoved, the same span would have read with its date.
    assert since_time(start, start + timedelta(minutes=10), CLUB_ZONE, "en") == "2026-12-04 23:55"


def test_summer_time_is_the_zones_own() -> None:
    start = datetime(2026, 7, 1, 3, 58, tzinfo=UTC)  # 23:58 in Toronto (EDT, UTC-4)
    moved = start_within_one_club_day(start, 5)
    assert moved == datetime(2026, 7, 1, 3, 54, tzinfo=UTC)
