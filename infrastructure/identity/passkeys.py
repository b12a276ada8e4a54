"""WebAuthn through the ``webauthn`` library: passkey registration and assertion ceremonies,
the nonces their challenges are made of, and the auditor's re-verification of a stored
assertion. Nothing here parses CBOR or checks a signature itself.

A nonce is 16 random bytes, the second it was issued and an HMAC over both and what it was
issued for (an approval of one proposal by one approver, a registration by one member), so
any server process can check one another issued, for ``NONCE_SECONDS``. Its key is kept in
the database (``web_secrets``), created on first use.

The library, with the cryptography and CBOR code under it (about 17 MB of a process's
memory), is imported by the first ceremony, not by every process that wires countersign: a
worker, a projection runner or a command that never meets a passkey does not carry it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from countersign.application.ports import CheckedAssertion, NewPasskey, PasskeyRejectedError
from countersign.domain.club.passkeys import PasskeyAssertion, approval_challenge
from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import SqlDatabase

NONCE_SECONDS = 300
_CLOCK_SKEW = 30
_RANDOM = 16
_MAC = 16
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS web_secrets ("
    " name TEXT PRIMARY KEY, secret TEXT NOT NULL, created_at TEXT NOT NULL)",
)
_SECRET_NAME = "passkey_nonces"  # noqa: S105 - the row's name, not a secret


def b64url(data: bytes) -> str:
    """base64url without padding, as WebAuthn writes it."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Bytes from base64url with or without padding; PasskeyRejectedError for anything else."""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError, TypeError):
        raise PasskeyRejectedError("not base64url") from None


class WebAuthnCeremonies:
    """The PasskeyCeremonies port for one relying party: its id (a domain, ``localhost``)
    and the origins its pages are served from."""

    def __init__(self, sql: SqlDatabase, rp_id: str, origins: Sequence[str]) -> None:
        self.sql = sql
        self.rp_id = rp_id
        self.origins = list(origins)
        self._key: bytes | None = None
        self._guard = threading.Lock()

    # -- nonces -------------------------------------------------------------------------------

    def _nonce_key(self) -> bytes:
        with self._guard:
            if self._key is None:
                ensure_tables(self.sql, "web_secrets", _SCHEMA)
                with self.sql.transaction() as cursor:
                    cursor.execute(
                        "INSERT INTO web_secrets (name, secret, created_at) VALUES (?, ?, ?)"
                        " ON CONFLICT (name) DO NOTHING",
                        (_SECRET_NAME, secrets.token_urlsafe(48), datetime.now(UTC).isoformat()),
                    )
                    found = cursor.execute(
                        "SELECT secret FROM web_secrets WHERE name = ?", (_SECRET_NAME,)
                    ).fetchone()
                if found is None:
                    raise RuntimeError("the passkey nonce key could not be stored")
                self._key = hashlib.sha256(str(found[0]).encode()).digest()
            return self._key

    def _mac(self, body: bytes, purpose: str) -> bytes:
        return hmac.new(self._nonce_key(), body + purpose.encode(), hashlib.sha256).digest()[:_MAC]

    def issue_nonce(self, purpose: str, now: datetime) -> str:
        body = secrets.token_bytes(_RANDOM) + int(now.timestamp()).to_bytes(8, "big")
        return b64url(body + self._mac(body, purpose))

    def nonce_holds(self, nonce: str, purpose: str, now: datetime) -> bool:
        try:
            raw = b64url_decode(nonce)
        except PasskeyRejectedError:
            return False
        if len(raw) != _RANDOM + 8 + _MAC:
            return False
        body, mac = raw[: _RANDOM + 8], raw[_RANDOM + 8 :]
        if not hmac.compare_digest(mac, self._mac(body, purpose)):
            return False
        age = int(now.timestamp()) - int.from_bytes(body[_RANDOM:], "big")
        return -_CLOCK_SKEW <= age <= NONCE_SECONDS

    # -- ceremonies ---------------------------------------------------------------------------

    def registration_options(
        self,
        *,
        user_id: bytes,
        user_name: str,
        display_name: str,
        challenge: bytes,
        exclude: Sequence[str],
    ) -> dict[str, Any]:
        from webauthn import generate_registration_options
        from webauthn.helpers.options_to_json_dict import options_to_json_dict
        from webauthn.helpers.structs import (
            AuthenticatorSelectionCriteria,
            PublicKeyCredentialDescriptor,
            ResidentKeyRequirement,
            UserVerificationRequirement,
        )

        options = generate_registration_options(
            rp_id=self.rp_id,
            rp_name="countersign",
            user_id=user_id,
            user_name=user_name,
            user_display_name=display_name,
            challenge=challenge,
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.PREFERRED,
                user_verification=UserVerificationRequirement.REQUIRED,
            ),
            exclude_credentials=[
                PublicKeyCredentialDescriptor(id=b64url_decode(c)) for c in exclude
            ],
        )
        return dict(options_to_json_dict(options))

    def verify_registration(self, credential: Mapping[str, Any], challenge: bytes) -> NewPasskey:
        from webauthn import verify_registration_response

        try:
            verified = verify_registration_response(
                credential=dict(credential),
                expected_challenge=challenge,
                expected_rp_id=self.rp_id,
                expected_origin=self.origins,
                require_user_verification=True,
            )
        except Exception as error:  # untrusted input: whatever fails, it does not verify
            raise PasskeyRejectedError(f"registration: {type(error).__name__}: {error}") from None
        return NewPasskey(
            credential_id=b64url(verified.credential_id),
            public_key=b64url(verified.credential_public_key),
            sign_count=verified.sign_count,
        )

    def assertion_options(self, challenge: bytes, allow: Sequence[str]) -> dict[str, Any]:
        from webauthn import generate_authentication_options
        from webauthn.helpers.options_to_json_dict import options_to_json_dict
        from webauthn.helpers.structs import (
            PublicKeyCredentialDescriptor,
            UserVerificationRequirement,
        )

        options = generate_authentication_options(
            rp_id=self.rp_id,
            challenge=challenge,
            allow_credentials=[PublicKeyCredentialDescriptor(id=b64url_decode(c)) for c in allow],
            user_verification=UserVerificationRequirement.REQUIRED,
        )
        return dict(options_to_json_dict(options))

    def verify_assertion(
        self,
        credential: Mapping[str, Any],
        challenge: bytes,
        *,
        public_key: str,
        sign_count: int,
        rp_id: str,
    ) -> CheckedAssertion:
        from webauthn import verify_authentication_response
        from webauthn.helpers import parse_authentication_credential_json

        if rp_id != self.rp_id:
            raise PasskeyRejectedError(f"registered for {rp_id!r}, not {self.rp_id!r}")
        try:
            parsed = parse_authentication_credential_json(json.dumps(dict(credential)))
            verified = verify_authentication_response(
                credential=parsed,
                expected_challenge=challenge,
                expected_rp_id=self.rp_id,
                expected_origin=self.origins,
                credential_public_key=b64url_decode(public_key),
                credential_current_sign_count=sign_count,
                require_user_verification=True,
            )
        except Exception as error:  # untrusted input: whatever fails, it does not verify
            raise PasskeyRejectedError(f"assertion: {type(error).__name__}: {error}") from None
        return CheckedAssertion(
            credential_id=b64url(verified.credential_id),
            authenticator_data=b64url(parsed.response.authenticator_data),
            client_data_json=b64url(parsed.response.client_data_json),
            signature=b64url(parsed.response.signature),
            sign_count=verified.new_sign_count,
        )


