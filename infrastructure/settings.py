"""Settings from the environment, overridable per command."""

from __future__ import annotations

import ipaddress
import math
import os
from dataclasses import dataclass, field
from math import ceil
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlparse

from countersign.application.assistant.turn_limits import (
    DEFAULT_TURN_LIMIT,
    DEFAULT_TURNS_PER_CLUB,
    MAX_CONCURRENT_TURNS,
)
from countersign.application.passkey_limit import DEFAULT_PASSKEY_CHANGE_LIMIT
from countersign.application.proposal_limit import RateLimit
from countersign.application.token_write_limit import DEFAULT_TOKEN_WRITE_LIMIT
from countersign.domain.seals import SealKeys
from countersign.infrastructure.database_url import CONNECTION_PARAMETERS as CONNECTION_PARAMETERS
from countersign.infrastructure.database_url import refused_parameter
from countersign.infrastructure.seal_keys import SealKeysError, seal_keys_from_env

DATABASE_URL_ENV = "COUNTERSIGN_DATABASE_URL"
#: The origins passkeys' pages are served from (``Settings.webauthn_origins``); ``serve``
#: defaults it to its own port on localhost.
ORIGIN_ENV = "COUNTERSIGN_WEBAUTHN_ORIGIN"
DEFAULT_DATABASE_URL = "sqlite:///countersign.db"
_RECORDERS = (
    "countersign.infrastructure.persistence.recorders"  # where our persistence classes live
)
_RECORDERS_POSTGRES = "countersign.infrastructure.persistence.pg_waits"
#: The key, in the library's environment, of the PostgreSQL statements' timeout in
#: milliseconds (read by pg_waits.CountersignPostgresFactory).
TIMEOUT_KEY = "POSTGRES_STATEMENT_TIMEOUT"
#: The library's setting countersign's PostgreSQL factory reads the URL's parameters from.
PARAMETERS_KEY = "POSTGRES_CONNECTION_PARAMETERS"
#: The key, in the library's environment, of the seconds a pooled PostgreSQL connection above
#: the pool's minimum may stay unused before it is closed (read by pg_waits).
POOL_IDLE_KEY = "POSTGRES_POOL_IDLE"
#: COUNTERSIGN_DATABASE_POOL_IDLE's default.
DEFAULT_POOL_IDLE = 60.0
DEFAULT_API_MAX_BODY = 64 * 1024
DEFAULT_READY_MAX_LAG = 10_000
DEFAULT_PROPOSAL_LIMIT = "30/minute"
#: COUNTERSIGN_DATABASE_TIMEOUT's default: seconds a PostgreSQL statement may wait or run, and
#: a SQLite write may wait for the database's write lock.
DEFAULT_DATABASE_TIMEOUT = 5.0
#: SQLite: seconds a write of a maintenance command (no COUNTERSIGN_DATABASE_TIMEOUT: a rebuild,
#: ``audit verify``) waits for the write lock before it gives up.
SQLITE_MAINTENANCE_WAIT = 30


def sqlite_wait(timeout: float | None) -> int:
    """SQLite: whole seconds a write waits for the write lock, ``timeout`` (the services'
    COUNTERSIGN_DATABASE_TIMEOUT) rounded up, or ``SQLITE_MAINTENANCE_WAIT`` without one."""
    return SQLITE_MAINTENANCE_WAIT if timeout is None else max(1, math.ceil(timeout))


class SettingsError(ValueError):
    """Raised when a setting has a value countersign cannot use; the message says the fix.
    ``french``: the same message in French (a command's ``--language fr``), where given."""

    def __init__(self, message: str, french: str | None = None) -> None:
        super().__init__(message)
        self.french = french

    def text(self, language: str) -> str:
        """The message in ``language`` (English where it has no French)."""
        return self.french if language == "fr" and self.french else str(self)


class NoDatabaseError(SettingsError):
    """Raised when the database named holds no countersign yet and may not be created here."""


