"""ACME's credit passes the checks countersign's own operations pass: the testing kit's
conformance suite, pointed at this plug-in, its case and its golden preview."""

from __future__ import annotations

from pathlib import Path

from countersign.infrastructure.testing.conformance import Conformance
from countersign.infrastructure.testing.suite import ConformanceSuite

HERE = Path(__file__).resolve().parent


class TestConformance(ConformanceSuite):
    conformance = Conformance(
        cases="acme_cases", golden=HERE / "golden", plugins=("acme-invoices",)
    )
