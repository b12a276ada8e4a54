"""The conformance suite's per-contract scaffolding and its few helpers.

The suite (``countersign.infrastructure.testing.suite``) checks every contract of the
``Conformance`` it is pointed at: countersign's own (``BUILT_IN``, cases in
``tests/contracts/cases``) or a plug-in's (its contracts, its own cases and golden folder).
What the suite cannot derive from the contract itself (which seeded record to act on and, if
the seed is not enough, how to bring it to the state the example needs, a valid example
request, how to make a material fact change behind a proposal's back, how to make the provider
lose its answer) a contract's *case* declares: a module calling ``register(ConformanceCase(...))``
in the cases package or module the ``Conformance`` names. A contract without a case fails the
suite. Its golden preview lives in ``<golden>/<kind>.json``.

Everything that touches a provider's internals is in ``provider_requests``: when providers
change, that function is the one line to change.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.contracts import BUILT_IN
from countersign.infrastructure.audit.verify import VerifyReport, verify
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.plugins import find
from countersign.infrastructure.testing.deployment import AVA, events_table

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
_ORIGINS: dict[str, str] = {}
"""Each case's kind, and the module that registered it."""


def register(case: ConformanceCase) -> ConformanceCase:
    """Enrol a contract's case; a case module calls this once at import."""
    if case.kind in _CASES:
        raise ValueError(f"{case.kind} has two conformance cases")
    _CASES[case.kind] = case
    _ORIGINS[case.kind] = str(sys._getframe(1).f_globals.get("__name__", ""))
    return case


@dataclass(frozen=True)
class Conformance:
    """What one conformance suite checks: countersign's own contracts (no ``plugins``), or
    those of the plug-ins named, with the cases and golden previews kept beside them."""

    cases: str
    """The cases' dotted module name: a package (every module in it is imported) or a
    module. Each calls ``register(ConformanceCase(...))``."""
    golden: Path
    """The folder of the golden previews, ``<kind>.json`` each (written there by
    ``COUNTERSIGN_UPDATE_GOLDEN=1``)."""
    plugins: tuple[str, ...] = ()
    """The plug-ins (``countersign.plugins`` entry-point names) whose contracts are checked,
    enabled in every deployment the suite's fixtures make. None: countersign's own."""
    case_hint: Callable[[str], str] | None = field(default=None, compare=False)
    """Where a kind's case belongs, for the message when it has none (default: the cases
    module's file)."""

    def kinds(self) -> list[str]:
        """The kinds checked: the plug-ins' contracts, else countersign's built-in ones."""
        if not self.plugins:
            return [contract.kind for contract in BUILT_IN]
        return [contract.kind for plugin in find(self.plugins) for contract in plugin.contracts]

    def all_cases(self) -> dict[str, ConformanceCase]:
        """Every case of this suite's cases location, importing it the first time."""
        module = importlib.import_module(self.cases)
        if hasattr(module, "__path__"):
            for found in pkgutil.iter_modules(module.__path__):
                importlib.import_module(f"{self.cases}.{found.name}")
        return {
            kind: case
            for kind, case in _CASES.items()
            if _ORIGINS[kind] == self.cases or _ORIGINS[kind].startswith(f"{self.cases}.")
        }

    def case_module(self, kind: str) -> str:
        """Where a kind's case lives (or belongs)."""
        if self.case_hint is not None:
            return self.case_hint(kind)
        return self.cases.replace(".", "/") + ".py"

    def case_for(self, kind: str) -> ConformanceCase:
        """The kind's case; a contract without one fails, saying where to add it."""
        case = self.all_cases().get(kind)
        if case is None:
            pytest.fail(
                f"{kind} is registered but has no conformance case: add "
                f"{self.case_module(kind)} calling register(ConformanceCase(kind={kind!r}, "
                "...)) (the fields are described in countersign.infrastructure.testing."
                "conformance), then write its golden preview with COUNTERSIGN_UPDATE_GOLDEN=1 "
                f'pytest -k "golden and {kind}", and review and commit it.',
                pytrace=False,
            )
        return case


# -- the provider: the one place that reads its internals ------------------------------------


def provider_requests(
    cs: Countersign, proposal_id: str | None = None, provider: str | None = None
) -> dict[str, int]:
    """Every idempotency key a provider (every sandbox, or the one named ``provider``) holds
    an effect under (only those of ``proposal_id``, if given), with how many requests it
    received under that key. Each provider lists what it holds with ``held()``: one mapping
    per effect, with its ``idempotency_key``, its ``requests`` count and its ``metadata``
    (the sandboxes do; a plug-in's provider checked by the suite must too)."""
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
