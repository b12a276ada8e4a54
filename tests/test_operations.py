"""What an operator runs and watches: health and readiness, metrics, JSON logs, the worker.

In-process through the composed server application (``server.compose``: the API, the pages
and the operator's routes), and as real processes where the behaviour is a process's:
``serve --workers 2`` (metrics gathered from both workers, JSON logs, a clean stop) and
``countersign worker`` stopping on SIGTERM.
"""

from __future__ import annotations

import io
import json
import logging
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
from countersign.domain.proposal import Proposal
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender
from countersign.infrastructure.observability import logs
from countersign.infrastructure.server import compose
from countersign.infrastructure.settings import Settings, SettingsError
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import AVA
from tests.http_load import CLI, Deployment, load
from tests.http_load import _env as child_env
from tests.receivers import (
    allow_loopback,  # noqa: F401 - autouse
    free_port,
)
from tests.support.proposing import TO_ACCOUNT_CREDIT, propose

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(text: str) -> Samples:
    """Every sample of a scrape, by name and labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def client(cs: Countersign, seeded: dict[str, Any], monkeypatch) -> Iterator[TestClient]:
    # From this machine, as the operator's scrape is (/metrics answers nobody else), on a
    # port nothing forwards to (COUNTERSIGN_METRICS_LOCAL).
    monkeypatch.setenv("COUNTERSIGN_METRICS_LOCAL", "1")
    app = compose(cs, secure_cookies=False)
    with TestClient(app, raise_server_exceptions=False, client=("127.0.0.1", 50000)) as test:
        yield test


def _token(cs: Countersign) -> dict[str, str]:
    token = issue_token(
        cs, "granite", "ops-bot", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token
    return {"Authorization": f"Bearer {token}"}


def _catch_up(cs: Countersign) -> None:
    for runner in cs.projection_runners():
        runner.catch_up()


# -- health and readiness ---------------------------------------------------------------------


def test_healthz_answers_while_the_database_is_down_and_readyz_says_not_ready(
    client, cs, monkeypatch
):
    assert client.get("/readyz").status_code == 200

    def unreachable() -> Any:
        raise OSError("connection to server at 10.1.2.3 refused (secret-host)")

    monkeypatch.setattr(cs.sql, "reading", unreachable)
    live = client.get("/healthz")
    ready = client.get("/readyz")

    assert (live.status_code, live.json()) == (200, {"status": "ok"})
    assert ready.status_code == 503
    assert ready.json() == {
        "status": "not_ready",
        "checks": {"database": {"ok": False}, "projections": {"ok": False}},
    }
    assert "secret-host" not in ready.text  # the error is logged, never answered
    assert ready.headers["cache-control"] == "no-store"


def test_readyz_fails_while_a_projection_lags_past_the_limit_and_passes_once_caught_up(
    database_url, clock
):
    cs = bootstrap(Settings(database_url=database_url, ready_max_lag=5), clock=clock)
    try:
        with TestClient(compose(cs, secure_cookies=False)) as client:
            seed(cs)  # far more than five events, and no projection runner
            behind = client.get("/readyz")
            _catch_up(cs)
            caught_up = client.get("/readyz")
    finally:
        cs.close()

    assert behind.status_code == 503
    projections = behind.json()["checks"]["projections"]
    assert behind.json()["checks"]["database"] == {"ok": True}
    assert projections["ok"] is False
    assert projections["limit"] == 5
    assert projections["max_lag"] > 5
    assert set(projections["lag"]) >= {"browser_view", "audit_trail", "open_work"}
    assert caught_up.status_code == 200
    assert caught_up.json()["status"] == "ready"
    assert caught_up.json()["checks"]["projections"]["max_lag"] == 0


def test_readyz_fails_while_a_later_release_built_a_projection(client, cs):
    """During a rolling upgrade the later release's runner keeps the projection caught up,
    so no lag shows; but this process's pages and API answer 503 for it (its tables are not
    this release's code's): the balancer should stop sending it traffic."""
    _catch_up(cs)
    assert client.get("/readyz").status_code == 200
    with cs.sql.transaction() as cursor:
        cursor.execute(
            "UPDATE projection_schemas SET fingerprint = ? WHERE projection = ?",
            ("v999-0123456789abcdef", "browser_view"),
        )

    ready = client.get("/readyz")

    assert ready.status_code == 503
    projections = ready.json()["checks"]["projections"]
    assert projections["ok"] is False
    assert projections["max_lag"] == 0  # not lag: the later release keeps it caught up
    assert projections["built_by_later_release"] == ["browser_view"]
    assert client.get("/api/v1/inbox", headers=_token(cs)).status_code == 503


def test_readyz_fails_while_another_build_of_the_same_version_built_a_projection(client, cs):
    """Two builds of one projection version with other tables (a hotfix beside the build it
    replaces): a running process of this build that finds the other's tables stops that
    projection rather than take them back, so its pages and API answer 503; its readiness
    fails too, with its own reason, as for a later release's (before, it said ready)."""
    from countersign.projections import PROJECTIONS

    _catch_up(cs)
    token = _token(cs)
    assert client.get("/api/v1/inbox", headers=token).status_code == 200
    assert client.get("/readyz").status_code == 200
    version = PROJECTIONS["browser_view"].version
    with cs.sql.transaction() as cursor:
        cursor.execute(
            "UPDATE projection_schemas SET fingerprint = ? WHERE projection = ?",
            (f"v{version}-0123456789abcdef", "browser_view"),
        )

    ready = client.get("/readyz")

    assert ready.status_code == 503
    projections = ready.json()["checks"]["projections"]
    assert projections["ok"] is False
    assert projections["max_lag"] == 0
    assert projections["built_by_other_build"] == ["browser_view"]
    assert projections["built_by_later_release"] == []
    assert client.get("/api/v1/inbox", headers=token).status_code == 503


