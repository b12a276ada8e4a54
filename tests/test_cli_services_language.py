"""The services' and the data's commands in the reader's language (``--language fr``):
``projections status``, ``rebuild`` and ``run``, ``audit verify`` and ``audit anchor``, the
``worker``, ``serve``'s lines and the long commands' progress; English by default. And a
service's last line, as it stops, is a JSON object like its others under JSON logs."""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from countersign.infrastructure.observability import logs

from tests.conftest import AVA
from tests.http_load import START_TIMEOUT, STOP_TIMEOUT, Deployment, free_port
from tests.support.proposing import propose
from tests.test_audit_verify import _delete
from tests.test_projections_across_releases import EARLIER, LATER, _built_by


@pytest.fixture
def command(command, seeded):
    """``countersign`` in this process (tests/conftest.py), on the seeded clubs."""
    return command


@pytest.fixture
def json_logs(monkeypatch) -> Iterator[None]:
    """COUNTERSIGN_LOG_FORMAT=json for the commands run; the process's logging put back."""
    monkeypatch.setenv(logs.LOG_FORMAT_ENV, "json")
    root = logging.getLogger()
    level = root.level
    yield
    for handler in [h for h in root.handlers if isinstance(h, logs._OurHandler)]:
        root.removeHandler(handler)
    root.setLevel(level)


def test_projections_status_and_rebuild_answer_in_french(command):
    _, status_fr, _ = command("projections", "status", "--language", "fr")
    _, status_en, _ = command("projections", "status")
    _, rebuilt_fr, progress_fr = command(
        "projections", "rebuild", "audit_trail", "--language", "fr"
    )
    _, rebuilt_en, progress_en = command("projections", "rebuild", "audit_trail")

    assert "retard" in status_fr
    assert "lag" not in status_fr
    assert "lag" in status_en
    assert rebuilt_fr.startswith("audit_trail reconstruite(s) à partir de ")
    assert "événements/s, le journal lu une seule fois pour toutes" in rebuilt_fr
    assert rebuilt_en.startswith("rebuilt audit_trail from ")
    # The progress line: its label and its unit.
    assert progress_fr.startswith("reconstruction de audit_trail : ")
    assert " événements, " in progress_fr
    assert progress_en.startswith("rebuild audit_trail: ")
    assert " events, " in progress_en


def test_tables_another_release_built_are_said_in_french(command, cs):
    for runner in cs.projection_runners(["audit_trail", "browser_view"]):
        runner.catch_up()
    _built_by(cs, {"browser_view": LATER, "audit_trail": EARLIER})

    _, said, _ = command("projections", "status", "audit_trail", "browser_view", "--language", "fr")

    assert "construite par une version ultérieure (v999 ; celle-ci a v" in said
    assert "cette version n'y touchera pas" in said
    assert "construite par une version antérieure (v0) : cette version supprime ses tables" in said


def test_audit_verify_says_its_verdict_in_french(command, cs, seeded):
    _, sound_fr, _ = command("audit", "verify", "--language", "fr")
    _, sound_en, _ = command("audit", "verify")
    proposal_id = propose(cs, seeded, "refund-ok")
    assert cs.proposals.approve(proposal_id, AVA).status == "succeeded"
    _delete(cs, proposal_id, 3)
    broken_fr = command("audit", "verify", "--language", "fr")
    broken_en = command("audit", "verify")

    assert sound_fr.startswith("audit verify : OK, ")
    assert "chaque maillon de la chaîne de hachage tient." in sound_fr
    assert "every hash-chain link holds." in sound_en
    assert broken_fr[0] == broken_en[0] == 5
    assert (
        "audit verify : ROMPUE : 1 proposition touchée, à son premier maillon rompu :"
        in broken_fr[2]
    )
    assert (
        f"  proposition {proposal_id} version 3 : événement retiré (trou dans les versions)"
        in (broken_fr[2])
    )
    assert "audit verify: BROKEN: 1 proposal affected" in broken_en[2]


