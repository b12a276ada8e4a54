"""The operation-contract base: the shared shape every operation module fills in.

A contract owns, for one operation kind: the model-facing ``Request``, default resolution
and invalid combinations (``prepare``), the frozen ``Arguments`` and ``Preview``, the
revalidator, the executor, the typed ``Result`` and the safe hand-back text. The lifecycle,
approval identity, outcome semantics and audit are shared and live elsewhere.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from domain.club.organization import Permission
from domain.errors import CountersignError
from domain.outcomes import ExecutionContract, RevisionReason
from domain.ports import EffectResponse, Repository
from domain.scope import Scope, Section

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_OR_NEWLINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_text(value: str, *, multiline: bool = False) -> str:
    """Refuse control characters (escape sequences could disguise what a reviewer sees);
    newlines and tabs are allowed only in multi-line text."""
    if (_CONTROL if multiline else _CONTROL_OR_NEWLINE).search(value):
        raise ValueError(
            "control characters are not allowed" + ("" if multiline else " (no line breaks)")
        )
    return value


class ContractRequest(BaseModel):
    """Base of every model-facing request: strict types, unknown fields rejected, and no
    control characters in any text (a multi-line field allows newlines and tabs)."""

    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)
    multiline_fields: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: Any, info: ValidationInfo) -> Any:
        _check_nested(value, multiline=info.field_name in cls.multiline_fields)
        return value


def _check_nested(value: Any, *, multiline: bool) -> None:
    if isinstance(value, str):
        check_text(value, multiline=multiline)
    elif isinstance(value, list):
        for item in value:
            _check_nested(item, multiline=False)
    elif isinstance(value, BaseModel):
        for _, item in value:
            _check_nested(item, multiline=False)


class Frozen(BaseModel):
    """Base of stored arguments, previews and results: immutable, exact."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Problem(BaseModel):
    """One safe, model-correctable problem with a request."""

    model_config = ConfigDict(frozen=True)

    field: str
    message: str


class InvalidRequestError(CountersignError):
    """Raised when a model request fails validation; carries safe problems only."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = problems

    @classmethod
    def one(cls, field: str, message: str) -> InvalidRequestError:
        return cls([Problem(field=field, message=message)])


class RevisionNeededError(CountersignError):
    """Raised when current state no longer proves the preview; nothing may execute."""

    def __init__(self, code: str, **params: str | int | bool) -> None:
        super().__init__(code)
        self.reason = RevisionReason(code=code, params=params)


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


@dataclass(frozen=True)
class Prepared(Generic[ArgumentsT, PreviewT]):
    """Frozen arguments and the preview built from the same validated facts."""

    arguments: ArgumentsT
    preview: PreviewT


_SAFE_MESSAGES = {
    "extra_forbidden": "unknown field; remove it",
    "missing": "this field is required",
    "string_too_long": "text is too long",
    "string_too_short": "text is too short",
    "too_long": "too many items",
    "too_short": "too few items",
    "string_pattern_mismatch": "not a reference this conversation gave you",
    "literal_error": "not one of the allowed values",
    "enum": "not one of the allowed values",
    "value_error": "",  # our own validators' messages are safe: shown without the prefix
}


def problems_from(error: ValidationError) -> list[Problem]:
    """Translate pydantic errors into safe problems: never echo the input back."""
    problems = []
    for item in error.errors(include_input=False, include_url=False):
        field = ".".join(str(part) for part in item["loc"]) or "request"
        message = _SAFE_MESSAGES.get(item["type"]) or item["msg"].removeprefix("Value error, ")
        if item["type"] == "literal_error":
            message = f"must be one of: {item['ctx']['expected']}"
        problems.append(Problem(field=field, message=message))
    return problems


class OperationContract(ABC, Generic[RequestT, ArgumentsT, PreviewT, ResultT, FactsT]):
    """Everything about one operation kind. Subclasses read in the same order as this one."""

    kind: ClassVar[str]
    contract_version: ClassVar[int]
    section: ClassVar[Section]
    permission: ClassVar[Permission]
    Request: type[RequestT]
    Arguments: type[ArgumentsT]
    Preview: type[PreviewT]
    Result: type[ResultT]
    #: Aggregate types ``load`` reads that a proposal only points at: their current state
    #: shapes neither its arguments nor its preview, so a change to them before the proposal
    #: is stored does not make it stale (everything else ``load`` read does; approval
    #: revalidates anyway).
    targets: ClassVar[frozenset[type[Aggregate]]] = frozenset()

    # -- the model's request ------------------------------------------------------------------

    def parse_request(self, raw: Any) -> RequestT:
        if not isinstance(raw, dict):
            raise InvalidRequestError.one("request", "must be a JSON object")
        try:
            return self.Request.model_validate(raw)
        except ValidationError as error:
            raise InvalidRequestError(problems_from(error)) from None

    @abstractmethod
    def load(self, scope: Scope, store: Repository) -> FactsT:
        """Load the scoped resource freshly; NotFoundError if it is not in this organization."""

    @abstractmethod
    def prepare(self, request: RequestT, facts: FactsT) -> Prepared[ArgumentsT, PreviewT]:
        """Resolve defaults, compute derived values, reject invalid combinations."""

    # -- stored arguments ---------------------------------------------------------------------

    def decode_arguments(self, stored: Any) -> ArgumentsT:
        try:
            return self.Arguments.model_validate(stored)
        except ValidationError:
            raise UndecodableContractError(self.kind) from None

    # -- at approval ----------------------------------------------------------------------------

    @abstractmethod
    def revalidate(self, arguments: ArgumentsT, facts: FactsT) -> dict[str, Any]:
        """Prove the preview still holds: the facts rechecked, or RevisionNeededError."""

    def is_external(self, arguments: ArgumentsT) -> bool:
        return False

    @abstractmethod
    def execute(self, contract: ExecutionContract[ArgumentsT], facts: FactsT) -> ResultT:
        """Apply a local operation's effect to the facts' aggregates."""

    def idempotency_key(self, proposal_id: UUID) -> str:
        """The one provider key a proposal will ever use: stable across retries and processes."""
        return f"countersign:{self.kind}:{proposal_id}"

    def describe_external(self, contract: ExecutionContract[ArgumentsT], facts: FactsT) -> Effect:
        """The request this contract sends, under ``idempotency_key``: the same request every
        time it is asked for one proposal (the reconciler replays it), so it depends only on
        the frozen arguments and on facts that never change."""
        raise NotImplementedError(f"{self.kind} has no external execution")

    def start_external(self, contract: ExecutionContract[ArgumentsT], facts: FactsT) -> Effect:
        """Record the attempt on the domain record and describe the request."""
        raise NotImplementedError(f"{self.kind} has no external execution")

    def finish_external(
        self, contract: ExecutionContract[ArgumentsT], facts: FactsT, response: EffectResponse
    ) -> ResultT:
        """Record the provider's authoritative answer; RevisionNeededError if it refused."""
        raise NotImplementedError(f"{self.kind} has no external execution")

    # -- hand-back ------------------------------------------------------------------------------

    @abstractmethod
    def success_text(self, preview: PreviewT, result: ResultT, language: str = "en") -> str:
        """The app-authored sentence that reports this operation's success ("en" or "fr")."""
