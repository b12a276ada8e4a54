"""``countersign --version``: the installed distribution's version, and the commit of the
checkout it runs from, read from the checkout's own files (no ``git`` process)."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

import pytest
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.cli.version import SOURCE_ROOT, installed_version

INSTALLED = metadata.version("countersign")


def _git(folder: Path, *words: str) -> str:
    who = ("-c", "user.name=t", "-c", "user.email=t@example.com")
    done = subprocess.run(
        ["git", "-C", str(folder), *who, *words],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path) -> tuple[Path, str]:
    """A git repository with one commit on a branch: (its folder, the commit)."""
    folder = tmp_path / "repo"
    folder.mkdir()
    _git(folder, "init", "-q", "-b", "main")
    (folder / "README").write_text("x")
    _git(folder, "add", "README")
    _git(folder, "commit", "-q", "-m", "one")
    return folder, _git(folder, "rev-parse", "HEAD")


def test_version_names_the_commit_of_the_checkout_it_runs_from(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])

    assert stopped.value.code == 0
    said = capsys.readouterr().out
    if (SOURCE_ROOT / ".git").exists():  # the tests run from a checkout, as scripts/test does
        head = _git(SOURCE_ROOT, "rev-parse", "HEAD")[:7]
        assert said == f"countersign {INSTALLED}+g{head}\n"
    else:
        assert said == f"countersign {INSTALLED}\n"


def test_the_commit_is_read_from_a_branch_packed_refs_a_detached_head_and_a_worktree(checkout):
    folder, commit = checkout
    assert installed_version(folder) == f"{INSTALLED}+g{commit[:7]}"

    _git(folder, "pack-refs", "--all")  # the branch's ref now only in packed-refs
    assert not (folder / ".git" / "refs" / "heads" / "main").exists()
    assert installed_version(folder) == f"{INSTALLED}+g{commit[:7]}"

    (folder / "README").write_text("y")
    _git(folder, "commit", "-q", "-am", "two")
    second = _git(folder, "rev-parse", "HEAD")
    _git(folder, "checkout", "-q", "--detach", commit)
    assert installed_version(folder) == f"{INSTALLED}+g{commit[:7]}"

    worktree = folder.parent / "worktree"
    _git(folder, "worktree", "add", "-q", str(worktree), "main")
    assert (worktree / ".git").is_file()
    assert installed_version(worktree) == f"{INSTALLED}+g{second[:7]}"


def test_outside_a_checkout_the_version_is_the_distributions_alone(tmp_path):
    assert installed_version(tmp_path) == INSTALLED
    (tmp_path / ".git").mkdir()  # a folder that is no repository
    assert installed_version(tmp_path) == INSTALLED
