"""One club's agent could take every club's assistants.

An outside review, with a model taking 20 s to answer, had one granite agent token send 8
concurrent messages to the order assistant: every turn the process lets wait on the model was
then granite's, and a maple API turn and a manager's web chat message both answered "The
assistant is unavailable right now".

Now each club holds at most its share of the turns waiting on the model
(``COUNTERSIGN_TURNS_PER_CLUB``, 4 of the process's 8): past it, a turn of that club ends at
once as a turn past the process's bound does (recorded, the model not asked, nothing
changed), in words saying its club's assistants are busy, and the other clubs' turns are
answered.

A second review found that two clubs each at their share filled all 8: a third club's member
was answered "The assistant is unavailable right now" for as long as those two kept flooding.
Now the clubs holding turns share ``4 - 1`` slots past their first ones, and a club holding
none takes any free slot (``turn_limits.TurnSlots``): two clubs flooding hold at most 5, and a
third club's turns are answered by the model.

The model is scripted behind the real ``openai`` client (``tests/support/slow_model.py``),
never a real one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import httpx2
import pytest
from countersign.domain.club.orders import Order
from countersign.domain.club.organization import Organization
from countersign.domain.club.roster import Roster
from countersign.domain.contracts import PERMISSIONS
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.passwords import set_password
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.settings import Settings, SettingsError

from tests.attacks.conftest import Web
from tests.conftest import AVA, MIA
from tests.servers import serving
from tests.support.slow_model import FLOOD, MESSAGES, REPLY, SlowModel, until

#: The documented defaults (README, "Configuration"): the process's 8 turns waiting on the
#: model, 4 of them for one club at most.
PROCESS_BOUND, SHARE = 8, 4


@pytest.fixture(autouse=True)
def _one_token_may_send_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """A club's agent sends more turns at once than COUNTERSIGN_REQUESTS_IN_FLIGHT (4) lets
    one token have under way; these tests are about the turns' own bounds behind it."""
    monkeypatch.setenv("COUNTERSIGN_REQUESTS_IN_FLIGHT", "100")


#: A third club, made by the test as the seed makes granite and maple, and its manager.
BIRCH, IVY = "birch", "ivy@birch.example"
CLUB_BUSY = "Your club's assistants are all busy right now. Nothing was changed; try again shortly."


def _agent(cs: Countersign, club: str, member: str, name: str) -> str:
    return issue_token(cs, club, name, ["orders.refund"], issued_by=member, kind="agent").token


def _say(client: httpx2.Client, token: str, order: str, message: str) -> httpx2.Response:
    return client.post(
        MESSAGES.format(order),
        headers={"Authorization": f"Bearer {token}"},
        json={"message": message},
    )


def _birch(web: Web) -> str:
    """Birch, a club of its own with Ivy as its manager (every permission, a password), its
    roster (the order assistant reads it) and one order paid in cash: the order's id."""
    club = Organization(slug=BIRCH, name="Birch Curling Club")
    club.add_member(IVY, "Ivy Moreau", "manager", sorted(PERMISSIONS))
    order = Order(
        organization_id=club.id,
        key="birch-order",
        participant_name="Leo Moreau",
        participant_email="leo.moreau@example.com",
        currency="CAD",
        line_items=[
            {
                "ref": "L1",
                "product": "Learn to Curl",
                "amount_cents": 9000,
                "configuration": "Six Saturday mornings",
            }
        ],
        discounts=[],
        payments=[
            {
                "ref": "P1",
                "method": "cash",
                "label": "Cash at the front desk",
                "amount_cents": 9000,
                "charge_id": None,
            }
        ],
        note="",
        placed_at=datetime(2026, 9, 3, 18, 30, tzinfo=UTC),
    )
    web.cs.store.save(club, Roster(organization_id=club.id), order)
    web.passwords[IVY] = "ivy-long-enough-password"
    set_password(web.cs, IVY, web.passwords[IVY])
    return str(order.id)


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

    _answered_by_the_model(other_club, sent, chat)

    answers = [g.json() for g in granite]
    assert [g.status_code for g in granite] == [200] * PROCESS_BOUND
    waited = [a for a in answers if a["ended"] == "reply"]
    refused = [a for a in answers if a["ended"] == "model_unavailable"]
    assert (len(waited), len(refused)) == (SHARE, PROCESS_BOUND - SHARE)
    assert sum(FLOOD in asked for asked in slow_model.asked) == SHARE  # the refused asked nothing
    for answer in refused:
        assert answer["model_calls"] == 0
        assert _closing(answer) == CLUB_BUSY
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


