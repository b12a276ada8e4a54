"""The maintenance commands have no timeout, whatever the role or the database sets.

docs/deploy.md tells a deployment whose pooler drops startup options to set the timeout on
countersign's role instead (``ALTER ROLE countersign SET statement_timeout = '5s'``, and
``lock_timeout``); a database may carry one too. The walk set one on the database: the
maintenance commands, documented to run with no timeout (``projections rebuild``, ``audit
verify``, ``audit export``), connected without any setting of their own and so took that one.
``audit verify`` then gave up ("the database did not answer in time; try again in a few
seconds", its log blaming COUNTERSIGN_DATABASE_TIMEOUT), and on a log too long to read within
it would give up at every try. Their connections now say "no timeout" themselves, as the
services' say theirs.
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlsplit

import psycopg
from countersign.infrastructure.entrypoints.cli import main

from tests.attacks.test_held_locks import cs as cs  # the kit's cs, its waits bounded by WAIT
from tests.attacks.test_held_locks import database_timeout as database_timeout  # cs's: WAIT
from tests.attacks.test_held_locks import database_url as database_url  # PostgreSQL's only
from tests.attacks.test_held_locks import held, seen_waiting
from tests.conftest import events_table
from tests.support.proposing import propose

#: The database's own timeouts, milliseconds: far shorter than the lock is held.
SHORT = 100


def _database_sets(url: str, value: int | None) -> None:
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(url, autocommit=True) as admin:
        for setting in ("statement_timeout", "lock_timeout"):
            if value is None:
                admin.execute(f'ALTER DATABASE "{name}" RESET {setting}')
            else:
                admin.execute(f'ALTER DATABASE "{name}" SET {setting} = {value}')


def test_audit_verify_waits_behind_a_lock_whatever_timeout_the_database_sets(
    cs: Any, seeded: dict[str, Any], database_url: str
):
    propose(cs, seeded)
    statuses: dict[str, int] = {}

    def verify() -> None:
        statuses["verify"] = main(["audit", "verify", "--json", "--database", database_url])

    _database_sets(database_url, SHORT)
    try:
        with held(database_url, events_table(cs)) as holder:
            verifying = threading.Thread(target=verify)
            verifying.start()
            # Seen by the server still waiting, long past the database's 100 ms; not "alive
            # after 3 s", which a slow start on a loaded machine passed without any wait.
            waited = seen_waiting(database_url, holder, verifying.is_alive)
        verifying.join(60)
    finally:
        _database_sets(database_url, None)
    assert waited
    assert statuses["verify"] == 0
