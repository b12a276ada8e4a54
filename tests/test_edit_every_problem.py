"""An edit reports every problem it can at once: each field the contract finds invalid and,
for the fields that are valid, what they name that the facts lack (a payment, a line item
this order does not have), each next to its field, in English and French, with everything
typed kept. A manager who corrects one field does not meet the next only on resubmitting.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, count_events
from tests.test_web_governance import _edit, _input
from tests.test_web_pages import Web, _main, web_for

#: Three bad fields: a payment that is not a reference at all (the field is invalid), and a
#: line item and a discount written as references this order does not have (valid fields,
#: found wanting against the facts).
THREE_BAD = {
    "payment": "X1",
    "line_item": "L9",
    "discount": "D9",
    "destination": "original_payment_method",
}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _errors(main: str) -> dict[str, str]:
    """Each field's problems as the page shows them next to it, by field name."""
    found = re.findall(r'<p class="field-error" id="field-([\w-]+)-errors">([^<]+)</p>', main)
    return dict(found)


def test_every_bad_field_is_marked_at_once_validation_and_resolution_together(web: Web) -> None:
    proposal_id = web.propose("refund-ok")
    ava = web.browser(AVA)
    before = count_events(web.cs)

    refused = _edit(ava, proposal_id, THREE_BAD)

    assert refused.status_code == 422
    main = _main(refused)
    errors = _errors(main)
    assert set(errors) == {"payment", "line_item", "discount"}, errors
    assert main.count('aria-invalid="true"') == 3
    assert "The new proposal could not be prepared, and nothing was changed." in main
    summary = re.search(r'<p class="to-correct">(.*?)</p>', main, re.S)
    assert summary, main
    links = re.findall(r'<a href="#field-([\w-]+)">([^<]+)</a>', summary.group(1))
    assert links == [("payment", "Payment"), ("line_item", "Line item"), ("discount", "Discount")]
    for name, value in THREE_BAD.items():
        assert _input(main, name) == value  # nothing typed is lost
    assert count_events(web.cs) == before
    assert web.proposal(proposal_id).status == "pending"


def test_in_french_too(web: Web) -> None:
    proposal_id = web.propose("refund-ok")
    ava = web.browser(AVA)

    refused = ava.post(
        f"/proposals/{proposal_id}/edit",
        {**THREE_BAD, "csrf_token": ava.csrf("/")},
        **{"Accept-Language": "fr"},
    )

    assert refused.status_code == 422
    main = _main(refused)
    assert "La nouvelle proposition n&#39;a pas pu être préparée" in main
    assert "À corriger :" in main
    errors = _errors(main)
    assert set(errors) == {"payment", "line_item", "discount"}, errors
    english = _errors(_main(_edit(ava, proposal_id, THREE_BAD)))
    assert all(errors[name] != english[name] for name in errors)  # each said in French


def test_the_api_and_the_command_line_are_told_every_problem_too(web: Web) -> None:
    proposal_id = web.propose("refund-ok")

    with pytest.raises(InvalidRequestError) as refused:
        web.cs.access.revise(proposal_id, AVA, THREE_BAD)

    assert [p.field for p in refused.value.problems] == ["payment", "line_item", "discount"]


def test_a_field_the_form_could_not_read_is_stood_in_for_and_the_rest_resolved(web: Web) -> None:
    """What the edit form asks when a field's text is not of its type (a number, JSON): the
    problems of the rest, that field left to the form."""
    proposal_id = web.propose("refund-ok")
    request = {k: v for k, v in THREE_BAD.items() if k != "payment"}

    problems = web.cs.access.revision_problems(proposal_id, AVA, request, ["payment"])

    assert [p.field for p in problems] == ["line_item", "discount"]
    fine = {"line_item": "L1", "discount": "D1", "destination": "original_payment_method"}
    assert web.cs.access.revision_problems(proposal_id, AVA, fine, ["payment"]) == []


def test_a_problem_of_a_field_that_was_stood_in_for_is_not_the_persons(web: Web) -> None:
    """A valid line item with an invalid payment: the payment's own problem only, not one the
    stood-in payment would make (and a valid edit has none)."""
    proposal_id = web.propose("refund-ok")
    request = {**THREE_BAD, "line_item": "L1", "discount": "D1"}

    problems = web.cs.access.revision_problems(proposal_id, AVA, request, [])

    assert [p.field for p in problems] == ["payment"]
