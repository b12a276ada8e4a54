"""The conformance suite over countersign's own contracts (``BUILT_IN``), on every backend.

The checks are the testing kit's (``countersign.infrastructure.testing.suite``), the same a
plug-in's repository runs over its own contracts. What the suite cannot derive from a
contract, its case declares (``tests/contracts/cases/``); its golden preview is
``tests/contracts/golden/<kind>.json``. Each contract keeps its own focused tests besides
(``tests/test_*_contract.py``).
"""

from __future__ import annotations

from pathlib import Path

from countersign.domain.contracts import REGISTRY
from countersign.infrastructure.testing.conformance import Conformance
from countersign.infrastructure.testing.suite import ConformanceSuite


def _case_module(kind: str) -> str:
    """Where a built-in kind's case lives: named like its contract's module in
    domain/contracts/."""
    module = type(REGISTRY[kind]).__module__.rsplit(".", 1)[-1]
    return f"tests/contracts/cases/{module}.py"


class TestConformance(ConformanceSuite):
    conformance = Conformance(
        cases="tests.contracts.cases",
        golden=Path(__file__).resolve().parent / "golden",
        case_hint=_case_module,
    )
