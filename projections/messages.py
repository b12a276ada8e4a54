"""The outcome messages the browser view and the hand-back both store, made once for both.

Every outcome is said in the card (``browser_view``) and in the conversation (``handback``),
from the same operation, frozen preview and stored outcome. Making the messages validates the
preview and the result with the contract's models, a tenth of the handlers' time in a rebuild
of every projection, where the two handlers run over the same decoded events.
"""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.presentation import LANGUAGES
from countersign.domain.messages import outcome_messages
from pydantic import BaseModel

#: id(outcome) -> (that outcome, the operation and preview its texts were made of, the texts).
#: Kept per outcome, not for the last call only: a rebuild of every projection runs the
#: browser view over a chunk of events, then the hand-back over the same chunk
#: (``infrastructure/projection_engine/together.py``), so the two calls for one event are a
#: chunk apart. The outcome is held, so another cannot take its ``id`` while remembered.
_MADE: dict[int, tuple[Any, str, Any, tuple[str, ...]]] = {}
#: At most this many are kept (whoever calls, the memory stays small); then it starts afresh.
_MADE_MAX = 1024


def outcome_texts(operation: str, preview: Any, outcome: Any) -> tuple[str, ...]:
    """``outcome_messages(operation, preview, outcome)``, the same messages again if they were
    made lately of this very outcome object, with this operation and this very preview object
    (handlers never change what they read: the card's and the hand-back's preview are the
    Proposed event's own, and the outcome is the outcome event's own). Never by equal content:
    an equal outcome or preview decoded from another event makes its texts afresh."""
    found = _MADE.get(id(outcome))
    if found is not None and found[0] is outcome and found[2] is preview and found[1] == operation:
        return found[3]
    texts = _success_texts(operation, preview, outcome)
    if texts is None:
        texts = outcome_messages(operation, preview, outcome)
    if len(_MADE) >= _MADE_MAX:
        _MADE.clear()
    _MADE[id(outcome)] = (outcome, operation, preview, texts)
    return texts


def forget_outcome_texts() -> None:
    """Let go of the outcomes remembered (``outcome_texts``): the runners call it after each
    batch, and a rebuild of several projections together after each chunk of events, whose
    outcomes need not be kept alive."""
    _MADE.clear()


def _success_texts(operation: str, preview: Any, outcome: Any) -> tuple[str, ...] | None:
    """``outcome_messages`` of a success stored exactly as ``Succeeded`` stores one (the two
    keys ``kind`` and ``result``, a dict); None for anything else, which ``outcome_messages``
    words, or refuses, as before.

    Why: ``outcome_messages`` first validates the whole stored outcome into a ``Succeeded``
    (about 12,700 instructions, callgrind), only to pass its ``result`` on to the contract's
    ``Result`` model and read the success text back unchanged; here the outcome's shape is
    checked by hand, which accepts only what that validation accepts (its keys are text:
    the outcome was read from JSON), and ``result`` goes straight to ``Result``. The preview
    and the result are still validated by the contract's models, so a stored value they
    refuse raises ``ValidationError`` as before and stops the projection at its event
    (``tests/test_cards_messages.py``). With the models' own validators called directly
    (``_validators``) the texts cost 31,300 instructions against 62,600."""
    if type(outcome) is not dict or len(outcome) != 2 or outcome.get("kind") != "succeeded":
        return None
    result = outcome.get("result")
    if type(result) is not dict:
        return None
    contract = REGISTRY.get(operation)
    if contract is None:
        return None  # ``outcome_messages`` raises KeyError: an unknown operation's success
    found = _VALIDATORS.get(operation)
    if found is None or found[0] is not contract:
        preview_of, result_of = _validator(contract.Preview), _validator(contract.Result)
        found = _VALIDATORS[operation] = (contract, preview_of, result_of)
    _, preview_of, result_of = found
    valid_preview, valid_result = preview_of(preview), result_of(result)
    text = contract.success_text
    return tuple([text(valid_preview, valid_result, language) for language in LANGUAGES])


#: Per operation, its registered contract (held: a contract registered again in its place is
#: noticed by identity) and the ``model_validate`` of its ``Preview`` and ``Result``.
_VALIDATORS: dict[str, tuple[Any, Any, Any]] = {}

_MODEL_VALIDATE = BaseModel.model_validate.__func__  # type: ignore[attr-defined]


def _validator(model: type[BaseModel]) -> Any:
    """``model.model_validate``, as the model's own pydantic-core validator where the model
    does not define ``model_validate`` itself: pydantic's ``model_validate`` is a Python
    method that checks its keyword arguments and passes them all on (about 4,900 of a
    preview's 14,900 instructions), for the same validation and the same instance."""
    if getattr(model.model_validate, "__func__", None) is not _MODEL_VALIDATE:
        return model.model_validate
    return model.__pydantic_validator__.validate_python
