"""What every signed-in page's frame shows of the person's club beyond its links: the
navigation's counts, and whether the foot links the approval policies page. Each is a
convenience: when it cannot be read, the page shows without it (``not_read`` says why)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from countersign.application.errors import CorruptRecordError
from countersign.domain.club.organization import Permission
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.web.visits import Visit
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError

log = logging.getLogger("countersign.web")


def not_read(cs: Countersign, what: str) -> None:
    """Say at WARNING that ``what``, a convenience of a page, could not be read, as the error
    being handled has it. A projection stopped at an event it cannot take, or a damaged
    record, is the operator's to act on: one line, in its own words (the event's log
    position, its error and code, and what to do; a damaged record's reference, whose ERROR
    line the store wrote names the event), once a while with the count of the pages that met
    it since (``Countersign.outages``), its traceback at DEBUG only: every page of every
    visitor logged it whole until the operator acted. Anything else, unexpected, with its
    traceback."""
    error = sys.exc_info()[1]
    if isinstance(error, ProjectionStoppedError | CorruptRecordError):
        cs.outages.warning(log, str(error), what)
        log.debug("%s", what, exc_info=True)
    else:
        log.warning("%s", what, exc_info=True)


def may_see_policies(cs: Countersign, visit: Visit) -> bool:
    """Whether the foot links the approval policies page: as ``PolicyService.readable``
    decides it, a member with ``policies.manage`` or one who may read some proposals."""
    user = visit.signed_in
    if user.may(Permission.MANAGE_POLICIES):
        return True
    try:
        return bool(cs.access.readable_sections(user.caller))
    except Exception:  # a link is a convenience: the page (an error page too) must show
        not_read(cs, "whether to link the approval policies could not be read")
        return False


def counts(
    cs: Countersign, visit: Visit, catch_up: Callable[[Visit], None]
) -> dict[str, int] | None:
    """The navigation's counts: awaiting the person's decision (proposals of the kinds they
    may decide, not only read, that they have not approved yet), needing attention; None
    when they may list no proposals, or the read models cannot say right now. ``catch_up``
    brings the inbox's read models up to the log, once a request (``Site.catch_up_inbox``)."""
    user = visit.signed_in
    try:
        if not cs.access.readable_sections(user.caller):
            return None
        scope = cs.access.inbox_scope(user.caller)
        catch_up(visit)
        return cs.read_models.counts(
            scope.organization_id,
            cs.clock.now(),
            sections=scope.sections,
            operations=scope.operations,
            not_approved_by=user.email,
            deciding=scope.decidable,
            barred=scope.barred,
            overdue_before=cs.cards.overdue_claims_before(),
        )
    except Exception:  # counts are a convenience: the page itself must still show
        not_read(cs, "the navigation's counts could not be read")
        return None
