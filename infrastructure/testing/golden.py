"""The golden-preview helper: a JSON document compared with the file it was approved as,
or (``COUNTERSIGN_UPDATE_GOLDEN=1``) written there to be reviewed and committed. The path is
the caller's: countersign keeps its previews in ``tests/contracts/golden``, a plug-in in a
folder of its own repository (``Conformance.golden``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

UPDATE_ENV = "COUNTERSIGN_UPDATE_GOLDEN"


def _shown(path: Path) -> str:
    """The path as the person running the tests would type it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def check_golden(path: Path, document: Any, *, advice: str = "") -> None:
    """``document`` (JSON-comparable) equals the golden file at ``path``: a test that fails
    when it differs, and when it is missing, saying how to write it. With
    ``COUNTERSIGN_UPDATE_GOLDEN=1`` a changed or missing file is written (the folder made if
    need be) and the test fails once, so that it is reviewed before it is committed."""
    document = json.loads(json.dumps(document))
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get(UPDATE_ENV) == "1":
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            pytest.fail(
                f"wrote {_shown(path)}: review it (git diff) and commit it, then run again "
                f"without {UPDATE_ENV}",
                pytrace=False,
            )
        return
    if not path.exists():
        pytest.fail(
            f"{_shown(path)} is missing: write it with {UPDATE_ENV}=1 and the same pytest "
            "command, then review and commit it",
            pytrace=False,
        )
    golden = json.loads(path.read_text(encoding="utf-8"))
    assert document == golden, (
        f"{_shown(path)} differs; if the change is intended, rewrite it with {UPDATE_ENV}=1{advice}"
    )