def test_a_serving_process_does_not_take_back_tables_another_build_claimed_after_its_start(
    client, cs
):
    """A serving process set every projection up at its start, but its pages' runners did
    not know it (``TablesInPlace``): the first page that read a projection set it up again,
    as a starting process does, and took back the tables another build of the same version
    had claimed since (which took them back in turn). It stops there now, as it does once a
    page has read the projection."""
    from countersign.projections import PROJECTIONS

    version = PROJECTIONS["browser_view"].version
    theirs = f"v{version}-0123456789abcdef"
    with cs.sql.transaction() as cursor:
        cursor.execute(
            "UPDATE projection_schemas SET fingerprint = ? WHERE projection = ?",
            (theirs, "browser_view"),
        )

    assert client.get("/api/v1/inbox", headers=_token(cs)).status_code == 503
    with cs.sql.reading() as cursor:
        stored = cursor.execute(
            "SELECT fingerprint FROM projection_schemas WHERE projection = 'browser_view'"
        ).fetchone()
    assert stored == (theirs,)


def test_a_zero_lag_limit_never_fails_readiness(database_url, clock):
    cs = bootstrap(Settings(database_url=database_url, ready_max_lag=0), clock=clock)
    try:
        with TestClient(compose(cs, secure_cookies=False)) as client:
            seed(cs)
            ready = client.get("/readyz")
    finally:
        cs.close()
    assert ready.status_code == 200
    assert ready.json()["checks"]["projections"]["max_lag"] > 0


def test_a_bad_lag_limit_is_refused_with_the_fix(monkeypatch):
    monkeypatch.setenv("COUNTERSIGN_READY_MAX_LAG", "lots")
    with pytest.raises(ValueError, match="COUNTERSIGN_READY_MAX_LAG must be a number of events"):
        Settings.from_env()


@pytest.mark.parametrize("rp_id", ["127.0.0.1", "10.0.0.5", "https://example.org"])
def test_a_passkey_domain_that_is_an_address_or_a_url_is_refused_with_the_fix(monkeypatch, rp_id):
    """The README said 127.0.0.1 is no valid passkey domain, and it was accepted silently:
    every passkey ceremony then failed in the browser."""
    monkeypatch.setenv("COUNTERSIGN_WEBAUTHN_RP_ID", rp_id)
    with pytest.raises(ValueError, match=r"must be a domain name such as example\.org"):
        Settings.from_env()
    monkeypatch.setenv("COUNTERSIGN_WEBAUTHN_RP_ID", "club.example.org")
    assert Settings.from_env().webauthn_rp_id == "club.example.org"


# -- metrics ----------------------------------------------------------------------------------


def test_every_metric_served_is_a_row_of_the_deploy_guides_metrics_table(client, cs, seeded):
    """An operator wiring alerts from docs/deploy.md met one on
    ``countersign_projection_position``, which the guide's table of metrics did not list.

    An approval and a provider call come first, so that the counters and the histogram are
    served whichever tests ran before in this process; prometheus_client serves each with a
    ``_created`` series (its start time), part of the metric the table names."""
    proposal_id = propose(cs, seeded, "refund-ok")
    approved = client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=_token(cs))
    assert approved.json()["result"] == "executed"
    guide = (Path(__file__).resolve().parents[1] / "docs" / "deploy.md").read_text()
    table = guide.split("## Metrics", 1)[1].split("\n\n| metric |", 1)[1].split("\n\n", 1)[0]
    rows = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    served = {
        family.name.removesuffix("_created")
        for family in text_string_to_metric_families(client.get("/metrics").text)
        if family.name.startswith("countersign_")
    }

    assert {"countersign_approve_seconds", "countersign_provider_calls"} <= served
    missing = {name for name in served if name not in rows and f"{name}_total" not in rows}
    assert missing == set(), f"served, not in docs/deploy.md's table: {sorted(missing)}"


