"""Liveness, readiness and the metrics scrape, beside the API and the pages.

* ``GET /healthz``: the process answers (liveness). It touches nothing else, so a database
  outage never gets healthy workers restarted.
* ``GET /readyz``: this worker can serve (readiness): the database answers a query, and no
  projection is more than ``COUNTERSIGN_READY_MAX_LAG`` events behind the log (a stopped or
  overwhelmed projection runner: pages and inboxes would show stale state), and none was
  built by other code than this process's (a later release, or another build of the same
  projection version: its pages would answer 503). 200 when ready,
  503 otherwise; the body names each check, never an error's text (which is logged, with the
  request's correlation id).
* ``GET /metrics``: Prometheus' text format (``metrics.py``), for the operator only: with
  ``COUNTERSIGN_METRICS_TOKEN`` set, to a request carrying ``Authorization: Bearer <it>``;
  without it, to nobody unless ``COUNTERSIGN_METRICS_LOCAL=1`` says that no proxy of any
  kind forwards to this port: then to a request made directly from this machine (a loopback
  client address and no forwarding header). A loopback address alone was believed before,
  and a TCP-level proxy on the same host (stunnel, haproxy in tcp mode) connects from
  127.0.0.1 and adds no header: every request it relayed from the world got the metrics.
  Nothing the server sees tells that proxy's requests from the operator's, so the operator
  says so. Anyone else gets 404, as for a path that does not exist. ``/healthz`` and
  ``/readyz`` carry no tenant data (no club, person, proposal or count of them). Keep all
  three on the internal network anyway: the reverse proxy should not route them from
  outside (docs/deploy.md).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
from typing import Any

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.observability.metrics import DatabaseCollector, enable, render
from countersign.infrastructure.projection_engine.releases import version_of
from countersign.infrastructure.projection_engine.rows import SCHEMA_TABLE, TRACKING_TABLE
from countersign.infrastructure.projection_engine.runner import ProjectionRunner
from countersign.infrastructure.settings import SettingsError
from countersign.projections import PROJECTIONS
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response

log = logging.getLogger("countersign.health")

_NO_STORE = {"Cache-Control": "no-store"}
METRICS_TOKEN_ENV = "COUNTERSIGN_METRICS_TOKEN"  # noqa: S105 - the variable's name
METRICS_LOCAL_ENV = "COUNTERSIGN_METRICS_LOCAL"
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}
#: Headers a reverse proxy adds: a request carrying one was relayed, whatever its address.
_FORWARDING = ("x-forwarded-for", "forwarded", "x-real-ip", "x-forwarded-host")


def metrics_token_from_env() -> str | None:
    """COUNTERSIGN_METRICS_TOKEN: the operator's scrape token (at least 24 characters)."""
    token = os.environ.get(METRICS_TOKEN_ENV, "").strip()
    if not token:
        return None
    if len(token) < 24:
        raise SettingsError(
            f"{METRICS_TOKEN_ENV} must be at least 24 characters long",
            f"{METRICS_TOKEN_ENV} doit compter au moins 24 caractères",
        )
    return token


def metrics_local_from_env() -> bool:
    """COUNTERSIGN_METRICS_LOCAL: whether, without a token, a request made directly from this
    machine may read ``/metrics`` (1/true/yes/on or 0/false/no/off; default no)."""
    value = os.environ.get(METRICS_LOCAL_ENV, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingsError(
        f"{METRICS_LOCAL_ENV} must be 1 or 0 (true/false, yes/no, on/off), not {value[:40]!r}"
    )


def may_scrape(request: Request, token: str | None, local: bool = False) -> bool:
    """Whether ``request`` may read ``/metrics`` (see the module's docstring)."""
    if token is not None:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        )
    return local and _direct_from_here(request)


def _direct_from_here(request: Request) -> bool:
    """A loopback client address and none of the headers a reverse proxy adds."""
    if any(name in request.headers for name in _FORWARDING):
        return False
    client = request.client.host if request.client is not None else ""
    try:
        return ipaddress.ip_address(client).is_loopback
    except ValueError:
        return False


