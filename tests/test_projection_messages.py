"""The outcome messages the card and the hand-back store (``projections.messages``): always
what the domain says of the proposal's operation, preview and outcome."""

from __future__ import annotations

import json

from countersign.domain import messages as domain_messages

from tests.conftest import DRAFT


def test_rebuilt_cards_and_hand_backs_say_what_the_domain_says_of_each(cs, seeded, clock):
    """Alike drafts among every other outcome: after
    a rebuild of every projection together, each card's and each conversation's outcome
    message is the domain's own for that proposal's operation, preview and outcome."""
    from countersign.infrastructure.projection_engine.together import rebuild_together

    from tests.conftest import AVA
    from tests.support.proposing import propose_on
    from tests.test_projections import DRAFT_REQUEST, lifecycle_history

    lifecycle_history(cs, seeded, clock)
    form = seeded["broadcast_forms"]["granite"]
    for _ in range(3):
        cs.proposals.approve(propose_on(cs, form, DRAFT_REQUEST, operation=DRAFT), AVA)
    rebuild_together(cs.projection_runners())
    with cs.sql.transaction() as cursor:
        cards = cursor.execute(
            "SELECT proposal_id, operation, preview, outcome, message_en, message_fr"
            " FROM proposal_cards WHERE outcome IS NOT NULL"
        ).fetchall()
        told = dict(
            cursor.execute(
                "SELECT proposal_id, text_fr FROM handback_messages WHERE kind = 'outcome'"
            ).fetchall()
        )
    kinds = set()
    for proposal_id, operation, preview, outcome, message_en, message_fr in cards:
        preview, outcome = (v if isinstance(v, dict) else json.loads(v) for v in (preview, outcome))
        kinds.add(outcome["kind"])
        expected = domain_messages.outcome_messages(operation, preview, outcome)
        assert (message_en, message_fr) == expected
        assert told[proposal_id] == expected[1]
    assert {"succeeded", "revision_required"} <= kinds
    assert sum(operation == DRAFT for _, operation, *_ in cards) >= 4
