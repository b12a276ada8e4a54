"""A command given a database that holds no countersign (a mistyped path, an empty database)
is refused in the reader's language: README, "--language fr ... gives its answers in French"
(an auditor's ``audit verify --language fr`` said "erreur : no database at ...")."""

from __future__ import annotations

from countersign.infrastructure.entrypoints.cli import main


def test_a_database_without_countersign_is_refused_in_french(command):
    status, out, err = command("audit", "verify", "--language", "fr")
    assert (status, out) == (2, "")
    assert err.startswith("erreur : aucune base de données à ")
    assert err.endswith(
        " ; lancez `countersign seed` pour créer la démo, ou vérifiez l'URL (--create en crée "
        "une vide)\n"
    )
    status, _, err = command("audit", "verify")
    assert status == 2
    assert err.startswith("error: no database at ")


def test_a_mistyped_path_is_refused_in_french_and_nothing_is_created(tmp_path, capsys):
    typo = tmp_path / "typo" / "x.db"
    url = f"sqlite:///{typo}"

    status = main(["history", "0" * 32, "--language", "fr", "--database", url])

    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err == (
        f"erreur : aucune base de données à {url} ; lancez `countersign seed` pour créer la "
        "démo, ou vérifiez l'URL (--create en crée une vide)\n"
    )
    assert not typo.parent.exists()
    assert main(["history", "0" * 32, "--database", "sqlite:///:memory:", "--language", "fr"]) == 2
    assert "(une base de données en mémoire commence vide)" in capsys.readouterr().err
