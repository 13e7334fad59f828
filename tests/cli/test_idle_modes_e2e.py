"""The idle policy end to end in the two modes that wait for a person: ``heron --mode acp``
(driven by the ACP SDK's client side) and the interactive mode in a pseudo-terminal, each
the real program against a local server, with ``idle.policy: auto`` on a priced model and
a short cache lifetime (``pruning.cacheTtlSeconds``: a local server has none unless told).

One session, two pauses, and what the server receives:

1. "hello" and a short answer: nothing to prune, so warming costs one output token less
   than letting the cache expire - heron warms it before the lifetime ends with the last
   request's exact messages and a one-token cap. The next prompt's request carries the
   conversation without the warm-up.
2. The model reads three large files and answers. Once the cache has expired the cold-cache
   step would stub the reads, so the request after the pause would be small: letting the
   cache expire is priced from that request and is cheaper than a warm-up that re-reads
   the reads - heron sends no warm-up, records ``expire`` with the planned size, and the
   request after the pause carries stubs instead of the files, at about that size.

The prices are Claude Sonnet's: expiring wins once the cold request would carry less
than about a sixth of the context (docs/context.md, "The idle policy"). The server reports each
request's size as its usage, so heron's count follows the bodies. The only waits are for
events (a request, a record in the session file) with generous deadlines, and the one
lower bound the test needs: the cache lifetime must have passed before the last prompt.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ClientCapabilities

from tests.cli import test_interactive as base
from tests.cli.test_acp_e2e import Editor, heron_acp, new_session, prompt
from tests.cli.test_print_json_e2e import Project, project
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

__all__ = ["dirs", "project", "spawn"]

dirs = base.dirs
spawn = base.spawn

TTL_S = 4  # the cache lifetime: the decision falls 0.4 s before its end
DEADLINE_S = 60.0  # generous: the machine is loaded
FILES = ("notes1.txt", "notes2.txt", "notes3.txt", "notes4.txt")
MARKER = "quokka-line"  # in every line of the files: in a request only while a read is whole
MODEL_FLAGS = ["--model", "priced/priced-model"]


def write_setup(home: Path, cwd: Path, url: str) -> None:
    """The priced model on the local server, the settings, and the two files."""
    model = {
        "id": "priced-model",
        "contextWindow": 128_000,
        "maxTokens": 4_000,
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
    }
    provider = {"baseUrl": f"{url}/v1", "api": "openai-chat", "apiKey": "sk-local-test", "models": [model]}
    (home / "models.json").write_text(json.dumps({"providers": {"priced": provider}}))
    # lowWater 0.1: the cold step runs on a context of this size (its default is a third of the budget)
    settings = {"pruning": {"cacheTtlSeconds": TTL_S, "lowWater": 0.1}, "idle": {"policy": "auto"}}
    (home / "settings.json").write_text(json.dumps(settings))
    for n, name in enumerate(FILES):
        (cwd / name).write_text("".join(f"{MARKER} {i} of file {n}: some words to fill it\n" for i in range(600)))


def is_warm_up(request: Recorded) -> bool:
    body = request.json()
    return body.get("max_completion_tokens", body.get("max_tokens")) == 1


def model(request: Recorded) -> Reply:
    """The scripted model: reads both files when asked to, answers otherwise; its usage is
    the request's size at chars/4."""
    tokens = len(request.body) // 4
    if is_warm_up(request):
        return openai_reply("ok", prompt_tokens=tokens, completion_tokens=1)
    last = request.json()["messages"][-1]
    if last["role"] == "tool":
        return openai_reply("I read them.", prompt_tokens=tokens)
    said = json.dumps(last["content"])
    if "read the notes" in said:
        calls = [(f"call_{n}", "read", {"path": name}) for n, name in enumerate(FILES)]
        return openai_reply("", calls, prompt_tokens=tokens)
    return openai_reply("Hello.", prompt_tokens=tokens)


def wait_for(what: str, check: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what} never came"
        time.sleep(0.05)
    return found


