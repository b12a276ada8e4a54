"""What every route of the JSON API (``/api/v1``) answers, and how a route's outcome is recorded.

Status scheme (the same on every route):

* 200 / 201: the request was processed. For approve and decline that includes every answer
  the proposal itself gives (``executed``, ``already_completed``, ``declined``, and
  ``not_approvable`` because it is no longer pending, expired, or in progress): the document
  is the CLI's ``approve --json`` and repeating the request returns the same stored outcome.
* 401: no valid token. 403: the token (or the member it acts as) lacks the permission, or
  an agent token asked to decide (``agent-cannot-decide``).
* 404: unknown id, malformed id, or another organization's id: one identical answer.
* 400 malformed JSON (or a malformed Content-Length); 413 a body over the limit (the gate,
  ``gate.py``, refuses it before reading it, and checks the token before reading any body);
  422 a request with problems (at most 20 listed, ``more_problems`` counts the rest);
  409 a domain rule refused it (``not-revisable``: an edit of a proposal that ran or was
  superseded; its detail names the newer proposal to edit instead; ``held-for-people``: an
  agent token's proposal would replace a pending one another member made or someone approved;
  ``unverified-elsewhere``: an approval sent with ``unverified`` to a process that would carry
  out the pending proposal as it holds it, which is not what the approver read).
* 503 busy (retry) or a read model stopped; 500 unexpected, with a correlation id.

The application decides (``cs.access``, ``cs.assistant``; a token's scopes travel in its
``Caller``): ids are checked against the caller's organization BEFORE any permission that
depends on what the id names, so a foreign id never answers 403. ``answers`` turns what it
raises into these problems.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from countersign.application.assistant.turn_limits import TooManyTurnsError
from countersign.application.errors import (
    AgentCannotDecideError,
    CorruptRecordError,
    ForbiddenError,
    HeldForPeopleError,
    MissingPermissionError,
    NotApprovableError,
    NotRevisableError,
    UnknownOperationError,
    VouchedHereError,
)
from countersign.application.proposal_limit import TooManyProposalsError
from countersign.application.token_write_limit import TooManyWritesError
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import ConcurrencyConflictError, CountersignError, NotFoundError
from countersign.domain.times import seconds_wait
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.http.auth import countersign
from countersign.infrastructure.entrypoints.http.problems import ProblemDocument, ProblemError
from countersign.infrastructure.entrypoints.http.refusals import refusal_message
from countersign.infrastructure.identity.tokens import (
    ServicePrincipal,
    record_action,
    say_not_recorded,
)
from countersign.infrastructure.persistence.unavailable import (
    database_unavailable,
    unavailable_reason,
)
from countersign.infrastructure.projection_engine.runner import ProjectionStoppedError
from fastapi import Request
from fastapi.responses import JSONResponse

log = logging.getLogger("countersign.http")

#: An edit of a proposal that owes nothing: what it asked for already held when it was
#: approved. A different change is a new proposal (POST /api/v1/proposals), as on the page.
ALREADY_SO_NOT_REVISABLE = (
    "This proposal was not executed because what it asked for was already so: nothing is "
    "left to do, so there is nothing to edit. For a different change, propose it anew."
)

DESCRIPTIONS = {
    400: "The body is not valid JSON (or too deeply nested, not UTF-8, a number too large).",
    401: "No valid API token (checked before the body is read).",
    403: "The token, or the member it acts as, lacks the permission; or an agent token asked "
    "to decide (agent-cannot-decide).",
    404: "No such resource in the token's organization (unknown and foreign ids alike).",
    409: "A rule of the application refused the request (not-revisable: the proposal ran or "
    "was superseded, and can no longer be edited, or, with already_so: true, it was not "
    "executed because what it asked for already held, so there is nothing to edit; "
    "held-for-people: an agent token's proposal "
    "would replace a pending one that another member made, its member made in person or "
    "through another token, or someone approved; "
    "not-approvable: a passkey challenge asked for a proposal no approval can decide now, "
    "with the reason and message approving it gives; unverified-elsewhere: an approval sent "
    "with unverified: true to a server process that would carry out the pending proposal as "
    "it holds it, not as it was read, so nothing was approved: read the card again).",
    413: "The request body is over the size limit (COUNTERSIGN_API_MAX_BODY bytes).",
    415: "A body was sent without 'Content-Type: application/json' (unsupported-media-type).",
    422: "The request has problems (see 'problems').",
    429: "The member made too many proposals (COUNTERSIGN_PROPOSAL_LIMIT), or sent the "
    "assistants too many messages (COUNTERSIGN_TURN_LIMIT), or the token sent too many "
    "changes to the club's settings (COUNTERSIGN_TOKEN_WRITE_LIMIT), in a short time, or "
    "the token has as many requests under way as it may have at once (too-many-requests, "
    "COUNTERSIGN_REQUESTS_IN_FLIGHT); wait Retry-After seconds.",
    500: "Unexpected error; quote the correlation id.",
    503: "Busy with other changes (retry), the database did not answer in time "
    "(database-unavailable: see Retry-After), or a read model is stopped.",
}


def problem_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """A route's problem answers for the OpenAPI document (the ones every route has, too, 429
    among them: a token past its requests under way; 415 wherever a body or parameters may
    be refused, 422)."""
    media = {415} if 422 in codes else set()
    return {
        code: {"model": ProblemDocument, "description": DESCRIPTIONS[code]}
        for code in sorted({*codes, *media, 400, 401, 413, 429, 500, 503})
    }


@contextmanager
def answers(request: Request) -> Iterator[None]:  # noqa: C901 - one clause per problem kind
    """Translate what the application services raise into problems."""
    try:
        yield
    except InvalidRequestError as invalid:
        problems = [problem.model_dump() for problem in invalid.problems]
        raise ProblemError(
            "invalid-request", problems=problems, more_problems=invalid.more_problems
        ) from None
    except UnknownOperationError:
        problems = [{"field": "operation", "message": "no such operation"}]
        raise ProblemError("invalid-request", problems=problems) from None
    except NotFoundError:
        raise ProblemError("not-found") from None
    except HeldForPeopleError as held:
        said = str(held)  # the application's own sentence: it names no one and no id
        raise ProblemError("held-for-people", f"{said[:1].upper()}{said[1:]}.") from None
    except AgentCannotDecideError:
        # Worth a look: an agent's token was used to decide (an agent, or someone holding
        # its token, tried to approve, decline, edit or change the club's rules). Said once a
        # while for each token, with how many went unsaid: an agent asking in a loop would
        # otherwise bury every other warning of the process (the outages' log says so).
        countersign(request).outages.warning(
            log,
            _token_of(request),
            "an agent token asked to decide (request %s)",
            correlation_id_of(request),
        )
        raise ProblemError("agent-cannot-decide") from None
    except VouchedHereError:
        raise ProblemError("unverified-elsewhere") from None
    except MissingPermissionError as missing:
        needs = ("one of " if missing.any_of else "") + ", ".join(missing.needs)
        raise ProblemError("forbidden", f"This token may not do that; it needs {needs}.") from None
    except ForbiddenError:
        raise ProblemError("forbidden") from None
    except ProjectionStoppedError as stopped:
        # Every request reading it fails alike until an operator acts: once a while.
        countersign(request).outages.error(
            log, str(stopped), "projection stopped (request %s)", correlation_id_of(request)
        )
        # An operator has to act; a minute is a wait a client can honour meanwhile.
        raise ProblemError("unavailable", headers={"Retry-After": "60"}) from None
    except CorruptRecordError as corrupt:
        log.error(
            "unreadable record, reference %s (request correlation id %s)",
            corrupt.correlation_id,
            correlation_id_of(request),
        )
        raise ProblemError("internal-error") from None
    except NotRevisableError as settled:
        detail = f"This proposal is {settled.status}, so it can no longer be edited."
        newer = str(settled.superseded_by) if settled.superseded_by is not None else None
        if newer is not None:
            detail += f" Edit the newer one instead: {newer}."
        # The same facts for a program (a service retrying a revision that timed out finds
        # its own edit here) as the approve answer gives them.
        extensions: dict[str, Any] = {"proposal_status": settled.status, "superseded_by": newer}
        if settled.already_so:  # it owes nothing: the card's own marker, only when true
            detail = ALREADY_SO_NOT_REVISABLE
            extensions["already_so"] = True
        raise ProblemError("not-revisable", detail, extensions=extensions) from None
    except NotApprovableError as closed:
        # What approving it answers (its reason and message), as a problem: the passkey
        # challenge of a proposal no approval can decide is refused before anyone signs.
        report = closed.report.to_json()
        extensions = {
            "reason": report["reason"],
            "proposal_status": report["status"],
            "superseded_by": report.get("superseded_by"),
        }
        detail = report.get("message") or refusal_message(report)
        raise ProblemError("not-approvable", detail, extensions=extensions) from None
    except CountersignError as refused:
        later = _retry_later(refused)
        if later is not None:
            raise later from None
        log.info("refused (request %s): %s", correlation_id_of(request), refused)
        raise ProblemError("rejected") from None
    except Exception as error:
        if not database_unavailable(error):
            raise
        countersign(request).outages.warning(
            log,
            unavailable_reason(error),
            "database unavailable (request %s)",
            correlation_id_of(request),
        )
        raise ProblemError("database-unavailable", headers={"Retry-After": "5"}) from None


def _token_of(request: Request) -> str:
    """The token a request's caller presented, by name and club (the gate's check found it)."""
    found = getattr(request.state, "principal", None)
    found = getattr(found, "found", found)  # a check the route made: what it found
    if not isinstance(found, ServicePrincipal):
        return "a token not known here"
    return f"token {found.name!r} of {found.organization_slug}"


def _retry_later(error: CountersignError) -> ProblemError | None:
    """The problem of a refusal that a retry after a while may overcome (503, 429)."""
    if isinstance(error, ConcurrencyConflictError):
        return ProblemError("busy", headers={"Retry-After": "1"})
    if isinstance(error, TooManyProposalsError):
        return ProblemError(
            "too-many-proposals",
            f"This member made too many proposals in a short time; try again in "
            f"{seconds_wait(error.retry_after)}.",
            headers={"Retry-After": str(error.retry_after)},
        )
    if isinstance(error, TooManyWritesError):
        return ProblemError(
            "too-many-writes",
            "This token sent too many changes to the club's settings in a short time; try again "
            f"in {seconds_wait(error.retry_after)}. Nothing was done.",
            headers={"Retry-After": str(error.retry_after)},
        )
    if isinstance(error, TooManyTurnsError):
        return ProblemError(
            "too-many-turns",
            f"This member sent the assistants too many messages in a short time; try again "
            f"in {seconds_wait(error.retry_after)}.",
            headers={"Retry-After": str(error.retry_after)},
        )
    return None


def admit_write(cs: Countersign, service: ServicePrincipal) -> None:
    """Count one decision or change the token sends, or refuse it (TooManyWritesError, a 429
    inside ``answers``) past ``COUNTERSIGN_TOKEN_WRITE_LIMIT``: before the work, so a loop of
    them stops whatever each would change."""
    cs.token_writes.admit(service.organization_slug, service.acting_member, service.name)


def record(
    cs: Countersign,
    request: Request,
    service: ServicePrincipal,
    action: str,
    target: str,
    result: str,
    *,
    changed: bool = True,
) -> None:
    """Log and record what the service did (``api_service_actions``), never failing the call.
    An answer that changed nothing (``changed`` false: a decision repeated on a decided
    proposal, its stored outcome answered again; a setting given the value it has) is logged
    and not recorded: a caller repeating it would otherwise grow the table without bound, and
    the first answer that did something is recorded already (or there was none to record)."""
    correlation_id = correlation_id_of(request)
    log.info(
        "%s (acting as %s) %s %s: %s [%s]",
        service.service,
        service.acting_member,
        action,
        target,
        result,
        correlation_id,
    )
    if not changed:
        return
    try:
        record_action(
            cs, service, action=action, target=target, result=result, correlation_id=correlation_id
        )
    except Exception as error:  # the outcome is in the event stream; the caller must learn it
        say_not_recorded(log, error, service, action=action, correlation_id=correlation_id)


def report_response(
    cs: Countersign,
    request: Request,
    service: ServicePrincipal,
    action: str,
    report: dict[str, Any],
) -> JSONResponse:
    """An approve or decline answer: 404 and 403 as problems, anything else recorded and sent,
    a refusal with what happened and what to do next (``refusals``) when the proposal's
    stored outcome does not say it."""
    if report["result"] == "not_approvable" and report["reason"] == "not_found":
        raise ProblemError("not-found")
    if report["result"] == "not_approvable" and report["reason"] == "forbidden":
        raise ProblemError("forbidden")
    if report["result"] == "not_approvable" and not report.get("message"):
        report["message"] = refusal_message(report)
    result = str(report["result"]) + (f":{report['reason']}" if report["reason"] else "")
    record(
        cs, request, service, action, str(report["proposal_id"]), result, changed=_decided(report)
    )
    return JSONResponse(report)


def _decided(report: dict[str, Any]) -> bool:
    """Whether an approve or decline answer recorded anything: it executed, declined or
    counted an approval; not a stored outcome answered again (``already_completed``), a
    refusal (``not_approvable``), nor the same person's approval given again."""
    if report["result"] in ("already_completed", "not_approvable"):
        return False
    return bool(report["reason"] != "already_approved_by_you")
