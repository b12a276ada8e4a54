"""Plug-ins: operations, sections and providers from packages other than countersign.

A plug-in is a ``Plugin`` object that an installed distribution names under the
``countersign.plugins`` entry-point group; a deployment enables it by naming it in
``COUNTERSIGN_PLUGINS`` (``infrastructure/plugins.py`` finds and loads it, bootstrap installs
it). A plug-in builds its contracts itself, so each can be given its dependencies (a facts
client, a service client) as constructor arguments: nothing in countersign builds a contract.

Everything a plug-in adds is namespaced by it, so two plug-ins, or a plug-in and a later
countersign release, cannot claim the same name: its operation kinds, sections and
permissions start with ``<namespace>.`` (sections ``<namespace>_…`` or the namespace
itself), and the packages whose events it stores are its own (never ``countersign.…``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from countersign.application.assistant import sections
from countersign.application.assistant.sections import SectionAssistant
from countersign.application.ports import EffectProvider
from countersign.domain import contracts
from countersign.domain.club.organization import Permission
from countersign.domain.contracts import AnyContract, Declared

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
_NAMESPACE = re.compile(r"^[a-z][a-z0-9_]{0,29}$")
_OPERATION = re.compile(r"^[a-z][a-z0-9_]{0,48}$")
#: countersign's own providers (its sandboxes), which a plug-in's contract may call too.
_BUILT_IN_PROVIDERS = ("payments", "email")
_PACKAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


#: How many times ``install`` was called in this process (whether or not it succeeded): whoever
#: remembers what it installed (``infrastructure.plugins.enable``) knows by it whether the
#: registries were installed again since, by anyone.
_installs = 0


class PluginError(ValueError):
    """A plug-in that cannot be installed: the message names it and says what to change."""


@dataclass(frozen=True)
class Plugin:
    """What a plug-in adds to countersign. ``name`` is what ``COUNTERSIGN_PLUGINS`` names
    (and its entry point's name); ``namespace`` prefixes everything it adds."""

    name: str
    namespace: str
    contracts: Sequence[AnyContract | Declared] = ()
    """Its operations, in the order catalogues list them: each built with its dependencies,
    or declared (``Declared``: kind, section, permission and ``"module:Name"``), so that its
    module is imported only when the operation is first used."""
    sections: Sequence[SectionAssistant] = ()
    """The assistants of the sections its contracts belong to, when not countersign's."""
    providers: Mapping[str, EffectProvider] = field(default_factory=dict)
    """The outside systems its contracts call, by the name a contract's ``provider`` gives."""
    permissions: Sequence[str] = ()
    """Permissions it checks beyond its contracts' own (each contract's is added anyway)."""
    event_packages: Sequence[str] = ()
    """The packages of the aggregates whose events it stores: the event store reads a stored
    topic only from these (and countersign's own domain)."""


def _refuse(plugin: Plugin, problem: str) -> PluginError:
    return PluginError(f"plug-in {plugin.name!r}: {problem}")


def _check(plugin: Plugin, builtin_areas: set[str]) -> None:
    """Its name, namespace, sections, permissions, providers and event packages."""
    prefix = plugin.namespace + "."
    if not _NAME.match(plugin.name):
        raise _refuse(plugin, "its name must be lower-case letters, digits and dashes")
    if not _NAMESPACE.match(plugin.namespace):
        raise _refuse(plugin, f"namespace {plugin.namespace!r} must be lower-case letters, _")
    if plugin.namespace in builtin_areas:
        raise _refuse(plugin, f"namespace {plugin.namespace!r} is countersign's own")
    for assistant in plugin.sections:
        section = str(assistant.section)
        if section != plugin.namespace and not section.startswith(plugin.namespace + "_"):
            raise _refuse(plugin, f"section {section!r} must be named {plugin.namespace}[_…]")
    for permission in plugin.permissions:
        if not permission.startswith(prefix):
            raise _refuse(plugin, f"permission {permission!r} must be named {prefix}<name>")
    for provider in plugin.providers:
        if provider in _BUILT_IN_PROVIDERS:
            raise _refuse(plugin, f"provider {provider!r} is countersign's own; choose another")
        if not provider.startswith(prefix):
            # Two companies' plug-ins that both named theirs "ledger" refused each other.
            raise _refuse(plugin, f"provider {provider!r} must be named {prefix}<name>")
    _check_event_packages(plugin)
    _check_contracts(plugin)


def _check_event_packages(plugin: Plugin) -> None:
    """Its own packages: never countersign's (its namespace is its package path)."""
    for package in plugin.event_packages:
        if not _PACKAGE.match(package):
            raise _refuse(plugin, f"event package {package!r} is not a package name")
        if package.split(".")[0] in ("countersign", "domain"):
            raise _refuse(plugin, f"event package {package!r} is countersign's; name your own")


def _check_contracts(plugin: Plugin) -> None:
    """Each contract is named by the plug-in, in a section with an assistant, and calls a
    provider that is given."""
    prefix = plugin.namespace + "."
    known_sections = {str(a.section) for a in (*sections.BUILT_IN, *plugin.sections)}
    from countersign.domain.contracts.base import missing_parts  # with the plug-in's contracts

    for contract in plugin.contracts:
        if isinstance(contract, contracts.Declared):
            pass  # checked when it is loaded, at install (``contracts.install``)
        elif missing := missing_parts(contract):
            which = getattr(contract, "kind", None) or type(contract).__name__
            raise _refuse(
                plugin,
                f"{which} lacks {', '.join(missing)}: every contract sets each "
                "(docs/adding-an-operation.md)",
            )
        if not contract.kind.startswith(prefix):
            raise _refuse(plugin, f"operation {contract.kind!r} must be named {prefix}<name>")
        if not _OPERATION.match(contract.kind[len(prefix) :]):
            # Its name is its propose tool's (``propose_<name>``), which models' APIs limit.
            raise _refuse(
                plugin,
                f"operation {contract.kind!r} must be named {prefix}<name>, the name of "
                "lower-case letters, digits and _",
            )
        if not contract.permission.startswith(prefix):
            raise _refuse(plugin, f"{contract.kind}'s permission must be named {prefix}<name>")
        if contract.section not in known_sections:
            raise _refuse(
                plugin, f"{contract.kind}'s section {contract.section!r} has no assistant"
            )
        if not isinstance(contract, Declared):
            _check_provider(plugin, contract)


def _check_tools(plugins: Sequence[Plugin]) -> None:
    """No two operations of one section share a propose tool's name (``propose_<name>``): an
    assistant offered both (a plug-in's ``clashtool.move_member`` in the roster) gave the
    model two tools of one name, and only the first could ever be proposed."""
    held: dict[tuple[str, str], str] = {}
    for declared in contracts.BUILT_IN:
        held[(str(declared.section), declared.kind.split(".", 1)[1])] = declared.kind
    for plugin in plugins:
        for contract in plugin.contracts:
            place = (str(contract.section), contract.kind.split(".", 1)[1])
            other = held.setdefault(place, contract.kind)
            if other != contract.kind:
                raise _refuse(
                    plugin,
                    f"operation {contract.kind!r} and {other!r} would both be the tool "
                    f"propose_{place[1]} of section {place[0]!r}; name it otherwise",
                )


def _check_provider(plugin: Plugin, contract: AnyContract) -> None:
    provider = contract.provider
    if provider is not None and provider not in (*plugin.providers, *_BUILT_IN_PROVIDERS):
        raise _refuse(plugin, f"{contract.kind} calls provider {provider!r}, not given")


def _when_loaded(plugins: Sequence[Plugin]) -> Callable[[AnyContract], None]:
    """What is checked of a declared contract when it loads: the provider it calls."""
    by_namespace = {plugin.namespace: plugin for plugin in plugins}

    def check(contract: AnyContract) -> None:
        _check_provider(by_namespace[contract.kind.split(".", 1)[0]], contract)

    return check


def install(plugins: Sequence[Plugin]) -> None:
    """Make these plug-ins' contracts, permissions and sections part of the registries (and
    only these: ``install(())`` leaves countersign's own). PluginError, saying which plug-in
    and what to change, when one breaks a rule; the registries are then countersign's own."""
    global _installs
    _installs += 1
    builtin_areas = {c.kind.split(".", 1)[0] for c in contracts.BUILT_IN}
    builtin_areas |= {str(a.section) for a in sections.BUILT_IN}
    # And the areas of countersign's own permissions: a plug-in named ``audit`` could give
    # every auditor (``audit.read``) the right to propose and approve its operation.
    builtin_areas |= {str(p).split(".", 1)[0] for p in Permission}
    names: set[str] = set()
    for plugin in plugins:
        _check(plugin, builtin_areas)
        if plugin.name in names:
            raise PluginError(f"plug-in {plugin.name!r} is named twice")
        names.add(plugin.name)
    providers_of(plugins)  # a provider name given twice
    namespaces = [plugin.namespace for plugin in plugins]
    if len(namespaces) != len(set(namespaces)):
        raise PluginError(f"two plug-ins share a namespace ({', '.join(namespaces)})")
    _check_tools(plugins)
    try:
        # Each alone first, when there are several: a contract that breaks a registry rule
        # is named with its own plug-in, not with every plug-in the deployment names.
        for plugin in plugins if len(plugins) > 1 else ():
            try:
                _install_registries((plugin,))
            except ValueError as broken:
                raise PluginError(f"plug-in {plugin.name!r}: {broken}") from None
        try:
            _install_registries(plugins)
        except ValueError as broken:
            which = ", ".join(repr(plugin.name) for plugin in plugins)
            raise PluginError(f"plug-in {which}: {broken}") from None
    except PluginError:
        contracts.install(())  # countersign's own registries, as if none had been named
        sections.install(())
        raise


def _install_registries(plugins: Sequence[Plugin]) -> None:
    """These plug-ins' contracts, permissions and sections in the registries; ValueError (a
    RegistryError) when one breaks a registry rule."""
    own = [contract for plugin in plugins for contract in plugin.contracts]
    permissions = [p for plugin in plugins for p in plugin.permissions]
    assistants = [assistant for plugin in plugins for assistant in plugin.sections]
    contracts.install(own, permissions, check=_when_loaded(plugins))
    # A plug-in's declared operations are loaded and checked now, in registry order: a
    # broken one stops the process at start with one line (never a page or a command
    # failing later), and which of two clashing lines is refused is the same in every
    # process. countersign's own stay lazy (the suite checks every one of them).
    for contract in own:
        if isinstance(contract, contracts.Declared):
            contracts.REGISTRY[contract.kind]
    sections.install(assistants)


def installs() -> int:
    """How many times ``install`` was called in this process: a count that changed since
    one's own install means the registries may hold other plug-ins now."""
    return _installs


def providers_of(plugins: Sequence[Plugin]) -> dict[str, EffectProvider]:
    """Every plug-in's providers by name; PluginError for a name two plug-ins give."""
    found: dict[str, EffectProvider] = {}
    for plugin in plugins:
        for name, provider in plugin.providers.items():
            if name in found:
                raise PluginError(f"plug-in {plugin.name!r}: provider {name!r} is named twice")
            found[name] = provider
    return found
