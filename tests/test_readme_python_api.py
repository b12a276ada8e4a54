"""The README's "Python API for application services" runs as written, on SQLite.

An integrator's walk found its card read was the unchecked service's (a member without the
operation's permission read every amount through it); the section now shows ``cs.access``,
and this keeps the block working: it is taken from the README, its database URL pointed at a
seeded SQLite file, and run with nothing else given (it named an ``order_id`` and a
``proposal_id`` it never set).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from countersign.application.errors import MissingPermissionError
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.demo.seed import seed

README = Path(__file__).resolve().parents[1] / "README.md"


def _block() -> str:
    section = README.read_text().split("### Python API for application services", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_python_api_block_runs_and_refuses_what_the_api_refuses(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cs.db'}"
    seeding = bootstrap(database_url=url)
    orders = seed(seeding)["orders"]
    seeding.close()
    block = _block()
    assert "postgresql://postgres@127.0.0.1:5432/countersign" in block
    code = block.replace('"postgresql://postgres@127.0.0.1:5432/countersign"', repr(url))
    code = code.replace("cs.close()", "")
    names: dict[str, Any] = {}  # nothing but the URL given: a newcomer runs it as written

    exec(compile(code, "README.md (Python API)", "exec"), names)  # the README's own code

    cs = names["cs"]
    try:
        assert names["order_id"] == orders["refund-ok"]  # the seed's, as the block says
        assert names["report"].result == "executed"
        ben = names["Caller"]("ben@granite.example", "granite")  # staff, no permission
        with pytest.raises(MissingPermissionError):
            cs.access.card(names["created"].proposal_id, ben)
    finally:
        cs.close()
