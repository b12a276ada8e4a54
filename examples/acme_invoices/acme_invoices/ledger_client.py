"""The plug-in's provider ``acme.ledger``: countersign's ``EffectProvider`` port over ACME's
ledger service (``ledger_service.py``), with the standard library's HTTP client.

countersign calls ``perform`` once, under the proposal's idempotency key, after approval; the
reconciler calls ``lookup`` under the same key when an answer was lost, and ``perform`` again
(same key, same request) only if the ledger holds nothing under it. What each failure means:

- the connection is refused: nothing reached the ledger (``ProviderUnavailableError``);
- no answer, a closed connection, a timeout, a 5xx: it may have been performed
  (``EffectResponseLostError``): only a lookup can tell;
- 409: the key was used with another request (``IdempotencyConflictError``);
- 400: the request itself is wrong, a bug of the plug-in (``LedgerRequestError``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from http.client import HTTPException
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import quote
from urllib.request import Request, urlopen

from countersign.application.ports import (
    EffectResponseLostError,
    IdempotencyConflictError,
    ProviderUnavailableError,
)
from countersign.domain.ports import EffectResponse

#: Seconds to wait for the ledger's answer before it counts as lost.
TIMEOUT = 10.0


class LedgerRequestError(RuntimeError):
    """The ledger could not read the request (400): the plug-in sent a malformed one."""


class LedgerClient:
    """ACME's ledger, reached over HTTP at ``url`` (``ACME_LEDGER_URL``). Built without one,
    every call is ``ProviderUnavailableError``: nothing is sent, and the reconciler asks again
    once it is configured."""

    def __init__(self, url: str | None, timeout: float = TIMEOUT) -> None:
        self.url = None if url is None else url.rstrip("/")
        self.timeout = timeout

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        """Credit under ``key``, or answer what the ledger recorded under it the first time."""
        status, document = self._call("POST", f"/credits/{quote(key, safe='')}", dict(request))
        if status == HTTPStatus.CONFLICT:
            raise IdempotencyConflictError(f"the ledger holds another request under {key}")
        if status != HTTPStatus.OK:
            raise LedgerRequestError(f"the ledger refused to read the request ({status})")
        return _response(document)

    def lookup(self, key: str) -> EffectResponse | None:
        """What the ledger recorded under ``key``; None if nothing ever was."""
        status, document = self._call("GET", f"/credits/{quote(key, safe='')}")
        if status == HTTPStatus.NOT_FOUND:
            return None
        if status != HTTPStatus.OK:
            raise LedgerRequestError(f"the ledger refused the lookup ({status})")
        return _response(document)

    def held(self) -> list[dict[str, Any]]:
        """Every credit the ledger recorded, with its key and how many credit requests it
        received (lookups are not counted): what the conformance kit reads of a provider."""
        _, document = self._call("GET", "/credits")
        return [
            {"idempotency_key": c["idempotency_key"], "requests": c["requests"], "metadata": {}}
            for c in document["credits"]
        ]

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        if self.url is None:
            raise ProviderUnavailableError("ACME_LEDGER_URL is not set")
        data = None if body is None else json.dumps(body).encode()
        # The operator's URL (ACME_LEDGER_URL), not anyone's input: http(s) by configuration.
        request = Request(self.url + path, data=data, method=method)  # noqa: S310
        request.add_header("Content-Type", "application/json")
        try:
            with urlopen(request, timeout=self.timeout) as answer:  # noqa: S310
                return answer.status, json.loads(answer.read())
        except HTTPError as error:
            error.close()
            if error.code >= 500:
                raise EffectResponseLostError(f"the ledger answered {error.code}") from None
            return error.code, {}
        except URLError as error:
            if isinstance(error.reason, ConnectionRefusedError):
                raise ProviderUnavailableError("the ledger refused the connection") from None
            raise EffectResponseLostError(f"no answer from the ledger: {error.reason}") from None
        except (HTTPException, OSError, ValueError) as error:
            raise EffectResponseLostError(
                f"no answer from the ledger: {type(error).__name__}"
            ) from None


def _response(document: Mapping[str, Any]) -> EffectResponse:
    return EffectResponse(
        idempotency_key=str(document["idempotency_key"]),
        status="succeeded" if document["status"] == "succeeded" else "refused",
        reference=str(document["reference"]),
        reason=document.get("reason"),
        details=dict(document.get("details") or {}),
    )