#: Every setting an operator may set (the README's configuration tables), for
#: ``check_setting_names``.
SETTING_NAMES = frozenset(
    (
        "COUNTERSIGN_API_MAX_BODY",
        "COUNTERSIGN_DATABASE_POOL_IDLE",
        "COUNTERSIGN_DATABASE_TIMEOUT",
        "COUNTERSIGN_DATABASE_URL",
        "COUNTERSIGN_HTTP_READ_TIMEOUT",
        "COUNTERSIGN_LOG_FORMAT",
        "COUNTERSIGN_LOG_LEVEL",
        "COUNTERSIGN_MCP_SESSIONS_PER_CLUB",
        "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN",
        "COUNTERSIGN_MCP_SESSION_IDLE",
        "COUNTERSIGN_METRICS_LOCAL",
        "COUNTERSIGN_METRICS_TOKEN",
        "COUNTERSIGN_MODEL",
        "COUNTERSIGN_NOTIFY_FIRST_RETRY",
        "COUNTERSIGN_NOTIFY_MAX_ATTEMPTS",
        "COUNTERSIGN_NOTIFY_PER_CLUB",
        "COUNTERSIGN_NOTIFY_PER_ENDPOINT",
        "COUNTERSIGN_NOTIFY_TIMEOUT",
        "COUNTERSIGN_NOTIFY_WORKERS",
        "COUNTERSIGN_PASSKEY_CHANGE_LIMIT",
        "COUNTERSIGN_PLUGINS",
        "COUNTERSIGN_PROPOSAL_LIMIT",
        "COUNTERSIGN_PROPOSAL_TTL",
        "COUNTERSIGN_PUBLIC_URL",
        "COUNTERSIGN_READY_MAX_LAG",
        "COUNTERSIGN_RECONCILE_LEASE",
        "COUNTERSIGN_REQUESTS_IN_FLIGHT",
        "COUNTERSIGN_SEALS_REQUIRED",
        "COUNTERSIGN_SEAL_KEYS",
        "COUNTERSIGN_SEAL_KEYS_FILE",
        "COUNTERSIGN_SECURE_COOKIES",
        "COUNTERSIGN_SESSION_SECRET",
        "COUNTERSIGN_SMTP_FROM",
        "COUNTERSIGN_SMTP_HOST",
        "COUNTERSIGN_SMTP_PORT",
        "COUNTERSIGN_TOKEN_WRITE_LIMIT",
        "COUNTERSIGN_TRUSTED_PROXIES",
        "COUNTERSIGN_TURNS_PER_CLUB",
        "COUNTERSIGN_TURN_LIMIT",
        "COUNTERSIGN_WEBAUTHN_ORIGIN",
        "COUNTERSIGN_WEBAUTHN_RP_ID",
        "COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS",
    )
)
_PREFIX = "COUNTERSIGN_"


def check_setting_names() -> None:
    """SettingsError for a COUNTERSIGN_ variable whose name is close to a setting's and is
    not one (the seal keys' file as ``..._SEAL_KEY_FILE``): as it is, nothing reads it, and
    the setting meant keeps its default unnoticed (proposals unsealed, say). A name close to
    none passes: the test suite's and the tools' own (COUNTERSIGN_TEST_POSTGRES) are not
    settings."""
    unknown = sorted(n for n in os.environ if n.startswith(_PREFIX) and n not in SETTING_NAMES)
    if not unknown:
        return
    import difflib  # only then: most processes have no such name to look at

    known = [name.removeprefix(_PREFIX) for name in SETTING_NAMES]
    for name in unknown:
        close = difflib.get_close_matches(name.removeprefix(_PREFIX), known, n=1, cutoff=0.8)
        if close:
            raise SettingsError(
                f"{name} is not a countersign setting: did you mean {_PREFIX}{close[0]}? "
                "Correct its name (as it is, it is ignored), or remove it",
                f"{name} n'est pas un réglage de countersign : vouliez-vous dire "
                f"{_PREFIX}{close[0]} ? Corrigez son nom (tel quel, il est ignoré) ou retirez-le",
            )


