"""Freezing: a validated request resolved against the facts and frozen as a pending proposal.

Proposing and revising both end here, in one decision: the requester is checked, the
contract resolves every default and derived value and builds the preview on the facts as
they are, the approval policy in force is frozen with it, and what it replaces is
superseded in the same commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from countersign.application.authorization import Caller, Credential, membership, require_all
from countersign.application.errors import HeldForPeopleError, NotRevisableError
from countersign.application.ports import Commit, Reads, SharedSnapshots
from countersign.application.reports import ProposalCreated, own
from countersign.application.supersession import open_slot, still_pending, supersede
from countersign.domain.club.organization import Organization
from countersign.domain.contracts import AnyContract
from countersign.domain.contracts.frozen_models import FROZEN_MODELS
from countersign.domain.contracts.model_calls import dumped
from countersign.domain.outcomes import is_already_so
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal, ProposalStatus, SupersessionReason
from countersign.domain.scope import Scope
from countersign.domain.seals import SealKeys
from countersign.domain.uuids import id_text, new_id, new_id_prefix
from countersign.domain.visible_text import NAME_LENGTH, plain_name

_ORIGIN_KEYS = ("channel", "client", "client_version")

#: Read once: an enum member read from its class goes through the metaclass's ``__getattr__``
#: hook (about 900 instructions in Python 3.11, a global a few dozen).
_REVISED = SupersessionReason.REVISED
_REPLACED = SupersessionReason.REPLACED

_REVISABLE = frozenset(
    {
        ProposalStatus.PENDING,
        ProposalStatus.DECLINED,
        ProposalStatus.EXPIRED,
        ProposalStatus.REVISION_REQUIRED,
    }
)
"""What an edit may start from: nothing that ran, or is running, and nothing already
replaced (the newer proposal is the one to edit); nor a revision required because what it
asked for already held (``already_so``): it owes nothing, so there is nothing to edit."""


#: The longest origin value kept (``plain_name``).
ORIGIN_TEXT_LENGTH = NAME_LENGTH


def clean_origin(origin: Mapping[str, str] | None) -> dict[str, str] | None:
    """Where a request came from, as recorded: only the known keys, each a short name of
    plain characters (``plain_name``); nothing a client says of itself is trusted beyond
    that."""
    if not origin:
        return None
    cleaned = {}
    for key in _ORIGIN_KEYS:
        value = origin.get(key)
        if isinstance(value, str):
            text = plain_name(value)
            if text:
                cleaned[key] = text
    return cleaned or None


def freezing_reads(contract: AnyContract, scope: Scope) -> Reads:
    """What freezing a proposal of ``contract`` on ``scope`` reads."""
    slot = PendingSlot.create_id(scope.organization_id, scope.resource_id)
    return Reads([scope.organization_id, scope.resource_id, slot], contract.targets)


def freeze(
    store: Repository,
    contract: AnyContract,
    parsed: Any,
    scope: Scope,
    caller: Caller,
    *,
    interaction_id: str | None,
    expires_at: datetime,
    now: datetime,
    revision_of: Proposal | None = None,
    origin: dict[str, str] | None = None,
    seals: SealKeys | None = None,
) -> Commit[ProposalCreated]:
    """Check the requester, resolve the contract against the facts, freeze the proposal
    under the policy in force (sealed with ``seals``' sealing key, if any), and supersede
    what it replaces."""
    org = store.read(scope.organization_id, Organization)
    member = membership(org, caller.email)
    require_all(caller, member, contract.permission)
    if revision_of is not None:
        already_so = is_already_so(revision_of.outcome)
        if revision_of.status not in _REVISABLE or already_so:
            # Already so: nothing is owed, so there is nothing to edit (docs/design.md).
            raise NotRevisableError(
                str(revision_of.status), revision_of.superseded_by, already_so=already_so
            )
    # Read-only: nothing here changes them, so the contract reads the shared state.
    prepared = contract.prepare(parsed, contract.load(scope, SharedSnapshots(store)))
    arguments = dumped(prepared.arguments)
    preview = dumped(prepared.preview)
    policy = None
    if contract.kind in org.policies:
        amount = contract.amount_cents(prepared.arguments)
        policy = org.approval_policy(contract.kind).frozen_for(amount)
    # The new id kept at hand: ``proposal.id`` is a property of the library's (a call each).
    proposal_id = new_id()
    proposal = Proposal.propose(
        seals=seals,
        id=proposal_id,
        organization_id=scope.organization_id,  # the organization's id: it was read by it
        section=str(contract.section),
        resource_id=scope.resource_id,
        requested_by=member.email,
        interaction_id=interaction_id or f"int-{new_id_prefix()}",
        kind=contract.kind,
        contract_version=contract.contract_version,
        arguments=arguments,
        preview=preview,
        expires_at=expires_at,
        request=dumped(parsed),
        revision_of=None if revision_of is None else revision_of.id,
        policy=policy,
        origin=origin,
        resource_key=scope.key,
        requested_through=caller.recorded_credential,
    )
    # Approval validates these stored dumps again unless they still hash to this digest
    # (domain.contracts.frozen_models).
    FROZEN_MODELS.remember(
        proposal.digest, prepared.arguments, arguments, prepared.preview, preview
    )
    slot = open_slot(store, scope)
    subject = contract.subject(prepared.arguments)
    # The edited proposal first: when it is also the slot's latest, it was revised. (Loops,
    # not a generator and a comprehension: each is a call of its own, and most proposals
    # replace nothing.)
    replaced: list[tuple[Proposal, SupersessionReason]] = (
        [] if revision_of is None else [(revision_of, _REVISED)]
    )
    for pending in still_pending(store, slot.latest_for(contract.kind, subject)):
        if not caller.may_decide:
            hold_for_people(pending, member.email, _token_credential(caller))
        replaced.append((pending, _REPLACED))
    superseded = supersede(replaced, proposal_id) if replaced else []
    # The slot forgets, as of ``now``, every proposal of the resource that has expired.
    slot.hold(contract.kind, subject, proposal_id, expires_at=expires_at, at=now)
    supersedes: list[str] = []
    for old in superseded:
        supersedes.append(str(old.id))
    created = ProposalCreated(
        proposal_id=id_text(proposal_id),
        status=str(proposal.status),
        operation=proposal.kind,
        # The caller's own copy: once committed, the proposal is the shared snapshot.
        preview=own(proposal.preview),
        expires_at=proposal.expires_at,
        supersedes=supersedes,
        revision_of=None if revision_of is None else str(revision_of.id),
        approvals_required=proposal.approvals_required,
    )
    return Commit([proposal, slot, *superseded], created)


def hold_for_people(pending: Proposal, requester: str, token: str | None = None) -> None:
    """HeldForPeopleError unless a caller that never decides (an agent token, an assistant)
    may replace ``pending`` with a proposal requested by ``requester``: only one that this
    same member requested and nobody has approved (an approval that no longer counts
    included); for an agent token (``token``: its recorded credential), only one requested
    through that token. Replacing any other would withdraw another person's request, the
    member's own (made in person, or through another of their tokens: an edit, which an
    agent token may not make), or set approvals aside: decisions, which are people's."""
    if pending.approvals or pending.lapsed_approvals:
        raise HeldForPeopleError(HeldForPeopleError.APPROVED)
    if pending.requested_by.strip().lower() != requester.strip().lower():
        raise HeldForPeopleError(HeldForPeopleError.REQUESTED_BY_ANOTHER)
    if token is not None and pending.requested_through != token:
        raise HeldForPeopleError(HeldForPeopleError.REQUESTED_ELSEWHERE)


def _token_credential(caller: Caller) -> str | None:
    """An agent token's recorded credential (``agent_token:inbox-bot``); None for any other
    caller (an assistant acting for its signed-in person refines the person's requests)."""
    return caller.recorded_credential if caller.credential == Credential.AGENT_TOKEN else None
