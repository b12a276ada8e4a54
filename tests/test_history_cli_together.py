"""``countersign history --as-of N`` at a point the application recorded in one step with the
next event says so, as the history page does (README, "As it stood after event N"): the last
approval stands "pending" there with its quorum complete, which nobody could ever have seen,
and an auditor read it as a proposal left approved and unclaimed."""

from __future__ import annotations

from tests.conftest import AVA
from tests.support.proposing import propose

TOGETHER_EN = (
    "  (recorded in the same step as v3: nobody could have seen the proposal as it stands "
    "here, only as it stood after v3)"
)


def test_the_last_approval_is_said_to_be_recorded_with_the_claim(cs, seeded, command):
    proposal_id = propose(cs, seeded)
    assert cs.proposals.approve(proposal_id, AVA).status == "succeeded"

    code, out, _ = command("history", proposal_id, "--as-of", "2")
    assert code == 0
    lines = out.splitlines()
    at = lines.index("  State as of v2: pending")
    assert lines[at + 1] == TOGETHER_EN

    code, out, _ = command("history", proposal_id, "--as-of", "2", "--language", "fr")
    assert code == 0
    assert (
        "  (enregistré dans la même étape que la v3 : personne n'a pu voir la proposition "
        "telle qu'elle est ici, seulement telle qu'elle était après la v3)"
    ) in out.splitlines()

    # A point people could see (its Proposed stood alone) says nothing more, and the --json
    # document is the API's, unchanged.
    assert "recorded in the same step" not in command("history", proposal_id, "--as-of", "1")[1]
    code, out, _ = command("history", proposal_id, "--as-of", "2", "--json")
    assert code == 0
    assert "recorded in the same step" not in out
