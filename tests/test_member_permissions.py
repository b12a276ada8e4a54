"""Granting and withdrawing a member's permissions: the service, ``members set-permissions``,
``PUT /api/v1/members/{email}/permissions`` and the members page. Each change is one
``PermissionsChanged`` event naming who made it, in the audit trail's ``permission_changes``;
a permission that does not exist, a person who is not a member, and taking ``members.manage``
from its last holder are refused and change nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from typing import Any
from uuid import uuid4

import pytest
from countersign.application.authorization import Caller, Credential
from countersign.application.errors import AgentCannotDecideError, MissingPermissionError
from countersign.domain.club.organization import (
    LastMemberManagerError,
    Organization,
    UnknownPermissionError,
)
from countersign.domain.contracts import PERMISSIONS
from countersign.domain.errors import NotMemberError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, BEN, MIA, count_events
from tests.test_http_api import problem
from tests.test_projections import catch_up_all
from tests.test_web_pages import Web, _main, web_for

NOAH = "noah@granite.example"
MANAGE = "members.manage"
AUDIT = "audit.read"


def _granite(cs: Countersign) -> Organization:
    return cs.store.read(Organization.create_id("granite"), Organization)


def _held(cs: Countersign, email: str, organization: str = "granite") -> list[str]:
    org = cs.store.read(Organization.create_id(organization), Organization)
    member = org.member(email)
    assert member is not None
    return sorted(member.permissions)


# -- the service -------------------------------------------------------------------------------


def test_a_manager_grants_and_withdraws_and_each_change_is_one_event_naming_them(cs, seeded):
    ava = Caller(AVA, "granite")
    assert MANAGE in _held(cs, AVA)  # the demo's managers hold every permission
    before = count_events(cs, "Organization.PermissionsChanged")

    held = cs.club.set_permissions("granite", BEN, [AUDIT, MANAGE], by=ava)
    assert held == {"email": BEN, "permissions": [AUDIT, MANAGE], "changed": True}
    again = cs.club.set_permissions("granite", " Ben@Granite.example ", [MANAGE, AUDIT], by=ava)
    assert again["changed"] is False  # giving what is held records nothing
    cs.club.set_permissions("granite", BEN, [], by=ava)

    assert _held(cs, BEN) == []
    assert count_events(cs, "Organization.PermissionsChanged") == before + 2
    changes = [e for e in cs.store.history(_granite(cs).id) if e.type == "PermissionsChanged"]
    assert [(e.fields["email"], e.fields["changed_by"]) for e in changes] == [(BEN, AVA)] * 2

    catch_up_all(cs)
    rows = cs.read_models.permission_changes(str(_granite(cs).id))
    assert [(r["email"], r["permissions"], r["changed_by"]) for r in rows] == [
        (BEN, [AUDIT, MANAGE], AVA),
        (BEN, [], AVA),
    ]


def test_the_command_line_is_the_operator_and_refusals_change_nothing(cs, seeded):
    cs.club.set_permissions("granite", BEN, [AUDIT])
    [change] = [e for e in cs.store.history(_granite(cs).id) if e.type == "PermissionsChanged"]
    assert change.fields["changed_by"] == "operator"

    with pytest.raises(UnknownPermissionError) as unknown:
        cs.club.set_permissions("granite", BEN, [AUDIT, "orders.refund_all"])
    assert unknown.value.unknown == ("orders.refund_all",)
    assert set(unknown.value.known) == PERMISSIONS
    with pytest.raises(NotMemberError):
        cs.club.set_permissions("granite", "zoe@granite.example", [AUDIT])
    with pytest.raises(LastMemberManagerError):
        cs.club.set_permissions("maple", MIA, [AUDIT])  # Mia alone manages maple's members
    assert _held(cs, BEN) == [AUDIT]
    assert MANAGE in _held(cs, MIA, "maple")


def test_the_last_holder_keeps_members_manage_once_the_others_gave_it_up(cs, seeded):
    ava = Caller(AVA, "granite")
    cs.club.set_permissions("granite", NOAH, [AUDIT], by=ava)
    with pytest.raises(LastMemberManagerError, match=r"last member who holds members\.manage"):
        cs.club.set_permissions("granite", AVA, [AUDIT], by=ava)
    cs.club.set_permissions("granite", NOAH, [MANAGE], by=ava)  # a second holder first
    cs.club.set_permissions("granite", AVA, [AUDIT], by=ava)
    assert _held(cs, AVA) == [AUDIT]


def test_only_a_person_holding_members_manage_in_their_own_club_may_change_permissions(cs, seeded):
    with pytest.raises(MissingPermissionError):
        cs.club.set_permissions("granite", BEN, [AUDIT], by=Caller(BEN, "granite"))
    agent = Caller(AVA, "granite", frozenset(PERMISSIONS), Credential.AGENT_TOKEN, "ava-bot")
    with pytest.raises(AgentCannotDecideError):
        cs.club.set_permissions("granite", BEN, [AUDIT], by=agent)
    scoped = Caller(AVA, "granite", frozenset({AUDIT}), Credential.APPROVER_TOKEN, "ava-bot")
    with pytest.raises(MissingPermissionError):
        cs.club.set_permissions("granite", BEN, [AUDIT], by=scoped)
    with pytest.raises(Exception, match="organization"):  # another club answers as unknown
        cs.club.set_permissions("maple", MIA, [AUDIT], by=Caller(AVA, "granite"))
    assert _held(cs, BEN) == []


# -- the command line --------------------------------------------------------------------------


@pytest.fixture
def run(database_url, capsys):
    """The command's exit status, stdout and stderr."""

    def command(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--database", database_url])
        out, err = capsys.readouterr()
        return code, out, err

    return command


def _set(run, email: str, permissions: str, *more: str) -> tuple[int, str, str]:
    argv = ["members", "set-permissions", "--org", "granite", "--email", email]
    return run(*argv, "--permissions", permissions, *more)


@pytest.mark.usefixtures("seeded_database")  # seed runs on a copy of the seeded template
def test_set_permissions_from_the_command_line_in_english_and_french(run):
    assert run("seed")[0] == 0
    assert _set(run, BEN, "audit.read, members.manage") == (
        0,
        "ben@granite.example now holds: audit.read, members.manage.\n",
        "",
    )
    code, out, _ = _set(run, BEN, "members.manage,audit.read", "--language", "fr")
    assert (code, out) == (0, "ben@granite.example détenait déjà : audit.read, members.manage.\n")
    code, out, _ = _set(run, BEN, "", "--json")
    assert code == 0
    assert json.loads(out) == {
        "organization": "granite",
        "email": BEN,
        "permissions": [],
        "changed": True,
    }
    assert _set(run, BEN, "")[1] == "ben@granite.example already held no permission.\n"


@pytest.mark.usefixtures("seeded_database")  # seed runs on a copy of the seeded template
def test_a_refused_change_exits_4_saying_why_on_stderr(run):
    assert run("seed")[0] == 0
    code, out, err = _set(run, BEN, "audit.read,nope", "--language", "fr")
    assert (code, out) == (4, "")
    every = ", ".join(sorted(PERMISSIONS))  # countersign's, and any enabled plug-in's
    assert err == f"Permission inconnue : nope. Les permissions sont : {every}.\n"
    assert "audit.read, " in err
    assert "members.manage" in err

    code, out, err = _set(run, "zoe@granite.example", "audit.read")
    assert (code, err) == (4, "zoe@granite.example is not a member of granite.\n")

    code, out, err = run(
        "members",
        "set-permissions",
        "--org",
        "maple",
        "--email",
        MIA,
        "--permissions",
        "",
        "--json",
    )
    assert code == 4
    assert json.loads(out)["reason"] == "last_member_manager"
    assert "last member who holds members.manage" in err

    code, _, err = run(
        "members", "set-permissions", "--org", "nowhere", "--email", MIA, "--permissions", ""
    )
    assert (code, err) == (4, "There is no club nowhere.\n")


def test_an_unknown_database_exits_2(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'none.db'}"
    code = main(["members", "set-permissions", "--org", "granite", "--email", BEN,
                 "--permissions", "audit.read", "--database", url])  # fmt: skip
    assert code == 2
    assert "no database" in capsys.readouterr().err


# -- the JSON API ------------------------------------------------------------------------------


@pytest.fixture
def client(cs: Countersign, seeded: dict[str, Any]) -> Iterator[TestClient]:
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        yield client


def _token(cs: Countersign, scopes: list[str], kind: str = "approver", by: str = AVA) -> Any:
    name = f"{kind}-{uuid4().hex[:12]}"
    token = issue_token(cs, "granite", name, scopes, issued_by=by, kind=kind).token
    return {"Authorization": f"Bearer {token}"}


def _put(client: TestClient, headers: Any, email: str, permissions: Any) -> Any:
    path = f"/api/v1/members/{email}/permissions"
    return client.put(path, headers=headers, json={"permissions": permissions})


def test_an_approver_token_with_members_manage_sets_permissions(cs, client):
    headers = _token(cs, [MANAGE])
    answer = _put(client, headers, BEN, [AUDIT])
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"email": BEN, "permissions": [AUDIT], "changed": True}
    assert _put(client, headers, BEN, [AUDIT]).json()["changed"] is False
    listed = client.get("/api/v1/members", headers=headers).json()["members"]
    assert [(m["email"], m["permissions"]) for m in listed if m["email"] == BEN] == [(BEN, [AUDIT])]