def test_metrics_count_approvals_and_provider_calls_and_read_the_rest_from_the_database(
    client, cs, seeded
):
    auth = _token(cs)
    before = scrape(client.get("/metrics").text)
    ok = propose(cs, seeded, "refund-ok")
    lost = propose(cs, seeded, "refund-lost-response")
    pending = propose(cs, seeded, "account-credit", request=TO_ACCOUNT_CREDIT)
    answers = [
        client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=auth).json()["result"]
        for proposal_id in (ok, lost, ok)
    ]
    _catch_up(cs)
    response = client.get("/metrics")
    after = scrape(response.text)

    assert answers == ["executed", "executed", "already_completed"]
    assert response.headers["content-type"].startswith("text/plain; version=")

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("countersign_approve_seconds_count", result="executed") == 2
    assert delta("countersign_approve_seconds_count", result="already_completed") == 1
    payments = {"provider": "payments", "call": "perform"}
    assert delta("countersign_provider_calls_total", **payments, result="succeeded") == 1
    assert delta("countersign_provider_calls_total", **payments, result="lost") == 1
    assert value(after, "countersign_proposals", status="succeeded") == 1
    assert value(after, "countersign_proposals", status="reconciling") == 1
    assert value(after, "countersign_proposals", status="pending") == 1
    assert pending
    for projection in ("browser_view", "audit_trail", "open_work", "analytics"):
        assert ("countersign_projection_lag_events", (("projection", projection),)) in after
        assert value(after, "countersign_projection_lag_events", projection=projection) == 0
        # Where it stands: an alert tells a stopped projection by a position that stays.
        assert value(after, "countersign_projection_position", projection=projection) == value(
            after, "countersign_log_head"
        )
    assert value(after, "countersign_log_head") > 0
    assert ("countersign_notifications_pending", ()) in after
    assert value(after, "countersign_notifications_pending") == 0  # no sender pass yet

    # A receiver that is down: each notification waits for its next try.
    Webhooks(cs).add(None, "granite", f"http://127.0.0.1:{free_port()}/down")
    report = notification_sender(cs, NotifySettings(max_attempts=3)).run_once()
    waiting = scrape(client.get("/metrics").text)
    # Three proposals awaited approval and one is being reconciled; two of the three were
    # approved before the sender ran, so their "awaits your approval" is skipped.
    assert (report.retrying, report.skipped) == (2, 2)
    assert value(waiting, "countersign_notifications_pending") == 2


def test_the_reconcilers_lookups_are_counted_by_what_the_provider_held(cs, seeded):
    from countersign.infrastructure.observability.metrics import enable

    calls = enable().provider_calls  # as the worker does when it serves its metrics

    def found() -> float:
        return calls.labels("payments", "lookup", "found")._value.get()

    lost = propose(cs, seeded, "refund-lost-response")
    cs.proposals.approve(lost, AVA)
    before = found()
    settled = cs.sweepers.reconcile()
    assert [report.proposal_id for report in settled] == [lost]
    assert found() - before == 1


def test_a_figure_that_cannot_be_counted_never_changes_an_approval(cs, seeded, caplog, monkeypatch):
    """Counting into a metrics directory that did not exist raised inside the provider's
    call: the approval answered 500 and went to reconciliation after the money had moved (an
    operator's finding). A meter that fails is logged, and the approval is what it was."""
    from countersign.infrastructure.observability import counting

    class Broken:
        def approval(self, result: str, seconds: float) -> None:
            raise FileNotFoundError("/gone/counter_1.db")

        def provider_call(self, provider: str, call: str, result: str) -> None:
            raise FileNotFoundError("/gone/counter_1.db")

    monkeypatch.setattr(counting, "_failures", 0)  # the first is logged
    before = counting.installed()
    counting.install(Broken())
    try:
        report = cs.proposals.approve(propose(cs, seeded, "refund-ok"), AVA)
    finally:
        counting.install(before)  # type: ignore[arg-type]
    assert (report.result, report.status) == ("executed", "succeeded")
    assert "metrics: " in caplog.text
    assert "not counted (FileNotFoundError" in caplog.text


def test_serve_makes_a_missing_metrics_directory_and_refuses_one_it_cannot_write(
    tmp_path, monkeypatch
):
    from countersign.infrastructure.server_settings import METRICS_DIR_ENV, metrics_dir_from_env

    missing = tmp_path / "run" / "metrics"
    monkeypatch.setenv(METRICS_DIR_ENV, str(missing))
    assert metrics_dir_from_env() == str(missing)
    assert missing.is_dir()
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv(METRICS_DIR_ENV, str(blocked / "metrics"))
    with pytest.raises(SettingsError, match=r"PROMETHEUS_MULTIPROC_DIR .* cannot be made"):
        metrics_dir_from_env()


def test_the_workers_metrics_port_in_use_is_one_line(tmp_path, capsys):
    """It was "Internal error" and a traceback, and the worker crash-looped under systemd."""
    url = f"sqlite:///{tmp_path / 'countersign.db'}"
    assert main(["seed", "--database", url]) == 0
    capsys.readouterr()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = main(["worker", "--once", "--metrics-port", str(port), "--database", url])
    err = capsys.readouterr().err
    assert status == 2
    assert err == (
        f"error: cannot listen on 127.0.0.1:{port} (Address already in use): choose another"
        " --metrics-port or --metrics-host\n"
    )


# -- logs -------------------------------------------------------------------------------------