@dataclass(frozen=True)
class Settings:
    """Everything that varies between deployments."""

    database_url: str = DEFAULT_DATABASE_URL
    proposal_ttl_seconds: int = 86400
    reconcile_lease_seconds: int = 60
    model: str = "scripted"  # COUNTERSIGN_MODEL: "scripted" (offline) or an endpoint's model
    api_max_body: int = DEFAULT_API_MAX_BODY  # COUNTERSIGN_API_MAX_BODY: bytes per API body
    #: COUNTERSIGN_READY_MAX_LAG: /readyz fails while a projection is more events behind the
    #: log than this (0: projection lag never fails readiness).
    ready_max_lag: int = DEFAULT_READY_MAX_LAG
    #: COUNTERSIGN_WEBAUTHN_RP_ID: the domain passkeys are registered for (no scheme, no port).
    webauthn_rp_id: str = "localhost"
    #: COUNTERSIGN_WEBAUTHN_ORIGIN: the origins (comma-separated) the pages that use passkeys
    #: are served from; an assertion from any other origin does not verify.
    webauthn_origins: tuple[str, ...] = ("http://localhost:8000",)
    #: COUNTERSIGN_PROPOSAL_LIMIT: how many proposals one member may make in a while,
    #: through the API, MCP, the assistants and the pages together.
    proposal_limit: str = DEFAULT_PROPOSAL_LIMIT
    #: COUNTERSIGN_TURNS_PER_CLUB: how many of a process's MAX_CONCURRENT_TURNS assistant
    #: turns waiting on the model one club's may hold; clubs holding turns share that share
    #: less one past their first turns (``turn_limits.TurnSlots``).
    turns_per_club: int = DEFAULT_TURNS_PER_CLUB
    #: COUNTERSIGN_TURN_LIMIT: how many assistant turns one member may start in a while as
    #: themselves (the web chat and the command line together), and each of their API tokens.
    turn_limit: str = str(DEFAULT_TURN_LIMIT)
    #: COUNTERSIGN_PASSKEY_CHANGE_LIMIT: how many changes to their passkeys (adding, naming,
    #: removing one) one member may make in a while, in each club.
    passkey_change_limit: str = str(DEFAULT_PASSKEY_CHANGE_LIMIT)
    #: COUNTERSIGN_TOKEN_WRITE_LIMIT: how many changes to a club's settings (a member's
    #: permissions, a policy, webhooks) each API token may send in a while.
    token_write_limit: str = str(DEFAULT_TOKEN_WRITE_LIMIT)
    #: COUNTERSIGN_PLUGINS: the plug-ins this deployment enables, by name (comma-separated);
    #: an installed plug-in that is not named is never loaded. None (settings made in code
    #: that do not say): the ones COUNTERSIGN_PLUGINS names, as every process of the
    #: deployment reads them; () enables none.
    plugins: tuple[str, ...] | None = None
    #: COUNTERSIGN_DATABASE_TIMEOUT: seconds a PostgreSQL statement may wait for a lock or run
    #: (each connection's statement_timeout and lock_timeout); past it the request answers
    #: that the database did not answer. None: no limit (the maintenance commands).
    database_timeout: float | None = DEFAULT_DATABASE_TIMEOUT
    #: COUNTERSIGN_DATABASE_POOL_IDLE: seconds a PostgreSQL connection a burst opened beyond
    #: the one each process keeps may stay unused before it is closed.
    database_pool_idle: float = DEFAULT_POOL_IDLE
    #: COUNTERSIGN_SEAL_KEYS (or COUNTERSIGN_SEAL_KEYS_FILE): the keys, held outside the
    #: database, that seal each new proposal (the first) and verify a proposal's seal
    #: before it is approved and in ``audit verify`` (every one). None: no seals.
    seal_keys: SealKeys | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_env(cls, database_url: str | None = None) -> Settings:
        check_setting_names()
        ttl = os.environ.get("COUNTERSIGN_PROPOSAL_TTL", "86400")
        lease = os.environ.get("COUNTERSIGN_RECONCILE_LEASE", "60")
        max_body = os.environ.get("COUNTERSIGN_API_MAX_BODY", str(DEFAULT_API_MAX_BODY)).strip()
        for name, value in (
            ("COUNTERSIGN_PROPOSAL_TTL", ttl),
            ("COUNTERSIGN_RECONCILE_LEASE", lease),
        ):
            if not value.isdigit() or int(value) <= 0:
                raise SettingsError(
                    f"{name} must be a positive number of seconds, not {value!r}",
                    f"{name} doit être un nombre positif de secondes, pas {value!r}",
                )
        if not (max_body.isascii() and max_body.isdigit()) or int(max_body) <= 0:
            raise SettingsError(
                f"COUNTERSIGN_API_MAX_BODY must be a positive number of bytes, not {max_body!r}",
                f"COUNTERSIGN_API_MAX_BODY doit être un nombre positif d'octets, pas {max_body!r}",
            )
        max_lag = os.environ.get("COUNTERSIGN_READY_MAX_LAG", str(DEFAULT_READY_MAX_LAG)).strip()
        if not (max_lag.isascii() and max_lag.isdigit()):
            raise SettingsError(
                "COUNTERSIGN_READY_MAX_LAG must be a number of events (0: no limit), "
                f"not {max_lag!r}",
                "COUNTERSIGN_READY_MAX_LAG doit être un nombre d'événements (0 : aucune "
                f"limite), pas {max_lag!r}",
            )
        rp_id = os.environ.get("COUNTERSIGN_WEBAUTHN_RP_ID", "").strip().lower() or "localhost"
        if not rp_id.replace(".", "").replace("-", "").isalnum() or _is_ip_address(rp_id):
            # WebAuthn takes a domain, never an address: browsers refuse 127.0.0.1 as one.
            raise SettingsError(
                "COUNTERSIGN_WEBAUTHN_RP_ID must be a domain name such as example.org "
                f"(localhost on this machine), not {rp_id!r}",
                "COUNTERSIGN_WEBAUTHN_RP_ID doit être un nom de domaine tel que example.org "
                f"(localhost sur cette machine), pas {rp_id!r}",
            )
        origins = tuple(
            o.strip().rstrip("/") for o in os.environ.get(ORIGIN_ENV, "").split(",") if o.strip()
        ) or (f"http://{rp_id}:8000" if rp_id == "localhost" else f"https://{rp_id}",)
        for origin in origins:
            if not origin.startswith(("https://", "http://localhost")):
                raise SettingsError(
                    "COUNTERSIGN_WEBAUTHN_ORIGIN must be https:// origins (http:// only for "
                    f"localhost), not {origin!r}",
                    "COUNTERSIGN_WEBAUTHN_ORIGIN doit être des origines https:// (http:// "
                    f"seulement pour localhost), pas {origin!r}",
                )
        database_timeout = _seconds(
            "COUNTERSIGN_DATABASE_TIMEOUT",
            os.environ.get("COUNTERSIGN_DATABASE_TIMEOUT", "").strip(),
            DEFAULT_DATABASE_TIMEOUT,
        )
        pool_idle = _seconds(
            "COUNTERSIGN_DATABASE_POOL_IDLE",
            os.environ.get("COUNTERSIGN_DATABASE_POOL_IDLE", "").strip(),
            DEFAULT_POOL_IDLE,
        )
        limit = _rate("COUNTERSIGN_PROPOSAL_LIMIT", DEFAULT_PROPOSAL_LIMIT)
        try:
            seal_keys = seal_keys_from_env()
        except SealKeysError as error:
            raise SettingsError(str(error), error.french) from None
        return cls(
            turns_per_club=_turns_per_club(),
            turn_limit=_rate("COUNTERSIGN_TURN_LIMIT", str(DEFAULT_TURN_LIMIT)),
            passkey_change_limit=_rate(
                "COUNTERSIGN_PASSKEY_CHANGE_LIMIT", str(DEFAULT_PASSKEY_CHANGE_LIMIT)
            ),
            token_write_limit=_rate(
                "COUNTERSIGN_TOKEN_WRITE_LIMIT", str(DEFAULT_TOKEN_WRITE_LIMIT)
            ),
            plugins=plugin_names(),
            webauthn_rp_id=rp_id,
            webauthn_origins=origins,
            database_url=database_url or os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL,
            proposal_ttl_seconds=int(ttl),
            reconcile_lease_seconds=int(lease),
            model=os.environ.get("COUNTERSIGN_MODEL", "").strip() or "scripted",
            api_max_body=int(max_body),
            ready_max_lag=int(max_lag),
            proposal_limit=limit,
            database_timeout=database_timeout,
            database_pool_idle=pool_idle,
            seal_keys=seal_keys,
        )


