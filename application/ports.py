"""Ports: what the application's use cases need from the outside world, as Protocols.

Adapters in ``infrastructure`` implement them; tests use the same adapters or fakes that
implement the same Protocols. (What the domain itself needs is in ``domain/ports.py``.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, Literal, Protocol, TypeVar, get_args
from uuid import UUID

from countersign.domain.frozen_records import direct_init
from countersign.domain.ports import A, EffectResponse, Repository
from eventsourcing.domain import Aggregate

T = TypeVar("T")
#: What a decision answers: read only once decided, so a decision answering a narrower type
#: is one answering a wider (``Commit[ApprovalReport]`` is a ``Commit[ApprovalReport | ...]``).
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True)
class StoredEventView:
    """One stored event, as an auditor reads it."""

    version: int
    type: str
    at: datetime
    fields: dict[str, Any]
    #: Its class's whole name, module and class ("countersign.domain.proposal:Proposal.
    #: Approved"): a plug-in's event may have the same ``type`` as one of countersign's.
    topic: str = ""


@direct_init
@dataclass(frozen=True)
class Reads:
    """What a decision reads, named before it runs so that it can be fetched in one go."""

    #: Aggregates to fetch together (a decision may read others; they are fetched as read).
    ids: Sequence[UUID]
    #: Aggregate types the decision only points at: their state shapes nothing it decides,
    #: so its commit does not check that they are unchanged.
    targets: frozenset[type[Aggregate]] = frozenset()


@direct_init
@dataclass(frozen=True)
class Commit(Generic[T_co]):
    """A decision to record the new events of these aggregates, in one atomic commit, and
    then to answer ``answer``. Once committed they are shared read-only state: the decision
    is done with them, and a command given to one raises."""

    aggregates: Sequence[Aggregate]
    answer: T_co


@direct_init
@dataclass(frozen=True)
class Answer(Generic[T_co]):
    """A decision to answer ``answer`` and record nothing."""

    answer: T_co


class UnitOfWork(Protocol):
    """Carries out decisions so that each holds for the facts it was taken on."""

    def decide(self, reads: Reads, decision: Callable[[Repository], Commit[T] | Answer[T]]) -> T:
        """Run ``decision`` on the facts, commit what it decided, and return its answer.

        ``decision`` is a function of what it reads through the Repository it is given, and
        must not act on the outside world: it may be run more than once, and only the last
        run counts. It may also refuse by raising a CountersignError, which is raised here.
        An answer or a refusal is only ever given from fresh reads, and a commit only goes
        through if nothing it read has changed since; otherwise the decision is taken
        again, and ConcurrencyConflictError is raised if the facts keep changing (nothing
        was committed). How the reads are served is the implementation's business
        (docs/concurrency.md).
        """
        ...


class AggregateStore(UnitOfWork, Protocol):
    """Loads and saves aggregates of the one event stream, and carries out decisions."""

    def get(self, aggregate_id: UUID, as_type: type[A], version: int | None = None) -> A:
        """Raises NotFoundError when absent, of another type, or unreadable."""
        ...

    def read(self, aggregate_id: UUID, as_type: type[A]) -> A:
        """Like get, for reading only: the result is shared and must never be changed."""
        ...

    def save(self, *aggregates: Aggregate) -> None:
        """One atomic commit of every pending event; ConcurrencyConflictError on a race."""
        ...

    def history(self, aggregate_id: UUID) -> list[StoredEventView]: ...

    def recorded(
        self, aggregate_id: UUID, as_type: type[A]
    ) -> tuple[A, list[StoredEventView], Callable[[int], A]]:
        """The aggregate made from its stored events alone, never from a snapshot this process
        holds (with seal keys, its events checked as a read checks them), those very events
        (``history``), and what makes the aggregate as it was at a version of them: what an
        auditor reads and what is checked, from one read. NotFoundError when absent or of
        another type."""
        ...

    def ids_with_events(
        self, aggregate_class: type[Aggregate], event_names: Sequence[str]
    ) -> Iterator[UUID]:
        """Distinct ids of aggregates that recorded any of these events, oldest first."""
        ...


class SharedSnapshots:
    """A Repository whose ``get`` is ``read``: every aggregate it gives is the shared
    snapshot, never a private copy. For what reads a contract's facts and changes nothing
    (preparing a proposal, describing a request again): no copy is made, and a command given
    to a snapshot raises (SharedSnapshotError)."""

    def __init__(self, store: Repository) -> None:
        self._store = store

    def get(self, aggregate_id: UUID, as_type: type[A]) -> A:
        return self._store.read(aggregate_id, as_type)

    def read(self, aggregate_id: UUID, as_type: type[A]) -> A:
        return self._store.read(aggregate_id, as_type)


class OpenWorkIndex(Protocol):
    """Finds the proposals the sweepers must look at, without scanning every proposal."""

    def expiry_candidates(self, now: datetime) -> list[UUID]:
        """Pending proposals whose expiry has passed."""
        ...

    def reconciliation_candidates(self, claimed_before: datetime) -> list[UUID]:
        """Reconciling proposals, and executing ones claimed before the given time."""
        ...


@dataclass(frozen=True)
class SweeperPass:
    """When a sweeper (``reconcile``, ``expire``, ``notify``) last finished a pass, in any
    process, and how often its schedule runs one."""

    finished_at: datetime
    every: timedelta


class SweeperPasses(Protocol):
    """Where the sweepers' schedules say they ran (``countersign worker``, or ``serve`` on
    the embedded database): whether anything is settling what waits on them."""

    def record(self, sweeper: str, finished_at: datetime, every: timedelta) -> None:
        """A pass of ``sweeper`` just finished; its schedule runs one every ``every``."""
        ...

    def last(self, sweeper: str) -> SweeperPass | None:
        """The latest pass any process recorded for ``sweeper``; None if none ever did."""
        ...


class EffectResponseLostError(Exception):
    """Raised when a request's outcome is unknown (a timeout, a lost connection, a 5xx): it
    may or may not have been performed. Only a lookup under its key can tell."""


class ProviderUnavailableError(EffectResponseLostError):
    """Raised when the provider answered, definitively, that it applied nothing (an outage
    before the request was looked at). Still uncertain to the approve path, which never calls
    again itself: the reconciler asks under the same key later. Only what a provider knows for
    sure lets people be told that nothing happened yet."""


class IdempotencyConflictError(Exception):
    """Raised when an idempotency key is reused with another request."""


class EffectProvider(Protocol):
    """An outside system that performs requests under idempotency keys (a payment provider,
    an e-mail service, an accounting system), registered under a name that contracts use.

    The same key with the same request is performed at most once: asking again answers what
    the provider holds. A definitive refusal is an answer (status "refused"), not an error.
    """

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        """Perform ``request`` under ``key``, or answer as the first time. Raises
        EffectResponseLostError when the outcome is unknown, IdempotencyConflictError when
        ``key`` was used with another request."""
        ...

    def lookup(self, key: str) -> EffectResponse | None:
        """What the provider holds under ``key``; None if nothing was ever performed under it.
        Raises EffectResponseLostError when the provider could not be asked."""
        ...


FaultPoint = Literal[
    "after_claim_commit",
    "before_provider_call",
    "after_provider_call",
    "before_outcome_commit",
    "after_outcome_commit",
    "reconcile_before_replay",
    "reconcile_after_replay",
]
"""The steps of the approve path (and of the reconciler) where a process may die: the
moments between its commits and its provider calls (docs/faults.md)."""
FAULT_POINTS: tuple[FaultPoint, ...] = get_args(FaultPoint)


class FaultPoints(Protocol):
    """Told each time the approve path or the reconciler reaches one of its fault points, so
    that a test can kill the process exactly there. Production wires ``NoFaults``."""

    def reached(self, point: FaultPoint) -> None: ...


class NoFaults:
    """The FaultPoints port when no test injects faults: every point passes, at the cost of
    one empty call."""

    def reached(self, point: FaultPoint) -> None:
        return None


class Clock(Protocol):
    """Tells the time; injectable so expiry and leases can be tested."""

    def now(self) -> datetime: ...


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for; ``arguments`` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    """What the model answered: text, tool calls, or both."""

    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)


class ModelUnavailableError(Exception):
    """Raised when the model could not answer, after bounded retries of transient failures."""


class ChatModel(Protocol):
    """A chat model with tools (any OpenAI-compatible endpoint, or the offline stand-in)."""

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelReply: ...


@dataclass(frozen=True)
class NewPasskey:
    """A passkey whose registration verified: its credential id and COSE public key
    (base64url), and the authenticator's signature counter."""

    credential_id: str
    public_key: str
    sign_count: int


