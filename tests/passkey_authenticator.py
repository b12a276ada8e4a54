"""A software WebAuthn authenticator for tests without a browser: an EC P-256 key made with
``cryptography``, and the registration and assertion responses a real platform authenticator
would give (authenticator data, client data, a DER ECDSA signature), so the server's
``webauthn`` library verifies them as it would a browser's. The COSE key and the attestation
object are CBOR, encoded with ``cbor2`` (which ``webauthn`` itself depends on).

``Authenticator.register(options, origin)`` answers ``navigator.credentials.create``'s
options; ``sign(options, origin)`` answers ``navigator.credentials.get``'s.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

ORIGIN = "http://localhost:8000"
RP_ID = "localhost"

_UP, _UV, _AT = 0x01, 0x04, 0x40


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Authenticator:
    """One passkey: its key, credential id and signature counter."""

    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    credential_id: bytes = field(default_factory=lambda: secrets.token_bytes(16))
    sign_count: int = 0
    user_verified: bool = True

    @property
    def id(self) -> str:
        return b64url(self.credential_id)

    def _cose_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        return cbor2.dumps(
            {
                1: 2,  # kty: EC2
                3: -7,  # alg: ES256
                -1: 1,  # crv: P-256
                -2: numbers.x.to_bytes(32, "big"),
                -3: numbers.y.to_bytes(32, "big"),
            }
        )

    def _flags(self, extra: int = 0) -> int:
        return _UP | (_UV if self.user_verified else 0) | extra

    def register(self, options: dict[str, Any], origin: str = ORIGIN) -> dict[str, Any]:
        """The PublicKeyCredential JSON ``navigator.credentials.create(options)`` gives."""
        client_data = json.dumps(
            {"type": "webauthn.create", "challenge": options["challenge"], "origin": origin}
        ).encode()
        rp_hash = hashlib.sha256(options["rp"]["id"].encode()).digest()
        attested = (
            bytes(16)  # AAGUID
            + len(self.credential_id).to_bytes(2, "big")
            + self.credential_id
            + self._cose_key()
        )
        auth_data = (
            rp_hash + bytes([self._flags(_AT)]) + self.sign_count.to_bytes(4, "big") + attested
        )
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "attestationObject": b64url(attestation),
                "transports": ["internal"],
            },
            "clientExtensionResults": {},
        }

    def sign(
        self, options: dict[str, Any], origin: str = ORIGIN, rp_id: str | None = None
    ) -> dict[str, Any]:
        """The PublicKeyCredential JSON ``navigator.credentials.get(options)`` gives."""
        self.sign_count += 1
        client_data = json.dumps(
            {"type": "webauthn.get", "challenge": options["challenge"], "origin": origin}
        ).encode()
        rp_hash = hashlib.sha256((rp_id or options["rpId"]).encode()).digest()
        auth_data = rp_hash + bytes([self._flags()]) + self.sign_count.to_bytes(4, "big")
        signed = auth_data + hashlib.sha256(client_data).digest()
        signature = self.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
                "userHandle": None,
            },
            "clientExtensionResults": {},
        }
