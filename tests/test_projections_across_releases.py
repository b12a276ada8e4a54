"""What the operator's commands do with projections other releases built: ``projections
status`` reads them without touching them and lists every one, and a rebuild that another
release's process claims the tables from stops instead of taking them back
(``infrastructure/projection_engine/standing.py``, ``releases.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError
from countersign.infrastructure.projection_engine.together import rebuild_together
from countersign.projections import PROJECTIONS

from tests.support.proposing import propose_on

#: A later release's fingerprint, an earlier one's, and another build of this version's.
LATER = "v999-0123456789abcdef"
EARLIER = "v0-0123456789abcdef"


def _other_build(name: str) -> str:
    return f"v{PROJECTIONS[name].version}-0123456789abcdef"


def _stored(cs) -> dict[str, Any]:
    """Everything a projection's setup could change: fingerprints, tracking rows (their
    times too), and each projection table's row count."""
    with cs.sql.reading() as cursor:
        return {
            "schemas": sorted(
                cursor.execute(
                    "SELECT projection, fingerprint, updated_at FROM projection_schemas"
                ).fetchall()
            ),
            "tracking": sorted(
                cursor.execute(
                    "SELECT projection, position, updated_at FROM projection_tracking"
                ).fetchall()
            ),
            "rows": {
                table.name: cursor.execute(f"SELECT COUNT(*) FROM {table.name}").fetchone()
                for projection in PROJECTIONS.values()
                for table in projection.tables
            },
        }


def _built_by(cs, fingerprints: dict[str, str]) -> None:
    with cs.sql.transaction() as cursor:
        for name, fingerprint in fingerprints.items():
            cursor.execute(
                "UPDATE projection_schemas SET fingerprint = ? WHERE projection = ?",
                (fingerprint, name),
            )


@pytest.fixture
def built(cs, seeded):
    """Every projection caught up over a few proposals, by this release's code."""
    for order in ("refund-ok", "refund-stale"):
        propose_on(cs, seeded["orders"][order])
    for runner in cs.projection_runners():
        runner.catch_up()
    return cs


def _status(cs, capsys, *more: str) -> tuple[int, str, str]:
    status = main(["projections", "status", *more, "--database", cs.settings.database_url])
    out, err = capsys.readouterr()
    return status, out, err


def test_status_lists_every_projection_whichever_release_built_it_and_changes_nothing(
    built, capsys
):
    """Before, status made a runner per projection: it stopped at the first projection a
    later release built (exit 1, the others not shown)."""
    cs = built
    _built_by(
        cs,
        {
            "browser_view": LATER,
            "audit_trail": EARLIER,
            "handback": _other_build("handback"),
        },
    )
    before = _stored(cs)

    status, out, err = _status(cs, capsys)

    assert (status, err) == (0, "")
    lines = out.splitlines()
    for name in PROJECTIONS:
        assert any(line.startswith(f"{name} ") for line in lines), name
    after_later = lines[[line.split()[0] for line in lines].index("browser_view") + 1]
    assert "built by a later release (v999; this one has v" in after_later
    assert "this release will not touch it" in after_later
    assert "countersign projections rebuild browser_view" in after_later
    assert "built by an earlier release (v0)" in out
    assert "built by another build of countersign with the same projection version" in out
    assert "Traceback" not in out

    status, out, _ = _status(cs, capsys, "--json")
    assert status == 0
    states = {document["name"]: document for document in json.loads(out)}
    assert set(states) == set(PROJECTIONS)
    assert states["browser_view"]["state"] == "built_by_later_release"
    assert states["browser_view"]["built_version"] == 999
    assert states["browser_view"]["lag"] == 0  # the later release's position, as stored
    assert states["audit_trail"]["state"] == "built_by_earlier_release"
    assert states["handback"]["state"] == "built_by_other_build"
    assert states["attention"]["state"] == "current"
    assert states["attention"]["note"] is None
    assert _stored(cs) == before


def test_status_leaves_an_earlier_releases_tables_as_they_are(built, capsys):
    """Before, status set each projection up: it dropped the tables an earlier release built
    and set their position back to 0, as if the operator had asked for a rebuild."""
    cs = built
    _built_by(cs, {"audit_trail": EARLIER})
    before = _stored(cs)

    status, out, _ = _status(cs, capsys, "audit_trail")

    assert status == 0
    assert _stored(cs) == before
    assert before["rows"]["audit_events"][0] > 0
    assert "built by an earlier release (v0)" in out


def test_status_of_projections_no_runner_set_up_says_not_built_and_sets_none_up(cs, capsys):
    """Projections no process has set up yet (no tracking row, no fingerprint): every one
    not built, and status records none (before, it set each one up)."""
    for runner in cs.projection_runners():
        runner.setup()  # the tables exist, whatever the fixture did
    with cs.sql.transaction() as cursor:
        cursor.execute("DELETE FROM projection_tracking")
        cursor.execute("DELETE FROM projection_schemas")
    before = _stored(cs)

    status, out, _ = _status(cs, capsys, "--json")

    assert status == 0
    assert _stored(cs) == before
    assert {document["state"] for document in json.loads(out)} == {"not_built"}