@pytest.fixture
def json_lines(monkeypatch) -> Iterator[io.StringIO]:
    """The process's logging set up as a server's with COUNTERSIGN_LOG_FORMAT=json at INFO,
    into a buffer; put back afterwards."""
    monkeypatch.setenv(logs.LOG_FORMAT_ENV, "json")
    monkeypatch.setenv(logs.LOG_LEVEL_ENV, "INFO")
    root = logging.getLogger()
    level = root.level
    buffer = io.StringIO()
    logs.configure_logging(buffer)
    yield buffer
    for handler in [h for h in root.handlers if isinstance(h, logs._OurHandler)]:
        root.removeHandler(handler)
    root.setLevel(level)


def test_json_log_lines_carry_the_correlation_id_the_caller_was_given(
    client, cs, seeded, json_lines, monkeypatch
):
    auth = _token(cs)
    proposal_id = propose(cs, seeded, "refund-ok")
    approved = client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=auth)

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(cs.access, "approve", broken)
    failed = client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=auth)

    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    by_id: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        assert {"time", "level", "logger", "message", "process"} <= set(line)
        by_id.setdefault(line.get("correlation_id", ""), []).append(line)

    ok_id = approved.headers["x-correlation-id"]
    ok_lines = {line["logger"]: line for line in by_id[ok_id]}
    # Written in the thread that ran the route, and by the middleware: both know the id.
    assert f"approve {proposal_id}: executed" in ok_lines["countersign.http"]["message"]
    access = ok_lines["countersign.access"]
    assert (access["method"], access["status"]) == ("POST", 200)
    assert access["path"] == f"/api/v1/proposals/{proposal_id}/approve"

    error_id = failed.json()["correlation_id"]
    assert failed.status_code == 500
    assert error_id == failed.headers["x-correlation-id"]
    error = next(line for line in by_id[error_id] if line["level"] == "ERROR")
    assert "RuntimeError: the disk is on fire" in error["exception"]
    assert "the disk is on fire" not in failed.text


def test_an_unknown_log_format_stops_the_command_with_the_fix(monkeypatch, capsys):
    monkeypatch.setenv(logs.LOG_FORMAT_ENV, "yaml")
    assert main(["operations"]) == 2
    assert "COUNTERSIGN_LOG_FORMAT is text or json, not 'yaml'" in capsys.readouterr().err


# -- the worker -------------------------------------------------------------------------------


def test_one_worker_pass_settles_lost_responses_and_expires_overdue_proposals(database_url, capsys):
    """The worker runs on the real clock: a proposal that lives one second, made on a clock
    two seconds behind it, is overdue when the worker looks (instead of sleeping 1.2 s on
    each database for the second to pass)."""
    behind = FakeClock(datetime.now(UTC) - timedelta(seconds=2))
    cs = bootstrap(Settings(database_url=database_url, proposal_ttl_seconds=1), clock=behind)
    try:
        seeded = seed(cs)
        lost = propose(cs, seeded, "refund-lost-response")
        assert cs.proposals.approve(lost, AVA).status == "reconciling"
        overdue = propose(cs, seeded, "refund-ok")
        status = main(["worker", "--once", "--json", "--database", database_url])
        document = json.loads(capsys.readouterr().out)
        statuses = {pid: cs.cards.card(pid, AVA).status for pid in (lost, overdue)}
    finally:
        cs.close()

    assert status == 0
    assert document == {
        "stopped": True,
        "passes": 1,
        "done": {"reconcile": 1, "expire": 1, "notify": 0},  # no endpoint, no SMTP relay
        "failures": 0,
    }
    assert statuses == {lost: "succeeded", overdue: "expired"}


def test_a_worker_pass_counts_as_settled_only_what_it_settled():
    """A reconciliation that failed, or found the answer still unknown, was counted as settled
    ("reconcile settled 1" while the proposal stayed reconciling: an operator's finding)."""
    from countersign.application.reports import SweepReport
    from countersign.infrastructure.sweepers import _settled

    reports = [
        SweepReport("p1", "settled", "succeeded", None),
        SweepReport("p2", "replayed", "succeeded", None),
        SweepReport("p3", "still_uncertain", "reconciling", None),
        SweepReport("p4", "error cs-0123456789abcdef", "reconciling", None),
    ]
    assert _settled(reports) == 2


def test_the_worker_refuses_a_pause_that_is_not_positive(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["worker", "--interval", "0", "--database", "sqlite:///:memory:"])
    assert stopped.value.code == 2
    assert "--interval: a positive number of seconds, not '0'" in capsys.readouterr().err


