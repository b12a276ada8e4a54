"""What the conformance kit says when a new contract fails one of its checks: the cause and
what to write instead, not a bare assertion over the problems it found."""

from __future__ import annotations

from pathlib import Path

import pytest
from countersign.domain.contracts.base import ContractRequest
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.contracts.request_errors import parse_request
from countersign.infrastructure.testing.conformance import Conformance
from countersign.infrastructure.testing.scenarios import control_character_refusal
from countersign.infrastructure.testing.suite import ConformanceSuite
from pydantic import Field


class _Request(ContractRequest):
    """Propose adding a person to a league."""

    email: str = Field(description="Their email.", max_length=254, pattern=r"^[^@\s]+@[^@\s]+$")


def test_a_free_text_field_refused_by_its_pattern_is_said_to_read_as_a_reference():
    """An email given ``pattern=``: a line break in it is refused by the pattern, worded for
    every request as one of the record's references ("P1"), which the model and the manager
    then read. The strict-request check failed with the problems alone."""
    with pytest.raises(InvalidRequestError) as refused:
        parse_request(_Request, {"email": "c\nhloe@example.com"})

    said = control_character_refusal(("email",), refused.value.problems)

    assert said.startswith("email takes free text, but a line break or control character in it")
    assert '"not one of this record\'s references"' in said
    assert "its pattern= refused it first" in said
    assert "check its form with a rule in resolve (a Finding)" in said


def test_a_kind_without_a_case_is_told_the_command_that_writes_its_golden_preview_only():
    """The failure said ``COUNTERSIGN_UPDATE_GOLDEN=1 pytest -k golden``: every contract's
    golden check, any of whose files it rewrites, on every backend."""
    conformance = Conformance(cases="tests.contracts.cases", golden=Path("tests/contracts"))

    with pytest.raises(pytest.fail.Exception) as failed:
        conformance.case_for("roster.add_nobody")

    assert 'COUNTERSIGN_UPDATE_GOLDEN=1 pytest -k "golden and roster.add_nobody"' in str(
        failed.value
    )


def test_a_kind_without_a_case_fails_once_and_its_other_checks_say_where_to_look():
    """A registered operation without a case failed each of its 24 checks with the same
    400-character message; the one check that it has a case is enough to fail."""

    class Suite(ConformanceSuite):
        conformance = Conformance(cases="tests.contracts.cases", golden=Path("tests/contracts"))

    with pytest.raises(pytest.fail.Exception):
        Suite().test_every_registered_contract_has_a_conformance_case("roster.add_nobody")
    with pytest.raises(pytest.skip.Exception) as skipped:
        Suite().test_the_propose_tool_is_strict_and_every_field_described("roster.add_nobody")

    assert str(skipped.value) == (
        "roster.add_nobody has no conformance case: "
        "test_every_registered_contract_has_a_conformance_case says what to write"
    )
