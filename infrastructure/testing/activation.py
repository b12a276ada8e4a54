"""The ``pytest11`` entry point ``countersign``: installing countersign adds one pytest
setting and nothing else. A run that sets ``countersign_kit = true`` (pytest.ini,
pyproject's ``[tool.pytest.ini_options]``, or ``-o countersign_kit=true``) gets the kit's
fixtures (``countersign.infrastructure.testing.fixtures``); any other run is untouched, so
an unrelated project in the same environment never sees a ``cs`` fixture. A run with
``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` loads the fixtures with
``-p countersign.infrastructure.testing.fixtures`` instead."""

from __future__ import annotations

import pytest

SETTING = "countersign_kit"
FIXTURES = "countersign.infrastructure.testing.fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        SETTING,
        "load countersign's testing kit: a seeded deployment per test (cs, seeded, clock)",
        type="bool",
        default=False,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.getini(SETTING) and not config.pluginmanager.has_plugin(FIXTURES):
        config.pluginmanager.import_plugin(FIXTURES)
