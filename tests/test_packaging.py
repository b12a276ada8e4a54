"""countersign installs as one namespace: the repository's top-level folders are
``countersign.domain``, ``countersign.application``, ``countersign.projections`` and
``countersign.infrastructure``, and nothing top-level named ``domain`` lands in site-packages."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("domain", "application", "projections", "infrastructure")


def test_every_package_folder_is_declared_under_the_namespace():
    declared = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    on_disk = {
        "countersign." + ".".join(init.parent.relative_to(ROOT).parts)
        for folder in FOLDERS
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert declared == on_disk


def test_the_wheel_holds_only_the_countersign_namespace(tmp_path):
    # Built from a copy: setuptools leaves a build/ folder beside the project it builds.
    source = tmp_path / "source"
    for folder in FOLDERS:
        shutil.copytree(
            ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("countersign-*.whl")
    tops = {name.split("/", 1)[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"countersign"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "countersign/domain/proposal.py" in names
    assert "countersign/infrastructure/entrypoints/web/templates/base.html" in names or any(
        n.startswith("countersign/infrastructure/entrypoints/web/templates/") for n in names
    )
