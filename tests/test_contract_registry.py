"""The registry imports a contract's module when its kind is first used, and still enforces
its rules: a declared operation (kind, section, permission, where its contract is) is listed,
permitted and offered without importing it; a contract that breaks a rule, or is not what its
line declares, is refused with a message naming it when it loads."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from countersign.application.authorization import decide_permission, sections_of
from countersign.application.plugins import Plugin, PluginError, install
from countersign.domain.contracts import (
    BUILT_IN,
    PERMISSIONS,
    REGISTRY,
    REVISION_REASONS,
    Declared,
    Registry,
    declarations,
)
from countersign.domain.scope import Section
from countersign.infrastructure.bootstrap import enable_plugins

# One operation in a module of its own, as a plug-in's: {extra} is spliced into its class.
OPERATION = '''
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from countersign.domain.club.roster import Roster
from countersign.domain.contracts.base import (
    ContractRequest, Facts, Frozen, OperationContract, Prepared,
)
from countersign.domain.contracts.presentation import Localized, PreviewField
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope, Section
from eventsourcing.domain import Aggregate
from pydantic import Field


class Request(ContractRequest):
    """Propose a note on the roster."""

    note: str = Field(min_length=1, max_length=200, description="The note, in one line.")


class Arguments(Frozen):
    note: str


class Preview(Frozen):
    note: str


class Result(Frozen):
    noted: bool


@dataclass
class NoteFacts(Facts):
    roster: Roster

    def aggregates(self) -> list[Aggregate]:
        return []


class Note(OperationContract[Request, Arguments, Preview, Result, NoteFacts]):
    kind = "lazy.note"
    contract_version = 1
    section = Section("roster")
    permission = "lazy.note"
    title = Localized(en="Note", fr="Note")
    preview_fields = {{"note": PreviewField(Localized(en="Note", fr="Note"))}}
    revision_reasons = {{"lazy_note_changed": Localized(en="Changed.", fr="Changé.")}}
    assistant_instructions = "Propose a note when the manager asks for one."
{extra}

    def load(self, scope: Scope, store: Repository) -> NoteFacts:
        return NoteFacts(store.get(scope.resource_id, Roster))

    def resolve(self, request: Request, facts: NoteFacts) -> Prepared[Arguments, Preview]:
        return Prepared(Arguments(note=request.note), Preview(note=request.note))

    def recheck(self, arguments: Arguments, facts: NoteFacts) -> dict[str, Any]:
        return {{}}

    def execute(self, execution: ExecutionContract[Arguments], facts: NoteFacts) -> Result:
        return Result(noted=True)

    def success_text(self, preview: Preview, result: Result, language: str = "en") -> str:
        return "Noted."

    def headline(self, preview: Preview, language: str = "en") -> str:
        return preview.note
'''

NOTE = Declared("lazy.note", Section("roster"), "lazy.note", "lazy_ops.note:Note")


@pytest.fixture
def lazy_ops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package ``lazy_ops`` on the path (its modules written by the test), and the
    deployment's own registry again afterwards."""
    package = tmp_path / "lazy_ops"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield package
    finally:
        install(enable_plugins())
        for name in [m for m in sys.modules if m.startswith("lazy_ops")]:
            del sys.modules[name]


def _write(package: Path, name: str, extra: str = "") -> None:
    (package / f"{name}.py").write_text(OPERATION.format(extra=textwrap.indent(extra, "    ")))


def _plugin(*contracts: object, providers: dict[str, object] | None = None) -> Plugin:
    return Plugin("lazy", "lazy", contracts=contracts, providers=providers or {})  # type: ignore[arg-type]


def test_a_plugins_declared_operation_is_loaded_and_checked_when_it_is_installed(lazy_ops):
    _write(lazy_ops, "note")

    install([_plugin(NOTE)])

    # A broken plug-in must stop the process at start, so its operations load now.
    assert "lazy.note" in REGISTRY.loaded()
    assert "lazy_ops.note" in sys.modules
    assert list(REGISTRY)[-1] == "lazy.note"
    assert "lazy.note" in PERMISSIONS
    assert decide_permission("lazy.note") == "lazy.note"
    assert NOTE in declarations()
    assert Section("roster") in sections_of()
    contract = REGISTRY["lazy.note"]
    assert contract.kind == "lazy.note"
    assert REGISTRY.get("lazy.note") is contract
    assert REVISION_REASONS["lazy_note_changed"].text("en") == "Changed."