def test_the_api_refuses_agents_strangers_and_bad_changes(cs, client):
    # every permission the club gave Ava (the demo's managers hold all of countersign's)
    agent = _put(client, _token(cs, _held(cs, AVA), kind="agent"), BEN, [AUDIT])
    assert problem(agent)[1]["type"] == "urn:countersign:problem:agent-cannot-decide"
    no_scope = _put(client, _token(cs, [AUDIT]), BEN, [AUDIT])
    assert problem(no_scope)[0] == 403
    assert client.get("/api/v1/members", headers=_token(cs, [AUDIT])).status_code == 403

    headers = _token(cs, [MANAGE])
    assert problem(_put(client, headers, "zoe@granite.example", [AUDIT]))[0] == 404
    assert problem(_put(client, headers, MIA, [AUDIT]))[0] == 404  # another club's member
    status, body = problem(_put(client, headers, BEN, ["nope"]))
    assert status == 422
    [refusal] = body["problems"]
    assert refusal["field"] == "permissions"
    every = ", ".join(sorted(PERMISSIONS))  # countersign's, and any enabled plug-in's
    assert refusal["message"] == f"no such permission: nope; use any of: {every}"

    _put(client, headers, NOAH, [AUDIT])
    status, body = problem(_put(client, headers, AVA, [AUDIT]))
    assert status == 409
    assert "last member who holds members.manage" in body["detail"]
    assert _held(cs, BEN) == []
    assert MANAGE in _held(cs, AVA)


