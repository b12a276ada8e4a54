"""The operation-contract registry: one line per operation kind.

Each line declares an operation (``Declared``): its kind, section and permission, and where
its contract is. That is all a process needs to list operations, check permissions, build
the command line or list a section's sections, so a contract's module (its pydantic models,
its texts, its rules) is imported only when its kind is first used: ``REGISTRY[kind]`` or
``REGISTRY.get(kind)`` loads it, and a process that proposes and approves one kind never
imports the others (each costs 0.1 to 0.5 MB; the client's budget is 60 MB). Iterating
``REGISTRY.values()`` loads them all; ``declarations(REGISTRY)`` and iterating the kinds do
not.

The registry rules (a kind registered twice; a preview whose labels do not match its fields;
a revision reason declared twice; a contract whose kind, section or permission is not the
one declared) are checked when a contract loads (``RegistryError``, saying which), and for a
contract object given ready-made (a plug-in's, built with its clients) when it is installed.
countersign's own contracts load before any plug-in's, so that a plug-in's contract that
clashes with one of them is the one refused.
``REVISION_REASONS`` loads every contract on first use: a stored reason code may be any
operation's.

A deployment's plug-ins (``COUNTERSIGN_PLUGINS``) add theirs with ``install``, called once by
bootstrap before anything reads them: the objects are changed in place, so every importer
(``from countersign.domain.contracts import REGISTRY``) sees the same registry.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, overload

from countersign.domain.club.permissions import Permission
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.rules import broken_rule
from countersign.domain.scope import Section

if TYPE_CHECKING:
    from countersign.domain.contracts.base import OperationContract

    AnyContract: TypeAlias = OperationContract[Any, Any, Any, Any, Any]


def __getattr__(name: str) -> Any:
    """``AnyContract`` at run time without importing the contracts' base (and pydantic) with
    the registry: only code that uses it at run time pays for it."""
    if name == "AnyContract":
        from countersign.domain.contracts.base import OperationContract

        return OperationContract[Any, Any, Any, Any, Any]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_T = TypeVar("_T")


class RegistryError(ValueError):
    """A contract that breaks a registry rule: the message names it and the rule."""


@dataclass(frozen=True)
class Declared:
    """An operation as the registry knows it before its contract is imported.

    ``contract`` says where the contract is: ``"package.module:Name"`` (``".module:Name"``
    within this package), naming the contract class (built without arguments) or a function
    of no arguments that returns the contract. A plug-in's contract that needs its clients
    names such a function, or is given to the plug-in ready-made instead."""

    kind: str
    section: Section
    permission: str
    contract: str = field(default="", compare=False)

    @classmethod
    def of(cls, contract: AnyContract) -> Declared:
        """A contract object's declaration (it is loaded already)."""
        return cls(contract.kind, contract.section, contract.permission)

    def load(self) -> AnyContract:
        """Imports the contract's module and builds the contract."""
        module, _, name = self.contract.partition(":")
        if not module or not name:
            raise RegistryError(
                f"{self.kind} names its contract {self.contract!r}, not module:Name"
            )
        try:
            found = getattr(importlib.import_module(module, __name__), name)
        except Exception as missing:  # whatever importing it raised: named
            raise RegistryError(
                f"{self.kind}'s contract {self.contract!r} cannot be imported: {missing}"
            ) from None
        try:
            return found()  # type: ignore[no-any-return]
        except Exception as error:  # whatever building it raised: named
            raise RegistryError(
                f"{self.kind}'s contract {self.contract!r} cannot be built: "
                f"{type(error).__name__}: {error}"
            ) from None


BUILT_IN: tuple[Declared, ...] = (
    Declared(
        "order.refund_missing_discount",
        Section("orders"),
        Permission.REFUND_ORDERS,
        ".refund_missing_discount:RefundMissingDiscount",
    ),
    Declared(
        "email_broadcast.apply_draft",
        Section("email_broadcasts"),
        Permission.PREPARE_BROADCASTS,
        ".apply_broadcast_draft:ApplyBroadcastDraft",
    ),
    Declared("roster.move_member", Section("roster"), "roster.manage", ".move_member:MoveMember"),
    Declared(
        "order.cancel_registration",
        Section("orders"),
        "orders.refund",
        ".cancel_registration:CancelRegistration",
    ),
    Declared(
        "email_broadcast.send",
        Section("email_broadcasts"),
        "email_broadcasts.send",
        ".send_broadcast:SendBroadcast",
    ),
    Declared(
        "roster.remove_member", Section("roster"), "roster.manage", ".remove_member:RemoveMember"
    ),
    Declared("roster.add_member", Section("roster"), "roster.manage", ".add_member:AddMember"),
)
"""countersign's own operations, in registry order."""

