"""A club's time zone: an IANA name (``America/Toronto``) the system's zone database knows."""

from __future__ import annotations

from functools import cache
from zoneinfo import available_timezones

from countersign.domain.errors import TimeZoneError

DEFAULT_TIME_ZONE = "UTC"
"""The zone of clubs registered before clubs had one."""


@cache
def _known_zones() -> frozenset[str]:
    """The zone database's names, listed once a process: listing them walks the database's
    folder and opens each of its 600 files, about 10 ms of CPU and 35 of waiting on the loaded
    2-core machine, which every seeded club paid (the test suite seeds a few thousand). A
    zone installed while the process runs is known from its next start."""
    return frozenset(available_timezones())


def valid_time_zone(name: str) -> str:
    """The IANA time zone ``name`` names; TimeZoneError for anything else (a path, an
    abbreviation such as EST, an empty string)."""
    name = name.strip()
    if not name or len(name) > 64 or name not in _known_zones():
        raise TimeZoneError(
            f"{name[:64]!r} is not a time zone; use an IANA name such as America/Toronto"
        )
    return name