# -- the members page --------------------------------------------------------------------------


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def test_a_manager_sees_the_members_page_in_english_and_french(web):
    browser = web.browser(AVA)
    assert 'href="/members"' in browser.get("/").text  # in the navigation
    main = unescape(_main(browser.get("/members")))
    assert "Members and permissions" in main
    assert "Ben Okafor" in main
    assert "Manage members' permissions" in main
    assert "Save the permissions of Ben Okafor" in main

    browser.form("/language", {"lang": "fr", "next": "/members"})
    page = browser.get("/members")
    assert page.status_code == 200
    main = unescape(_main(page))
    assert "Membres et permissions" in main
    assert "Gérer les permissions des membres" in main
    assert "Enregistrer les permissions de Ben Okafor" in main


def test_someone_without_members_manage_gets_no_link_and_the_forbidden_page(web):
    ben = web.browser(BEN)
    assert 'href="/members"' not in ben.get("/").text
    assert ben.get("/members").status_code == 403
    answer = ben.form("/members/permissions", {"email": BEN, f"permission.{MANAGE}": "on"})
    assert answer.status_code == 403
    assert _held(web.cs, BEN) == []


def test_the_form_gives_exactly_the_ticked_permissions_with_the_csrf_token(web):
    browser = web.browser(AVA)
    data = {"email": BEN, f"permission.{AUDIT}": "on", f"permission.{MANAGE}": "on"}
    assert browser.post("/members/permissions", data).status_code == 403  # no CSRF token
    assert _held(web.cs, BEN) == []

    done = browser.form("/members/permissions", data, from_page="/members")
    assert (done.status_code, done.headers["location"]) == (303, "/members")
    assert _held(web.cs, BEN) == [AUDIT, MANAGE]
    assert "The permissions were saved" in _main(browser.get("/members"))
    browser.form("/members/permissions", data, from_page="/members")
    again = unescape(_main(browser.get("/members")))
    assert "Nothing changed: the member already held exactly those." in again


