"""Money reads as Babel (CLDR) writes it; the club's own currency without loading its data."""

from __future__ import annotations

import subprocess
import sys

import pytest
from countersign.domain.money import _CHECKED, babel_money, format_money

AMOUNTS = [0, 1, 5, 99, 100, 4800, 34500, 99999, 100000, 123456789, 10**12 + 7]


@pytest.mark.parametrize(("language", "currency"), sorted(_CHECKED))
def test_the_club_currency_reads_exactly_as_babel_writes_it(language, currency):
    for cents in AMOUNTS + [-amount for amount in AMOUNTS]:
        assert format_money(cents, currency, language) == babel_money(cents, currency, language)


def test_english_and_french_read_their_own_way():
    assert format_money(4800, "CAD") == "$48.00 CAD"
    assert format_money(123456789, "CAD", "fr") == "1\u00a0234\u00a0567,89\u00a0$\u00a0CA"
    assert format_money(4800, "CAD", "de") == "$48.00 CAD"  # any other language reads English


def test_other_currencies_and_non_codes_go_through_babel():
    assert format_money(4800, "EUR", "fr") == "48,00\u00a0€"
    assert format_money(4800, "USD") == "US$48.00"
    assert format_money(4800, "points") == "48.00"


def test_formatting_the_club_currency_loads_no_locale_data():
    script = (
        "import sys; from countersign.domain.money import format_money; "
        "format_money(4800, 'CAD'); format_money(4800, 'CAD', 'fr'); "
        "print('babel.localedata' in sys.modules)"
    )
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert shown.stdout.strip() == "False", shown.stderr