def test_audit_anchor_and_verify_against_it_in_french(command, tmp_path):
    anchor = tmp_path / "anchor.jsonl"
    status, _, made = command("audit", "anchor", "--out", str(anchor), "--language", "fr")
    _, checked, _ = command("audit", "verify", "--anchor", str(anchor), "--language", "fr")
    again = command("audit", "anchor", "--out", str(anchor), "--language", "fr")
    _, _, made_en = command("audit", "anchor", "--out", str(tmp_path / "en.jsonl"))

    assert status == 0
    assert made.startswith("audit anchor : 0 proposition et ")
    assert " autres flux (" in made
    assert " événements) à la position " in made
    assert "non signée (aucune clé de scellement n'est configurée" in made
    assert f"écrite dans {anchor} ; gardez-la hors de portée" in made
    assert made_en.startswith("audit anchor: 0 proposals and ")
    assert "written to " in made_en
    assert " Ancre : chaque flux tel qu'ancré à la position " in checked
    assert "NON SIGNÉE, acceptée seulement parce que les ancres signées ne sont pas" in checked
    assert "Aucun événement n'a été enregistré après elle" in checked
    assert again[0] == 2
    assert "existe : une ancre se garde, elle n'est jamais remplacée" in again[2]


def test_the_worker_stops_in_french(command):
    _, fr, _ = command("worker", "--once", "--language", "fr")
    _, en, _ = command("worker", "--once")

    assert fr.strip() == (
        "worker : arrêté proprement après 1 passage(s) ; reconcile : 0 réglée(s), "
        "expire : 0 expirée(s), notify : 0 livrée(s)"
    )
    assert en.strip().startswith("worker: stopped cleanly after 1 pass(es); reconcile settled 0")


def test_with_json_logs_a_services_last_line_is_a_json_object(command, json_logs):
    status, out, err = command("worker", "--once")
    with_document = command("worker", "--once", "--json")

    assert (status, out) == (0, "")
    last = json.loads(err.splitlines()[-1])
    assert last["message"].startswith("worker: stopped cleanly after 1 pass(es)")
    assert {"time", "level", "logger", "process"} <= last.keys()
    # --json still prints its document on stdout; the line beside it is JSON too.
    assert json.loads(with_document[1])["stopped"] is True
    assert json.loads(with_document[2].splitlines()[-1])["message"].startswith("worker: stopped")


def _said(log: Path, start: str) -> list[dict[str, object]]:
    """The service's JSON lines once one begins with ``start`` (waited for, the service
    starting)."""
    for _ in range(600):
        lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
        if any(str(line["message"]).startswith(start) for line in lines):
            return lines
        time.sleep(0.1)
    raise AssertionError(f"{start!r} never said:\n{log.read_text()}")


@pytest.mark.slow
def test_serve_and_projections_run_start_and_stop_in_french_as_json_lines(
    database_url, tmp_path, seeded
):
    deployment = Deployment(database_url, tmp_path, env={"COUNTERSIGN_LOG_FORMAT": "json"})
    try:
        deployment.serve(1, "--language", "fr", "--no-sweepers")
        runner = deployment._start("projections", "projections", "run", "--language", "fr")
        notify = deployment._start("notify", "notify", "run", "--language", "fr")
        port = str(free_port())
        mcp = deployment._start("mcp", "mcp", "--http", "--port", port, "--language", "fr")
        _said(runner.log, "projections : suivi du journal pour ")
        _said(notify.log, "notify : livraison de la boîte d'envoi toutes les 5 s (Ctrl-C arrête)")
        _said(mcp.log, f"countersign : MCP en HTTP diffusable à http://127.0.0.1:{port}/mcp")
    finally:
        problems = deployment.stop()

    assert problems == []
    mcp_said = [json.loads(x) for x in mcp.log.read_text().splitlines() if x.startswith("{")]
    assert mcp_said[-1]["message"] == "countersign : serveur MCP arrêté."
    served = [json.loads(x) for x in (tmp_path / "serve.log").read_text().splitlines()]
    messages = [str(line["message"]) for line in served]
    assert messages[0].startswith("countersign : en service sur http://localhost:")
    assert "cookies sécurisés désactivés" in messages[0]
    assert messages[1].startswith("countersign : aucun balayeur ne tourne dans ce processus")
    assert messages[-1] == "countersign : serveur arrêté."
    ran = [json.loads(x) for x in runner.log.read_text().splitlines()]
    assert str(ran[-1]["message"]).startswith("projections : arrêtées proprement ; ")
    notified = [json.loads(x) for x in notify.log.read_text().splitlines()]
    assert str(notified[-1]["message"]).startswith("notify : arrêté proprement ; 0 nouvelle(s)")


