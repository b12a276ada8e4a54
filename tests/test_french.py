"""French everywhere a manager reads: every registered operation's card, approve button,
confirmation, inbox reason, outcome headline and outcome message, rendered in French from the
previews the conformance suite stores and from previews built from the contracts' own types,
must hold no English the application wrote, and its amounts read "48,00 $ CA". Every text
the application declares in both languages says something different in each."""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.presentation import Localized
from countersign.domain.handback import SHARED_REASONS
from countersign.domain.messages import (
    approve_label,
    inbox_reason,
    irreversible_note,
    outcome_messages,
    outcome_title,
    proposal_headline,
    withdrawn_message,
    withdraws_line,
)
from countersign.domain.money import format_money
from countersign.domain.times import at_time
from countersign.infrastructure.bootstrap import Countersign  # noqa: F401 (imports every module)
from countersign.infrastructure.entrypoints.cli import cards
from countersign.infrastructure.entrypoints.web.i18n import translator
from countersign.infrastructure.entrypoints.web.views import money, proposal_view
from jinja2 import Environment, PackageLoader, StrictUndefined

from tests.conftest import AVA, REFUND, TO_CARD
from tests.test_contract_metadata import example, placeholders, raised_reasons

GOLDEN = Path(__file__).parent / "contracts" / "golden"

#: Words of English the application writes that French never uses. A French text with one of
#: them shows an untranslated phrase (names and the club's own records are taken out first).
ENGLISH = re.compile(
    r"\b(the|and|to|for|of|with|was|were|has|have|been|will|not|nothing|refund(?:ed)?|"
    r"approve[ds]?|credit|account|member|order|cancel(?:led)?|league|spot|sent|failed|"
    r"checking|provider|changed|cannot|yes|no|by|review|status|proposal|requested|expires)\b"
    r"|\$\d|\bCAD\b",
    re.IGNORECASE,
)

NBSP = "\N{NO-BREAK SPACE}"


def previews(contract: AnyContract) -> Iterator[dict[str, Any]]:
    """The conformance suite's stored preview of the operation, and one from its types."""
    golden = GOLDEN / f"{contract.kind}.json"
    if golden.exists():
        yield json.loads(golden.read_text(encoding="utf-8"))["preview"]
    yield example(contract.Preview).model_dump(mode="json")


CASES = [
    pytest.param(contract, preview, id=f"{kind}-{index}")
    for kind, contract in REGISTRY.items()
    for index, preview in enumerate(previews(contract))
]


def stored_outcomes(contract: AnyContract) -> list[dict[str, Any]]:
    """One stored outcome of every kind the operation can have."""
    outcomes: list[dict[str, Any]] = [
        {"kind": "succeeded", "result": example(contract.Result).model_dump(mode="json")},
        {"kind": "terminal_failure", "correlation_id": "c0ffee"},
    ]
    if contract.provider is not None:
        for cause in ("response_lost", "provider_unavailable"):
            outcomes.append({"kind": "needs_reconciliation", "cause": cause})
    raised = raised_reasons(contract)
    for code in [*contract.revision_reasons, *SHARED_REASONS]:
        params: dict[str, Any] = {"currency": "CAD"}
        # The lifecycle's own reasons take what their sentences name (a set-aside proposal's
        # ``reference``, application/seal_check.py).
        shared = placeholders(SHARED_REASONS[code].en) if code in SHARED_REASONS else set()
        for name in raised.get(code, set()) | shared:
            params[name] = 2500 if name.endswith(("_cents", "_count")) else f"<{name}>"
        outcomes.append({"kind": "revision_required", "reason": {"code": code, "params": params}})
    return outcomes


def data_of(preview: dict[str, Any], contract: AnyContract) -> list[str]:
    """The club's own records in a preview (names, products, labels it stored): they read as
    they were written. Text the contract itself wrote (a field with ``words``) is not data."""
    own = {key for key, field in contract.preview_fields.items() if field.words is not None}
    return sorted(
        (str(v) for k, v in preview.items() if isinstance(v, str) and k not in own),
        key=len,
        reverse=True,
    )