@pytest.mark.slow
def test_the_worker_logs_its_passes_and_stops_cleanly_on_sigterm(tmp_path):
    url = f"sqlite:///{tmp_path / 'countersign.db'}"
    cs = bootstrap(Settings(database_url=url))
    try:
        seeded = seed(cs)
        lost = propose(cs, seeded, "refund-lost-response")
        cs.proposals.approve(lost, AVA)
    finally:
        cs.close()
    env = child_env({"COUNTERSIGN_LOG_FORMAT": "json", "COUNTERSIGN_DATABASE_URL": url})
    worker = subprocess.Popen(
        [*CLI, "worker", "--interval", "0.2", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stderr is not None
    lines = []
    try:
        for line in worker.stderr:  # the second line: the first pass settled the refund
            lines.append(json.loads(line))
            if len(lines) == 2:
                break
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == 0, err
    assert [line["logger"] for line in lines] == ["countersign.worker"] * 2
    assert "running reconcile, expire, notify every 0.2 s" in lines[0]["message"]
    assert "pass 1: reconcile settled 1, expire expired 0" in lines[1]["message"]
    document = json.loads(out)
    assert document["stopped"] is True
    assert document["done"] == {"reconcile": 1, "expire": 0, "notify": 0}
    assert document["passes"] >= 1


# -- serve --workers --------------------------------------------------------------------------


@pytest.mark.slow
def test_serve_with_two_workers_gathers_both_workers_metrics_and_stops_cleanly(
    database_url, tmp_path
):
    """Eight clients approve at once, each request on a connection of its own (96 accepts),
    so both worker processes answer some; every scrape, whichever worker answers it, counts
    every approval (multiprocess mode). With eight kept-alive connections, a loaded machine
    once let one worker accept all eight. /readyz answers as soon as one worker has started,
    and under CI's load the other was once still importing while all 96 approvals went by
    (all to one worker): the approvals start once each worker has answered."""
    deployment = Deployment(
        database_url,
        tmp_path,
        env={"COUNTERSIGN_LOG_FORMAT": "json", "COUNTERSIGN_LOG_LEVEL": "INFO"},
    )
    try:
        base = deployment.serve(workers=2)
        loaded = load(database_url, proposals=12, clients=8)
        server = deployment.services[0].process.pid
        workers = _children(server)
        _until_each_answers(base, tmp_path / "serve.log", workers)

        def approve_all(token: str) -> None:
            with httpx.Client(
                base_url=base,
                headers={"Authorization": f"Bearer {token}"},
                limits=httpx.Limits(max_keepalive_connections=0),
            ) as http:
                for proposal_id in loaded.ids:
                    assert http.post(f"/api/v1/proposals/{proposal_id}/approve").status_code == 200

        threads = [threading.Thread(target=approve_all, args=(t,)) for t in loaded.tokens]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        scrapes = [scrape(httpx.get(f"{base}/metrics").text) for _ in range(6)]
    finally:
        problems = deployment.stop()

    assert problems == []
    assert len(workers) == 2
    approvals = 8 * 12
    for samples in scrapes:
        counted = sum(
            v for (name, _), v in samples.items() if name == "countersign_approve_seconds_count"
        )
        assert counted == approvals
        assert value(samples, "countersign_approve_seconds_count", result="executed") == 12
    log = (tmp_path / "serve.log").read_text().splitlines()
    access = [json.loads(line) for line in log if '"countersign.access"' in line]
    approves = [line for line in access if line["path"].endswith("/approve")]
    assert len(approves) == approvals
    assert {line["process"] for line in approves} == set(workers)
    assert all(line["correlation_id"].startswith("cs-") for line in approves)


@pytest.mark.slow
def test_serve_on_the_embedded_database_settles_a_lost_answer_in_one_process_and_stops_cleanly(
    tmp_path,
):
    """The README's setup, nothing but ``serve``: a refund whose provider answer was lost
    settles by itself. Two server workers, yet every sweeper pass is the serve process's own:
    the workers never sweep."""
    url = f"sqlite:///{tmp_path / 'countersign.db'}"
    lost = _a_lost_answer(url)
    deployment = Deployment(
        url, tmp_path, env={"COUNTERSIGN_LOG_FORMAT": "json", "COUNTERSIGN_LOG_LEVEL": "INFO"}
    )
    try:
        deployment.serve(2)
        settled = _status_within(url, lost, "succeeded", seconds=30)
        server = deployment.services[0].process.pid
    finally:
        problems = deployment.stop()

    assert problems == []
    assert settled == "succeeded"
    said = (tmp_path / "serve.log").read_text().splitlines()
    lines = [json.loads(line) for line in said if line.startswith("{")]  # the logs
    # serve's own lines are JSON objects too, with the logs (COUNTERSIGN_LOG_FORMAT=json)
    assert (
        "countersign: the sweepers (reconcile, expire, notify) run in this process every 10 s; "
        "--no-sweepers leaves them to countersign worker"
    ) in [line["message"] for line in lines]
    passes = [line for line in lines if line["message"].startswith("serve sweepers: pass")]
    assert "reconcile settled 1" in passes[0]["message"]
    assert {line["process"] for line in passes} == {server}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "sweeps"),
    [((), "on sqlite"), (("--no-sweepers",), "never"), (("--sweepers",), "always")],
)
def test_serve_says_when_no_sweeper_runs_and_sweepers_choose_explicitly(
    seeded_database, tmp_path, options, sweeps
):
    """PostgreSQL's default is off (``countersign worker`` is the service there), and serve
    says so in one line naming what to start; ``--sweepers`` and ``--no-sweepers`` choose.
    Serve says that its sweepers run as it starts their thread, before it serves: a server
    that answers without having said it started none (no wait to see that none ran)."""
    database_url = seeded_database.url
    lost = _a_lost_answer(database_url, seeded_database.seeded)
    sweeping = sweeps == "always" or (sweeps == "on sqlite" and database_url.startswith("sqlite"))
    deployment = Deployment(database_url, tmp_path)
    try:
        deployment.serve(1, *options)  # once it answers /readyz
        said = (tmp_path / "serve.log").read_text()
        status = _status_within(database_url, lost, "succeeded", seconds=20 if sweeping else 0)
    finally:
        problems = deployment.stop()

    assert problems == []
    started = "countersign: the sweepers (reconcile, expire, notify) run in this process every"
    assert (started in said) is sweeping
    assert ("countersign: no sweeper runs in this process: start `countersign worker`" in said) is (
        not sweeping
    )
    assert status == ("succeeded" if sweeping else "reconciling")


