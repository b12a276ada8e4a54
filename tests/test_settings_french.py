"""A setting countersign cannot use is refused in the reader's language: README, "--language
fr ... gives its answers in French: ... usage errors" (a bad COUNTERSIGN_* value, a database
URL or a SQLite folder that cannot be used said "erreur : " and then English)."""

from __future__ import annotations

import json
import socket

import pytest
from countersign.infrastructure.entrypoints.cli import main

INBOX = ("inbox", "--org", "granite", "--as", "ava@granite.example", "--language", "fr")


@pytest.mark.parametrize(
    ("name", "value", "french"),
    [
        (
            "COUNTERSIGN_PROPOSAL_TTL",
            "abc",
            "erreur : COUNTERSIGN_PROPOSAL_TTL doit être un nombre positif de secondes, pas 'abc'",
        ),
        (
            "COUNTERSIGN_DATABASE_TIMEOUT",
            "-1",
            "erreur : COUNTERSIGN_DATABASE_TIMEOUT doit être un nombre positif de secondes "
            "(tel que 5 ou 0.5), pas '-1'",
        ),
        (
            "COUNTERSIGN_PROPOSAL_LIMIT",
            "3/fortnight",
            "erreur : COUNTERSIGN_PROPOSAL_LIMIT : '3/fortnight' n'est pas une limite telle que "
            "30/minute (un nombre positif par seconde, minute, heure ou jour)",
        ),
        (
            "COUNTERSIGN_SEAL_KEY_FILE",
            "keys.txt",
            "erreur : COUNTERSIGN_SEAL_KEY_FILE n'est pas un réglage de countersign : vouliez-"
            "vous dire COUNTERSIGN_SEAL_KEYS_FILE ? Corrigez son nom (tel quel, il est ignoré) "
            "ou retirez-le",
        ),
        (
            "COUNTERSIGN_SEAL_KEYS",
            "short",
            "erreur : COUNTERSIGN_SEAL_KEYS : l'entrée 1 n'a pas d'id de clé valide ; listez "
            "les clés en ID:SECRET séparées par des virgules, la clé de scellement en premier "
            "(un id de lettres, de chiffres, de '.', de '_' ou de '-', jusqu'à 32 ; un secret "
            "d'au moins 32 caractères sans espace ni virgule, tel que l'écrit `openssl rand "
            "-base64 32`)",
        ),
        (
            "COUNTERSIGN_SEALS_REQUIRED",
            "maybe",
            "erreur : COUNTERSIGN_SEALS_REQUIRED vaut true ou false, pas 'maybe'",
        ),
        (
            "COUNTERSIGN_LOG_FORMAT",
            "xml",
            "erreur : COUNTERSIGN_LOG_FORMAT vaut text ou json, pas 'xml'",
        ),
    ],
)
def test_a_setting_it_cannot_use_is_refused_in_french(command, monkeypatch, name, value, french):
    monkeypatch.setenv(name, value)

    status, out, err = command(*INBOX)

    assert (status, out) == (2, "")
    assert err == french + "\n"
    # --json keeps its code and its English message; English stays as it was.
    status, out, _ = command(*INBOX, "--json")
    assert status == 2
    document = json.loads(out)
    assert document["error"] == "configuration"
    assert "doit" not in document["message"]
    assert "réglage" not in document["message"]


@pytest.mark.parametrize(
    ("url", "french"),
    [
        (
            "mysql://db/x",
            "erreur : le schéma d'URL de base de données 'mysql' n'est pas pris "
            "en charge : utilisez sqlite:///chemin.db ou postgresql://utilisateur@hôte/nom",
        ),
        ("sqlite:///", "erreur : une URL SQLite s'écrit sqlite:///countersign.db"),
        (
            "postgresql://postgres@127.0.0.1/",
            "erreur : une URL PostgreSQL nomme une base de données : "
            "postgresql://utilisateur@hôte:5432/nom",
        ),
    ],
)
def test_a_database_url_it_cannot_use_is_refused_in_french(capsys, url, french):
    assert main([*INBOX, "--database", url]) == 2
    assert capsys.readouterr().err == french + "\n"


def test_a_sqlite_folder_that_cannot_be_made_is_refused_in_french(tmp_path, capsys):
    (tmp_path / "taken").write_text("a file, not a folder")
    url = f"sqlite:///{tmp_path / 'taken' / 'x.db'}"

    assert main(["seed", "--database", url, "--language", "fr"]) == 2

    assert capsys.readouterr().err == (
        f"erreur : impossible de créer le dossier de {tmp_path / 'taken' / 'x.db'} (un fichier "
        "occupe sa place) : choisissez un autre chemin dans COUNTERSIGN_DATABASE_URL ou "
        "--database\n"
    )


def test_a_database_url_parameter_not_passed_on_is_refused_in_french(capsys):
    url = "postgresql://postgres@127.0.0.1/x?foo=1"

    assert main([*INBOX, "--database", url]) == 2

    assert capsys.readouterr().err.startswith(
        "erreur : le paramètre 'foo' de l'URL de base de données n'est pas de ceux que "
        "countersign transmet à PostgreSQL ; il prend application_name, channel_binding, "
    )


@pytest.mark.parametrize(
    ("argv", "name", "value", "french"),
    [
        (
            ("worker", "--once"),
            "COUNTERSIGN_NOTIFY_WORKERS",
            "x",
            "erreur : COUNTERSIGN_NOTIFY_WORKERS doit être un nombre entier positif, pas 'x'",
        ),
        (
            ("serve",),
            "COUNTERSIGN_METRICS_TOKEN",
            "short",
            "erreur : COUNTERSIGN_METRICS_TOKEN doit compter au moins 24 caractères",
        ),
        (
            ("serve",),
            "COUNTERSIGN_HTTP_READ_TIMEOUT",
            "0",
            "erreur : COUNTERSIGN_HTTP_READ_TIMEOUT doit être un nombre positif de secondes, au "
            "plus 3600 (tel que 20 ou 0.5), pas '0'",
        ),
    ],
)
@pytest.mark.usefixtures("seeded")
def test_a_service_setting_it_cannot_use_is_refused_in_french(
    command, monkeypatch, argv, name, value, french
):
    monkeypatch.setenv(name, value)

    status, out, err = command(*argv, "--language", "fr")

    assert (status, out) == (2, "")
    assert err == french + "\n"


@pytest.mark.usefixtures("seeded")
def test_a_port_taken_is_refused_in_french(command):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        status, _, err = command("serve", "--port", str(port), "--language", "fr")

    assert status == 2
    assert err == (
        f"erreur : impossible d'écouter sur 127.0.0.1:{port} (adresse déjà utilisée) : "
        "choisissez un autre --port ou --host\n"
    )


@pytest.mark.parametrize(
    ("name", "value", "french"),
    [
        (
            "COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS",
            "10.0.0.0/8,bad",
            "erreur : COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS : 'bad' n'est pas un réseau (tel que "
            "127.0.0.0/8)",
        ),
        (
            "COUNTERSIGN_PLUGINS",
            "not-installed",
            "erreur : COUNTERSIGN_PLUGINS nomme le plug-in 'not-installed', qui n'est pas "
            "installé (installés : ",
        ),
    ],
)
@pytest.mark.usefixtures("seeded")
def test_plugins_and_webhook_networks_are_refused_in_french(
    command, monkeypatch, name, value, french
):
    monkeypatch.setenv(name, value)

    status, out, err = command("worker", "--once", "--language", "fr")

    assert (status, out) == (2, "")
    assert err.startswith(french)
