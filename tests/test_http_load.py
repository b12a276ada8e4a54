"""Suite 4: load through the real HTTP server, ``countersign serve --workers 2``.

Card-refund proposals are loaded, then client processes approve every one of them at once
over HTTP with API tokens (each client every proposal, in its own shuffled order, two
clients at a time on the same proposal). It must hold that:

* exactly one provider request was made per idempotency key;
* every answer for a proposal is the stored outcome (or "in progress" while it executes),
  and every repeat after the race answers that same outcome;
* no answer is a 5xx (nor anything but 200);
* the server stops cleanly, leaving no process behind.

Sizes: PostgreSQL 1,000 proposals x 8 clients, SQLite 200 x 4, in CI as in the full run
(together about two minutes here; ``scripts/soak`` runs this suite with every service up and
prints its figures, and ``scripts/bench.py http`` measures it). The figures (approve latency
p50/p99, requests per second) come from those scripts: tests assert no timing.
"""

from __future__ import annotations

import pytest

from tests.http_load import run_suite

pytestmark = pytest.mark.slow

#: Proposals and concurrent clients (each client approves every proposal): every proposal
#: is a race of that many approvals. scripts/soak and scripts/bench.py http run larger sizes.
SIZES = {"postgres": (300, 8), "sqlite": (200, 4)}


def test_every_proposal_executes_once_under_concurrent_http_approvals(database_url, tmp_path):
    backend = "postgres" if database_url.startswith("postgresql") else "sqlite"
    proposals, clients = SIZES[backend]

    run = run_suite(backend, database_url, tmp_path, proposals=proposals, clients=clients)

    assert run.problems == []
    assert run.figures.requests == proposals * clients
    assert run.figures.server_errors == 0
