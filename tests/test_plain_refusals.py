"""The assistant's refusals speak the manager's language (issue 13, item 7).

A refused request keeps its precise problems for the model and for application services
(``field`` and ``message``), and says the same to people in plain words, in English and in
French: no field name of the request, no reference (P1, L1, D1), no option code
(``account_credit``). These tests walk every sentence a contract or the request parser can
give people, drive the refund's refusals with the seeded orders, and read what the manager
sees in the chat and on the command line.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.presentation import LANGUAGES, Localized
from countersign.domain.contracts.problems import UNFIT_REQUEST, InvalidRequestError, Problem
from countersign.domain.contracts.request_errors import MALFORMED_REQUEST, SAFE_SENTENCES
from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
from countersign.infrastructure.adapters.scripted_model import ScriptedEndpoint, StandInPolicy
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, REFUND, TO_CARD
from tests.support.findings import findings

CONTRACTS = Path(__file__).parents[1] / "domain" / "contracts"
REF = re.compile(r"\b[PLDR][0-9]+\b")


def _schema_words(node: Any) -> Iterator[str]:
    """Every property name and every allowed value a request schema declares."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                yield from value
            yield from _schema_words(value)
    elif isinstance(node, list):
        for item in node:
            yield from _schema_words(item)


def internal_words(contract: AnyContract) -> set[str]:
    """What people must never read about a contract's request: its field names written as
    code (``line_item``, ``from_league``) and its option codes (``account_credit``). A field
    named by a plain word ("payment", "email") may appear as that word."""
    schema = contract.Request.model_json_schema()
    names = {word for word in _schema_words(schema) if "_" in word}
    return names | set(_option_codes(schema))


def _option_codes(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key in ("enum", "const"):
            if key in node:
                value = node[key]
                yield from (str(v) for v in (value if isinstance(value, list) else [value]))
        for value in node.values():
            yield from _option_codes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _option_codes(item)


def leaks(text: str, contract: AnyContract | None = None) -> list[str]:
    """The internal names a people-facing text shows."""
    found = REF.findall(text)
    for contract_ in [contract] if contract is not None else REGISTRY.values():
        for word in internal_words(contract_):
            if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text):
                found.append(word)
    return found


def people_sentences() -> Iterator[tuple[str, AnyContract | None, Localized]]:
    for kind, contract in REGISTRY.items():
        for code, sentence in contract.request_problems.items():
            yield f"{kind}:{code}", contract, sentence
    for code, sentence in SAFE_SENTENCES.items():
        yield f"parse:{code}", None, sentence
    yield "parse:malformed", None, MALFORMED_REQUEST
    yield "unfit", None, UNFIT_REQUEST


SENTENCES = list(people_sentences())


@pytest.mark.parametrize(
    ("where", "contract", "sentence"), SENTENCES, ids=[s[0] for s in SENTENCES]
)
def test_no_sentence_for_people_shows_a_field_name_a_reference_or_an_option_code(
    where, contract, sentence
):
    for language in LANGUAGES:
        text = sentence.text(language)  # placeholders are the club's own data (names)
        assert leaks(text, contract) == [], (where, language)
        assert text.rstrip()[-1:] in (".", "!", "?"), (where, language)


def test_the_leak_check_catches_what_the_issue_showed():
    refund = REGISTRY[REFUND]
    assert leaks("payment P1 was cash; … use account_credit", refund) == ["P1", "account_credit"]
    assert leaks("Set line_item to L2.", refund) == ["L2", "line_item"]
    assert leaks("This payment was not made by card.", refund) == []


@pytest.mark.parametrize("contract", REGISTRY.values(), ids=list(REGISTRY))
def test_every_problem_a_contract_raises_carries_its_sentence_for_people(contract):
    said = findings(contract, "resolve")  # each finding proposing can raise -> its params
    assert said, f"{contract.kind} refuses no request?"
    for code, params in said.items():
        sentences = [s for key, s in contract.request_problems.items() if fnmatch(key, code)]
        assert sentences, f"{contract.kind}: request_problems has no sentence for {code!r}"
        for sentence in sentences:
            assert placeholders(sentence.en) <= params, code


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


# -- the refund's refusals, driven with the seeded orders --------------------------------------


def _refused(cs: Countersign, order: str, request: dict[str, Any]) -> list[Problem]:
    with pytest.raises(InvalidRequestError) as raised:
        cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=order,
            request=request,
        )
    return raised.value.problems