def idle_records(home: Path) -> list[dict[str, Any]]:
    records = []
    for path in (home / "sessions").glob("*/*.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            data = entry.get("data")
            if entry.get("type") == "custom" and isinstance(data, dict) and data.get("op") == "idle":
                records.append(data)
    return records


def expired(home: Path) -> bool:
    return any(r["action"] == "expire" for r in idle_records(home))


def check_first_pause(server: LocalServer, home: Path) -> None:
    """After "hello": a warm-up, the last request's exact messages, recorded as warm."""
    warm = server.requests[1]
    assert is_warm_up(warm) and warm.json()["messages"] == server.requests[0].json()["messages"]
    record = wait_for("the warm-up's record", lambda: idle_records(home))[0]
    assert record["action"] == "warm" and record["costs"]["warm"] < record["costs"]["expire"]


def check_second_pause(server: LocalServer, home: Path, before_pause: int) -> None:
    """After the reads: no warm-up sent, ``expire`` recorded with the pruned size, and the
    request after the pause carries stubs at about that size. (The first pause may have
    warmed more than once on a slow machine: at most every 3.6 s.)"""
    turns = [r.json()["messages"] for r in server.requests if not is_warm_up(r)]
    # "read the notes": the conversation so far, no warm-up in it
    assert [m["role"] for m in turns[1]] == ["system", "user", "assistant", "user"]
    assert turns[1][:2] == turns[0] and turns[1][2]["content"] == "Hello."
    assert MARKER in json.dumps(server.requests[before_pause - 1].json())  # the reads were sent whole
    assert not any(is_warm_up(r) for r in server.requests[before_pause:])
    *warms, expire = idle_records(home)
    assert warms and all(r["action"] == "warm" for r in warms) and expire["action"] == "expire"
    assert expire["costs"]["expire"] < expire["costs"]["warm"]
    assert expire["coldTokens"] < expire["contextTokens"] / 4  # the planned cold step sheds the reads
    after = server.requests[-1]
    assert not is_warm_up(after) and MARKER not in json.dumps(after.json())
    tools = [m for m in after.json()["messages"] if m["role"] == "tool"]
    assert len(tools) == len(FILES) and all("notes" in m["content"] for m in tools)  # stubs naming what was read
    assert len(after.body) // 4 <= expire["coldTokens"] * 1.5  # about the size the decision priced


def test_acp_warms_then_lets_the_cache_expire_and_sends_the_pruned_request(
    project: Project, local_server: LocalServer
) -> None:
    local_server.responder = model
    write_setup(project.home, project.cwd, local_server.url)
    editor = Editor()

    async def run() -> None:
        async with heron_acp(project, local_server, editor, model=MODEL_FLAGS, capabilities=ClientCapabilities()) as c:
            sid = await new_session(c, project)
            assert (await prompt(c, sid, "hello")).stop_reason == "end_turn"
            await asyncio.to_thread(wait_for, "the warm-up", lambda: len(local_server.requests) >= 2)
            check_first_pause(local_server, project.home)
            assert (await prompt(c, sid, "read the notes")).stop_reason == "end_turn"
            answered = time.time()  # the answer's time is at most this
            before_pause = len(local_server.requests)
            await asyncio.to_thread(wait_for, "the expire record", lambda: expired(project.home))
            await asyncio.sleep(max(0.0, answered + TTL_S + 0.5 - time.time()))  # the cache has expired
            assert (await prompt(c, sid, "after the pause")).stop_reason == "end_turn"
            check_second_pause(local_server, project.home, before_pause)

    asyncio.run(run())


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_the_interactive_mode_warms_then_lets_the_cache_expire_and_shows_both(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, cwd = dirs
    local_server.responder = model
    write_setup(home, cwd, local_server.url)
    child = spawn(*MODEL_FLAGS)
    child.send("hello\r")
    child.expect("Hello.")
    child.expect("idle: warmed the prompt cache")
    check_first_pause(local_server, home)
    child.send("read the notes\r")
    child.expect("I read them.")
    answered = time.time()
    before_pause = len(local_server.requests)
    child.expect("idle: letting the prompt cache expire")
    time.sleep(max(0.0, answered + TTL_S + 0.5 - time.time()))  # the cache has expired
    child.send("after the pause\r")
    child.expect("Hello.")
    check_second_pause(local_server, home, before_pause)
