"""The browser experience: server-rendered pages mounted beside the JSON API.

``mount_pages(app, cs)`` adds them to the FastAPI application; ``seed_passwords(cs)`` gives
the seeded demo people passwords for local use.
"""

from countersign.infrastructure.web.demo_passwords import seed_passwords
from countersign.infrastructure.web.pages import mount_pages

__all__ = ["mount_pages", "seed_passwords"]
