"""A long-running process keeps no trace of each request it served: what it remembers between
requests is bounded (issue 27: the client's memory budget held only for short runs)."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path
from uuid import uuid4

import pytest
from countersign.domain.contracts import REGISTRY
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.persistence.known_reads import KnownReads
from countersign.infrastructure.persistence.unit_of_work import REMEMBERED, _ReadSets
from countersign.infrastructure.testing.deployment import AVA
from eventsourcing.persistence import StoredEvent


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


def test_what_a_process_knows_of_its_commits_stays_small() -> None:
    """Each cycle commits a new proposal, whose version the process knows from then on (the
    read-set check's probes skipped, known_reads): 10,000 cycles must not fill that memory
    with proposals nobody reads again."""
    known = KnownReads()
    proposals = [uuid4() for _ in range(10_000)]
    club = uuid4()  # the form every proposal reads

    def commit_all() -> None:
        for n, proposal in enumerate(proposals, start=1):
            event = StoredEvent(proposal, 1, "countersign:Proposal.Proposed", b"{}")
            known.committed(n, n, [event], {club: 1}, None)

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        commit_all()
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, f"{peak:,} bytes at the peak"  # 4,096 known: 222 KB
    assert known.claim({proposals[-1]: 1, club: 1}) == len(proposals)


#: What every memory a cycling process fills may hold together, full: the ids' texts and
#: hex digits and the derived ids (512 each), the store's snapshots (256 proposals of a few
#: kilobytes), the read-set hints (512), the known reads (512), the frozen models (64
#: contracts): about 1.9 MB
#: (traced). With 4,096 ids each way they held 2.6 MB after 1,500 cycles, and went on growing.
CYCLING_MEMORY = 2_300_000


@pytest.mark.slow
def test_a_long_run_of_cycles_keeps_a_bounded_memory(tmp_path: Path) -> None:
    """A propose -> approve cycle makes new ids, a new proposal and its snapshot every time,
    and the process remembers some of each for the next request. Those memories must be
    full after a few hundred cycles and small when full (issue 27: peak client RSS within
    60 MB with room for a couple dozen operations, over the peer benchmark's 10,000 cycles)."""
    cs = bootstrap(database_url=f"sqlite:///{tmp_path / 'cycles.db'}")
    try:
        form = seed(cs)["broadcast_forms"]["granite"]

        def cycles(first: int, count: int) -> None:
            for i in range(first, first + count):
                created = cs.proposals.propose(
                    organization="granite",
                    actor=AVA,
                    operation="email_broadcast.apply_draft",
                    resource_id=form,
                    request={
                        "filters": {"leagues": ["Thursday Seniors"]},
                        "subject": f"Opener {i}",
                        "body": "Bring clean shoes.",
                    },
                )
                report = cs.proposals.approve(created.proposal_id, AVA)
                assert report.status == "succeeded"

        cycles(0, 20)  # what is made once (validators, statements, the club's own ids)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            kept = []
            for run in range(5):
                cycles(20 + run * 300, 300)
                gc.collect()
                kept.append(tracemalloc.get_traced_memory()[0] - before)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
    finally:
        cs.close()
    assert peak < CYCLING_MEMORY, f"{peak:,} bytes at the peak; kept {kept}"
    # Full by then: the last 300 cycles keep no more than the 300 before them did, give or
    # take one memory's refill (with 4,096 ids each way: 346 KB more).
    assert kept[4] < kept[3] + 300_000, kept
