"""A message to an assistant longer than it reads (``MAX_MESSAGE`` characters) is refused on
every surface, before the model is asked or anything recorded: the API (422) and the chat page
already refused it; the command line cut it to its first 2,000 characters and sent that, so
the assistant answered a message the manager had not written."""

from __future__ import annotations

import pytest
from countersign.application.assistant.service import MAX_MESSAGE
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import AVA, count_events
from tests.test_blank_messages import wired

__all__ = ["wired"]  # the fixture, used by name

#: One character too many; the end is what cutting it would have lost.
TOO_LONG = "a" * MAX_MESSAGE + "!"


def test_the_application_refuses_a_message_longer_than_it_reads(wired):
    cs, endpoint = wired
    order = str(seed(cs)["orders"]["refund-ok"])
    before = count_events(cs)
    with pytest.raises(InvalidRequestError) as refused:
        cs.assistant.turn(
            organization="granite", actor=AVA, section="orders", resource_id=order, message=TOO_LONG
        )
    [problem] = refused.value.problems
    assert problem.field == "message"
    assert f"at most {MAX_MESSAGE:,} characters" in problem.message
    assert f"{len(TOO_LONG):,}" in problem.message
    assert endpoint.requests == []
    assert count_events(cs) == before
    # Exactly as long as it reads is a message like any other.
    turn = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="orders",
        resource_id=order,
        message="b" * MAX_MESSAGE,
    )
    assert turn.interaction_id
    assert len(endpoint.requests) == 1


def test_the_command_line_chat_refuses_it_rather_than_cutting_it(
    cs, seeded, database_url, capsys, monkeypatch
):
    order = str(seeded["orders"]["refund-ok"])
    argv = [
        *("chat", "--org", "granite", "--as", AVA, "--section", "orders"),
        *("--resource", order, "--database", database_url),
    ]
    before = count_events(cs)
    assert main([*argv, "--message", TOO_LONG]) == 4
    said = capsys.readouterr()
    printed = said.out + said.err
    assert "message" in printed
    assert f"at most {MAX_MESSAGE:,} characters" in printed
    assert count_events(cs) == before

    # Typed into the conversation: said, and the conversation goes on.
    typed = [TOO_LONG]
    prompts: list[str] = []

    def typing(prompt: str = "") -> str:
        prompts.append(prompt)
        if not typed:
            raise EOFError
        return typed.pop(0)

    monkeypatch.setattr("builtins.input", typing)
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"at most {MAX_MESSAGE:,} characters" in printed
    assert prompts == ["you> "] * 2
    assert count_events(cs) == before
