"""Reading a run's answer back from json/rpc lines: ``run_end`` names it, the last
assistant ``message_end`` (or a ``/goal`` reply) carries it (docs/rpc.md)."""

from __future__ import annotations

from typing import Any

import pytest

from heron.cli.modes.run_end import answer_at, answer_of, run_answers


def assistant_end(*blocks: dict[str, Any], role: str = "assistant") -> dict[str, Any]:
    return {"type": "message_end", "message": {"role": role, "content": list(blocks), "timestamp": 1}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def end(reason: str = "stop", **fields: Any) -> dict[str, Any]:
    return {"type": "run_end", "stop_reason": reason, **fields}


def test_the_last_assistant_message_of_each_run_is_its_answer() -> None:
    events = [
        assistant_end(text("calling a tool"), {"type": "toolCall", "id": "c", "name": "read", "arguments": {}}),
        assistant_end(text("tool output"), role="toolResult"),
        assistant_end({"type": "thinking", "thinking": "hm"}, text("Done: "), text("two blocks.")),
        end(id=1),
        assistant_end(text("second run")),
        end("length", id=2),
    ]
    assert run_answers(events) == ["Done: two blocks.", "second run"]
    assert answer_of(events) == "second run"


def test_a_run_that_failed_or_was_aborted_has_no_answer() -> None:
    events = [assistant_end(text("partial")), end("aborted"), assistant_end(text("x")), end("error")]
    assert run_answers(events) == [None, None]
    assert answer_of([]) is None
    # a run that answered nothing at all (no assistant message) has none either
    assert run_answers([end("stop")]) == [None]


def test_a_goal_reply_is_the_answer_when_no_model_answered() -> None:
    events = [{"type": "goal", "reply": "Goal set.", "error": False}, end(id=0)]
    assert run_answers(events) == ["Goal set."]
    # a model's message after the reply in the same run wins, as in the run's outcome
    events = [{"type": "goal", "reply": "Goal set."}, assistant_end(text("On it.")), end()]
    assert answer_of(events) == "On it."


def test_answer_at_reads_the_run_that_a_given_run_end_closes() -> None:
    first, second = end(id="a"), end(id="b")
    events = [assistant_end(text("one")), first, assistant_end(text("two")), second]
    assert answer_at(events, first) == "one" and answer_at(events, second) == "two"
    with pytest.raises(ValueError, match="not one of the events"):
        answer_at(events, end(id="a"))  # equal, but not a line of this stream
