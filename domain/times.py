"""Times as a club's people read them: in the club's time zone, and how far away.

An organization has a time zone (an IANA name such as ``America/Toronto``); clubs registered
before time zones existed read as UTC. Every page and the command line show an instant as
``2026-11-30 04:00 EST`` (the zone's own abbreviation, the same in both languages) and an
expiry also as a distance from now: "expires in 23 h", "expired 2 h ago".
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE
from countersign.domain.contracts.presentation import Localized

EXPIRES_IN = Localized("expires in {distance}", "expire dans {distance}")
EXPIRED_AGO = Localized("expired {distance} ago", "a expiré il y a {distance}")
MINUTES = "{n} min"  # the unit's symbol, the same in both languages
HOURS = "{n} h"
DAYS = Localized("{n} days", "{n} jours")
ONE_DAY = Localized("1 day", "1 jour")


def zone_of(name: str) -> ZoneInfo:
    """The zone, or UTC if ``name`` is not one (a stored name the system no longer knows)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo(DEFAULT_TIME_ZONE)


def local_time(moment: datetime, zone: str) -> str:
    """'2026-11-30 04:00 EST': the instant in the club's zone, with the zone's abbreviation."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(zone_of(zone)).strftime("%Y-%m-%d %H:%M %Z")


def distance(seconds: float, language: str) -> str:
    """A rough, readable distance: '45 min', '23 h', '3 days' (rounded down, at least 1 min)."""
    minutes = max(1, int(abs(seconds)) // 60)
    if minutes < 60:
        return MINUTES.format(n=minutes)
    hours = minutes // 60
    if hours < 48:
        return HOURS.format(n=hours)
    days = hours // 24
    return ONE_DAY.text(language) if days == 1 else DAYS.text(language, n=days)


def expiry(expires_at: datetime, now: datetime, language: str) -> str:
    """'expires in 23 h' or 'expired 2 h ago', in the reader's language."""
    if expires_at.tzinfo is None:
        expires_at = expires_at.replace(tzinfo=UTC)
    left = (expires_at - now).total_seconds()
    phrase = EXPIRES_IN if left > 0 else EXPIRED_AGO
    return phrase.text(language, distance=distance(left, language))
