"""A page's posted form, read within bounds: at most ``MAX_FORM_BYTES`` and 20 fields, the
first value of each field kept (``Site`` reads it before a page's handler runs)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request

MAX_FORM_BYTES = 32 * 1024


class FormTooLargeError(Exception):
    """Raised when a form is larger than MAX_FORM_BYTES (or has too many fields)."""


async def read_form(request: Request) -> dict[str, str]:
    """An urlencoded form, at most MAX_FORM_BYTES; the first value of each field wins."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormTooLargeError
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/x-www-form-urlencoded":
        return {}
    try:
        pairs = parse_qsl(
            body.decode("utf-8", errors="replace"), keep_blank_values=True, max_num_fields=20
        )
    except ValueError:
        raise FormTooLargeError from None
    form: dict[str, str] = {}
    for name, value in pairs:
        form.setdefault(name, value)
    return form
