"""The ASGI application ``countersign serve`` runs: the JSON API and the browser pages, over
one countersign wired from the environment.

uvicorn builds it in each worker process by calling the factory::

    uvicorn --factory countersign.infrastructure.server:create_app --workers 4

Everything comes from the environment (``Settings``, ``COUNTERSIGN_SECURE_COOKIES``, the
session secret, ``COUNTERSIGN_LOG_FORMAT``, ``PROMETHEUS_MULTIPROC_DIR``), so every worker
builds the same application; ``countersign serve`` sets it
from its options. Forwarded headers are uvicorn's to honour or not (``server_settings``).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from countersign.application.errors import new_correlation_id
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.entrypoints.http import create_app as create_api
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.observability.health import mount_operations
from countersign.infrastructure.observability.logs import configure_logging
from countersign.infrastructure.server_settings import secure_from_env
from countersign.infrastructure.settings import Settings
from fastapi import FastAPI

log = logging.getLogger("countersign.server")


def create_app() -> FastAPI:
    """A newly wired countersign behind the API and the pages; closed when the server stops."""
    configure_logging()  # each worker process sets up its own (COUNTERSIGN_LOG_FORMAT)
    settings = Settings.from_env()
    secure = secure_from_env()  # a wrong value stops the worker before it wires anything
    try:
        cs = bootstrap(settings)
    except Exception as error:
        raise SystemExit(could_not_start(error)) from None
    try:
        app = compose(cs, secure_cookies=secure)
    except BaseException:
        cs.close()
        raise

    @asynccontextmanager
    async def closing(_: object) -> AsyncIterator[None]:
        try:
            yield
        finally:
            cs.close()

    app.router.lifespan_context = closing
    settle_heap()
    return app


def could_not_start(error: Exception) -> int:
    """Log why this server process could not wire countersign, in one record of the
    configured format, and the status it exits with.

    Raised on, the error went up through uvicorn to the worker process's own bootstrap, which
    printed a raw traceback on stderr, outside the logs' format: under ``serve --workers N``
    the supervisor starts a dead worker again every few seconds, so a database out of reach
    (a restart, a session ended) wrote one traceback each time until it was back."""
    from countersign.infrastructure.persistence.sql import postgres_unreachable
    from countersign.infrastructure.persistence.unavailable import database_unavailable

    if database_unavailable(error) or isinstance(error, postgres_unreachable()):
        log.error(
            "serve: a server process could not start: the database is out of reach (%s); "
            "under serve --workers it is started again in a moment",
            type(error).__name__,
        )
    else:
        correlation_id = new_correlation_id()
        log.exception("serve: a server process could not start, correlation id %s", correlation_id)
    return 1


def settle_heap() -> None:
    """Collect what wiring left behind, then freeze the rest: the modules, the application and
    its routes, the contracts, everything a worker holds for its whole life, are kept out of
    the collector's full collections from now on.

    Unfrozen, a full collection walks all of it each time, while every request the worker is
    serving waits: about 50 ms of CPU in a worker wired on PostgreSQL (91,700 tracked
    objects), and during ``scripts/bench_http.py`` each worker ran one, measured at 81 and 216
    ms on a loaded machine. Frozen, a full collection there takes well under a millisecond.
    What a worker allocates after this is collected as before."""
    gc.collect()
    gc.freeze()


def compose(cs: Countersign, *, secure_cookies: bool | None = None) -> FastAPI:
    """The API under /api/v1, the pages at /, and /healthz, /readyz and /metrics for the
    operator, over ``cs`` (the caller keeps it open)."""
    app = create_api(cs)
    mount_operations(app, cs)
    mount_pages(app, cs, secure_cookies=secure_cookies)
    return app
