"""The operation-contract base: the shared shape every operation module fills in.

A contract owns, for one operation kind: the model-facing ``Request``, default resolution
and invalid combinations (``prepare``), the frozen ``Arguments`` and ``Preview``, the
revalidator, the executor, the typed ``Result``, and how it reads for people (title, preview
labels, headline, success and revision-reason sentences) and for the assistant that proposes
it. The lifecycle, approval identity, outcome semantics and audit are shared and live elsewhere.
The model-facing request's base, ``ContractRequest``, is in ``request_model`` and is
imported from here as well.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Generic, TypeVar, get_args, get_origin
from uuid import UUID

from countersign.domain.contracts.findings import RuleBrokenError
from countersign.domain.contracts.model_calls import validated
from countersign.domain.contracts.presentation import (
    APPROVE,
    EFFECT_UNAVAILABLE,
    EFFECT_UNCERTAIN,
    DemoScene,
    Localized,
    PreviewField,
    RequestField,
)
from countersign.domain.contracts.problems import InvalidRequestError, Problem
from countersign.domain.contracts.request_errors import parse_request
from countersign.domain.contracts.request_model import ContractRequest as ContractRequest
from countersign.domain.errors import CountersignError, NotFoundError
from countersign.domain.frozen_records import direct_init
from countersign.domain.money import format_money
from countersign.domain.outcomes import ExecutionContract, RevisionReason
from countersign.domain.ports import EffectResponse, Repository
from countersign.domain.scope import Scope, Section, keyed_resource_id
from countersign.domain.uuids import parse
from eventsourcing.domain import Aggregate
from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
)


class Frozen(BaseModel):
    """Base of stored arguments, previews and results: immutable, exact."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RevisionNeededError(CountersignError):
    """Raised when current state no longer proves the preview; nothing may execute.
    ``already_so``: because what the proposal asks for already holds (``Finding``)."""

    def __init__(self, code: str, *, already_so: bool = False, **params: str | int | bool) -> None:
        super().__init__(code)
        self.reason = RevisionReason(code=code, params=params)
        self.already_so = already_so


class UndecodableContractError(CountersignError):
    """Raised when stored arguments do not decode into the contract's types."""


@dataclass(frozen=True)
class Effect:
    """One request to an outside system, as a contract describes it: the provider it goes
    to (by the name it is registered under), the idempotency key that makes it safe to ask
    again and to look up later, and the request itself."""

    provider: str
    idempotency_key: str
    request: Frozen

    def payload(self) -> dict[str, Any]:
        """The request as the provider receives it: plain JSON-like values."""
        return self.request.model_dump(mode="json")


class Facts(ABC):
    """The freshly loaded aggregates a contract reads and changes."""

    @abstractmethod
    def aggregates(self) -> list[Aggregate]:
        """Every aggregate to save with the proposal, so one commit covers them all."""


RequestT = TypeVar("RequestT", bound=ContractRequest)
ArgumentsT = TypeVar("ArgumentsT", bound=Frozen)
PreviewT = TypeVar("PreviewT", bound=Frozen)
ResultT = TypeVar("ResultT", bound=Frozen)
FactsT = TypeVar("FactsT", bound=Facts)


@direct_init
@dataclass(frozen=True)
class Prepared(Generic[ArgumentsT, PreviewT]):
    """Frozen arguments and the preview built from the same validated facts."""

    arguments: ArgumentsT
    preview: PreviewT


class Siblings(StrEnum):
    """The pending proposals on a resource that a success may retire (``retires``)."""

    SAME_OPERATION = "same_operation"
    """This operation's proposals about other subjects of the resource (the order's other
    discounts, once the payment is exhausted)."""
    OTHER_OPERATIONS = "other_operations"
    """Every other operation's proposals on the resource (a cancellation's refund, once a
    discount refund changed the balance)."""


ALL_SIBLINGS = frozenset(Siblings)