def test_notify_answers_in_french(command):
    _, fr, _ = command("notify", "run", "--once", "--language", "fr")
    _, en, _ = command("notify", "run", "--once")

    assert fr.strip().startswith("notify : 0 nouvelle(s) livraison(s) ; 0 tentée(s) : 0 livrée(s)")
    assert en.strip().startswith("notify: 0 new deliveries; 0 attempted: 0 delivered")


def test_the_sweepers_passes_are_logged_in_french(caplog):
    from countersign.infrastructure.sweepers import PassLog, PassReport

    class Named:
        def __init__(self, name: str, verb: str) -> None:
            self.name, self.verb = name, verb

    work = [Named("reconcile", "settled"), Named("notify", "delivered")]
    passes = PassLog(work, language="fr")  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="countersign.worker"):
        passes(PassReport(4, {}, ["reconcile", "notify"], 15.01))
        passes(PassReport(5, {"notify": 0}, ["reconcile"], 7.6))

    assert [r.getMessage() for r in caplog.records] == [
        "worker : passage 4 : en échec : reconcile, notify (15,01 s)",
        "worker : passage 5 : notify : 0 livrée(s) ; en échec : reconcile (7,60 s)",
    ]


def test_a_skip_refused_says_why_in_french(command):
    nowhere = command("projections", "skip", "999999", "--reason", "lost", "--language", "fr")
    no_reason = command("projections", "skip", "1", "--reason", " ", "--language", "fr")
    english = command("projections", "skip", "999999", "--reason", "lost")

    assert nowhere[0] == no_reason[0] == english[0] == 2
    assert "erreur : le journal n'a aucun événement à la position 999999" in nowhere[2]
    assert "erreur : dites pourquoi l'événement est sauté : --reason TEXTE" in no_reason[2]
    assert "error: the log has no event at position 999999" in english[2]


def test_a_projection_stopped_at_an_unreadable_event_is_said_in_french(command, cs, seeded):
    from tests.test_projection_skips import _damaged

    position, _ = _damaged(cs, seeded)
    _, status_fr, _ = command("projections", "status", "browser_view", "--language", "fr")
    stopped = command("projections", "rebuild", "browser_view", "--language", "fr")
    _, status_en, _ = command("projections", "status", "browser_view")

    said = f"la projection 'browser_view' s'est arrêtée à la notification {position}"
    assert said in status_fr
    assert f"'countersign projections skip {position} --reason TEXTE' le fait passer" in status_fr
    assert stopped[0] == 1
    assert said in stopped[2]
    assert "Rien après elle n'a été appliqué" in stopped[2]
    assert f"projection 'browser_view' stopped at notification {position}" in status_en


def test_an_anchor_file_refused_says_why_in_french(command, tmp_path):
    not_one = tmp_path / "notes.txt"
    not_one.write_text("hello\n")
    cut = tmp_path / "cut.jsonl"
    assert command("audit", "anchor", "--out", str(cut))[0] == 0
    cut.write_bytes(cut.read_bytes()[:-30])

    refused = command("audit", "verify", "--anchor", str(not_one), "--language", "fr")
    incomplete = command("audit", "verify", "--anchor", str(cut), "--language", "fr")
    english = command("audit", "verify", "--anchor", str(not_one))

    assert refused[0] == incomplete[0] == english[0] == 2
    assert "erreur : --anchor : notes.txt n'est pas une ancre (sa première ligne" in refused[2]
    assert "gardée hors de portée de ceux qui écrivent dans la base de données" in incomplete[2]
    assert "error: --anchor: notes.txt is not an anchor (its first line" in english[2]


def test_an_anchor_of_another_format_is_refused_in_french(command, tmp_path):
    later = tmp_path / "later.jsonl"
    assert command("audit", "anchor", "--out", str(later))[0] == 0
    lines = later.read_bytes().split(b"\n")
    lines[0] = lines[0].replace(b'"countersign_anchor":2', b'"countersign_anchor":3')
    later.write_bytes(b"\n".join(lines))

    status, _, said = command("audit", "verify", "--anchor", str(later), "--language", "fr")
    english = command("audit", "verify", "--anchor", str(later))

    assert status == english[0] == 2
    assert (
        "--anchor : later.jsonl est une ancre d'un autre format (3, cette version lit 1 et 2)"
    ) in said
    assert (
        "later.jsonl is an anchor of another format (3, this release reads 1 and 2)" in (english[2])
    )


