"""Callgrind's instruction count of a measured pass, shared by the ``*_instructions.py`` scripts.

Each of those scripts runs itself again (``--inner``) under ``valgrind --tool=callgrind`` with
collection off; the process does its setting up, then runs the pass to measure inside a ctypes
callback, and callgrind collects only while that callback runs (``--toggle-collect``). The
inner process prints one JSON line last, which comes back with the count.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: ctypes' entry into a Python callback: the measured pass runs inside it, and only there.
TOGGLE = "closure_fcn"


def count(script: str, arguments: list[str], keep: str | None, prefix: str) -> tuple[int, Any]:
    """Run ``script`` with ``arguments`` under callgrind: the instructions counted, and the
    JSON value of the last line the script printed (None if it printed nothing). ``keep``:
    callgrind's output goes there and stays (else it is a temporary file, removed). A failed
    run exits with its stderr."""
    out = keep or tempfile.mktemp(prefix=prefix, suffix=".out")
    command = [
        "valgrind",
        "--tool=callgrind",
        "--collect-atstart=no",
        f"--toggle-collect={TOGGLE}",
        f"--callgrind-out-file={out}",
        sys.executable,
        str(Path(script).resolve()),
        *arguments,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(done.returncode)
    found = re.search(r"^(?:summary|totals): (\d+)", Path(out).read_text(), re.MULTILINE)
    if not keep:
        Path(out).unlink()
    if found is None:
        raise SystemExit(f"no totals in callgrind's output {out}")
    lines = done.stdout.strip().splitlines()
    return int(found.group(1)), json.loads(lines[-1]) if lines else None
