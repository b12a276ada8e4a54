"""The conformance suite's per-contract scaffolding and its few helpers.

Every contract in ``REGISTRY`` is checked by ``test_conformance.py``. What the suite cannot
derive from the contract itself (which seeded record to act on and, if the seed is not
enough, how to bring it to the state the example needs, a valid example request, how to make
a material fact change behind a proposal's back, how to make the provider lose its answer) a
contract's *case* declares: one module in ``tests/contracts/cases/`` per contract, calling
``register(ConformanceCase(...))``. A registered contract without a case fails the
suite. Its golden preview lives in ``tests/contracts/golden/<kind>.json``.

Everything that touches a provider's internals is in ``provider_requests``: when providers
change, that function is the one line to change.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.contracts import REGISTRY
from countersign.infrastructure.audit.verify import VerifyReport, verify
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, events_table
from tests.contracts import cases as cases_package

Seeded = Mapping[str, Any]
"""What ``infrastructure.demo.seed.seed`` returned: the demo records' ids."""


@dataclass(frozen=True)
class ConformanceCase:
    """What the conformance suite needs to know about one contract besides the contract."""

    kind: str
    """The operation kind, exactly as registered."""
    request: Mapping[str, Any]
    """A valid example request, as the model would send it. Approved on ``resource`` it
    succeeds. Every string in it is a field the suite fills with control characters."""
    resource: Callable[[Seeded], str]
    """The seeded resource id the example request is proposed on."""
    observe: Callable[[Countersign, str], Any]
    """The domain state the operation changes, given the resource id, as a JSON-comparable
    value: equal before and after an approval that executed nothing. Include something that
    counts changes (a version, a list of records), so a second effect shows."""
    make_stale: Callable[[Countersign, str], None]
    """Change a material fact of a pending proposal on ``resource`` behind its back, through
    the ordinary interface (``cs.club``), so that approval must answer ``revision_required``."""
    stale_reason: str
    """The reason code ``make_stale`` leads to; one of the contract's ``revision_reasons``."""
    lost_response_resource: Callable[[Seeded], str] | None = None
    """For a contract with an external effect: a seeded resource on which the example request
    is external and the provider performs the effect but its answer is lost (the sandbox's
    lost-response card). Required when the example's arguments are external, unless
    ``lose_response`` makes the provider lose it on ``resource``."""
    lose_response: Callable[[Countersign, str], None] | None = None
    """For an external effect whose provider loses its answer because of a fact rather than a
    seeded record of its own (a recipient the e-mail sandbox answers with a lost response):
    establish that fact on the resource, through the ordinary interface, before the
    lost-response scenario proposes on it (``lost_response_resource``, else ``resource``)."""
    arrange: Callable[[Countersign, Seeded], None] | None = None
    """For an operation that acts on what another one produced (a draft applied to the
    broadcast form): bring the seeded records to the state the example needs, through the
    ordinary interface, before each scenario. None: the seed is all it needs."""
    organization: str = "granite"
    """The organization (slug) the resource belongs to."""
    actor: str = AVA
    """A member who may both propose and approve the operation."""


_CASES: dict[str, ConformanceCase] = {}
_loaded = False


def register(case: ConformanceCase) -> ConformanceCase:
    """Enrol a contract's case; a case module calls this once at import."""
    if case.kind in _CASES:
        raise ValueError(f"{case.kind} has two conformance cases")
    _CASES[case.kind] = case
    return case


def all_cases() -> dict[str, ConformanceCase]:
    """Every case, importing every module of ``tests/contracts/cases/`` the first time."""
    global _loaded
    if not _loaded:
        for module in pkgutil.iter_modules(cases_package.__path__):
            importlib.import_module(f"{cases_package.__name__}.{module.name}")
        _loaded = True
    return dict(_CASES)


