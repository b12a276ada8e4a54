"""Assistant figures: context size per turn, tool-schema size per section, and the
application's own time per turn with the model's latency excluded.

    .venv/bin/python scripts/bench_assistant.py [--turns 200]

Tokens are approximated as characters / 4 (a common rule of thumb for English and JSON).
The offline stand-in model answers in-process through the real openai client, so "app time"
is everything countersign does in a turn: context, tool runs, validation, the proposal commit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from countersign.domain.club.organization import Organization  # noqa: E402
from countersign.infrastructure.adapters.openai_model import OpenAIChatModel  # noqa: E402
from countersign.infrastructure.adapters.payment_sandbox import CARD_OK  # noqa: E402
from countersign.infrastructure.adapters.scripted_model import ScriptedEndpoint, StandInPolicy  # noqa: E402
from countersign.infrastructure.bootstrap import bootstrap  # noqa: E402
from countersign.infrastructure.demo.seed import _order, seed  # noqa: E402
from countersign.infrastructure.settings import Settings  # noqa: E402

AVA = "ava@granite.example"


def tokens(chars: int) -> int:
    return round(chars / 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    endpoint = ScriptedEndpoint(StandInPolicy())
    with tempfile.TemporaryDirectory() as folder:
        cs = bootstrap(
            # One member makes every proposal and starts every turn: the per-member limits
            # would stop the benchmark.
            Settings(
                database_url=f"sqlite:///{folder}/assistant.db",
                proposal_limit="1000000/minute",
                turn_limit="1000000/minute",
            ),
            model=OpenAIChatModel(endpoint.client(), "scripted"),
        )
        data = seed(cs)
        org = cs.store.get(Organization.create_id("granite"), Organization)
        orders = [
            str(
                _order(
                    cs, org, f"bench-{i}", "Olivia Chen", "olivia.chen@example.com", CARD_OK, ""
                ).id
            )
            for i in range(args.turns)
        ]
        print("Tool schemas per section (what the model receives with every call):")
        for section in ("orders", "email_broadcasts"):
            tools = cs.assistant.tools_for(section)
            size = len(json.dumps(tools))
            print(
                f"  {section:<17} {len(tools)} tools, {size:,} characters, ~{tokens(size):,} tokens"
            )

        cases = {
            "orders": (lambda i: orders[i], "She missed her early-bird discount; please fix it."),
            "email_broadcasts": (
                lambda i: data["broadcast_forms"]["granite"],
                "Email the Thursday Seniors about ice times moving later.",
            ),
        }
        print(f"\nPer turn, {args.turns} turns per section (each ends with a proposal):")
        print(
            f"  {'section':<17}{'context chars':>14}{'~tokens':>9}{'request chars p50':>19}"
            f"{'app ms p50':>12}{'app ms p99':>12}{'model calls':>13}"
        )
        for section, (resource, words) in cases.items():
            app, contexts, calls = [], [], []
            first_request = len(endpoint.requests)
            for i in range(args.turns):
                report = cs.assistant.turn(
                    organization="granite",
                    actor=AVA,
                    section=section,
                    resource_id=resource(i),
                    message=words,
                )
                app.append(report.app_seconds * 1000)
                contexts.append(report.context_chars)
                calls.append(report.model_calls)
            sizes = [len(json.dumps(r)) for r in endpoint.requests[first_request:]]
            app.sort()
            print(
                f"  {section:<17}{statistics.median(contexts):>14,.0f}"
                f"{tokens(int(statistics.median(contexts))):>9,}"
                f"{statistics.median(sizes):>19,.0f}{statistics.median(app):>12.2f}"
                f"{app[int(0.99 * (len(app) - 1))]:>12.2f}{statistics.mean(calls):>13.1f}"
            )
        cs.close()
    print("\ncontext chars: the application-written messages of a turn (instructions, scoped")
    print("summary, revision context, bounded history, the manager's message); budget 6,000.")


if __name__ == "__main__":
    main()