def mount_operations(app: FastAPI, cs: Countersign) -> None:
    """Add ``/healthz``, ``/readyz`` and ``/metrics`` to ``app`` (over ``cs``, kept open by
    the caller)."""
    token = metrics_token_from_env()  # a wrong value stops the worker before it serves
    local = metrics_local_from_env()
    unsaid = [token is None and not local]  # the operator's first local scrape not yet told
    enable()  # this process serves its metrics: count from now on
    # Every projection's tables and tracking row exist from the start, and this process's
    # pages know it set them up (``TablesInPlace``): a page that reads one finds another
    # build's tables, claimed since, as a running process does (it stops there); its first
    # read set them up again before, as a starting process does, and took them back.
    for projection in cs.projections():
        ProjectionRunner(cs.app, cs.sql, projection, in_place=cs.tables_in_place)
    database = DatabaseCollector(cs.sql, lambda: _head(cs))

    def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"}, headers=_NO_STORE)

    def readyz() -> JSONResponse:
        checks = readiness(cs)
        ready = all(check["ok"] for check in checks.values())
        document = {"status": "ready" if ready else "not_ready", "checks": checks}
        return JSONResponse(document, status_code=200 if ready else 503, headers=_NO_STORE)

    def metrics(request: Request) -> Response:
        if not may_scrape(request, token, local):
            if unsaid[0] and _direct_from_here(request):
                unsaid[0] = False  # once a process: the log says why, the answer does not
                log.warning(
                    "/metrics asked from this machine and refused: set %s (Prometheus sends "
                    "it as a bearer token), or %s=1 if no proxy of any kind forwards to this "
                    "port (docs/deploy.md, Metrics)",
                    METRICS_TOKEN_ENV,
                    METRICS_LOCAL_ENV,
                )
            raise HTTPException(status_code=404)  # answered as for a path that does not exist
        body, media_type = render(database)
        return Response(body, media_type=media_type, headers=_NO_STORE)

    for path, endpoint in (("/healthz", healthz), ("/readyz", readyz), ("/metrics", metrics)):
        app.add_api_route(path, endpoint, methods=["GET"], include_in_schema=False)


def readiness(cs: Countersign) -> dict[str, dict[str, Any]]:
    """Each readiness check: whether it passed, and what an operator needs to know."""
    try:
        with cs.sql.reading() as cursor:
            positions = cursor.execute(
                f"SELECT projection, position FROM {TRACKING_TABLE}"
            ).fetchall()
            built = cursor.execute(f"SELECT projection, fingerprint FROM {SCHEMA_TABLE}").fetchall()
        head = _head(cs)
    except Exception as error:
        # One line a probe, not a traceback: probes every few seconds from every balancer
        # flooded the log with them through an outage.
        log.warning("readiness: the database did not answer (%s: %s)", type(error).__name__, error)
        return {"database": {"ok": False}, "projections": {"ok": False}}
    limit = cs.settings.ready_max_lag
    lags = {str(name): max(0, head - int(position)) for name, position in positions}
    worst = max(lags.values(), default=0)
    later, other = _built_elsewhere(built)
    return {
        "database": {"ok": True},
        "projections": {
            "ok": (limit == 0 or worst <= limit) and not later and not other,
            "max_lag": worst,
            "built_by_later_release": later,
            "built_by_other_build": other,
            "limit": limit,
            "lag": dict(sorted(lags.items())),
        },
    }


def _built_elsewhere(built: list[Any]) -> tuple[list[str], list[str]]:
    """This process's projections whose tables other code built, which its pages and API
    answer 503 for (``projection_engine/releases.py``), so it should get no traffic: those
    a later release built (kept caught up by that release's runner, so no lag shows), and
    those another build of the same projection version built with other tables (a running
    process of this build stops there rather than take them back)."""
    later, other = [], []
    for name, fingerprint in built:
        projection = PROJECTIONS.get(str(name))
        theirs = version_of(str(fingerprint))
        if projection is None or theirs is None:
            continue
        if theirs > projection.version:
            later.append(str(name))
        elif theirs == projection.version and fingerprint != projection.fingerprint():
            other.append(str(name))
    return sorted(later), sorted(other)


def _head(cs: Countersign) -> int:
    return int(cs.app.recorder.max_notification_id() or 0)
