"""The seal keys, from the environment: held outside the database (docs/design.md, "Seals").

``COUNTERSIGN_SEAL_KEYS`` lists them as ``ID:SECRET`` separated by commas, the sealing key
first; or ``COUNTERSIGN_SEAL_KEYS_FILE`` names a file of them, one ``ID:SECRET`` a line
(blank lines and lines starting with ``#`` ignored), for a secret store that mounts files.
Neither set: no seals (the chain alone proves the streams, as before). A value countersign
cannot use is refused at start, saying what to do, and never quoting a secret.
"""

from __future__ import annotations

import os
from pathlib import Path

from countersign.domain.seals import KEY_ID, SealKeys

SEAL_KEYS_ENV = "COUNTERSIGN_SEAL_KEYS"
SEAL_KEYS_FILE_ENV = "COUNTERSIGN_SEAL_KEYS_FILE"
SEALS_REQUIRED_ENV = "COUNTERSIGN_SEALS_REQUIRED"
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off", "")
#: The fewest characters a secret may have: 32 random characters or more (``openssl rand
#: -base64 32`` gives 44), as an HMAC-SHA256 key.
MIN_SECRET = 32
_HOW = (
    "list keys as ID:SECRET separated by commas, the sealing key first (an id of letters, "
    "digits, '.', '_' or '-', up to 32; a secret of at least 32 characters without spaces or "
    "commas, such as `openssl rand -base64 32` prints)"
)
_HOW_FR = (
    "listez les clés en ID:SECRET séparées par des virgules, la clé de scellement en premier "
    "(un id de lettres, de chiffres, de '.', de '_' ou de '-', jusqu'à 32 ; un secret d'au "
    "moins 32 caractères sans espace ni virgule, tel que l'écrit `openssl rand -base64 32`)"
)
#: Where a key stands in its setting, in French: ``entry 2`` (the variable), ``line 2`` (a file).
_UNIT_FR = {"entry": "l'entrée", "line": "la ligne"}


class SealKeysError(ValueError):
    """A seal key setting countersign cannot use; the message says the fix (``french``: the
    same in French, a command's ``--language fr``)."""

    def __init__(self, message: str, french: str) -> None:
        super().__init__(message)
        self.french = french


def seal_keys_from_env() -> SealKeys | None:
    """The keys ``COUNTERSIGN_SEAL_KEYS`` or ``COUNTERSIGN_SEAL_KEYS_FILE`` give, checked,
    required of every proposal where ``COUNTERSIGN_SEALS_REQUIRED`` says so; None when
    neither is set."""
    required = os.environ.get(SEALS_REQUIRED_ENV, "").strip().lower()
    if required not in _TRUE + _FALSE:
        raise SealKeysError(
            f"{SEALS_REQUIRED_ENV} must be true or false, not {required!r}",
            f"{SEALS_REQUIRED_ENV} vaut true ou false, pas {required!r}",
        )
    keys = _keys_from_env(required in _TRUE)
    if keys is None and required in _TRUE:
        raise SealKeysError(
            f"{SEALS_REQUIRED_ENV}=true requires every proposal to be sealed, and no seal "
            f"keys are configured: set {SEAL_KEYS_ENV} or {SEAL_KEYS_FILE_ENV} too",
            f"{SEALS_REQUIRED_ENV}=true exige que chaque proposition soit scellée, et aucune "
            f"clé de scellement n'est configurée : définissez aussi {SEAL_KEYS_ENV} ou "
            f"{SEAL_KEYS_FILE_ENV}",
        )
    return keys


def _keys_from_env(required: bool) -> SealKeys | None:
    listed = os.environ.get(SEAL_KEYS_ENV, "").strip()
    path = os.environ.get(SEAL_KEYS_FILE_ENV, "").strip()
    if listed and path:
        raise SealKeysError(
            f"set {SEAL_KEYS_ENV} or {SEAL_KEYS_FILE_ENV}, not both: one place holds the keys",
            f"définissez {SEAL_KEYS_ENV} ou {SEAL_KEYS_FILE_ENV}, pas les deux : un seul endroit "
            "détient les clés",
        )
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise SealKeysError(
                f"{SEAL_KEYS_FILE_ENV}: the file it names cannot be read "
                f"({type(error).__name__}); it must be a text file of ID:SECRET lines this "
                "process may read",
                f"{SEAL_KEYS_FILE_ENV} : le fichier qu'elle nomme ne peut pas être lu "
                f"({type(error).__name__}) ; ce doit être un fichier texte de lignes ID:SECRET "
                "que ce processus peut lire",
            ) from None
        lines = [line.strip() for line in text.splitlines()]
        entries = [line for line in lines if line and not line.startswith("#")]
        return parse_seal_keys(entries, SEAL_KEYS_FILE_ENV, "line", required=required)
    if listed:
        return parse_seal_keys(listed.split(","), SEAL_KEYS_ENV, "entry", required=required)
    return None


def parse_seal_keys(
    entries: list[str], source: str, unit: str = "entry", *, required: bool = False
) -> SealKeys:
    """Keys from ``ID:SECRET`` entries, the first one sealing (``required``: of every
    proposal, ``SealKeys.required``); SealKeysError naming the setting (``source``) and the
    entry's position, or the id, never the secret."""
    keys: list[tuple[str, bytes]] = []
    for position, raw in enumerate(entries, start=1):
        entry = raw.strip()
        key_id, colon, secret = entry.partition(":")
        key_id, secret = key_id.strip(), secret.strip()
        if not colon or not KEY_ID.fullmatch(key_id):
            raise SealKeysError(
                f"{source}: {unit} {position} has no valid key id; {_HOW}",
                f"{source} : {_UNIT_FR.get(unit, unit)} {position} n'a pas d'id de clé valide ; "
                f"{_HOW_FR}",
            )
        if len(secret) < MIN_SECRET or not secret.isascii() or not secret.isprintable():
            raise SealKeysError(
                f"{source}: the secret of key {key_id!r} is too short or not plain text; {_HOW}",
                f"{source} : le secret de la clé {key_id!r} est trop court ou n'est pas du texte "
                f"simple ; {_HOW_FR}",
            )
        if " " in secret or "," in secret:
            raise SealKeysError(
                f"{source}: the secret of key {key_id!r} has a space or a comma; {_HOW}",
                f"{source} : le secret de la clé {key_id!r} contient une espace ou une virgule ; "
                f"{_HOW_FR}",
            )
        if any(key_id == known for known, _ in keys):
            raise SealKeysError(
                f"{source}: key id {key_id!r} is listed twice; {_HOW}",
                f"{source} : l'id de clé {key_id!r} est listé deux fois ; {_HOW_FR}",
            )
        keys.append((key_id, secret.encode("ascii")))
    if not keys:
        raise SealKeysError(
            f"{source} is set but lists no key; {_HOW}",
            f"{source} est définie mais ne liste aucune clé ; {_HOW_FR}",
        )
    return SealKeys(keys, required=required)
