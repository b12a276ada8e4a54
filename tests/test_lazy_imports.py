"""What a process that wires countersign does not import until it needs it.

Memory is measured by ``scripts/bench.py`` (peak client RSS); these tests keep the libraries
that cost it from creeping back into every process through an import at a module's top."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from countersign.domain.contracts import BUILT_IN

WIRED = """
import json, sys
from countersign.infrastructure.bootstrap import bootstrap
cs = bootstrap(database_url=sys.argv[1])
cs.close()
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def _imported_by_wiring(database_url: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", WIRED, database_url],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_wiring_countersign_imports_no_webauthn_until_a_passkey_ceremony(tmp_path: Path):
    imported = _imported_by_wiring(f"sqlite:///{tmp_path / 'wired.db'}")

    assert "countersign" in imported
    # The WebAuthn library and the cryptography and CBOR code under it: about 17 MB.
    assert not imported & {"webauthn", "cryptography", "cbor2", "OpenSSL"}, imported


def test_wiring_countersign_on_sqlite_imports_no_postgresql_driver(tmp_path: Path):
    imported = _imported_by_wiring(f"sqlite:///{tmp_path / 'wired.db'}")

    # psycopg, its pool and the library's PostgreSQL module: about 17 MB.
    assert not imported & {"psycopg", "psycopg_pool", "psycopg_binary"}, imported


def test_a_process_that_serves_no_metrics_imports_no_prometheus_client(tmp_path: Path):
    imported = _imported_by_wiring(f"sqlite:///{tmp_path / 'wired.db'}")

    # Counting starts when a process serves its metrics (observability/counting.py).
    assert "prometheus_client" not in imported, imported


CYCLE = """
import json, sys
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.demo.seed import seed
cs = bootstrap(database_url=sys.argv[1])
form = seed(cs)["broadcast_forms"]["granite"]
leagues = [row["name"] for row in cs.club.leagues("granite")][:1]
created = cs.proposals.propose(
    organization="granite", actor="ava@granite.example",
    operation="email_broadcast.apply_draft", resource_id=form,
    request={"filters": {"leagues": leagues}, "subject": "Opener", "body": "Bring shoes."},
)
print(cs.proposals.approve(created.proposal_id, "ava@granite.example").status)
cs.close()
print(json.dumps(sorted(sys.modules)))
"""


def test_a_cycle_of_one_operation_imports_no_other_operations_contract(tmp_path: Path):
    """Without plug-ins: a plug-in's built contracts load countersign's own first (the
    registry's rules favour them), so a deployment that enables one pays for them all."""
    env = {k: v for k, v in os.environ.items() if k != "COUNTERSIGN_PLUGINS"}
    out = subprocess.run(
        [sys.executable, "-c", CYCLE, f"sqlite:///{tmp_path / 'cycle.db'}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    ).stdout.splitlines()
    imported = set(json.loads(out[-1]))

    assert out[-2] == "succeeded"
    contracts = {m for m in imported if m.startswith("countersign.domain.contracts.")}
    # Its own three modules; the other operations' are imported when their kind is used.
    own = {"apply_broadcast_draft", "apply_broadcast_draft_texts", "apply_broadcast_draft_stand_in"}
    assert {f"countersign.domain.contracts.{name}" for name in own} <= contracts
    for other in ("move_member", "remove_member", "send_broadcast", "cancel_registration"):
        assert not {m for m in contracts if m.rsplit(".", 1)[1].startswith(other)}, other
    assert "countersign.domain.contracts.refund_missing_discount" not in contracts
    # Nor the web stack, the passwords' hashing, the MCP SDK, the agent frameworks, metrics
    # or the notifications' senders.
    assert not {m.split(".")[0] for m in imported} & NOT_FOR_A_CYCLE, imported
    assert not {m for m in imported if ".notifications.sender" in m or ".entrypoints." in m}


#: Libraries neither ``countersign --help`` nor a propose -> approve cycle needs.
NOT_FOR_A_CYCLE = {
    "starlette",
    "uvicorn",
    "argon2",
    "mcp",
    "prometheus_client",
    "langgraph",
    "langchain_core",
    "agents",
    "pydantic_ai",
    "openai",
    "httpx",
    "tenacity",
    "smtplib",
    "webauthn",
    # what projection runners decode stored events with (persistence/log_structs.py)
    "msgspec",
}

HELP = """
import contextlib, io, json, sys
from countersign.infrastructure.entrypoints.cli import main
with contextlib.redirect_stdout(io.StringIO()) as shown:
    try:
        status = main(["--help"])
    except SystemExit as done:  # argparse's way out of --help
        status = done.code
print(json.dumps([status, "proposals" in shown.getvalue() or "propose" in shown.getvalue(),
                  sorted(sys.modules)]))
"""


def test_the_commands_help_imports_no_web_stack_nor_what_only_some_commands_need():
    """Without plug-ins: a deployment's plug-ins are enabled (and imported) before the
    grammar is built, since their operations and sections are among its choices."""
    env = {k: v for k, v in os.environ.items() if k != "COUNTERSIGN_PLUGINS"}
    done = subprocess.run(
        [sys.executable, "-c", HELP],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    status, listed, modules = json.loads(done.stdout.strip().splitlines()[-1])

    assert (status, listed) == (0, True)
    assert not {m.split(".")[0] for m in modules} & NOT_FOR_A_CYCLE, modules
    # Nothing the commands' handlers import when they run: wiring, notifications, the audit.
    assert not {
        m
        for m in modules
        if m.startswith(
            (
                "countersign.infrastructure.bootstrap",
                "countersign.infrastructure.notifications",
                "countersign.infrastructure.audit",
                "countersign.infrastructure.identity",
                "countersign.infrastructure.sweepers",
            )
        )
    }, modules
    # Nor pydantic (the contracts' and the requests' models), nor any operation's contract,
    # nor the event-sourcing library (the aggregates, the ports: what the handlers run).
    assert "pydantic" not in {m.split(".")[0] for m in modules}
    assert "eventsourcing" not in {m.split(".")[0] for m in modules}
    operations = {"." + d.contract.split(":")[0].lstrip(".") for d in BUILT_IN}
    assert not [m for m in modules if any(m.endswith(o) for o in operations)]


def test_the_contract_registry_imports_no_aggregate():
    """A plug-in's package, a tool listing operations or the commands' help reads the
    registry: it names the permissions (``domain.club.permissions``) without importing the
    organization aggregate, and with it the event-sourcing library (about 1.7 MB)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys; import countersign.domain.contracts; "
            "print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    modules = set(json.loads(done.stdout.strip().splitlines()[-1]))

    assert "countersign.domain.club.organization" not in modules
    assert not {m for m in modules if m.split(".")[0] == "eventsourcing"}, sorted(modules)
