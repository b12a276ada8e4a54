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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("domain", "application", "projections", "infrastructure")


#: The folders of package data (pages' templates and assets), and the files each ships.
DATA = ("infrastructure/entrypoints/web/static", "infrastructure/entrypoints/web/templates")


def _setuptools() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_folder_is_declared_under_the_namespace():
    """Packages and folders of package data alike: setuptools takes any folder for an
    importable package, and warns about one holding package data that is not declared."""
    on_disk = {
        "countersign." + ".".join(folder.relative_to(ROOT).parts)
        for top in FOLDERS
        for folder in [ROOT / top, *(ROOT / top).rglob("*")]
        if folder.is_dir()
        and folder.name != "__pycache__"
        and any(child.is_file() for child in folder.iterdir())
    }
    assert set(_setuptools()["packages"]) == on_disk
    data = {"countersign." + folder.replace("/", ".") for folder in DATA}
    assert set(_setuptools()["package-data"]) == data


def test_the_wheel_holds_only_the_countersign_namespace(tmp_path):
    # Built from a copy: setuptools leaves a build/ folder beside the project it builds.
    source = tmp_path / "source"
    for folder in FOLDERS:
        shutil.copytree(
            ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--verbose",  # the build backend's own warnings
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    assert "absent from the `packages` configuration" not in built.stdout + built.stderr
    (wheel,) = tmp_path.glob("countersign-*.whl")
    tops = {name.split("/", 1)[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"countersign"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "countersign/domain/proposal.py" in names
    for folder in DATA:  # every template and asset the pages read
        for path in (ROOT / folder).iterdir():
            assert f"countersign/{folder}/{path.name}" in names
