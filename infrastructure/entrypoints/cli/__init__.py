"""The ``countersign`` command line, for application services and operators.

Every command takes ``--json`` and then prints exactly one JSON document on stdout. The exit
status is 0 whenever the command was processed, whatever its outcome; 2 for usage errors,
3 when the command cannot apply to the record it names (an edit of a proposal that already ran
or was superseded) and 1 for internal errors (which print a correlation id, never a stack
trace).

``parser`` names every command and its handler; the handlers live by area (``proposals``,
``club``, ``projections`` for the read models and the audit trail, ``admin`` for the server,
tokens and passwords); ``render`` and ``progress`` are the terminal's.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any

import psycopg
from countersign.application.errors import (
    CorruptRecordError,
    ForbiddenError,
    NotRevisableError,
    UnknownOperationError,
    new_correlation_id,
)
from countersign.domain.contracts.base import InvalidRequestError
from countersign.domain.errors import ConcurrencyConflictError, CountersignError, NotFoundError
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.entrypoints.cli import render
from countersign.infrastructure.entrypoints.cli.common import ALREADY_PRINTED, UsageError
from countersign.infrastructure.entrypoints.cli.parser import build_parser
from countersign.infrastructure.observability.logs import configure_logging
from countersign.infrastructure.projection_engine.runner import ProjectionStoppedError
from countersign.infrastructure.settings import SettingsError

log = logging.getLogger("countersign.cli")
#: The exit status of a command that cannot apply to the record it names.
NOT_APPLICABLE = 3
#: What a command answers: the document for --json, the text for people, the exit status.
Answer = tuple[Any, str, int]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        configure_logging()  # COUNTERSIGN_LOG_FORMAT (text or json), COUNTERSIGN_LOG_LEVEL
    except SettingsError as error:
        parser.exit(2, f"error: {error}\n")
    args = parser.parse_args(argv)
    args.database = getattr(args, "database", None) or args.database_first
    args.json = getattr(args, "json", False) or args.json_first
    if args.command == "demo":
        from countersign.infrastructure.demo.story import run_demo

        return run_demo(database_url=args.database, as_json=args.json)
    return run(args)


def run(args: argparse.Namespace) -> int:
    emit = _emitter(args.json)
    try:
        cs = bootstrap(database_url=args.database)
    except SettingsError as error:
        return emit({"error": "configuration", "message": str(error)}, f"error: {error}", 2)
    except psycopg.OperationalError:
        message = "cannot reach the PostgreSQL server; check COUNTERSIGN_DATABASE_URL or --database"
        return emit({"error": "database_unavailable", "message": message}, f"error: {message}", 1)
    try:
        document, text = args.handler(cs, args)
        return emit(document, text, 0)
    except Exception as error:  # every refusal has its answer; anything else is internal
        return emit(*_answer_to(error, getattr(args, "language", "en")))
    finally:
        cs.close()


def _problems(problems: list[dict[str, Any]]) -> Answer:
    return {"error": "invalid_request", "problems": problems}, render.render_problems(problems), 0


def _refused(invalid: InvalidRequestError, language: str) -> Answer:
    """A refused request: --json keeps each problem's field and message (what a program or
    the model corrects a request from); the text says it in the manager's words."""
    document = {
        "error": "invalid_request",
        "problems": [problem.model_dump() for problem in invalid.problems],
    }
    return document, render.render_refusal(invalid.problems, language), 0


def _not_revisable(refused: NotRevisableError, language: str) -> Answer:
    """An edit of a proposal that ran or was superseded: nothing was written; the text says
    why and, for a superseded one, which newer proposal to edit instead."""
    newer = str(refused.superseded_by) if refused.superseded_by else None
    document = {
        "error": "not_revisable",
        "status": refused.status,
        "superseded_by": newer,
        "message": str(refused),
    }
    text = render.render_not_revisable(refused.status, newer, language)
    return document, text, NOT_APPLICABLE


def _busy(_: Exception) -> Answer:
    message = "the records this command acts on are busy with other changes; try again"
    return {"error": "busy", "message": message}, f"Busy: {message}.", 1


#: What the CLI answers for each refusal, most specific first: the document for --json, the
#: text for people, the exit status (0 whenever the command was processed).
_ANSWERS: tuple[tuple[type[Exception], Callable[[Any], Answer]], ...] = (
    (
        UnknownOperationError,
        lambda _: _problems([{"field": "operation", "message": "no such operation"}]),
    ),
    (NotFoundError, lambda _: ({"error": "not_found"}, "Not found.", 0)),
    (
        ForbiddenError,
        lambda _: ({"error": "forbidden"}, "You do not have permission to do that.", 0),
    ),
    (UsageError, lambda e: ({"error": "usage", "message": str(e)}, f"error: {e}", 2)),
    (SettingsError, lambda e: ({"error": "configuration", "message": str(e)}, f"error: {e}", 2)),
    (ConcurrencyConflictError, _busy),
    (
        ProjectionStoppedError,
        lambda e: ({"error": "projection_stopped", "message": str(e)}, str(e), 1),
    ),
    (CorruptRecordError, lambda e: _internal(e.correlation_id)),
    # A domain rule refused the command (for example a manual refund above the balance).
    (CountersignError, lambda e: ({"error": "rejected", "message": str(e)}, f"Rejected: {e}.", 0)),
)


def _answer_to(error: Exception, language: str = "en") -> Answer:
    if isinstance(error, InvalidRequestError):
        return _refused(error, language)
    if isinstance(error, NotRevisableError):
        return _not_revisable(error, language)
    for refusal, answer in _ANSWERS:
        if isinstance(error, refusal):
            return answer(error)
    correlation_id = new_correlation_id()
    log.exception("internal error, correlation id %s", correlation_id)
    return _internal(correlation_id)


def _internal(correlation_id: str) -> Answer:
    return (
        {"error": "internal_error", "correlation_id": correlation_id},
        f"Internal error. Reference: {correlation_id}",
        1,
    )


def _emitter(as_json: bool) -> Callable[[Any, str, int], int]:
    def emit(document: Any, text: str, status: int) -> int:
        if document is not ALREADY_PRINTED:
            print(render.to_json(document) if as_json else text)
        return status

    return emit
