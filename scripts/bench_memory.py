"""Benchmark: the client memory of the entry points a user runs (the budget is 60 MB).

Run from the repository root:

    .venv/bin/python scripts/bench_memory.py
    .venv/bin/python scripts/bench_memory.py --cycles 200 --json

Each case runs in a fresh process; its peak resident memory (``ru_maxrss``, as the kernel
reports it for that process alone) is read with ``os.wait4``:

- ``import bootstrap``: ``import countersign.infrastructure.bootstrap`` and nothing else;
- ``countersign --help``: the command line's help;
- ``cycle sqlite`` / ``cycle postgres``: bootstrap on a fresh database, the demo club seeded,
  then ``--cycles`` propose -> approve cycles of a local operation
  (``email_broadcast.apply_draft``, the one ``shared/bench/ours_cycle.py`` runs); 10,000 by
  default, because what a process keeps per request shows only in a long run (at 100
  cycles it looked flat while it grew by about 0.6 MB every thousand);
- ``cycle … +18 ops built`` / ``declared``: the same, with a plug-in of 18 more generated
  operations (24 in all), each a module of its own, installed first: built (the plug-in
  imports each module and builds its contract) or declared (``Declared``: kind, section,
  permission and where the contract is; the registry imports and checks it when the plug-in
  is enabled, so that a broken one stops the process at start). 24 operations must fit the
  60 MB budget beside the cycle; countersign's own six are imported only when used.

For the cycles, ``after imports`` is the peak once the modules a cycle needs are imported and
before bootstrap runs; ``peak`` is the whole process's.

The figures are an installed package's: countersign's modules (and the generated plug-in's)
are compiled to bytecode first, as pip compiles a package it installs. A checkout run with
``PYTHONDONTWRITEBYTECODE`` (these sessions' shells set it) whose bytecode is missing or older
than its sources compiles those modules at every start instead, and the compiler's memory
stays with the process: 1.5 MB more at the PostgreSQL cycle's peak (58.5 against 57.0 MB).

PostgreSQL: the database ``countersign_bench_memory`` is dropped and made again for every case
(``--postgres`` to use another server; its name must start with ``countersign_bench``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/countersign_bench_memory"
BUDGET_MB = 60.0
EXTRA_OPERATIONS = 18
#: countersign's packages (the checkout's folders that ``scripts/setup`` links as its modules).
LAYERS = ("domain", "application", "infrastructure", "projections")

# One generated operation: a contract module of its own, as a plug-in's would be (a request,
# frozen arguments, preview and result, texts, a local execution that changes nothing).
_OPERATION = '''
"""A generated operation: {kind}."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from countersign.domain.club.roster import Roster
from countersign.domain.contracts.base import (
    ContractRequest, Facts, Frozen, OperationContract, Prepared,
)
from countersign.domain.contracts.presentation import Localized, PreviewField
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope, Section
from eventsourcing.domain import Aggregate
from pydantic import Field


class Request(ContractRequest):
    """Propose a note {n} on the roster."""

    note: str = Field(min_length=1, max_length=200, description="The note, in one line.")
    count: int = Field(ge=0, le=1000, description="How many, 0 to 1000.")


class Arguments(Frozen):
    note: str
    count: int


class Preview(Frozen):
    note: str
    count: int


class Result(Frozen):
    noted: bool


@dataclass
class NoteFacts(Facts):
    roster: Roster

    def aggregates(self) -> list[Aggregate]:
        return []


class Note{n}(OperationContract[Request, Arguments, Preview, Result, NoteFacts]):
    kind = "{kind}"
    contract_version = 1
    section = Section("roster")
    permission = "bench.note"
    title = Localized(en="Note {n}", fr="Note {n}")
    preview_fields = {{
        "note": PreviewField(Localized(en="Note", fr="Note")),
        "count": PreviewField(Localized(en="Count", fr="Nombre")),
    }}
    revision_reasons = {{"bench_note_{n}_changed": Localized(en="Changed.", fr="Changé.")}}

    assistant_instructions = "Propose a note when the manager asks for one."

    def load(self, scope: Scope, store: Repository) -> NoteFacts:
        return NoteFacts(store.get(scope.resource_id, Roster))

    def resolve(self, request: Request, facts: NoteFacts) -> Prepared[Arguments, Preview]:
        frozen = Arguments(note=request.note, count=request.count)
        return Prepared(frozen, Preview(note=request.note, count=request.count))

    def recheck(self, arguments: Arguments, facts: NoteFacts) -> dict[str, Any]:
        return {{}}

    def execute(self, execution: ExecutionContract[Arguments], facts: NoteFacts) -> Result:
        return Result(noted=True)

    def success_text(self, preview: Preview, result: Result, language: str = "en") -> str:
        return self.title.text(language)

    def headline(self, preview: Preview, language: str = "en") -> str:
        return preview.note


