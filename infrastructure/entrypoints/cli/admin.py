"""Commands that run the server and manage who may use it: serve, API tokens, passwords."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import re
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from countersign.domain.errors import NotFoundError
from countersign.infrastructure.entrypoints.cli import admin_words as words
from countersign.infrastructure.entrypoints.cli import render
from countersign.infrastructure.entrypoints.cli import service_words as service
from countersign.infrastructure.entrypoints.cli.common import (
    ALREADY_PRINTED,
    RefusedError,
    Result,
    UsageError,
    service_stopped,
)
from countersign.infrastructure.observability.logs import log_format, say
from countersign.infrastructure.settings import DATABASE_URL_ENV, ORIGIN_ENV, SettingsError

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign
    from countersign.infrastructure.sweepers import InProcessSweepers

#: The application ``serve`` runs, named rather than imported: the CLI does not import the
#: HTTP API or the pages (each entry point is independent of the others).
SERVER_FACTORY = "countersign.infrastructure.server:create_app"


def cmd_serve(cs: Countersign, args: argparse.Namespace) -> Result:
    import uvicorn
    from countersign.infrastructure.request_deadline import connection_options
    from countersign.infrastructure.server_settings import (
        SECURE_ENV,
        is_loopback,
        secure_from_env,
        trusted_proxies_from_env,
        uvicorn_proxy_options,
    )
    from uvicorn.config import LOGGING_CONFIG

    # Settings first, so a wrong value stops the server before anything is served.
    trusted = trusted_proxies_from_env()
    sweeping = args.sweepers if args.sweepers is not None else cs.database.kind == "sqlite"
    _check_server_settings(sweeping)
    check_port_free(args.host, args.port, args.workers)
    # Secure cookies need HTTPS, and a browser on plain http://127.0.0.1 would never send them
    # back: on a loopback host the default is off. An explicit COUNTERSIGN_SECURE_COOKIES
    # always wins (an HTTPS reverse proxy on the same machine sets it to 1).
    secure = secure_from_env(default=not is_loopback(args.host))
    # The server wires its own countersign from the environment (server.create_app, once per
    # worker): this one has checked the settings and the database, and is done.
    configuration = {DATABASE_URL_ENV: cs.settings.database_url, SECURE_ENV: str(int(secure))}
    if cs.settings.webauthn_rp_id == "localhost" and not os.environ.get(ORIGIN_ENV, "").strip():
        # A passkey's assertion verifies only from the origin its page was served from: by
        # default, the one this server listens on (not port 8000 whatever --port says).
        configuration[ORIGIN_ENV] = f"http://localhost:{args.port}"
    # On the embedded database nothing else is deployed beside serve: it runs the sweepers
    # itself, in one thread of this process (never one per worker). On PostgreSQL the worker
    # is a service of its own (docs/deploy.md).
    from countersign.infrastructure.sweepers import InProcessSweepers

    background = InProcessSweepers(cs.settings, language=args.language) if sweeping else None
    cs.close()
    workers, language = args.workers, args.language
    say(
        service.SERVING.text(
            language,
            host=browsed_host(args.host, cs.settings.webauthn_rp_id),
            port=args.port,
            workers=workers,
            es="es" if workers > 1 else "",
            secure=(service.ON if secure else service.OFF).text(language),
            trusted=", ".join(trusted) or service.NOBODY.text(language),
        )
    )
    if background is None:
        # (the sweepers' line is said as their thread starts: ``_sweeping``)
        say(service.NOT_SWEEPING.text(language))
    config = uvicorn.Config(
        SERVER_FACTORY,
        factory=True,
        host=args.host,
        port=args.port,
        workers=workers,
        log_level="warning",
        # JSON logs: uvicorn's loggers go through countersign's handler (server.py).
        log_config=None if log_format() == "json" else LOGGING_CONFIG,
        **uvicorn_proxy_options(trusted),
        **connection_options(),
    )
    started = False
    with (
        _environment(configuration),
        _metrics_shared_by(workers),
        _stopped_by_signals() as stop,
        _sweeping(background, language),
    ):
        started = _run(config)
    if not started and not stop.signalled:
        raise SettingsError(service.NOT_STARTED.text(language))
    return service_stopped(args, {"stopped": True}, service.SERVER_STOPPED.text(language))


def browsed_host(host: str, rp_id: str) -> str:
    """The host of the address ``serve`` says it serves on: the one to open. The pages'
    passkeys belong to ``localhost`` by default (COUNTERSIGN_WEBAUTHN_RP_ID), and a browser
    refuses every one at 127.0.0.1, the default host: the line said 127.0.0.1 while README
    says to open localhost."""
    return "localhost" if host == "127.0.0.1" and rp_id == "localhost" else host


def _check_server_settings(sweeping: bool) -> None:
    """SettingsError, before anything is served, for a value the server's processes would
    refuse once running: the session secret and the metrics token (read by each worker as it
    starts: its failure was an internal error after "serving on"), the metrics' shared
    directory (made if missing: counting into one that was not failed requests), the sender's
    settings when the sweepers run here (their thread died on them, and the server went on serving,
    ready, with nothing reconciled, expired or notified); the webhooks' allowed networks,
    which the API and the pages read on every webhook request, always."""
    from countersign.infrastructure.notifications.settings import (
        NotifySettings,
        allowed_networks_from_env,
    )
    from countersign.infrastructure.observability.health import (
        metrics_local_from_env,
        metrics_token_from_env,
    )
    from countersign.infrastructure.request_deadline import read_timeout_from_env
    from countersign.infrastructure.server_settings import (
        metrics_dir_from_env,
        session_secret_from_env,
    )

    session_secret_from_env()
    read_timeout_from_env()
    metrics_token_from_env()
    metrics_local_from_env()
    metrics_dir_from_env()
    allowed_networks_from_env()
    if sweeping:
        NotifySettings.from_env()


def check_port_free(
    host: str, port: int, workers: int = 1, options: str = "--port or --host"
) -> None:
    """SettingsError when ``host:port`` cannot be listened on (in use, not this machine's
    address, or not allowed), said before "serving on" rather than after it, with exit 2.

    The probe binds as the server will: one process (asyncio) binds every address the host
    stands for, an IPv6 one with IPV6_ONLY; several share one socket bound by uvicorn, of
    the family the host's spelling says, dual-stack. ``options``: what the refusal says to
    change."""
    if workers == 1:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except OSError as error:
            raise _cannot_listen(host, port, error, options) from None
        targets: list[tuple[socket.AddressFamily, Any]] = [(i[0], i[4]) for i in infos]
    else:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        targets = [(family, (host, port))]
    for family, address in targets:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as both do
                if family == socket.AF_INET6 and workers == 1:
                    probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                probe.bind(address)
        except OSError as error:
            raise _cannot_listen(host, port, error, options) from None


def _cannot_listen(host: str, port: int, error: OSError, options: str) -> SettingsError:
    said = error.strerror or type(error).__name__
    dit = {errno.EADDRINUSE: "adresse déjà utilisée", errno.EACCES: "permission refusée"}.get(
        error.errno or 0, said
    )
    return SettingsError(
        f"cannot listen on {host}:{port} ({said}): choose another {options}",
        f"impossible d'écouter sur {host}:{port} ({dit}) : choisissez un autre "
        + options.replace(" or ", " ou "),
    )


@contextmanager
def _sweeping(background: InProcessSweepers | None, language: str) -> Iterator[None]:
    """The sweepers' schedule for as long as the server runs; when it stops, the pass under
    way finishes and the thread ends."""
    if background is None:
        yield
        return
    background.start()
    # Said once the thread is started, before anything is served: a server that answers and
    # has not said it runs no sweeper (the test of --no-sweepers reads it).
    say(service.SWEEPING.text(language, every=f"{background.every:g}"))
    try:
        yield
    finally:
        background.stop()


def _run(config: Any) -> bool:
    """Serve until stopped, as ``uvicorn.run`` does; whether the server started.

    Several workers share one listening socket bound here with TCP_NODELAY, which the
    connections it accepts inherit, listening at once. uvicorn binds that socket without
    naming the protocol, and asyncio then leaves Nagle's algorithm on for every connection:
    each answer waited for the client's delayed ACK, about 40 ms per request (one process
    binds its own sockets through asyncio, which sets the option).
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    if config.workers == 1:
        server = uvicorn.Server(config)
        server.run()
        return bool(server.started)
    sock = config.bind_socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # Listening now, not once the first worker has started (uvicorn's workers call listen):
    # a connection made while they import and wire countersign (seconds, on a busy machine)
    # waits in the backlog instead of being refused after "serving on" was said.
    sock.listen(config.backlog)
    _say_when_a_worker_dies()
    Multiprocess(config, sockets=[sock]).run()
    return True


