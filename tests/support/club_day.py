"""A test clock's start that keeps a test's span within one day of the demo clubs' zone.

Pages say when something began as the time alone on the club's day of now ("Waiting since
23:52"), and with its date on any other day ("Waiting since 2026-12-04 23:52"). A test that
starts its clock a few minutes before the real time and then advances it would cross the
club's midnight when it runs in the first minutes of the club's day (00:00-00:10 in Toronto,
05:00-05:10 UTC in winter), and its expected texts, written without a date, would then be
wrong. Starting such a clock here keeps the whole span on one day, whenever the test runs."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

#: The demo clubs' zone (infrastructure/demo/seed.py: granite and maple).
CLUB_ZONE = "America/Toronto"


def start_within_one_club_day(start: datetime, minutes: float, zone: str = CLUB_ZONE) -> datetime:
    """``start``, unless ``start`` and ``minutes`` after it fall on two days in ``zone``: then
    the same span ended one minute before that day's end (so ``start`` moves back by at most
    ``minutes`` and a minute)."""
    club = ZoneInfo(zone)
    end = start + timedelta(minutes=minutes)
    if start.astimezone(club).date() == end.astimezone(club).date():
        return start
    midnight = datetime.combine(end.astimezone(club).date(), time(), club)
    return midnight.astimezone(start.tzinfo) - timedelta(minutes=minutes + 1)