_OWN = frozenset(declared.kind for declared in BUILT_IN)

Check = Callable[["AnyContract"], None]


@dataclass
class _Contents:
    """What the registry holds; replaced as a whole by ``install``."""

    declared: dict[str, Declared]
    loaded: dict[str, AnyContract] = field(default_factory=dict)
    reasons: dict[str, Localized] = field(default_factory=dict)
    broken: dict[str, RegistryError] = field(default_factory=dict)
    checks: dict[str, Check] = field(default_factory=dict)

    def add(self, contract: AnyContract, declared: Declared | None, reserved: Set[str]) -> None:
        """Checks a contract against the registry rules and its declaration, then holds it."""
        from countersign.domain.contracts.base import missing_parts  # loaded with any contract

        missing = missing_parts(contract)
        if missing:
            raise RegistryError(
                f"{getattr(contract, 'kind', type(contract).__name__)} lacks "
                f"{', '.join(missing)}: every contract sets each "
                "(docs/adding-an-operation.md)"
            )
        kind = contract.kind
        if declared is not None and Declared.of(contract) != declared:
            raise RegistryError(
                f"{declared.kind} is declared in section {declared.section!r} with permission "
                f"{declared.permission!r}; its contract is {kind!r} in section "
                f"{contract.section!r} with permission {contract.permission!r}"
            )
        broken = broken_rule(contract)
        if broken is not None:
            raise RegistryError(broken)
        for code in contract.revision_reasons:
            if code in self.reasons or code in reserved:
                raise RegistryError(f"revision reason {code!r} is declared twice")
        check = self.checks.get(kind)
        if check is not None:
            check(contract)
        self.reasons.update(contract.revision_reasons)
        self.loaded[kind] = contract


class Registry(Mapping[str, "AnyContract"]):
    """Contracts by kind, each imported on first use (see the module's docstring)."""

    def __init__(self, declared: Iterable[Declared]) -> None:
        self._lock = threading.RLock()
        self._reserved: frozenset[str] = frozenset()
        self._contents = _Contents(_declarations(declared))

    # -- the Mapping: kinds without importing, contracts on access ----------------------------

    def __getitem__(self, kind: str) -> AnyContract:
        contract = self._contents.loaded.get(kind)
        return contract if contract is not None else self._load(kind)

    @overload
    def get(self, kind: str, /) -> AnyContract | None: ...
    @overload
    def get(self, kind: str, /, default: AnyContract | _T) -> AnyContract | _T: ...
    def get(self, kind: str, /, default: Any = None) -> Any:
        contract = self._contents.loaded.get(kind)
        if contract is not None:
            return contract
        return self._load(kind) if kind in self._contents.declared else default

    def __contains__(self, kind: object) -> bool:
        return kind in self._contents.declared

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._contents.declared))

    def __len__(self) -> int:
        return len(self._contents.declared)

    # -- what is known without importing --------------------------------------------------------

    def declared(self) -> tuple[Declared, ...]:
        """Every operation's declaration, in registry order; imports nothing."""
        return tuple(self._contents.declared.values())

    def declaration(self, kind: str) -> Declared | None:
        """One operation's declaration (None for an unknown kind); imports nothing."""
        return self._contents.declared.get(kind)

    def loaded(self) -> frozenset[str]:
        """The kinds whose contracts this process has loaded so far."""
        return frozenset(self._contents.loaded)

    def load_all(self) -> None:
        """Loads every contract (RegistryError for the first that breaks a rule)."""
        for kind in self:
            self[kind]

    def revision_reasons(self) -> dict[str, Localized]:
        """Every contract's revision reasons by code (loads every contract). A contract that
        breaks a rule is left out: it says so where its own kind is used."""
        for kind in self:
            with contextlib.suppress(ValueError):
                self[kind]
        return self._contents.reasons

    def reserve_reasons(self, codes: Iterable[str]) -> None:
        """Revision-reason codes no contract may declare (the lifecycle's own)."""
        with self._lock:
            codes = frozenset(codes)
            taken = sorted(codes & self._contents.reasons.keys())
            if taken:
                raise RegistryError(f"contracts redeclare shared revision reasons: {taken}")
            self._reserved |= codes

    def _load(self, kind: str) -> AnyContract:
        with self._lock:
            contents = self._contents
            if kind in contents.loaded:
                return contents.loaded[kind]
            if kind in contents.broken:
                raise contents.broken[kind]
            declared = contents.declared[kind]  # KeyError: an unknown kind
            if kind not in _OWN:
                self._own_first(contents)
            try:
                contents.add(declared.load(), declared, self._reserved)
            except RegistryError as broken:
                contents.broken[kind] = broken
                raise
            return contents.loaded[kind]

    def install(
        self,
        declared: Iterable[Declared | AnyContract],
        check: Check | None = None,
    ) -> None:
        """The built-in operations and these (declarations, or contract objects, checked
        now); ``check`` runs on each of these when it loads. Nothing changes on an error."""
        with self._lock:
            extra = tuple(declared)
            given = [item for item in extra if not isinstance(item, Declared)]
            every = (*BUILT_IN, *(d if isinstance(d, Declared) else Declared.of(d) for d in extra))
            contents = _Contents(_declarations(every))
            if check is not None:
                contents.checks = {Declared.of(c).kind: check for c in given} | {
                    d.kind: check for d in extra if isinstance(d, Declared)
                }
            for kind, contract in self._contents.loaded.items():
                if kind in _OWN:  # countersign's own, loaded already: checked when they were
                    contents.add(contract, None, self._reserved)
            if given:
                self._own_first(contents)
            for contract in given:
                contents.add(contract, None, self._reserved)
            self._contents = contents

    def _own_first(self, contents: _Contents) -> None:
        """Loads countersign's own contracts before a plug-in's: a plug-in's contract that
        clashes with one of them (a revision reason's code) is the one refused, never
        countersign's own operation (a process with no plug-in contract in use skips this)."""
        for declared in BUILT_IN:
            if declared.kind not in contents.loaded:
                contents.add(declared.load(), declared, self._reserved)