def test_a_declared_operation_is_imported_when_its_kind_is_first_used():
    """countersign's own operations, on a registry of their own: nothing imported until a
    kind is used, then that kind's contract only."""
    registry = Registry(BUILT_IN)
    assert "roster.move_member" in registry
    assert registry.declaration("roster.move_member") == BUILT_IN[2]
    assert registry.loaded() == frozenset()

    contract = registry["roster.move_member"]

    assert contract.kind == "roster.move_member"
    assert registry.loaded() == {"roster.move_member"}
    assert registry.get("roster.move_member") is contract


def test_an_operation_not_what_its_line_declares_is_refused_at_install(lazy_ops):
    _write(lazy_ops, "note")
    with pytest.raises(PluginError, match=r"lazy\.note is declared .* permission 'lazy.other'"):
        install([_plugin(Declared("lazy.note", Section("roster"), "lazy.other", NOTE.contract))])

    assert "lazy.note" not in REGISTRY  # the registries are countersign's own again


def test_a_declared_preview_without_its_labels_is_refused_at_install(lazy_ops):
    _write(lazy_ops, "note", "preview_hidden = frozenset({'count'})")

    with pytest.raises(PluginError, match=r"lazy\.note labels 'count', which its Preview does not"):
        install([_plugin(NOTE)])


def test_a_preview_value_that_may_be_none_needs_words_for_it_or_it_is_refused(lazy_ops):
    """A preview field that may hold None (``int | None``: no limit) read "None" on every card,
    in English and in French, and no test saw it unless an example held None."""
    optional = OPERATION.format(extra="").replace(
        "class Preview(Frozen):\n    note: str\n", "class Preview(Frozen):\n    note: str | None\n"
    )
    (lazy_ops / "note.py").write_text(optional)

    with pytest.raises(PluginError, match=r"lazy\.note's preview field 'note' may be None"):
        install([_plugin(NOTE)])

    words = 'PreviewField(Localized(en="Note", fr="Note"), words=lambda v, language: v)'
    (lazy_ops / "worded.py").write_text(
        optional.replace(
            'preview_fields = {"note": PreviewField(Localized(en="Note", fr="Note"))}',
            f'preview_fields = {{"note": {words}}}',
        )
    )
    install(
        [_plugin(Declared("lazy.note", Section("roster"), "lazy.note", "lazy_ops.worded:Note"))]
    )
    assert "lazy.note" in REGISTRY.loaded()


def test_an_operation_whose_arguments_hold_money_must_say_how_much_for_the_policies(lazy_ops):
    """An approval policy's threshold ("two approvers above $100") reads a proposal's money
    from ``amount_cents``; a contract that did not define it moved money under no threshold,
    and nothing said so."""
    paid = OPERATION.format(extra="").replace(
        "class Arguments(Frozen):\n    note: str\n",
        "class Arguments(Frozen):\n    note: str\n    fee_cents: int = 0\n",
    )
    (lazy_ops / "note.py").write_text(paid)

    with pytest.raises(PluginError, match=r"lazy\.note's arguments hold money \(fee_cents\)"):
        install([_plugin(NOTE)])

    said = (
        "    def amount_cents(self, arguments: Arguments) -> int:\n"
        "        return arguments.fee_cents\n"
    )
    (lazy_ops / "said.py").write_text(paid.replace("    def load(", said + "\n    def load(", 1))
    install([_plugin(Declared("lazy.note", Section("roster"), "lazy.note", "lazy_ops.said:Note"))])
    assert "lazy.note" in REGISTRY.loaded()


def test_a_plugins_revision_reason_clashing_with_countersigns_is_the_one_refused(lazy_ops):
    _write(lazy_ops, "note", "revision_reasons = {'audience_changed': Localized('A', 'A')}")

    with pytest.raises(PluginError, match="revision reason 'audience_changed' is declared twice"):
        install([_plugin(NOTE)])

    assert REGISTRY["email_broadcast.apply_draft"].kind == "email_broadcast.apply_draft"
    assert REVISION_REASONS["audience_changed"].text("en").startswith("The audience changed")


