"""An Agent run persists every message at message_end, in order, with its settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from heron.agent import Agent, AgentEvent, FunctionTool, MessageEndEvent, ToolParams, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.session.entries import ModelRef
from heron.session.recorder import SessionRecorder
from heron.session.store import SessionStore


class EchoParams(ToolParams):
    text: str


async def echo(call_id: str, params: EchoParams, signal: AbortSignal, on_update: Any) -> ToolResult:
    return ToolResult.text(f"echo: {params.text}")


def file_messages(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x)["message"] for x in path.read_text().splitlines()[1:] if '"type":"message"' in x[:20]]


async def test_every_message_is_on_disk_when_its_message_end_is_emitted(faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    agent = Agent(model=faux.model(), system_prompt="test", tools=[FunctionTool("echo", "Echo.", EchoParams, echo)])
    recorder = SessionRecorder(agent, store)
    seen_on_disk: list[bool] = []

    def check(event: AgentEvent) -> None:  # subscribed after the recorder: runs after it
        if isinstance(event, MessageEndEvent):
            on_disk = file_messages(path)
            # every message is on disk at its message_end, the first prompt included
            seen_on_disk.append(bool(on_disk) and on_disk[-1] == event.message.to_json_dict())

    agent.subscribe(check)
    faux.queue(
        tool_call("echo", {"text": "one"}, call_id="c1"),
        tool_call("echo", {"text": "two"}, call_id="c2"),
        text("all done"),
    )
    await agent.prompt("use the tool twice")
    assert seen_on_disk == [True, True, True, True, True, True]
    assert file_messages(path) == [m.to_json_dict() for m in agent.messages]
    assert [m["role"] for m in file_messages(path)] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
    ]
    recorder.close()
    store.close()
    reopened = SessionStore.open(path, read_only=True)
    context = reopened.build_context()
    assert [m.to_json_dict() for m in context.messages] == [m.to_json_dict() for m in agent.messages]
    assert context.model == ModelRef("faux", "faux-1") and context.thinking_level == "off"


async def test_model_and_thinking_changes_are_recorded_when_they_differ(faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    agent = Agent(model=faux.model(), thinking_level="low")
    with SessionRecorder(agent, store):
        faux.queue(text("first"), text("second"), text("third"))
        await agent.prompt("one")
        await agent.prompt("two")  # nothing changed: no new settings entries
        agent.set_model(faux.model("faux-2"))
        agent.set_thinking_level("high")
        await agent.prompt("three")
    store.close()
    kinds = []
    for line in path.read_text().splitlines()[1:]:
        entry = json.loads(line)
        kinds.append(entry["type"] if entry["type"] != "message" else entry["message"]["role"])
    assert kinds == [
        "model_change",
        "thinking_level_change",
        "user",
        "assistant",
        "user",
        "assistant",
        "model_change",
        "thinking_level_change",
        "user",
        "assistant",
    ]
    context = SessionStore.open(path, read_only=True).build_context()
    assert context.model == ModelRef("faux", "faux-2") and context.thinking_level == "high"


async def test_the_first_prompt_is_on_disk_before_its_request_is_sent(faux: FauxProvider, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    agent = Agent(model=faux.model())
    SessionRecorder(agent, store)
    at_request: list[list[dict[str, Any]]] = []
    real_stream = agent.stream_fn

    def spy(*args: Any, **kwargs: Any) -> Any:
        at_request.append(file_messages(path))  # what a kill at this moment would leave
        return real_stream(*args, **kwargs)

    agent.stream_fn = spy
    faux.queue(text("hi"))
    await agent.prompt("hello")
    assert [[m["role"] for m in seen] for seen in at_request] == [["user"]]
    assert at_request[0][0]["content"] == [{"type": "text", "text": "hello"}]
    store.close()