def english_in(text: str, data: list[str]) -> list[str]:
    for value in data:
        text = text.replace(value, " ")
    text = re.sub(r"<[a-z_]+>", " ", text)  # a typed example's placeholder value
    return [found.group(0) for found in ENGLISH.finditer(text)]


def french_texts(contract: AnyContract, preview: dict[str, Any]) -> dict[str, str]:
    """Everything a French-speaking manager reads about one proposal of the operation."""
    kind = contract.kind
    now = datetime(2026, 12, 1, tzinfo=UTC)
    t = translator("fr")
    record = {
        "proposal_id": str(uuid4()),
        "operation": kind,
        "status": "pending",
        "preview": preview,
        "expires_at": now + timedelta(days=1),
    }
    templates = Environment(
        loader=PackageLoader("countersign.infrastructure.entrypoints.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
    )
    card = templates.get_template("_card.html").render(p=proposal_view(record, t, "fr", now), t=t)
    texts = {
        "browser card": html.unescape(re.sub(r"<[^>]+>", " ", card)),
        "terminal rows": "\n".join(v for _, v in cards.preview_rows(kind, preview, "fr")),
        # Its frame (the rows are above; the box wraps the club's records across lines). The
        # operation's kind and status are the machine's names, kept in every language.
        "terminal card": cards.render_card(
            {**record, "requested_by": "ava", "approved_by": "ava", "preview": {}}, "fr"
        ).replace(kind, " "),
        "headline": proposal_headline(kind, preview, "fr"),
        "approve button": approve_label(kind, preview, "fr") or "",
        "confirmation": irreversible_note(kind, preview, "fr") or "",
        "inbox reason": inbox_reason(kind, preview, "fr") or "",
        # What another proposal reads once this one's success withdrew it, and the warning
        # this one's review gives before it.
        "withdrew another": withdrawn_message(kind, preview, at_time(now, now, "UTC", "fr"), "fr"),
        "withdraws others": withdraws_line(kind, 2, "fr"),
    }
    for stored in stored_outcomes(contract):
        name = stored["kind"] + str(stored.get("reason", {}).get("code", stored.get("cause", "")))
        texts[f"outcome title {name}"] = outcome_title(kind, preview, stored, "fr")
        texts[f"outcome {name}"] = outcome_messages(kind, preview, stored, ("fr",))[0]
    return texts


@pytest.mark.parametrize(("contract", "preview"), CASES)
def test_a_french_manager_reads_no_english_the_application_wrote(contract, preview):
    data = data_of(preview, contract)
    untranslated = {
        where: found
        for where, text in french_texts(contract, preview).items()
        if (found := english_in(text, data))
    }
    assert untranslated == {}


@pytest.mark.parametrize(("contract", "preview"), CASES)
def test_french_amounts_read_the_french_way(contract, preview):
    texts = french_texts(contract, preview)
    amounts = [
        format_money(int(value), str(preview.get("currency")), "fr")
        for key, value in preview.items()
        if key.endswith("_cents") and key in contract.preview_fields
    ]
    for amount in amounts:
        assert amount.endswith(f"{NBSP}$" + f"{NBSP}CA")
        assert amount in texts["browser card"]
        assert amount in texts["terminal rows"]


def test_money_reads_each_language_through_babel():
    assert format_money(4800, "CAD") == "$48.00 CAD"
    assert format_money(4800, "CAD", "fr") == f"48,00{NBSP}${NBSP}CA"
    assert format_money(123456, "CAD", "fr") == f"1{NBSP}234,56{NBSP}${NBSP}CA"
    assert format_money(-123456, "CAD") == "-$1,234.56 CAD"
    assert format_money(4800, "USD", "fr") == f"48,00{NBSP}${NBSP}US"
    assert format_money(4800, "EUR", "fr") == f"48,00{NBSP}€"
    assert format_money(4800, "CAD", "de") == "$48.00 CAD"  # a language it does not speak
    assert money("not a number", "CAD", "fr") == "not a number"
    assert money(4800, None, "fr") == "48,00"


# -- every declared text differs between the languages -------------------------------------------


def _localized(value: Any, seen: set[int], depth: int = 0) -> Iterator[tuple[str, Localized]]:
    if id(value) in seen or depth > 6:
        return
    seen.add(id(value))
    if isinstance(value, Localized):
        yield "", value
    elif isinstance(value, dict):
        for key, item in value.items():
            for where, found in _localized(item, seen, depth + 1):
                yield f"[{key}]{where}", found
    elif isinstance(value, list | tuple | frozenset | set):
        for index, item in enumerate(value):
            for where, found in _localized(item, seen, depth + 1):
                yield f"[{index}]{where}", found
    elif is_dataclass(value) and not isinstance(value, type):
        for field in fields(value):
            for where, found in _localized(getattr(value, field.name), seen, depth + 1):
                yield f".{field.name}{where}", found


def declared_texts() -> Iterator[tuple[str, Localized]]:
    """Every Localized the application's modules declare: at module level, on their classes,
    and in the registered contracts and section assistants."""
    seen: set[int] = set()
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("countersign.") or module is None:
            continue
        for attribute, value in vars(module).items():
            owners = [value]
            if isinstance(value, type) and value.__module__ == name:
                owners = list(vars(value).values())
            for owner in owners:
                for where, found in _localized(owner, seen):
                    yield f"{name}.{attribute}{where}", found
    for kind, contract in REGISTRY.items():
        for attribute in dir(contract):
            if not attribute.startswith("__"):
                for where, found in _localized(getattr(contract, attribute, None), seen):
                    yield f"{kind}.{attribute}{where}", found


#: Texts that are rightly the same in both languages.
SAME_IN_BOTH = {"Participant", "Total", "Date", "Description", "Message"}


def test_every_declared_text_says_something_different_in_french():
    texts = list(declared_texts())
    assert len(texts) > 50
    same = [where for where, text in texts if text.en == text.fr and text.en not in SAME_IN_BOTH]
    assert same == []
    empty = [where for where, text in texts if not text.en.strip() or not text.fr.strip()]
    assert empty == []


# -- a refund to account credit, proposed and approved --------------------------------------------


def test_account_credit_reads_in_french_on_the_card_and_in_the_outcome(cs, seeded):
    created = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["account-credit"],
        request={**TO_CARD, "destination": "account_credit"},
    )
    # Stored as the contract wrote it, so proposals stored before French still read.
    assert created.preview["refund_destination"] == "club account credit for Sophie Martin"

    rows = dict(cards.preview_rows(REFUND, created.preview, "fr"))
    assert rows["Remboursé vers"] == "crédit au compte du club de Sophie Martin"
    assert dict(cards.preview_rows(REFUND, created.preview))["Refund to"] == (
        "club account credit for Sophie Martin"
    )
    amount = rows["Montant du remboursement"]
    assert amount.endswith(f"{NBSP}${NBSP}CA")
    assert approve_label(REFUND, created.preview, "fr") == (
        f"Créditer {amount} au compte de Sophie Martin"
    )

    cs.proposals.approve(created.proposal_id, AVA)
    card = cs.cards.card(created.proposal_id, AVA, "fr")
    assert card.message is not None
    assert "vers crédit au compte du club de Sophie Martin" in card.message
    assert amount in card.message
    assert english_in(card.message, ["Sophie Martin", card.preview["discount_name"]]) == []
    english = cs.cards.card(created.proposal_id, AVA).message
    assert english is not None
    assert "to club account credit for Sophie Martin" in english
