"""Tool schemas the model receives, generated from types (never written by hand).

OpenAI's strict mode wants every object closed (``additionalProperties: false``) with every
property required, and rejects some validation keywords; length limits therefore travel in the
field descriptions and are enforced by the application when the request is parsed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countersign.domain.contracts import REGISTRY, AnyContract
from pydantic import BaseModel

_UNSUPPORTED = {"title", "default", "minLength", "maxLength", "minItems", "maxItems"}


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a request model, in the form strict function calling accepts."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})
    schema.pop("description", None)  # the docstring is the tool's description already
    cleaned: dict[str, Any] = _clean(_inline(schema, definitions))
    return cleaned


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        reference = node.get("$ref")
        if isinstance(reference, str):
            target = definitions[reference.rsplit("/", 1)[-1]]
            return {
                **_inline(target, definitions),
                **{k: v for k, v in node.items() if k != "$ref"},
            }
        return {key: _inline(value, definitions) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item, definitions) for item in node]
    return node


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned = {key: _clean(value) for key, value in node.items() if key not in _UNSUPPORTED}
    if cleaned.get("type") == "object":
        properties = cleaned.setdefault("properties", {})
        cleaned["required"] = list(properties)
        cleaned["additionalProperties"] = False
    return cleaned


def function_tool(name: str, model: type[BaseModel]) -> dict[str, Any]:
    """A chat-completions tool whose description is the model's docstring."""
    description = " ".join((model.__doc__ or "").split())
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": strict_schema(model),
            "strict": True,
        },
    }


def operation_catalogue(registry: Mapping[str, AnyContract] = REGISTRY) -> list[dict[str, Any]]:
    """Every registered operation as an application service sees it: its kind, section, the
    permission that proposes and approves it, whether it may call an outside system, and the
    strict JSON Schema of its request (the propose tool's parameters, as assistants see them)."""
    return [
        {
            "kind": contract.kind,
            "section": str(contract.section),
            "permission": contract.permission,
            "external": contract.provider is not None,
            "request_schema": strict_schema(contract.Request),
        }
        for contract in registry.values()
    ]