def case_module(kind: str) -> str:
    """Where a kind's case lives: named like its contract's module in domain/contracts/."""
    module = type(REGISTRY[kind]).__module__.rsplit(".", 1)[-1]
    return f"tests/contracts/cases/{module}.py"


def case_for(kind: str) -> ConformanceCase:
    """The kind's case; a registered contract without one fails, saying where to add it."""
    case = all_cases().get(kind)
    if case is None:
        pytest.fail(
            f"{kind} is registered in domain/contracts/__init__.py but has no conformance "
            f"case: add {case_module(kind)} calling register(ConformanceCase(kind={kind!r}, "
            "...)) (the fields are described in tests/contracts/conformance.py), then write "
            "its golden preview with COUNTERSIGN_UPDATE_GOLDEN=1 .venv/bin/pytest "
            "tests/contracts -k golden, and review and commit it.",
            pytrace=False,
        )
    return case


# -- the provider: the one place that reads its internals ------------------------------------


def provider_requests(
    cs: Countersign, proposal_id: str | None = None, provider: str | None = None
) -> dict[str, int]:
    """Every idempotency key a provider (every sandbox, or the one named ``provider``) holds
    an effect under (only those of ``proposal_id``, if given), with how many requests it
    received under that key. Each sandbox lists what it holds with ``held()``."""
    return {
        str(record["idempotency_key"]): int(record["requests"])
        for name, sandbox in cs.proposals.settlement.providers.items()
        if provider is None or name == provider
        for record in sandbox.held()  # type: ignore[attr-defined]
        if proposal_id is None
        or proposal_id in str(record["idempotency_key"])
        or record["metadata"].get("proposal_id") == proposal_id
    }


# -- stored events and the audit -------------------------------------------------------------


def rewrite_proposed(
    cs: Countersign, proposal_id: str, change: Callable[[dict[str, Any]], None]
) -> None:
    """Edit a proposal's stored ``Proposed`` event in SQL, as an attacker or a bad migration
    would (``change`` edits the event's state in place). Read it back in another process: this
    one may hold the proposal already."""
    key: Any = UUID(proposal_id)
    if cs.database.kind == "sqlite":
        key = key.hex
    table = events_table(cs)
    where = "WHERE originator_id = ? AND originator_version = 1"
    with cs.sql.transaction() as cursor:
        row = cursor.execute(f"SELECT state FROM {table} {where}", (key,)).fetchone()
        assert row is not None, "the Proposed event is not where the suite expects it"
        state = json.loads(bytes(row[0]))
        change(state)
        cursor.execute(f"UPDATE {table} SET state = ? {where}", (json.dumps(state).encode(), key))


def audit_report(cs: Countersign) -> VerifyReport:
    """``audit verify`` after every projection has caught up: the chain of every proposal, and
    the audit trail's copy of it (which also proves the projections took every event)."""
    for runner in cs.projection_runners():
        runner.catch_up()
    return verify(cs.app, cs.sql)


def assert_audit_intact(cs: Countersign) -> None:
    report = audit_report(cs)
    assert report.ok, report.to_json()
    assert report.proposals > 0


# -- walking a JSON value --------------------------------------------------------------------

JsonPath = tuple[str | int, ...]
"""Where a value is inside a JSON value: keys and list indexes."""


def nodes(value: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, Any]]:
    """Every value inside ``value`` (not ``value`` itself), depth first, with its path."""
    children: list[tuple[str | int, Any]] = []
    if isinstance(value, Mapping):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    for key, child in children:
        yield (*path, key), child
        yield from nodes(child, (*path, key))


def replaced(value: Any, path: JsonPath, new: Any) -> Any:
    """A deep copy of ``value`` with the value at ``path`` replaced by ``new``."""
    copy = json.loads(json.dumps(value))
    if not path:
        return new
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return copy


def dotted(path: JsonPath) -> str:
    """A path as problems name fields: ``filters.leagues.0``."""
    return ".".join(str(part) for part in path)
