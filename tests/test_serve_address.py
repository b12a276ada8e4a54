"""The address ``serve`` says it serves on is the one to open in a browser.

A newcomer following README ran ``countersign seed`` then ``countersign serve``: the server
said "serving on http://127.0.0.1:8000", while README says to open ``localhost`` because the
pages' passkeys belong to it and a browser refuses them at 127.0.0.1 (``demo --serve`` said
localhost just above the same line: two addresses, one of them wrong)."""

from __future__ import annotations

import pytest
from countersign.infrastructure.entrypoints.cli import main

from tests.http_load import free_port


@pytest.fixture
def served(tmp_path, capsys, monkeypatch):
    """``serve``'s words with the given arguments, the server itself not run."""
    from countersign.infrastructure.entrypoints.cli import admin

    url = f"sqlite:///{tmp_path / 'countersign.db'}"
    assert main(["seed", "--database", url]) == 0
    capsys.readouterr()
    monkeypatch.setattr(admin, "_run", lambda config: True)

    def serve(*arguments: str) -> str:
        assert main(["serve", "--no-sweepers", "--database", url, *arguments]) == 0
        out, err = capsys.readouterr()
        return out + err

    return serve


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("en", "countersign: serving on http://localhost:{port} "),
        ("fr", "en service sur http://localhost:{port} "),
    ],
)
def test_serve_names_the_localhost_address_the_passkeys_belong_to(served, language, said):
    port = free_port()

    words = served("--port", str(port), "--language", language)

    assert said.format(port=port) in words
    assert "127.0.0.1" not in words


def test_another_relying_party_or_host_is_named_as_it_is(served, monkeypatch):
    port = free_port()
    assert f"serving on http://0.0.0.0:{port} " in served("--host", "0.0.0.0", "--port", str(port))

    monkeypatch.setenv("COUNTERSIGN_WEBAUTHN_RP_ID", "countersign.example.org")
    assert f"serving on http://127.0.0.1:{port} " in served("--port", str(port))
