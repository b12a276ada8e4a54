"""The browser experience: server-rendered pages mounted beside the JSON API.

``mount_pages(app, cs)`` adds them to the FastAPI application.
"""

from countersign.infrastructure.entrypoints.web.pages import mount_pages

__all__ = ["mount_pages"]
