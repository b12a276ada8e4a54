"""A conversation as its manager may see it: what it is about, and what was said and proposed.

``open_scope`` is the one check of who may talk to a section's assistant about a resource;
``check_owned`` the one check of whose conversation an interaction is. The assistant's turn
and every page that shows a conversation go through both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from countersign.application.assistant.sections import SectionAssistant
from countersign.application.authorization import (
    Caller,
    Credential,
    membership,
    organization_by_slug,
    require_any,
)
from countersign.application.errors import CorruptRecordError, UnknownOperationError, parse_id
from countersign.application.ports import AggregateStore, SharedSnapshots
from countersign.application.proposal_access import proposal_record
from countersign.domain.club.organization import Member, Organization
from countersign.domain.contracts.problems import InvalidRequestError, Problem
from countersign.domain.errors import NotFoundError
from countersign.domain.handback import reason_text
from countersign.domain.interaction import Interaction
from countersign.domain.outcomes import RevisionReason, is_already_so
from countersign.domain.proposal import Proposal, ProposalStatus
from countersign.domain.scope import Scope, Section


@dataclass(frozen=True)
class OpenScope:
    """A section's assistant, about a resource of the caller's organization."""

    assistant: SectionAssistant
    organization: Organization
    member: Member
    scope: Scope


@dataclass(frozen=True)
class LastOutcome:
    """Why the conversation's last proposal was not executed: it ``expired``, or a revision
    is required for ``reason`` (``already_so``: because what it asked for already holds)."""

    expired: bool
    reason: RevisionReason | None
    already_so: bool = False


@dataclass(frozen=True)
class ConversationView:
    """One conversation for its manager, in order: ``timeline`` entries are dicts with a
    ``kind`` of manager, model or application (with ``text``), tool (a read tool's
    ``name``) or card (a ``proposal`` record, after the message that presents it)."""

    section: str
    resource_id: str
    interaction_id: str | None
    timeline: list[dict[str, Any]]
    expired: bool
    revision: str | None  # the application's reason, in the language asked for
    #: The revision's reason is that what the proposal asked for already holds.
    already_so: bool = False
    #: The resource's key where its section's contracts name resources by key (a plug-in's
    #: company key): what the conversation's address names it by. None: by ``resource_id``.
    resource_key: str | None = None
    #: What started it (``Interaction.started_through``): ``person``, a token's kind and name
    #: (``agent_token:ops-bot``), or None (before it was recorded). In a token's conversation
    #: every message under the manager's name is the token's, never the person's.
    started_through: str | None = None


def section_assistant(
    assistants: Mapping[Section, SectionAssistant], section: str
) -> SectionAssistant:
    try:
        return assistants[Section(section)]
    except KeyError:
        raise UnknownOperationError(f"no assistant for section {section[:40]!r}") from None


def open_scope(
    store: AggregateStore,
    assistants: Mapping[Section, SectionAssistant],
    organization: str,
    caller: Caller,
    section: str,
    resource_id: str,
) -> OpenScope:
    """UnknownOperationError for a section without an assistant; NotFoundError for an
    unknown organization or a non-member; then ForbiddenError unless the caller may propose
    at least one of its contracts; then NotFoundError for a resource that is not the
    organization's. Who may not use the assistant learns nothing of its resources (an
    order's id is made from its number: answering 404 for an unknown one and 403 for an
    existing one told anyone which order numbers exist). The assistant it opens offers only
    the contracts the caller may propose."""
    assistant = section_assistant(assistants, section)
    org = organization_by_slug(store, organization)
    member = membership(org, caller.email)
    require_any(caller, member, (contract.permission for contract in assistant.contracts))
    # A section's resource is named as its contracts name theirs (a key, or an id).
    keyed = [c for c in assistant.contracts if c.resource_namespace is not None]
    scope = (
        keyed[0].scope(org.id, resource_id)
        if keyed
        else Scope(org.id, assistant.section, parse_id(resource_id, "resource"))
    )
    for contract in assistant.contracts:
        contract.load(scope, store)  # NotFoundError unless it is this organization's
    offered = assistant.for_holder(lambda permission: caller.may(member, permission))
    return OpenScope(offered, org, member, scope)


def club_records(
    store: AggregateStore,
    assistants: Mapping[Section, SectionAssistant],
    organization_id: UUID,
    known: frozenset[str] = frozenset(),
) -> frozenset[str]:
    """The sections with one record per club (``club_resource``: the roster, the broadcast
    form) whose record ``organization_id`` holds. A club registered with `countersign org
    create` holds none until its business application makes them, and the pages offered
    assistants that opened on "Not found". ``known``: sections not read again (held already)."""
    held = set()
    for section, assistant in assistants.items():
        if assistant.club_resource is None or not assistant.contracts or section in known:
            continue
        scope = Scope(organization_id, section, assistant.club_resource(organization_id))
        try:
            assistant.contracts[0].load(scope, SharedSnapshots(store))
        except NotFoundError:
            continue
        except CorruptRecordError:
            # Held, but damaged: its own page says so, with the reference (logged as it was
            # raised). Not every page of the club, the inbox with its pending work included.
            pass
        held.add(str(section))
    return frozenset(held)


def may_open(
    store: AggregateStore,
    assistants: Mapping[Section, SectionAssistant],
    organization: str,
    caller: Caller,
    section: str,
) -> bool:
    """Whether ``caller`` may talk to ``section``'s assistant in ``organization`` at all
    (a member holding a permission one of its contracts needs), whatever the resource: what
    ``open_scope`` checks before it looks at one."""
    assistant = section_assistant(assistants, section)
    try:
        member = membership(organization_by_slug(store, organization), caller.email)
    except NotFoundError:
        return False
    return any(caller.may(member, contract.permission) for contract in assistant.contracts)


def check_owned(interaction: Interaction, scope: Scope, manager: str) -> Interaction:
    """The interaction if it is this manager's conversation about this resource; any other
    (another organization's, another manager's, about another resource) is NotFoundError."""
    same = (
        interaction.organization_id == scope.organization_id
        and interaction.section == str(scope.section)
        and interaction.resource_id == scope.resource_id
        and interaction.manager == manager
    )
    if not same:
        raise NotFoundError("conversation")
    return interaction


def may_continue(interaction: Interaction, caller: Caller) -> Interaction:
    """The interaction if ``caller`` may add a turn to it; else NotFoundError, as for another
    manager's conversation.

    A token speaks only in the conversations it started: an agent's words added to the
    person's own conversation were shown under "You" and sent to the model as the person's
    earlier words. For the same reason the person does not continue a token's conversation
    (its words would reach the model as theirs, and theirs would be shown as the token's):
    they read it, and their message starts a conversation of their own. A conversation
    started before its credential was recorded is continued by the person only."""
    presented = caller.recorded_credential
    if interaction.started_through == presented:
        return interaction
    if presented == Credential.PERSON and interaction.started_through is None:
        return interaction
    raise NotFoundError("conversation")


#: The most turns one conversation holds. Each turn loads the whole conversation, and the chat
#: page shows all of it: an agent token that kept one conversation going at its turn limit
#: (20 a minute) made every turn of it slower than the last (35 ms at 10,000 turns, on a
#: stream of 50,000 events), without end. A person starts a new conversation for more.
MAX_TURNS = 200


#: What refusing a message to a full conversation says, field ``interaction_id``.
CONVERSATION_FULL = (
    f"this conversation holds its {MAX_TURNS} messages, the most one may: nothing was sent; "
    "start a new conversation (send the message without interaction_id)"
)


class ConversationFullError(InvalidRequestError):
    """The conversation named already holds ``MAX_TURNS`` turns: the message is refused
    before anything is recorded, counted or asked of the model; a new conversation takes
    it."""

    def __init__(self) -> None:
        super().__init__([Problem(field="interaction_id", message=CONVERSATION_FULL)])


def may_add_turn(interaction: Interaction) -> Interaction:
    """The interaction, if it holds fewer than ``MAX_TURNS`` turns; ConversationFullError
    otherwise."""
    if interaction.turns >= MAX_TURNS:
        raise ConversationFullError()
    return interaction


def last_outcome(store: AggregateStore, interaction: Interaction) -> LastOutcome | None:
    """The conversation's last proposal, if it ended without being executed."""
    last = interaction.last_proposal_id
    if last is None:
        return None
    proposal = _proposal(store, interaction, last)
    if proposal is None:
        return None
    if proposal.status == ProposalStatus.EXPIRED:
        return LastOutcome(expired=True, reason=None)
    outcome = proposal.outcome or {}
    if outcome.get("kind") != "revision_required":
        return None
    reason = RevisionReason.model_validate(outcome["reason"])
    return LastOutcome(expired=False, reason=reason, already_so=is_already_so(outcome))


def conversation_view(
    store: AggregateStore, scope: Scope, interaction: Interaction | None, language: str
) -> ConversationView:
    """The conversation (an owned one: see ``check_owned``) as its manager reads it."""
    timeline = _timeline(store, interaction) if interaction is not None else []
    last = last_outcome(store, interaction) if interaction is not None else None
    return ConversationView(
        section=str(scope.section),
        resource_id=str(scope.resource_id),
        interaction_id=str(interaction.id) if interaction is not None else None,
        timeline=timeline,
        expired=last is not None and last.expired,
        revision=(
            reason_text(last.reason, language)
            if last is not None and last.reason is not None
            else None
        ),
        already_so=last is not None and last.already_so,
        resource_key=scope.key,
        started_through=interaction.started_through if interaction is not None else None,
    )


def _timeline(store: AggregateStore, interaction: Interaction) -> list[dict[str, Any]]:
    """The conversation in order, each proposal card after the message that presents it."""
    entries: list[dict[str, Any]] = []
    cards: list[dict[str, Any]] = []
    for event in store.history(interaction.id):
        fields = event.fields
        if event.type == "ManagerMessaged":
            entries.append({"kind": "manager", "text": str(fields.get("text", ""))})
        elif event.type == "AssistantReplied":
            author = "application" if fields.get("author") == "application" else "model"
            entries.append({"kind": author, "text": str(fields.get("text", ""))})
            if author == "application":
                entries += cards
                cards = []
        elif event.type == "ToolCalled" and fields.get("outcome") == "read":
            entries.append({"kind": "tool", "name": str(fields.get("name", ""))})
        elif event.type == "ProposalCreated":
            proposal = _proposal(store, interaction, str(fields.get("proposal_id", "")))
            if proposal is not None:
                cards.append({"kind": "card", "proposal": proposal_record(proposal)})
        elif event.type == "TurnEnded":
            entries += cards
            cards = []
    return entries + cards


def _proposal(store: AggregateStore, interaction: Interaction, proposal_id: str) -> Proposal | None:
    """A proposal of the conversation's organization, or None."""
    try:
        proposal = store.read(UUID(proposal_id.strip()), Proposal)
    except (ValueError, NotFoundError):
        return None
    return proposal if proposal.organization_id == interaction.organization_id else None
