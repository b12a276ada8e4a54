"""A page request as its handler sees it (``Visit``): the request, its session, the
language, the form it sent and who is signed in (``User``, as their club knows them right
now). A handler answers with its page, or raises ``PageError`` for one of the error pages;
``site.Site.endpoint`` runs it. ``page_of_form`` names the page a form was sent from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode
from uuid import UUID

from countersign.application.authorization import Caller
from countersign.application.club import Membership
from countersign.infrastructure.entrypoints.web.i18n import translator
from countersign.infrastructure.entrypoints.web.sessions import Session
from starlette.requests import Request
from starlette.responses import Response


class PageError(Exception):
    """Answer with one of the error pages (``kind`` names its texts)."""

    def __init__(self, kind: str, status: int) -> None:
        super().__init__(kind)
        self.kind = kind
        self.status = status


@dataclass(frozen=True)
class User:
    """The signed-in person, as their club knows them right now."""

    membership: Membership

    @property
    def email(self) -> str:
        return self.membership.member.email

    @property
    def name(self) -> str:
        return self.membership.member.name

    @property
    def club(self) -> str:
        return self.membership.club

    @property
    def organization(self) -> str:
        """The club's slug."""
        return self.membership.organization

    @property
    def caller(self) -> Caller:
        """Who the application sees: this person, acting in this club."""
        return Caller(email=self.email, organization=self.organization)

    def may(self, permission: str) -> bool:
        """For what a page offers; the application decides what the person may do."""
        return self.membership.member.may(permission)


@dataclass
class Visit:
    """One request as a handler sees it."""

    request: Request
    session: Session
    language: str
    form: dict[str, str]
    user: User | None = None
    params: dict[str, str] = field(default_factory=dict)
    #: Whether this request brought the inbox's read models up to the log already
    #: (``Site.catch_up_inbox``): its lists and the navigation's counts read them after one.
    inbox_caught_up: bool = False

    @property
    def t(self) -> Callable[..., str]:
        return translator(self.language)

    @property
    def signed_in(self) -> User:
        assert self.user is not None
        return self.user

    def query(self, name: str, limit: int = 200) -> str:
        return str(self.request.query_params.get(name, ""))[:limit]


Handler = Callable[[Visit], Response]


#: Pages whose forms post to their own path or below it.
_FORM_PAGES = ("/webhooks", "/members", "/account/passkeys")


def page_of_form(path: str, interaction: str = "") -> str:
    """The page a form posted to ``path`` was on, to sign in back to; "" for the inbox. A
    conversation's page is its own path, with the conversation (``interaction``) if it reads
    as one."""
    path = quote(path, safe="/-_.~")
    if path.startswith("/proposals/"):
        head, _, action = path.rpartition("/")
        return head if action in ("approve", "decline") else path
    if path.startswith("/chat/"):
        try:
            return f"{path}?{urlencode({'interaction': str(UUID(interaction.strip()))})}"
        except ValueError:
            return path
    return next((page for page in _FORM_PAGES if path.startswith(page)), "")
