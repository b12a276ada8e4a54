"""What every command shares: its handler's name, its result, its usage errors, reading times,
catching up."""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign


#: What a command returns: its JSON document and its text for a person.
Result = tuple[Any, str]
#: The document of a command that printed its own output (it streamed it).
ALREADY_PRINTED = object()


@dataclass(frozen=True)
class Handler:
    """A command's handler: ``name`` in ``cli/<module>.py``, imported when the command runs."""

    module: str
    name: str

    def __call__(self, cs: Countersign | None, args: argparse.Namespace) -> Result:
        found = importlib.import_module(f"{__package__}.{self.module}")
        handler = getattr(found, self.name)
        result: Result = handler(cs, args)
        return result


class UsageError(Exception):
    """Raised when the command line itself is wrong; the message says how to fix it (in
    French too, where ``french`` is given)."""

    def __init__(self, message: str, french: str | None = None) -> None:
        super().__init__(message)
        self.french = french

    def text(self, language: str) -> str:
        """The message in ``language`` (English where it has no French)."""
        return self.french if language == "fr" and self.french else str(self)


class RefusedError(Exception):
    """Raised when the command's request is refused as it stands (nothing was written):
    ``reason`` is a code for programs, the message says why in the reader's language, and
    ``details`` go into the --json document."""

    def __init__(self, reason: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.details = details

    def document(self) -> dict[str, Any]:
        return {"error": "refused", "reason": self.reason, "message": str(self), **self.details}


class FaultFoundError(Exception):
    """Raised by a command that checks something (``audit verify``) when the check found a
    fault: its report was made in full, and the command ends with status 5 so that a script
    or a scheduled check can tell "checked and broken" from "checked and sound" without
    reading the report. ``document`` is the report (for --json), the message its words."""

    def __init__(self, document: dict[str, Any], message: str) -> None:
        super().__init__(message)
        self.document = document


class ProjectionNotSetUpError(UsageError):
    """Raised when a command reads a projection that this database does not hold as this
    release builds it (never set up, or built by another release): a read sets nothing up.
    ``names``: those projections; the message says what to run, in English and French."""

    def __init__(self, names: list[str], *, never_built: bool) -> None:
        from countersign.infrastructure.entrypoints.cli import answers

        said = answers.NOT_SET_UP if never_built else answers.BUILT_ELSEWHERE
        joined = " ".join(names)
        super().__init__(said.text("en", names=joined), said.text("fr", names=joined))
        self.names = names


def service_stopped(args: argparse.Namespace, document: Any, text: str) -> Result:
    """A service's last line as it stops (``serve``, ``worker``, ``projections run``,
    ``notify run``, ``mcp --http``): with COUNTERSIGN_LOG_FORMAT=json, one JSON object on
    stderr as every line it said before it (printed as words on stdout, it was the one line
    of the service's journal a JSON collector could not read); --json's document is printed
    on stdout either way."""
    from countersign.infrastructure.observability.logs import json_logs, say

    if not json_logs():
        return document, text
    say(text)
    if args.json:
        from countersign.infrastructure.entrypoints.cli import render

        print(render.to_json(document), flush=True)
    return ALREADY_PRINTED, ""


def catch_up(cs: Countersign, names: list[str]) -> None:
    """Bring the named projections up to the log before a command reads them, as
    ``projections run`` would: their rows and positions. A read never sets one up: a
    projection this database does not hold as this release's code builds it (no tracking
    row; tables another release built, which a runner would drop and rebuild, or stop at) is
    ProjectionNotSetUpError, and nothing is created, dropped or written
    (``standing.standings`` reads them as stored)."""
    from countersign.infrastructure.projection_engine.standing import (
        CURRENT,
        NOT_BUILT,
        standings,
    )

    lacking = [s for s in standings(cs.app, cs.sql, cs.projections(names)) if s.state != CURRENT]
    if lacking:
        never_built = all(s.state == NOT_BUILT for s in lacking)
        raise ProjectionNotSetUpError([s.name for s in lacking], never_built=never_built)
    for runner in cs.projection_runners(names, set_up=False):
        runner.catch_up()


def parse_time(value: str, *, versions: bool = True) -> datetime:
    """An ISO time (UTC unless it says otherwise); UsageError naming what the option takes
    (``versions``: a version too, as ``history --as-of`` does)."""
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        what = "a version or an ISO time" if versions else "an ISO time"
        quoi = "ni une version ni une heure ISO" if versions else "pas une heure ISO"
        raise UsageError(
            f"{value!r} is not {what} like 2026-11-30T09:00Z",
            f"{value!r} n'est {quoi} comme 2026-11-30T09:00Z",
        ) from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    try:  # times are compared and stored in UTC: one whose UTC is off the calendar is refused
        moment.astimezone(UTC)
    except OverflowError:
        raise UsageError(
            f"{value!r} is out of range: in UTC it falls outside the years 1 to 9999",
            f"{value!r} est hors limites : en UTC, elle tombe hors des années 1 à 9999",
        ) from None
    return moment


#: The largest whole number a command takes: SQLite's INTEGER and PostgreSQL's bigint hold
#: no more (a page, a limit, a position or an amount past it failed in the database).
MAX_WHOLE_NUMBER = 2**63 - 1


def whole_number(text: str) -> int:
    """The argument type of every whole number a command takes (a usage error, exit 2, for
    one past ``MAX_WHOLE_NUMBER`` either way, and in the same words for one that is no whole
    number: argparse's own would name this function, "invalid whole_number value")."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or abs(value) > MAX_WHOLE_NUMBER:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from {-MAX_WHOLE_NUMBER} to {MAX_WHOLE_NUMBER}"
        )
    return value


def positive_whole_number(text: str) -> int:
    """``whole_number`` from 1: a count of rows to list (``--limit``), which PostgreSQL
    refused below 0 (an internal error) and SQLite read below 0 as no limit at all."""
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_WHOLE_NUMBER}")
    return value
