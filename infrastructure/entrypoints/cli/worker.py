"""``countersign worker``: the sweepers (reconcile, expire, notify) as a long-running service.

It runs a pass of every sweeper, waits ``--interval`` seconds, and again, until SIGTERM or
Ctrl-C, which let the pass under way finish and then stop it cleanly (exit status 0). It
logs a line for every pass that did something, and one a minute to say it is alive, on the
``countersign.worker`` logger (JSON with ``COUNTERSIGN_LOG_FORMAT=json``).
``--metrics-port`` serves this process's own Prometheus counters (the reconciler's provider
calls) on 127.0.0.1, or ``--metrics-host``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from typing import TYPE_CHECKING, Any

from countersign.infrastructure.entrypoints.cli import service_words as words
from countersign.infrastructure.entrypoints.cli.common import Result, service_stopped
from countersign.infrastructure.settings import SettingsError

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign

log = logging.getLogger("countersign.worker")


def cmd_worker(cs: Countersign, args: argparse.Namespace) -> Result:
    log.setLevel(min(log.getEffectiveLevel(), logging.INFO))
    stop = threading.Event()
    if not args.once:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
    server = _serve_metrics(args.metrics_host, args.metrics_port) if args.metrics_port else None
    from countersign.infrastructure.sweepers import PassLog, run_schedule, sweepers

    work = sweepers(cs, args.interval, stop)
    names = ", ".join(sweeper.name for sweeper in work)
    log.info(words.WORKER_RUNNING.text(args.language, names=names, every=args.interval))
    passes = PassLog(work, language=args.language)
    try:
        totals = run_schedule(work, stop, args.interval, passes, once=args.once)
    finally:
        if server is not None:
            server.shutdown()
    document: dict[str, Any] = {
        "stopped": True,
        "passes": totals.passes,
        "done": totals.done,
        "failures": totals.failures,
    }
    summary = passes.summary(totals.done)
    said = words.WORKER_STOPPED.text(args.language, passes=totals.passes, summary=summary)
    return service_stopped(args, document, said)


def _serve_metrics(host: str, port: int) -> Any:
    """The metrics' server on ``host:port``; SettingsError (one line, exit 2) for an address
    it cannot listen on or a metrics directory it cannot write, as ``serve`` says them."""
    from countersign.infrastructure.entrypoints.cli.admin import check_port_free
    from countersign.infrastructure.server_settings import metrics_dir_from_env

    metrics_dir_from_env()
    check_port_free(host, port, options=_OPTIONS)
    from countersign.infrastructure.observability.metrics import enable
    from prometheus_client import start_http_server

    enable()  # this process serves its metrics: count from now on
    try:
        server, _thread = start_http_server(port, addr=host)
    except OSError as error:  # taken between the probe and now
        raise SettingsError(
            f"cannot listen on {host}:{port} ({error.strerror}): choose another {_OPTIONS}",
            f"impossible d'écouter sur {host}:{port} ({error.strerror}) : choisissez un autre "
            "--metrics-port ou --metrics-host",
        ) from None
    return server


_OPTIONS = "--metrics-port or --metrics-host"
