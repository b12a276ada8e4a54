"""The notification commands, as an operator types them: webhooks, notify run, languages."""

from __future__ import annotations

import json

import pytest
from countersign.infrastructure.entrypoints.cli import main
from standardwebhooks.webhooks import Webhook

from tests.conftest import TO_CARD
from tests.receivers import (
    allow_loopback,  # noqa: F401 - autouse
    free_port,
    receiving,
)


@pytest.fixture
def cli(seeded_database, capsys, monkeypatch):
    """The command's JSON document, on a seeded database: a copy of the seeded template,
    where ``seed`` changes nothing (idempotent) but the people's passwords."""
    database_url = seeded_database.url
    monkeypatch.setenv("COUNTERSIGN_PUBLIC_URL", "https://club.example")
    monkeypatch.setenv("COUNTERSIGN_NOTIFY_MAX_ATTEMPTS", "1")
    monkeypatch.delenv("COUNTERSIGN_SMTP_HOST", raising=False)

    def run(*argv: str, status: int = 0):
        code = main([*argv, "--json", "--database", database_url])
        out = capsys.readouterr().out
        assert code == status, out
        return json.loads(out)

    run("seed")
    return run


def propose(cli) -> str:
    seeded = cli("seed")
    created = cli(
        "propose",
        "--org",
        "granite",
        "--as",
        "ava@granite.example",
        "--operation",
        "order.refund_missing_discount",
        "--resource",
        seeded["orders"]["refund-ok"],
        "--request",
        json.dumps(TO_CARD),
    )
    return str(created["proposal_id"])


def test_an_operator_adds_a_webhook_and_notify_run_delivers_to_it(cli):
    with receiving() as receiver:
        added = cli("webhooks", "add", "--org", "granite", "--url", receiver.url)
        assert added["secret"].startswith("whsec_")
        assert added["url"] == receiver.url
        listed = cli("webhooks", "list", "--org", "granite")
        assert listed == [
            {"endpoint_id": added["endpoint_id"], "url": receiver.url, "added_by": "operator"}
        ]
        assert "secret" not in json.dumps(listed)  # shown once, at add
        proposal_id = propose(cli)
        report = cli("notify", "run", "--once")
        assert report["delivered"] == 1
        [request] = receiver.received
        payload = Webhook(added["secret"]).verify(request.body, request.headers)
        assert payload["review_url"] == f"https://club.example/proposals/{proposal_id}"
    [delivery] = cli("webhooks", "deliveries", "--org", "granite")
    assert delivery["status"] == "delivered"
    assert delivery["attempt_log"][0]["status_code"] == 200
    assert cli("webhooks", "deliveries", "--org", "granite", "--dead") == []
    # The next page after the last one listed: none here; an id not the club's is not found.
    after = ("webhooks", "deliveries", "--org", "granite", "--before")
    assert cli(*after, delivery["delivery_id"]) == []
    assert cli(*after, "dlv_not_one_of_granites") == {"error": "not_found"}


def test_a_dead_letter_is_listed_and_redelivered(cli, capsys, database_url):
    port = free_port()
    cli("webhooks", "add", "--org", "granite", "--url", f"http://127.0.0.1:{port}/hook")
    propose(cli)
    assert cli("notify", "run", "--once")["dead"] == 1
    [dead] = cli("webhooks", "deliveries", "--org", "granite", "--dead")
    assert dead["attempt_log"][0]["result"] == "failed: could not connect"
    assert dead["attempt_log"][0]["next_attempt_at"] is None
    # What a person reads: each attempt's result, and its next try.
    assert main(["webhooks", "deliveries", "--org", "granite", "--database", database_url]) == 0
    text = capsys.readouterr().out
    assert "dead after 1 attempt(s)" in text
    assert "failed: could not connect" in text
    assert "Error" not in text
    assert " ms" not in text
    with receiving(port=port) as receiver:
        assert cli("webhooks", "redeliver", "--org", "granite", "--all") == {
            "redelivered": [dead["delivery_id"]]
        }
        assert cli("notify", "run", "--once")["delivered"] == 1
        assert len(receiver.received) == 1
    assert cli("webhooks", "redeliver", dead["delivery_id"], "--org", "granite") == {
        "redelivered": []
    }
    cli("webhooks", "redeliver", "--org", "granite", status=2)  # neither an id nor --all


