"""rpc mode: the command dispatcher against a CodingSession on the faux provider, then
``heron --mode rpc`` as a real subprocess driven by a scripted client over stdin/stdout,
against a local OpenAI-compatible server (prompt, steer during a tool call, abort, compact,
fork, get_state, malformed lines, EOF)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.ai.models import ModelRegistry
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import Context
from heron.cli.app_state import App
from heron.cli.modes.rpc_mode import RpcServer, _Output, encode_line, split_lines
from heron.cli.modes.run_end import answer_at
from heron.coding.runtime import CodingSession
from heron.coding.settings import ResolvedModel, settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.session.store import SessionStore
from tests.support.http_server import LocalServer, Reply
from tests.support.sse import openai_chunk, openai_reply, openai_sse

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0

# --- the dispatcher, in process --------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "small.py").write_text("def f():\n    return 1\n")
    return proj


class Harness:
    """An :class:`RpcServer` whose output lands in a list, fed line by line."""

    def __init__(
        self, project: Path, faux: FauxProvider, *, settings: dict[str, Any] | None = None, no_session: bool = False
    ) -> None:
        home = Path(os.environ["HERON_HOME"])
        model = faux.model()
        store = SessionStore.in_memory(project) if no_session else SessionStore.create(project, home=home)
        session = CodingSession(
            cwd=project, model=model, store=store, settings=settings_from_dict(settings or {}), home=home
        )
        args = argparse.Namespace(no_session=no_session, api_key=None)
        self.app = App(
            args=args,
            cwd=project,
            home=home,
            settings=session.settings,
            registry=ModelRegistry.load(),
            resolved=ResolvedModel(model, None, "test"),
            session=session,
        )
        self.out: list[dict[str, Any]] = []
        self.server = RpcServer(self.app, self._write)

    def _write(self, data: dict[str, Any]) -> None:
        # through the real encoder, as the client would read it
        self.out.append(json.loads(encode_line(data)))

    async def send(self, command: dict[str, Any] | bytes | str) -> None:
        if isinstance(command, dict):
            line = json.dumps(command).encode()
        elif isinstance(command, str):
            line = command.encode()
        else:
            line = command
        await self.server.handle_line(line + b"\n")
        await asyncio.sleep(0)

    async def call(self, command: dict[str, Any]) -> dict[str, Any]:
        """Send and return the response with the command's id (waiting for late ones)."""
        await self.send(command)
        return await self.wait(lambda o: o.get("type") == "response" and o.get("id") == command.get("id"))

    async def wait(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for item in self.out:
                if predicate(item):
                    return item
            await asyncio.sleep(0.005)
        raise AssertionError(f"nothing matched; output: {[o.get('type') for o in self.out]}")

    async def run_end(self, cmd_id: Any) -> dict[str, Any]:
        return await self.wait(lambda o: o.get("type") == "run_end" and o.get("id") == cmd_id)

    def responses(self) -> list[dict[str, Any]]:
        return [o for o in self.out if o.get("type") == "response"]


async def test_prompt_answers_at_once_then_streams_events_and_ends_with_run_end(
    project: Path, faux: FauxProvider
) -> None:
    faux.queue(tool_call("read", {"path": "small.py"}), text("f returns 1."))
    h = Harness(project, faux)
    response = await h.call({"id": "p1", "type": "prompt", "message": "what does f return?"})
    assert response == {
        "type": "response",
        "id": "p1",
        "command": "prompt",
        "success": True,
        "data": {"disposition": "started"},
    }
    end = await h.run_end("p1")
    assert end["stop_reason"] == "stop" and answer_at(h.out, end) == "f returns 1." and end["error"] is None
    types = [o["type"] for o in h.out]
    assert types[0] == "response" and types[1] == "agent_start" and types[-1] == "agent_settled"
    assert types[-3:-1] == ["agent_end", "run_end"]
    assert h.out[-1] == {"type": "agent_settled", "aborted": False}
    for name in ("message_update", "tool_execution_start", "tool_execution_end", "turn_end"):
        assert name in types
    tool_end = next(o for o in h.out if o["type"] == "tool_execution_end")
    assert "return 1" in tool_end["result"]["content"][0]["text"]
    # messages in the on-disk camelCase form
    messages = (await h.call({"id": 2, "type": "get_messages"}))["data"]
    assert [m["role"] for m in messages["messages"]] == ["user", "assistant", "toolResult", "assistant"]
    assert messages["messages"][2]["toolName"] == "read"
    assert [p.get("role") for p in messages["path"] if p["type"] == "message"] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]


