"""An auditor's time that does not read (``history --as-of``, ``audit export --since`` and
``--until``) is a usage error in the reader's language: README, "--language fr ... gives its
answers in French: ... usage errors". It answered in English under a French "erreur :"."""

from __future__ import annotations

import pytest

from tests.support.proposing import propose


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ("audit", "export", "--since", "hier"),
            "erreur : 'hier' n'est pas une heure ISO comme 2026-11-30T09:00Z",
        ),
        (
            ("audit", "export", "--until", "9999-12-31T23:59:59-05:00"),
            "erreur : '9999-12-31T23:59:59-05:00' est hors limites : en UTC, elle tombe hors "
            "des années 1 à 9999",
        ),
    ],
)
def test_an_export_time_that_does_not_read_is_refused_in_french(seeded, command, argv, said):
    code, out, err = command(*argv, "--language", "fr")
    assert (code, out) == (2, "")
    assert err.strip() == said


def test_a_history_point_that_does_not_read_is_refused_in_french(cs, seeded, command):
    proposal_id = propose(cs, seeded)
    code, out, err = command("history", proposal_id, "--as-of", "midi", "--language", "fr")
    assert (code, out) == (2, "")
    assert (
        err.strip()
        == "erreur : 'midi' n'est ni une version ni une heure ISO comme 2026-11-30T09:00Z"
    )
    code, _, err = command("history", proposal_id, "--as-of", "midi")
    assert code == 2
    assert err.strip() == "error: 'midi' is not a version or an ISO time like 2026-11-30T09:00Z"


@pytest.mark.parametrize(
    ("language", "said"),
    [("en", "audit export: 1 row"), ("fr", "audit export : 1 ligne")],
)
def test_an_export_of_one_row_says_one_row(cs, seeded, command, language, said):
    """It said "1 rows" (and "1 lignes")."""
    proposal_id = propose(cs, seeded)
    code, out, err = command("audit", "export", "--proposal", proposal_id, "--language", language)
    assert code == 0
    assert len(out.splitlines()) == 1
    assert err.strip() == said