@dataclass(frozen=True)
class CheckedAssertion:
    """An assertion that verified, in the form ``Approved`` stores (base64url), with the
    authenticator's new signature counter."""

    credential_id: str
    authenticator_data: str
    client_data_json: str
    signature: str
    sign_count: int


class PasskeyRejectedError(Exception):
    """A passkey ceremony that did not verify (wrong challenge, origin or RP id, a bad
    signature, no user verification, a counter that went back); the reason is for logs."""


class PasskeyCeremonies(Protocol):
    """WebAuthn, done by a well-kept library: the options a browser is given, and the
    verification of what its authenticator answers. Also issues the fresh nonces challenges
    are made of, each bound to what it was issued for and valid for a few minutes."""

    rp_id: str

    @property
    def origins(self) -> Sequence[str]:
        """The origins the pages are served from: an assertion from any other does not
        verify."""
        ...

    def issue_nonce(self, purpose: str, now: datetime) -> str: ...

    def nonce_holds(self, nonce: str, purpose: str, now: datetime) -> bool: ...

    def registration_options(
        self,
        *,
        user_id: bytes,
        user_name: str,
        display_name: str,
        challenge: bytes,
        exclude: Sequence[str],
    ) -> dict[str, Any]: ...

    def verify_registration(self, credential: Mapping[str, Any], challenge: bytes) -> NewPasskey:
        """PasskeyRejectedError unless it verifies, user verification included."""
        ...

    def assertion_options(self, challenge: bytes, allow: Sequence[str]) -> dict[str, Any]: ...

    def verify_assertion(
        self,
        credential: Mapping[str, Any],
        challenge: bytes,
        *,
        public_key: str,
        sign_count: int,
        rp_id: str,
    ) -> CheckedAssertion:
        """PasskeyRejectedError unless it verifies against the origin and RP id configured,
        the public key, the challenge and the counter, user verification included."""


class ProposalCounts(Protocol):
    """When each member's recent proposals (or, in a store of their own, assistant turns)
    were made, shared by every process."""

    def take(self, key: str, at: datetime, after: datetime, limit: int) -> datetime | None:
        """In one step, atomic across processes: if fewer than ``limit`` were made under
        ``key`` after ``after``, one more made at ``at`` (None); else nothing, and when the
        oldest of the ``limit`` newest was made. Those made before ``after`` may go."""
        ...

    def give_back(self, key: str, at: datetime) -> None:
        """Forget one taken under ``key`` at ``at``: it was not made after all."""
        ...