async def test_malformed_lines_each_get_an_error_and_serving_goes_on(project: Path, faux: FauxProvider) -> None:
    h = Harness(project, faux)
    bad: list[tuple[bytes | str | dict[str, Any], Any, Any, str]] = [
        ("garbage", None, "parse", "invalid JSON"),
        ("[]", None, "parse", "a command is a JSON object, got an array"),
        ('"prompt"', None, "parse", "got a string"),
        ({"type": "nope", "id": 1}, 1, "nope", "Unknown command: nope"),
        ({"id": 2}, 2, None, '"type" missing'),
        ({"type": 3, "id": "x"}, "x", None, '"type" must be a string'),
        ({"type": "prompt", "id": 4}, 4, "prompt", 'missing "message"'),
        ({"type": "prompt", "id": 5, "message": 5}, 5, "prompt", '"message" must be a string, got a number'),
        ({"type": "prompt", "id": 6, "message": "  "}, 6, "prompt", '"message" is empty'),
        ({"type": "prompt", "id": 7, "message": "hi", "images": "x"}, 7, "prompt", '"images" must be an array'),
        (
            {"type": "prompt", "id": 8, "message": "hi", "images": [{"data": "!!", "mimeType": "image/png"}]},
            8,
            "prompt",
            "not base64",
        ),
        (
            {"type": "prompt", "id": 9, "message": "hi", "images": [{"data": "AAAA", "mimeType": "text/plain"}]},
            9,
            "prompt",
            '"mimeType" must be one of',
        ),
        ({"type": "get_state", "id": {"a": 1}}, None, "parse", '"id" must be a string or a number'),
        ({"type": "get_state", "id": True}, None, "parse", '"id" must be a string or a number'),
        (
            {"type": "set_thinking_level", "id": 10, "level": "max"},
            10,
            "set_thinking_level",
            "unknown thinking level 'max'",
        ),
        ({"type": "set_model", "id": 11}, 11, "set_model", "set_model needs"),
        ({"type": "steer", "id": 12, "message": "x"}, 12, "steer", "nothing is running"),
        ({"type": "follow_up", "id": 13, "message": "x"}, 13, "follow_up", "nothing is running"),
        ({"type": "fork", "id": 14, "entryId": "nope"}, 14, "fork", "no entry 'nope'"),
        (
            {"type": "set_steering_mode", "id": 16, "mode": "one-at-a-time"},
            16,
            "set_steering_mode",
            'the only mode is "all"',
        ),
        ({"type": "set_session_name", "id": 17, "name": " "}, 17, "set_session_name", "cannot be empty"),
        (
            {"type": "permission_response", "id": "perm-9", "decision": "deny"},
            "perm-9",
            "permission_response",
            "no open permission request 'perm-9'",
        ),
        ({"type": "switch_session", "id": 15, "session": "ffffffff-no-such"}, 15, "switch_session", "no session"),
        (b'{"type":"get_state","id":"\xff"}', None, "parse", "not UTF-8"),
        ("{" * 100_000, None, "parse", "invalid JSON"),
    ]
    for line, cmd_id, command, message in bad:
        before = len(h.out)
        await h.send(line)
        assert len(h.out) == before + 1, line
        response = h.out[-1]
        assert response["type"] == "response" and response["success"] is False, line
        assert response["id"] == cmd_id and response["command"] == command, (line, response)
        assert message in response["error"], (line, response["error"])
    await h.send("")  # blank lines are skipped silently
    await h.send("   \r")
    assert len(h.out) == len(bad)
    state = await h.call({"id": "ok", "type": "get_state"})
    assert state["success"] is True and state["data"]["isStreaming"] is False


async def test_text_with_unicode_line_separators_stays_in_its_line(project: Path, faux: FauxProvider) -> None:
    faux.queue(text("one\u2028two\u2029three\x85four"))
    h = Harness(project, faux)
    await h.send('{"id":1,"type":"prompt","message":"a\u2028b"}\r')  # CR before the LF is JSON whitespace
    end = await h.run_end(1)
    assert answer_at(h.out, end) == "one\u2028two\u2029three\x85four"
    assert faux.requests[0].messages[0].content[0].text == "a\u2028b"
    message_end = [o for o in h.out if o["type"] == "message_end" and o["message"]["role"] == "assistant"][-1]
    line = encode_line(message_end)  # the line that carries the answer
    assert line.count(b"\n") == 1 and "\u2028".encode() not in line and b"\\u2028" in line
    assert b"\\u0085" in line
    assert len(line.decode().splitlines()) == 1
    # a lone surrogate (valid in a JSON string escape) cannot break the output encoding:
    # it is written as U+FFFD, as the session file holds it
    assert json.loads(encode_line({"text": "\ud800"})) == {"text": "\ufffd"}


def test_framing_splits_on_lf_only() -> None:
    buffer = bytearray()
    assert split_lines(buffer, b'{"a":"x') == []
    assert split_lines(buffer, '\u2028y\r\x85"}\r'.encode()) == []  # no LF yet: one line in the making
    assert split_lines(buffer, b'\n{"b":1}\n{"c"') == ['{"a":"x\u2028y\r\x85"}\r\n'.encode(), b'{"b":1}\n']
    assert bytes(buffer) == b'{"c"'
    assert split_lines(buffer, b"\n\n") == [b'{"c"\n', b"\n"] and buffer == b""