def test_a_dead_letter_of_a_removed_endpoint_is_marked_and_refused_by_name(
    cli, capsys, database_url
):
    """Redelivering it put it back, to fail again at once (nothing to deliver it to), and the
    listing never said why it stayed: it says so, and redelivering it is refused (exit 4)."""
    added = cli("webhooks", "add", "--org", "granite", "--url", f"http://127.0.0.1:{free_port()}/h")
    propose(cli)
    assert cli("notify", "run", "--once")["dead"] == 1
    cli("webhooks", "remove", added["endpoint_id"], "--org", "granite")
    [dead] = cli("webhooks", "deliveries", "--org", "granite", "--dead")
    assert dead["endpoint_removed"] is True
    listing = ["webhooks", "deliveries", "--org", "granite", "--database", database_url]
    for language, said in [
        ("en", "dead after 1 attempt(s) (its endpoint was removed: not tried again)"),
        ("fr", "(son webhook a été retiré : plus d'essai)"),
    ]:
        assert main([*listing, "--language", language]) == 0
        assert said in capsys.readouterr().out
    refused = cli("webhooks", "redeliver", dead["delivery_id"], "--org", "granite", status=4)
    assert refused["reason"] == "endpoint_removed"
    assert refused["message"].startswith(
        "This dead letter was for a webhook endpoint that has since been removed"
    )
    named = ["webhooks", "redeliver", dead["delivery_id"], "--org", "granite"]
    assert main([*named, "--language", "fr", "--database", database_url]) == 4
    said = capsys.readouterr()
    assert "ajoutez de nouveau ce webhook" in said.out + said.err
    assert "Traceback" not in said.out + said.err
    assert cli("webhooks", "redeliver", "--org", "granite", "--all") == {"redelivered": []}
    every = ["webhooks", "redeliver", "--all", "--org", "granite", "--database", database_url]
    for language, said in [  # it read "No such dead letter.", though one was just listed
        ("en", "No dead letter put back: there are none, or only ones to webhooks removed"),
        ("fr", "Aucun envoi abandonné remis en file : il n'y en a pas, ou seulement pour"),
    ]:
        assert main([*every, "--language", language]) == 0
        assert said in capsys.readouterr().out


@pytest.mark.parametrize(
    "url", ["ftp://example.com", "javascript:alert(1)", "example.com/hook", "https://a:b@x.io"]
)
def test_a_bad_url_is_refused_with_a_clear_error(cli, url):
    refused = cli("webhooks", "add", "--org", "granite", "--url", url, status=2)
    assert refused["error"] == "usage"
    assert "webhook URL" in refused["message"]
    assert "Traceback" not in refused["message"]
    assert cli("webhooks", "list", "--org", "granite") == []


def test_an_unknown_club_or_endpoint_is_not_found(cli):
    assert cli("webhooks", "add", "--org", "nowhere", "--url", "https://x.example")["error"] == (
        "not_found"
    )
    assert cli("webhooks", "list", "--org", "nowhere")["error"] == "not_found"
    assert cli("webhooks", "remove", "we_nope", "--org", "granite")["error"] == "not_found"
    added = cli("webhooks", "add", "--org", "maple", "--url", "https://maple.example/h")
    # Another club's endpoint is not found through this club.
    assert cli("webhooks", "remove", added["endpoint_id"], "--org", "granite")["error"] == (
        "not_found"
    )
    assert len(cli("webhooks", "list", "--org", "maple")) == 1
    assert cli("webhooks", "remove", added["endpoint_id"], "--org", "maple")["removed"] is True


def test_members_set_language(cli):
    changed = cli(
        "members", "set-language", "fr", "--org", "granite", "--email", "BEN@granite.example",
    )  # fmt: skip
    assert changed == {"organization": "granite", "email": "ben@granite.example", "language": "fr"}
    refused = cli(
        "members", "set-language", "de", "--org", "granite", "--email", "ben@granite.example",
    status=2)  # fmt: skip
    assert "not a language" in refused["message"]
    stranger = cli(
        "members", "set-language", "fr", "--org", "granite", "--email", "mia@maple.example",
    status=2)  # fmt: skip
    assert "not a member" in stranger["message"]


def test_an_internal_address_is_refused_saying_how_the_operator_allows_it(cli, monkeypatch):
    """The operator's command said only that webhooks go to public addresses, not the
    setting that lets a deployment post to its own network."""
    monkeypatch.delenv("COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS", raising=False)
    refused = cli("webhooks", "add", "--org", "granite", "--url", "http://10.1.2.3/h", status=2)
    assert refused["error"] == "usage"
    assert refused["message"].startswith("the webhook URL points at a private, loopback")
    assert "list it in COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS" in refused["message"]
    assert cli("webhooks", "list", "--org", "granite") == []
