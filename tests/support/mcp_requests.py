"""MCP messages the tests post by hand over HTTP (no SDK: a module that sends them need not
import it, nor the product's MCP server, to be collected)."""

from __future__ import annotations

from typing import Any

#: The MCP protocol version the hand-made requests speak.
PROTOCOL = "2025-06-18"


def initialize(client: str) -> dict[str, Any]:
    """The JSON-RPC ``initialize`` request a client named ``client`` opens a session with."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }
