"""How many events a projection batch reads: ``ProjectionRunner.BATCH_SIZE`` unless the caller
(or the command line's ``--batch-size``) says otherwise, and a rebuild through the writer
process sends its batches of that many."""

from __future__ import annotations

import pytest
from countersign.infrastructure.entrypoints.cli.parser import build_parser
from countersign.infrastructure.projection_engine.runner import ProjectionRunner
from countersign.infrastructure.projection_engine.together import rebuild_together

from tests.test_projections import snapshot
from tests.test_rebuild_pipeline import _interleaved_history, _rebuilt_in_process


def test_runners_read_the_default_batch_unless_given_another(cs):
    assert {runner.batch_size for runner in cs.projection_runners()} == {
        ProjectionRunner.BATCH_SIZE
    }
    assert {runner.batch_size for runner in cs.projection_runners(batch_size=7)} == {7}


@pytest.mark.parametrize("command", ["rebuild", "run"])
def test_the_command_line_leaves_the_batch_to_the_default_unless_told(command):
    parser = build_parser()
    assert parser.parse_args(["projections", command]).batch_size is None
    told = parser.parse_args(["projections", command, "--batch-size", "7"])
    assert told.batch_size == 7


def test_a_rebuild_through_the_writer_process_sends_batches_of_the_default_size(
    cs, seeded, monkeypatch
):
    """The default, whatever it is, is what a rebuild reads and sends a batch (the progress
    it reports), and the rows are those of a rebuild in one batch."""
    _interleaved_history(cs, seeded)
    expected = _rebuilt_in_process(cs)
    monkeypatch.setattr(ProjectionRunner, "BATCH_SIZE", 3)
    sizes: list[int] = []
    events = rebuild_together(cs.projection_runners(), sizes.append, parallel=True)
    assert events == sum(sizes) > 6
    assert set(sizes[:-1]) == {3}
    assert 1 <= sizes[-1] <= 3
    assert snapshot(cs) == expected
