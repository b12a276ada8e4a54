"""The ``countersign`` command line, for application services and operators.

Every command takes ``--json`` and then prints exactly one JSON document on stdout. The exit
status is 0 whenever the command was processed, whatever its outcome; 2 for usage errors and
1 for internal errors (which print a correlation id, never a stack trace).

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
    UnknownOperationError,
    new_correlation_id,
)
from countersign.domain.contracts.base import InvalidRequestError
from countersign.domain.errors import ConcurrencyConflictError, CountersignError, NotFoundError
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.entrypoints.cli import render
from countersign.infrastructure.entrypoints.cli.common import ALREADY_PRINTED, UsageError
from countersign.infrastructure.entrypoints.cli.parser import build_parser
from countersign.infrastructure.projection_engine.runner import ProjectionStoppedError
from countersign.infrastructure.settings import SettingsError

log = logging.getLogger("countersign.cli")


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = build_parser()
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
    except InvalidRequestError as invalid:
        problems = [problem.model_dump() for problem in invalid.problems]
        return emit(
            {"error": "invalid_request", "problems": problems}, render.render_problems(problems), 0
        )
    except UnknownOperationError:
        problems = [{"field": "operation", "message": "no such operation"}]
        return emit(
            {"error": "invalid_request", "problems": problems}, render.render_problems(problems), 0
        )
    except NotFoundError:
        return emit({"error": "not_found"}, "Not found.", 0)
    except ForbiddenError:
        return emit({"error": "forbidden"}, "You do not have permission to do that.", 0)
    except UsageError as error:
        return emit({"error": "usage", "message": str(error)}, f"error: {error}", 2)
    except SettingsError as error:
        return emit({"error": "configuration", "message": str(error)}, f"error: {error}", 2)
    except ConcurrencyConflictError:
        message = "the records this command acts on are busy with other changes; try again"
        return emit({"error": "busy", "message": message}, f"Busy: {message}.", 1)
    except ProjectionStoppedError as stopped:
        return emit({"error": "projection_stopped", "message": str(stopped)}, str(stopped), 1)
    except CorruptRecordError as corrupt:
        return _internal(emit, corrupt.correlation_id)
    except CountersignError as error:
        # A domain rule refused the command (for example a manual refund above the balance).
        return emit({"error": "rejected", "message": str(error)}, f"Rejected: {error}.", 0)
    except Exception:
        correlation_id = new_correlation_id()
        log.exception("internal error, correlation id %s", correlation_id)
        return _internal(emit, correlation_id)
    finally:
        cs.close()


def _internal(emit: Callable[[Any, str, int], int], correlation_id: str) -> int:
    return emit(
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
