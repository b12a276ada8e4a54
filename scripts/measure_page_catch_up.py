"""What a signed-in page view spends bringing the inbox's read models up to the log
(``Site.catch_up_inbox``) when nothing is new: its time and its SQL statements, on SQLite (a
file in a temporary directory) and PostgreSQL (a scratch database, dropped at the end).

    .venv/bin/python scripts/measure_page_catch_up.py [--views 200] [--backends sqlite,postgres]

Ava (granite's manager, signed in) opens the account page (only the navigation's counts catch
up) and the inbox (its lists, then the navigation's counts, after one catch-up a request)
``--views`` times each, through the ASGI app in this process. The first view of each is left
out (a process's first page). Statements are counted where they are sent: SQLite's trace
callback on every connection (BEGIN and COMMIT included), psycopg's cursors (an implicit BEGIN
counted as one, each COMMIT as one). Prints, per backend and page, the median and 90th
percentile time of one view's catch-up, and one view's statements by kind.
"""

# ruff: noqa: E402
import argparse
import atexit
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORK = Path(tempfile.mkdtemp(prefix="countersign-pages-"))
atexit.register(shutil.rmtree, WORK, ignore_errors=True)

import psycopg
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.entrypoints.web.site import Site
from countersign.infrastructure.persistence import pg_statements
from countersign.infrastructure.settings import Settings
from fastapi.testclient import TestClient

from tests.conftest import AVA
from tests.test_web_pages import Browser

SERVER = os.environ.get("COUNTERSIGN_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")

_watching = threading.local()
_seen: list[str] = []


def _record(statement: str) -> None:
    if getattr(_watching, "on", False):
        _seen.append(" ".join(statement.split())[:90])


_connect = sqlite3.connect


def _traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    connection = _connect(*args, **kwargs)
    connection.set_trace_callback(_record)
    return connection


sqlite3.connect = _traced_connect  # type: ignore[assignment]
_execute = psycopg.Cursor.execute
_executemany = psycopg.Cursor.executemany
_commit = psycopg.Connection.commit


def _begins(cursor: Any) -> None:
    connection = cursor.connection
    idle = connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    if not connection.autocommit and idle:
        _record("BEGIN")


def _traced_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
    _begins(self)
    _record(query if isinstance(query, str) else query.as_string(self.connection))
    return _execute(self, query, *args, **kwargs)


def _traced_executemany(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
    _begins(self)
    _record(query if isinstance(query, str) else query.as_string(self.connection))
    return _executemany(self, query, *args, **kwargs)


def _traced_commit(self: Any) -> None:
    _record("COMMIT")
    _commit(self)


psycopg.Cursor.execute = _traced_execute  # type: ignore[method-assign]
psycopg.Cursor.executemany = _traced_executemany  # type: ignore[method-assign]
psycopg.Connection.commit = _traced_commit  # type: ignore[method-assign]
_executed = pg_statements._executed


def _traced_executed(conn: Any, statement: Any, params: Any) -> Any:
    _record(statement.query.decode())  # a prepared statement sent by libpq (the log's reads)
    return _executed(conn, statement, params)


pg_statements._executed = _traced_executed

_spent: list[float] = []
_catch_up_inbox = Site.catch_up_inbox


def _timed_catch_up_inbox(self: Site, visit: Any) -> None:
    if visit.inbox_caught_up:
        _catch_up_inbox(self, visit)  # this request's second call: nothing to do or count
        return
    _watching.on = True
    started = time.perf_counter()
    try:
        _catch_up_inbox(self, visit)
    finally:
        _spent.append(time.perf_counter() - started)
        _watching.on = False


Site.catch_up_inbox = _timed_catch_up_inbox  # type: ignore[method-assign]


def kind(statement: str) -> str:
    words = statement.split()
    first = words[0].upper() if words else "?"
    if first == "CREATE":
        return "CREATE " + " ".join(w.upper() for w in words[1:3] if w.isalpha())
    return first


def measure(url: str, views: int) -> dict[str, Any]:
    cs = bootstrap(Settings(database_url=url), clock=FakeClock())
    try:
        seed(cs)
        passwords = seed_passwords(cs)
        app = create_app(cs)
        mount_pages(app, cs, secure_cookies=False)
        browser = Browser(TestClient(app, follow_redirects=False))
        assert browser.sign_in(AVA, passwords[AVA]).status_code == 303
        found: dict[str, Any] = {}
        for page in ("/account/passkeys", "/"):
            assert browser.get(page).status_code == 200  # the first view: left out
            times, statements = [], []
            for _ in range(views):
                _spent.clear()
                _seen.clear()
                assert browser.get(page).status_code == 200
                times.append(sum(_spent))
                statements.append(list(_seen))
            last = statements[-1]
            found[page] = {
                "calls": len(_spent),
                "median_ms": statistics.median(times) * 1000,
                "p90_ms": statistics.quantiles(times, n=10)[-1] * 1000,
                "statements": len(last),
                "by_kind": Counter(kind(s) for s in last),
                "sample": last,
            }
        return found
    finally:
        cs.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--views", type=int, default=200)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--show", action="store_true", help="print one view's statements")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        if backend == "sqlite":
            url, drop = f"sqlite:///{WORK / 'countersign.db'}", None
        else:
            name = f"s39pages_measure_{os.getpid()}"
            with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name}")
            url, drop = f"{SERVER}/{name}", name
        try:
            found = measure(url, args.views)
        finally:
            if drop:
                with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE IF EXISTS {drop} WITH (FORCE)")
        for page, figures in found.items():
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(figures["by_kind"].items()))
            print(
                f"{backend:<8} {page:<18} catch_up_inbox x{figures['calls']}: "
                f"median {figures['median_ms']:.2f} ms, p90 {figures['p90_ms']:.2f} ms; "
                f"{figures['statements']} statements ({kinds})"
            )
            if args.show:
                for statement in figures["sample"]:
                    print("    ", statement)


if __name__ == "__main__":
    main()