def test_the_page_says_why_the_last_holder_keeps_members_manage(web):
    mia = web.browser(MIA)
    refused = mia.form("/members/permissions", {"email": MIA}, from_page="/members")
    assert refused.status_code == 422
    main = unescape(_main(refused))
    assert "mia@maple.example is the last member who may manage members" in main
    assert "Nothing changed." in main
    assert MANAGE in _held(web.cs, MIA, "maple")


def test_a_manager_who_gives_up_members_manage_is_told_it_was_saved_not_refused(web):
    """Ava unticked her own "Manage members' permissions" and saved: the change was made,
    and the page answered "Not allowed: Your role in this club does not allow this." (the
    members page, which the save led back to, was no longer hers). She is told it was saved
    and why the page is closed to her now, on the inbox, in her language."""
    ava = web.browser(AVA)
    kept = [p for p in _held(web.cs, AVA) if p != MANAGE]
    data = {"email": AVA, **{f"permission.{p}": "on" for p in kept}}
    done = ava.form("/members/permissions", data, from_page="/members")
    assert (done.status_code, done.headers["location"]) == (303, "/")
    assert MANAGE not in _held(web.cs, AVA)
    inbox = ava.get("/")
    assert inbox.status_code == 200
    main = unescape(_main(inbox))
    assert "The permissions were saved. You no longer hold “Manage members' permissions”" in main
    assert "Not allowed" not in main
    assert 'href="/members"' not in inbox.text

    noah = web.browser(NOAH)  # gives it back; then Ava, in French, gives it up again
    noah.form("/members/permissions", {**data, f"permission.{MANAGE}": "on"}, "/members")
    ava.form("/language", {"lang": "fr", "next": "/"})
    ava.form("/members/permissions", data, from_page="/members")
    french = unescape(_main(ava.get("/")))
    assert "Les permissions sont enregistrées. Vous ne détenez plus" in french


def test_every_permission_has_its_words_on_the_page_in_both_languages():
    from countersign.domain.club.organization import Permission
    from countersign.domain.contracts import BUILT_IN
    from countersign.infrastructure.entrypoints.web.i18n import TEXTS

    own = {*Permission, *(contract.permission for contract in BUILT_IN)}
    for language in ("en", "fr"):
        missing = [p for p in own if f"members.permission.{p}" not in TEXTS[language]]
        assert missing == [], (language, missing)


def test_a_permission_without_words_reads_as_the_operations_it_allows(monkeypatch):
    """A plug-in's permission (or a new operation's before its words are written)."""
    from countersign.domain.contracts import REGISTRY
    from countersign.infrastructure.entrypoints.web import members

    refund = REGISTRY["order.refund_missing_discount"]
    monkeypatch.setattr(type(refund), "permission", "acme.refund_things")

    class Reader:
        def __init__(self, language: str) -> None:
            self.language = language

        def t(self, key: str) -> str:
            return key

    assert members._label("acme.refund_things", Reader("en")) == refund.title.text("en")
    assert members._label("acme.refund_things", Reader("fr")) == refund.title.text("fr")
    assert members._label("acme.nothing", Reader("en")) == "acme.nothing"


