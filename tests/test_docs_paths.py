"""Every repository path the prose names exists: README.md, docs/, and the docstrings and
comments of the packages, scripts and tests.

A path is recognised by its first folder, one of the repository's own top-level folders
(``application/``, ``domain/contracts/``, ``tests/``, ``scripts/``...), standing on its own
(not the tail of a URL or of another path), and not a media type (``application/json``). A
pattern (``<name>``, ``*``, ``{a,b}``, ``...``) names no one file and is not checked; a test's
id or a line is checked as its file (``tests/test_cli.py::test_<name>``,
``domain/proposal.py:<line>``); a path written relative to its Markdown file
(``../domain/<module>.py``) is read from that file's folder. A failure names each missing path
with the file and line that name it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The repository's own top-level folders: a path the prose names starts with one of them.
TOP_LEVEL = (
    "application",
    "domain",
    "infrastructure",
    "projections",
    "tests",
    "scripts",
    "docs",
    "examples",
)
#: Where Python sources are read (their docstrings and comments only).
PYTHON_FOLDERS = (
    "application",
    "domain",
    "infrastructure",
    "projections",
    "scripts",
    "tests",
    "examples",
)
#: Not read: the golden fixtures record how they were made at an old commit, with its paths.
SKIPPED = ("tests/fixtures/",)
#: Made by running something, so absent from a fresh checkout.
GENERATED = ("tests/.playwright", "tests/screenshots")

_PATH = re.compile(r"(?<![\w./\-])((?:\.\./)*(?:" + "|".join(TOP_LEVEL) + r")/[^\s`'\"()\[\],;|]*)")
_PATTERN_SIGNS = re.compile(r"[<>*{}$]|\.\.\.|…")
#: ``application/...`` is also the start of media types, which name no file.
_MEDIA_TYPE = re.compile(
    r"application/(json|xml|octet-stream|x-[\w.-]+|vnd\.[\w.+-]+|[\w.-]+\+\w+)"
)


def named_paths(text: str) -> Iterator[tuple[str, int]]:
    """Each repository path in ``text`` and the line (from 1) it is on."""
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _PATH.finditer(line):
            # No repository path holds a colon: what follows one is a test's name or a line.
            path = match.group(1).split(":", 1)[0].split("#", 1)[0]
            if not (_PATTERN_SIGNS.search(path) or _MEDIA_TYPE.fullmatch(path.rstrip(".:"))):
                yield path.rstrip(".:"), number


def prose_of_python(source: str) -> Iterator[tuple[str, int]]:
    """A module's docstrings (every statement that is a lone string) and comments, each with
    the line it starts on."""
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            yield node.value.value, node.lineno
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.string, token.start[0]


def documents() -> Iterator[Path]:
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))
    for folder in PYTHON_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if not relative.startswith(SKIPPED) and "__pycache__" not in path.parts:
                yield path


def _names(document: Path) -> Iterator[tuple[str, int]]:
    text = document.read_text(encoding="utf-8")
    if document.suffix != ".py":
        yield from named_paths(text)
        return
    if not _PATH.search(text):  # most modules name no path at all: no need to parse them
        return
    for prose, first_line in prose_of_python(text):
        for path, line in named_paths(prose):
            yield path, first_line + line - 1


def _exists(path: str, document: Path) -> bool:
    base = document.parent if path.startswith("../") else ROOT
    return path.startswith(GENERATED) or (base / path).resolve().exists()


def missing_paths() -> list[str]:
    """``file:line: names path, which does not exist`` for every path named and missing."""
    missing = []
    for document in documents():
        for path, line in _names(document):
            if not _exists(path, document):
                where = document.relative_to(ROOT).as_posix()
                missing.append(f"{where}:{line}: names {path}, which does not exist")
    return missing


def test_every_repository_path_the_prose_names_exists() -> None:
    missing = missing_paths()
    assert not missing, "stale paths (move the reference with the file):\n" + "\n".join(missing)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            "see infrastructure/persistence/recorders.py.",
            ["infrastructure/persistence/recorders.py"],
        ),
        (
            "`tests/test_cli.py::test_x` and domain/contracts/",
            ["tests/test_cli.py", "domain/contracts/"],
        ),
        ("(../domain/proposal.py)", ["../domain/proposal.py"]),
        (
            "at domain/proposal.py:120: and docs/design.md#who-may-decide",
            ["domain/proposal.py", "docs/design.md"],
        ),
        ("domain/contracts/<name>.py, tests/test_*.py, docs/...", []),
        ("https://example.org/domain/x.py and src/tests/y.py", []),
        ("the application/ports.py seam: application.ports", ["application/ports.py"]),
        ("answers application/json or application/problem+json.", []),
    ],
)
def test_a_path_is_recognised_by_its_first_folder(text: str, found: list[str]) -> None:
    assert [path for path, _ in named_paths(text)] == found


def test_a_missing_path_is_named_with_the_file_and_line_naming_it(tmp_path: Path) -> None:
    document = tmp_path / "module.py"
    document.write_text('"""One line.\n\nSee domain/no_such_module.py."""\n# tests/nor_this.py\n')
    assert list(_names(document)) == [("domain/no_such_module.py", 3), ("tests/nor_this.py", 4)]
    assert not _exists("domain/no_such_module.py", document)
    assert _exists("domain/proposal.py", document)