def _is_ip_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _seconds(name: str, value: str, default: float) -> float:
    """A setting's positive number of seconds (``0.5`` and ``5`` alike; empty: ``default``)."""
    if not value:
        return default
    try:
        seconds = float(value) if value.isascii() else 0.0
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < 86_400:
        raise SettingsError(
            f"{name} must be a positive number of seconds (such as 5 or 0.5), not {value!r}",
            f"{name} doit être un nombre positif de secondes (tel que 5 ou 0.5), pas {value!r}",
        )
    return seconds


def _rate(name: str, default: str) -> str:
    """The limit ``name`` sets (``30/minute``...), checked; ``default`` without it."""
    limit = os.environ.get(name, "").strip() or default
    try:
        RateLimit.parse(limit)
    except ValueError as error:
        raise SettingsError(
            f"{name}: {error}",
            f"{name} : {limit!r} n'est pas une limite telle que 30/minute (un nombre positif "
            "par seconde, minute, heure ou jour)",
        ) from None
    return limit


def _turns_per_club() -> int:
    name = "COUNTERSIGN_TURNS_PER_CLUB"
    value = os.environ.get(name, "").strip() or str(DEFAULT_TURNS_PER_CLUB)
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= MAX_CONCURRENT_TURNS:
        raise SettingsError(
            f"{name} must be a number of assistant turns from 1 to {MAX_CONCURRENT_TURNS} "
            f"(those a process lets wait on the model at once), not {value!r}",
            f"{name} doit être un nombre de tours d'assistant de 1 à {MAX_CONCURRENT_TURNS} "
            f"(ceux qu'un processus laisse attendre le modèle en même temps), pas {value!r}",
        )
    return int(value)


