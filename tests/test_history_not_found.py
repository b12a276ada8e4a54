"""``countersign history ID`` of an id no proposal has: ``history`` names no club and no
member (it reads every club's proposals, an auditor's command), so "check the club, the member
and the id named" sent its reader looking for options it does not take."""

from __future__ import annotations

import json

import pytest

from tests.conftest import AVA
from tests.support.proposing import propose

UNKNOWN = "00000000-0000-4000-8000-000000000000"


@pytest.mark.parametrize(
    ("language", "said"),
    [
        (
            "en",
            "Not found: no proposal has that id. Check it: `countersign audit export --org "
            "CLUB` lists each proposal of a club with its id.",
        ),
        (
            "fr",
            "Introuvable : aucune proposition n'a cet identifiant. Vérifiez-le : `countersign "
            "audit export --org CLUB` liste chaque proposition d'un club avec son identifiant.",
        ),
    ],
)
@pytest.mark.usefixtures("seeded")
def test_an_unknown_id_is_said_in_the_words_of_history(command, language, said):
    for named in (UNKNOWN, "not-an-id"):
        status, out, _ = command("history", named, "--language", language)

        assert (status, out.strip()) == (0, said)

    status, out, _ = command("history", UNKNOWN, "--json", "--language", language)
    assert status == 0
    assert json.loads(out) == {"error": "not_found", "resource": "proposal", "message": said}


def test_the_advice_finds_the_id_and_history_then_reads_it(cs, seeded, command):
    """What the answer says to run does list a proposal's id, and ``history`` reads it."""
    proposal_id = propose(cs, seeded)
    assert cs.proposals.approve(proposal_id, AVA).status == "succeeded"

    status, out, _ = command("audit", "export", "--org", "granite")
    assert status == 0
    listed = {json.loads(line)["proposal_id"] for line in out.splitlines() if line.strip()}
    assert proposal_id in listed

    status, out, _ = command("history", proposal_id)
    assert status == 0
    assert "Not found" not in out
