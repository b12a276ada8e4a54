"""The read side of a proposal: the reviewer's card, what a revision changed, what approving
it would withdraw, and how an execution's wait for its provider stands."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from countersign.application.authorization import member_of
from countersign.application.errors import parse_id
from countersign.application.policy_recheck import (
    NOT_RAISED,
    REQUESTER_BARRED,
    Raised,
    barred,
    raised,
    raised_over,
    sends_back,
)
from countersign.application.ports import (
    AggregateStore,
    Clock,
    SharedSnapshots,
    SweeperPass,
    SweeperPasses,
)
from countersign.application.quorum import display_name
from countersign.application.reports import ProposalCard, outcome_text
from countersign.application.settlement import DEFAULT_EVERY, RECONCILE, Settling, settling_of
from countersign.application.shown_seals import Unverified, unverified
from countersign.application.supersession import siblings
from countersign.domain.club.organization import Organization
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.presentation import preview_changes
from countersign.domain.errors import CountersignError, NotFoundError
from countersign.domain.messages import (
    lapsed_approval_message,
    proposal_headline,
    requester_barred_message,
)
from countersign.domain.proposal import Proposal, ProposalStatus
from countersign.domain.proposal_status import status_at
from countersign.domain.seals import SealKeys


def counted(record: Mapping[str, Any], uncounted: str | None) -> dict[str, Any]:
    """``record``'s approvals (``approvals``, ``approval_credentials``, ``no_longer_counting``
    and any ``approval_passkeys``, as ``proposal_record`` and the inbox's rows name them)
    with ``uncounted``'s moved to ``no_longer_counting`` as ``requester_barred``, as the next
    approval that goes ahead records it (``ProposalCards.uncounted``); unchanged for None."""
    if uncounted is None:
        return dict(record)
    approvals = list(record.get("approvals") or [])
    credentials = list(record.get("approval_credentials") or [])
    keep = [i for i, email in enumerate(approvals) if email != uncounted]
    moved = {"approved_by": uncounted, "reason": REQUESTER_BARRED}
    passkeys = record.get("approval_passkeys")
    return {
        **record,
        "approvals": [approvals[i] for i in keep],
        "approval_credentials": [credentials[i] for i in keep if i < len(credentials)],
        "no_longer_counting": [*(record.get("no_longer_counting") or []), moved],
        **(
            {}
            if passkeys is None
            else {"approval_passkeys": {k: v for k, v in passkeys.items() if k != uncounted}}
        ),
    }


@dataclass(frozen=True)
class InboxCards:
    """The inbox's rows (projection rows, of one club) as a reader is told them, read with
    one read of the club and none per card."""

    counted: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """By id, the rows whose requester's approval the policy in force no longer counts,
    moved to ``no_longer_counting`` (``counted``), as their card counts them."""
    policy_changed: frozenset[str] = frozenset()
    """The ids of the pending rows that approving as the reader sends back
    (``ProposalCards.policy_changed``)."""
    requester_barred: frozenset[str] = frozenset()
    """The ids of the pending rows the reader requested and may not approve, by the policy
    frozen with them or the one in force (``ProposalCards.requester_barred``)."""

    def card(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """``row`` as its reader is told it: its approvals counted as its card counts them."""
        return self.counted.get(str(row["proposal_id"])) or dict(row)


def _raised_row(row: Mapping[str, Any], club: Organization) -> Raised:
    """``policy_recheck.raised_over`` for an inbox row (a projection row)."""
    amount = row.get("amount_cents")
    return raised_over(str(row["operation"]), row.get("policy"), club, lambda: amount)


def shown_status(status: str, expires_at: datetime | None, now: datetime) -> str:
    """A proposal's status as its readers are told it at ``now``, from its record (the
    pages' lists and review): ``proposal_status.status_at``, as the card and status say it."""
    return status_at(status, expires_at, now)


