"""Every contract owns how it reads: its title, preview labels, headline, success and revision
sentences in English and French, and its assistant tool. The terminal and the browser render
any contract from that declaration alone."""

from __future__ import annotations

import ast
import html
import inspect
import re
import string
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin
from uuid import UUID, uuid4

import pytest
from countersign.application.assistant.sections import ASSISTANTS
from countersign.domain.contracts import (
    BUILT_IN,
    REGISTRY,
    REVISION_REASONS,
    AnyContract,
    contracts_in,
)
from countersign.domain.contracts.base import Frozen
from countersign.domain.contracts.presentation import LANGUAGES, Localized, Shown
from countersign.domain.handback import SHARED_REASONS, reason_text
from countersign.domain.messages import operation_title, proposal_headline
from countersign.domain.outcomes import RevisionReason
from countersign.infrastructure.entrypoints.cli import cards
from countersign.infrastructure.entrypoints.web.i18n import translator
from countersign.infrastructure.entrypoints.web.views import proposal_view
from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import BaseModel

from tests.support.findings import findings

#: Every registered operation's kind; the ``contract`` fixture gives the registered object at
#: run time (a test that switches plug-ins builds them again: objects seen at collection may
#: no longer be the registered ones).
CONTRACTS = [pytest.param(kind, id=kind) for kind in REGISTRY]


@pytest.fixture
def contract(request: pytest.FixtureRequest) -> AnyContract:
    return REGISTRY[request.param]


ROOT = Path(__file__).resolve().parent.parent


# -- examples built from the contract's own types ------------------------------------------------


def example(model: type[BaseModel]) -> Any:
    """A valid instance of a frozen model, every field filled in by its type."""
    return model.model_validate(
        {name: _value(name, field.annotation) for name, field in model.model_fields.items()}
    )


def _value(name: str, annotation: Any) -> Any:
    origin = get_origin(annotation)
    if annotation is bool:
        return True
    if annotation is int:
        return 1234
    if annotation is str:
        return "CAD" if name == "currency" else f"<{name}>"
    if annotation is UUID:
        return uuid4()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return example(annotation).model_dump(mode="json")
    if origin is Literal:
        return get_args(annotation)[0]
    if origin is list:
        return [_value(name, get_args(annotation)[0])]
    if origin in (Union, types.UnionType):
        return _value(name, next(a for a in get_args(annotation) if a is not type(None)))
    raise TypeError(f"no example for {name}: {annotation}")


def example_preview(contract: AnyContract) -> dict[str, Any]:
    preview: dict[str, Any] = example(contract.Preview).model_dump(mode="json")
    return preview


def declared_labels(contract: AnyContract, language: str) -> list[str]:
    return [field.label.text(language) for field in contract.preview_fields.values()]


def raised_reasons(contract: AnyContract) -> dict[str, set[str]]:
    """Each ``RevisionNeededError(code, **params)`` in the contract's module, and each finding
    its ``recheck`` can raise: code -> params."""
    tree = ast.parse(inspect.getsource(inspect.getmodule(type(contract))))
    raised: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "RevisionNeededError"
        ):
            code = node.args[0]
            assert isinstance(code, ast.Constant), "a reason code is a literal"
            raised.setdefault(code.value, set()).update(k.arg for k in node.keywords if k.arg)
    for code, params in findings(contract, "recheck").items():
        raised.setdefault(code, set()).update(params)
    return raised


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def both_languages(text: Localized) -> None:
    assert text.en.strip()
    assert text.fr.strip()
    assert placeholders(text.en) == placeholders(text.fr), text


# -- declarations -------------------------------------------------------------------------------


@pytest.mark.parametrize("contract", CONTRACTS, indirect=True)
def test_a_contract_has_a_title_in_every_language(contract):
    both_languages(contract.title)
    assert contract.title.en != contract.title.fr


