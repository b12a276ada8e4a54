"""Which pending proposals a new proposal, or a success, takes the place of.

A resource holds one pending proposal per operation and subject (``PendingSlot``): a newer
one for the same thing replaces it, an edit of it revises it, and a success of another
proposal on the resource withdraws the ones its contract says it made stale. Each records
``Superseded{by, reason}`` in the same commit as what superseded it.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from countersign.domain.contracts import AnyContract
from countersign.domain.contracts.base import Siblings
from countersign.domain.errors import NotFoundError
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal, ProposalStatus, SupersessionReason
from countersign.domain.proposal_status import PENDING
from countersign.domain.scope import Scope

#: Read once: an enum member read from its class goes through the metaclass's
#: ``__getattr__`` hook (about 900 instructions in Python 3.11, a global a few dozen).
_SAME_OPERATION = Siblings.SAME_OPERATION
_OTHER_OPERATIONS = Siblings.OTHER_OPERATIONS


def open_slot(store: Repository, scope: Scope) -> PendingSlot:
    """The pending-proposal slot of the scope's resource, opened if new."""
    slot_id = PendingSlot.create_id(scope.organization_id, scope.resource_id)
    try:
        return store.get(slot_id, PendingSlot)
    except NotFoundError:
        return PendingSlot(organization_id=scope.organization_id, resource_id=scope.resource_id)


def still_pending(store: Repository, proposal_id: UUID | None) -> list[Proposal]:
    """The proposal, if there is one and it is still pending."""
    if proposal_id is None:
        return []
    # Read first: most often it has long left pending, and is not worth a private copy.
    if store.read(proposal_id, Proposal).status != PENDING:
        return []
    return [store.get(proposal_id, Proposal)]


def supersede(proposals: list[tuple[Proposal, SupersessionReason]], by: UUID) -> list[Proposal]:
    """Record ``Superseded{by, reason}`` on each still pending one (each once, with the first
    reason given for it); the ones changed."""
    changed: dict[UUID, Proposal] = {}
    for proposal, reason in proposals:
        if proposal.status == ProposalStatus.PENDING and proposal.id not in changed:
            proposal.supersede(by, reason)
            changed[proposal.id] = proposal
    return list(changed.values())


def siblings(store: Repository, proposal: Proposal, retired: frozenset[Siblings]) -> list[UUID]:
    """The latest proposals on ``proposal``'s resource of the kinds of sibling ``retired``
    names (its own operation's other subjects, other operations): the ones a success of it
    retires, if they are still pending."""
    if not retired:
        return []
    slot_id = PendingSlot.create_id(proposal.organization_id, proposal.resource_id)
    try:
        slot = store.read(slot_id, PendingSlot)
    except NotFoundError:
        return []  # frozen before supersession existed: nothing was ever held
    found: list[UUID] = []
    for kind in sorted(slot.latest):
        same = kind == proposal.kind
        if (_SAME_OPERATION if same else _OTHER_OPERATIONS) in retired:
            found.extend(other for other in slot.latest_of(kind) if other != proposal.id)
    return found


def retire(
    store: Repository,
    contract: AnyContract,
    proposal: Proposal,
    arguments: Any,
    result: Any,
    loaded: Any,
) -> list[Proposal]:
    """Supersede the pending proposals on the same resource whose previews this success
    made stale (those of the operations the contract says it retires): withdrawn."""
    found = siblings(store, proposal, contract.retires(arguments, result, loaded))
    if not found:
        return []  # most successes: the slot holds nothing else (no comprehension calls)
    stale = [pending for sibling in found for pending in still_pending(store, sibling)]
    withdrawn = [(pending, SupersessionReason.WITHDRAWN) for pending in stale]
    return supersede(withdrawn, proposal.id)
