"""Finding the plug-ins a deployment names, and enabling them in this process.

A distribution declares a plug-in under the ``countersign.plugins`` entry-point group::

    [project.entry-points."countersign.plugins"]
    acme-invoices = "acme_invoices.plugin:build"

The entry point names a ``Plugin``, or a function of no arguments that builds one (a plug-in
that reads its own configuration, such as its database's address, and builds its contracts
with their clients): ``examples/acme_invoices`` is one, walked through in docs/plugins.md.

Installing it enables nothing: ``COUNTERSIGN_PLUGINS=acme-invoices`` does, in every process
of the deployment (the CLI, the server and its workers, the worker, the projection runner, the
MCP server), because each goes through ``enable`` (bootstrap calls it).
"""

from __future__ import annotations

import threading
from importlib.metadata import entry_points

from countersign.application import plugins as registry
from countersign.application.plugins import Plugin, PluginError
from countersign.infrastructure.persistence.stored_events import allow_event_packages
from countersign.infrastructure.settings import PLUGINS_ENV, SettingsError

GROUP = "countersign.plugins"

_lock = threading.Lock()
#: The names enabled, their plug-ins, and ``registry.installs()`` just after: the registries
#: hold exactly those plug-ins while nobody has installed any since (a test, a script).
#: It starts at no count ``installs`` gives (-1), so the first ``enable`` installs whatever the
#: registries hold (a script may have installed plug-ins before this module was imported).
_enabled: tuple[tuple[str, ...], tuple[Plugin, ...], int] = ((), (), -1)


def find(names: tuple[str, ...]) -> tuple[Plugin, ...]:
    """The named plug-ins' objects, loaded from their entry points (and nothing else is
    imported): SettingsError, saying what to do, for one not installed or not a plug-in."""
    if not names:
        return ()
    available = {point.name: point for point in entry_points(group=GROUP)}
    found = []
    for name in names:
        point = available.get(name)
        if point is None:
            installed = ", ".join(sorted(available)) or "none"
            raise SettingsError(
                f"{PLUGINS_ENV} names plug-in {name!r}, which is not installed (installed: "
                f"{installed}); install its package or remove it from {PLUGINS_ENV}",
                f"{PLUGINS_ENV} nomme le plug-in {name!r}, qui n'est pas installé (installés : "
                f"{'aucun' if not available else installed}) ; installez son paquet ou "
                f"retirez-le de {PLUGINS_ENV}",
            )
        try:
            plugin = point.load()
            if callable(plugin) and not isinstance(plugin, Plugin):
                plugin = plugin()  # a factory: a plug-in that reads its own configuration
        except SettingsError:
            raise
        except Exception as error:
            raise SettingsError(
                f"plug-in {name!r} ({point.value}) could not be loaded: "
                f"{type(error).__name__}: {str(error)[:200]}; fix its package (the entry "
                f"point's module:name, or what importing or building it raised) or remove it "
                f"from {PLUGINS_ENV}",
                f"le plug-in {name!r} ({point.value}) n'a pas pu être chargé : "
                f"{type(error).__name__}: {str(error)[:200]} ; corrigez son paquet (le "
                "module:nom de son point d'entrée, ou ce que son import ou sa construction a "
                f"levé) ou retirez-le de {PLUGINS_ENV}",
            ) from None
        if not isinstance(plugin, Plugin):
            raise SettingsError(
                f"plug-in {name!r}: {point.value} is a {type(plugin).__name__}, not a "
                "countersign Plugin: its entry point names a Plugin or a function of no "
                "arguments that returns one",
                f"plug-in {name!r} : {point.value} est un {type(plugin).__name__}, pas un "
                "Plugin de countersign : son point d'entrée nomme un Plugin ou une fonction "
                "sans arguments qui en renvoie un",
            )
        if plugin.name != name:
            raise SettingsError(
                f"plug-in {name!r}: its entry point names a Plugin called {plugin.name!r}; "
                "the entry point's name and the Plugin's name must be the same: rename one",
                f"plug-in {name!r} : son point d'entrée nomme un Plugin appelé "
                f"{plugin.name!r} ; le nom du point d'entrée et celui du Plugin doivent être les "
                "mêmes : renommez l'un des deux",
            )
        found.append(plugin)
    return tuple(found)


def enable(names: tuple[str, ...]) -> tuple[Plugin, ...]:
    """Enable exactly these plug-ins in this process: their contracts, sections and
    permissions join the registries, their event packages the event store's allow-list. The
    same names again cost nothing, unless the registries were installed otherwise since
    (``registry.install`` called directly, by a test or a script): then they are installed
    again; other names replace the set (tests switch). SettingsError (a one-line message;
    the CLI exits 2) when one cannot be found, loaded or installed."""
    global _enabled
    with _lock:
        if _enabled[0] == names and _enabled[2] == registry.installs():
            return _enabled[1]
        try:
            plugins = find(names)
            registry.install(plugins)
        except (PluginError, SettingsError) as broken:
            registry.install(())  # countersign's own, as if none had been named
            allow_event_packages(())
            _enabled = ((), (), registry.installs())
            if isinstance(broken, PluginError):
                fix = f"; fix the plug-in or remove it from {PLUGINS_ENV}"
                raise SettingsError(f"{broken}{fix}") from None
            raise
        allow_event_packages([p for plugin in plugins for p in plugin.event_packages])
        _enabled = (names, plugins, registry.installs())
        return plugins