#: Why a stored assertion does not hold (``assertion_problem``): its key is not one the
#: approver registered, it cannot be read, its challenge binds another proposal, or its
#: signature does not verify.
AssertionProblem = Literal[
    "passkey_not_registered", "assertion_unreadable", "assertion_not_bound", "signature_invalid"
]


def assertion_problem(
    assertion: Mapping[str, Any],
    *,
    registered: Mapping[str, Mapping[str, Any]],
    digest: str,
    proposal_id: str,
    approver: str,
) -> AssertionProblem | None:
    """Why a stored approval's assertion does not hold, as its code, or None: its passkey
    must be one the approver registered (``registered``: their ring's keys by credential id,
    removed ones included), its challenge must bind this proposal's digest, id and approver
    with its nonce, and its signature must verify against that key, with user verification.
    ``audit verify`` words each code (audit/verify.py ``PROBLEMS``)."""
    from webauthn import verify_authentication_response

    stored: PasskeyAssertion = assertion  # type: ignore[assignment]
    entry = registered.get(str(stored.get("credential_id")))
    if entry is None:
        return "passkey_not_registered"
    expected = approval_challenge(digest, proposal_id, approver, str(stored.get("nonce")))
    try:
        client_data = json.loads(b64url_decode(str(stored["client_data_json"])))
        origin = str(client_data["origin"])
        challenge = b64url_decode(str(client_data["challenge"]))
    except Exception:
        return "assertion_unreadable"
    if not hmac.compare_digest(challenge, expected):
        return "assertion_not_bound"
    credential = {
        "id": stored["credential_id"],
        "rawId": stored["credential_id"],
        "type": "public-key",
        "response": {
            "authenticatorData": stored["authenticator_data"],
            "clientDataJSON": stored["client_data_json"],
            "signature": stored["signature"],
        },
    }
    try:
        verify_authentication_response(
            credential=credential,
            expected_challenge=expected,
            expected_rp_id=str(entry["rp_id"]),
            expected_origin=origin,  # the live check held it to the configured origins
            credential_public_key=b64url_decode(str(entry["public_key"])),
            credential_current_sign_count=0,
            require_user_verification=True,
        )
    except Exception:
        return "signature_invalid"
    return None
