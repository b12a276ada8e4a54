"""Test databases: each test starts from its own copy of a template, seeded once per session.

Bootstrapping the schema and seeding the demo clubs cost about 0.2 s on SQLite and 0.5 s on
PostgreSQL; most tests need exactly that state, so it is made once per test session (once per
pytest-xdist worker) and copied:

* SQLite: the template is a file, closed after seeding (its WAL checkpointed away), and each
  test gets a byte copy in its own directory, on ``/dev/shm`` where there is one: test data
  needs no disk, and a commit then never waits for one.
* PostgreSQL: each worker has two databases of its own, with ``synchronous_commit = off`` (a
  commit is as visible and as atomic; only a power cut could take it back). The seeded one is
  bootstrapped and seeded once, and its rows are kept in a schema beside the tables
  (``template_seeded``); each test gets them back in one transaction: every table a test
  added is dropped, the seeded tables are truncated and refilled, and the notification
  sequence is set where seeding left it. The empty one is emptied by dropping its schema.

  ``CREATE DATABASE … TEMPLATE`` was the first design, and measured slower here: it copies
  about 8 MB (the catalogs) through the WAL for every test, 0.1 s on a quiet machine and
  0.3 to 1.4 s while other work used the disk, against 0.1 s for the refill under the same
  load, and dropping each copy cost another 0.05 to 1.5 s.

Names carry the xdist worker and the process id, so parallel workers and parallel runs
never collide.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages, throttle
from countersign.infrastructure.identity import passwords
from countersign.infrastructure.identity.session_store import ensure_session_table
from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.notifications.ledger import DeliveryLedger
from countersign.infrastructure.proposal_counts import SqlProposalCounts
from countersign.infrastructure.settings import Settings
from fastapi.testclient import TestClient

POSTGRES_SERVER = os.environ.get(
    "COUNTERSIGN_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432"
)
#: When every test's clock starts (and when the templates were seeded).
START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def worker_tag() -> str:
    """This process's part of every name it makes: the xdist worker and the pid."""
    return f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{os.getpid()}"


