"""The arguments and preview models this process froze, remembered by contract digest
(domain.contracts.frozen_models): an approval in the process that froze a proposal takes them
instead of validating the stored dumps again; a tampered stored value is refused as before;
a model that might not validate back to itself is never remembered; a remembered model is
the caller's own; the memory is bounded."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

from countersign.application.errors import parse_id
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.contracts import base, frozen_models
from countersign.domain.contracts.apply_broadcast_draft import (
    BroadcastDraftArguments,
    BroadcastDraftPreview,
    DraftFilters,
)
from countersign.domain.contracts.base import Frozen
from countersign.domain.contracts.frozen_models import FROZEN_MODELS, FrozenModels
from countersign.domain.contracts.model_calls import dumped
from countersign.domain.messages import outcome_message
from countersign.domain.proposal import Proposal
from pydantic import Field, field_validator

from tests.conftest import AVA, DRAFT
from tests.support.proposing import ICE_TIMES_DRAFT, proposal
from tests.test_corrupt_records import _fresh, _rewrite_state


def _arguments(*leagues: str) -> BroadcastDraftArguments:
    return BroadcastDraftArguments.model_validate(
        {
            "form_id": uuid4(),
            "filters": {"leagues": list(leagues)},
            "subject": "Ice times",
            "body": "Sheets 1-4 from six.",
            "audience_count": 12,
        }
    )


def _preview() -> BroadcastDraftPreview:
    return BroadcastDraftPreview.model_validate(
        {
            "filters_in_words": "everyone",
            "audience_count": 12,
            "subject": "Ice times",
            "body": "Sheets 1-4 from six.",
            "sends_email": False,
        }
    )


def _remembered(memory: FrozenModels, arguments: Frozen, preview: Frozen, digest: str) -> None:
    memory.remember(digest, arguments, dumped(arguments), preview, dumped(preview))


def _counted_decodes(monkeypatch: Any) -> list[Any]:
    """Every ``decode_arguments`` call from here on, and the preview validations of the
    success sentence (``domain.messages.validated``)."""
    calls: list[Any] = []
    decode = base.OperationContract.decode_arguments

    def counted(self: Any, stored: Any) -> Any:
        calls.append(("arguments", stored))
        return decode(self, stored)

    from countersign.domain import messages

    validate = messages.validated

    def counted_validation(model: Any, value: Any) -> Any:
        calls.append(("preview", value))
        return validate(model, value)

    monkeypatch.setattr(base.OperationContract, "decode_arguments", counted)
    monkeypatch.setattr(messages, "validated", counted_validation)
    return calls


def test_an_approval_takes_the_models_frozen_here_instead_of_validating_again(
    cs, seeded, monkeypatch
):
    created = proposal(cs, seeded, operation=DRAFT)
    calls = _counted_decodes(monkeypatch)

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert calls == []
    assert (report.result, report.status) == ("executed", "succeeded")
    stored = cs.store.get(parse_id(created.proposal_id, "proposal"), Proposal)
    assert report.message == outcome_message(DRAFT, stored.preview, stored.outcome)
    form = cs.store.get(UUID(seeded["broadcast_forms"]["granite"]), BroadcastForm)
    assert form.subject == stored.arguments["subject"] == created.preview["subject"]


def test_a_proposal_frozen_elsewhere_is_validated_at_approval(cs, seeded, monkeypatch):
    created = proposal(cs, seeded, operation=DRAFT)
    monkeypatch.setattr(frozen_models, "FROZEN_MODELS", FrozenModels())
    for module in ("countersign.application.approve_path", "countersign.domain.messages"):
        monkeypatch.setattr(f"{module}.FROZEN_MODELS", frozen_models.FROZEN_MODELS)
    calls = _counted_decodes(monkeypatch)

    report = cs.proposals.approve(created.proposal_id, AVA)

    assert [kind for kind, _ in calls] == ["arguments", "preview"]
    assert (report.result, report.status) == ("executed", "succeeded")


def test_a_stored_value_changed_behind_the_memory_is_refused_as_before(cs, seeded, clock):
    created = proposal(cs, seeded, operation=DRAFT)
    pid = parse_id(created.proposal_id, "proposal")
    frozen = cs.store.get(pid, Proposal)
    assert FROZEN_MODELS.arguments(frozen.digest, BroadcastDraftArguments) is not None

    def another_subject(state: dict[str, Any]) -> dict[str, Any]:
        state["arguments"]["subject"] = "Club closed"
        return state

    _rewrite_state(cs, created.proposal_id, 1, another_subject)
    other = _fresh(cs, clock)
    try:
        report = other.proposals.approve(created.proposal_id, AVA)
    finally:
        other.close()

    assert report.status == "failed"
    failed = cs.audit.history(created.proposal_id)["events"][-1]
    assert failed["error_class"] == "ContractDigestMismatch"
    form = cs.store.get(UUID(seeded["broadcast_forms"]["granite"]), BroadcastForm)
    assert form.subject != "Club closed"


def test_another_proposals_remembered_values_put_in_its_place_are_refused(cs, seeded, clock):
    # Both frozen here: the first's arguments and preview, written over the second's, hash
    # to a digest the memory holds, but not to the second proposal's own.
    first = proposal(cs, seeded, operation=DRAFT, request=_draft("Ice times"))
    second = proposal(cs, seeded, operation=DRAFT, request=_draft("Club closed"))
    replaced = cs.store.get(parse_id(first.proposal_id, "proposal"), Proposal)
    assert FROZEN_MODELS.arguments(replaced.digest, BroadcastDraftArguments) is not None

    def the_first_ones(state: dict[str, Any]) -> dict[str, Any]:
        state["arguments"], state["preview"] = replaced.arguments, replaced.preview
        return state

    _rewrite_state(cs, second.proposal_id, 1, the_first_ones)
    other = _fresh(cs, clock)
    try:
        report = other.proposals.approve(second.proposal_id, AVA)
    finally:
        other.close()

    assert report.status == "failed"
    failed = cs.audit.history(second.proposal_id)["events"][-1]
    assert failed["error_class"] == "ContractDigestMismatch"


def _draft(subject: str) -> dict[str, Any]:
    return {**ICE_TIMES_DRAFT, "subject": subject}


def test_the_models_are_handed_back_only_under_their_digest_and_class():
    memory = FrozenModels()
    arguments, preview = _arguments("Monday"), _preview()
    _remembered(memory, arguments, preview, "d1")

    assert memory.arguments("d1", BroadcastDraftArguments) is arguments  # immutable: shared
    assert memory.preview("d1", BroadcastDraftPreview) is preview
    assert memory.arguments("d2", BroadcastDraftArguments) is None
    assert memory.arguments("d1", BroadcastDraftPreview) is None  # type: ignore[arg-type]
    assert memory.preview("d1", BroadcastDraftArguments) is None  # type: ignore[arg-type]


class _Listed(Frozen):
    names: list[str]


class _Holding(Frozen):
    """A model that holds a list (in a model of its own): copied on the way out."""

    listed: _Listed
    note: str


def test_a_remembered_model_holding_a_list_is_the_callers_own_copy():
    memory = FrozenModels()
    holding = _Holding(listed=_Listed(names=["Monday", "Tuesday"]), note="two")
    _remembered(memory, holding, _preview(), "d1")

    handed = memory.arguments("d1", _Holding)
    assert handed is not None
    assert handed == holding
    assert handed is not holding
    assert handed.listed is not holding.listed
    assert handed.listed.names is not holding.listed.names
    handed.listed.names.append("Friday")

    again = memory.arguments("d1", _Holding)
    assert again is not None
    assert again.listed.names == ["Monday", "Tuesday"] == holding.listed.names
    assert again == _Holding.model_validate(dumped(holding))


def test_the_arguments_of_a_draft_are_immutable_and_dump_as_before():
    arguments = _arguments("Monday", "Tuesday")
    assert arguments.filters.leagues == ("Monday", "Tuesday")
    assert dumped(arguments)["filters"] == {"leagues": ["Monday", "Tuesday"]}
    memory = FrozenModels()
    _remembered(memory, arguments, _preview(), "d1")
    assert memory.arguments("d1", BroadcastDraftArguments) is arguments  # nothing to copy


class _Trimmed(Frozen):
    """A model with a validator of its own: never remembered."""

    name: str

    @field_validator("name")
    @classmethod
    def _trim(cls, value: str) -> str:
        return value.strip()


class _Aliased(Frozen):
    """A model whose dump (by field name) does not validate back (by alias)."""

    name: str = Field(alias="Name")


class _Measured(Frozen):
    """Floats: never remembered (NaN equals nothing, itself included)."""

    value: float


def test_a_model_that_may_not_validate_back_to_itself_is_never_remembered():
    memory = FrozenModels()
    preview = _preview()
    trimmed = _Trimmed(name="Ava")
    aliased = _Aliased.model_validate({"Name": "Ava"})
    _remembered(memory, trimmed, preview, "trimmed")
    _remembered(memory, aliased, preview, "aliased")
    _remembered(memory, _Measured(value=float("nan")), preview, "nan")

    assert memory.arguments("trimmed", _Trimmed) is None
    assert memory.preview("trimmed", BroadcastDraftPreview) is None  # neither is remembered
    assert memory.arguments("aliased", _Aliased) is None
    assert memory.arguments("nan", _Measured) is None
    _remembered(memory, _arguments("Monday"), preview, "plain")
    assert memory.arguments("plain", BroadcastDraftArguments) is not None


class _Coded(Frozen):
    """Bytes: not a value the memory knows to be plain."""

    code: bytes


def test_a_model_holding_a_value_of_another_type_is_never_remembered():
    memory = FrozenModels()
    _remembered(memory, _Coded(code=b"ab"), _preview(), "coded")
    assert memory.arguments("coded", _Coded) is None


def test_the_memory_forgets_its_oldest_digest_first():
    memory = FrozenModels(capacity=2)
    preview = _preview()
    models = {digest: _arguments(digest) for digest in ("a", "b", "c")}
    for digest, arguments in models.items():
        _remembered(memory, arguments, preview, digest)

    assert memory.arguments("a", BroadcastDraftArguments) is None
    assert memory.arguments("b", BroadcastDraftArguments) == models["b"]
    assert memory.arguments("c", BroadcastDraftArguments) == models["c"]
    assert isinstance(models["b"].filters, DraftFilters)
    assert isinstance(models["c"].form_id, UUID)