def _a_lost_answer(url: str, seeded: dict[str, Any] | None = None) -> str:
    """A refund approved on the demo data (seeded here unless ``seeded`` says what seeding
    ``url`` returned) whose provider answer was lost: reconciling."""
    cs = bootstrap(Settings(database_url=url))
    try:
        if seeded is None:
            seeded = seed(cs)
        lost = propose(cs, seeded, "refund-lost-response")
        assert cs.proposals.approve(lost, AVA).status == "reconciling"
    finally:
        cs.close()
    return lost


def _status_within(url: str, proposal_id: str, wanted: str, seconds: float) -> str:
    """The proposal's status once it is ``wanted``, or when ``seconds`` have passed."""
    cs = bootstrap(Settings(database_url=url))
    try:
        deadline = time.monotonic() + seconds
        while True:
            status = cs.store.get(UUID(proposal_id), Proposal).status
            if status == wanted or time.monotonic() > deadline:
                return str(status)
            time.sleep(0.2)
    finally:
        cs.close()


def _until_each_answers(base: str, log: Path, workers: set[int]) -> None:
    """Ask /readyz, each time on a new connection, until the access log shows every worker
    answered (a worker that is still starting accepts nothing); fails after 60 s."""
    deadline = time.monotonic() + 60
    answered: set[int] = set()
    while answered != workers:
        assert time.monotonic() < deadline, f"only {answered} of {workers} answered in 60 s"
        httpx.get(f"{base}/readyz", timeout=10)
        lines = log.read_text().splitlines()
        answered = {
            json.loads(line)["process"] for line in lines if '"path": "/readyz"' in line
        } & workers
        time.sleep(0.05)


def _children(pid: int) -> set[int]:
    """uvicorn's worker processes under ``pid`` (multiprocessing's spawned children, not its
    resource tracker), from /proc."""
    children = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"spawn_main" in command:
                children.add(int(entry.name))
    return children


def test_serve_refuses_a_number_of_workers_out_of_range(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--workers", "0"])
    assert stopped.value.code == 2
    assert "a number of processes from 1 to 64" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("COUNTERSIGN_PUBLIC_URL", "notaurl", "COUNTERSIGN_PUBLIC_URL must start with"),
        ("COUNTERSIGN_NOTIFY_WORKERS", "0", "COUNTERSIGN_NOTIFY_WORKERS must be"),
        ("COUNTERSIGN_SESSION_SECRET", "short", "COUNTERSIGN_SESSION_SECRET must have"),
        ("COUNTERSIGN_METRICS_TOKEN", "short", "COUNTERSIGN_METRICS_TOKEN must be"),
        ("COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS", "nope", "COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS"),
    ],
)
def test_serve_refuses_a_setting_its_processes_would_refuse_before_it_serves(
    tmp_path, capsys, monkeypatch, variable, value, said
):
    """The sweepers' thread died on a wrong sender setting while the server served on, ready,
    with nothing reconciled, expired or notified; a short session secret was an internal
    error after "serving on". Each is now a configuration error before anything is served."""
    from countersign.infrastructure.entrypoints.cli import admin

    url = f"sqlite:///{tmp_path / 'countersign.db'}"
    assert main(["seed", "--database", url]) == 0
    capsys.readouterr()
    monkeypatch.setattr(admin, "_run", lambda config: pytest.fail("it served"))
    monkeypatch.setenv(variable, value)
    # --no-sweepers: the checks of what the server's requests read hold without them too.
    sweeping = ["--no-sweepers"] if variable == "COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS" else []
    assert main(["serve", "--port", "8799", *sweeping, "--database", url]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: {said}")
    assert err.count("\n") == 1  # one line: no "serving on", no traceback


def test_serve_refuses_a_port_it_cannot_listen_on_before_it_serves(tmp_path, capsys, monkeypatch):
    from countersign.infrastructure.entrypoints.cli import admin

    for port in ("0", "99999", "-5", "http"):
        with pytest.raises(SystemExit) as stopped:
            main(["serve", "--port", port])
        assert stopped.value.code == 2
        assert "a port from 1 to 65535" in capsys.readouterr().err

    url = f"sqlite:///{tmp_path / 'countersign.db'}"
    assert main(["seed", "--database", url]) == 0
    capsys.readouterr()
    monkeypatch.setattr(admin, "_run", lambda config: pytest.fail("it served"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port), "--database", url]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: cannot listen on 127.0.0.1:{port} (Address already in use): choose another"
        " --port or --host\n"
    )