CONTRACT = Note{n}
'''


def _plugin_package(folder: Path) -> None:
    """Writes ``bench_ops``: one module per generated operation, and a plug-in that names
    them the way a plug-in names its contracts."""
    package = folder / "bench_ops"
    package.mkdir()
    (package / "__init__.py").write_text('"""Generated operations for bench_memory."""\n')
    for n in range(EXTRA_OPERATIONS):
        kind = f"bench.note_{n}"
        (package / f"note_{n}.py").write_text(_OPERATION.format(n=n, kind=kind))


# The child processes: each prints one JSON line; the parent adds the peak from wait4.
_CYCLE = """
import json, os, resource, sys
sys.path.insert(0, {folder!r})
extra = {extra}
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.demo.seed import seed
if extra:
    from countersign.application.plugins import Plugin, install
    install([Plugin(name="bench-ops", namespace="bench", permissions=("bench.note",),
                    contracts=plugin_contracts(extra))])
after_imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
cs = bootstrap(database_url={url!r})
seeded = seed(cs)
form = seeded["broadcast_forms"]["granite"]
leagues = [row["name"] for row in cs.club.leagues("granite")][:1]
for i in range({cycles}):
    created = cs.proposals.propose(
        organization="granite", actor="ava@granite.example",
        operation="email_broadcast.apply_draft", resource_id=form,
        request={{"filters": {{"leagues": leagues}}, "subject": f"Opener {{i}}",
                 "body": "The season opens next week. Bring clean shoes."}},
    )
    report = cs.proposals.approve(created.proposal_id, "ava@granite.example")
    assert report.status == "succeeded", report
cs.close()
loaded = sorted(m for m in sys.modules if m.startswith("bench_ops.note_"))
print(json.dumps({{"after_imports_mb": after_imports, "extra_loaded": len(loaded)}}))
"""

# How a plug-in names generated contracts: the built objects (importing each module), or,
# where the registry takes declarations, "module:attribute" names loaded on first use.
_CONTRACTS_EAGER = """
def plugin_contracts(n):
    import importlib
    return tuple(importlib.import_module(f"bench_ops.note_{i}").CONTRACT() for i in range(n))
"""
_CONTRACTS_LAZY = """
def plugin_contracts(n):
    from countersign.domain.contracts import Declared
    from countersign.domain.scope import Section
    return tuple(Declared(f"bench.note_{i}", Section("roster"), "bench.note",
                          f"bench_ops.note_{i}:CONTRACT") for i in range(n))
"""


def run(args: list[str], env: dict[str, str] | None = None) -> tuple[dict[str, float], float]:
    """Runs one child; its JSON line (if any) and its peak RSS in MB."""
    child = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    out, err = child.stdout.read(), child.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])}… failed ({child.returncode}):\n{err[-2000:]}")
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return (json.loads(lines[-1]) if lines else {}), usage.ru_maxrss / 1024


def compile_bytecode(*folders: Path) -> None:
    """Each folder's modules compiled to bytecode in its ``__pycache__`` (ignored by git),
    where the children's imports find it, whatever ``PYTHONDONTWRITEBYTECODE`` says."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    args = [PYTHON, "-m", "compileall", "-q", *map(str, folders)]
    subprocess.run(args, env=env, cwd=ROOT, check=True)


def fresh_postgres(url: str) -> str:
    import psycopg  # only the parent: the measured child never imports it for this

    server, name = url.rsplit("/", 1)
    if not name.startswith("countersign_bench"):
        raise SystemExit(f"refusing to drop {name!r}: its name must start with countersign_bench")
    with psycopg.connect(server + "/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return url


def lazy_declarations_supported() -> bool:
    code = "import countersign.domain.contracts as c; print(hasattr(c, 'Declared'))"
    return subprocess.run([PYTHON, "-c", code], capture_output=True, text=True).stdout == "True\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    options = parser.parse_args()

    rows: list[dict[str, object]] = []
    env = {k: v for k, v in os.environ.items() if k != "COUNTERSIGN_PLUGINS"}
    compile_bytecode(*(ROOT / layer for layer in LAYERS))

    def add(case: str, after_imports: float | None, peak: float, note: str = "") -> None:
        rows.append(
            {"case": case, "after_imports_mb": after_imports, "peak_mb": peak, "note": note}
        )

    _, peak = run([PYTHON, "-c", "import countersign.infrastructure.bootstrap"], env)
    add("import bootstrap", None, peak)
    _, peak = run([PYTHON, "-c", "import countersign.domain.contracts"], env)
    add("import the contract registry", None, peak)
    cli = Path(PYTHON).with_name("countersign")
    _, peak = run([str(cli), "--help"], env)
    add("countersign --help", None, peak)

    # A plug-in's operations built (each module imported at start) and, where the registry
    # takes declarations, declared (each imported and checked as the plug-in is enabled).
    ways = [("built", _CONTRACTS_EAGER)]
    if lazy_declarations_supported():
        ways.append(("declared", _CONTRACTS_LAZY))
    with tempfile.TemporaryDirectory() as folder:
        _plugin_package(Path(folder))
        compile_bytecode(Path(folder))
        for backend in options.backends.split(","):
            for extra, how, helper in [(0, "", _CONTRACTS_EAGER)] + [
                (EXTRA_OPERATIONS, how, helper) for how, helper in ways
            ]:
                if backend == "sqlite":
                    url = f"sqlite:///{folder}/memory-{extra}-{how}.db"
                else:
                    url = fresh_postgres(options.postgres)
                code = helper + textwrap.dedent(_CYCLE).format(
                    folder=folder, extra=extra, url=url, cycles=options.cycles
                )
                found, peak = run([PYTHON, "-c", code], env)
                case = f"cycle {backend}" + (f" +{extra} ops {how}" if extra else "")
                note = f"{found['extra_loaded']} of {extra} imported" if extra else ""
                add(case, found["after_imports_mb"], peak, note)

    if options.json:
        print(json.dumps({"budget_mb": BUDGET_MB, "cycles": options.cycles, "rows": rows}))
        return
    print(
        f"client memory, each case in a fresh process ({options.cycles} cycles; budget "
        f"{BUDGET_MB:.0f} MB)"
    )
    print(f"{'case':32} {'after imports':>14} {'peak RSS':>10}  note")
    for row in rows:
        imports = row["after_imports_mb"]
        shown = "" if imports is None else f"{imports:.1f} MB"
        print(f"{row['case']:32} {shown:>14} {row['peak_mb']:>7.1f} MB  {row['note']}")


if __name__ == "__main__":
    main()
