"""A scripted OpenAI-compatible server and the checks the context audit runs on what it receives.

The server plays a model that follows a per-turn plan of tool calls (``PLANS``), counts each
request the way a strict local server does (characters / 4 plus the requested output) and
rejects anything over the limit of the model the request names. Every request body is kept,
so the audit can check what the model actually received: each tool result with its call, the
turn's prompt present, the request never ending on an injected note, a pruned result never
coming back, and an "unchanged" read stub only while that read's content is in the request.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.context.compaction.summary.summary_text import SUMMARISER_SYSTEM_PROMPT
from tests.coding.test_small_window import call_reply, count_tokens, text_reply
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.sse import anthropic_reply, openai_reply
from tests.support.summaries import is_summary_body

SUMMARY_MARK = SUMMARISER_SYSTEM_PROMPT[:60]
# What the scripted model answers every summary request with: a request that carries it
# carries a compaction's summary.
SUMMARY_REPLY = "## Goal\nFollow the plan.\n\n## Progress\n- earlier turns done"
FLUSH_MARK = "[heron: the conversation is about to be compacted"
UNCHANGED = "[File unchanged since"
PRUNED = "[Pruned from the context"
TIMEOUT = 120
Step = Any  # (tool, arguments), or a list of them: one reply with several calls


def bash_100k(tag: str) -> Step:
    line = f"output line %05d of {tag} {'.' * 20}\\n"
    return ("bash", {"command": f"for i in $(seq 1 2048); do printf '{line}' $i; done"})


def read(path: str, **extra: Any) -> Step:
    return ("read", {"path": path, **extra})


TODOS: Step = (
    "todo",
    {
        "todos": [
            {"content": "read the data", "status": "in_progress"},
            {"content": "summarise it", "status": "pending"},
        ]
    },
)


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


# Extra text for a turn's prompt (a long pasted prompt); keyed by turn.
PROMPT_EXTRA: dict[int, str] = {}


def prompt(n: int) -> str:
    return f"turn {n}: follow the plan" + PROMPT_EXTRA.get(n, "")


class PlanServer:
    """Replies by plan; ``limits`` per model id; ``hang_at`` = (turn, step) whose reply is held."""

    def __init__(
        self,
        plans: dict[int, list[Step]],
        limits: dict[str, int],
        *,
        report_usage: bool = True,
        stated: bool = True,
        hang_at: tuple[int, int] | None = None,
        hang_summary: bool = False,
    ) -> None:
        self.plans, self.limits = plans, limits
        self.report_usage, self.stated, self.hang_at = report_usage, stated, hang_at
        self.hang_summary = hang_summary  # hold the first summary request (a crash mid-compaction)
        self.failing: set[tuple[int, int]] = set()  # (turn, step) answered 500 (a server error)
        self.density = 1.0  # the server's tokens per heron token (a real tokenizer counts more than chars / 4)
        self.lock = threading.Lock()
        self.bodies: list[dict[str, Any]] = []  # as decoded for the checks
        self.raw: list[dict[str, Any]] = []  # as sent
        self.turns: list[int] = []  # the running turn for each body
        self.accepted: list[bool] = []
        self.rejected = 0
        self.served: dict[int, int] = {}
        self.turn = 0
        self.hung = threading.Event()

    def decode(self, request: Recorded) -> dict[str, Any]:
        """The request as OpenAI chat-completions JSON (what the checks read)."""
        return dict(request.json())

    def reject(self, limit: int, total: int) -> Reply:
        text = (
            (f"This model's maximum context length is {limit} tokens. However, you requested {total} tokens.")
            if self.stated
            else "context length exceeded"
        )
        return json_reply(
            400, {"error": {"message": text, "type": "invalid_request_error", "code": "context_length_exceeded"}}
        )

    def text(self, text: str, used: int) -> Reply:
        return text_reply(text, used)

    def call(self, call_id: str, name: str, args: dict[str, Any], used: int) -> Reply:
        return call_reply(call_id, name, args, used)

    def __call__(self, request: Recorded) -> Reply:
        body = self.decode(request)
        prompt_tokens, completion = count_tokens(body)
        prompt_tokens = math.ceil(prompt_tokens * self.density)
        limit = self.limits[body["model"]]
        with self.lock:
            self.bodies.append(body)
            self.raw.append(request.json())
            self.turns.append(self.turn)
            ok = prompt_tokens + completion <= limit
            self.accepted.append(ok)
            if not ok:
                self.rejected += 1
                return self.reject(limit, prompt_tokens + completion)
            return self._reply(body, prompt_tokens if self.report_usage else 0)

    def _reply(self, body: dict[str, Any], used: int) -> Reply:
        messages = body["messages"]
        if is_summary_body(body):
            if self.hang_summary and not self.hung.is_set():
                self.hung.set()
                return Reply(body=b"", delay=60)
            return self.text(SUMMARY_REPLY, used)
        if text_of(messages[-1]).startswith(FLUSH_MARK):
            return self.text("Nothing worth saving.", used)
        plan = self.plans.get(self.turn, [])
        step = self.served.get(self.turn, 0)
        if (self.turn, step) in self.failing:
            return json_reply(500, {"error": {"message": "upstream failed", "type": "server_error"}})
        if self.hang_at == (self.turn, step):
            self.hung.set()
            return Reply(body=b"", delay=60)
        if step >= len(plan):
            return self.text(f"done with turn {self.turn}", used)
        self.served[self.turn] = step + 1
        if isinstance(plan[step], list):  # several calls in one reply
            calls = [(f"call_{self.turn}_{step}_{i}", name, args) for i, (name, args) in enumerate(plan[step])]
            return self.calls(calls, used)
        name, args = plan[step]
        return self.call(f"call_{self.turn}_{step}", name, args, used)

    def calls(self, calls: list[tuple[str, str, dict[str, Any]]], used: int) -> Reply:
        return openai_reply("", calls, prompt_tokens=used)


class AnthropicPlanServer(PlanServer):
    """The same model behind Anthropic's Messages API (requests translated for the checks)."""

    def decode(self, request: Recorded) -> dict[str, Any]:
        raw = request.json()
        system = raw.get("system") or ""
        if isinstance(system, list):
            system = "".join(b.get("text", "") for b in system)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for message in raw["messages"]:
            content = message["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            if message["role"] == "assistant":
                calls = [
                    {
                        "id": b["id"],
                        "type": "function",
                        "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
                    }
                    for b in blocks
                    if b["type"] == "tool_use"
                ]
                text = "".join(b.get("text", "") for b in blocks if b["type"] == "text")
                messages.append({"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})})
                continue
            for block in blocks:
                if block["type"] == "tool_result":
                    inner = block.get("content")
                    text = inner if isinstance(inner, str) else "".join(p.get("text", "") for p in inner or [])
                    messages.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": text})
            # one message per text block: the adapter merges consecutive user messages
            messages.extend({"role": "user", "content": [b]} for b in blocks if b["type"] == "text")
        return {
            "model": raw["model"],
            "messages": messages,
            "tools": raw.get("tools"),
            "max_tokens": raw.get("max_tokens"),
        }

    def reject(self, limit: int, total: int) -> Reply:
        text = f"prompt is too long: {total} tokens > {limit} maximum" if self.stated else "prompt is too long"
        return json_reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message": text}})

    def text(self, text: str, used: int) -> Reply:
        return anthropic_reply(text, input_tokens=used)

    def call(self, call_id: str, name: str, args: dict[str, Any], used: int) -> Reply:
        return anthropic_reply("", [(call_id, name, args)], input_tokens=used)

    def calls(self, calls: list[tuple[str, str, dict[str, Any]]], used: int) -> Reply:
        return anthropic_reply("", calls, input_tokens=used)


@pytest.fixture
def servers() -> Iterator[list[LocalServer]]:
    """The local servers a test starts with :func:`serve`, closed at its end (a test module
    uses it by importing it and naming it in ``__all__``)."""
    made: list[LocalServer] = []
    yield made
    for server in made:
        server.close()


def serve(made: list[LocalServer], handler: Callable[[Recorded], Reply]) -> str:
    """A local server answering with ``handler``, closed with the test's ``servers``; its URL."""
    server = LocalServer(responder=handler)
    made.append(server)
    return server.url


def heron() -> list[str]:
    return [os.environ.get("HERON_TEST_PYTHON", __import__("sys").executable), "-m", "heron.cli.main"]


def make_project(
    root: Path,
    url: str,
    models: list[dict[str, Any]],
    settings: dict[str, Any] | None = None,
    api: str = "openai-completions",
) -> tuple[Path, dict[str, str]]:
    cwd = root / "proj"
    (cwd / "data").mkdir(parents=True)
    for n in range(4):
        line = f"file {n}: a line of ordinary source text, long enough to look real ...\n"
        (cwd / "data" / f"file{n}.txt").write_text("".join(f"{i:06d} {line}" for i in range(1500))[: 120 * 1024])
    (cwd / "data" / "small.txt").write_text("".join(f"small line {i}\n" for i in range(200)))
    home = root / "home"
    home.mkdir()
    base = url + "/v1" if api == "openai-completions" else url
    config = {"providers": {"local": {"baseUrl": base, "api": api, "apiKey": "sk-local", "models": models}}}
    (home / "models.json").write_text(json.dumps(config))
    # Results up to 15% of the window (the default is 7.5%): these scenarios' reads and
    # outputs were sized for it, to prune and compact within a few turns.
    base_settings = {"memory": {"directory": str(home / "memory")}, "toolLimits": {"windowShare": 0.15}}
    (home / "settings.json").write_text(json.dumps({**base_settings, **(settings or {})}))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env.update(HERON_HOME=str(home), HERON_CHECK_CONTEXT="strict")
    return cwd, env


def run_print(cwd: Path, env: dict[str, str], server: PlanServer, n: int, model: str, *, first: bool) -> str:
    server.turn = n
    args = [*heron(), "--model", model, "-p", prompt(n), *([] if first else ["--continue"])]
    done = subprocess.run(
        args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, f"turn {n}: {done.stderr[-3000:]}"
    return done.stdout.strip()


def run_print_killed(
    cwd: Path, env: dict[str, str], server: PlanServer, n: int, model: str, started: Path | None = None
) -> None:
    """Start turn ``n`` and kill -9 the process while the server holds a reply (or, with
    ``started``, once a tool has created that file)."""
    server.turn = n
    args = [*heron(), "--model", model, "-p", prompt(n), "--continue"]
    child = subprocess.Popen(
        args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + TIMEOUT
    while not (started.exists() if started is not None else server.hung.is_set()):
        assert time.monotonic() < deadline and child.poll() is None, "the turn never reached the kill point"
        time.sleep(0.05)
    time.sleep(0.3)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)


class Rpc:
    def __init__(self, cwd: Path, env: dict[str, str], model: str) -> None:
        self.child = subprocess.Popen(
            [*heron(), "--model", model, "--mode", "rpc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.ids = 0

    def command(self, payload: dict[str, Any], until: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.ids += 1
        self.child.stdin.write(json.dumps({"id": f"c{self.ids}", **payload}) + "\n")
        self.child.stdin.flush()
        events = []
        for raw in self.child.stdout:
            event = json.loads(raw)
            events.append(event)
            if until(event) or (
                event.get("type") == "response" and event.get("id") == f"c{self.ids}" and not event.get("success", True)
            ):
                return events
        raise AssertionError(f"rpc ended: {self.child.stderr.read() if self.child.stderr else ''}")

    def turn(self, server: PlanServer, n: int) -> str:
        server.turn = n
        ident = f"c{self.ids + 1}"
        events = self.command(
            {"type": "prompt", "message": prompt(n)}, lambda e: e.get("type") == "run_end" and e.get("id") == ident
        )
        assert events[-1].get("type") == "run_end" and events[-1].get("error") is None, f"turn {n}: {events[-1]}"
        last = [
            e["message"] for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"
        ][-1]
        return "".join(b.get("text", "") for b in last["content"] if b.get("type") == "text")

    def set_model(self, model: str) -> None:
        ident = f"c{self.ids + 1}"
        events = self.command(
            {"type": "set_model", "model": model}, lambda e: e.get("type") == "response" and e.get("id") == ident
        )
        assert events[-1].get("success"), events[-1]

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait(timeout=30)


def _calls(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            out[call["id"]] = {"name": call["function"]["name"], "args": json.loads(call["function"]["arguments"])}
    return out


def _body_problems(body: dict[str, Any], turn: int) -> list[str]:
    messages = body["messages"]
    problems = []
    open_ids: set[str] = set()
    known: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            if open_ids:
                problems.append(f"calls {sorted(open_ids)} without results")
            open_ids = {c["id"] for c in message.get("tool_calls") or []}
            known |= open_ids
        elif message["role"] == "tool":
            if message["tool_call_id"] not in known:
                problems.append(f"result {message['tool_call_id']} without its call")
            open_ids.discard(message["tool_call_id"])
        elif message["role"] == "user" and open_ids:
            problems.append(f"calls {sorted(open_ids)} without results before a user message")
            open_ids = set()
    if open_ids:
        problems.append(f"calls {sorted(open_ids)} without results at the end")
    last = messages[-1]
    if last["role"] == "user" and not (text_of(last) == prompt(turn) or text_of(last).startswith(FLUSH_MARK)):
        problems.append(f"request ends on a user message that is not the turn's prompt: {text_of(last)[:120]!r}")
    if last["role"] == "assistant":
        problems.append("request ends on an assistant message")
    if not any(m["role"] == "user" and text_of(m) == prompt(turn) for m in messages):
        problems.append(f"turn {turn}'s prompt is missing")
    calls = _calls(messages)
    whole: dict[str, str] = {}
    batch: set[str] = set()  # the keys read by the current assistant message's calls (they run together)
    for message in messages:
        if message["role"] == "assistant":
            batch = set()
        if message["role"] != "tool":
            continue
        call = calls.get(message["tool_call_id"], {})
        if call.get("name") != "read":
            continue
        key = json.dumps(call["args"], sort_keys=True)
        content = text_of(message)
        if content.startswith(UNCHANGED):
            if key not in whole:
                problems.append(f"{message['tool_call_id']}: 'unchanged' stub for {key} with no content before it")
        elif not content.startswith("["):
            # the same text already in the request (from an earlier reply): the stub was due
            if whole.get(key) == content and key not in batch:
                problems.append(f"{message['tool_call_id']}: re-read of {key} sent whole while it is in view")
            whole[key] = content
            batch.add(key)
    return problems


def audit(server: PlanServer, start: int = 0, stop: int | None = None) -> list[str]:
    """Every problem in what the model received (summary requests are only size-checked);
    ``start``/``stop``: the requests of one drive of the session."""
    problems = []
    stubs: dict[str, str] = {}
    rows = list(zip(server.bodies, server.turns, server.accepted, strict=True))
    for index, (body, turn, ok) in enumerate(rows[start:stop], start):
        messages = body["messages"]
        if is_summary_body(body):
            continue
        problems.extend(f"request {index} (turn {turn}): {p}" for p in _body_problems(body, turn))
        for message in messages:
            if message["role"] != "tool":
                continue
            ident, content = message["tool_call_id"], text_of(message)
            if ident in stubs and content != stubs[ident]:
                problems.append(f"request {index} (turn {turn}): {ident} was pruned and came back")
            if content.startswith(PRUNED) and ok:
                stubs.setdefault(ident, content)
    return problems


def normalised(bodies: list[dict[str, Any]], root: Path) -> list[str]:
    out = []
    for body in bodies:
        text = json.dumps(body, sort_keys=True).replace(str(root), "ROOT")
        text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "SESSION", text)
        out.append(re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", text))
    return out
