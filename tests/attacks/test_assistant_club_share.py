"""One club's agent could take every club's assistants.

An outside review, with a model taking 20 s to answer, had one granite agent token send 8
concurrent messages to the order assistant: every turn the process lets wait on the model was
then granite's, and a maple API turn and a manager's web chat message both answered "The
assistant is unavailable right now".

Now each club holds at most its share of the turns waiting on the model
(``COUNTERSIGN_TURNS_PER_CLUB``, 4 of the process's 8): past it, a turn of that club ends at
once as a turn past the process's bound does (recorded, the model not asked, nothing
changed), in words saying its club's assistants are busy, and the other clubs' turns are
answered. The model is scripted behind the real ``openai`` client
(``tests/support/slow_model.py``), never a real one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import UUID

import httpx2
import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.settings import Settings, SettingsError

from tests.attacks.conftest import Web
from tests.conftest import AVA, MIA
from tests.servers import serving
from tests.support.slow_model import FLOOD, MESSAGES, REPLY, SlowModel, until

#: The documented defaults (README, "Configuration"): the process's 8 turns waiting on the
#: model, 4 of them for one club at most.
PROCESS_BOUND, SHARE = 8, 4


def _agent(cs: Countersign, club: str, member: str, name: str) -> str:
    return issue_token(cs, club, name, ["orders.refund"], issued_by=member, kind="agent").token


def _say(client: httpx2.Client, token: str, order: str, message: str) -> httpx2.Response:
    return client.post(
        MESSAGES.format(order),
        headers={"Authorization": f"Bearer {token}"},
        json={"message": message},
    )


def _closing(answer: dict[str, Any]) -> str:
    [closing] = [m["text"] for m in answer["messages"] if m["author"] == "application"]
    return str(closing)


def test_half_the_turns_by_default_and_a_bad_share_is_refused(monkeypatch) -> None:
    assert Settings.from_env().turns_per_club == SHARE
    monkeypatch.setenv("COUNTERSIGN_TURNS_PER_CLUB", str(PROCESS_BOUND))  # a club of its own
    assert Settings.from_env().turns_per_club == PROCESS_BOUND
    for bad in ("9", "0", "half", "-1"):
        monkeypatch.setenv("COUNTERSIGN_TURNS_PER_CLUB", bad)
        with pytest.raises(SettingsError, match=r"COUNTERSIGN_TURNS_PER_CLUB .* from 1 to 8"):
            Settings.from_env()


def test_one_club_holding_its_share_leaves_another_clubs_turns_answered(
    cs: Countersign, web: Web, slow_model: SlowModel
) -> None:
    """The review's run: granite's agent sends as many messages at once as the process lets
    wait on the model. Only granite's share waits; granite's others end at once, recorded,
    saying its assistants are busy; maple's API turn and Mia's web chat are answered."""
    granite_order = web.seeded["orders"]["refund-ok"]
    maple_order = web.seeded["orders"]["maple-refund"]
    flooder = _agent(cs, "granite", AVA, "flooder")
    maple = _agent(cs, "maple", MIA, "maple-agent")
    mia = web.member(MIA)
    mia.page_token(f"/chat/orders/{maple_order}")
    with serving(web.app) as server, httpx2.Client(base_url=server.base, timeout=60) as client:
        # One read first: FastAPI builds its route models on a first request, which must
        # not be raced (tests/attacks/test_concurrent_decline.py).
        assert client.get("/api/v1/inbox", headers={"Authorization": f"Bearer {maple}"}).is_success
        with ThreadPoolExecutor(PROCESS_BOUND) as pool:
            flood = [
                pool.submit(_say, client, flooder, granite_order, f"{FLOOD} {i}")
                for i in range(PROCESS_BOUND)
            ]
            try:
                # Each of granite's turns is waiting on the model or has been answered.
                settled = until(
                    lambda: slow_model.waiting + sum(f.done() for f in flood) == PROCESS_BOUND
                )
                assert settled, f"{slow_model.waiting} waiting on the model"
                other_club = _say(client, maple, maple_order, "Is this order settled?")
                sent = mia.submit(
                    f"/chat/orders/{maple_order}", {"message": "Is this order settled?"}
                )
                chat = mia.get(sent.headers["location"].split("#")[0])
            finally:
                slow_model.release.set()
            granite = [f.result(timeout=60) for f in flood]

    assert other_club.status_code == 200, other_club.text
    assert other_club.json()["ended"] == "reply"
    assert [m["text"] for m in other_club.json()["messages"]] == [REPLY]
    assert sent.status_code == 303
    assert chat.status_code == 200
    assert REPLY in chat.text
    assert "unavailable" not in chat.text
    assert "indisponible" not in chat.text

    answers = [g.json() for g in granite]
    assert [g.status_code for g in granite] == [200] * PROCESS_BOUND
    waited = [a for a in answers if a["ended"] == "reply"]
    refused = [a for a in answers if a["ended"] == "model_unavailable"]
    assert (len(waited), len(refused)) == (SHARE, PROCESS_BOUND - SHARE)
    assert sum(FLOOD in asked for asked in slow_model.asked) == SHARE  # the refused asked nothing
    for answer in refused:
        assert answer["model_calls"] == 0
        assert _closing(answer) == (
            "Your club's assistants are all busy right now. Nothing was changed; try again shortly."
        )
        history = list(cs.store.history(UUID(answer["interaction_id"])))
        assert [event.type for event in history][-2:] == ["AssistantReplied", "TurnEnded"]
    assert cs.assistant.slots.held() == {}  # every slot came back


def test_a_club_busy_turn_says_so_in_french_and_its_slots_come_back(
    cs: Countersign, seeded: dict[str, Any], slow_model: SlowModel
) -> None:
    """Through the application (the command line's and the demo's way): while granite holds
    its share, Ava's turn ends at once in her language; once granite's turns end, hers is
    answered."""
    order = seeded["orders"]["refund-ok"]

    def turn(message: str, language: str = "en") -> Any:
        return cs.assistant.turn(
            organization="granite",
            actor=AVA,
            section="orders",
            resource_id=order,
            message=message,
            language=language,
        )

    with ThreadPoolExecutor(SHARE) as pool:
        held = [pool.submit(turn, f"{FLOOD} {i}") for i in range(SHARE)]
        try:
            assert until(lambda: slow_model.waiting == SHARE)
            busy = turn("Et maintenant ?", "fr")
        finally:
            slow_model.release.set()
        assert [h.result(timeout=60).ended for h in held] == ["reply"] * SHARE
    assert busy.ended == "model_unavailable"
    assert busy.model_calls == 0
    assert _closing(busy.to_json()) == (
        "Les assistants de votre club sont tous occupés pour le moment. Rien n'a été "
        "modifié ; réessayez bientôt."
    )
    assert turn("And now?").ended == "reply"
