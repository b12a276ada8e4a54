"""The HTTP adapter: the versioned JSON API (``/api/v1``), its credentials and problems.

``create_app(cs)`` builds the FastAPI application; ``gate`` bounds every API request body and
checks the token before reading it; ``tokens`` issues and revokes the bearer tokens
application services use; ``passwords`` keeps people's password hashes.
"""

from countersign.infrastructure.http.app import create_app

__all__ = ["create_app"]
