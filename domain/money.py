"""Money is integer minor units (cents) with an ISO currency code; never a float."""

from __future__ import annotations

_SYMBOLS = {"CAD": "$", "USD": "$", "EUR": "€", "GBP": "£"}


def format_money(cents: int, currency: str) -> str:
    """'$12.50 CAD' for 1250 CAD."""
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    symbol = _SYMBOLS.get(currency, "")
    return f"{sign}{symbol}{whole:,}.{part:02d} {currency}"
