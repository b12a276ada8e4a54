"""The section registry: one line per section that has an assistant."""

from __future__ import annotations

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
    "ReadTool",
    "ReadToolRequest",
    "SectionAssistant",
    "SectionTexts",
]


def _registry(*assistants: SectionAssistant) -> dict[Section, SectionAssistant]:
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


ASSISTANTS: dict[Section, SectionAssistant] = _registry(
    ORDERS,
    EMAIL_BROADCASTS,
    ROSTER,
)
"""Every section's assistant, in the order pages list them."""
