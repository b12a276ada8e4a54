"""Words the offline stand-in model reads the same way for every operation (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model), in English and French,
the two languages a manager writes in."""

from __future__ import annotations

import re

_ACCOUNT_CREDIT = re.compile(r"\b(credit|account|crédit|compte)", re.IGNORECASE)


def wants_account_credit(words: str) -> bool:
    """Whether the manager's words ask for the money as account credit ("account credit",
    "crédit au compte") rather than back to the payment it came from."""
    return _ACCOUNT_CREDIT.search(words) is not None
