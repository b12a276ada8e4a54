"""Times as a club's people read them: in the club's time zone, and how far away.

An organization has a time zone (an IANA name such as ``America/Toronto``); clubs registered
before time zones existed read as UTC. Every page and the command line show an instant as
``2026-11-30 04:00 EST`` in English and ``30 nov. 2026, 4 h 00 HNE`` in French (the zone's
own abbreviation, in French Canada's words for the North American ones), and an expiry also
as a distance from now: "expires in 23 h", "expired 2 h ago", "expired just now".
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE
from countersign.domain.contracts.presentation import Localized

EXPIRES_IN = Localized("expires in {distance}", "expire dans {distance}")
EXPIRED_AGO = Localized("expired {distance} ago", "a expiré il y a {distance}")
EXPIRES_NOW = Localized("expires in less than a minute", "expire dans moins d'une minute")
EXPIRED_NOW = Localized("expired just now", "a expiré à l'instant")
MINUTES = "{n} min"  # the unit's symbol, the same in both languages
HOURS = "{n} h"
DAYS = Localized("{n} days", "{n} jours")
ONE_DAY = Localized("1 day", "1 jour")
SECONDS = Localized("{n} seconds", "{n} secondes")
ONE_SECOND = Localized("1 second", "1 seconde")
AT = Localized("at {time}", "à {time}")
ON_AT = Localized("on {date} at {time}", "le {date} à {time}")


def zone_of(name: str) -> ZoneInfo:
    """The zone, or UTC if ``name`` is not one (a stored name the system no longer knows)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo(DEFAULT_TIME_ZONE)


_NBSP = "\N{NO-BREAK SPACE}"
_FRENCH_MONTHS = (
    "janv.", "févr.", "mars", "avr.", "mai", "juin",
    "juil.", "août", "sept.", "oct.", "nov.", "déc.",
)  # fmt: skip
_ENGLISH_MONTHS = (
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
)  # fmt: skip
#: North American zones as French Canada abbreviates them (heure normale / avancée).
_FRENCH_ZONES = {
    "EST": "HNE", "EDT": "HAE", "CST": "HNC", "CDT": "HAC", "MST": "HNR", "MDT": "HAR",
    "PST": "HNP", "PDT": "HAP", "AST": "HNA", "ADT": "HAA", "NST": "HNT", "NDT": "HAT",
}  # fmt: skip


def _in_zone(moment: datetime, zone: str) -> datetime:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(zone_of(zone))


def local_time(moment: datetime, zone: str, language: str = "en") -> str:
    """The instant in the club's zone, with the zone's abbreviation: '2026-11-30 04:00 EST'
    in English, '30 nov. 2026, 4 h 00 HNE' in French."""
    local = _in_zone(moment, zone)
    abbreviation = local.strftime("%Z")
    if language != "fr":
        return local.strftime("%Y-%m-%d %H:%M ") + abbreviation
    return (
        f"{_french_day(local)}{_NBSP}{local.year}, {local.hour}{_NBSP}h{_NBSP}"
        f"{local.minute:02d} {_FRENCH_ZONES.get(abbreviation, abbreviation)}"
    )


def local_day(moment: datetime, zone: str, language: str = "en") -> str:
    """The day in the club's zone, short: 'Dec 1' in English, '1er déc.' in French."""
    local = _in_zone(moment, zone)
    if language == "fr":
        return _french_day(local)
    return f"{_ENGLISH_MONTHS[local.month - 1]} {local.day}"


def _french_day(local: datetime) -> str:
    day = "1er" if local.day == 1 else str(local.day)
    return f"{day}{_NBSP}{_FRENCH_MONTHS[local.month - 1]}"


def clock_time(moment: datetime, zone: str, language: str) -> str:
    """'14:53' (French: '14 h 53'): the time of day in the club's zone."""
    local = _local(moment, zone)
    if language == "fr":
        return f"{local.hour} h {local.minute:02d}"
    return local.strftime("%H:%M")


def since_time(moment: datetime, now: datetime, zone: str, language: str) -> str:
    """'14:53' on the club's day of ``now``, else '2026-12-01 14:53': when something began,
    read in the club's zone without repeating today's date."""
    time = clock_time(moment, zone, language)
    local = _local(moment, zone)
    if local.date() == _local(now, zone).date():
        return time
    return f"{local:%Y-%m-%d} {time}"


def at_time(moment: datetime, now: datetime, zone: str, language: str) -> str:
    """'at 14:53' on the club's day of ``now``, else 'on 2026-12-01 at 14:53' (French: 'à 14 h
    53', 'le 2026-12-01 à 14 h 53')."""
    time = clock_time(moment, zone, language)
    local = _local(moment, zone)
    if local.date() == _local(now, zone).date():
        return AT.text(language, time=time)
    return ON_AT.text(language, date=f"{local:%Y-%m-%d}", time=time)


def _local(moment: datetime, zone: str) -> datetime:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(zone_of(zone))


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
    """'expires in 23 h' or 'expired 2 h ago' ('expired just now' under a minute), in the
    reader's language."""
    if expires_at.tzinfo is None:
        expires_at = expires_at.replace(tzinfo=UTC)
    left = (expires_at - now).total_seconds()
    if abs(left) < 60:  # "1 min ago" seconds after it would overstate it
        return (EXPIRES_NOW if left > 0 else EXPIRED_NOW).text(language)
    phrase = EXPIRES_IN if left > 0 else EXPIRED_AGO
    return phrase.text(language, distance=distance(left, language))


def seconds_wait(seconds: int, language: str = "en") -> str:
    """A wait in whole seconds, as a sentence says it: "1 second", "30 seconds" ("1 seconde",
    "30 secondes")."""
    return ONE_SECOND.text(language) if seconds == 1 else SECONDS.text(language, n=seconds)
