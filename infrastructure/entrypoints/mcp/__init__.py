"""The propose-only MCP server: any MCP client (Claude Desktop, an IDE, an agent framework)
proposes through the same contracts as countersign's own assistants, and cannot execute.

``server`` builds the tools and resources from the caller's catalogue
(``application.assistant.toolbox``), ``answers`` writes what the agent reads, and
``transports`` serves it over stdio (``countersign mcp --org ORG --as EMAIL``) or streamable
HTTP with API tokens (``countersign mcp --http``). The command line names this package rather
than importing it: the entry points are independent of each other.
"""

from countersign.infrastructure.entrypoints.mcp.transports import (
    http_app,
    serve_http,
    serve_stdio,
)

__all__ = ["http_app", "serve_http", "serve_stdio"]