@pytest.mark.parametrize("contract", CONTRACTS, indirect=True)
def test_every_preview_field_has_a_label_in_every_language(contract):
    fields = contract.Preview.model_fields
    assert set(contract.preview_fields) | contract.preview_hidden == set(fields)
    assert not set(contract.preview_fields) & contract.preview_hidden
    for key, field in contract.preview_fields.items():
        both_languages(field.label)
        for language in LANGUAGES:
            assert field.label.text(language) == field.label.text(language).strip(), key
        if field.shown is Shown.FLAG:
            assert fields[key].annotation is bool, key
            both_languages(field.yes)
            both_languages(field.no)
        if field.shown is Shown.MONEY:
            assert fields[key].annotation is int, key
            assert "currency" in fields, key
    for language in LANGUAGES:
        labels = declared_labels(contract, language)
        assert len(set(labels)) == len(labels), labels


@pytest.mark.parametrize("contract", CONTRACTS, indirect=True)
def test_every_reason_a_contract_raises_has_a_sentence_in_every_language(contract):
    raised = raised_reasons(contract)
    assert set(contract.revision_reasons) == set(raised)
    for code, sentence in contract.revision_reasons.items():
        both_languages(sentence)
        assert placeholders(sentence.en) <= raised[code], code
        assert code not in SHARED_REASONS
        assert REVISION_REASONS[code] is sentence
        params: dict[str, str | int | bool] = {
            name: 2500 if name.endswith(("_cents", "_count")) else f"<{name}>"
            for name in raised[code]
        }
        reason = RevisionReason(code=code, params=params)
        english, french = reason_text(reason, "en"), reason_text(reason, "fr")
        assert english != french
        assert "{" not in english + french
        assert english != reason_text(RevisionReason(code="no_such_reason"), "en")


def test_shared_reasons_have_a_sentence_in_every_language():
    for sentence in SHARED_REASONS.values():
        both_languages(sentence)


@pytest.mark.parametrize("contract", CONTRACTS, indirect=True)
def test_success_and_headline_read_in_every_language(contract):
    preview = example(contract.Preview)
    result = example(contract.Result)
    for sentence in (contract.success_text, lambda p, _, lang: contract.headline(p, lang)):
        english, french = sentence(preview, result, "en"), sentence(preview, result, "fr")
        assert english.strip()
        assert french.strip()
        assert english != french


@pytest.mark.parametrize("contract", CONTRACTS, indirect=True)
def test_a_contract_brings_its_own_propose_tool_to_its_sections_assistant(contract):
    assert contract.tool_name == "propose_" + contract.kind.split(".", 1)[1]
    assert contract.assistant_instructions.count("{tool}") == 1
    assistant = ASSISTANTS[contract.section]
    assert contract in assistant.contracts
    assert contract.tool_name in assistant.instructions
    tools = {tool["function"]["name"]: tool["function"] for tool in assistant.tools()}
    assert tools[contract.tool_name]["description"] == " ".join(contract.Request.__doc__.split())
    assert assistant.contract_for(contract.tool_name) is contract


@pytest.mark.parametrize("contract", CONTRACTS, indirect=True)
def test_a_contract_that_may_call_out_names_a_provider_the_application_has(contract, cs):
    if contract.provider is None:
        with pytest.raises(NotImplementedError):
            contract.effect(uuid4(), Frozen())
    else:
        assert contract.provider in cs.proposals.settlement.providers
        effect = contract.effect(uuid4(), Frozen())
        assert effect.provider == contract.provider


def test_sections_list_exactly_the_registry_contracts_of_their_section():
    for section, assistant in ASSISTANTS.items():
        assert assistant.contracts == contracts_in(section)
        assert assistant.contracts
    assert {c.section for c in REGISTRY.values()} <= set(ASSISTANTS)


