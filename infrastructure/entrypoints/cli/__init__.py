"""The ``countersign`` command line, for application services and operators.

Every command takes ``--json`` and then prints exactly one JSON document on stdout, its
answer or its error. The exit status is 0 whenever the command was processed, whatever its
outcome; 1 for internal errors (which print a correlation id, never a stack trace) and an
unreachable database; 2 for usage and configuration errors; 3 when the command cannot apply
to the record it names (an edit of a proposal that already ran or was superseded); 4 for a
request refused (a proposal's request the contract does not accept, a change of permissions
the club's rules refuse); 5 when a check found a fault (``audit verify``: a broken hash
chain, its report printed in full); 141 when the reader of
its output went away (``countersign show ... | head``), as a program stopped by SIGPIPE.
Whatever ends in a non-zero status says why on stderr, in words: in the reader's language,
``--language`` (en or fr, on every command, before or after its name), as every answer is;
a --json document's codes and a refused request's problems (for programs and models) are the
same in both.

``parser`` names every command and its handler; the handlers live by area (``proposals``,
``club``, ``projections`` for the read models and the audit trail, ``admin`` for the server,
tokens and passwords); ``render``, ``cards``, ``listings`` and ``progress`` are the terminal's.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import select
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from countersign.application.errors import (
    CorruptRecordError,
    ForbiddenError,
    NotRevisableError,
    UnknownOperationError,
    UnreadableEvent,
    new_correlation_id,
)
from countersign.domain.errors import ConcurrencyConflictError, CountersignError, NotFoundError
from countersign.infrastructure.entrypoints.cli import answers, render
from countersign.infrastructure.entrypoints.cli.common import (
    ALREADY_PRINTED,
    FaultFoundError,
    Handler,
    ProjectionNotSetUpError,
    RefusedError,
    UsageError,
)
from countersign.infrastructure.entrypoints.cli.parser import CommandParser, command_parser
from countersign.infrastructure.observability.logs import configure_logging, say
from countersign.infrastructure.persistence.sql import postgres_unreachable
from countersign.infrastructure.settings import (
    Database,
    NoDatabaseError,
    Settings,
    SettingsError,
    plugin_names,
)

if TYPE_CHECKING:
    from countersign.domain.contracts.problems import InvalidRequestError

# What a command needs is imported when it runs (bootstrap, the contracts, the handlers'
# libraries), not by ``countersign --help``: the client's memory budget is 60 MB
# (scripts/bench_memory.py).

log = logging.getLogger("countersign.cli")
#: The exit status of a command that cannot apply to the record it names.
NOT_APPLICABLE = 3
#: The exit status of a request refused (the contract does not accept it as it is).
REFUSED = 4
#: The exit status of a check that found a fault (``audit verify``: a broken hash chain).
FAULT_FOUND = 5
#: The exit status when the reader of the output went away: a program stopped by SIGPIPE's.
READER_GONE = 128 + 13
#: What a command answers: the document for --json, the text for people, the exit status.
Answer = tuple[Any, str, int]


def main(argv: list[str] | None = None) -> int:
    """The ``countersign`` command; its exit status (the module's docstring lists them)."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, not at exit: a reader gone is then caught just below
        return status
    except BrokenPipeError:
        return _stop_writing()


def _main(argv: list[str] | None) -> int:
    words = sys.argv[1:] if argv is None else argv
    language = answers.chosen_language(words)
    try:  # before the parser: its choices list the plug-ins' operations and sections
        _enable_plugins()
    except SettingsError as error:
        return _emitter("--json" in words)(*_configuration(error, language))
    parser = command_parser()
    try:
        configure_logging()  # COUNTERSIGN_LOG_FORMAT (text or json), COUNTERSIGN_LOG_LEVEL
    except SettingsError as error:
        return _emitter("--json" in words)(*_configuration(error, language))
    if not words:
        parser.print_help()  # a bare `countersign`: what it can do
        return 0
    # --json, or an abbreviation argparse takes for it (--j): its usage errors are JSON too.
    CommandParser.json_errors = any(len(w) >= 3 and "--json".startswith(w) for w in words)
    CommandParser.language = language
    try:
        if (unstorable := answers.unstorable_argument(words, language)) is not None:
            parser.error(unstorable)
        args = parser.parse_args(argv)
    finally:
        CommandParser.json_errors, CommandParser.language = False, "en"  # this line's only
    args.database = getattr(args, "database", None) or args.database_first
    # --language, before the command or after it: the language of every answer.
    args.language_named = getattr(args, "language", None) or args.language_first
    args.language = args.language_named or "en"
    args.json = getattr(args, "json", False) or args.json_first
    args.create = getattr(args, "create", False) or args.create_first
    if args.command == "demo":
        return _demo(args)
    return run(args)


def _enable_plugins() -> None:
    """The deployment's plug-ins, as bootstrap enables them. Without any, and none enabled
    before in this process (a test's), the registries are countersign's own already: the
    plug-in machinery (and the sections and contracts it checks) is not even imported."""
    names = plugin_names()
    if names or "countersign.infrastructure.plugins" in sys.modules:
        from countersign.infrastructure.bootstrap import enable_plugins

        enable_plugins(names)


def _demo(args: argparse.Namespace) -> int:
    """The guided story; with ``--serve``, then the pages over the data it left. Without
    ``--database``, on a throwaway SQLite file removed when it ends, unless ``--keep``
    (``throwaway_database``); Ctrl-C ends it quietly (exit 130), SIGTERM too (143), the file
    removed either way."""
    from countersign.infrastructure.demo.story import Terminated, throwaway_database

    with contextlib.ExitStack() as stack:
        if not args.database:
            throwaway = throwaway_database(args.keep, args.json, args.language)
            args.database = stack.enter_context(throwaway)
        try:
            return _demo_on(args)
        except KeyboardInterrupt:
            return 130
        except Terminated:
            return 143


def _demo_on(args: argparse.Namespace) -> int:
    from countersign.infrastructure.demo.story import run_demo

    try:
        if args.serve:
            # A port that cannot be served says so before the story, not after it.
            from countersign.infrastructure.entrypoints.cli.admin import check_port_free

            check_port_free(args.host, args.port, args.workers)
        told = run_demo(args.database, args.json, args.language, args.keep and not args.serve)
    except SettingsError as error:  # a database URL it cannot use, a port it cannot serve
        return _emitter(args.json)(*_configuration(error, args.language))
    if told != 0 or not args.serve:
        return told
    args.handler = Handler("demo", "cmd_demo_serve")
    return run(args)


#: The commands that make the database they name when it is missing (others need --create).
CREATING = frozenset({"seed", "demo"})


def run(args: argparse.Namespace) -> int:
    emit = _emitter(args.json)
    if not getattr(args, "opens_database", True):
        document, text = args.handler(None, args)
        return emit(document, text, 0)
    from countersign.infrastructure.bootstrap import bootstrap

    try:
        settings = Settings.from_env(args.database)
        if getattr(args, "maintenance", False):
            # It reads or rebuilds everything, and an operator watches it: no statement
            # timeout (COUNTERSIGN_DATABASE_TIMEOUT is for the services' requests).
            settings = replace(settings, database_timeout=None)
        creates = args.command in CREATING or getattr(args, "org_command", None) == "create"
        cs = bootstrap(settings, create=args.create or creates)
    except NoDatabaseError as error:
        said = answers.ERROR_LINE.text(args.language, message=error.text(args.language))
        return emit({"error": "no_database", "message": str(error)}, said, 2)
    except SettingsError as error:
        return emit(*_configuration(error, args.language))
    except Exception as error:
        return emit(*_not_started(error, settings.database_url, args.language))
    try:
        document, text = args.handler(cs, args)
        return emit(document, text, 0)
    except Exception as error:  # every refusal has its answer; anything else is internal
        if isinstance(error, BrokenPipeError) and _stdout_reader_gone():
            raise
        return emit(*_answer_to(error, args.language, args.command))
    finally:
        cs.close()


def _configuration(error: SettingsError, language: str) -> Answer:
    """A setting, or an option that stands for one, that cannot be used: status 2."""
    said = answers.ERROR_LINE.text(language, message=error.text(language))
    return {"error": "configuration", "message": str(error)}, said, 2


def _not_started(error: Exception, database_url: str, language: str = "en") -> Answer:
    """What a command or a service says when the database failed it as it started: a lock
    held, a role without the privileges, a server out of reach or out of connections, a full
    disk; anything else an internal error with its reference. One line each, never a
    traceback (the log has it, for an internal error)."""
    from countersign.infrastructure.persistence.privileges import (
        lacks_privilege,
        refused_privilege,
    )
    from countersign.infrastructure.persistence.unavailable import no_connection_left, timed_out

    if timed_out(error):  # a lock held on countersign's tables as it started, say
        return _database_unavailable(error, language, sent=False)
    refused = refused_privilege(error)
    if refused is not None:  # a role that may not create what every start makes
        message = lacks_privilege(Database.parse(database_url).user, refused)
        return {"error": "configuration", "message": message}, f"error: {message}", 2
    if not isinstance(error, postgres_unreachable()):
        # The database out of reach past connecting (a full disk, no connection from the
        # pool in time), or an internal error: as once started, nothing having been sent.
        return _answer_to(error, language)
    server_said = str(error).strip().splitlines()[0] if str(error).strip() else ""
    message = (
        f"cannot reach the PostgreSQL database ({server_said}); check "
        "COUNTERSIGN_DATABASE_URL or --database"
    )
    refusal = _login_refused(server_said)
    if refusal is not None:
        said = answers.LOGIN_REFUSED.text(language, said=refusal)
        english = answers.LOGIN_REFUSED.text("en", said=refusal)
        return {"error": "configuration", "message": english}, f"error: {said}", 2
    if no_connection_left(server_said):
        message = (
            f"the PostgreSQL server has no connection left ({server_said}): raise its "
            "max_connections, or end other sessions, then try again"
        )
    elif _server_intervened(error):  # reached, and the URL right: the server said no for now
        message = (
            f"the PostgreSQL server ended the connection as this command started "
            f"({server_said}); try again in a few seconds"
        )
    return {"error": "database_unavailable", "message": message}, f"error: {message}", 1


#: What libpq reports when the server answered a login with a refusal that a setting fixes
#: (its ``FATAL:`` lines but those of a server busy, starting or stopping), or refused SSL.
_LOGIN_REFUSALS = (
    "does not exist",
    "password authentication failed",
    "authentication failed",
    "no pg_hba.conf entry",
    "permission denied",
    "not permitted to log in",
    "does not support ssl",
    "ssl was required",
)


def _login_refused(server_said: str) -> str | None:
    """The server's refusal of this login, from "FATAL:" on (or libpq's words on SSL), if
    ``server_said`` is one a setting fixes; None for a server out of reach or busy."""
    lowered = server_said.lower()
    if not any(refusal in lowered for refusal in _LOGIN_REFUSALS):
        return None
    fatal = server_said.find("FATAL:")
    found = server_said[fatal:] if fatal >= 0 else server_said.rsplit(" failed: ", 1)[-1]
    return " ".join(found.split())


def _server_intervened(error: BaseException) -> bool:
    """Whether the PostgreSQL server itself ended or refused the connection for now (SQLSTATE
    class 57, operator intervention: a session terminated by an administrator, a server
    shutting down or starting up), rather than the URL leading nowhere (or to a wrong
    database, user or password)."""
    for found in (error, error.__cause__, error.__context__):
        sqlstate = getattr(found, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith("57"):
            return True
    return False


def _stdout_reader_gone() -> bool:
    """Whether standard output is a pipe nobody reads any more (a broken pipe of another
    kind, a socket's, is an internal error like any other)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)  # POLLERR: a pipe whose reader closed it
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):  # not a file (a test's capture): never "gone"
        return False


def _stop_writing() -> int:
    """The reader of the output went away (``countersign show ... | head``): stop quietly,
    as a program stopped by SIGPIPE does, with nothing on stderr. Python ignores SIGPIPE, so
    a write raised; standard output now goes nowhere, so that the interpreter's own flush at
    exit has nothing left to complain about."""
    with contextlib.suppress(OSError, ValueError):
        nowhere = os.open(os.devnull, os.O_WRONLY)
        os.dup2(nowhere, sys.stdout.fileno())
        os.close(nowhere)
    return READER_GONE


def _unknown_operation(_: UnknownOperationError, language: str) -> Answer:
    problem = {"field": "operation", "message": answers.NO_SUCH_OPERATION.text("en")}
    said = {**problem, "message": answers.NO_SUCH_OPERATION.text(language)}
    text = render.render_problems([said], answers.OPERATIONS_LISTED.text(language))
    return {"error": "invalid_request", "problems": [problem]}, text, REFUSED


def _refused(invalid: InvalidRequestError, language: str) -> Answer:
    """A refused request: --json keeps each problem's field and message (what a program or
    the model corrects a request from); the text says each in the manager's words, with the
    field it concerns."""
    document: dict[str, Any] = {
        "error": "invalid_request",
        "problems": [problem.model_dump() for problem in invalid.problems],
    }
    if invalid.more_problems:
        document["more_problems"] = invalid.more_problems
    text = render.render_refusal(invalid.problems, language, invalid.more_problems)
    return document, text, REFUSED


def _not_revisable(refused: NotRevisableError, language: str) -> Answer:
    """An edit of a proposal that ran or was superseded, or that owes nothing (already so):
    nothing was written; the text says why and, for a superseded one, which newer proposal
    to edit instead."""
    newer = str(refused.superseded_by) if refused.superseded_by else None
    document: dict[str, Any] = {
        "error": "not_revisable",
        "status": refused.status,
        "superseded_by": newer,
        "message": str(refused),
    }
    if refused.already_so:  # it owes nothing, as its card's outcome says (only when true)
        document["already_so"] = True
    from countersign.infrastructure.entrypoints.cli import cards

    text = cards.render_not_revisable(
        refused.status, newer, language, already_so=refused.already_so
    )
    return document, text, NOT_APPLICABLE


def _busy(_: Exception, language: str) -> Answer:
    message = answers.BUSY.text(language)
    document = {"error": "busy", "message": message}
    return document, answers.BUSY_LINE.text(language, message=message), 1


def _usage(error: UsageError, language: str) -> Answer:
    said = error.text(language)
    return {"error": "usage", "message": said}, answers.ERROR_LINE.text(language, message=said), 2


def _not_set_up(error: ProjectionNotSetUpError, language: str) -> Answer:
    said = error.text(language)
    document = {"error": "projection_not_set_up", "projections": error.names, "message": said}
    return document, answers.ERROR_LINE.text(language, message=said), 2


def _rejected(error: Exception, language: str) -> Answer:
    """A domain rule refused the command (a manual refund above the balance, say): the rule
    says why in its own words."""
    said = answers.REJECTED_LINE.text(language, message=error)
    return {"error": "rejected", "message": str(error)}, said, 0


#: What the CLI answers for each refusal, most specific first, in the reader's language:
#: the document for --json, the text for people, the exit status (0 whenever the command
#: was processed). An unknown club, member or id and another club's id answer alike.
_ANSWERS: tuple[tuple[type[Exception], Callable[[Any, str], Answer]], ...] = (
    (UnknownOperationError, _unknown_operation),
    (RefusedError, lambda e, _: (e.document(), str(e), REFUSED)),
    (FaultFoundError, lambda e, _: (e.document, str(e), FAULT_FOUND)),
    (NotFoundError, lambda _, lang: ({"error": "not_found"}, answers.NOT_FOUND.text(lang), 0)),
    (ForbiddenError, lambda _, lang: ({"error": "forbidden"}, answers.FORBIDDEN.text(lang), 0)),
    (ProjectionNotSetUpError, _not_set_up),
    (UsageError, _usage),
    (SettingsError, _configuration),
    (ConcurrencyConflictError, _busy),
    (CorruptRecordError, lambda e, lang: _damaged(e.correlation_id, lang, e.event)),
    (CountersignError, _rejected),
)


#: The commands that decide (or may, as the chat's /approve): a database that did not answer
#: after one of them was sent may have recorded it.
DECIDING = frozenset({"approve", "decline", "revise", "chat"})


def _answer_to(error: Exception, language: str = "en", command: str | None = None) -> Answer:
    from countersign.domain.contracts.problems import InvalidRequestError
    from countersign.infrastructure.entrypoints.cli.resources import NamedNotFoundError
    from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError

    if isinstance(error, InvalidRequestError):
        return _refused(error, language)
    if isinstance(error, ProjectionStoppedError):
        said = error.said.text(language)
        return {"error": "projection_stopped", "message": str(error)}, said, 1
    if isinstance(error, NotRevisableError):
        return _not_revisable(error, language)
    if isinstance(error, NamedNotFoundError):
        text = error.text(language)
        return {"error": "not_found", "resource": error.resource, "message": text}, text, 0
    for refusal, answer in _ANSWERS:
        if isinstance(error, refusal):
            return answer(error, language)
    from countersign.infrastructure.persistence.unavailable import database_unavailable

    if database_unavailable(error):
        return _database_unavailable(error, language, sent=command in DECIDING)
    correlation_id = new_correlation_id()
    log.exception("internal error, correlation id %s", correlation_id)
    return _internal(correlation_id, language)


def _database_unavailable(error: Exception, language: str, *, sent: bool) -> Answer:
    """The database went out of reach, or did not answer within COUNTERSIGN_DATABASE_TIMEOUT
    (a lock held on its tables), as the command started or ran: as the API and the pages
    say it. ``sent``: a decision was on its way (approve, decline, revise, the chat), which
    may have been recorded; a command that only reads, or that never reached the database,
    is told only to try again."""
    from countersign.infrastructure.persistence.unavailable import unavailable_reason

    log.warning("database unavailable: %s", unavailable_reason(error))
    message = answers.UNAVAILABLE.text(language)
    if sent:
        message += answers.MAY_BE_RECORDED.text(language)
    said = answers.ERROR_LINE.text(language, message=message)
    return {"error": "database_unavailable", "message": message}, said, 1


def _damaged(
    correlation_id: str, language: str = "en", event: UnreadableEvent | None = None
) -> Answer:
    document, _, status = _internal(correlation_id)
    colon = " : " if language == "fr" else ": "
    message = f"{answers.DAMAGED.text(language)}{colon}{correlation_id}"
    if event is not None:  # the store found which event: where it is, and what to do
        message += ". " + answers.damaged_event(event, language)
        document["unreadable_event"] = {
            "log_position": event.position,
            "version": event.version,
            "topic": event.topic,
            "code": event.code,
        }
    return (
        {**document, "message": message},
        answers.INTERNAL_LINE.text(language, message=message),
        status,
    )


def _internal(correlation_id: str, language: str = "en") -> Answer:
    return (
        {"error": "internal_error", "correlation_id": correlation_id},
        answers.INTERNAL.text(language, reference=correlation_id),
        1,
    )


def _emitter(as_json: bool) -> Callable[[Any, str, int], int]:
    """Prints an answer: the document on stdout for --json, else the text; an answer with a
    non-zero status says why on stderr, in words, in both modes."""

    def emit(document: Any, text: str, status: int) -> int:
        # Every answer's text goes to the terminal ``printable``: a name, a note, a URL or a
        # model's words stored with an escape sequence cannot move the cursor or hide a line.
        if document is not ALREADY_PRINTED and as_json:
            print(render.to_json(document), flush=True)
        if status != 0:
            say(render.terminal(text), logging.ERROR)  # one JSON object under json logs
        elif document is not ALREADY_PRINTED and not as_json:
            print(render.terminal(text), flush=True)
        return status

    return emit
