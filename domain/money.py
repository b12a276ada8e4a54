"""Money is integer minor units (cents) with an ISO currency code; never a float.

Amounts read the way each language writes them, through Babel's locale data (CLDR): "$48.00
CAD" in English, "48,00 $ CA" in French. The club's books are Canadian, so both read the
Canadian locale (en_CA, fr_CA); where that locale's symbol is a bare sign that other
currencies share ("$"), the currency is named beside it, so an amount never reads as another
country's dollars.
"""

from __future__ import annotations

from decimal import Decimal

_LOCALES = {"en": "en_CA", "fr": "fr_CA"}
_NBSP = "\N{NO-BREAK SPACE}"

#: The club's own currency as Babel writes it in en_CA and fr_CA: sign prefix, grouping
#: separator, decimal separator, suffix. Formatting it does not load Babel's locale data
#: (about 6 MB of CLDR tables a server would otherwise carry for good); tests/test_money.py
#: checks every entry against Babel itself, so Babel stays the source of truth.
#: The currency of the club's books (every order is in it). A policy's threshold names no
#: currency of its own (it applies to a proposal's amount, in that proposal's currency), so
#: where no proposal is in sight, the approval policies page, it reads in this one.
CLUB_CURRENCY = "CAD"

_CHECKED: dict[tuple[str, str], tuple[str, str, str, str]] = {
    ("en", "CAD"): ("$", ",", ".", " CAD"),
    ("fr", "CAD"): ("", _NBSP, ",", f"{_NBSP}${_NBSP}CA"),
}


def format_money(cents: int, currency: str, language: str = "en") -> str:
    """'$12.50 CAD' for 1250 CAD in English; '12,50 $ CA' in French (any other language
    reads English)."""
    language = language if language in _LOCALES else "en"
    checked = _CHECKED.get((language, currency.upper()))
    if checked is None:
        return babel_money(cents, currency, language)
    prefix, group, decimal, suffix = checked
    whole, part = divmod(abs(cents), 100)
    sign = "-" if cents < 0 else ""
    return f"{sign}{prefix}{whole:,}".replace(",", group) + f"{decimal}{part:02d}{suffix}"


def babel_money(cents: int, currency: str, language: str = "en") -> str:
    """``format_money`` through Babel's locale data, for any currency."""
    from babel.numbers import format_currency, format_decimal, get_currency_symbol

    locale = _LOCALES.get(language, _LOCALES["en"])
    amount = Decimal(cents) / 100
    code = currency.upper()
    if len(code) != 3 or not code.isalpha():
        # Not a currency code: the number alone, never a made-up symbol.
        return format_decimal(amount, format="#,##0.00", locale=locale)
    text = format_currency(amount, code, locale=locale)
    if any(c.isalpha() for c in get_currency_symbol(code, locale=locale)):
        return text  # the symbol names its currency already: "US$", "$ US", "XYZ"
    if locale == "fr_CA":
        # fr_CA qualifies a dollar with its country ("$ US"); ISO 4217's first two letters
        # are that country, so its own dollar reads "$ CA" too.
        return f"{text}{_NBSP}{code[:2]}" if text.endswith("$") else text
    return f"{text} {code}"
