"""Authorization: who may see and act on what, the rules every caller is held to, written once.

A caller is a person, known by email, acting either in one organization (the club a browser
session signed in to, the organization an API token belongs to) or in whichever organization
a record belongs to, if they are a member there (the command line). An API token may narrow
what its member holds to the permissions it was given (its scopes); it never widens it.

A token is also of a kind (``Credential``): an *agent token*, given to an assistant, reads,
proposes and follows its proposals, and never decides (approve, decline, edit, or change the
club's rules: ``require_decider``); an *approver token* acts for the person who holds it,
after that person decided in the service's own interface. A model's tool call made for a
person (a section assistant's turn, the MCP server, an agent framework's tool) acts as an
*assistant* (``Caller.as_assistant``): it proposes for that person and never decides either.
Neither may replace a pending proposal that someone else requested or someone approved
(``freezing.freeze``): that would decide what people are asked to approve.

Every check reads the organization's current state: a membership (``member_of``,
``membership``) is read freshly, and a non-member is told NotFoundError, exactly like an
unknown id. ``ProposalAccess`` (proposal_access.py) holds every entry point's request about
a proposal to these rules; the quorum's recheck of earlier approvals is in quorum.py.

For a proposal, every id is checked against the caller's organization before any permission
that depends on what the id names (``visible_proposal``): a malformed id, an unknown one,
another organization's proposal and a non-member's request all answer alike (NotFoundError,
or the ``not_found`` report the approve path gives) after the same work, so a foreign id
never answers "forbidden". Then:

* reading a proposal (its card, status, review) needs its operation's permission or the
  auditor's (``read_permissions``); its history needs the auditor's;
* approving or declining it needs its operation's permission (``decide_permission``; the
  approve path rechecks the member's own as it decides; an API token's scopes are checked
  first);
* proposing needs the operation's permission, in the caller's organization, within a
  token's scopes (``require_scope``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from uuid import UUID

from countersign.application.errors import (
    AgentCannotDecideError,
    CorruptRecordError,
    MissingPermissionError,
    parse_id,
)
from countersign.application.policy_recheck import OwnBarred, own_barred
from countersign.domain.club.organization import Member, Organization, Permission
from countersign.domain.contracts import REGISTRY, AnyContract, declaration, declarations
from countersign.domain.errors import NotFoundError
from countersign.domain.frozen_records import direct_init
from countersign.domain.outcomes import NotApprovableReason
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal
from countersign.domain.scope import Section


class Credential(StrEnum):
    """What a caller presented: a person's own sign-in (the pages, the command line), an API
    token of one of two kinds, or a person's sign-in as a model's tool call uses it."""

    PERSON = "person"
    AGENT_TOKEN = "agent_token"  # noqa: S105 - a kind of credential, not a secret
    APPROVER_TOKEN = "approver_token"  # noqa: S105 - a kind of credential, not a secret
    #: A model's tool call for a signed-in person (a section assistant, the MCP server over
    #: stdio, an agent framework's tool bound to a member): it proposes for them, never decides.
    ASSISTANT = "assistant"


#: Read once: an enum member read from its class goes through the metaclass's ``__getattr__``
#: hook (about 900 instructions in Python 3.11), and every approval reads these two.
_PERSON = Credential.PERSON
_AGENT_TOKEN = Credential.AGENT_TOKEN
_ASSISTANT = Credential.ASSISTANT
#: The credentials that never decide.
_UNDECIDING = frozenset({_AGENT_TOKEN, _ASSISTANT})


@direct_init
@dataclass(frozen=True)
class Caller:
    """Who is asking: ``email``; ``organization``, the slug of the club they act in (None: the
    one the record belongs to); ``scopes``, an API token's permissions (None: no token);
    ``credential``, what they presented, and ``service``, the token's name if a token."""

    email: str
    organization: str | None = None
    scopes: frozenset[str] | None = None
    credential: Credential = Credential.PERSON
    service: str | None = None

    @property
    def may_decide(self) -> bool:
        """Whether this credential may decide at all (an agent token or an assistant never
        may)."""
        return self.credential not in _UNDECIDING

    def as_assistant(self) -> Caller:
        """The same member, club and token scopes, as a model's tool call uses them: it may
        propose, and never decides (an agent token stays one; anything else is an
        assistant acting for the person who signed in)."""
        if not self.may_decide:
            return self
        return Caller(self.email, self.organization, self.scopes, _ASSISTANT, self.service)

    @property
    def recorded_credential(self) -> str:
        """How a decision records what acted: ``person``, or the token's kind and its name
        (``approver_token:billing``)."""
        if self.credential == _PERSON or not self.service:
            return str(self.credential)
        return f"{self.credential}:{self.service}"

    @classmethod
    def of(cls, actor: str | Caller) -> Caller:
        return actor if isinstance(actor, Caller) else cls(actor)  # by position: no dict

    @property
    def organization_id(self) -> UUID | None:
        if self.organization is None:
            return None
        return Organization.create_id(self.organization.strip().lower())

    def acts_in(self, organization_id: UUID) -> bool:
        """Does a record of this organization belong where the caller acts?"""
        return self.organization is None or self.organization_id == organization_id

    def may(self, member: Member, permission: str) -> bool:
        """The member holds the permission now, and the caller's token (if any) was given it."""
        return member.may(permission) and (self.scopes is None or permission in self.scopes)


