"""The MCP SDK's own client against countersign's MCP server, for the tests.

``over_stdio`` launches ``countersign mcp`` as a subprocess (as Claude Desktop would) and
``over_http`` connects to a server started with ``tests.servers.serving(http_app(cs))``; both
run an async ``scenario(session)`` on an initialized ``ClientSession`` and return its result.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

if TYPE_CHECKING:  # the SDK is imported when a client runs: collecting a module that
    # imports this one imports no MCP (docs/testing.md)
    from mcp import ClientSession
    from mcp_types import CallToolResult, Implementation

T = TypeVar("T")
Scenario = Callable[["ClientSession"], Awaitable[T]]
COUNTERSIGN = str(Path(sys.executable).parent / "countersign")


def default_client() -> Implementation:
    """How the tests' client names itself unless a test says otherwise."""
    from mcp_types import Implementation

    return Implementation(name="pytest-agent", version="1.0")


def over_stdio(
    database_url: str,
    scenario: Scenario[T],
    *,
    org: str = "granite",
    email: str = "ava@granite.example",
    client: Implementation | None = None,
) -> tuple[T, str]:
    """Run ``scenario`` against ``countersign mcp --org ORG --as EMAIL`` on stdio; the result
    and what the server wrote on its stderr."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    client_info = client if client is not None else default_client()
    # The SDK starts the server with a few safe variables only (PATH, HOME...): the
    # deployment's plug-ins are passed as an MCP client's configuration would name them.
    plugins = os.environ.get("COUNTERSIGN_PLUGINS")
    params = StdioServerParameters(
        command=COUNTERSIGN,
        args=["mcp", "--database", database_url, "--org", org, "--as", email],
        env={"COUNTERSIGN_PLUGINS": plugins} if plugins else None,
    )
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errors:

        async def main() -> T:
            async with (
                stdio_client(params, errlog=errors) as (read, write),
                ClientSession(read, write, client_info=client_info) as session,
            ):
                await session.initialize()
                return await scenario(session)

        result = anyio.run(main)
        errors.seek(0)
        return result, errors.read()


def over_http(
    base: str, token: str | None, scenario: Scenario[T], *, client: Implementation | None = None
) -> T:
    """Run ``scenario`` over streamable HTTP at ``base/mcp`` with ``token`` as the bearer."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    client_info = client if client is not None else default_client()
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}

    async def main() -> T:
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
            ClientSession(read, write, client_info=client_info) as session,
        ):
            await session.initialize()
            return await scenario(session)

    return anyio.run(main)


async def tool_names(session: ClientSession) -> list[str]:
    return [tool.name for tool in (await session.list_tools()).tools]


def structured(result: CallToolResult) -> dict[str, Any]:
    """A successful call's structured result."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_of(result: CallToolResult) -> dict[str, Any]:
    """A refused call's document (isError, its JSON text)."""
    import json

    assert result.is_error, result.structured_content
    text = result.content[0].text  # type: ignore[union-attr]
    document: dict[str, Any] = json.loads(text)
    return document