#: What every contract sets, with what it must be (``missing_parts``): the parts the base class
#: declares without a default. A contract without one was accepted at start and failed later
#: (every page, when its title was missing).
REQUIRED_PARTS: dict[str, tuple[type, ...]] = {
    "kind": (str,),
    "contract_version": (int,),
    "section": (str,),
    "permission": (str,),
    "Request": (type,),
    "Arguments": (type,),
    "Preview": (type,),
    "Result": (type,),
    "Facts": (type,),
    "title": (Localized,),
    "preview_fields": (Mapping,),
    "revision_reasons": (Mapping,),
    "assistant_instructions": (str,),
}


def missing_parts(contract: Any) -> list[str]:
    """The required parts ``contract`` lacks or sets to something else (each named, with what
    it must be); [] for a whole contract."""
    found = []
    for name, kinds in REQUIRED_PARTS.items():
        value = getattr(contract, name, None)
        if value is None or not isinstance(value, kinds) or (kinds == (str,) and not value):
            found.append(f"{name} ({' or '.join(kind.__name__ for kind in kinds)})")
    return found


def names_an_amount(contract: Any) -> bool:
    """Whether the contract says how much money a proposal moves (it defines ``amount_cents``):
    an approval policy's threshold applies to its proposals only then."""
    return type(contract).amount_cents is not OperationContract.amount_cents


