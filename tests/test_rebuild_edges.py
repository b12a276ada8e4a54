"""Edges of projection decoding and of rebuilds with a writer process, found in review: each
test failed on the code as first written (tampered ids and states, a writer that dies, a
working directory that shadows modules, index creation that fails, the ids in messages)."""

from __future__ import annotations

import json
import subprocess
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.infrastructure.persistence.log_decoder import ProjectionDecoder
from countersign.infrastructure.persistence.recorders import LogEntry
from countersign.infrastructure.projection_engine import together
from countersign.infrastructure.projection_engine.runner import (
    ProjectionRunner,
    ProjectionStoppedError,
)
from countersign.infrastructure.projection_engine.together import rebuild_together
from countersign.infrastructure.projection_engine.writer import WriterProcess
from eventsourcing.persistence import Notification

from tests.conftest import AVA, DRAFT
from tests.support.proposing import propose_on
from tests.test_projections import DRAFT_REQUEST, _Fragile, catch_up_all, snapshot

PROPOSED = "countersign.domain.proposal:Proposal.Proposed"


def _a_stored_proposed_event(cs, seeded) -> LogEntry:
    propose_on(cs, seeded["orders"]["refund-ok"])
    after = 0
    while batch := cs.app.recorder.select_log(after, 500):
        for entry in batch:
            if entry.topic == PROPOSED:
                return entry
        after = batch[-1].id
    raise AssertionError("no Proposed event stored")


def _some_history(cs, seeded, proposals: int = 4) -> None:
    form = seeded["broadcast_forms"]["granite"]
    for _ in range(proposals):
        proposal_id = propose_on(cs, form, DRAFT_REQUEST, operation=DRAFT)
        cs.proposals.approve(proposal_id, AVA)


# -- 1. ProjectionDecoder: a stored originator id the mapper refuses ---------------------------


def test_decoder_refuses_a_signed_hex_originator_id_as_the_mapper_does(cs, seeded):
    """SQLite keeps originator ids as 32 characters of text. ``_uuid_of`` turns them into a
    UUID with ``int(value, 16)``, which also accepts a sign: "-" + 31 hex digits becomes a
    UUID with a NEGATIVE integer. The mapper's path (``UUID(value)``) refuses that id, so the
    fast path silently produces an event the mapper would never produce."""
    stored = _a_stored_proposed_event(cs, seeded)
    tampered = "-" + uuid4().hex[1:]
    assert len(tampered) == 32
    entry = LogEntry(stored.id, tampered, stored.originator_version, stored.topic, stored.state)

    with pytest.raises(ValueError):  # what the mapper's path does with this id
        UUID(tampered)

    decode = ProjectionDecoder(cs.app.mapper)
    try:
        event: Any = decode(entry)
    except Exception:
        return  # refused, like the mapper: correct
    pytest.fail(
        f"the fast path decoded an id the mapper refuses: originator_id.int = "
        f"{event.originator_id.int} ({event.originator_id})"
    )


def test_decoder_refuses_a_state_that_is_itself_one_transcoded_value_as_the_mapper_does(cs, seeded):
    """The JSON transcoder's object hook applies to the OUTERMOST object too: a stored state of
    exactly ``{"_type_": ..., "_data_": ...}`` decodes to that value (a UUID here), which the
    mapper then cannot use as an event's state, and it raises. ``_walk`` revives only what is
    below the top level, so the fast path builds an event whose attributes are ``_type_`` and
    ``_data_``: a tampered record projected instead of failing closed."""
    stored = _a_stored_proposed_event(cs, seeded)
    state = json.dumps({"_type_": "uuid_hex", "_data_": uuid4().hex}).encode()
    entry = LogEntry(stored.id, stored.originator_id, 1, stored.topic, state)
    notification = Notification(
        id=entry.id,
        originator_id=UUID(str(entry.originator_id)),
        originator_version=1,
        topic=entry.topic,
        state=state,
    )
    with pytest.raises(Exception):  # noqa: B017 - whatever the mapper raises
        cs.app.mapper.to_domain_event(notification)

    decode = ProjectionDecoder(cs.app.mapper)
    try:
        event: Any = decode(entry)
    except Exception:
        return  # refused, like the mapper: correct
    pytest.fail(f"the fast path decoded what the mapper refuses: {vars(event)!r}")


# -- 2. Writer process dying between batches ---------------------------------------------------


@pytest.mark.parametrize("together", [False, True], ids=["rebuild", "rebuild_together"])
def test_a_writer_that_dies_between_batches_stops_the_rebuild_with_its_message(
    cs, seeded, monkeypatch, together
):
    """The writer process ends after answering one batch and before the next is sent (OOM
    killer, a crash after its reply...). ``submit`` then writes into a broken pipe: the
    BrokenPipeError escapes as a plain OSError (the CLI prints "Internal error") instead of
    the ProjectionStoppedError the runner promises for a writer that ended unexpectedly."""
    _some_history(cs, seeded)
    real_wait = WriterProcess.wait

    def wait_then_die(self: WriterProcess) -> None:
        was_pending = self._pending
        real_wait(self)
        if was_pending:  # the batch in flight committed; now the process goes away
            self._process.kill()
            self._process.wait()

    monkeypatch.setattr(WriterProcess, "wait", wait_then_die)
    runners = cs.projection_runners(["audit_trail"], batch_size=2)
    assert runners[0].head() >= 6

    def rebuild() -> None:
        if together:
            rebuild_together(runners, parallel=True)
        else:
            runners[0].rebuild(parallel=True)

    with pytest.raises(ProjectionStoppedError, match="writer process ended unexpectedly"):
        rebuild()


