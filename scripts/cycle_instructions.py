"""Client instructions per propose -> approve -> succeeded cycle, counted by callgrind.

    .venv/bin/python scripts/cycle_instructions.py --backend sqlite --cycles 200
    .venv/bin/python scripts/cycle_instructions.py --operation card --cycles 200
    .venv/bin/python scripts/cycle_instructions.py --backend postgres --keep /tmp/pg.out
    callgrind_annotate --inclusive=yes /tmp/pg.out | head -80

It runs itself under ``valgrind --tool=callgrind`` (installed here) with collection off, seeds
the demo club on a fresh database (a SQLite file in a temporary folder; the PostgreSQL
database ``countersign_bench_cycles``, dropped and recreated, as ``bench.py`` does with its
own), warms up with ``--warmup`` cycles, and then runs ``--cycles`` cycles of
``email_broadcast.apply_draft`` on granite's broadcast form (``bench.py``'s local case and
the peer benchmark's cycle; ``--operation card``: ``bench.py``'s card case,
``order.refund_missing_discount`` through the payment sandbox, one order for each cycle made
beforehand through another instance, so that none is among the cycling one's snapshots)
inside a ctypes callback: callgrind is told to collect only while that callback runs
(``--toggle-collect=closure_fcn``, ctypes' callback entry, which nothing else in the cycle
calls). So the count holds the cycles alone: no start,
no imports, no seeding, no warm-up. The process's other threads (PostgreSQL's connection pool
workers) are idle meanwhile. It prints one JSON line: instructions per cycle and the total.

On a shared machine wall-clock time drifts with the load; this count does not, so a change is
measured by running this before and after it. PostgreSQL's count repeats to within 0.1% from
run to run of the same code; SQLite's varies by about 0.7% (most likely because SQLite's own
work in a commit depends on the B-tree pages the random ids land on, and on when the log is
checkpointed): run it twice or more on each side there, and count only a difference beyond
that spread.

``--attribute MODULE:QUALNAME ...`` (up to seven) also counts each named callable's own share,
inclusive of what it calls, with the calls a cycle: each is called, during the measured
cycles only, through a C function of the interpreter that nothing in the cycle uses
(``filter``, ``itertools.starmap``, ``functools.reduce``...), whose inclusive count
callgrind's annotation gives. Patch a callable where the caller finds it (a function imported
by name into another module is patched there). Each call adds about 4,000 instructions of
its own to the total and to any attributed callable that encloses it.

    .venv/bin/python scripts/cycle_instructions.py --cycles 40 --attribute \
        countersign.application.proposals:ProposalService.approve \
        countersign.infrastructure.persistence.event_store:EventSourcedStore.save

``COUNTERSIGN_SEAL_KEYS``, when set, is the cycling instance's (docs/design.md, "Seals"): the
cycle then seals each proposal and checks its seal at approval.

``--inner`` is the process valgrind runs; not for use by hand.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import importlib
import itertools
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from callgrind_count import count  # noqa: E402

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_cycles"


#: For ``--attribute``: ways to call a function through a C function of the interpreter that
#: the cycle itself never calls, and those C functions' names in callgrind's annotation.
_THROUGH: list[tuple[Callable[[Callable[[], Any]], Any], str]] = [
    (lambda call: next(filter(lambda _: call() or True, (None,))), "filter_next"),
    (lambda call: next(itertools.starmap(call, ((),))), "starmap_next"),
    (lambda call: functools.reduce(lambda a, b: call(), (None, None)), "functools_reduce"),
    (lambda call: next(itertools.takewhile(lambda _: call() or True, (None,))), "takewhile_next"),
    (lambda call: next(itertools.dropwhile(lambda _: call() and False, (None,))), "dropwhile_next"),
    (lambda call: list(itertools.accumulate((None, None), lambda a, b: call())), "accumulate_next"),
    (
        lambda call: next(itertools.filterfalse(lambda _: call() and False, (None,))),
        "filterfalse_next",
    ),
]


def _attribute(index: int, target: str, calls: dict[str, int]) -> None:
    """Patch ``target`` (``module:Qual.name``) to be called through ``_THROUGH[index]``."""
    module, _, path = target.partition(":")
    owner: Any = importlib.import_module(module)
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    raw = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    function = raw.__func__ if isinstance(raw, staticmethod | classmethod) else raw
    through = _THROUGH[index][0]

    @functools.wraps(function)
    def attributed(*args: Any, **kwargs: Any) -> Any:
        box: list[Any] = []
        through(lambda: box.append(function(*args, **kwargs)))
        calls[target] = calls.get(target, 0) + 1
        return box[0]

    kind = type(raw)
    setattr(owner, name, kind(attributed) if kind in (staticmethod, classmethod) else attributed)


def inner(
    backend: str,
    url: str,
    warmup: int,
    cycles: int,
    attribute: list[str] | None = None,
    operation: str = "local",
) -> None:
    """The process under callgrind: seed, warm up, then the measured cycles in a callback."""
    from bench import Fixture, make_fixture, one_cycle, prepare_postgres
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.seal_keys import seal_keys_from_env
    from countersign.infrastructure.settings import Settings

    if backend == "postgres":
        prepare_postgres(url)
    else:
        url = f"sqlite:///{tempfile.mkdtemp(prefix='cycle-instr-')}/countersign.db"
    cs = bootstrap(Settings(database_url=url, seal_keys=seal_keys_from_env()))
    try:
        card = operation == "card"
        if card:
            # The orders are made by another process's worth of countersign, as a club's
            # orders are in use: none of them is among this process's snapshots.
            maker = bootstrap(Settings(database_url=url))
            try:
                fixture: Fixture = make_fixture(maker, warmup + cycles, backend)
            finally:
                maker.close()
            make = fixture.card
        else:
            fixture = make_fixture(cs, 0, backend)
            make = fixture.local
        for i in range(warmup):
            one_cycle(cs, *make(-1 - i))
        calls: dict[str, int] = {}
        for index, target in enumerate(attribute or []):
            _attribute(index, target, calls)

        def measured() -> None:
            for i in range(cycles):
                one_cycle(cs, *make(i))

        callback = ctypes.CFUNCTYPE(None)(measured)
        callback()
        print(json.dumps(calls))
    finally:
        cs.close()


def attributed(out: str, targets: list[str], calls: dict[str, int], cycles: int) -> list[Any]:
    """Each target's instructions a cycle (inclusive), from callgrind's output ``out``."""
    annotated = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = []
    for (_, c_name), target in zip(_THROUGH, targets, strict=False):
        found = re.search(rf"^\s*([\d,]+) \([^)]*\)\s+\S*:{c_name} \[", annotated, re.MULTILINE)
        total = int(found.group(1).replace(",", "")) if found else 0
        rows.append(
            {
                "callable": target,
                "instructions_per_cycle": round(total / cycles),
                "calls_per_cycle": calls.get(target, 0) / cycles,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--cycles", type=int, default=200, help="measured cycles (default 200)")
    ap.add_argument("--warmup", type=int, default=50, help="cycles before (default 50)")
    ap.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    ap.add_argument(
        "--operation",
        choices=["local", "card"],
        default="local",
        help="bench.py's case: local (default) or card",
    )
    ap.add_argument("--keep", metavar="FILE", help="keep callgrind's output here")
    ap.add_argument(
        "--attribute",
        nargs="+",
        metavar="MODULE:QUALNAME",
        help="also count these callables' shares (at most seven)",
    )
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    targets = args.attribute or []
    if len(targets) > len(_THROUGH):
        ap.error(f"--attribute takes at most {len(_THROUGH)} callables")
    if args.inner:
        inner(args.backend, args.postgres_url, args.warmup, args.cycles, targets, args.operation)
        return 0
    arguments = ["--inner", "--backend", args.backend, "--cycles", str(args.cycles)]
    arguments += ["--warmup", str(args.warmup), "--postgres-url", args.postgres_url]
    arguments += ["--operation", args.operation]
    if targets:
        arguments += ["--attribute", *targets]
    keep = args.keep or (tempfile.mktemp(prefix="cycle-instr-", suffix=".out") if targets else None)
    total, calls = count(__file__, arguments, keep, "cycle-instr-")
    shares = attributed(keep, targets, calls or {}, args.cycles) if targets and keep else []
    if keep and not args.keep:
        Path(keep).unlink()
    print(
        json.dumps(
            {
                "backend": args.backend,
                "operation": args.operation,
                "cycles": args.cycles,
                "instructions_per_cycle": round(total / args.cycles),
                "instructions": total,
                **({"callgrind_out": args.keep} if args.keep else {}),
                **({"attributed": shares} if shares else {}),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