def token_name(caller: Caller) -> str | None:
    """The API token a caller acts through, by name (None: the member as themselves): what
    the proposal and turn limits count apart from the person's own."""
    return None if caller.scopes is None else caller.service or "unnamed"


def require_decider(actor: str | Caller) -> None:
    """AgentCannotDecideError for an agent token: it reads, proposes and follows what it
    proposed, and never approves, declines, edits or sets the club's rules."""
    if isinstance(actor, Caller) and not actor.may_decide:
        raise AgentCannotDecideError()


def require_all(caller: Caller, member: Member, *permissions: str) -> None:
    """MissingPermissionError unless the caller may do all of it."""
    missing = [p for p in permissions if not caller.may(member, p)]
    if missing:
        raise MissingPermissionError(missing)


def require_scope(caller: Caller, permission: str) -> None:
    """MissingPermissionError unless the caller's token (if any) was given the permission:
    checked before anything of the request is read, so a token is told what it may not do
    before it is told what is wrong with the request."""
    if caller.scopes is not None and permission not in caller.scopes:
        raise MissingPermissionError([permission])


def require_any(caller: Caller, member: Member, permissions: Iterable[str]) -> None:
    """MissingPermissionError unless the caller holds at least one of the permissions."""
    wanted = list(permissions)
    if not any(caller.may(member, p) for p in wanted):
        raise MissingPermissionError(wanted, any_of=True)


def decide_permission(kind: str, registry: Mapping[str, AnyContract] = REGISTRY) -> str | None:
    """What approving or declining a proposal of this kind needs; None for an unknown kind,
    which nobody may decide (it fails closed)."""
    declared = declaration(kind, registry)
    return declared.permission if declared is not None else None


def read_permissions(kind: str, registry: Mapping[str, AnyContract] = REGISTRY) -> list[str]:
    """Reading a proposal needs its operation's permission, or the auditor's (any one)."""
    permission = decide_permission(kind, registry)
    return [Permission.READ_AUDIT] + ([permission] if permission else [])


def may_decide(
    caller: Caller, member: Member, kind: str, registry: Mapping[str, AnyContract] = REGISTRY
) -> bool:
    permission = decide_permission(kind, registry)
    return permission is not None and caller.may(member, permission)


def undecidable(
    contract: AnyContract | None, caller: Caller, member: Member
) -> NotApprovableReason | None:
    """Why ``caller`` may not decide a proposal of ``contract``'s kind: its operation is not
    enabled here (its plug-in turned off; "forbidden" sent its manager after a permission
    that no longer exists), or they lack its permission. None when they may."""
    if contract is None:
        return NotApprovableReason.OPERATION_NOT_ENABLED
    return None if caller.may(member, contract.permission) else NotApprovableReason.FORBIDDEN


def section_permissions(
    section: Section, registry: Mapping[str, AnyContract] = REGISTRY
) -> list[str]:
    """The permissions of a section's operations: any one lets a member read its proposals."""
    return sorted({d.permission for d in declarations(registry) if d.section == section})


def sections_of(registry: Mapping[str, AnyContract] = REGISTRY) -> list[Section]:
    """Every section some registered contract belongs to, in registry order."""
    return list(dict.fromkeys(d.section for d in declarations(registry)))