def test_a_permissions_change_stored_before_changed_by_was_kept_still_loads(cs, seeded):
    from eventsourcing.persistence import Notification

    cs.club.set_permissions("granite", BEN, [AUDIT])
    stored = [
        n
        for n in cs.app.recorder.select_notifications(1, limit=10_000)
        if n.topic.endswith("Organization.PermissionsChanged")
    ][-1]
    state = json.loads(stored.state)
    assert state.pop("changed_by") == "operator"
    older = Notification(
        id=stored.id,
        originator_id=stored.originator_id,
        originator_version=stored.originator_version,
        topic=stored.topic,
        state=json.dumps(state).encode(),
    )
    event = cs.app.mapper.to_domain_event(older)
    assert (event.email, event.permissions) == (BEN, [AUDIT])
    assert getattr(event, "changed_by", None) is None
    org = cs.store.get(
        Organization.create_id("granite"), Organization, version=stored.originator_version - 1
    )
    event.mutate(org)
    member = org.member(BEN)
    assert member is not None
    assert sorted(member.permissions) == [AUDIT]


def _roles(page: Any) -> list[str]:
    """Each member's role as the page shows it, beside their name."""
    return re.findall(r'<span class="pill tone-muted[^"]*">([^<]*)</span>', unescape(_main(page)))


def test_each_members_role_reads_in_the_pages_language(web, cs):
    """The role beside a member's name was the stored word ("manager") on the French page
    too; a role countersign names reads in the reader's words, one a club made up as typed."""
    club = cs.store.get(Organization.create_id("granite"), Organization)
    club.add_member("zoe@granite.example", "Zoe Roy", "Skip", [])
    cs.store.save(club)
    browser = web.browser(AVA)
    assert _roles(browser.get("/members")) == ["Manager", "Staff", "Manager", "Skip"]
    browser.form("/language", {"lang": "fr", "next": "/members"})
    assert _roles(browser.get("/members")) == ["Gestionnaire", "Personnel", "Gestionnaire", "Skip"]


def _labels(page: Any) -> list[str]:
    """Each permission checkbox's label, as a person (or a screen reader) reads it."""
    found = re.findall(r'<label for="m\d+-[^"]+">(.*?)</label>', _main(page))
    return [" ".join(unescape(re.sub(r"<[^>]+>", " ", label)).split()) for label in found]


def _codes(page: Any) -> dict[str, str]:
    """The foot's list of permission names for the command line: each label's code."""
    box = re.search(r'<details[^>]*id="permission-codes".*?</details>', _main(page))
    assert box, _main(page)
    rows = re.findall(r"<dt>(.*?)</dt> <dd><code>(.*?)</code></dd>", box.group(0))
    return {unescape(label): unescape(code) for label, code in rows}


def test_a_permission_reads_as_its_label_and_its_code_is_kept_for_the_command_line(web):
    """Each checkbox read its label and then its code ("Lire la piste d'audit audit.read"),
    which is the command line's and the API's, not a manager's. The label is the page's
    language alone; the codes are listed once, folded away beside the command the foot
    names, for an operator who types them."""
    browser = web.browser(AVA)
    for language, audit in (("en", "Read the audit trail"), ("fr", "Lire la piste d'audit")):
        browser.form("/language", {"lang": language, "next": "/members"})
        page = browser.get("/members")
        labels = _labels(page)
        assert audit in labels
        assert not any(code in label for label in labels for code in PERMISSIONS), labels
        codes = _codes(page)
        assert codes[audit] == AUDIT
        assert sorted(codes.values()) == sorted(PERMISSIONS)


def test_the_api_documents_roles_and_permissions_as_stable_codes():
    """The API answers codes, never a language's labels: a client keys by them."""
    from countersign.infrastructure.entrypoints.http.models.members import (
        MemberOut,
        PermissionsIn,
        PermissionsSetOut,
    )

    for field in (
        MemberOut.model_fields["role"],
        MemberOut.model_fields["permissions"],
        PermissionsSetOut.model_fields["permissions"],
        PermissionsIn.model_fields["permissions"],
    ):
        assert "stable code" in (field.description or ""), field.description
        assert "not translated" in (field.description or ""), field.description