@dataclass(frozen=True)
class Database:
    """A parsed database URL."""

    kind: str  # "sqlite" | "postgres"
    sqlite_path: str = ""
    host: str = ""
    port: int = 5432
    user: str = ""
    password: str = ""
    dbname: str = ""
    #: PostgreSQL: libpq connection parameters the URL's query names (``?sslmode=verify-full``),
    #: passed to every connection the process makes (``CONNECTION_PARAMETERS``).
    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, url: str) -> Database:
        parsed = urlparse(url)
        if parsed.scheme == "sqlite":
            # sqlite:///relative.db, sqlite:////absolute.db, sqlite:///:memory:
            path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
            if not path:
                raise SettingsError(
                    "a SQLite URL looks like sqlite:///countersign.db",
                    "une URL SQLite s'écrit sqlite:///countersign.db",
                )
            return cls(kind="sqlite", sqlite_path=path)
        if parsed.scheme in ("postgres", "postgresql"):
            if not parsed.path.strip("/"):
                raise SettingsError(
                    "a PostgreSQL URL names a database: postgresql://user@host:5432/dbname",
                    "une URL PostgreSQL nomme une base de données : "
                    "postgresql://utilisateur@hôte:5432/nom",
                )
            try:
                port = parsed.port
            except ValueError:  # not a number, or out of range (an unexpanded ${DB_PORT})
                port = 0
            if port == 0:  # 0 too: read as no port, it connected to 5432, another database
                given = parsed.netloc.rpartition("@")[2].rpartition(":")[2]  # never the password
                raise SettingsError(
                    f"the database URL's port is not a port number (1 to 65535): {given!r}; "
                    "check COUNTERSIGN_DATABASE_URL or --database",
                    "le port de l'URL de base de données n'est pas un numéro de port (1 à "
                    f"65535) : {given!r} ; vérifiez COUNTERSIGN_DATABASE_URL ou --database",
                )
            refused = refused_parameter(parsed.query)
            if refused is not None:
                raise SettingsError(*refused)
            return cls(
                kind="postgres",
                host=parsed.hostname or "127.0.0.1",
                port=port or 5432,
                user=unquote(parsed.username or "postgres"),
                password=unquote(parsed.password or ""),
                dbname=parsed.path.strip("/"),
                params=tuple(parse_qsl(parsed.query, keep_blank_values=True)),
            )
        raise SettingsError(
            f"unsupported database URL scheme {parsed.scheme!r}: "
            "use sqlite:///path.db or postgresql://user@host/dbname",
            f"le schéma d'URL de base de données {parsed.scheme!r} n'est pas pris en charge : "
            "utilisez sqlite:///chemin.db ou postgresql://utilisateur@hôte/nom",
        )

    @property
    def url(self) -> str:
        """The database's URL as people may read it: never the password."""
        if self.kind == "sqlite":
            return f"sqlite:///{self.sqlite_path}"
        query = f"?{urlencode(self.params, safe='/:')}" if self.params else ""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.dbname}{query}"

    @property
    def sqlite_file(self) -> Path | None:
        """Where an embedded database's file is (None in memory)."""
        if self.kind != "sqlite" or self.sqlite_path == ":memory:":
            return None
        return Path(self.sqlite_path).expanduser().resolve()

    def eventsourcing_env(
        self, timeout: float | None = None, pool_idle: float = DEFAULT_POOL_IDLE
    ) -> dict[str, str]:
        """The library's settings for this database; ``timeout``: seconds each PostgreSQL
        statement may wait or run (None: no limit), pg_waits.py; on SQLite, seconds a commit
        waits for the write lock (None: ``SQLITE_MAINTENANCE_WAIT``). ``pool_idle``: seconds
        a PostgreSQL connection above the pool's one may stay unused (pg_pool.shrink)."""
        if self.kind == "sqlite":
            return {
                # The library's SQLite persistence, with statement caching fixed.
                "PERSISTENCE_MODULE": f"{_RECORDERS}:CountersignSQLiteFactory",
                "SQLITE_DBNAME": self.sqlite_path,
                # The library reads whole seconds: a part of one waits the whole second.
                "SQLITE_LOCK_TIMEOUT": str(sqlite_wait(timeout)),
                "APPLICATION_RECORDER_TOPIC": f"{_RECORDERS}:CountersignSQLiteRecorder",
            }
        env = {
            # The library's PostgreSQL factory, its connections made with the timeout.
            "PERSISTENCE_MODULE": f"{_RECORDERS_POSTGRES}:CountersignPostgresFactory",
            "POSTGRES_DBNAME": self.dbname,
            "POSTGRES_HOST": self.host,
            "POSTGRES_PORT": str(self.port),
            "POSTGRES_USER": self.user,
            "POSTGRES_PASSWORD": self.password,
            # The URL's libpq parameters, for the pool's connections (pg_waits.py).
            PARAMETERS_KEY: urlencode(self.params),
            # Commits go through countersign's own insert function
            # (infrastructure/persistence/recorders.py).
            # Not the library's ("y"): in 9.5.6 it skips the table lock that keeps
            # notification ids in commit order, and projections would then skip events.
            "APPLICATION_RECORDER_TOPIC": f"{_RECORDERS}_postgres:CountersignPostgresRecorder",
            "POSTGRES_ENABLE_DB_FUNCTIONS": "n",
            # psycopg_pool hands connections out first-in first-out: with four held open, a
            # lone client's commits went round four server processes, each with cold caches
            # (6% of an approval cycle). One is held; more open under concurrent load (up to
            # the library's overflow of 10) and close again once unused for ``pool_idle``.
            "POSTGRES_POOL_SIZE": "1",
            POOL_IDLE_KEY: str(pool_idle),
            # The lock timeout the insert functions of earlier versions set for their own
            # transaction (kept as they were, for those versions' processes during an
            # upgrade); the one the recorder calls waits as long as its connection's
            # statements do (``timeout``).
            "POSTGRES_LOCK_TIMEOUT": "10",
        }
        # Always said, so that nothing in the process's environment sets it instead.
        env[TIMEOUT_KEY] = "" if timeout is None else str(milliseconds(timeout))
        # How long a statement waits for a connection from the pool (the library reads whole
        # seconds; its default, 30): as long as a statement may wait for a lock, at least a
        # second. Past it, the database is out of reach for now (``NoConnectionError``).
        env["POSTGRES_CONNECT_TIMEOUT"] = str(30 if timeout is None else max(1, ceil(timeout)))
        return env


def milliseconds(seconds: float) -> int:
    """``seconds`` as PostgreSQL's timeout settings take it (at least 1: 0 means none)."""
    return max(1, round(seconds * 1000))


PLUGINS_ENV = "COUNTERSIGN_PLUGINS"


def plugin_names() -> tuple[str, ...]:
    """The plug-ins ``COUNTERSIGN_PLUGINS`` names, in order, each once."""
    names = (name.strip() for name in os.environ.get(PLUGINS_ENV, "").split(","))
    return tuple(dict.fromkeys(name for name in names if name))
