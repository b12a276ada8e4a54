"""The section registry: one line per section that has an assistant.

A deployment's plug-ins add theirs with ``install``, called once by bootstrap: ``ASSISTANTS``
is changed in place, so every importer sees the same registry.
"""

from __future__ import annotations

from collections.abc import Iterable

from countersign.application.assistant.sections.base import (
    ReadTool,
    ReadToolRequest,
    SectionAssistant,
    SectionTexts,
)
from countersign.application.assistant.sections.email_broadcasts import EMAIL_BROADCASTS
from countersign.application.assistant.sections.orders import ORDERS
from countersign.application.assistant.sections.roster import ROSTER
from countersign.domain.scope import Section

__all__ = [
    "ASSISTANTS",
    "BUILT_IN",
    "ReadTool",
    "ReadToolRequest",
    "SectionAssistant",
    "SectionTexts",
]


def _registry(assistants: Iterable[SectionAssistant]) -> dict[Section, SectionAssistant]:
    """Index assistants by section, refusing a section twice or a read tool named twice."""
    registry: dict[Section, SectionAssistant] = {}
    for assistant in assistants:
        if assistant.section in registry:
            raise ValueError(f"section {assistant.section} is registered twice")
        names = [tool.name for tool in assistant.read_tools]
        if len(names) != len(set(names)):
            raise ValueError(f"section {assistant.section} names a read tool twice")
        registry[assistant.section] = assistant
    return registry


BUILT_IN: tuple[SectionAssistant, ...] = (ORDERS, EMAIL_BROADCASTS, ROSTER)
"""countersign's own sections, in the order pages list them."""

ASSISTANTS: dict[Section, SectionAssistant] = _registry(BUILT_IN)
"""Every section's assistant, in the order pages list them (plug-ins' after countersign's)."""


def install(assistants: Iterable[SectionAssistant]) -> None:
    """Make the built-in sections and these the registry: ValueError, saying which, when one
    breaks a registry rule, and then nothing changes (``install(())``: the built-in ones)."""
    registry = _registry((*BUILT_IN, *assistants))
    ASSISTANTS.clear()
    ASSISTANTS.update(registry)