def test_output_stops_quietly_when_the_reader_is_gone() -> None:
    read_end, write_end = os.pipe()
    closed: list[bool] = []
    with os.fdopen(write_end, "wb") as stream:
        output = _Output(stream, lambda: closed.append(True))
        output.write({"type": "x"})
        assert os.read(read_end, 100) == b'{"type":"x"}\n'
        os.close(read_end)
        output.write({"type": "y"})
        output.write({"type": "z"})
        assert output.closed and closed == [True]  # told once; later writes dropped


async def test_a_prompt_while_running_is_refused_steer_and_follow_up_are_queued(
    project: Path, faux: FauxProvider
) -> None:
    faux.chunk_delay = 0.02
    faux.chunk_size = 4
    seen: list[Context] = []

    def answer(label: str) -> Callable[[Context], FauxReply]:
        def reply(context: Context) -> FauxReply:
            seen.append(context)
            return text(f"{label}: a fairly long answer streamed slowly")

        return reply

    faux.queue(answer("first"), answer("second"), answer("third"))
    h = Harness(project, faux)
    await h.call({"id": 1, "type": "prompt", "message": "start"})
    await h.wait(lambda o: o["type"] == "message_update")
    refused = await h.call({"id": 2, "type": "prompt", "message": "another"})
    assert refused["success"] is False and "steer" in refused["error"] and "follow_up" in refused["error"]
    steer = await h.call({"id": 3, "type": "steer", "message": "change of plan"})
    assert steer["success"] is True and steer["data"]["pending"] == {"steering": 1, "followUp": 0}
    assert steer["data"]["disposition"] == "queued"
    follow = await h.call({"id": 4, "type": "follow_up", "message": "and then this"})
    assert follow["data"]["pending"] == {"steering": 1, "followUp": 1}
    state = (await h.call({"id": 5, "type": "get_state"}))["data"]
    assert state["isStreaming"] is True and state["pending"] == {"steering": 1, "followUp": 1}
    assert state["pendingMessageCount"] == 2
    updates = [o for o in h.out if o["type"] == "queue_update"]
    assert updates == [
        {"type": "queue_update", "steering": ["change of plan"], "followUp": []},
        {"type": "queue_update", "steering": ["change of plan"], "followUp": ["and then this"]},
    ]
    for command in ({"type": "compact"}, {"type": "new_session"}, {"type": "fork"}):
        busy = await h.call({"id": "busy", **command})
        assert busy["success"] is False and "running" in busy["error"]
        h.out.remove(busy)
    end = await h.run_end(1)
    assert answer_at(h.out, end) == "third: a fairly long answer streamed slowly" and end["unsent"] == []
    users = [m.content[0].text for m in seen[-1].messages if m.role == "user"]
    assert users == ["start", "change of plan", "and then this"]


async def test_abort_ends_the_run_as_aborted_and_reports_unsent_messages(project: Path, faux: FauxProvider) -> None:
    faux.chunk_delay = 0.05
    faux.chunk_size = 2
    faux.queue(text("x" * 400), text("after the abort"))
    h = Harness(project, faux)
    await h.call({"id": 1, "type": "prompt", "message": "go"})
    await h.wait(lambda o: o["type"] == "message_update")
    await h.call({"id": 2, "type": "steer", "message": "never delivered"})
    aborted = await h.call({"id": 3, "type": "abort"})
    assert aborted["data"] == {"wasRunning": True}
    end = await h.run_end(1)
    # pi's abort answers once the session is idle: after run_end and agent_settled
    assert h.out.index(end) < h.out.index({"type": "agent_settled", "aborted": True}) < h.out.index(aborted)
    assert end["stop_reason"] == "aborted" and answer_at(h.out, end) is None and end["unsent"] == ["never delivered"]
    assert (await h.call({"id": 4, "type": "abort"}))["data"] == {"wasRunning": False}
    assert (await h.call({"id": 5, "type": "get_state"}))["data"]["pending"] == {"steering": 0, "followUp": 0}
    faux.chunk_delay = 0.0
    await h.call({"id": 6, "type": "prompt", "message": "again"})
    assert answer_at(h.out, await h.run_end(6)) == "after the abort"


async def test_abort_while_waiting_for_the_provider_to_load_cancels_the_run(project: Path, faux: FauxProvider) -> None:
    import concurrent.futures

    h = Harness(project, faux)
    h.server._warming = concurrent.futures.Future()  # a provider that never finishes loading
    await h.call({"id": 1, "type": "prompt", "message": "go"})
    assert (await h.call({"id": 2, "type": "abort"}))["data"] == {"wasRunning": True}
    end = await h.run_end(1)
    assert end["stop_reason"] == "aborted" and end["error"] is None
    assert faux.requests == []


def summaries(faux: FauxProvider, script: list[FauxReply], summary: str = "## Goal\nsummarised") -> list[Context]:
    asked: list[Context] = []

    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            asked.append(context)
            return text(summary)
        return script.pop(0)

    faux.set_fallback(reply)
    return asked


async def test_compact_answers_with_the_result_or_nothing_to_compact(project: Path, faux: FauxProvider) -> None:
    asked = summaries(faux, [text("a" * 2_000), text("b" * 2_000)])
    h = Harness(project, faux, settings={"compaction": {"keepRecentTokens": 100}})
    nothing = await h.call({"id": 1, "type": "compact"})
    # pi answers a compaction that cannot be done with an error; so does heron now
    assert nothing["success"] is False and nothing["error"] == "Nothing to compact: nothing to compact"
    for number in (2, 3):
        await h.call({"id": number, "type": "prompt", "message": f"question {number}"})
        await h.run_end(number)
    before = (await h.call({"id": 4, "type": "get_state"}))["data"]["context"]["tokens"]
    done = await h.call({"id": 5, "type": "compact", "customInstructions": "the b answers"})
    assert done["success"] is True, done
    data = done["data"]
    assert data["summary"].startswith("## Goal\nsummarised") and data["details"] == {}
    assert data["estimatedTokensAfter"] < data["tokensBefore"] and data["entryId"] and data["firstKeptEntryId"]
    assert "the b answers" in json.dumps([str(m.content) for m in asked[0].messages])
    types = [o["type"] for o in h.out]
    assert types.index("compaction_start") < types.index("compaction_end") < h.out.index(done)
    after = (await h.call({"id": 6, "type": "get_state"}))["data"]
    assert after["context"]["tokens"] < before and after["isCompacting"] is False
    end = [o for o in h.out if o["type"] == "compaction_end"][-1]
    assert end["reason"] == "manual" and end["aborted"] is False and end["result"]["summary"] == data["summary"]
    stats = (await h.call({"id": 7, "type": "get_session_stats"}))["data"]
    assert stats["compactions"] == 1 and stats["ledger"]["records"] >= 1
    assert stats["ledger"]["savedTokens"].get("compaction", 0) > 0


async def test_compact_failure_is_an_error_response(project: Path, faux: FauxProvider) -> None:
    from heron.ai.providers.faux import error

    script = [text("a" * 2_000), text("b" * 2_000)]

    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            return error("400 bad summary request", status=400)
        return script.pop(0)

    faux.set_fallback(reply)
    h = Harness(project, faux, settings={"compaction": {"keepRecentTokens": 100}, "retry": {"enabled": False}})
    for number in (1, 2):
        await h.call({"id": number, "type": "prompt", "message": f"question {number}"})
        await h.run_end(number)
    failed = await h.call({"id": 3, "type": "compact"})
    assert failed["success"] is False and failed["error"].startswith("compaction failed")


async def test_set_model_and_thinking_level(project: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(project, faux)
    unknown = await h.call({"id": 1, "type": "set_model", "model": "nobody/nothing"})
    assert unknown["success"] is False and "unknown model 'nobody/nothing'" in unknown["error"]
    no_key = await h.call({"id": 2, "type": "set_model", "provider": "anthropic", "model_id": "claude-sonnet-4-5"})
    assert no_key["success"] is False and "ANTHROPIC_API_KEY" in no_key["error"]
    assert h.app.session.model.provider == "faux"
    same = await h.call({"id": 3, "type": "set_model", "model": "faux/faux-1"})
    assert same["data"]["ref"] == "faux/faux-1"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    ok = await h.call({"id": 4, "type": "set_model", "provider": "anthropic", "model_id": "claude-sonnet-4-5"})
    assert ok["success"] is True and ok["data"]["ref"] == "anthropic/claude-sonnet-4-5"
    assert ok["data"]["provider"] == "anthropic" and ok["data"]["contextWindow"] > 0
    assert h.app.session.model.ref == "anthropic/claude-sonnet-4-5" and h.app.session.api_key == "sk-test"
    by_ref = await h.call({"id": 5, "type": "set_model", "model": "anthropic/claude-haiku-4-5"})
    assert by_ref["data"]["id"] == "claude-haiku-4-5"
    level = await h.call({"id": 6, "type": "set_thinking_level", "level": "high"})
    assert level["data"]["thinkingLevel"] == "high"
    state = (await h.call({"id": 7, "type": "get_state"}))["data"]
    assert state["model"]["ref"] == "anthropic/claude-haiku-4-5" and state["thinkingLevel"] == "high"


async def test_new_session_switch_session_and_fork(project: Path, faux: FauxProvider) -> None:
    faux.queue(text("first answer"), text("second answer"))
    h = Harness(project, faux)
    await h.call({"id": 1, "type": "prompt", "message": "one"})
    await h.run_end(1)
    await h.call({"id": 2, "type": "set_thinking_level", "level": "low"})
    original = (await h.call({"id": 3, "type": "get_state"}))["data"]
    assert "sessionName" not in original  # pi leaves it out until one is set
    path = (await h.call({"id": 4, "type": "get_messages"}))["data"]["path"]
    user_entry = next(p["id"] for p in path if p.get("role") == "user")

    fresh = await h.call({"id": 5, "type": "new_session"})
    assert fresh["success"] is True and fresh["data"]["messageCount"] == 0 and fresh["data"]["cancelled"] is False
    assert fresh["data"]["sessionId"] != original["sessionId"]
    await h.call({"id": 6, "type": "prompt", "message": "two"})
    await h.run_end(6)
    assert (await h.call({"id": 7, "type": "set_thinking_level", "level": "off"}))["success"]

    back = await h.call({"id": 8, "type": "switch_session", "sessionPath": original["sessionId"][:8]})
    assert back["success"] is True, back
    assert back["data"]["sessionId"] == original["sessionId"] and back["data"]["messageCount"] == 2
    assert back["data"]["thinkingLevel"] == "low"  # recorded in that session
    again = await h.call({"id": 9, "type": "switch_session", "session": original["sessionFile"]})
    assert again["data"]["changed"] is False
    forkable = (await h.call({"id": 91, "type": "get_fork_messages"}))["data"]["messages"]
    assert forkable == [{"entryId": user_entry, "text": "one"}]

    # pi's fork: from a user message, into a session holding what came before it
    fork = await h.call({"id": 10, "type": "fork", "entryId": user_entry})
    assert fork["success"] is True, fork
    data = fork["data"]
    assert data["text"] == "one" and data["cancelled"] is False and data["messageCount"] == 0
    assert data["parentSession"] == original["sessionFile"] and data["sessionId"] != original["sessionId"]
    # heron's extension: at any other entry, the fork ends with that entry
    await h.call({"id": 11, "type": "switch_session", "sessionPath": original["sessionFile"]})
    answer_entry = next(p["id"] for p in path if p.get("role") == "assistant")
    at = (await h.call({"id": 12, "type": "fork", "entryId": answer_entry}))["data"]
    assert at["text"] is None and at["messageCount"] == 2 and at["entryId"] == answer_entry
    clone = (await h.call({"id": 13, "type": "clone"}))["data"]
    assert (
        clone["cancelled"] is False
        and clone["messageCount"] == 2
        and Path(clone["sessionFile"]).parent == Path(original["sessionFile"]).parent
    )
    named = await h.call({"id": 14, "type": "set_session_name", "name": "my work"})
    assert named["success"] is True
    assert (await h.call({"id": 15, "type": "get_state"}))["data"]["sessionName"] == "my work"


async def test_session_stats_count_the_whole_file(project: Path, faux: FauxProvider) -> None:
    faux.queue(tool_call("read", {"path": "small.py"}), text("done"))
    h = Harness(project, faux)
    await h.call({"id": 1, "type": "prompt", "message": "read it"})
    await h.run_end(1)
    stats = (await h.call({"id": 2, "type": "get_session_stats"}))["data"]
    assert (stats["userMessages"], stats["assistantMessages"], stats["toolResults"], stats["totalMessages"]) == (
        1,
        2,
        1,
        4,
    )
    assert stats["toolCalls"] == 1 and stats["compactions"] == 0 and stats["otherMessages"] == 0
    assert stats["tokens"]["input"] > 0 and stats["tokens"]["output"] > 0
    assert stats["tokens"]["total"] >= stats["tokens"]["input"] + stats["tokens"]["output"]
    assert stats["cost"] > 0 and stats["sessionFile"] == str(h.app.session.store.path)
    assert set(stats["contextUsage"]) == {"tokens", "contextWindow", "percent"}


async def test_no_session_keeps_new_sessions_and_forks_in_memory(project: Path, faux: FauxProvider) -> None:
    faux.queue(text("hi"))
    h = Harness(project, faux, no_session=True)
    await h.call({"id": 1, "type": "prompt", "message": "hello"})
    await h.run_end(1)
    fork = (await h.call({"id": 2, "type": "clone"}))["data"]
    assert fork["sessionFile"] is None and fork["messageCount"] == 2
    fresh = (await h.call({"id": 3, "type": "new_session"}))["data"]
    assert fresh["sessionFile"] is None and fresh["messageCount"] == 0
    assert not (Path(os.environ["HERON_HOME"]) / "sessions").exists()


# --- heron --mode rpc as a subprocess ------------------------------------------------------------------


def turn(text_value: str = "", calls: list[tuple[str, str, dict[str, Any]]] | None = None) -> Reply:
    return openai_reply(text_value, calls or [])


def slow_stream(words: int = 600, delay: float = 0.05) -> Reply:
    """Many small content deltas, sent slowly: half a minute of streaming unless aborted."""
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": f"word{i} "}) for i in range(words)]
    chunks.append(openai_chunk({}, finish="stop"))
    body = openai_sse(chunks)
    size = len(body) // (words + 2)
    return Reply(body=body, chunk_size=size, chunk_delay=delay)


class Client:
    """A scripted rpc client: writes command lines to heron's stdin and reads its stdout
    lines (through a thread, so every read has a timeout)."""

    def __init__(self, server: LocalServer, project: Path, home: Path, *extra: str, stdin: Path | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["HERON_HOME"] = str(home)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
        source = stdin.open("rb") if stdin is not None else None
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "heron.cli.main",
                "--mode",
                "rpc",
                "--base-url",
                server.url + "/v1",
                "--model",
                "test-model",
                *extra,
            ],
            cwd=project,
            env=env,
            stdin=source if source is not None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if source is not None:
            source.close()  # the child has its own copy
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.stderr = b""
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self._ids = iter(range(1, 1_000_000))

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def send_raw(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def send(self, command: dict[str, Any]) -> Any:
        command = dict(command)
        command.setdefault("id", next(self._ids))
        self.send_raw(json.dumps(command).encode() + b"\n")
        return command["id"]

    def next(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output within {timeout}s; stderr: {self.stderr.decode()[-2000:]}") from None
        if line is None:
            raise AssertionError(f"heron exited; stderr: {self.stderr.decode()[-2000:]}")
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        item: dict[str, Any] = json.loads(line)
        self.seen.append(item)
        return item

    def until(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT) -> dict[str, Any]:
        for item in self.seen:
            if predicate(item):
                return item
        deadline = time.monotonic() + timeout
        while True:
            item = self.next(max(0.01, deadline - time.monotonic()))
            if predicate(item):
                return item

    def call(self, command: dict[str, Any], timeout: float = TIMEOUT) -> dict[str, Any]:
        cmd_id = self.send(command)
        return self.until(lambda o: o["type"] == "response" and o["id"] == cmd_id, timeout)

    def run(self, message: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        accepted = self.call({"type": "prompt", "message": message})
        assert accepted["success"] is True, accepted
        return self.until(lambda o: o["type"] == "run_end" and o["id"] == accepted["id"], timeout)

    def close(self, timeout: float = TIMEOUT) -> int:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "notes.txt").write_text("the answer is 42\n")
    return path


@pytest.fixture
def rpc(local_server: LocalServer, workdir: Path, home: Path) -> Iterator[Callable[..., Client]]:
    clients: list[Client] = []

    def start(*extra: str) -> Client:
        client = Client(local_server, workdir, home, *extra)
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.kill()


def request_messages(server: LocalServer, index: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = server.requests[index].json()["messages"]
    return messages


def test_subprocess_prompt_events_final_answer_and_state(
    local_server: LocalServer, rpc: Callable[..., Client], home: Path
) -> None:
    local_server.queue(turn("Reading it.", [("call_1", "read", {"path": "notes.txt"})]), turn("It says 42."))
    client = rpc()
    end = client.run("what do the notes say?")
    assert end["stop_reason"] == "stop" and answer_at(client.seen, end) == "It says 42."
    client.until(lambda o: o["type"] == "agent_settled")
    types = [o["type"] for o in client.seen]
    assert types[0] == "response" and types[1] == "agent_start"
    assert types.index("run_end") < types.index("agent_settled")
    assert types.index("tool_execution_start") < types.index("tool_execution_end") < types.index("agent_end")
    tool_end = next(o for o in client.seen if o["type"] == "tool_execution_end")
    assert "the answer is 42" in tool_end["result"]["content"][0]["text"]
    assert request_messages(local_server, 1)[-1]["role"] == "tool"

    state = client.call({"type": "get_state"})["data"]
    assert state["model"]["ref"] == "custom/test-model" and state["isStreaming"] is False
    assert state["messageCount"] == 4 and state["pending"] == {"steering": 0, "followUp": 0}
    # the scripted server reports 100 prompt tokens, implausibly few for ~2,000 tokens of
    # system prompt, tools and messages: heron's own count stands (docs/context.md)
    assert state["context"]["contextWindow"] == 128_000 and 1_000 < state["context"]["tokens"] < 3_000
    session_file = Path(state["sessionFile"])
    assert session_file.is_file() and home in session_file.parents
    assert state["sessionId"] in session_file.name

    messages = client.call({"type": "get_messages"})["data"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[-1]["content"][0]["text"] == "It says 42."

    unknown = client.call({"type": "set_model", "model": "nope/unknown-model"})
    assert unknown["success"] is False and "unknown model" in unknown["error"]
    assert client.close() == 0


def test_subprocess_steer_during_a_tool_call_reaches_the_next_request(
    local_server: LocalServer, rpc: Callable[..., Client]
) -> None:
    local_server.queue(turn("", [("call_1", "bash", {"command": "sleep 1; echo slept"})]), turn("Adjusted."))
    client = rpc()
    accepted = client.call({"type": "prompt", "message": "run the slow command"})
    client.until(lambda o: o["type"] == "tool_execution_start" and o["toolName"] == "bash")
    steer = client.call({"type": "steer", "message": "also mention the weather"})
    assert steer["success"] is True and steer["data"]["pending"]["steering"] == 1
    state = client.call({"type": "get_state"})
    assert state["data"]["isStreaming"] is True
    end = client.until(lambda o: o["type"] == "run_end" and o["id"] == accepted["id"])
    # both were answered while the command was still running
    tool_end = next(i for i, o in enumerate(client.seen) if o["type"] == "tool_execution_end")
    assert client.seen.index(steer) < client.seen.index(state) < tool_end
    assert answer_at(client.seen, end) == "Adjusted." and end["unsent"] == []
    assert len(local_server.requests) == 2
    second = request_messages(local_server, 1)
    roles = [m["role"] for m in second]
    assert roles[-2:] == ["tool", "user"]
    assert "slept" in json.dumps(second[-2]["content"])
    assert "also mention the weather" in json.dumps(second[-1]["content"])
    assert client.close() == 0


def test_subprocess_abort_during_a_slow_stream_then_keeps_serving(
    local_server: LocalServer, rpc: Callable[..., Client]
) -> None:
    local_server.queue(slow_stream(), turn("Fresh answer."))
    client = rpc()
    accepted = client.call({"type": "prompt", "message": "write a lot"})
    client.until(lambda o: o["type"] == "message_update")
    started = time.monotonic()
    aborted = client.call({"type": "abort"})
    assert aborted["success"] is True and aborted["data"]["wasRunning"] is True
    end = client.until(lambda o: o["type"] == "run_end" and o["id"] == accepted["id"])
    assert end["stop_reason"] == "aborted" and time.monotonic() - started < 10
    last = next(o for o in reversed(client.seen) if o["type"] == "message_end")
    assert last["message"]["stopReason"] == "aborted"
    assert client.call({"type": "get_state"})["data"]["isStreaming"] is False
    again = client.run("try again")
    assert answer_at(client.seen, again) == "Fresh answer."
    assert client.close() == 0


def test_subprocess_compact_and_stats(local_server: LocalServer, rpc: Callable[..., Client], home: Path) -> None:
    # a long second prompt: the cut falls at it (no split turn, so one summary request)
    (home / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 100}}))
    local_server.queue(turn("a" * 3_000), turn("ok"), turn("## Goal\nthe summary"))
    client = rpc()
    client.run("first")
    client.run("second " + "b" * 3_000)
    assert client.call({"type": "get_state"})["data"]["messageCount"] == 4
    done = client.call({"type": "compact", "customInstructions": "keep the b part"})
    assert done["success"] is True, done
    assert done["data"]["summary"].startswith("## Goal\nthe summary")
    assert "keep the b part" in json.dumps(local_server.requests[-1].json())
    assert client.call({"type": "get_state"})["data"]["messageCount"] == 3
    messages = client.call({"type": "get_messages"})["data"]["messages"]
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant"]
    stats = client.call({"type": "get_session_stats"})["data"]
    assert stats["compactions"] == 1 and stats["userMessages"] == 2 and stats["assistantMessages"] == 2
    assert stats["tokens"]["input"] == 200 and stats["tokens"]["output"] == 40  # from the usage chunks
    assert client.close() == 0


def test_subprocess_fork_and_switch_back(local_server: LocalServer, rpc: Callable[..., Client]) -> None:
    local_server.queue(turn("first answer"))
    client = rpc()
    client.run("hello")
    original = client.call({"type": "get_state"})["data"]
    fork = client.call({"type": "clone"})
    assert fork["success"] is True, fork
    forked = Path(fork["data"]["sessionFile"])
    assert forked.is_file() and str(forked) != original["sessionFile"]
    header = json.loads(forked.read_text().splitlines()[0])
    assert header["parentSession"] == original["sessionFile"]
    state = client.call({"type": "get_state"})["data"]
    assert state["sessionFile"] == str(forked) and state["messageCount"] == 2
    back = client.call({"type": "switch_session", "sessionPath": original["sessionId"][:8]})
    assert back["success"] is True and back["data"]["sessionFile"] == original["sessionFile"]
    assert client.close() == 0


def test_subprocess_malformed_lines_then_a_valid_command(local_server: LocalServer, rpc: Callable[..., Client]) -> None:
    local_server.queue(turn("para\u2028graph"))
    client = rpc()
    for raw in (
        b"garbage\n",
        b"[]\n",
        b'{"type":"nope"}\n',
        b'{"type":"prompt","id":"m"}\n',
        b"\n",
        b'{"type":"get_state","id":"crlf"}\r\n',
    ):
        client.send_raw(raw)
    errors = [client.next() for _ in range(4)]
    assert all(e["type"] == "response" and e["success"] is False for e in errors)
    assert [e["id"] for e in errors] == [None, None, None, "m"]
    assert [e["command"] for e in errors] == ["parse", "parse", "nope", "prompt"]
    assert "invalid JSON" in errors[0]["error"] and 'missing "message"' in errors[3]["error"]
    crlf = client.next()
    assert crlf["id"] == "crlf" and crlf["success"] is True
    # U+2028 sent raw (not as an escape) stays inside its line
    client.send_raw(
        json.dumps({"type": "prompt", "id": "sep", "message": "split\u2028me"}, ensure_ascii=False).encode() + b"\n"
    )
    end = client.until(lambda o: o["type"] == "run_end" and o["id"] == "sep")
    assert answer_at(client.seen, end) == "para\u2028graph"
    messages = client.call({"type": "get_messages"})["data"]["messages"]
    assert messages[0]["content"][0]["text"] == "split\u2028me"
    assert client.close() == 0


def test_subprocess_commands_from_a_file_eof_lets_the_run_finish(
    local_server: LocalServer, workdir: Path, home: Path
) -> None:
    """``heron --mode rpc < commands.jsonl``: stdin is a file, its last line has no LF, and
    EOF arrives while the run works: the run finishes, then heron exits 0."""
    local_server.queue(turn("", [("call_1", "bash", {"command": "sleep 0.5; echo done"})]), turn("Finished."))
    commands = workdir / "commands.jsonl"
    commands.write_bytes(b'{"type":"prompt","id":"p","message":"work, then stop"}\n{"type":"get_state","id":"s"}')
    client = Client(local_server, workdir, home, stdin=commands)
    try:
        assert client.proc.wait(TIMEOUT) == 0
        end = client.until(lambda o: o["type"] == "run_end")
        assert end["id"] == "p" and answer_at(client.seen, end) == "Finished."
        state = client.until(lambda o: o.get("id") == "s")
        assert state["data"]["isStreaming"] is True
        assert client.seen.index(state) < client.seen.index(end)
    finally:
        client.kill()


def test_subprocess_ctrl_c_aborts_the_run_then_ends_heron_when_idle(
    local_server: LocalServer, rpc: Callable[..., Client]
) -> None:
    local_server.queue(slow_stream())
    client = rpc()
    accepted = client.call({"type": "prompt", "message": "write a lot"})
    client.until(lambda o: o["type"] == "message_update")
    client.proc.send_signal(signal.SIGINT)
    end = client.until(lambda o: o["type"] == "run_end" and o["id"] == accepted["id"])
    assert end["stop_reason"] == "aborted"
    assert client.call({"type": "get_state"})["data"]["isStreaming"] is False  # still serving
    client.proc.send_signal(signal.SIGINT)
    assert client.proc.wait(TIMEOUT) == 0


async def test_updates_carry_deltas_and_the_partial_message_comes_on_request(project: Path, faux: FauxProvider) -> None:
    faux.chunk_delay = 0.02
    faux.chunk_size = 3
    faux.queue(text("abcdefghijklmnopqrstuvwxyz" * 4))
    h = Harness(project, faux)
    idle = await h.call({"id": 0, "type": "get_partial_message"})
    assert idle["data"] == {"message": None}
    await h.call({"id": 1, "type": "prompt", "message": "go"})
    await h.wait(lambda o: o["type"] == "message_update" and o["assistantMessageEvent"]["type"] == "text_delta")
    partial = (await h.call({"id": 2, "type": "get_partial_message"}))["data"]["message"]
    assert partial["role"] == "assistant" and partial["content"][0]["type"] == "text"
    assert 0 < len(partial["content"][0]["text"]) <= 104
    end = await h.run_end(1)
    assert answer_at(h.out, end) == "abcdefghijklmnopqrstuvwxyz" * 4
    updates = [o for o in h.out if o["type"] == "message_update"]
    assert updates and set(updates[0]) == {"type", "usage", "assistantMessageEvent"}
    # usage only when it changed since the update before (the first update always has it)
    assert all(set(o) <= {"type", "usage", "assistantMessageEvent"} for o in updates)
    usages = [o["usage"] for o in updates if "usage" in o]
    assert all(a != b for a, b in itertools.pairwise(usages))
    inner = [o["assistantMessageEvent"] for o in updates]
    assert all("partial" not in e and "contentIndex" in e for e in inner if e["type"] != "start")
    deltas = "".join(e["delta"] for e in inner if e["type"] == "text_delta")
    assert deltas == answer_at(h.out, end)
    assert (await h.call({"id": 3, "type": "get_partial_message"}))["data"] == {"message": None}
    faux.chunk_delay = 0.0