class ProposalCards:
    """Proposals as their reviewers read them."""

    def __init__(
        self,
        store: AggregateStore,
        clock: Clock,
        *,
        registry: Mapping[str, AnyContract] = REGISTRY,
        lease: timedelta = timedelta(seconds=60),
        passes: SweeperPasses | None = None,
        seals: SealKeys | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.registry = registry
        self.lease = lease
        #: Where the sweepers' schedules record their passes (None: nobody records them, so
        #: no reconciler is known to run).
        self.passes = passes
        #: The seal keys held here (None: none): what a card shows is checked against them.
        self.seals = seals

    def card(self, proposal_id: str, actor: str, language: str = "en") -> ProposalCard:
        """The reviewer's card. NotFoundError for an unknown id or another tenant's."""
        try:
            proposal = self.store.get(parse_id(proposal_id, "proposal"), Proposal)
        except NotFoundError:
            raise NotFoundError("proposal") from None
        try:
            member_of(self.store, proposal.organization_id, actor)
        except NotFoundError:
            raise NotFoundError("proposal") from None  # another club's: as an unknown id
        club = self.store.read(proposal.organization_id, Organization)
        now = self.clock.now()
        status = proposal.status_at(now)
        unvouched = self.unverified(proposal, status)
        changed = self.policy_changed(proposal, club, actor)
        uncounted = self.uncounted(proposal, club)
        counting = counted(
            {
                "approvals": list(proposal.approvals),
                "approval_credentials": list(proposal.approver_credentials),
                "no_longer_counting": [dict(lapsed) for lapsed in proposal.lapsed_approvals],
            },
            uncounted,
        )
        return ProposalCard(
            proposal_id=str(proposal.id),
            operation=proposal.kind,
            section=proposal.section,
            resource_id=str(proposal.resource_id),
            requested_by=proposal.requested_by,
            interaction_id=proposal.interaction_id,
            # Past its expiry it is expired, as the pages say, before the sweeper records it.
            status=status,
            preview=proposal.preview,
            expires_at=proposal.expires_at,
            approved_by=proposal.approved_by,
            approved_at=proposal.approved_at,
            declined_by=proposal.declined_by,
            declined_credential=proposal.declined_credential,
            decline_note=proposal.decline_note,
            proposed_at=proposal.created_on,
            outcome=proposal.outcome,
            message=outcome_text(proposal, language),
            time_zone=club.time_zone,
            approvals=counting["approvals"],
            approvals_required=proposal.approvals_required,
            approval_credentials=counting["approval_credentials"],
            no_longer_counting=self._no_longer_counting(
                proposal, club, language, counting["no_longer_counting"]
            ),
            policy=proposal.policy,
            revision_of=str(proposal.revision_of) if proposal.revision_of else None,
            superseded_by=str(proposal.superseded_by) if proposal.superseded_by else None,
            superseded_reason=proposal.superseded_reason,
            withdraws=[
                {
                    "proposal_id": str(withdrawn.id),
                    "operation": withdrawn.kind,
                    "headline": proposal_headline(withdrawn.kind, withdrawn.preview, language),
                }
                # Sent back instead of carried out, approving it withdraws nothing.
                for withdrawn in ([] if changed else self.withdrawn_by_approving(proposal))
            ],
            changes=self.changes(proposal, language),
            origin=proposal.origin,
            requested_through=proposal.requested_through,
            approval_passkeys=[
                {"approved_by": email, "passkey": passkey["name"]}
                for email, passkey in zip(
                    proposal.approvals, proposal.approval_passkeys, strict=True
                )
                if passkey is not None and email != uncounted
            ],
            unverified=None if unvouched is None else unvouched.to_json(language),
            policy_changed=changed,
            requester_barred=self.told_barred(proposal, club, actor, language),
        )

    def policy_changed(self, proposal: Proposal, club: Organization, reader: str) -> bool:
        """Whether ``proposal`` is pending and approving it as ``reader`` sends it back:
        ``club``'s policy in force asks more of it than the one it was frozen under, and the
        reader is not a requester it bars (``policy_recheck.sends_back``, the approve path's
        own check). Approving it then executes nothing, and no passkey is asked for.
        ``club``: its organization, which every reader has read."""
        found = self._raised(proposal, club)
        return sends_back(proposal.requested_by, proposal.policy, found, reader)

    def requester_barred(self, proposal: Proposal, club: Organization, reader: str) -> bool:
        """Whether ``reader`` requested the pending ``proposal`` and may not approve it, by
        the policy it was frozen under or the club's policy in force."""
        found = self._raised(proposal, club)
        return barred(proposal.requested_by, proposal.policy, found, reader)

    def told_barred(
        self, proposal: Proposal, club: Organization, reader: str, language: str = "en"
    ) -> str | None:
        """``requester_barred``, as the card and status tell it to ``reader`` in
        ``language`` while the proposal is pending: the sentence that says so, or None."""
        pending = proposal.status_at(self.clock.now()) == ProposalStatus.PENDING
        if not pending or not self.requester_barred(proposal, club, reader):
            return None
        return requester_barred_message(language)

    def uncounted(self, proposal: Proposal, club: Organization) -> str | None:
        """The requester, when the pending ``proposal`` has an approval of theirs that the
        club's policy in force, barring them since, no longer counts: the next approval that
        goes ahead records it so (``ApprovalLapsed``, ``requester_barred``), and its readers
        count it so before (``counted``). None otherwise."""
        requester = proposal.requested_by
        if requester in proposal.approvals and self._raised(proposal, club).requester_barred:
            return requester
        return None

    def _raised(self, proposal: Proposal, club: Organization) -> Raised:
        contract = self.registry.get(proposal.kind)
        if contract is None or proposal.status_at(self.clock.now()) != ProposalStatus.PENDING:
            return NOT_RAISED
        return raised(proposal, club, contract)

    def inbox_cards(
        self, club: Organization, reader: str, rows: Iterable[Mapping[str, Any]]
    ) -> InboxCards:
        """The inbox's rows (projection rows, of ``club``) as ``reader`` is told them: the
        pending ones whose requester the policy in force bars since, with that requester's
        approval counted out (``uncounted``), and those approving as ``reader`` sends back
        (``policy_changed``), and those ``reader`` requested and may not approve
        (``requester_barred``), from each row's frozen ``policy`` and, for one frozen under
        no policy, its ``amount_cents``. No read per card."""
        now = self.clock.now()
        counted_rows: dict[str, dict[str, Any]] = {}
        changed: set[str] = set()
        own_barred: set[str] = set()
        for row in rows:
            status = status_at(str(row.get("status")), row.get("expires_at"), now)
            if status != ProposalStatus.PENDING:
                continue
            frozen, requester = row.get("policy"), str(row["requested_by"])
            found = _raised_row(row, club)
            if barred(requester, frozen, found, reader):
                own_barred.add(str(row["proposal_id"]))
            if found is NOT_RAISED:
                continue
            if sends_back(requester, frozen, found, reader):
                changed.add(str(row["proposal_id"]))
            if found.requester_barred and requester in (row.get("approvals") or ()):
                counted_rows[str(row["proposal_id"])] = counted(row, requester)
        return InboxCards(counted_rows, frozenset(changed), frozenset(own_barred))

    def unverified(self, proposal: Proposal, status: str) -> Unverified | None:
        """Why ``proposal``'s seals do not vouch for what is stored of it, as its readers
        are told (``status``: as they are told it now); None when they do, or no keys are
        held here."""
        return unverified(self.seals, proposal, status == ProposalStatus.PENDING)

    def unverified_json(self, proposal: Proposal, language: str = "en") -> dict[str, Any] | None:
        """``unverified`` as a card or a history says it (``Unverified.to_json``), now."""
        found = self.unverified(proposal, proposal.status_at(self.clock.now()))
        return None if found is None else found.to_json(language)

    @staticmethod
    def _no_longer_counting(
        proposal: Proposal, club: Organization, language: str, lapsed_approvals: list[Any]
    ) -> list[dict[str, str]]:
        return [
            {
                **lapsed,
                "message": lapsed_approval_message(
                    proposal.kind,
                    display_name(club, lapsed["approved_by"]),
                    lapsed["reason"],
                    language,
                ),
            }
            for lapsed in lapsed_approvals
        ]

    def changes(self, proposal: Proposal, language: str = "en") -> list[dict[str, str]]:
        """What a revision changed against the proposal it revised, field by field, as
        people read it (none for a proposal that revised nothing)."""
        if proposal.revision_of is None:
            return []
        contract = self.registry.get(proposal.kind)
        try:
            original = self.store.get(proposal.revision_of, Proposal)
        except NotFoundError:
            return []
        if contract is None:
            return []
        return [
            {"field": c.key, "label": c.label, "before": c.before, "after": c.after}
            for c in preview_changes(
                contract.preview_fields, original.preview, proposal.preview, language
            )
        ]

    def withdrawn_by_approving(self, proposal: Proposal) -> list[Proposal]:
        """The pending proposals that approving ``proposal`` would withdraw, were it carried
        out now: what its contract says a success would retire (``would_retire``), judged on
        the facts as they are. The review warns of them before anyone approves. None for a
        proposal that is not pending, nor expired ones, which nobody can approve anyway."""
        contract = self.registry.get(proposal.kind)
        if proposal.status_at(self.clock.now()) != ProposalStatus.PENDING or contract is None:
            return []
        snapshots = SharedSnapshots(self.store)
        try:
            arguments = contract.decode_arguments(proposal.arguments)
            retired = contract.would_retire(arguments, contract.load(proposal.scope, snapshots))
        except CountersignError:
            return []  # approving it fails closed, and withdraws nothing
        now = self.clock.now()
        withdrawn = []
        for sibling_id in siblings(snapshots, proposal, retired):
            with contextlib.suppress(NotFoundError):
                sibling = self.store.read(sibling_id, Proposal)
                if sibling.status == ProposalStatus.PENDING and not sibling.is_expired_at(now):
                    withdrawn.append(sibling)
        return withdrawn

    def settling(self, status: str, claimed_at: datetime | None) -> Settling | None:
        """How an executing or reconciling proposal's wait for its provider's answer stands
        (since when, whether it is overdue, whether a reconciler runs); None for any other."""
        if status not in (ProposalStatus.EXECUTING, ProposalStatus.RECONCILING):
            return None
        if claimed_at is None:
            return None
        return settling_of(claimed_at, self.clock.now(), self.lease, self._last_reconcile())

    def overdue_claims_before(self) -> datetime:
        """Proposals claimed by this moment and still executing or reconciling are overdue
        (``settling``): they need someone's attention."""
        last = self._last_reconcile()
        every = last.every if last is not None else DEFAULT_EVERY
        return self.clock.now() - self.lease - every

    def _last_reconcile(self) -> SweeperPass | None:
        return self.passes.last(RECONCILE) if self.passes is not None else None
