"""The API's request bodies and the documents it answers, as they appear in the OpenAPI schema,
a module per area of routes (``proposals``, ``history``, ``assistants``, ``policies``,
``webhooks``).

Handlers answer the application's own report documents (``Report.to_json()``), the very
documents the CLI prints with ``--json``; these models describe them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Body(BaseModel):
    """A request body: a field the API does not know is refused, never ignored."""

    model_config = ConfigDict(extra="forbid")
