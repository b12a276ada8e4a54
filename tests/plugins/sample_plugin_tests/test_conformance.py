"""The sample plug-in's operations pass the checks countersign's own pass: the testing kit's
conformance suite, pointed at this plug-in, its cases and its golden previews."""

from __future__ import annotations

from pathlib import Path

from countersign.infrastructure.testing.conformance import Conformance
from countersign.infrastructure.testing.suite import ConformanceSuite

HERE = Path(__file__).resolve().parent


class TestConformance(ConformanceSuite):
    conformance = Conformance(cases="sample_cases", golden=HERE / "golden", plugins=("sample",))
