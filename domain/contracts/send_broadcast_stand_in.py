"""The send_broadcast contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for. It sits beside the contract, not in the stand-in model, so that an operation's
files stay together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def request_from_words(words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
    """Asked only when the manager's words ask to send the draft (``stand_in_cue``): there
    is nothing to fill in, and the application says if the form holds no draft to send."""
    return {}