# -- generic rendering ----------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("contract", CONTRACTS, indirect=True)
def test_the_terminal_shows_the_declared_labels_in_order(contract, language):
    preview = example_preview(contract)
    rows = cards.preview_rows(contract.kind, preview, language)
    assert [label for label, _ in rows] == declared_labels(contract, language)

    card = cards.render_card(
        {
            "proposal_id": str(uuid4()),
            "operation": contract.kind,
            "requested_by": "ava@granite.example",
            "status": "pending",
            "expires_at": "2026-12-01T09:00:00+00:00",
            "preview": preview,
        },
        language,
    )
    positions = [card.index(f"│ {label} ") for label in declared_labels(contract, language)]
    assert positions == sorted(positions)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("contract", CONTRACTS, indirect=True)
def test_the_browser_shows_the_title_headline_and_labels_in_order(contract, language):
    preview = example_preview(contract)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    record = {
        "proposal_id": str(uuid4()),
        "operation": contract.kind,
        "status": "pending",
        "preview": preview,
        "expires_at": now + timedelta(days=1),
    }
    t = translator(language)
    view = proposal_view(record, t, language, now)
    templates = Environment(
        loader=PackageLoader("countersign.infrastructure.entrypoints.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
    )
    page = templates.get_template("_card.html").render(p=view, t=t)

    shown = [html.unescape(label) for label in re.findall(r"<dt>(.*?)</dt>", page)]
    assert shown == declared_labels(contract, language)
    assert contract.title.text(language) in html.unescape(page)
    headline = contract.headline(contract.Preview.model_validate(preview), language)
    assert headline in html.unescape(page)


def test_money_and_flags_read_the_same_in_the_terminal_and_the_browser():
    for contract in REGISTRY.values():
        preview = example_preview(contract)
        for language in LANGUAGES:
            terminal = cards.preview_rows(contract.kind, preview, language)
            record = {
                "proposal_id": str(uuid4()),
                "operation": contract.kind,
                "status": "pending",
                "preview": preview,
            }
            view = proposal_view(record, translator(language), language, datetime.now(UTC))
            assert terminal == [(row.label, row.value) for row in view["rows"]]


def test_a_preview_of_an_unregistered_operation_still_shows_its_fields():
    preview = {"amount_cents": 1250, "currency": "CAD", "urgent": True, "note": "hi"}
    rows = cards.preview_rows("gone.operation", preview)
    assert rows == [("amount cents", "$12.50 CAD"), ("urgent", "yes"), ("note", "hi")]
    assert proposal_headline("gone.operation", preview) == "gone.operation"
    assert operation_title("gone.operation", "fr") == "gone.operation"


# -- one home per operation ---------------------------------------------------------------------

_NOT_APPLICATION = {"tests", "docs", "scripts", "examples", ".venv", ".git"}
_DEMO_FILES = {"infrastructure/demo/story.py", "infrastructure/demo/seed.py"}


def _application_files() -> list[Path]:
    return [
        path
        for pattern in ("*.py", "*.html")
        for path in ROOT.rglob(pattern)
        if not _NOT_APPLICATION & set(path.relative_to(ROOT).parts)
        and str(path.relative_to(ROOT)) not in _DEMO_FILES
    ]


_REGISTRY = (ROOT / "domain" / "contracts" / "__init__.py").resolve()


@pytest.mark.parametrize("contract", CONTRACTS, indirect=True)
def test_only_the_contract_module_names_its_operation(contract):
    """Its module, and its one line in the registry, which declares it (kind, section,
    permission, where its contract is) so that it is imported only when first used."""
    own = Path(inspect.getsourcefile(type(contract)) or "").resolve()
    suffix = contract.kind.split(".", 1)[1]
    for path in _application_files():
        if path.resolve() == own:
            continue
        if path.resolve() == _REGISTRY and contract.kind in {d.kind for d in BUILT_IN}:
            assert path.read_text(encoding="utf-8").count(f'"{contract.kind}"') == 1
            continue
        text = path.read_text(encoding="utf-8")
        assert contract.kind not in text, path
        assert f"propose_{suffix}" not in text, path