def scratch_root() -> Path:
    """Where test files go: memory (``/dev/shm``) where there is one."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


def postgres_problem() -> str | None:
    """Why the PostgreSQL server cannot be used, or None."""
    try:
        with psycopg.connect(f"{POSTGRES_SERVER}/postgres", connect_timeout=3):
            return None
    except psycopg.OperationalError as error:
        return str(error).strip().splitlines()[0]


def _admin() -> psycopg.Connection[Any]:
    return psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True)


def _seed(url: str) -> dict[str, Any] | None:
    """The ``seeded`` template: the schema, the demo clubs, the tables made on first use."""
    wired = bootstrap(Settings(database_url=url), clock=FakeClock(START))
    try:
        seeded = seed(wired)
        _create_tables_made_on_first_use(wired)
        return seeded
    finally:
        wired.close()


def _schema(url: str) -> dict[str, Any] | None:
    """The ``schema`` template: what ``bootstrap`` makes, and the tables made on first use;
    no rows but the ones their creation writes."""
    wired = bootstrap(Settings(database_url=url), clock=FakeClock(START))
    try:
        _create_tables_made_on_first_use(wired)
        return None
    finally:
        wired.close()


#: Each kind of template and how to make it. ``empty`` has none: nothing, not even a schema.
TEMPLATES: dict[str, Callable[[str], dict[str, Any] | None]] = {
    "seeded": _seed,
    "schema": _schema,
}


def _create_tables_made_on_first_use(wired: Countersign) -> None:
    """The tables the product makes the first time a part of it runs (the projections and
    their tracking, the pages' secrets, sessions, passwords and sign-in counts, tokens, the
    notification ledger, the proposal counts), as a database that has served once holds them:
    empty, with the rows their creation writes. Made per test, then dropped by the next
    restore, 26 of them cost PostgreSQL a few hundred DDL statements for every web test."""
    app = create_app(wired)
    mount_pages(app, wired, secure_cookies=False)
    with TestClient(app) as client:
        client.get("/sign-in")
    wired.projection_runners()
    ensure_tables(wired.sql, "user_passwords", passwords._SCHEMA)
    ensure_session_table(wired.sql)
    ensure_tables(wired.sql, throttle._TABLE, throttle._SCHEMA)
    DeliveryLedger(wired.sql)
    SqlProposalCounts(wired.sql)


def _drop(url: str) -> None:
    with contextlib.suppress(psycopg.Error), _admin() as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {url.rpartition('/')[2]} WITH (FORCE)")


def _drop_all(urls: Iterable[str]) -> None:
    """Drop the databases at once. PostgreSQL forces a checkpoint for every DROP DATABASE
    and waits for it: one after another, a worker's three or four took 4-10 s at the end of
    a run on the loaded machine (three empty ones: 3.6 s in turn, 0.85 s at once, since one
    checkpoint serves the requests made together)."""
    urls = list(urls)
    if urls:
        with ThreadPoolExecutor(max_workers=len(urls)) as pool:
            list(pool.map(_drop, urls))


#: The dropping process's code (``_drop_in_the_background``): psycopg alone, not this module
#: (whose imports cost a second of CPU).
_DROPPER = """
import contextlib, sys
from concurrent.futures import ThreadPoolExecutor
import psycopg
def drop(url):
    server, _, name = url.rpartition("/")
    with contextlib.suppress(psycopg.Error):
        with psycopg.connect(server + "/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
with ThreadPoolExecutor(max_workers=len(sys.argv) - 1) as pool:
    list(pool.map(drop, sys.argv[1:]))
"""


def _drop_in_the_background(urls: Iterable[str]) -> None:
    """Drop the databases (``_drop_all``) in a process of their own that nobody waits for,
    where there is a POSIX shell; here, at once, elsewhere. The checkpoint each DROP
    DATABASE waits for was 6.5-8 s of the last test's teardown in every worker of a loaded
    run (2026-12-07), and the run itself ended only after the last worker's."""
    urls = list(urls)
    if not urls:
        return
    if os.name != "posix" or not Path("/bin/sh").exists():
        _drop_all(urls)
        return
    # The shell starts the dropper in the background and ends at once: this process waits
    # for the shell alone, and the dropper, its output sent nowhere, outlives both.
    background = '"$0" -c "$1" "$@" </dev/null >/dev/null 2>&1 &'
    # (The names are the session's own: worker tags and the kinds of template.)
    subprocess.run(  # noqa: S603
        ["/bin/sh", "-c", background, sys.executable, _DROPPER, *urls], check=True
    )


_SNAPSHOT = "template_rows"


class PostgresTemplate:
    """One worker's database for one kind of template: made once, its rows kept in a schema
    beside the tables (``template_rows``), and put back for each test."""

    def __init__(self, url: str, make: Callable[[str], dict[str, Any] | None]) -> None:
        self.url = url
        self._make = make
        self.made: dict[str, Any] | None = None
        self._ready = False
        self._tables: list[str] = []
        #: The restore's statements, composed once (``_snapshot``) and sent as one string.
        self._script = ""
        #: The connection restores are made on, kept between tests (``_restore``).
        self._conn: psycopg.Connection[Any] | None = None
        _recreate(url)

    def copy(self) -> tuple[str, dict[str, Any] | None]:
        if not self._ready:
            self.made = self._make(self.url)
            self._snapshot()
            self._ready = True
        else:
            self._restore()
        return self.url, self.made

    def _snapshot(self) -> None:
        with _connect_alone(self.url) as conn:
            self._tables = [
                str(row[0])
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
                )
            ]
            conn.execute(f"CREATE SCHEMA {_SNAPSHOT}")
            for table in self._tables:
                conn.execute(f"CREATE TABLE {_SNAPSHOT}.{table} AS TABLE public.{table}")
            sequences = [
                (str(name), int(value))
                for name, value in conn.execute(
                    "SELECT sequencename, COALESCE(last_value, 0) FROM pg_sequences"
                    " WHERE schemaname = 'public'"
                )
            ]
        # DELETE, not TRUNCATE: the tables hold a few dozen rows, and TRUNCATE gives each
        # table and index a new file (measured on 38 tables: 0.44 s against 0.02 s). The
        # names are the server's own (tables and sequences it listed), quoted all the same.
        statements = [f"DELETE FROM public.{_quoted(table)}" for table in self._tables]
        statements += [
            f"INSERT INTO public.{_quoted(table)} SELECT * FROM {_SNAPSHOT}.{_quoted(table)}"
            for table in self._tables
        ]
        statements += [
            f"SELECT setval('public.{_quoted(name)}', {max(value, 1)}, {str(value > 0).lower()})"
            for name, value in sequences
        ]
        self._script = ";\n".join(statements)

    def _restore(self) -> None:
        """The template's rows back, in one transaction: the tables a test added dropped,
        then every statement of ``_script`` sent as one string, in one round trip.

        On a connection kept from one test to the next, whose server process has every
        table's catalog entries cached: a statement a round trip on a new connection each
        time took 29 ms a test (quiet machine); one string on a new connection 18 ms (the
        new process reads the catalogs of 88 relations); one string on the kept one 8. A
        test that ended it (one that ends every session, say) costs a new one."""
        try:
            self._restore_on(self._kept())
        except psycopg.OperationalError:
            self._forget()  # ended by a test, most likely: once more on a new one
            self._restore_on(self._kept())
        except BaseException:
            self._forget()  # whatever state its transaction is in, it is not used again
            raise

    def _kept(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is None or conn.closed:
            conn = self._conn = psycopg.connect(self.url, autocommit=True)
        return conn

    def _forget(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def _restore_on(self, conn: psycopg.Connection[Any]) -> None:
        # Every other session first: a test that left one behind (a server it never
        # stopped) can neither block nor see the reset.
        _end_others(conn)
        present = [
            str(row[0])
            for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        added = [_quoted(table) for table in present if table not in self._tables]
        drop = [f"DROP TABLE {', '.join(added)} CASCADE"] if added else []
        # psycopg sends a query without parameters as it is: several statements at once.
        conn.execute(";\n".join(["BEGIN", *drop, self._script, "COMMIT"]))

    def close(self) -> None:
        self._forget()


def _quoted(name: str) -> str:
    """An identifier the server listed, quoted (a name needs no quotes today; one might)."""
    return '"' + name.replace('"', '""') + '"'


class PostgresCopies:
    """One worker's PostgreSQL databases: one emptied of everything for each test, and one
    per kind of template, put back in its template's state for each test."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.empty_url = f"{POSTGRES_SERVER}/countersign_test_{tag}_empty"
        _recreate(self.empty_url)
        self._templates: dict[str, PostgresTemplate] = {}

    def empty(self) -> str:
        with _connect_alone(self.empty_url) as conn:
            conn.execute("DROP SCHEMA public CASCADE")
            conn.execute("CREATE SCHEMA public")
        return self.empty_url

    def copy(self, kind: str) -> tuple[str, dict[str, Any] | None]:
        if kind not in self._templates:
            url = f"{POSTGRES_SERVER}/countersign_test_{self.tag}_{kind}"
            self._templates[kind] = PostgresTemplate(url, TEMPLATES[kind])
        return self._templates[kind].copy()

    def close(self) -> list[str]:
        """The connections closed; the databases to drop (``_drop_all``)."""
        for template in self._templates.values():
            template.close()
        return [self.empty_url, *(t.url for t in self._templates.values())]


def _recreate(url: str) -> None:
    name = url.rpartition("/")[2]
    with _admin() as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
        conn.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")


def _connect_alone(url: str) -> psycopg.Connection[Any]:
    """A connection after every other session on the database is gone: a test that left one
    behind (a server it never stopped) can neither block nor see the reset."""
    conn = psycopg.connect(url, autocommit=True)
    _end_others(conn)
    return conn


def _end_others(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )


class TestDatabases:
    """This session's templates and the copies made from them."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    def __init__(self) -> None:
        self.tag = worker_tag()
        self.directory = Path(
            tempfile.mkdtemp(prefix=f"countersign-{self.tag}-", dir=scratch_root())
        )
        self._sqlite_templates: dict[str, tuple[Path, dict[str, Any] | None]] = {}
        self._postgres: PostgresCopies | None = None
        self._copies = 0
        self._private: list[str] = []
        #: Databases others made that go with these at the session's end (``drop_at_close``).
        self._adopted: list[str] = []

    def copy(self, backend: str, kind: str) -> tuple[str, dict[str, Any] | None]:
        """A database in ``kind``'s state, for one test: its URL, and what seeding returned
        (None but for ``seeded``). ``empty``: nothing, not even the schema; ``schema``: what
        ``bootstrap`` makes and the tables made on first use, with no rows of anyone's;
        ``seeded``: that and the demo clubs."""
        if backend == "postgres":
            if self._postgres is None:
                self._postgres = PostgresCopies(self.tag)
            if kind == "empty":
                return self._postgres.empty(), None
            url, made = self._postgres.copy(kind)
            return url, copy.deepcopy(made)
        self._copies += 1
        path = self.directory / f"test-{self._copies}" / "countersign.db"
        path.parent.mkdir()
        if kind == "empty":
            return f"sqlite:///{path}", None
        if kind not in self._sqlite_templates:
            template = self.directory / f"template-{kind}.db"
            made = TEMPLATES[kind](f"sqlite:///{template}")
            for leftover in (Path(f"{template}-wal"), Path(f"{template}-shm")):
                assert not leftover.exists() or leftover.stat().st_size == 0, leftover
            self._sqlite_templates[kind] = (template, made)
        template, made = self._sqlite_templates[kind]
        shutil.copyfile(template, path)
        return f"sqlite:///{path}", copy.deepcopy(made)

    def private(self, backend: str) -> tuple[str, dict[str, Any]]:
        """A seeded database no other test touches, for a fixture that outlives one test
        (a module's shared history): a file copy on SQLite; on PostgreSQL a database of its
        own, seeded (about half a second), dropped at the session's end with the others
        (``release`` leaves it: a DROP DATABASE waits for a checkpoint, ``_drop_all``)."""
        if backend == "sqlite":
            url, seeded = self.copy("sqlite", "seeded")
        else:
            self._copies += 1
            url = f"{POSTGRES_SERVER}/countersign_test_{self.tag}_private{self._copies}"
            _recreate(url)
            self._private.append(url)
            seeded = _seed(url)
        assert seeded is not None
        return url, seeded

    def release(self, url: str) -> None:
        """The test is over: a SQLite copy goes (PostgreSQL's is reset when next used, and
        a private one dropped at the session's end, with the others at once)."""
        if url.startswith("sqlite:///"):
            shutil.rmtree(Path(url.removeprefix("sqlite:///")).parent, ignore_errors=True)

    def drop_at_close(self, url: str) -> None:
        """A PostgreSQL database of the session's that ``close`` drops with these."""
        self._adopted.append(url)

    def close(self) -> None:
        urls = [*self._private, *self._adopted]
        if self._postgres is not None:
            urls += self._postgres.close()
        _drop_in_the_background(urls)
        shutil.rmtree(self.directory, ignore_errors=True)
