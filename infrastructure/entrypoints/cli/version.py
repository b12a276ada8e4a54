"""``countersign --version``: the installed distribution's version and, run from a git
checkout, the commit its code is at (``0.1.0+g2858f35``), read from the checkout's files when
the version is asked for: no ``git`` process, and nothing at all for any other command."""

from __future__ import annotations

from pathlib import Path

#: The folder holding ``domain``, ``application``, ``projections`` and ``infrastructure``: the
#: repository's root when countersign runs from a checkout (``scripts/setup`` links it).
SOURCE_ROOT = Path(__file__).resolve().parents[3]
#: The commit's abbreviation, as ``git describe`` writes it after its ``g``.
SHORT = 7


def installed_version(root: Path = SOURCE_ROOT) -> str:
    """The installed distribution's version (pyproject.toml's, as pip installed it), with the
    commit of the checkout at ``root`` as a local version label when there is one."""
    from importlib import metadata  # read when asked: about 5 MB (email, zipfile, csv)

    try:
        version = metadata.version("countersign")
    except metadata.PackageNotFoundError:  # run from a source tree nobody installed
        version = "unknown (not installed)"
    commit = checkout_commit(root)
    if commit is None:
        return version
    return f"{version}{'.' if '+' in version else '+'}g{commit[:SHORT]}"


def checkout_commit(root: Path) -> str | None:
    """The commit checked out at ``root`` (``root/.git``, a folder, or a worktree's file
    naming its folder), or None when ``root`` is no checkout or its HEAD does not read."""
    try:
        git_dir = _git_dir(root / ".git")
        if git_dir is None:
            return None
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head if _is_commit(head) else None  # a detached HEAD names its commit
        return _resolve(git_dir, head.removeprefix("ref:").strip())
    except (OSError, UnicodeDecodeError):
        return None


def _git_dir(dot_git: Path) -> Path | None:
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():  # a worktree's (or a submodule's): "gitdir: PATH"
        said = dot_git.read_text(encoding="utf-8").strip()
        if said.startswith("gitdir:"):
            return (dot_git.parent / said.removeprefix("gitdir:").strip()).resolve()
    return None


def _resolve(git_dir: Path, ref: str) -> str | None:
    """``ref``'s commit: its loose file, or its line in ``packed-refs``, in the git folder or
    in the one a worktree shares (``commondir``)."""
    folders = [git_dir]
    common = git_dir / "commondir"
    if common.is_file():
        folders.append((git_dir / common.read_text(encoding="utf-8").strip()).resolve())
    for folder in folders:
        loose = folder / ref
        if loose.is_file():
            found = loose.read_text(encoding="utf-8").strip()
            return found if _is_commit(found) else None
        packed = folder / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                commit, _, name = line.partition(" ")
                if name == ref and _is_commit(commit):
                    return commit
    return None


def _is_commit(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)
