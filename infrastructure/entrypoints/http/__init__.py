"""The HTTP adapter: the versioned JSON API (``/api/v1``) and its problems.

``create_app(cs)`` builds the FastAPI application; ``gate`` bounds every API request body and
checks the token (``countersign.infrastructure.identity.tokens``) before reading it.
"""

from countersign.infrastructure.entrypoints.http.app import create_app

__all__ = ["create_app"]