def _declarations(declared: Iterable[Declared]) -> dict[str, Declared]:
    found: dict[str, Declared] = {}
    for item in declared:
        if item.kind in found:
            raise RegistryError(f"{item.kind} is registered twice")
        found[item.kind] = item
    return found


REGISTRY = Registry(BUILT_IN)
"""Every operation's contract by kind, in registry order (plug-ins' after countersign's)."""


def declarations(registry: Mapping[str, AnyContract] = REGISTRY) -> tuple[Declared, ...]:
    """Every operation's kind, section and permission, in registry order, without importing
    a contract of the registry (a plain mapping of contracts works too)."""
    if isinstance(registry, Registry):
        return registry.declared()
    return tuple(Declared.of(contract) for contract in registry.values())


def declaration(kind: str, registry: Mapping[str, AnyContract] = REGISTRY) -> Declared | None:
    """One operation's kind, section and permission (None for an unknown kind), without
    importing its contract from the registry."""
    if isinstance(registry, Registry):
        return registry.declaration(kind)
    contract = registry.get(kind)
    return None if contract is None else Declared.of(contract)


def contracts_in(section: Section) -> tuple[AnyContract, ...]:
    """The contracts a section's assistant may propose, in registry order (only these are
    loaded)."""
    return tuple(REGISTRY[d.kind] for d in REGISTRY.declared() if d.section == section)


class _RevisionReasons(Mapping[str, Localized]):
    """Every contract's revision reasons by code: a stored code names one sentence
    everywhere. The first use loads every contract."""

    def __getitem__(self, code: str) -> Localized:
        return REGISTRY.revision_reasons()[code]

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY.revision_reasons())

    def __len__(self) -> int:
        return len(REGISTRY.revision_reasons())


REVISION_REASONS: Mapping[str, Localized] = _RevisionReasons()


_PERMISSIONS: set[str] = {*Permission, *(d.permission for d in BUILT_IN)}
PERMISSIONS: Set[str] = _PERMISSIONS
"""Every permission a member may hold: the application's own, each contract's, and the ones
a plug-in declares."""


def install(
    contracts: Iterable[Declared | AnyContract],
    permissions: Iterable[str] = (),
    check: Check | None = None,
) -> None:
    """Make the built-in operations and these the registry (with their permissions):
    RegistryError, saying which, when one breaks a registry rule, and then nothing changes.
    Each may be declared (loaded on first use, when ``check`` and the rules run) or a contract
    object (checked now). Called by bootstrap with the deployment's plug-ins (``install(())``
    is the built-in registry again)."""
    given = tuple(contracts)
    REGISTRY.install(given, check)
    _PERMISSIONS.clear()
    _PERMISSIONS.update({*Permission, *(d.permission for d in REGISTRY.declared()), *permissions})
