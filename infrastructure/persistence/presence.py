"""Whether a database holds countersign yet, found without creating anything.

Only ``seed``, ``demo`` and an explicit ``--create`` make a database: every other command on
a database that does not hold countersign is refused, so that a mistyped URL is not answered
from an empty database made for it on the spot. A database holds countersign when it has the
event table the library names (``stored_events`` in SQLite, ``countersign_events`` in
PostgreSQL). A PostgreSQL database itself is never created here: that is its
administrator's (``createdb``); ``--create`` makes countersign's tables in it.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
from typing import Any

from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.settings import Database, NoDatabaseError, SettingsError

SQLITE_EVENTS = "stored_events"
POSTGRES_EVENTS = "countersign_events"
_WHAT_TO_DO = (
    "run `countersign seed` to create the demo, or check the URL (--create makes an empty one)"
)
_WHAT_TO_DO_FR = (
    "lancez `countersign seed` pour créer la démo, ou vérifiez l'URL (--create en crée une vide)"
)
#: What a database lacks, in English and French (``--language fr``: a command's answer).
Lacking = tuple[str, str]


def prepare(database: Database, create: bool, sql: SqlDatabase) -> None:
    """Make room for a database that may be created (a SQLite file's folder); else raise
    NoDatabaseError, saying what to do, unless the database already holds countersign.
    ``sql``: the start's own, for ``database``, whose reading connection asks PostgreSQL
    (the start goes on with it: a connection of its own was one of a command's six,
    2026-12-07)."""
    if create:
        if database.sqlite_file is not None:
            _room_for(database)
        return
    lacking = _sqlite_lacks(database) if database.kind == "sqlite" else _postgres_lacks(sql)
    if lacking is not None:
        english, french = lacking
        raise NoDatabaseError(
            f"no database at {database.url}{english}; {_WHAT_TO_DO}",
            f"aucune base de données à {database.url}{french} ; {_WHAT_TO_DO_FR}",
        )


def _room_for(database: Database) -> None:
    """A SQLite file may be made (or opened) where the URL says: its folder made if missing.
    SettingsError, naming the path and what is wrong, for a folder that cannot be made (a
    file is in its way, no permission), a file that is not a SQLite database, or one that
    cannot be opened, so a creating command says so in one line, as the others do."""
    path = database.sqlite_file
    assert path is not None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        in_the_way = isinstance(error, FileExistsError | NotADirectoryError)
        reason = "a file is in its way" if in_the_way else error.strerror or "refused"
        raison = "un fichier occupe sa place" if in_the_way else _raison(error)
        raise SettingsError(
            f"cannot create the folder of {path} ({reason}): choose another path in"
            " COUNTERSIGN_DATABASE_URL or --database",
            f"impossible de créer le dossier de {path} ({raison}) : choisissez un autre chemin"
            " dans COUNTERSIGN_DATABASE_URL ou --database",
        ) from None
    if path.exists() and not path.is_file():
        raise SettingsError(
            f"{path} is not a file: choose another path for the database",
            f"{path} n'est pas un fichier : choisissez un autre chemin pour la base de données",
        )
    try:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
    except sqlite3.DatabaseError as error:
        # Only that error is a file of something else; "database is locked" says itself.
        not_sqlite = "file is not a database" in str(error)
        said = "the file is not a SQLite database" if not_sqlite else str(error)
        dit = "le fichier n'est pas une base de données SQLite" if not_sqlite else str(error)
        raise SettingsError(
            f"cannot open the SQLite database at {path} ({said}): choose another path in"
            " COUNTERSIGN_DATABASE_URL or --database",
            f"impossible d'ouvrir la base de données SQLite à {path} ({dit}) : choisissez un"
            " autre chemin dans COUNTERSIGN_DATABASE_URL ou --database",
        ) from None


def _raison(error: OSError) -> str:
    """Why a folder could not be made, in French (the system's own words otherwise)."""
    if isinstance(error, PermissionError):
        return "permission refusée"
    if error.errno == errno.EROFS:
        return "système de fichiers en lecture seule"
    if error.errno == errno.ENOSPC:
        return "plus de place sur le disque"
    return error.strerror or "refusé"


def _sqlite_lacks(database: Database) -> Lacking | None:
    """None when the file holds countersign; else what it lacks ('' for the file itself)."""
    path = database.sqlite_file
    if path is None:
        return (
            " (an in-memory database starts empty)",
            " (une base de données en mémoire commence vide)",
        )
    if not path.is_file():
        return ("", "")
    try:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            found = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (SQLITE_EVENTS,)
            ).fetchone()
    except sqlite3.DatabaseError:
        return (
            " (the file is not a SQLite database)",
            " (le fichier n'est pas une base de données SQLite)",
        )
    if found:
        return None
    return (
        " (the file holds no countersign tables)",
        " (le fichier ne contient aucune table de countersign)",
    )


def _postgres_lacks(sql: SqlDatabase) -> Lacking | None:
    """None when the database holds countersign; else what it lacks. An unreachable server
    raises psycopg's OperationalError, as connecting later would."""
    import psycopg  # here: a SQLite process never loads it

    database = sql.database
    try:
        with sql.reading() as cursor:
            found = cursor.execute("SELECT to_regclass(?)::text", (POSTGRES_EVENTS,)).fetchone()
        table = found[0] if found else None
    except psycopg.OperationalError:
        if _server_lacks_database(database):
            return (
                f" (the server has no database {database.dbname}: createdb makes it)",
                f" (le serveur n'a pas de base de données {database.dbname} : createdb la crée)",
            )
        raise
    if table:
        return None
    return (
        " (the database holds no countersign tables)",
        " (la base de données ne contient aucune table de countersign)",
    )


def _server_lacks_database(database: Database) -> bool:
    """Whether the server answers and has no database of that name (asked of its maintenance
    database, not read from an error message, which is in the server's language)."""
    import psycopg

    try:
        with _connect(database, "postgres") as connection:
            found = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (database.dbname,)
            ).fetchone()
    except psycopg.Error:
        return False
    return found is None


def _connect(database: Database, dbname: str) -> Any:
    import psycopg

    given: dict[str, Any] = {"connect_timeout": "10", **dict(database.params)}
    return psycopg.connect(
        host=database.host,
        port=database.port,
        user=database.user,
        password=database.password,
        dbname=dbname,
        autocommit=True,
        **given,
    )
