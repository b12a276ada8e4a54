"""The sample plug-in's operations pass the checks countersign's own pass: the testing kit's
conformance suite, pointed at this plug-in, its cases and its golden previews."""

from __future__ import annotations

import os
from pathlib import Path

from countersign.infrastructure.testing.conformance import Conformance
from countersign.infrastructure.testing.suite import ConformanceSuite

HERE = Path(__file__).resolve().parent
#: The plug-in checked: ``sample``. countersign's own tests point this repository at
#: ``sample-leaky`` too (the same operations, whose load ignores the organization), to see
#: the kit refuse it (tests/test_conformance_kit_tenants.py).
CHECKED = os.environ.get("SAMPLE_PLUGIN_CHECKED") or "sample"


class TestConformance(ConformanceSuite):
    conformance = Conformance(cases="sample_cases", golden=HERE / "golden", plugins=(CHECKED,))