def test_two_plugin_lines_with_one_reason_refuse_the_later_line(lazy_ops):
    """Which of two clashing lines is refused does not depend on which kind a process uses
    first: they load in registry order, at install."""
    _write(lazy_ops, "note", "revision_reasons = {'lazy_same': Localized('A', 'A')}")
    _write(
        lazy_ops,
        "other",
        "kind = 'lazy.other'\nrevision_reasons = {'lazy_same': Localized('B', 'B')}",
    )
    other = Declared("lazy.other", Section("roster"), "lazy.note", "lazy_ops.other:Note")

    with pytest.raises(PluginError, match="revision reason 'lazy_same' is declared twice"):
        install([_plugin(NOTE, other)])


def test_a_built_contract_clashing_with_countersigns_reasons_installs_nothing(lazy_ops):
    _write(lazy_ops, "note", "revision_reasons = {'audience_changed': Localized('A', 'A')}")
    from lazy_ops.note import Note  # type: ignore[import-not-found]

    with pytest.raises(PluginError, match="revision reason 'audience_changed' is declared twice"):
        install([_plugin(Note())])

    assert "lazy.note" not in REGISTRY


def test_a_shared_revision_reason_may_not_be_redeclared(lazy_ops):
    import countersign.domain.handback  # noqa: F401  (it reserves the lifecycle's own reasons)

    _write(lazy_ops, "note", "revision_reasons = {'declined_by_manager': Localized('A', 'A')}")

    with pytest.raises(
        PluginError, match="revision reason 'declined_by_manager' is declared twice"
    ):
        install([_plugin(NOTE)])


def test_a_kind_declared_twice_installs_nothing(lazy_ops):
    with pytest.raises(PluginError, match=r"lazy\.note is registered twice"):
        install([_plugin(NOTE, NOTE)])

    assert "lazy.note" not in REGISTRY


def test_a_declared_contract_calling_a_provider_not_given_is_refused_at_install(lazy_ops):
    _write(lazy_ops, "note", 'provider = "lazy.nowhere"')

    with pytest.raises(PluginError, match=r"lazy\.note calls provider 'lazy.nowhere', not given"):
        install([_plugin(NOTE)])


def test_a_contract_line_that_names_no_contract_says_so(lazy_ops):
    with pytest.raises(PluginError, match=r"names its contract 'lazy_ops.note', not module:Name"):
        install([_plugin(Declared("lazy.note", Section("roster"), "lazy.note", "lazy_ops.note"))])


def test_a_contract_that_cannot_be_imported_or_built_says_which(lazy_ops):
    with pytest.raises(PluginError, match=r"lazy\.note's contract 'lazy_ops.gone:Note' cannot be"):
        install(
            [_plugin(Declared("lazy.note", Section("roster"), "lazy.note", "lazy_ops.gone:Note"))]
        )
    (lazy_ops / "broken.py").write_text("raise RuntimeError('no settings')\n")
    with pytest.raises(PluginError, match=r"cannot be imported: no settings"):
        install(
            [_plugin(Declared("lazy.note", Section("roster"), "lazy.note", "lazy_ops.broken:Note"))]
        )
    (lazy_ops / "needs.py").write_text("def make(client):\n    return client\n")
    with pytest.raises(PluginError, match=r"cannot be built: TypeError"):
        install(
            [_plugin(Declared("lazy.note", Section("roster"), "lazy.note", "lazy_ops.needs:make"))]
        )
    assert "audience_changed" in REVISION_REASONS  # countersign's own read as ever


def test_countersigns_own_operations_are_what_their_lines_declare():
    REGISTRY.load_all()

    for declared in declarations():
        assert Declared.of(REGISTRY[declared.kind]) == declared


def test_a_contract_subclass_keeps_the_types_its_body_sets():
    """A subclass of a contract that sets its own Request in its body got its parent's back
    (the parent's generic bases were read again), silently: found writing a plug-in whose
    variant asked the model for an amount, which then went unnoticed."""
    from countersign.domain.contracts.add_member import AddMember

    class Narrower(AddMember.Request):  # type: ignore[name-defined, misc]
        """Add a member, with a note."""

        note: str = ""

    class WithNote(AddMember):
        Request = Narrower

    assert WithNote.Request is Narrower
    assert WithNote.Preview is AddMember.Preview
