"""The libpq connection parameters a PostgreSQL database URL may give in its query
(``?sslmode=verify-full``), checked as ``settings.Database.parse`` reads the URL."""

from __future__ import annotations

from urllib.parse import parse_qsl

#: The libpq connection parameters a PostgreSQL URL may give in its query, passed to every
#: connection (each documented by libpq): TLS, and how a connection is named and kept. Any
#: other is refused rather than dropped: ``?sslmode=require`` was dropped, and a process
#: meant to refuse a plain connection made one. Not ``options``, which countersign sets for
#: its statements' timeouts (``PGOPTIONS`` is added to it), nor a password.
CONNECTION_PARAMETERS = frozenset(
    {
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "sslcrl",
        "sslcrldir",
        "sslsni",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "channel_binding",
        "gssencmode",
        "requirepeer",
        "application_name",
        "connect_timeout",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "target_session_attrs",
    }
)


def refused_parameter(query: str) -> tuple[str, str] | None:
    """What to say of a PostgreSQL URL's query naming a parameter not passed on to libpq:
    ``(english, french)``, for a ``SettingsError``; None when every one is."""
    found = parse_qsl(query, keep_blank_values=True, strict_parsing=False)
    for name, _ in found:
        if name not in CONNECTION_PARAMETERS:
            taken = ", ".join(sorted(CONNECTION_PARAMETERS))
            options = name == "options"
            return (
                f"the database URL's parameter {name!r} is not one countersign passes on to "
                f"PostgreSQL; it takes {taken}"
                + (" (PGOPTIONS adds to the sessions' options)" if options else ""),
                f"le paramètre {name!r} de l'URL de base de données n'est pas de ceux que "
                f"countersign transmet à PostgreSQL ; il prend {taken}"
                + (" (PGOPTIONS s'ajoute aux options des sessions)" if options else ""),
            )
    return None