def readable_sections(
    caller: Caller, member: Member, registry: Mapping[str, AnyContract] = REGISTRY
) -> list[str]:
    """Sections whose proposals the caller may see: an operation's permission, or audit."""
    return [
        str(section)
        for section in sections_of(registry)
        if caller.may(member, Permission.READ_AUDIT)
        or any(caller.may(member, p) for p in section_permissions(section, registry))
    ]


# -- memberships, read freshly ---------------------------------------------------------------


def organization_by_slug(store: Repository, slug: str) -> Organization:
    return store.read(Organization.create_id(slug.strip().lower()), Organization)


def member_of(store: Repository, organization_id: UUID, email: str) -> Member:
    """The caller's membership, read freshly; NotFoundError for a non-member."""
    return membership(store.read(organization_id, Organization), email)


def membership(organization: Organization, email: str) -> Member:
    """A non-member gets NotFoundError, exactly like an unknown id would."""
    member = organization.member(email)
    if member is None:
        raise NotFoundError("not a member")
    return member


def require(member: Member, permission: str) -> None:
    """MissingPermissionError (a ForbiddenError naming the permission) unless it is held."""
    if not member.may(permission):
        raise MissingPermissionError([permission])


# -- proposals: what a caller may see of them ------------------------------------------------


def visible_proposal(
    store: Repository, proposal_id: str, caller: Caller
) -> tuple[Proposal, Member]:
    """The proposal and the caller's membership of its organization; NotFoundError alike for
    a malformed or unknown id, another organization's proposal (a damaged one too:
    ``damaged_or_unknown``) and a non-member."""
    proposal, _, member = visible_proposal_in_club(store, proposal_id, caller)
    return proposal, member


def visible_proposal_in_club(
    store: Repository, proposal_id: str, caller: Caller
) -> tuple[Proposal, Organization, Member]:
    """``visible_proposal``, with the organization it read for the membership."""
    # One read, whatever the id names: an unknown id and another organization's proposal
    # are refused after the same work.
    pid = parse_id(proposal_id, "proposal")
    try:
        proposal = store.read(pid, Proposal)
    except CorruptRecordError as damaged:
        raise damaged_or_unknown(store, caller, pid, damaged) from None
    if not caller.acts_in(proposal.organization_id):
        raise NotFoundError("proposal")
    club = store.read(proposal.organization_id, Organization)
    return proposal, club, membership(club, caller.email)


def damaged_or_unknown(
    store: Repository, caller: Caller, proposal_id: UUID, damaged: CorruptRecordError
) -> CorruptRecordError | NotFoundError:
    """What a caller is told of a proposal whose stored record does not read: the damage
    itself (``damaged``, with its reference) when the record still says which club it
    belongs to (``CorruptRecordError.clubs``, read from its stored bytes alone) and the
    caller acts there as a member; otherwise NotFoundError, as for an unknown id. So another
    club's member or token learns nothing of the id, as of any other club's proposal; and
    a record that no longer says whose it is, is no one's to be told of (fail closed: its
    damage is in the log under the reference, and ``audit verify`` names it)."""
    club = damaged.clubs.get(proposal_id)
    if club is None or not caller.acts_in(club):
        return NotFoundError("proposal")
    try:
        member_of(store, club, caller.email)
    except NotFoundError:
        return NotFoundError("proposal")
    return damaged


def own_membership(store: Repository, caller: Caller) -> Member:
    """The caller's membership of the organization they act in (NotFoundError without one)."""
    return membership(own_club(store, caller), caller.email)


def own_club(store: Repository, caller: Caller) -> Organization:
    """The organization the caller acts in, read freshly (NotFoundError without one)."""
    if caller.organization_id is None:
        raise NotFoundError("organization")
    return store.read(caller.organization_id, Organization)


def may_read(
    caller: Caller, member: Member, kind: str, registry: Mapping[str, AnyContract] = REGISTRY
) -> bool:
    """Whether the caller may read proposals of this kind (``read_permissions``)."""
    return any(caller.may(member, p) for p in read_permissions(kind, registry))


def readers_of(section: str, registry: Mapping[str, AnyContract] = REGISTRY) -> list[str]:
    """Who may read a section's proposals: its operations' permissions, or the auditor."""
    return [Permission.READ_AUDIT, *section_permissions(Section(section), registry)]