def test_demo_serve_refuses_a_port_in_use_before_its_story(tmp_path, capsys):
    """The story takes a while and makes a database: a port it could not serve afterwards
    says so first (a newcomer's walk found it told the whole story, then refused)."""
    database = tmp_path / "demo.db"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = main(
            ["demo", "--serve", "--port", str(port), "--database", f"sqlite:///{database}"]
        )
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""  # no story was told
    assert f"cannot listen on 127.0.0.1:{port} (Address already in use)" in err
    assert not database.exists()


def test_the_port_probe_refuses_no_address_the_server_can_serve():
    """Another service holds 0.0.0.0:P. One worker binds [::]:P as asyncio does, IPv6 only,
    and serves: the probe bound a dual-stack socket and refused it (a review's finding)."""
    import asyncio

    from countersign.infrastructure.entrypoints.cli.admin import check_port_free

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind(("0.0.0.0", 0))
        other.listen()
        port = other.getsockname()[1]

        async def as_one_worker_binds() -> None:
            server = await asyncio.get_running_loop().create_server(
                asyncio.Protocol, host="::", port=port
            )
            server.close()
            await server.wait_closed()

        asyncio.run(as_one_worker_binds())  # the server would serve
        check_port_free("::", port)  # and so the probe lets it
        with pytest.raises(SettingsError, match="Address already in use"):
            check_port_free("0.0.0.0", port)


def test_a_serve_worker_freezes_what_it_wired_so_full_collections_skip_it(tmp_path):
    """A worker's modules, application and contracts are out of the collector's full
    collections (each walked all of them while the worker's requests waited)."""
    script = (
        "import gc\n"
        "from countersign.infrastructure.server import create_app\n"
        "app = create_app()\n"
        "print(gc.get_freeze_count())\n"
    )
    done = subprocess.run(
        [CLI[0], "-c", script],
        env=child_env(
            {
                "COUNTERSIGN_DATABASE_URL": f"sqlite:///{tmp_path / 'countersign.db'}",
                "COUNTERSIGN_SECURE_COOKIES": "0",
            }
        ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) > 50_000


# -- the database URL's connection parameters ---------------------------------------------------


def test_a_postgresql_urls_libpq_parameters_are_kept_and_others_refused():
    """``?sslmode=require`` was dropped: a deployment meant to refuse a plain connection
    made one, and nothing said so (an operator's finding)."""
    from countersign.infrastructure.settings import Database

    url = "postgresql://cs@db.internal:5432/countersign?sslmode=verify-full&sslrootcert=/ca.pem"
    database = Database.parse(url)
    assert database.params == (("sslmode", "verify-full"), ("sslrootcert", "/ca.pem"))
    assert database.url == url
    with pytest.raises(SettingsError, match=r"parameter 'sslmod' is not one countersign passes"):
        Database.parse("postgresql://cs@db/countersign?sslmod=require")
    with pytest.raises(SettingsError, match=r"PGOPTIONS adds to the sessions' options"):
        Database.parse("postgresql://cs@db/countersign?options=-csearch_path%3Dcell1")


def test_every_connection_is_made_with_the_urls_parameters(cs, clock):
    if cs.database.kind != "postgres":
        pytest.skip("libpq's parameters are PostgreSQL's")
    named = bootstrap(
        Settings(database_url=cs.settings.database_url + "?application_name=cs-params-probe"),
        clock=clock,
    )
    try:
        with named.sql.reading() as cursor:  # countersign's own connections
            own = cursor.execute("SELECT current_setting('application_name')").fetchone()
        with named.app.recorder.datastore.get_connection() as conn:  # the event store's pool
            pooled = conn.execute("SELECT current_setting('application_name')").fetchone()
    finally:
        named.close()
    assert own == ("cs-params-probe",)
    assert pooled == {"current_setting": "cs-params-probe"}
    # A parameter the server cannot satisfy refuses the connection, as libpq would.
    with pytest.raises(Exception, match="SSL"):
        bootstrap(Settings(database_url=cs.settings.database_url + "?sslmode=require"))


def test_with_json_logs_a_commands_own_lines_are_json_too(tmp_path, capsys, monkeypatch):
    """COUNTERSIGN_LOG_FORMAT=json promised every stderr line a JSON object; a command's own
    lines (an error, a rebuild's progress, an export's count) were plain text, which a log
    shipper dropped or misread (an operator's finding)."""
    url = f"sqlite:///{tmp_path / 'countersign.db'}"
    assert main(["seed", "--database", url]) == 0
    monkeypatch.setenv("COUNTERSIGN_LOG_FORMAT", "json")
    capsys.readouterr()
    root = logging.getLogger()
    level = root.level
    try:
        assert main(["show", "not-a-proposal", "--as", AVA, "--database", url]) == 0
        assert main(["projections", "rebuild", "--database", url]) == 0
        assert main(["audit", "export", "--org", "nosuch", "--database", url]) == 2
    finally:  # the process's logging as it was (main set it up for JSON)
        for handler in [h for h in root.handlers if isinstance(h, logs._OurHandler)]:
            root.removeHandler(handler)
        root.setLevel(level)
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in err.splitlines()]
    assert lines, err
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    assert any(line["message"].startswith("rebuild ") for line in lines)
    [refused] = [line for line in lines if line["level"] == "ERROR"]
    assert refused["message"] == "error: no club is named 'nosuch'"