#: What uvicorn's supervisor logs (at INFO) when it replaces a worker process that died.
_DIED = re.compile(r"Child process \[\d+\] died")


class _WorkerDeaths(logging.Filter):
    """On the supervisor's ``uvicorn.error`` logger: a worker's death passes, as a warning;
    its other INFO lines stay out, as at the WARNING level ``serve`` runs uvicorn at."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        if _DIED.match(record.getMessage()):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            return True
        return False


def _say_when_a_worker_dies() -> None:
    """A worker process that died (out of memory, killed) was replaced and nothing was logged
    (an operator's finding): uvicorn says it at INFO, and ``serve`` runs it at WARNING. In
    the supervisor only (the workers configure their own logging)."""
    supervisor = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _WorkerDeaths) for f in supervisor.filters):
        supervisor.addFilter(_WorkerDeaths())
    supervisor.setLevel(min(supervisor.getEffectiveLevel(), logging.INFO))


class _Signalled(Exception):
    """A stop signal, taken by ``_stopped_by_signals``' handler."""


class StopSignals:
    """Whether a stop signal ended the server's call (``_stopped_by_signals``)."""

    signalled = False


@contextmanager
def _stopped_by_signals() -> Iterator[StopSignals]:
    """SIGTERM and Ctrl-C stop the server cleanly (exit status 0). uvicorn stops on them,
    then raises the signal again for whatever handler was there before: this one takes it
    and ends the server's call there, so the command ends normally instead of being killed
    by its own stop signal. A signal that comes before uvicorn takes them over (the server
    still starting, right after its "serving" line) ends the start the same way: a no-op
    handler swallowed it, and the server went on to serve, stopped by nothing."""
    state = StopSignals()

    def stop(signum: int, frame: object) -> None:
        state.signalled = True
        raise _Signalled

    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in saved:
        signal.signal(signum, stop)
    try:
        yield state
    except _Signalled:
        pass
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


@contextmanager
def _metrics_shared_by(workers: int) -> Iterator[None]:
    """Several server processes answer /metrics from counters they all write to files in
    one directory (prometheus_client's multiprocess mode): PROMETHEUS_MULTIPROC_DIR if the
    operator set it (its files from a previous run are removed first), else a temporary one
    removed when the server stops. One process keeps its counters in memory."""
    from countersign.infrastructure.observability.metrics import MULTIPROCESS_ENV

    configured = os.environ.get(MULTIPROCESS_ENV)
    if configured:
        for stale in Path(configured).glob("*.db"):
            stale.unlink()
        yield
        return
    if workers == 1:
        yield
        return
    with (
        tempfile.TemporaryDirectory(prefix="countersign-metrics-") as directory,
        _environment({MULTIPROCESS_ENV: directory}),
    ):
        yield


#: The MCP server, named rather than imported, like the HTTP application above.
MCP_SERVER = "countersign.infrastructure.entrypoints.mcp"


def cmd_mcp(cs: Countersign, args: argparse.Namespace) -> Result:
    """Serve the propose-only MCP server: over stdio as one member (the agent's host launches
    this command), or over streamable HTTP for API tokens. Over stdio nothing is printed on
    stdout, which belongs to the protocol; over HTTP the stop line is, as ``serve``'s."""
    import importlib

    from countersign.application.authorization import Caller

    mcp = importlib.import_module(MCP_SERVER)
    if args.http:
        # Stopped by SIGTERM or Ctrl-C as ``serve`` is: what is under way finished, its stop
        # line said, exit 0 (it was killed by the signal uvicorn raised again).
        with _stopped_by_signals():
            mcp.serve_http(cs, host=args.host, port=args.port, language=args.language)
        stopped = service.MCP_STOPPED.text(args.language)
        return service_stopped(args, {"stopped": True}, stopped)
    if not args.org or not args.actor:
        raise UsageError("serving over stdio needs --org ORG and --as EMAIL (or use --http)")
    try:
        membership = cs.club.membership(args.org, args.actor)
    except NotFoundError:
        # Refused before serving, on stderr with exit 2: the agent's host launched this with
        # the wrong settings, and stdout is the protocol's (a "Not found." there, exit 0,
        # reached the client as a closed connection).
        raise UsageError(
            f"{args.actor} is not a member of a club {args.org!r} in this database: "
            "check --org (the club's short name) and --as (the member's e-mail)"
        ) from None
    caller = Caller(email=membership.member.email, organization=membership.organization)
    mcp.serve_stdio(cs, caller, language=args.language)
    return ALREADY_PRINTED, ""


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """These environment variables for the block (the server process reads them), then back."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def cmd_users_set_password(cs: Countersign, args: argparse.Namespace) -> Result:
    """A new password for EMAIL, read from standard input or a prompt (never the command
    line, where other users and the shell history would see it); every browser session of
    that person ends."""
    from countersign.infrastructure.identity.passwords import set_password

    email = args.actor.strip().lower()
    if not cs.club.clubs_of(email):
        # A mistyped address would otherwise be "set" while the person's own is unchanged.
        said = words.NO_CLUB.text(args.language, email=email)
        raise RefusedError("not_a_member", said, email=email)
    password = _read_new_password(args.language)
    ended = set_password(cs, args.actor, password)
    return {"email": email, "password_set": True, "sessions_ended": ended}, (
        words.PASSWORD_SET.text(args.language, email=email, ended=ended)
    )


def _read_new_password(language: str) -> str:
    if not sys.stdin.isatty():
        # Piped: the first line, without its line ending (a password may hold other spaces).
        return sys.stdin.readline().rstrip("\r\n")
    import getpass

    first = getpass.getpass(words.NEW_PASSWORD.text(language))
    if getpass.getpass(words.REPEAT_IT.text(language)) != first:
        raise UsageError(words.PASSWORDS_DIFFER.en, words.PASSWORDS_DIFFER.fr)
    return first


def cmd_tokens_issue(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.identity.tokens import issue_token

    issued = issue_token(
        cs,
        args.org,
        args.name,
        [p.strip() for p in args.permissions.split(",") if p.strip()],
        issued_by=args.actor,
        kind="approver" if args.approver else "agent",
    )
    document = {
        "token_id": issued.token_id,
        "token": issued.token,
        "organization": issued.organization,
        "name": issued.name,
        "issued_by": issued.issued_by,
        "permissions": list(issued.permissions),
        "kind": issued.kind,
    }
    what = (words.APPROVER_TOKEN if issued.kind == "approver" else words.AGENT_TOKEN).text(
        args.language
    )
    said = words.TOKEN_ISSUED.text(
        args.language,
        id=issued.token_id,
        organization=issued.organization,
        permissions=", ".join(issued.permissions),
        who=issued.issued_by,
        what=what,
    )
    return document, f"{said}\n{issued.token}"


def cmd_tokens_revoke(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.identity.tokens import revoke_token

    revoked = revoke_token(cs, args.token_id)
    return {"token_id": args.token_id, "revoked": revoked}, (
        (words.TOKEN_REVOKED if revoked else words.NO_SUCH_TOKEN).text(
            args.language, id=args.token_id
        )
    )


def cmd_tokens_list(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.identity.tokens import list_tokens

    tokens = json.loads(render.to_json(list_tokens(cs, args.org)))
    lines = [
        f"{t['token_id']}  {t['name']:<20} {t['kind']:<8}  {','.join(t['permissions'])}"
        + (f"  {words.REVOKED.text(args.language)}" if t.get("revoked_at") else "")
        for t in tokens
    ]
    return tokens, "\n".join(lines) or words.NO_TOKENS.text(args.language)