@dataclass(frozen=True)
class InboxScope:
    """The proposals a caller may list: one organization, the sections of it the caller may
    read (None: every section), and within them the operations whose proposals the caller
    may read (None: every one of those sections'). A section is listed to whoever holds one
    of its operations' permissions, but a proposal is read only with its own operation's
    permission or the auditor's (``read_permissions``), so a list shows no proposal whose
    own page would refuse the caller. ``decidable``: the operations whose proposals the
    caller may also decide (their own permission, and a credential that decides); the
    others they may read await someone else's decision."""

    organization_id: str
    sections: tuple[str, ...] | None
    operations: tuple[str, ...] | None = None
    decidable: tuple[str, ...] = ()
    barred: OwnBarred | None = None
    """The caller's own proposals a policy bars them from approving: whatever their
    operation, they await another manager's decision."""
    enabled: tuple[str, ...] | None = None
    """The operations enabled here (registered): a pending proposal of any other (its plug-in
    turned off) is decided by nobody, and the inbox counts it apart (``ReadModels.inbox``)."""

    @property
    def pending_operations(self) -> tuple[str, ...] | None:
        """``operations``, for the lists of pending proposals: of the enabled ones only. An
        auditor reads every operation's, but nobody decides a proposal of one not enabled
        here (a plug-in turned off), so no list offers it as awaiting a decision: the inbox
        counts those apart (``ReadModels.inbox``'s ``not_enabled``)."""
        return self.enabled if self.operations is None else self.operations

    @property
    def section(self) -> str | None:
        """The one section listed, when only one is."""
        return self.sections[0] if self.sections is not None and len(self.sections) == 1 else None


def inbox_scope(
    caller: Caller,
    member: Member,
    section: str | None = None,
    registry: Mapping[str, AnyContract] = REGISTRY,
    club: Organization | None = None,
) -> InboxScope:
    """What the caller may list: ``section`` if they may read it; without one, every section
    they may read (MissingPermissionError if that is none). With ``club`` (theirs), which of
    their own proposals its policies bar them from approving (``InboxScope.barred``)."""
    readable = readable_sections(caller, member, registry)
    assert caller.organization_id is not None  # its member was found there
    organization_id = str(caller.organization_id)
    if section is not None:
        if section not in readable:
            raise MissingPermissionError(readers_of(section, registry), any_of=True)
        listed: tuple[str, ...] | None = (section,)
    else:
        sections = sections_of(registry)
        if not readable:
            everyone = [p for s in sections for p in readers_of(s, registry)]
            raise MissingPermissionError(everyone, any_of=True)
        listed = None if len(readable) == len(sections) else tuple(readable)
    readable_operations = _readable_operations(caller, member, registry)
    decidable = tuple(
        d.kind for d in declarations(registry) if may_decide_as(caller, member, d.permission)
    )
    barred = None if club is None else own_barred(club, caller.email)
    enabled = tuple(d.kind for d in declarations(registry))
    return InboxScope(organization_id, listed, readable_operations, decidable, barred, enabled)


def own_inbox_scope(
    store: Repository,
    caller: Caller,
    section: str | None = None,
    registry: Mapping[str, AnyContract] = REGISTRY,
) -> InboxScope:
    """``inbox_scope`` in the caller's own club, read once, with which of their own
    proposals its policies bar them from approving (``InboxScope.barred``)."""
    club = own_club(store, caller)
    return inbox_scope(caller, membership(club, caller.email), section, registry, club)


def may_decide_as(caller: Caller, member: Member, permission: str) -> bool:
    """Whether the caller may decide proposals that need ``permission``: a credential that
    decides (``require_decider``), and the permission held (within a token's scopes)."""
    return caller.may_decide and caller.may(member, permission)


def _readable_operations(
    caller: Caller, member: Member, registry: Mapping[str, AnyContract]
) -> tuple[str, ...] | None:
    """The operations whose proposals the caller may read; None (every one, registered or
    not) for an auditor only: a proposal of an operation no longer registered (a plug-in
    turned off) is read with ``audit.read`` alone (``read_permissions``), so whoever holds
    every registered operation's permission is still listed those operations only."""
    if caller.may(member, Permission.READ_AUDIT):
        return None
    return tuple(d.kind for d in declarations(registry) if caller.may(member, d.permission))