@pytest.mark.parametrize("together", [False, True], ids=["rebuild", "rebuild_together"])
def test_a_rebuild_another_runner_writes_into_never_commits_a_batch_over_its_rows(
    cs, seeded, monkeypatch, together
):
    """A rebuild does not look for rows no batch of its own wrote (``KeyFilter``), which is
    only right while nothing else writes its tables. Another runner catches the emptied
    projections up while the rebuild's first batch is on its way to the writer: that batch,
    prepared as if the tables were empty, must not be committed over the other runner's rows.
    Alone, the rebuild carries on from where the other runner got to; together, it stops and
    says why. Either way the tables are those of the whole log."""
    _some_history(cs, seeded)
    catch_up_all(cs)
    complete = snapshot(cs)
    names = ["audit_trail", "attention", "handback"]
    submit = WriterProcess.submit
    joined: list[bool] = []

    def another_runner_first(self, position, last, batches):
        if not joined:
            joined.append(True)
            for other in cs.projection_runners(names):
                other.catch_up()
        submit(self, position, last, batches)

    monkeypatch.setattr(WriterProcess, "submit", another_runner_first)
    runners = cs.projection_runners(names, batch_size=3)
    if together:
        with pytest.raises(ProjectionStoppedError, match="advanced by another runner"):
            rebuild_together(runners, parallel=True)
    else:
        for runner in runners:
            joined.clear()
            assert runner.rebuild(parallel=True) >= 0
    assert joined
    assert snapshot(cs) == complete


# -- 3. Writer process importing from the current directory ------------------------------------


def test_the_writer_process_does_not_import_modules_from_the_working_directory(
    cs, seeded, tmp_path, monkeypatch
):
    """``python -m countersign.infrastructure.projection_engine.writer`` puts the CURRENT
    DIRECTORY first on the child's sys.path (the ``countersign`` console script does not do
    that for the parent). Run
    from a directory that holds a ``projections`` package (any project of that name, or a
    planted one in a shared directory), the writer imports and runs that code instead of
    countersign's; the rebuild then fails although a rebuild in-process works."""
    workdir = tmp_path / "elsewhere"
    (workdir / "projections").mkdir(parents=True)
    marker = workdir / "EXECUTED"
    (workdir / "projections" / "__init__.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "raise ImportError('not countersign projections')\n"
    )
    monkeypatch.chdir(workdir)
    runner = cs.projection_runners(["audit_trail"], batch_size=2)[0]

    try:
        processed = runner.rebuild(parallel=True)
    except (ProjectionStoppedError, OSError) as error:
        pytest.fail(f"rebuild from another directory failed: {error!r}")
    finally:
        ran_foreign_code = marker.exists()
    assert not ran_foreign_code, "the writer process ran code from the working directory"
    assert processed == runner.head()


# -- 4. rebuild_together: writer process left running ------------------------------------------


def test_rebuild_together_ends_the_writer_even_when_creating_indexes_fails(cs, seeded, monkeypatch):
    """When recreating the indexes raises too (the database went away, a lock timeout), the
    writer process must still be closed, not left blocked on its stdin with both pipes open."""
    _some_history(cs, seeded, proposals=1)
    writers: list[WriterProcess] = []
    real_init = WriterProcess.__init__

    def recording_init(self: WriterProcess, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        writers.append(self)

    def failing_create_indexes(runners: list[ProjectionRunner]) -> None:
        raise RuntimeError("could not create indexes")

    monkeypatch.setattr(WriterProcess, "__init__", recording_init)
    runners = [*cs.projection_runners(["audit_trail"], batch_size=2)]
    runners.append(ProjectionRunner(cs.app, cs.sql, _Fragile(), 2))  # stops the rebuild
    monkeypatch.setattr(together, "create_indexes", failing_create_indexes)

    with pytest.raises(RuntimeError, match="could not create indexes"):
        rebuild_together(runners, parallel=True)

    assert len(writers) == 1
    process = writers[0]._process
    try:
        ended = True
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            ended = False
        assert ended, "the writer process is still running after rebuild_together returned"
    finally:
        writers[0].close()


# -- 5. The stopped message names the aggregate by its id -------------------------------------


def test_a_stopped_projection_names_the_aggregate_as_users_know_its_id(cs, seeded):
    """Before these commits the message named the event's aggregate by its UUID (the id shown
    everywhere else: CLI, API, pages). Runners now read SQLite's raw log rows, whose
    originator id is 32 hex digits: the message on SQLite names an id nobody can look up."""
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])
    cs.proposals.approve(proposal_id, AVA)
    runner = ProjectionRunner(cs.app, cs.sql, _Fragile(), batch_size=1)

    with pytest.raises(ProjectionStoppedError) as stopped:
        runner.catch_up()

    assert str(UUID(str(proposal_id))) in str(stopped.value)


# -- Batch-wide work: roll-ups summed per batch ----------------------------------------------


@pytest.mark.parametrize("parallel", [False, True], ids=["in_process", "writer_process"])
def test_batch_wide_work_leaves_the_rows_of_one_event_per_batch(cs, seeded, parallel):
    """``analytics`` sums a batch's roll-up moves and writes them at its end (``end_batch``):
    rebuilt in batches of many events, every projection's tables are those of one event per
    batch."""
    _some_history(cs, seeded, proposals=6)
    form = seeded["broadcast_forms"]["granite"]
    for _ in range(3):  # declined ones move from pending to declined, with no execution
        proposal_id = propose_on(cs, form, DRAFT_REQUEST, operation=DRAFT)
        cs.proposals.decline(proposal_id, AVA, "not now")
    for runner in cs.projection_runners(batch_size=1):
        runner.rebuild(parallel=False)
    one_by_one = snapshot(cs)
    assert one_by_one["daily_outcomes"]
    rebuild_together(cs.projection_runners(batch_size=500), parallel=parallel)
    assert snapshot(cs) == one_by_one
