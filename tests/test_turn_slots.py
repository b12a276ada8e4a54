"""The turns waiting on the model, shared among the clubs (``turn_limits.TurnSlots``): a club
alone holds its whole share; the clubs holding turns share ``per_club - 1`` past their first
ones, so a club holding none gets any free slot; and slots given back are counted right. The
end-to-end case, two clubs flooding over real sockets while a third club's member is answered
by the model, is in tests/attacks/test_assistant_club_share.py."""

from __future__ import annotations

import threading
import time

import pytest
from countersign.application.assistant.turn_limits import (
    DEFAULT_TURNS_PER_CLUB,
    MAX_CONCURRENT_TURNS,
    Busy,
    TurnSlots,
)

#: The defaults: 8 turns per process, 4 for one club; so 3 turns past the clubs' first.
TOTAL, SHARE = MAX_CONCURRENT_TURNS, DEFAULT_TURNS_PER_CLUB
EXTRA = SHARE - 1


def _flood(slots: TurnSlots, club: str, times: int = TOTAL) -> list[Busy | None]:
    return [slots.take(club) for _ in range(times)]


def test_a_lone_club_holds_its_whole_share_and_leaves_the_rest_to_clubs_holding_none() -> None:
    slots = TurnSlots()
    assert _flood(slots, "granite") == [None] * SHARE + [Busy.CLUB] * (TOTAL - SHARE)
    # Maple holds none: it takes a free slot; holding one, while granite holds the extra
    # turns, it may take no other.
    assert _flood(slots, "maple") == [None] + [Busy.CLUB] * (TOTAL - 1)
    # Clubs holding none take the rest of the reserve, one each, and then every slot is taken.
    assert [slots.take(club) for club in ("birch", "cedar", "spruce")] == [None] * 3
    assert slots.take("willow") is Busy.PROCESS
    assert slots.take("maple") is Busy.PROCESS  # below its share, but no slot is free
    assert slots.take("granite") is Busy.CLUB  # at its share: its club, whatever else
    assert slots.held() == {"granite": 4, "maple": 1, "birch": 1, "cedar": 1, "spruce": 1}


def test_two_clubs_flooding_together_leave_other_clubs_a_slot_each() -> None:
    """The review's case: granite and maple flood at once. Their turns past each one's first
    share SHARE - 1 slots, so they hold 5 at most, and three other clubs are answered."""
    slots = TurnSlots()
    taken = [slots.take(club) for _ in range(TOTAL) for club in ("granite", "maple")]
    assert taken == [None] * (2 + EXTRA) + [Busy.CLUB] * (2 * TOTAL - 2 - EXTRA)  # never PROCESS
    assert slots.held() == {"granite": 3, "maple": 2}
    others = [f"club-{i}" for i in range(TOTAL - 2 - EXTRA)]
    assert [slots.take(club) for club in others] == [None] * 3
    assert slots.take("one-more") is Busy.PROCESS  # now every slot is taken

    # In any order: granite first to its share, then maple, leave three.
    slots = TurnSlots()
    assert _flood(slots, "granite") + _flood(slots, "maple") == (
        [None] * SHARE + [Busy.CLUB] * (TOTAL - SHARE) + [None] + [Busy.CLUB] * (TOTAL - 1)
    )
    assert [slots.take(f"club-{i}") for i in range(4)] == [None] * 3 + [Busy.PROCESS]


def test_every_share_lets_a_lone_club_hold_it_and_keeps_the_rest_for_clubs_holding_none() -> None:
    for share in range(1, TOTAL + 1):
        slots = TurnSlots(per_club=share)
        assert _flood(slots, "granite").count(None) == share, share
        # A second club floods: it gets one slot, its first, if any is left.
        assert _flood(slots, "maple").count(None) == min(1, TOTAL - share), share
        newcomers = [slots.take(f"club-{i}") for i in range(TOTAL)]
        assert newcomers.count(None) == max(0, TOTAL - share - 1), share
        assert sum(slots.held().values()) == TOTAL  # nothing free is left unused at the end
    with pytest.raises(ValueError, match="a club's share is 1 to 8 turns, not 9"):
        TurnSlots(per_club=TOTAL + 1)
    with pytest.raises(ValueError, match="not 0"):
        TurnSlots(per_club=0)


def test_slots_given_back_come_back_to_the_rule() -> None:
    slots = TurnSlots()
    assert _flood(slots, "granite", SHARE) == [None] * SHARE
    assert [slots.take(club) for club in ("maple", "birch", "cedar")] == [None] * 3
    assert slots.take("maple") is Busy.CLUB  # one slot free, but granite holds the extra turns
    # Maple's turn ends: holding none again, its next turn takes the free slot.
    slots.give_back("maple")
    assert slots.held() == {"granite": 4, "birch": 1, "cedar": 1}
    assert slots.take("maple") is None
    assert slots.take("maple") is Busy.CLUB
    # Granite's extra turns end: four clubs wait with a turn each, and any of them may take a
    # second while half the slots are free (the review's case: refused before).
    slots.give_back("granite")
    slots.give_back("granite")
    slots.give_back("granite")
    assert slots.held() == {"granite": 1, "birch": 1, "cedar": 1, "maple": 1}
    assert slots.take("maple") is None
    assert slots.take("birch") is None
    assert slots.take("maple") is None  # the third extra turn
    assert slots.take("cedar") is Busy.CLUB  # the extra turns are all taken
    assert slots.take("spruce") is None  # a club holding none still gets a free slot
    # A slot given back that was never taken frees nothing, and counts nothing.
    slots.give_back("nobody")
    slots.give_back("willow")
    assert slots.held() == {"granite": 1, "birch": 2, "cedar": 1, "maple": 3, "spruce": 1}
    assert slots.take("club-9") is Busy.PROCESS  # all 8 are taken now
    for club, held in list(slots.held().items()):
        for _ in range(held):
            slots.give_back(club)
    assert slots.held() == {}
    assert _flood(slots, "granite").count(None) == SHARE  # all back: a lone club's whole share


def test_threads_flooding_two_clubs_never_hold_more_than_the_rule_lets_them() -> None:
    """Eight threads, four a club, take slots, hold each a moment and give it back, as fast
    as they can while another watches: the turns past each club's first never number more
    than SHARE - 1 in all, so the two hold at most SHARE + 1 and the reserve's rest is always
    free for a third club."""
    slots = TurnSlots()
    done = threading.Event()
    seen: list[dict[str, int]] = []

    def flood(club: str) -> None:
        for _ in range(300):
            if slots.take(club) is None:
                time.sleep(0.0005)  # waiting on the model, as a turn does
                slots.give_back(club)
            else:
                time.sleep(0)

    def watch() -> None:
        while not done.is_set():
            seen.append(slots.held())

    watcher = threading.Thread(target=watch)
    watcher.start()
    floods = [threading.Thread(target=flood, args=(c,)) for c in ("granite", "maple") * 4]
    for thread in floods:
        thread.start()
    for thread in floods:
        thread.join()
    done.set()
    watcher.join()
    assert seen
    assert max(sum(held.values()) for held in seen) <= SHARE + 1
    assert all(sum(n - 1 for n in held.values()) <= SHARE - 1 for held in seen)
    assert slots.held() == {}
    assert _flood(slots, "birch").count(None) == SHARE  # every slot came back