def test_with_json_logs_a_usage_error_is_a_json_line(capsys, monkeypatch):
    """argparse's usage and error went to stderr as text under json logs (a review's
    finding)."""
    monkeypatch.setenv("COUNTERSIGN_LOG_FORMAT", "json")
    root = logging.getLogger()
    level = root.level
    try:
        with pytest.raises(SystemExit) as stopped:
            main(["show", "00000000-0000-0000-0000-000000000000"])
    finally:  # the process's logging as it was (main set it up for JSON)
        for handler in [h for h in root.handlers if isinstance(h, logs._OurHandler)]:
            root.removeHandler(handler)
        root.setLevel(level)
    assert stopped.value.code == 2
    [line] = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert line["level"] == "ERROR"
    assert "the following arguments are required: --as" in line["message"]


def test_a_worker_process_that_dies_is_logged_as_a_warning(monkeypatch):
    """uvicorn replaced a worker process that died (killed, out of memory) and nothing was
    logged: its supervisor says it at INFO, and serve runs uvicorn at WARNING (an
    operator's finding). Its other INFO lines stay out."""
    from types import SimpleNamespace

    from countersign.infrastructure.entrypoints.cli import admin

    supervisor = logging.getLogger("uvicorn.error")
    monkeypatch.setattr(supervisor, "filters", [])
    monkeypatch.setattr(supervisor, "level", logging.WARNING)
    seen: list[logging.LogRecord] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    class Supervisor:  # uvicorn's Multiprocess, as far as this goes
        def __init__(self, config: Any, sockets: Any) -> None:
            self.sockets = sockets

        def run(self) -> None:
            supervisor.info("Started parent process [1]")
            supervisor.info("Child process [4242] died")
            for sock in self.sockets:
                sock.close()

    catch = Catch()
    supervisor.addHandler(catch)
    monkeypatch.setattr("uvicorn.supervisors.Multiprocess", Supervisor)
    try:
        config = SimpleNamespace(workers=2, bind_socket=socket.socket, backlog=2048)
        assert admin._run(config) is True
    finally:
        supervisor.removeHandler(catch)
    assert [(r.levelname, r.getMessage()) for r in seen] == [
        ("WARNING", "Child process [4242] died")
    ]


def test_serve_with_workers_accepts_connections_while_its_workers_start(monkeypatch):
    """ "serving on" was logged, then every connection was refused for as long as the worker
    processes took to import and wire countersign (10 to 15 s on the loaded 2-core machine
    at each restart of `serve --workers 2`, an operator's finding): the shared socket was
    bound by the supervisor but listened only once a worker started. It now listens as it
    is bound, so a connection made meanwhile waits in its backlog and is answered."""
    import uvicorn
    from countersign.infrastructure.entrypoints.cli import admin

    connected: list[bool] = []

    class Supervisor:  # uvicorn's Multiprocess, before any worker process has started
        def __init__(self, config: Any, sockets: Any) -> None:
            self.sockets = sockets

        def run(self) -> None:
            [sock] = self.sockets
            try:
                with socket.create_connection(sock.getsockname(), timeout=5):
                    connected.append(True)
            except ConnectionRefusedError:
                connected.append(False)
            finally:
                sock.close()

    monkeypatch.setattr("uvicorn.supervisors.Multiprocess", Supervisor)
    config = uvicorn.Config("countersign.infrastructure.server:create_app", port=0, workers=2)
    assert admin._run(config) is True
    assert connected == [True]


def test_a_worker_pass_where_every_sweeper_failed_says_so_in_plain_words(caplog):
    """A pass the database did not answer was logged as "worker: pass 4: ; failed:
    reconcile, expire, notify (15.01 s)" (an operator's finding)."""
    from countersign.infrastructure.sweepers import PassLog, PassReport

    class Named:
        def __init__(self, name: str, verb: str) -> None:
            self.name, self.verb = name, verb

    passes = PassLog([Named("reconcile", "settled"), Named("notify", "delivered")])  # type: ignore[list-item]
    with caplog.at_level(logging.INFO, logger="countersign.worker"):
        passes(PassReport(4, {}, ["reconcile", "notify"], 15.01))
        passes(PassReport(5, {"notify": 0}, ["reconcile"], 7.6))
    assert [r.getMessage() for r in caplog.records] == [
        "worker: pass 4: failed: reconcile, notify (15.01 s)",
        "worker: pass 5: notify delivered 0; failed: reconcile (7.60 s)",
    ]
