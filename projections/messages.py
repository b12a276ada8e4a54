"""The outcome messages the browser view and the hand-back both store, made once per value.

Every outcome is said in the card (``browser_view``) and in the conversation (``handback``),
from the same operation, frozen preview and stored outcome. Making the messages validates the
stored outcome, the preview and the result with the contract's models, then formats the texts
(about 62,000 instructions an outcome, more than the rest of a lifecycle's card handlers). Here
they are made once for both projections, and once for every equal value: a proposal's outcome
is validated and worded as it always is the first time its operation, preview and outcome are
seen, and an outcome equal to one already worded gets the same texts again. Nothing reaches
the contracts' texts without having been validated: what is reused is what validating an
equal value gave.
"""

from __future__ import annotations

from typing import Any

import orjson
from countersign.domain.contracts import REGISTRY
from countersign.domain.messages import outcome_messages

#: The last call's arguments and messages (one tuple, replaced whole).
_last: tuple[str, Any, Any, tuple[str, ...]] | None = None

#: (operation, the preview's JSON, the outcome's JSON) -> (the operation's contract then, the
#: preview, the outcome, their messages); emptied when full.
_WORDED: dict[tuple[str, bytes, bytes], tuple[Any, Any, Any, tuple[str, ...]]] = {}
_WORDED_MAX = 512

#: orjson refuses (rather than writes as their base type) subclasses of str, int, dict and
#: list, dates, times and dataclasses: such a value is not remembered, only worded.
_EXACT = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME
_EXACT |= orjson.OPT_PASSTHROUGH_DATACLASS


def outcome_texts(operation: str, preview: Any, outcome: Any) -> tuple[str, ...]:
    """``outcome_messages(operation, preview, outcome)``.

    The same messages again if the last call had this operation and these very preview and
    outcome objects (handlers never change what they read: the card's and the hand-back's
    preview are the event's own, and so is the outcome), or if an earlier call had values
    equal to these, under the same contract. Equal means the same JSON (which tells ``1``,
    ``1.0`` and ``true`` apart, and is refused for subclasses and other types it would write
    as plain values) and ``==`` (which tells a list from a tuple, and NaN or infinity from
    ``null``, the two things that JSON does not). Holding the values keeps their identity
    from passing to other objects."""
    global _last
    last = _last
    if last is not None and last[1] is preview and last[2] is outcome and last[0] == operation:
        return last[3]
    try:
        key: tuple[str, bytes, bytes] | None = (
            operation,
            orjson.dumps(preview, option=_EXACT),
            orjson.dumps(outcome, option=_EXACT),
        )
    except TypeError:  # not a plain JSON value: worded every time
        key = None
    contract = REGISTRY.get(operation)
    worded = None if key is None else _WORDED.get(key)
    if (
        worded is not None
        and worded[0] is contract
        and worded[1] == preview
        and worded[2] == outcome
    ):
        texts = worded[3]
    else:
        texts = outcome_messages(operation, preview, outcome)
        if key is not None:
            if len(_WORDED) >= _WORDED_MAX:
                _WORDED.clear()
            _WORDED[key] = (contract, preview, outcome, texts)
    _last = (operation, preview, outcome, texts)
    return texts
