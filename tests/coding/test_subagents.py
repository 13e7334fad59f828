"""Sub-agents end to end with the faux provider: isolated and forked children, two at once,
bounded results, abort, session files, and the bad-input cases (docs/subagents.md)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heron.ai.providers.faux import FauxProvider, FauxReply, error, text
from heron.ai.types import Context, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.coding.assembly import assemble_session
from heron.coding.events import SubagentEvent
from heron.coding.runtime import CodingSession
from heron.coding.session_spec import SessionSpec, StoreSpec
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.context.continuity.children import CHILD_CUSTOM_TYPE
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore

Reply = FauxReply | Callable[[Context], FauxReply]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "AGENTS.md").write_text("Project rule: be brief.\n")
    (proj / "notes.txt").write_text("alpha\nbeta\n")
    return proj


def last_user_text(context: Context) -> str:
    for message in reversed(context.messages):
        if isinstance(message, UserMessage):
            return message.text()
    return ""


class Router:
    """Replies keyed on the request's last user message: the parent's prompt, or a child's
    task prompt (children run at once, so a single queue would interleave)."""

    def __init__(self, faux: FauxProvider, scripts: dict[str, list[Reply]]) -> None:
        self.scripts = scripts
        self.requests: dict[str, list[Context]] = {key: [] for key in scripts}
        self.payload_of: dict[int, str] = {}
        faux.set_fallback(self.reply)

    def reply(self, context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nsummary")
        key = last_user_text(context)
        self.requests.setdefault(key, []).append(context)
        script = self.scripts.get(key)
        if not script:
            raise AssertionError(f"no reply scripted for {key!r}")
        item = script.pop(0)
        return item(context) if callable(item) else item


def task_call(call_id: str, prompt: str, description: str = "look at the notes", **extra: Any) -> ToolCall:
    return ToolCall(id=call_id, name="task", arguments={"description": description, "prompt": prompt, **extra})


def text_block(value: str) -> TextContent:
    return TextContent(text=value)


def calls(*blocks: ToolCall | TextContent) -> FauxReply:
    return FauxReply(content=list(blocks))


def make_session(
    project: Path, faux: FauxProvider, window: int = 128_000, settings: dict[str, Any] | None = None
) -> CodingSession:
    model = faux.model(context_window=window, max_tokens=min(8_192, window // 4))
    spec = SessionSpec(cwd=project, model=model, store=StoreSpec.new(), settings=settings_from_dict(settings or {}))
    return assemble_session(spec)


def results(session: CodingSession) -> list[ToolResultMessage]:
    return [m for m in session.messages if isinstance(m, ToolResultMessage) and m.tool_name == "task"]


async def test_isolated_child_sees_only_its_prompt(project: Path, faux: FauxProvider) -> None:
    router = Router(
        faux,
        {
            "summarise the notes": [calls(task_call("c1", "read notes.txt and report")), text("parent done")],
            "read notes.txt and report": [text("the notes say alpha and beta")],
        },
    )
    parent = make_session(project, faux)
    await parent.prompt("summarise the notes")
    child_first = router.requests["read notes.txt and report"][0]
    assert [m.role for m in child_first.messages] == ["user"]
    assert child_first.messages[0].text() == "read notes.txt and report"  # type: ignore[union-attr]
    assert "summarise the notes" not in json.dumps([m.text() for m in child_first.messages])  # type: ignore[union-attr]
    assert child_first.system_prompt != parent.system_prompt
    assert "Project rule: be brief." in (child_first.system_prompt or "")
    assert "task" not in [t.name for t in child_first.tools or []]  # default: the parent's tools minus task
    assert "read" in [t.name for t in child_first.tools or []]
    result = results(parent)[0]
    assert result.text() == "the notes say alpha and beta" and not result.is_error
    # the parent's next request ends with the result, answering the task call
    answered = router.requests["summarise the notes"][1].messages[-1]
    assert isinstance(answered, ToolResultMessage) and answered.tool_call_id == "c1"
    assert answered.tool_name == "task" and answered.text() == "the notes say alpha and beta" and not answered.is_error
    # linked both ways: the child's header names the parent, the parent has registry entries
    child_path = Path(result.details["session"])
    child_store = SessionStore.open(child_path, read_only=True)
    assert child_store.header.parent_session == str(parent.store.path)
    links = [e for e in parent.store.entries() if isinstance(e, CustomEntry) and e.custom_type == CHILD_CUSTOM_TYPE]
    assert [e.data["status"] for e in links] == ["running", "done"]
    assert links[-1].data["session"] == str(child_path)
    assert links[-1].data["usage"]["output"] > 0 and "usage" not in links[0].data
    assert parent.subagents is not None and parent.subagents.usage.output > 0


async def test_forked_child_repeats_the_parents_last_request(project: Path, faux: FauxProvider) -> None:
    router = Router(
        faux,
        {
            "plan the work": [
                text("I will plan."),
            ],
            "now delegate": [calls(task_call("f1", "continue the plan in a fork", context="fork")), text("ok")],
            "continue the plan in a fork": [text("forked answer")],
        },
    )
    parent = make_session(project, faux)
    await parent.prompt("plan the work")
    await parent.prompt("now delegate")
    parent_last = router.requests["now delegate"][0]
    child_first = router.requests["continue the plan in a fork"][0]
    parent_payload = faux.payloads[faux.requests.index(parent_last)]
    child_payload = faux.payloads[faux.requests.index(child_first)]
    assert child_payload.startswith(parent_payload + "\n")  # system, tools and messages byte-identical
    assert child_first.system_prompt == parent_last.system_prompt
    tail = child_first.messages[len(parent_last.messages) :]
    assert [m.role for m in tail] == ["assistant", "toolResult", "user"]
    assert tail[-1].text() == "continue the plan in a fork"  # type: ignore[union-attr]
    result = results(parent)[0]
    assert result.text() == "forked answer"
    fork_store = SessionStore.open(Path(result.details["session"]), read_only=True)
    assert fork_store.header.parent_session == str(parent.store.path)


async def test_two_tasks_overlap_and_both_results_come_back_capped(project: Path, faux: FauxProvider) -> None:
    faux.chunk_delay = 0.01
    long_answer = "x" * 9_000
    router = Router(
        faux,
        {
            "do two things": [calls(task_call("a", "job A"), task_call("b", "job B")), text("both done")],
            "job A": [text("A" * 2_000)],
            "job B": [text(long_answer)],
        },
    )
    faux.chunk_size = 100  # A streams for ~0.2 s, B for ~0.9 s
    # 10% of the window is about 6,400 characters, one tool result's cap (7.5%) 4,800: the
    # answer is cut to the lower, with the sub-agent's own notice (not cut a second time)
    window = 16_000
    parent = make_session(project, faux, window=window)
    spans: dict[str, list[float]] = {}

    def listen(event: Any) -> None:
        if isinstance(event, SubagentEvent) and event.event.type in ("message_start", "message_end"):
            spans.setdefault(event.tool_call_id, []).append(time.monotonic())

    parent.subscribe(listen)
    await parent.prompt("do two things")
    a, b = spans["a"], spans["b"]
    assert a[0] < b[-1] and b[0] < a[-1], "the two children did not run at the same time"
    next_request = router.requests["do two things"][1]
    sent = {m.tool_call_id: m.text() for m in next_request.messages if isinstance(m, ToolResultMessage)}
    assert sent["a"] == "A" * 2_000
    assert 4_000 < len(sent["b"]) <= 4_800 and "Sub-agent answer cut: 9,000 characters" in sent["b"]
    spill = next(r for r in results(parent) if r.tool_call_id == "b").details["spill"]
    assert Path(spill).read_text() == long_answer
    # both children's session files open with `heron sessions info`
    for result in results(parent):
        path = result.details["session"]
        done = subprocess.run(
            [sys.executable, "-m", "heron.cli.main", "sessions", "info", path, "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=os.environ.copy(),
        )
        assert done.returncode == 0, done.stderr
        info = json.loads(done.stdout)
        assert info["parent_session"] == str(parent.store.path)
        assert info["by_role"] == {"user": 1, "assistant": 1}


async def test_abort_stops_both_children_within_a_second(project: Path, faux: FauxProvider) -> None:
    faux.chunk_delay = 0.02
    faux.chunk_size = 4
    slow = "word " * 2_000  # ~2,500 chunks: 50 s if nothing stopped it
    Router(
        faux,
        {
            "start two slow ones": [calls(task_call("a", "slow A"), task_call("b", "slow B")), text("after abort")],
            "slow A": [text(slow)],
            "slow B": [text(slow)],
        },
    )
    parent = make_session(project, faux)
    started: set[str] = set()
    parent.subscribe(
        lambda e: (
            started.add(e.tool_call_id)
            if isinstance(e, SubagentEvent) and e.event.type == "message_start" and e.event.message.role == "assistant"
            else None
        )
    )
    run = asyncio.create_task(parent.prompt("start two slow ones"))
    for _ in range(500):
        if started == {"a", "b"}:
            break
        await asyncio.sleep(0.01)
    assert started == {"a", "b"}
    t0 = time.monotonic()
    parent.abort()
    await asyncio.wait_for(run, timeout=5)
    assert time.monotonic() - t0 < 1.0
    assert parent.subagents is not None and not parent.subagents.running
    by_id = {r.tool_call_id: r for r in results(parent)}
    assert set(by_id) == {"a", "b"}
    for result in by_id.values():
        assert result.is_error and result.details["status"] == "aborted" and "aborted" in result.text()


async def test_unknown_agent_is_an_error_and_the_parent_carries_on(project: Path, faux: FauxProvider) -> None:
    Router(faux, {"use a helper": [calls(task_call("u", "x", agent="nobody")), text("carried on")]})
    parent = make_session(project, faux)
    await parent.prompt("use a helper")
    result = results(parent)[0]
    assert result.is_error and "unknown agent 'nobody'" in result.text()
    assert parent.messages[-1].text() == "carried on"  # type: ignore[union-attr]


async def test_definition_with_a_nonexistent_tool_is_reported(project: Path, faux: FauxProvider) -> None:
    agents = project / ".heron" / "agents"
    agents.mkdir(parents=True)
    (agents / "broken.md").write_text(
        "---\nname: broken\ndescription: Has a bad tool\ntools: read, teleport\n---\nHi\n"
    )
    (agents / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads files\ntools: Read, Glob\n---\nYou only read.\n"
    )
    router = Router(
        faux,
        {
            "try both": [calls(task_call("b", "p1", agent="broken"), task_call("r", "p2", agent="reader")), text("ok")],
            "p2": [text("read it")],
        },
    )
    parent = make_session(project, faux)
    task_tool = next(t for t in parent.tools if t.name == "task")
    assert "reader: Reads files" in task_tool.description and "broken" not in task_tool.description
    await parent.prompt("try both")
    by_id = {r.tool_call_id: r for r in results(parent)}
    assert by_id["b"].is_error and "teleport" in by_id["b"].text() and "broken.md" in by_id["b"].text()
    assert by_id["r"].text() == "read it"
    child = router.requests["p2"][0]
    assert child.system_prompt is not None and child.system_prompt.startswith("You only read.")
    assert [t.name for t in child.tools or []] == ["read", "find"]
    assert parent.messages[-1].text() == "ok"  # type: ignore[union-attr]


async def test_child_that_overflows_its_window_is_an_error(project: Path, faux: FauxProvider) -> None:
    overflow = error("prompt is too long: 250000 tokens > 128000 maximum", status=400)
    Router(
        faux,
        {
            "delegate a huge job": [calls(task_call("o", "huge job")), text("parent fine")],
            "huge job": [overflow] * 10,
        },
    )
    parent = make_session(project, faux)
    await parent.prompt("delegate a huge job")
    result = results(parent)[0]
    assert result.is_error and "overflow" in result.text()
    assert result.details["status"] == "error"
    assert parent.messages[-1].text() == "parent fine"  # type: ignore[union-attr]


async def test_bad_description_is_an_error(project: Path, faux: FauxProvider) -> None:
    Router(
        faux,
        {
            "go": [
                calls(
                    task_call("d", "p", description="x"),
                    task_call("e", "p", description="one two three four five six seven eight"),
                ),
                text("ok"),
            ]
        },
    )
    parent = make_session(project, faux)
    await parent.prompt("go")
    texts = [r.text() for r in results(parent)]
    assert "(it has 1)" in texts[0] and "(it has 8)" in texts[1] and all("3 to 7 words" in t for t in texts)
    assert parent.messages[-1].text() == "ok"  # type: ignore[union-attr]


async def test_max_parallel_one_runs_children_one_after_the_other(project: Path, faux: FauxProvider) -> None:
    faux.chunk_delay = 0.01
    Router(
        faux,
        {
            "two in a row": [calls(task_call("a", "job A"), task_call("b", "job B")), text("both done")],
            "job A": [text("A" * 200)],
            "job B": [text("B" * 200)],
        },
    )
    parent = make_session(project, faux, settings={"subagents": {"maxParallel": 1}})
    spans: dict[str, list[float]] = {}
    parent.subscribe(
        lambda e: (
            spans.setdefault(e.tool_call_id, []).append(time.monotonic()) if isinstance(e, SubagentEvent) else None
        )
    )
    await parent.prompt("two in a row")
    first, second = sorted((spans["a"], spans["b"]), key=lambda s: s[0])
    assert first[-1] <= second[0]
    assert sorted(r.text() for r in results(parent)) == ["A" * 200, "B" * 200]


async def test_fork_refuses_task_at_the_depth_limit_and_agent_with_fork(project: Path, faux: FauxProvider) -> None:
    router = Router(
        faux,
        {
            "fork it": [
                calls(task_call("f", "forked work", context="fork"), task_call("g", "p", agent="x", context="fork")),
                text("parent ok"),
            ],
            "forked work": [calls(task_call("n", "nested")), text("fork ok")],
        },
    )
    parent = make_session(project, faux, settings={"subagents": {"maxDepth": 1}})
    await parent.prompt("fork it")
    by_id = {r.tool_call_id: r for r in results(parent)}
    assert by_id["g"].is_error and 'cannot be combined with context "fork"' in by_id["g"].text()
    assert by_id["f"].text() == "fork ok"
    fork_requests = router.requests["forked work"]
    assert "task" in [t.name for t in fork_requests[0].tools or []]  # kept for the cached prefix
    refused = [m for m in fork_requests[1].messages if isinstance(m, ToolResultMessage) and m.tool_call_id == "n"]
    assert refused[0].is_error and "maximum depth" in refused[0].text()


async def test_unknown_model_in_a_definition_is_an_error(project: Path, faux: FauxProvider) -> None:
    agents = project / ".heron" / "agents"
    agents.mkdir(parents=True)
    (agents / "m.md").write_text("---\nname: modelled\ndescription: d\nmodel: nosuch/model-zz\n---\n")
    Router(faux, {"go": [calls(task_call("m", "p", agent="modelled")), text("ok")]})
    parent = make_session(project, faux)
    await parent.prompt("go")
    result = results(parent)[0]
    assert result.is_error and "unknown model 'nosuch/model-zz'" in result.text()
    assert parent.messages[-1].text() == "ok"  # type: ignore[union-attr]


async def test_depth_limit_refuses_task(project: Path, faux: FauxProvider) -> None:
    Router(faux, {"go": [calls(task_call("d", "p")), text("ok")]})
    parent = make_session(project, faux, settings={"subagents": {"maxDepth": 0}})
    await parent.prompt("go")
    result = results(parent)[0]
    assert result.is_error and "maximum depth" in result.text()


async def test_failing_child_reports_what_it_did(project: Path, faux: FauxProvider) -> None:
    def broken(context: Context) -> FauxReply:
        raise RuntimeError("the server fell over")

    Router(
        faux,
        {
            "delegate": [calls(task_call("c", "read then fail")), text("parent carries on")],
            "read then fail": [
                calls(
                    ToolCall(id="r", name="read", arguments={"path": "notes.txt"}),
                    text_block("Reading the notes first."),
                ),
                broken,
            ],
        },
    )
    parent = make_session(project, faux, settings={"retry": {"enabled": False}})
    await parent.prompt("delegate")
    result = results(parent)[0]
    assert result.is_error and result.details["status"] == "error"
    body = result.text()
    assert "The sub-agent did not finish" in body and "the server fell over" in body
    assert "- read(path=notes.txt): done" in body and "Reading the notes first." in body
    assert result.details["session"] in body
    assert parent.messages[-1].text() == "parent carries on"  # type: ignore[union-attr]


async def test_a_child_that_cannot_be_built_is_an_error(
    project: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_disk(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("heron.coding.subagents.spawn.isolated_child", no_disk)
    Router(faux, {"go": [calls(task_call("x", "p")), text("still fine")]})
    parent = make_session(project, faux)
    await parent.prompt("go")
    result = results(parent)[0]
    assert result.is_error and "cannot start the sub-agent: OSError" in result.text()
    assert "No space left on device" in result.text()
    assert parent.messages[-1].text() == "still fine"  # type: ignore[union-attr]
