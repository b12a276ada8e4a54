"""Every problem an edited request has, at once.

A contract checks a request in two steps: its fields (``parse_request``), then what they name
against the facts (``prepare``: an order's payment, a league). Run as they are, the second
step waits for the first, so a person who corrects the field they were told about then meets
the next. Here, the fields that are not valid take the value the proposal was frozen from
(valid then), so the others can be resolved against the facts too, and their problems are
told alongside; a problem about a field that was stood in for is left out (it is not the
person's), and so is one about no field (it may come from a stood-in value). Nothing is
written.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

from countersign.application.ports import SharedSnapshots
from countersign.domain.contracts import AnyContract
from countersign.domain.contracts.problems import InvalidRequestError, Problem
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal

log = logging.getLogger("countersign.proposals")


def every_problem(
    store: Repository,
    contract: AnyContract,
    original: Proposal,
    request: Any,
    left_out: Collection[str] = (),
) -> list[Problem]:
    """The problems of ``request``, an edit of ``original``: its fields' and, for the fields
    that are valid, what resolving them against the facts finds. ``left_out``: fields whose
    value the caller could not read (its own problems): not reported here, and stood in for."""
    problems: list[Problem] = []
    try:
        parsed = contract.parse_request(request)
    except InvalidRequestError as invalid:
        problems = [p for p in invalid.problems if _top(p.field) not in left_out]
        parsed = None
    stood_in = {_top(p.field) for p in problems} | set(left_out)
    if parsed is None or stood_in:
        parsed = _with_stored(contract, request, original.request, stood_in)
    if parsed is None:
        return problems
    try:
        contract.prepare(parsed, contract.load(original.scope, SharedSnapshots(store)))
    except InvalidRequestError as unresolved:
        problems += [p for p in unresolved.problems if p.field and _top(p.field) not in stood_in]
    except Exception:  # the facts out of reach (a plug-in's service): the fields' problems stand
        log.warning("an edit's valid fields could not be resolved as well", exc_info=True)
    return problems


def _with_stored(
    contract: AnyContract, request: Any, stored: Mapping[str, Any] | None, fields: set[str]
) -> Any:
    """``request`` with ``fields`` as the proposal was frozen with them, parsed; None when it
    still does not parse (or no request was kept, or the request is not an object)."""
    if not isinstance(request, Mapping) or not isinstance(stored, Mapping):
        return None
    standing_in = dict(request)
    for name in fields:
        if name in stored:
            standing_in[name] = stored[name]
        else:
            standing_in.pop(name, None)
    try:
        return contract.parse_request(standing_in)
    except InvalidRequestError:
        return None


def _top(field: str) -> str:
    """A problem's field as the request's own: ``schedule.at`` is ``schedule``'s."""
    return field.split(".", 1)[0]