def test_two_clubs_flooding_at_once_leave_a_third_clubs_turns_answered(
    cs: Countersign, web: Web, slow_model: SlowModel
) -> None:
    """The second review's run: granite's and maple's agents each send as many messages at
    once as the process lets wait on the model. Before, each club's share (4 and 4) filled all
    8, and birch's turns were answered "unavailable". Now the two hold at most 5 (turns past
    each club's first number at most 3 in all), their others end at once saying their club's
    assistants are busy (never that every slot is taken: some are free), and birch's API turn
    and Ivy's web chat are answered by the model."""
    granite_order = web.seeded["orders"]["refund-ok"]
    maple_order = web.seeded["orders"]["maple-refund"]
    birch_order = _birch(web)
    floods = {
        "granite": (_agent(cs, "granite", AVA, "flooder"), granite_order),
        "maple": (_agent(cs, "maple", MIA, "flooder"), maple_order),
    }
    birch = _agent(cs, BIRCH, IVY, "birch-agent")
    ivy = web.member(IVY)
    ivy.page_token(f"/chat/orders/{birch_order}")
    sent_all = 2 * PROCESS_BOUND
    with serving(web.app) as server, httpx2.Client(base_url=server.base, timeout=60) as client:
        # One read first: FastAPI builds its route models on a first request, which must
        # not be raced (tests/attacks/test_concurrent_decline.py).
        assert client.get("/api/v1/inbox", headers={"Authorization": f"Bearer {birch}"}).is_success
        with ThreadPoolExecutor(sent_all) as pool:
            flood = {
                club: [
                    pool.submit(_say, client, token, order, f"{FLOOD} {club} {i}")
                    for i in range(PROCESS_BOUND)
                ]
                for club, (token, order) in floods.items()
            }
            every = flood["granite"] + flood["maple"]
            try:
                # Each of their turns is waiting on the model or has been answered.
                settled = until(
                    lambda: slow_model.waiting + sum(f.done() for f in every) == sent_all
                )
                assert settled, f"{slow_model.waiting} waiting on the model"
                held = {
                    club: cs.assistant.slots.held().get(str(Organization.create_id(club)), 0)
                    for club in ("granite", "maple", BIRCH)
                }
                other_club = _say(client, birch, birch_order, "Is this order settled?")
                sent = ivy.submit(
                    f"/chat/orders/{birch_order}", {"message": "Is this order settled?"}
                )
                chat = ivy.get(sent.headers["location"].split("#")[0])
            finally:
                slow_model.release.set()
            answers = {club: [f.result(timeout=60) for f in fs] for club, fs in flood.items()}

    _answered_by_the_model(other_club, sent, chat)

    # While birch was answered, granite and maple each held a slot, at most 5 together.
    assert held["granite"] >= 1, held
    assert held["maple"] >= 1, held
    assert held[BIRCH] == 0, held
    assert SHARE <= sum(held.values()) <= SHARE + 1, held
    waited = 0
    for club, replies in answers.items():
        assert [r.status_code for r in replies] == [200] * PROCESS_BOUND, club
        bodies = [r.json() for r in replies]
        assert sum(b["ended"] == "reply" for b in bodies) == held[club]
        waited += held[club]
        for refused in (b for b in bodies if b["ended"] != "reply"):
            assert refused["ended"] == "model_unavailable"
            assert refused["model_calls"] == 0
            assert _closing(refused) == CLUB_BUSY
    assert sum(FLOOD in asked for asked in slow_model.asked) == waited  # the refused asked nothing
    assert cs.assistant.slots.held() == {}  # every slot came back


def _answered_by_the_model(other_club: Any, sent: Any, chat: Any) -> None:
    """The other club's API turn and web chat were answered by the model, not refused."""
    assert other_club.status_code == 200, other_club.text
    assert other_club.json()["ended"] == "reply"
    assert [m["text"] for m in other_club.json()["messages"]] == [REPLY]
    assert sent.status_code == 303
    assert chat.status_code == 200
    assert REPLY in chat.text
    for refused in ("unavailable", "indisponible", "all busy right now"):
        assert refused not in chat.text
