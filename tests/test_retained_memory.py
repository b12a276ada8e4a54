"""A long-running process keeps no trace of each request it served: what it remembers between
requests is bounded (issue 27: the client's memory budget held only for short runs)."""

from __future__ import annotations

import gc
import tracemalloc
from uuid import uuid4

from countersign.domain.contracts import REGISTRY
from countersign.infrastructure.persistence.unit_of_work import REMEMBERED, _ReadSets


def _retained_by(work: object) -> int:
    """Bytes still allocated after ``work()`` ran (its results dropped)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()  # type: ignore[operator]
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_parsing_requests_keeps_none_of_their_texts() -> None:
    contract = REGISTRY["email_broadcast.apply_draft"]

    runs = iter(range(2))

    def parse_many() -> None:
        run = next(runs)  # texts never seen before on each run
        for i in range(run * 5_000, (run + 1) * 5_000):
            parsed = contract.parse_request(
                {
                    "filters": {"leagues": ["Thursday Seniors"]},
                    "subject": f"  Opener {i}  ",
                    "body": f"Sheets are booked from 6 pm, draw {i}.",
                }
            )
            assert parsed.subject == f"Opener {i}"  # type: ignore[attr-defined]

    parse_many()  # whatever is made once (validators, schemas) is made here
    # pydantic's string cache kept each stripped text: about 60 bytes a request, 300 KB here.
    assert _retained_by(parse_many) < 50_000


def test_read_set_hints_are_bounded() -> None:
    """Each approval names one new proposal: its hint is learned once and rarely used again,
    so the hints must stay small even when full."""
    hints = _ReadSets(REMEMBERED)
    shared = (uuid4(), uuid4())  # the organization and the resource every approval reads
    proposals = [uuid4() for _ in range(3 * REMEMBERED)]

    def approve_all() -> None:
        for proposal in proposals:
            hints.remember((proposal,), [proposal, *shared])

    assert _retained_by(approve_all) < 512 * 1024  # 10,000 hints had held about 2.8 MB
    assert len(hints._items) == REMEMBERED
    newest = proposals[-1]
    assert hints.with_remembered((newest,)) == [newest, *shared]
    assert hints.with_remembered((proposals[0],)) == [proposals[0]]  # forgotten first
