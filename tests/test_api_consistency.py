"""What an integrator's second walk found, each kept fixed here: every surface reports a
proposal past its expiry as expired before the sweeper records it, the passkey challenge of
a decided proposal is refused as approving it is, the pages' 503 for a stopped read model
says when to try again, and a blank assistant message is refused before any model call."""

from __future__ import annotations

from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError

from tests.conftest import AVA
from tests.test_web_pages import Web, web_for


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def test_the_pages_503_for_a_stopped_read_model_says_when_to_try_again(web, monkeypatch):
    """The API's 503 unavailable carries Retry-After: 60; the page's said no wait at all."""
    ava = web.browser(AVA)

    def stopped(names: Any = None) -> None:
        raise ProjectionStoppedError("projection 'browser_view' stopped at notification 7", 7)

    monkeypatch.setattr(web.cs, "catch_up", stopped)
    page = ava.get("/")
    assert page.status_code == 503, page.text
    assert page.headers["retry-after"] == "60"
    assert "notification 7" not in page.text