def test_a_proposal_not_as_anchored_is_said_in_french(command, cs, seeded, tmp_path):
    proposal_id = propose(cs, seeded, "refund-ok")
    assert cs.proposals.approve(proposal_id, AVA).status == "succeeded"
    anchor = tmp_path / "anchor.jsonl"
    assert command("audit", "anchor", "--out", str(anchor))[0] == 0
    _delete(cs, proposal_id, 5)
    _delete(cs, proposal_id, 4)

    status, _, said = command("audit", "verify", "--anchor", str(anchor), "--language", "fr")

    assert status == 5
    assert "audit verify : PAS COMME ANCRÉ : 1 proposition de l'ancre faite le " in said
    assert f"  proposition {proposal_id} : tronquée : événements 4 à 5 supprimé(s)" in said


def test_audit_verify_anchor_progress_is_said_in_french(command, tmp_path, monkeypatch):
    from countersign.infrastructure.entrypoints.cli import anchors

    anchor = tmp_path / "anchor.jsonl"
    assert command("audit", "anchor", "--out", str(anchor))[0] == 0
    monkeypatch.setattr(anchors, "QUIET_FOR", 0.0)  # shown however short the check

    status, _, progress = command("audit", "verify", "--anchor", str(anchor), "--language", "fr")

    assert status == 0
    assert "audit verify --anchor : événements après elle : " in progress
    assert "audit verify --anchor : événements des autres flux après elle : " in progress
    assert " positions du journal/s" in progress
    assert "after it" not in progress


def test_what_an_anchor_does_not_cover_is_listed_in_french(command, cs, seeded, tmp_path):
    anchor = tmp_path / "anchor.jsonl"
    assert command("audit", "anchor", "--out", str(anchor))[0] == 0
    proposal_id = propose(cs, seeded, "refund-ok")

    status, said, _ = command("audit", "verify", "--anchor", str(anchor), "--language", "fr")

    assert status == 0
    assert " Non couvert par elle : " in said
    assert f"  proposition {proposal_id} : créé après elle (événement" in said
    assert f"  proposal {proposal_id}" not in said


def test_mcp_over_http_stops_cleanly_on_sigterm(database_url, tmp_path, seeded):
    """SIGTERM stops ``mcp --http`` as it stops ``serve``: exit 0 and its stop line (it was
    killed by the signal, status -15, and said nothing)."""
    deployment = Deployment(database_url, tmp_path)
    port = free_port()
    mcp = deployment._start("mcp", "mcp", "--http", "--port", str(port))
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers(f"http://127.0.0.1:{port}/mcp"):
            assert mcp.process.poll() is None, mcp.tail()
            assert time.monotonic() < deadline, f"mcp --http never served:\n{mcp.tail()}"
            time.sleep(0.2)
        mcp.process.send_signal(signal.SIGTERM)
        status = mcp.process.wait(timeout=STOP_TIMEOUT)
    finally:
        deployment.stop()

    said = mcp.log.read_text()
    assert status == 0, said
    assert said.splitlines()[-1] == "countersign: MCP server stopped."
    assert "Traceback" not in said


def _answers(address: str) -> bool:
    """Whether the server at ``address`` answers (401 without a token: it serves)."""
    try:
        return httpx.get(address, timeout=5).status_code == 401
    except httpx.TransportError:
        return False


def test_a_stop_signal_before_the_server_takes_the_signals_ends_its_start():
    """``serve`` and ``mcp --http`` say they serve, then uvicorn takes SIGTERM over: a stop
    in between (as an operator's, or a test's, right after that line) ends the start, where
    a handler that did nothing let the server go on to serve, stopped by nothing. The
    handler before it is back afterwards."""
    from countersign.infrastructure.entrypoints.cli import admin

    before = signal.getsignal(signal.SIGTERM)
    went_on = False
    with admin._stopped_by_signals() as stop:
        signal.raise_signal(signal.SIGTERM)
        went_on = True  # the server's start, which must not be reached

    assert (went_on, stop.signalled) == (False, True)
    assert signal.getsignal(signal.SIGTERM) is before
