"""Where every entry point asks about a proposal: each request is held to the rules of
authorization.py (who may see, propose, edit, approve, decline and audit a proposal) before
the service that carries it out (proposals.py, cards.py, audit.py) is called, and the review
page's record is read here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from countersign.application.audit import AuditService
from countersign.application.authorization import (
    Caller,
    InboxScope,
    decide_permission,
    may_decide,
    may_read,
    own_club,
    own_inbox_scope,
    own_membership,
    read_permissions,
    readable_sections,
    require_all,
    require_any,
    require_decider,
    token_name,
    visible_proposal,
    visible_proposal_in_club,
)
from countersign.application.cards import InboxCards, ProposalCards, counted
from countersign.application.errors import ForbiddenError, VouchedHereError
from countersign.application.ports import AggregateStore
from countersign.application.proposal_limit import ProposalLimiter, limited
from countersign.application.proposals import ProposalService
from countersign.application.reports import (
    ApprovalReport,
    ProposalCard,
    ProposalCreated,
    ProposalStatusReport,
    outcome_text,
)
from countersign.application.revision_problems import every_problem
from countersign.application.settlement import Settling
from countersign.application.shown_seals import Unverified
from countersign.domain.club.organization import Member, Organization, Permission
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.problems import InvalidRequestError, Problem
from countersign.domain.errors import NotFoundError
from countersign.domain.interaction import Interaction
from countersign.domain.proposal import Proposal, ProposalStatus, SupersessionReason

#: What a status says of a claim past its lease and one pass with no reconciler running, as
#: the pages say it: nothing asks the provider until an operator starts the worker.
UNATTENDED = {
    "en": (
        "Nothing is settling it: an operator must start the worker (countersign worker), "
        "which asks the provider what happened. Until then, do not do it again another way: "
        "it may already have happened."
    ),
    "fr": (
        "Rien ne la règle\u00a0: un opérateur doit démarrer le service d'arrière-plan "
        "(countersign worker), qui demande au fournisseur ce qui s'est passé. D'ici là, ne la "
        "refaites pas autrement\u00a0: elle a peut-être déjà eu lieu."
    ),
}


def _settling_state(settling: Settling) -> str:
    if not settling.overdue:
        return "waiting"
    return "unattended" if settling.unattended else "provider_silent"


@dataclass(frozen=True)
class ConversationLink:
    """The conversation a proposal came from, for the person who held it."""

    section: str
    #: The resource as the conversation's address names it: its key where its section's
    #: contracts name resources by key (a plug-in's company key), else its id.
    resource_id: str
    interaction_id: str


@dataclass(frozen=True)
class ProposalReview:
    """What a reviewer's page shows: the proposal's fields and what the caller may do."""

    record: dict[str, Any]
    may_decide: bool
    conversation: ConversationLink | None
    #: The requester's name as the club knows them ("" if they left the club).
    requester_name: str = ""
    #: Whether an assistant drafted it in the requester's own conversation.
    drafted_by_assistant: bool = False
    #: For a pending proposal: the pending proposals on the same resource that approving it
    #: would withdraw (``proposal_id``, and ``operation`` and ``preview`` when the caller
    #: may read it; ``readable`` says which).
    withdraws: tuple[dict[str, Any], ...] = ()
    #: For a proposal another one's success withdrew: that one (``proposal_id``,
    #: ``approved_at``, and ``operation`` and ``preview`` when ``readable``).
    withdrawn_by: dict[str, Any] | None = None
    #: For an executing or reconciling proposal: since when it waits for its provider's
    #: answer, and whether anything is settling it.
    settling: Settling | None = None
    #: The resource as a conversation's address names it (``ConversationLink.resource_id``).
    chat_resource: str = ""
    #: With seal keys configured: why its seals do not vouch for what is stored of it (None:
    #: they do, or no keys are held here).
    unverified: Unverified | None = None
    #: Pending, and approving it as the caller sends it back: the club's policy now asks
    #: more of it (``ProposalCards.policy_changed``).
    policy_changed: bool = False
    #: The caller requested it and may not approve it, by the policy it was frozen under or
    #: the club's policy in force (``ProposalCards.requester_barred``).
    requester_barred: bool = False


class ProposalAccess:
    """Proposals as a caller may see and act on them; the entry points ask here."""

    def __init__(
        self,
        store: AggregateStore,
        proposals: ProposalService,
        cards: ProposalCards,
        audit: AuditService,
        *,
        registry: Mapping[str, AnyContract] = REGISTRY,
        limiter: ProposalLimiter | None = None,
    ) -> None:
        self.store = store
        self.proposals = proposals
        self.cards = cards
        self.audit = audit
        self.registry = registry
        #: How many proposals a member may make in a while (None: no limit).
        self.limiter = limiter

    # -- commands -----------------------------------------------------------------------------

    def propose(
        self,
        actor: Caller,
        *,
        operation: str,
        resource_id: str,
        request: Any,
        interaction_id: str | None = None,
        origin: Mapping[str, str] | None = None,
    ) -> ProposalCreated:
        """ProposalService.propose in the caller's organization (the service holds a token to
        its scopes), as often as the limiter lets the member."""
        if actor.organization_id is None:
            raise NotFoundError("organization")
        club = str(actor.organization_id)
        with limited(self.limiter, club, actor.email, token_name(actor)):
            return self.proposals.propose(
                organization=str(actor.organization),
                actor=actor,
                operation=operation,
                resource_id=resource_id,
                request=request,
                interaction_id=interaction_id,
                origin=origin,
            )

    def revise(self, proposal_id: str, actor: str | Caller, request: Any) -> ProposalCreated:
        """ProposalService.revise: an edit is a new proposal, so it needs what proposing the
        operation needs, in the proposal's organization (NotFoundError for another's)."""
        caller = Caller.of(actor)
        proposal, member = visible_proposal(self.store, proposal_id, caller)
        permission = decide_permission(proposal.kind, self.registry)
        if permission is not None:  # an unknown kind: the service refuses to revise it
            require_all(caller, member, permission)
        club = str(proposal.organization_id)
        with limited(self.limiter, club, caller.email, token_name(caller)):
            return self.proposals.revise(str(proposal.id), caller, request)

    def revision_problems(
        self, proposal_id: str, actor: str | Caller, request: Any, left_out: list[str]
    ) -> list[Problem]:
        """Every problem of an edit's ``request``, writing nothing; ``left_out``: fields the
        caller could not read (revision_problems.py). Checks what ``revise`` checks first."""
        caller = Caller.of(actor)
        proposal, member = visible_proposal(self.store, proposal_id, caller)
        contract = self.registry.get(proposal.kind)
        if contract is None:
            return []
        require_all(caller, member, contract.permission)
        return every_problem(self.store, contract, proposal, request, left_out)

    def approve(
        self,
        proposal_id: str,
        actor: str | Caller,
        passkey_assertion: Mapping[str, Any] | None = None,
        *,
        read_unverified: bool = False,
    ) -> ApprovalReport:
        """ProposalService.approve, once ``_check_decision`` lets the caller; the proposal
        it read tells the approval what its claim will read (``seen``). ``read_unverified``:
        the approver read it as not vouched for by its seals (``ProposalReview.unverified``,
        the card's ``unverified``); VouchedHereError if this process would carry it out as it
        holds it (``approves_as_sealed``), which is not what was read."""
        caller = Caller.of(actor)
        seen = self._check_decision(proposal_id, caller)
        if read_unverified:
            require_decider(caller)  # an agent token is told it cannot decide, as ever
            if self.approves_as_sealed(proposal_id, caller):
                raise VouchedHereError
        return self.proposals.approve(proposal_id, caller, passkey_assertion, seen=seen)

    def approval_challenge(self, proposal_id: str, actor: str | Caller) -> dict[str, Any]:
        """What the caller's authenticator signs to approve the proposal: NotFoundError for
        a proposal outside the caller's club, ForbiddenError without the permission to
        decide it, AgentCannotDecideError for an agent token."""
        caller = Caller.of(actor)
        require_decider(caller)
        proposal, member = visible_proposal(self.store, proposal_id, caller)
        permission = decide_permission(proposal.kind, self.registry)
        if permission is None:
            raise NotFoundError("proposal")
        require_all(caller, member, permission)
        return self.proposals.approval_challenge(str(proposal.id), caller.email)

    def decline(
        self, proposal_id: str, actor: str | Caller, note: str | None = None
    ) -> ApprovalReport:
        """ProposalService.decline, once ``_check_decision`` lets the caller."""
        caller = Caller.of(actor)
        self._check_decision(proposal_id, caller)
        return self.proposals.decline(proposal_id, caller, note)

    def _check_decision(self, proposal_id: str, caller: Caller) -> Proposal | None:
        """For a caller acting in one organization or within a token's scopes: NotFoundError
        for a proposal outside it (as for an unknown one), MissingPermissionError without the
        permission to decide it; the proposal it read. The approve path itself answers every
        other caller (None: nothing read), and rechecks the member's permission as it decides."""
        if caller.organization is None and caller.scopes is None:
            return None
        proposal, member = visible_proposal(self.store, proposal_id, caller)
        permission = decide_permission(proposal.kind, self.registry)
        if permission is not None:  # an unknown kind: the approve path refuses it
            require_all(caller, member, permission)
        return proposal

    # -- queries ------------------------------------------------------------------------------

    def card(self, proposal_id: str, actor: str | Caller, language: str = "en") -> ProposalCard:
        """The reviewer's card; ForbiddenError without a permission to read it."""
        caller = Caller.of(actor)
        proposal, member = visible_proposal(self.store, proposal_id, caller)
        require_any(caller, member, read_permissions(proposal.kind, self.registry))
        card = self.cards.card(str(proposal.id), caller.email, language)
        if not card.withdraws:
            return card
        # What the caller may not read is named by its id only.
        withdraws = [
            withdrawn
            if may_read(caller, member, str(withdrawn["operation"]), self.registry)
            else {**withdrawn, "headline": None}
            for withdrawn in card.withdraws
        ]
        return replace(card, withdraws=withdraws)

    def status(
        self, proposal_id: str, actor: str | Caller, language: str = "en"
    ) -> ProposalStatusReport:
        """Where the execution stands; ForbiddenError without a permission to read it."""
        caller = Caller.of(actor)
        proposal, club, member = visible_proposal_in_club(self.store, proposal_id, caller)
        require_any(caller, member, read_permissions(proposal.kind, self.registry))
        outcome = proposal.outcome or {}
        message = outcome_text(proposal, language)
        settling = self.cards.settling(str(proposal.status), proposal.claimed_at)
        if settling is not None and settling.unattended:
            unattended = UNATTENDED.get(language, UNATTENDED["en"])
            message = f"{message} {unattended}" if message else unattended
        return ProposalStatusReport(
            proposal_id=str(proposal.id),
            # Past its expiry it is expired, as the card and the pages say, before the
            # sweeper records it; reading it records nothing.
            status=proposal.status_at(self.cards.clock.now()),
            outcome_kind=outcome.get("kind"),
            reconciliation_pending=proposal.status == ProposalStatus.RECONCILING,
            message=message,
            waiting_since=settling.since.isoformat() if settling is not None else None,
            settling=_settling_state(settling) if settling is not None else None,
            policy_changed=self.cards.policy_changed(proposal, club, caller.email),
            requester_barred=self.cards.told_barred(proposal, club, caller.email, language),
        )

    def record(self, proposal_id: str, actor: str | Caller) -> dict[str, Any]:
        """The proposal's fields; ForbiddenError without a permission to read it."""
        caller = Caller.of(actor)
        proposal, member = visible_proposal(self.store, proposal_id, caller)
        require_any(caller, member, read_permissions(proposal.kind, self.registry))
        return proposal_record(proposal)

    def review(self, proposal_id: str, actor: str | Caller) -> ProposalReview:
        """The fields, whether the caller may decide, and the caller's own conversation that
        led to it; ForbiddenError without a permission to read it."""
        caller = Caller.of(actor)
        proposal, member = visible_proposal(self.store, proposal_id, caller)
        require_any(caller, member, read_permissions(proposal.kind, self.registry))
        interaction = self._interaction(proposal)
        club = self.store.read(proposal.organization_id, Organization)
        requester = club.member(proposal.requested_by)
        return ProposalReview(
            # An approval the policy in force no longer counts is shown as such (counted).
            record=counted(proposal_record(proposal), self.cards.uncounted(proposal, club)),
            may_decide=may_decide(caller, member, proposal.kind, self.registry),
            conversation=self._conversation(interaction, caller, proposal.resource_key),
            chat_resource=proposal.resource_key or str(proposal.resource_id),
            requester_name=requester.name if requester is not None else "",
            drafted_by_assistant=interaction is not None
            and interaction.manager == proposal.requested_by.strip().lower(),
            withdraws=tuple(
                self._as_read_by(caller, member, withdrawn)
                for withdrawn in self.cards.withdrawn_by_approving(proposal)
            ),
            withdrawn_by=self._withdrawn_by(caller, member, proposal),
            settling=self.cards.settling(str(proposal.status), proposal.claimed_at),
            unverified=self.cards.unverified(proposal, proposal.status_at(self.cards.clock.now())),
            policy_changed=self.cards.policy_changed(proposal, club, caller.email),
            requester_barred=self.cards.requester_barred(proposal, club, caller.email),
        )

    def approves_as_sealed(self, proposal_id: str, actor: str | Caller) -> bool:
        """Whether approving the proposal here would carry it out as this process holds it
        with no warning: it is pending and ``ProposalReview.unverified`` is None (its seals
        vouch for it, or this process holds no keys to check them with); False when the
        caller may not read it (approving answers that)."""
        caller = Caller.of(actor)
        proposal, member = visible_proposal(self.store, proposal_id, caller)
        try:
            require_any(caller, member, read_permissions(proposal.kind, self.registry))
        except ForbiddenError:
            return False
        status = proposal.status_at(self.cards.clock.now())
        if status != ProposalStatus.PENDING:
            return False  # approving it carries out nothing: it answers what it holds
        return self.cards.unverified(proposal, status) is None

    def _withdrawn_by(
        self, caller: Caller, member: Member, proposal: Proposal
    ) -> dict[str, Any] | None:
        """The proposal whose success withdrew this one, as the caller may read it."""
        withdrawn = proposal.superseded_reason == SupersessionReason.WITHDRAWN
        if not withdrawn or proposal.superseded_by is None:
            return None
        try:
            by = self.store.read(proposal.superseded_by, Proposal)
        except NotFoundError:
            return None
        return {**self._as_read_by(caller, member, by), "approved_at": by.approved_at}

    def _as_read_by(self, caller: Caller, member: Member, proposal: Proposal) -> dict[str, Any]:
        """Another proposal of the same club, named only as far as the caller may read it:
        its id always, what it does (``operation``, ``preview``) with a permission to read
        its operation's proposals."""
        readable = may_read(caller, member, proposal.kind, self.registry)
        named: dict[str, Any] = {"proposal_id": str(proposal.id), "readable": readable}
        if readable:
            named.update(operation=proposal.kind, preview=proposal.preview)
        return named

    def history(
        self,
        proposal_id: str,
        actor: str | Caller,
        as_of: int | datetime | str | None = None,
        language: str = "en",
    ) -> dict[str, Any]:
        """The auditor's replay (AuditService.history); ``as_of`` may be given as text (a
        version or an ISO 8601 time), read only once the caller may see the history. With
        seal keys, its ``unverified`` says why its seals do not vouch for what is stored, as
        the card does (in ``language``; None when they do)."""
        caller = Caller.of(actor)
        proposal, member = visible_proposal(self.store, proposal_id, caller)
        require_all(caller, member, Permission.READ_AUDIT)
        moment = parse_as_of(as_of) if isinstance(as_of, str) else as_of
        # Checked as stored, in the events shown: the proposal read above may be a snapshot
        # this process holds (the one that proposed it, or read it before a change).
        document, stored = self.audit.checked_history(str(proposal.id), moment)
        return {**document, "unverified": self.cards.unverified_json(stored, language)}

    def readable_sections(self, actor: Caller) -> list[str]:
        """The sections whose proposals the caller may list in their organization."""
        return readable_sections(actor, own_membership(self.store, actor), self.registry)

    def inbox_scope(self, actor: Caller, section: str | None = None) -> InboxScope:
        """What the caller may list, and which of their own proposals a policy bars them
        from approving (``authorization.own_inbox_scope``)."""
        return own_inbox_scope(self.store, actor, section, self.registry)

    def inbox_cards(self, actor: Caller, rows: Sequence[Mapping[str, Any]]) -> InboxCards:
        """The inbox's rows (projection rows, of the caller's club) as the caller is told
        them (``ProposalCards.inbox_cards``): one read of the club a page, none per card."""
        if not rows:
            return InboxCards()
        return self.cards.inbox_cards(own_club(self.store, actor), actor.email, rows)

    # -- what a review reads ------------------------------------------------------------------

    def _interaction(self, proposal: Proposal) -> Interaction | None:
        """The conversation the proposal was made in, if it was made in one of its club's."""
        try:
            interaction = self.store.read(UUID(proposal.interaction_id), Interaction)
        except (ValueError, NotFoundError):
            return None  # proposed outside a conversation, or the id names something else
        if interaction.organization_id != proposal.organization_id:
            return None
        return interaction

    @staticmethod
    def _conversation(
        interaction: Interaction | None, caller: Caller, key: str | None
    ) -> ConversationLink | None:
        if interaction is None or interaction.manager != caller.email.strip().lower():
            return None
        return ConversationLink(
            section=interaction.section,
            resource_id=key or str(interaction.resource_id),
            interaction_id=str(interaction.id),
        )


def proposal_record(proposal: Proposal) -> dict[str, Any]:
    """The fields of a proposal, named like the browser_view card's columns."""
    return {
        "proposal_id": str(proposal.id),
        "operation": proposal.kind,
        "section": proposal.section,
        "resource_id": str(proposal.resource_id),
        "interaction_id": proposal.interaction_id,
        "status": str(proposal.status),
        "preview": proposal.preview,
        "requested_by": proposal.requested_by,
        "proposed_at": proposal.created_on,
        "expires_at": proposal.expires_at,
        "approved_by": proposal.approved_by,
        "approved_at": proposal.approved_at,
        "declined_by": proposal.declined_by,
        # A decline is the last thing that happens to a proposal: its time is the last change.
        "declined_at": proposal.modified_on if proposal.declined_by else None,
        "declined_credential": proposal.declined_credential,
        "decline_note": proposal.decline_note,
        "outcome": proposal.outcome,
        "approvals": list(proposal.approvals),
        "approvals_required": proposal.approvals_required,
        "approval_credentials": list(proposal.approver_credentials),
        "no_longer_counting": [dict(lapsed) for lapsed in proposal.lapsed_approvals],
        "policy": proposal.policy,
        "revision_of": str(proposal.revision_of) if proposal.revision_of else None,
        "superseded_by": str(proposal.superseded_by) if proposal.superseded_by else None,
        "superseded_reason": proposal.superseded_reason,
        "claimed_at": proposal.claimed_at,
        "request": proposal.request,
        "origin": proposal.origin,
        "requested_through": proposal.requested_through,
        "approval_passkeys": {
            email: passkey["name"]
            for email, passkey in zip(proposal.approvals, proposal.approval_passkeys, strict=True)
            if passkey is not None
        },
    }


#: A time whose ``+`` offset a query string turned into a space (``?as_of=...T14:00+01:00``
#: sent unencoded reads ``...T14:00 01:00``): the time, and the offset's digits.
_OFFSET_DECODED_AS_SPACE = re.compile(r"(.+[T ][0-9:.,]+) ([0-9]{2}(?::?[0-9]{2})?)")


def parse_as_of(value: str) -> int | datetime:
    """A version number or an ISO 8601 time (ASCII only: ``'¹'.isdigit()`` is True). A
    ``+`` offset that reached it as a space, as a URL's query decodes an unencoded ``+``, is
    read as the ``+`` it was."""
    text = value.strip()
    if re.fullmatch(r"[0-9]{1,9}", text):
        return int(text)
    if re.fullmatch(r"[0-9]{10,}", text):
        return 0  # beyond any version: the history answers not found
    decoded_plus = _OFFSET_DECODED_AS_SPACE.fullmatch(text)
    if decoded_plus:
        text = f"{decoded_plus[1]}+{decoded_plus[2]}"
    try:
        if not text.isascii():
            raise ValueError(text)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequestError.one("as_of", "a version number or an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