def test_every_refund_refusal_reads_plainly_in_both_languages(cs, seeded):
    orders = seeded["orders"]
    refund = REGISTRY[REFUND]
    cases = {
        "unknown refs": (orders["refund-ok"], {**TO_CARD, "payment": "P9", "discount": "D9"}),
        "cash to card": (orders["account-credit"], TO_CARD),
        "no such field": (orders["refund-ok"], {**TO_CARD, "amount_cents": 500000}),
        "not a ref": (orders["refund-ok"], {**TO_CARD, "line_item": "the league"}),
        "not an option": (orders["refund-ok"], {**TO_CARD, "destination": "cash"}),
        "left out": (orders["refund-ok"], {"payment": "P1"}),
    }
    said: dict[str, str] = {}
    for name, (order, request) in cases.items():
        problems = _refused(cs, order, request)
        assert all(p.field and p.message for p in problems)  # the model still gets precision
        for problem in problems:
            for language in LANGUAGES:
                text = problem.explain(language)
                assert leaks(text, refund) == [], (name, language, text)
        said[name] = problems[0].explain("en")
    assert said["unknown refs"] == "This order has no such payment."
    assert said["cash to card"] == (
        "This payment was not made by card, so it can only go back as club account credit."
    )
    cash = _refused(cs, orders["account-credit"], TO_CARD)[0]
    assert cash.field == "destination"  # the model is told precisely
    assert "account_credit" in cash.message
    assert cash.explain("fr").startswith("Ce paiement n'a pas été fait par carte")


def test_a_refund_already_made_is_refused_by_its_discount_name(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    created = cs.proposals.propose(
        organization="granite", actor=AVA, operation=REFUND, resource_id=order, request=TO_CARD
    )
    cs.proposals.approve(created.proposal_id, AVA)
    problem = _refused(cs, order, TO_CARD)[0]
    assert problem.explain("en") == "“Early-bird 15% discount” has already been refunded."
    assert problem.explain("fr") == "« Early-bird 15% discount » a déjà été remboursée."
    assert "D1" in problem.message  # the model is told which reference


# -- what the manager reads ----------------------------------------------------------------------


@pytest.fixture
def stand_in(seeded_database, clock) -> Iterator[tuple[Countersign, dict[str, Any]]]:
    """A seeded countersign whose model is the offline stand-in, behind the real client."""
    model = OpenAIChatModel(ScriptedEndpoint(StandInPolicy()).client(), "scripted")
    cs = bootstrap(Settings(database_url=seeded_database.url), clock=clock, model=model)
    yield cs, seeded_database.seeded
    model.client.close()
    cs.close()


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("en", "This payment was not made by card, so it can only go back as club account credit."),
        (
            "fr",
            "Ce paiement n'a pas été fait par carte : il ne peut être rendu qu'en crédit au "
            "compte du club.",
        ),
    ],
)
def test_the_manager_reads_a_refusal_in_plain_words_in_the_chat(stand_in, language, expected):
    cs, seeded = stand_in
    report = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="orders",
        resource_id=str(seeded["orders"]["account-credit"]),
        message="Refund her missed discount",
        language=language,
    )
    assert report.ended == "reply"
    assert report.proposal is None
    assert report.messages == [{"author": "model", "text": expected}]
    shown = json.dumps(report.messages, ensure_ascii=False)
    assert leaks(shown) == []
    assert "destination" not in shown


@pytest.mark.usefixtures("seeded_database")  # seed runs on a copy of the seeded template
def test_a_refused_propose_on_the_command_line_reads_plainly_and_json_keeps_the_fields(
    database_url, capsys
):
    assert main(["seed", "--json", "--database", database_url]) == 0
    orders = json.loads(capsys.readouterr().out)["orders"]
    argv = [
        "propose",
        *("--org", "granite", "--as", AVA, "--operation", REFUND),
        *("--resource", orders["account-credit"], "--request", json.dumps(TO_CARD)),
        *("--database", database_url),
    ]
    assert main(argv) == 4  # refused
    out, text = capsys.readouterr()
    assert out == ""
    assert text.splitlines()[:2] == [
        "The request was not accepted:",
        "  - This payment was not made by card, so it can only go back as club account credit.",
    ]
    assert leaks(text.splitlines()[1]) == []

    assert main([*argv, "--language", "fr"]) == 4
    assert "  - Ce paiement n'a pas été fait par carte" in capsys.readouterr().err

    assert main([*argv, "--json"]) == 4
    document = json.loads(capsys.readouterr().out)
    assert document["error"] == "invalid_request"
    assert [p["field"] for p in document["problems"]] == ["destination"]
    assert "account_credit" in document["problems"][0]["message"]
    assert set(document["problems"][0]) == {"field", "message"}