def _later_audit_trail() -> Any:
    """The audit trail as a later release has it: the same tables, a higher version."""
    return type("LaterAuditTrail", (type(PROJECTIONS["audit_trail"]),), {"version": 999})()


def _audit_stored(cs) -> tuple[Any, ...]:
    with cs.sql.reading() as cursor:
        return (
            cursor.execute(
                "SELECT fingerprint FROM projection_schemas WHERE projection = 'audit_trail'"
            ).fetchone(),
            cursor.execute(
                "SELECT position FROM projection_tracking WHERE projection = 'audit_trail'"
            ).fetchone(),
            cursor.execute("SELECT COUNT(*) FROM audit_events").fetchone(),
        )


@pytest.mark.parametrize("parallel", [False, True], ids=["in_process", "writer_process"])
@pytest.mark.parametrize("claim", ["fingerprint", "later_runner"])
@pytest.mark.parametrize("together", [False, True], ids=["alone", "together"])
def test_a_take_over_rebuild_of_one_projection_stops_once_another_release_claims_it(
    cs, seeded, parallel, claim, together
):
    """An operator's rebuild of one projection (taking the tables over) while a process of
    the later release still runs: that one claims the tables again during the rebuild. The
    rebuild stops there with one line and leaves the tables as the later release has them.
    Before, the race it met (in its writer process or in this one) sent it on in this
    process, whose next position read set the tables up again under its take-over: it
    dropped the later release's tables and rebuilt them for its own code, and each release
    went on dropping the other's. ``rebuild_together`` (the command's) stopped already, but
    said another runner of this release had moved the projection on."""
    for _ in range(3):
        propose_on(cs, seeded["orders"]["refund-ok"])
    [runner] = cs.projection_runners(["audit_trail"], batch_size=5, take_over=True)
    claimed: list[tuple[Any, ...]] = []

    def later_release_claims(count: int) -> None:
        if claimed:
            return
        if claim == "fingerprint":  # as in test_projection_upgrades.py, position kept
            with cs.sql.transaction() as cursor:
                cursor.execute(
                    "UPDATE projection_schemas SET fingerprint = ? WHERE projection = ?",
                    (LATER, "audit_trail"),
                )
        else:  # a later release's runner starts: it drops the tables and catches them up
            from countersign.infrastructure.projection_engine.runner import ProjectionRunner

            ProjectionRunner(cs.app, cs.sql, _later_audit_trail()).catch_up()
        claimed.append(_audit_stored(cs))

    def rebuild() -> None:
        if together:  # as `countersign projections rebuild audit_trail` does
            rebuild_together([runner], later_release_claims, parallel=parallel)
        else:
            runner.rebuild(later_release_claims, parallel=parallel)

    with pytest.raises(ProjectionStoppedError) as stopped:
        rebuild()

    said = str(stopped.value)
    assert "was taken by a process of another release of countersign during the rebuild" in said
    assert "\n" not in said
    assert claimed == [_audit_stored(cs)]  # nothing written over what the later release has
    assert claimed[0][0][0] != PROJECTIONS["audit_trail"].fingerprint()


def test_a_skip_during_an_upgrade_leaves_the_audit_trails_tables_to_their_release(
    built, seeded, capsys
):
    """``projections skip`` decodes the event with a runner's decoder: it made an audit
    trail runner, which set the audit trail up. During an upgrade that stopped the skip at
    a later release's audit trail (exit 1), and dropped an earlier release's."""
    from tests.test_projection_skips import _damaged

    cs = built
    position, _ = _damaged(cs, seeded)
    for fingerprint in (LATER, EARLIER):
        _built_by(cs, {"audit_trail": fingerprint})
        before = _stored(cs)
        with cs.sql.transaction() as cursor:
            cursor.execute("DELETE FROM projection_skips")

        status = main(
            [
                *("projections", "skip", str(position), "--reason", "backup lost"),
                *("--database", cs.settings.database_url),
            ]
        )

        out, err = capsys.readouterr()
        assert (status, err) == (0, ""), (fingerprint, err)
        assert f"every projection passes notification {position}" in out
        assert _stored(cs) == before


def test_a_projections_run_stopped_beside_a_later_release_says_it_stopped_cleanly(built):
    """Stopping `projections run` reads where each projection stands, for its last line. It
    read that with each runner's status(), which set a projection up again when it found
    other code's tables: one a later release built meanwhile ended the command there, exit
    1 with that projection's stop, instead of "stopped cleanly"."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    cs = built
    command = [
        str(Path(sys.executable).with_name("countersign")),
        *("projections", "run", "--json", "--database", cs.settings.database_url),
    ]
    env = {**os.environ, "COUNTERSIGN_LOG_LEVEL": "WARNING"}
    runner = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert runner.stderr is not None
        said = ""
        while "following the log" not in said:
            said = runner.stderr.readline()
            assert said, "projections run ended before it followed the log"
        _built_by(cs, {"browser_view": LATER})
        time.sleep(0.5)
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()

    assert runner.returncode == 0, err
    document = json.loads(out)
    assert document["stopped"] is True
    states = {status["name"]: status["state"] for status in document["status"]}
    assert states["browser_view"] == "built_by_later_release"
    assert states["audit_trail"] == "current"
    assert "Traceback" not in err