class OperationContract(ABC, Generic[RequestT, ArgumentsT, PreviewT, ResultT, FactsT]):
    """Everything about one operation kind. Subclasses read in the same order as this one.

    A contract names its five types once, as this class's parameters
    (``class MoveMember(OperationContract[Request, Arguments, Preview, Result, Facts])``);
    ``Request``, ``Arguments``, ``Preview``, ``Result`` and ``Facts`` are read from them.
    """

    kind: ClassVar[str]
    contract_version: ClassVar[int]
    section: ClassVar[Section]
    permission: ClassVar[str]
    Request: type[RequestT]
    Arguments: type[ArgumentsT]
    Preview: type[PreviewT]
    Result: type[ResultT]
    Facts: type[FactsT]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Its own bases only: a subclass that sets ``Request`` (or another type) in its body
        # has no ``__orig_bases__`` of its own, and its parent's put the parent's types back.
        for parent in cls.__dict__.get("__orig_bases__", ()):
            if get_origin(parent) is OperationContract:
                cls.Request, cls.Arguments, cls.Preview, cls.Result, cls.Facts = get_args(parent)

    #: Aggregate types ``load`` reads that a proposal only points at: their current state
    #: shapes neither its arguments nor its preview, so a change to them before the proposal
    #: is stored does not make it stale (everything else ``load`` read does; approval
    #: revalidates anyway).
    targets: ClassVar[frozenset[type[Aggregate]]] = frozenset()
    provider: ClassVar[str | None] = None
    """The outside system an external execution calls, by the name its EffectProvider is
    registered under ("payments", "email"); None for an operation that is always local."""

    # -- how it reads for people and for the assistant (domain.contracts.presentation) ---------

    title: ClassVar[Localized]
    preview_fields: ClassVar[Mapping[str, PreviewField]]
    """Every ``Preview`` field a reviewer sees, in display order, with its label."""
    preview_hidden: ClassVar[frozenset[str]] = frozenset()
    """``Preview`` fields shown through others (a currency read with its amounts)."""
    request_fields: ClassVar[Mapping[str, RequestField]] = {}
    """How every ``Request`` field reads on the Edit page, where a person changes what a
    proposal asked for, by dotted path (``filters.leagues`` for a nested model's field): its
    label, a hint, and a label for each value it chooses from."""
    requested_amounts: ClassVar[frozenset[str]] = frozenset()
    """The ``Request``'s money fields (``*_cents``) only a person can choose (a credit of the
    amount the manager names), read by the approver on the card. Any other is refused: the
    application computes every amount from the facts, and the model never picks one."""
    revision_reasons: ClassVar[Mapping[str, Localized]]
    request_problems: ClassVar[Mapping[str, Localized]] = {}
    """Every sentence ``prepare`` gives people about a request it refuses, by a code of the
    contract's own (each ``Problem.for_people``): what is wrong in the manager's words, with
    no field name, reference or code of the request; ``{name}`` placeholders are filled with
    ``Localized.filled``."""
    """Every reason code this contract raises, with its sentence; ``_cents`` parameters are
    shown as money in the reason's ``currency``."""
    effect_uncertain: ClassVar[Localized] = EFFECT_UNCERTAIN
    """What it means for this operation that its provider's answer was lost (external only):
    what is not known yet, what happens next, and what to tell the people it concerns."""
    effect_unavailable: ClassVar[Localized] = EFFECT_UNAVAILABLE
    """What it means for this operation that its provider was unavailable and applied nothing
    (external only); the reconciler sends the same request later."""
    outcome_titles: ClassVar[Mapping[str, Localized]] = {}
    """Headlines of this operation's outcomes in its own words, by outcome kind
    (``"succeeded": "Refund sent"``), by one of its revision reasons
    (``"revision_required:refund_declined_by_provider": "Not executed: the card was
    declined"``) or by what a success did (``success_title_key``: ``"succeeded:account_credit":
    "Account credited"``); a kind it does not list reads the shared headline
    (``domain.handback.OUTCOME_TITLES``)."""
    irreversible: ClassVar[Localized | None] = None
    """What approving cannot undo, for an effect that leaves the application (a card refund):
    the manager then confirms once more, reading it, before anything runs. None: one click
    approves."""
    assistant_instructions: ClassVar[str]
    """What a section's instructions tell the model about proposing this; ``{tool}`` stands
    for the propose tool's name."""

    stand_in_cue: ClassVar[str | None] = None
    """A pattern (case-insensitive) of the manager's words that asks for this operation rather
    than another of its section's; the offline stand-in model asks cued contracts first."""

    demo_scene: ClassVar[DemoScene | None] = None
    """The words that show this operation in ``countersign demo``, from a manager's message to
    its outcome, when no chapter of the story tells it (declared in its stand-in module)."""

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        """How the offline stand-in model (demo and tests, never a real model) fills this
        contract's request from the manager's ``words`` and what the section's read tools
        returned (``reads``, by tool name): the request, a sentence to say instead when the
        facts do not support the operation, or None when the words ask for something else."""
        return None

    @property
    def tool_name(self) -> str:
        """The propose tool's name: ``propose_<operation>`` for kind ``<area>.<operation>``."""
        return "propose_" + self.kind.split(".", 1)[1]

    # -- the model's request ------------------------------------------------------------------

    def parse_request(self, raw: Any) -> RequestT:
        """The model's request, validated; InvalidRequestError with safe problems if not."""
        return parse_request(self.Request, raw)

    # -- the resource -----------------------------------------------------------------------

    resource_namespace: ClassVar[UUID | None] = None
    """None (countersign's own contracts): a resource is named by its id, a UUID. A contract
    over records a company keeps under its own keys (``INV-1042``) sets a namespace of its
    own (a constant ``uuid4()``, never changed): each key then maps, once and
    deterministically, to ``keyed_resource_id(namespace, key)``, the id a proposal stores,
    and the key is kept beside it (``Scope.key``, a proposal's ``resource_key``) for ``load``
    and for display. The id is the same in every organization: ``load`` must find the record
    to be ``scope.organization_id``'s, and raise NotFoundError otherwise, exactly as for a
    key nobody has (``keyed_resource_id``; the conformance suite checks it)."""

    def scope(self, organization_id: UUID, resource: str) -> Scope:
        """Where a proposal of this operation on ``resource`` (an id, or a key under
        ``resource_namespace``) applies; NotFoundError for an id that is not one."""
        named = str(resource).strip()
        if self.resource_namespace is not None:
            if not named or len(named) > 200:
                raise NotFoundError("malformed resource key")
            resource_id = keyed_resource_id(self.resource_namespace, named)
            return Scope(organization_id, self.section, resource_id, key=named)
        try:
            return Scope(organization_id, self.section, parse(named))
        except ValueError:
            raise NotFoundError("malformed resource id") from None

    @abstractmethod
    def load(self, scope: Scope, store: Repository) -> FactsT:
        """Load the scoped resource freshly; NotFoundError if it is not in this organization,
        exactly as if it did not exist (the conformance suite has another organization's
        manager propose on, load and open a case's resource, and expects NotFoundError)."""

    def settlement_facts(self, scope: Scope, store: Repository) -> FactsT:
        """The facts the reconciler describes an external effect on again
        (``describe_external``) and the settlement records the provider's answer on
        (``finish_external``): by default ``load``'s, which is right when the resource lives
        in countersign's own store (it is never deleted). A contract over another system's
        records returns facts that need no lookup, and describes and finishes from the frozen
        arguments and the provider's answer alone: a record that system deleted after the
        approval then never blocks the settlement."""
        return self.load(scope, store)

    def prepare(self, request: RequestT, facts: FactsT) -> Prepared[ArgumentsT, PreviewT]:
        """The request resolved on the facts (``resolve``); InvalidRequestError with the
        findings of the rule it broke, each a problem with its ``request_problems`` sentence."""
        try:
            return self.resolve(request, facts)
        except RuleBrokenError as broken:
            raise InvalidRequestError(
                [
                    Problem(
                        field=finding.field,
                        message=finding.message,
                        for_people=finding.for_people(self.request_problems),
                    )
                    for finding in broken.findings
                ]
            ) from None

    @abstractmethod
    def resolve(self, request: RequestT, facts: FactsT) -> Prepared[ArgumentsT, PreviewT]:
        """Resolve defaults, compute derived values, and check the rules (each raises
        RuleBrokenError with its finding)."""

    # -- governance: supersession and approval policies -----------------------------------------

    def subject(self, arguments: ArgumentsT) -> str:
        """What, within the resource, a proposal is about, when one resource holds many
        independent things (the roster's members): a new proposal supersedes the pending one
        of the same organization, operation, resource *and* subject. "" (the default): the
        resource is the thing."""
        return ""

    def amount_cents(self, arguments: ArgumentsT) -> int | None:
        """The money this proposal moves, in cents, for an approval policy's threshold; None
        for an operation that moves none."""
        return None

    def retires(self, arguments: ArgumentsT, result: ResultT, facts: FactsT) -> frozenset[Siblings]:
        """Which pending proposals on the same resource this success has made stale, judged on
        the facts as the success left them: they are superseded in the commit that records
        the success. A contract names no other operation: it says which *kind* of sibling
        (``Siblings``). Default: none."""
        return frozenset()

    this_resource: ClassVar[Localized] = Localized("this record", "cet élément")
    """The resource a proposal acts on, as a sentence names it ("this order")."""

    def would_retire(self, arguments: ArgumentsT, facts: FactsT) -> frozenset[Siblings]:
        """What ``retires`` would say if this proposal succeeded now, judged on the facts as
        they are before it runs: the review warns of the pending proposals that approving it
        would withdraw. A contract that retires says the same here. Default: none."""
        return frozenset()

    withdrew: ClassVar[Localized] = Localized(
        "the proposal “{headline}” approved {when} changed what this one relied on.",
        "la proposition « {headline} » approuvée {when} a changé ce sur quoi celle-ci reposait.",
    )
    """Why a pending proposal this one's success retired can no longer run, naming this one
    and when it was approved (``{when}``: "at 15:03", ``domain.times.at_time``); its
    preview's fields (``_cents`` ones read as money) and ``{headline}`` may be used. It
    follows "Withdrawn:" (``domain.messages.withdrawn_message``)."""

    def withdrawal_text(self, preview: PreviewT, when: str, language: str = "en") -> str:
        """``withdrew`` filled from this proposal's preview (amounts as money)."""
        values = preview.model_dump()
        currency = str(values.get("currency") or "")
        filled = {
            key: format_money(value, currency, language)
            if key.endswith("_cents") and isinstance(value, int)
            else value
            for key, value in values.items()
        }
        named = {"when": when, "headline": self.headline(preview, language)}
        return self.withdrew.text(language, **{**filled, **named})

    # -- stored arguments ---------------------------------------------------------------------

    def decode_arguments(self, stored: Any) -> ArgumentsT:
        try:
            return validated(self.Arguments, stored)
        except ValidationError:
            raise UndecodableContractError(self.kind) from None

    # -- at approval ----------------------------------------------------------------------------

    def revalidate(self, arguments: ArgumentsT, facts: FactsT) -> dict[str, Any]:
        """The facts rechecked (``recheck``); RevisionNeededError with the first finding of the
        rule they broke, as its stored reason (code and params), and whether it found that
        what the proposal asks for already holds (``Finding.already_so``)."""
        try:
            return self.recheck(arguments, facts)
        except RuleBrokenError as broken:
            finding = broken.findings[0]
            raise RevisionNeededError(
                finding.code, already_so=finding.already_so, **finding.params
            ) from None

    @abstractmethod
    def recheck(self, arguments: ArgumentsT, facts: FactsT) -> dict[str, Any]:
        """Prove the preview still holds on current facts: the same rules ``resolve`` checks
        (and any that compare with what was frozen), and the facts checked, for the record."""

    def is_external(self, arguments: ArgumentsT) -> bool:
        return False

    @abstractmethod
    def execute(self, execution: ExecutionContract[ArgumentsT], facts: FactsT) -> ResultT:
        """Apply a local operation's effect to the facts' aggregates."""

    def idempotency_key(self, proposal_id: UUID) -> str:
        """The one provider key a proposal will ever use: stable across retries and processes."""
        return f"countersign:{self.kind}:{proposal_id}"

    def effect(self, proposal_id: UUID, request: Frozen) -> Effect:
        """``request`` to this contract's provider, under the proposal's idempotency key."""
        if self.provider is None:
            raise NotImplementedError(f"{self.kind} has no provider")
        return Effect(self.provider, self.idempotency_key(proposal_id), request)

    def describe_external(self, execution: ExecutionContract[ArgumentsT], facts: FactsT) -> Effect:
        """The request this contract sends, under ``idempotency_key``: the same request every
        time it is asked for one proposal (the reconciler replays it), so it depends only on
        the frozen arguments and on facts that never change."""
        raise NotImplementedError(f"{self.kind} has no external execution")

    def start_external(self, execution: ExecutionContract[ArgumentsT], facts: FactsT) -> Effect:
        """Record the attempt on the domain record and describe the request."""
        raise NotImplementedError(f"{self.kind} has no external execution")

    def finish_external(
        self, execution: ExecutionContract[ArgumentsT], facts: FactsT, response: EffectResponse
    ) -> ResultT:
        """Record the provider's authoritative answer; RevisionNeededError if it refused;
        EffectAlreadyRecordedError if the attempt is no longer pending (another process
        recorded this same answer first)."""
        raise NotImplementedError(f"{self.kind} has no external execution")

    # -- hand-back ------------------------------------------------------------------------------

    @abstractmethod
    def success_text(self, preview: PreviewT, result: ResultT, language: str = "en") -> str:
        """The app-authored sentence that reports this operation's success ("en" or "fr")."""

    @abstractmethod
    def headline(self, preview: PreviewT, language: str = "en") -> str:
        """One line that says what the proposal does ("en" or "fr")."""

    def approve_label(self, preview: PreviewT, language: str = "en") -> str:
        """The approve button's words: what approving does ("Refund $48.00 to Visa ••••4242").
        By default "Approve: " and the operation's title."""
        return APPROVE.text(language, title=self.title.text(language))

    def inbox_reason(self, preview: PreviewT, language: str = "en") -> str | None:
        """Why it was proposed, in a few words, for an inbox card that must not look like its
        neighbours ("Missed discount: Early-bird 15%"); None when the headline says it all."""
        return None

    def irreversible_note(self, preview: PreviewT, language: str = "en") -> str | None:
        """What approving this proposal cannot undo (``irreversible``), or None when approving
        it needs no confirmation step."""
        return None if self.irreversible is None else self.irreversible.text(language)

    def success_title_key(self, preview: PreviewT) -> str:
        """Which of ``outcome_titles`` this proposal's success reads under: ``"succeeded"``,
        or a key of the operation's own (``"succeeded:account_credit"``) when what a success
        did depends on the proposal (a refund to the card is sent; one to account credit is
        not). A key it does not list reads the ``"succeeded"`` headline."""
        return "succeeded"
