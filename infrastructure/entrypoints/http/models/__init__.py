"""The API's request bodies and the documents it answers, as they appear in the OpenAPI schema,
a module per area of routes (``proposals``, ``history``, ``assistants``, ``policies``,
``webhooks``).

Handlers answer the application's own report documents (``Report.to_json()``), the very
documents the CLI prints with ``--json``; these models describe them.
"""

from __future__ import annotations

from typing import Any

from countersign.domain.storable_text import UNSTORABLE_TEXT, WHY, holds_unstorable
from pydantic import BaseModel, ConfigDict, field_validator
from pydantic_core import PydanticCustomError


class Body(BaseModel):
    """A request body: a field the API does not know is refused, never ignored, and no text
    of a field, however nested in it (a request's keys and values, a passkey's credential),
    holds what no database stores (``domain.storable_text``): a 422 on that field before any
    handler reads it."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        if holds_unstorable(value):
            raise PydanticCustomError(UNSTORABLE_TEXT, f"a text holds {WHY}")
        return value
