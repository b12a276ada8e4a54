"""Held now: JSON nested deeper than the parser goes, in a page's form, is refused as unreadable.

The pages read JSON from three form fields: the passkey assertion an approve form carries, the
new passkey the account page registers, and an edit's structured fields. Each caught the
parser's ValueError only; ``[`` written 3,000 times raised RecursionError instead, and the
manager got the internal-error page (its traceback logged at ERROR) where an unreadable value
gets its own answer. Now it gets that answer: the passkey's answer could not be verified, the
passkey could not be added, and nothing changed.
"""

from __future__ import annotations

import pytest
from countersign.infrastructure.entrypoints.web.request_form import form_json

from tests.attacks.conftest import Web, assert_nothing_changed, snapshot
from tests.conftest import AVA

DEEP = "[" * 3000 + "]" * 3000


def test_an_approve_form_with_a_deeply_nested_assertion_approves_nothing_and_says_why(
    web: Web,
) -> None:
    proposal = web.propose()
    ava = web.member(AVA)
    before = snapshot(web.cs)

    sent = ava.submit(
        f"/proposals/{proposal}/approve", {"credential": DEEP, "nonce": "n", "confirm": "yes"}
    )

    assert sent.status_code == 303, sent.text[-400:]
    page = " ".join(ava.get(sent.headers["location"]).text.split())
    assert "Your passkey&#39;s answer could not be verified, so nothing was approved." in page
    assert_nothing_changed(web.cs, before)


def test_a_deeply_nested_passkey_is_not_added_and_the_page_says_so(web: Web) -> None:
    ava = web.member(AVA)
    before = snapshot(web.cs)

    sent = ava.submit("/account/passkeys", {"credential": DEEP, "nonce": "n", "name": "Laptop"})

    assert sent.status_code == 303, sent.text[-400:]
    page = " ".join(ava.get(sent.headers["location"]).text.split())
    assert "The passkey could not be added: nothing changed." in page
    assert_nothing_changed(web.cs, before)


def test_an_edits_structured_field_reads_deep_nesting_as_unreadable() -> None:
    """The edit form's JSON fields (a plug-in's contract may have one) read it so too: its
    page then says "This is not in the expected form (JSON).", as for any unreadable text."""
    with pytest.raises(ValueError, match="nested too deeply"):
        form_json(DEEP)
