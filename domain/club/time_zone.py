"""A club's time zone: an IANA name (``America/Toronto``) the system's zone database knows."""

from __future__ import annotations

from zoneinfo import available_timezones

from countersign.domain.errors import TimeZoneError

DEFAULT_TIME_ZONE = "UTC"
"""The zone of clubs registered before clubs had one."""


def valid_time_zone(name: str) -> str:
    """The IANA time zone ``name`` names; TimeZoneError for anything else (a path, an
    abbreviation such as EST, an empty string)."""
    name = name.strip()
    if not name or len(name) > 64 or name not in available_timezones():
        raise TimeZoneError(
            f"{name[:64]!r} is not a time zone; use an IANA name such as America/Toronto"
        )
    return name
