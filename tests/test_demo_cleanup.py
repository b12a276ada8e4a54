"""``countersign demo`` (and ``scripts/demo``) without ``--database`` tells its story on a
fresh SQLite file in a folder of its own, and removes that folder when it ends, normally or by
Ctrl-C: one folder a run was left in the temporary directory for ever. ``--keep`` keeps it,
and the last line says where, in English and French."""

from __future__ import annotations

import json
import os
import signal
import tempfile
from pathlib import Path

import pytest
from countersign.infrastructure.demo import story
from countersign.infrastructure.entrypoints.cli import main


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory the demo makes its folder in, for this test alone."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _left(temporary: Path) -> list[Path]:
    return sorted(temporary.glob("countersign-demo-*"))


def test_the_demo_removes_its_database_when_it_ends(temporary, capsys):
    assert main(["demo", "--json"]) == 0

    out, err = capsys.readouterr()
    told = json.loads(out)  # stdout stays one document
    assert told["database"].startswith(f"sqlite:///{temporary}/countersign-demo-")
    assert _left(temporary) == []
    folder = Path(told["database"].removeprefix("sqlite:///")).parent
    assert (
        f"The demo's database was removed with its folder ({folder}). To keep it (to look at "
        "it, or serve it again), run the demo with --keep."
    ) in err


def _interrupted(*args: object) -> None:
    raise KeyboardInterrupt


def test_a_demo_stopped_by_ctrl_c_removes_its_database_too(temporary, capsys, monkeypatch):
    monkeypatch.setattr(story, "tell", _interrupted)

    assert main(["demo"]) == 130

    out, err = capsys.readouterr()
    assert _left(temporary) == []
    assert "The demo's database was removed with its folder" in out
    assert "Traceback" not in out + err


def test_keep_keeps_the_demos_database_and_says_where(temporary, capsys, monkeypatch):
    monkeypatch.setattr(story, "tell", _interrupted)

    assert main(["demo", "--keep", "--language", "fr"]) == 130

    out, _ = capsys.readouterr()
    [folder] = _left(temporary)
    assert (folder / "demo.db").exists()
    database = f"sqlite:///{folder / 'demo.db'}"
    assert (
        f"La base de données de la démo est gardée (--keep) : {database}. Servez-la avec "
        f"`countersign serve --database {database}` et connectez-vous en tant que "
        "ava@granite.example avec ava-demo-password (les personnes de la démo et leurs mots de "
        f"passe : `countersign seed --database {database}`) ; supprimez son dossier {folder} "
        "quand vous n'en avez plus besoin."
    ) in out


def test_a_kept_demo_served_again_as_it_says_lets_ava_sign_in(temporary, capsys):
    """`demo --keep` said "Serve it again with countersign serve --database ...": served so,
    every sign-in was refused ("That email and password do not match"), the demo's people
    having no password but under `demo --serve`."""
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.entrypoints.http import create_app
    from countersign.infrastructure.entrypoints.web import mount_pages
    from fastapi.testclient import TestClient

    from tests.test_web_pages import Browser

    assert main(["demo", "--keep"]) == 0
    out, _ = capsys.readouterr()
    [folder] = _left(temporary)
    database = f"sqlite:///{folder / 'demo.db'}"
    # Served with, not "again": the demo without --serve served nothing.
    assert f"Serve it with `countersign serve --database {database}` and sign in as ava@" in out
    assert "with ava-demo-password" in out

    cs = bootstrap(database_url=database)
    try:
        app = create_app(cs)
        mount_pages(app, cs, secure_cookies=False)
        ava = Browser(TestClient(app, follow_redirects=False))
        signed = ava.sign_in("ava@granite.example", "ava-demo-password")
        assert signed.status_code == 303, signed.text
        assert "Awaiting your decision" in ava.get("/").text
    finally:
        cs.close()


def test_a_database_named_is_never_removed(temporary, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(story, "tell", _interrupted)
    database = tmp_path / "mine.db"

    assert main(["demo", "--database", f"sqlite:///{database}"]) == 130

    out, _ = capsys.readouterr()
    assert database.exists()
    assert "The demo's database" not in out


def _terminated(*args: object) -> None:
    os.kill(os.getpid(), signal.SIGTERM)


def test_a_demo_stopped_by_sigterm_removes_its_database_and_gives_the_signal_back(
    temporary, capsys, monkeypatch
):
    monkeypatch.setattr(story, "tell", _terminated)
    before = signal.getsignal(signal.SIGTERM)

    assert main(["demo"]) == 143

    out, err = capsys.readouterr()
    assert _left(temporary) == []
    assert "The demo's database was removed with its folder" in out
    assert "Traceback" not in out + err
    assert signal.getsignal(signal.SIGTERM) is before
