"""heron and pi 1.6.0 on the same scripted session, against one scripted OpenAI-compatible server.

The in-process faux run of ``context_longrun.py`` measures heron alone; pi needs a real
HTTP server. :class:`ScriptServer` speaks OpenAI Chat Completions (streamed, with usage)
and plays the benchmark's workload: the user's prompts go in over each agent's rpc mode
(``heron --mode rpc`` and ``pi --mode rpc``, the same protocol: docs/rpc.md), and the
server answers each request from the turn it belongs to - a request ending with a user
prompt "Turn N: ..." starts turn N's script, one ending with a tool result takes the turn's
next step - so both agents get the same tool calls in the same order. The reads and
commands run for real, each agent in its own copy of the same project. The file edits of
the in-process script are left out (their arguments differ between the two tools).
Any other request - one whose last message is neither - is a summary request (heron's
shared or separate one, pi's history and turn-prefix summaries) and gets a structured
summary. Requests larger than the window are refused as a server refuses them
(``context_length_exceeded``); both agents recover from that on their own.

Every request body is recorded. The figures come from the bodies alone: each body
serialised in the order a provider renders it (tool definitions, then the messages with
the system prompt first), one part per tool and message, and served by the simulated
prompt cache of ``_prompt_cache.py`` (5-minute TTL and unbounded), summary requests
included; characters, not tokens.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _pi import pi_command, pi_env, pi_model
from _prompt_cache import CacheFigures, Clock, SimulatedCache, figures
from _sim_clock import advance
from _sim_clock import command as clocked_command

MODEL_ID = "big"
PROMPT = re.compile(r"^Turn (\d+):")
SSE = "text/event-stream"


def body_parts(body: dict[str, Any]) -> list[str]:
    """A request body as a provider renders it: tools, then messages (system first)."""
    tools = [json.dumps(t, ensure_ascii=False, sort_keys=True) for t in body.get("tools") or []]
    return tools + [json.dumps(m, ensure_ascii=False, sort_keys=True) for m in body.get("messages") or []]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


@dataclass
class Received:
    body: dict[str, Any]
    kind: str  # "turn", "summary", "rejected", "warm"
    new_turn: int | None = None  # the turn this request starts


@dataclass
class ScriptServer:
    """One agent's server: its turn scripts, the state of the turn it is in, every body."""

    steps: dict[int, list[tuple[str, dict[str, Any], str]]]  # turn -> (tool, arguments, label)
    answers: dict[int, str]
    window: int
    summary: str
    received: list[Received] = field(default_factory=list)
    turn: int = 0
    step: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # the server's own prompt cache (unbounded), reported as cached tokens in the usage
    cache: SimulatedCache = field(default_factory=lambda: SimulatedCache(None))

    def reply(self, body: dict[str, Any]) -> tuple[int, bytes, str]:
        """(status, body, content type) for one request."""
        messages = body.get("messages") or []
        size = len(json.dumps(messages)) + len(json.dumps(body.get("tools") or []))
        cap = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
        with self.lock:
            if (size + 3) // 4 + cap > self.window:
                self.received.append(Received(body, "rejected"))
                asked = (size + 3) // 4 + cap
                message = f"This model's maximum context length is {self.window} tokens; you requested {asked} tokens."
                error = {
                    "error": {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}
                }
                return 400, json.dumps(error).encode(), "application/json"
            served = self.cache.serve(body_parts(body), float(len(self.received)))
            cached = min(size // 4, served.cached // 4)
            last = messages[-1] if messages else {}
            prompt = PROMPT.match(_text(last)) if last.get("role") == "user" else None
            if cap and cap <= 1:  # a cache-warming request: answers nothing
                self.received.append(Received(body, "warm"))
                return 200, _stream(text="ok", prompt=size // 4, cached=cached), SSE
            if last.get("role") == "tool" or prompt is not None:
                new_turn = None
                if prompt is not None and int(prompt.group(1)) != self.turn:
                    self.turn, self.step, new_turn = int(prompt.group(1)), 0, int(prompt.group(1))
                self.received.append(Received(body, "turn", new_turn))
                steps = self.steps.get(self.turn, [])
                if self.step < len(steps):
                    tool, args, label = steps[self.step]
                    self.step += 1
                    call = {"id": f"call_{self.turn:03d}_{self.step}", "name": tool, "arguments": json.dumps(args)}
                    return (
                        200,
                        _stream(text=f"Let me {label}.", call=call, prompt=size // 4, cached=cached),
                        SSE,
                    )
                self.step += 1
                return (
                    200,
                    _stream(text=self.answers.get(self.turn, "done"), prompt=size // 4, cached=cached),
                    SSE,
                )
            self.received.append(Received(body, "summary"))
            return 200, _stream(text=self.summary, prompt=size // 4, cached=cached), SSE


def _stream(*, text: str, prompt: int, cached: int, call: dict[str, str] | None = None) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> str:
        data: dict[str, Any] = {"id": "x", "object": "chat.completion.chunk", "model": MODEL_ID}
        data["choices"] = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]
        if usage:
            data["usage"] = usage
        return f"data: {json.dumps(data)}\n\n"

    out = [chunk({"role": "assistant", "content": text})]
    if call is not None:
        tool = {
            "index": 0,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": call["arguments"]},
        }
        out.append(chunk({"tool_calls": [tool]}))
    out.append(chunk({}, "tool_calls" if call else "stop"))
    out.append(
        chunk(
            {},
            usage={
                "prompt_tokens_details": {"cached_tokens": cached},
                "prompt_tokens": prompt,
                "completion_tokens": len(text) // 4 + 8,
                "total_tokens": prompt + 8,
            },
        )
    )
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def serve(script: ScriptServer) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._send(404, b'{"error": "not found"}', "application/json")

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            status, data, kind = script.reply(body)
            self._send(status, data, kind)

        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


# --- driving an agent over rpc -----------------------------------------------------------------


class RpcAgent:
    """An agent process in rpc mode: a prompt sent, its events read until ``agent_settled``."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 0

    def prompt(self, message: str, timeout: float = 600.0) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"id": str(self.next_id), "type": "prompt", "message": message}) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        for line in self.proc.stdout:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no agent_settled within {timeout:.0f} s")
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == "response" and event.get("success") is False:
                raise RuntimeError(f"prompt refused: {event.get('error')}")
            if event.get("type") == "agent_settled":
                return
        raise RuntimeError(f"the agent exited (code {self.proc.wait()})")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@dataclass
class AgentRun:
    name: str
    received: list[Received]
    cache: dict[str, CacheFigures]
    seconds: float
    error: str | None = None
    ledger_hits: list[float] = field(default_factory=list)  # heron's own record of each summary's cache hit

    def count(self, kind: str) -> int:
        return sum(1 for r in self.received if r.kind == kind)


def heron_agent(
    home: Path, base_url: str, window: int, max_tokens: int, settings: dict[str, Any] | None = None
) -> tuple[list[str], dict[str, str]]:
    models = {
        "providers": {
            "local": {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "bench-key",
                "models": [{"id": MODEL_ID, "contextWindow": window, "maxTokens": max_tokens}],
            }
        }
    }
    home.mkdir(parents=True, exist_ok=True)
    (home / "models.json").write_text(json.dumps(models))
    (home / "settings.json").write_text(json.dumps({**(settings or {}), "memory": {"enabled": False}}))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    return [sys.executable, "-m", "heron.cli.main", "--model", f"local/{MODEL_ID}", "--mode", "rpc"], env


def pi_agent(home: Path, base_url: str, window: int, max_tokens: int) -> tuple[list[str], dict[str, str]] | None:
    command = pi_command()
    if command is None:
        return None
    env = pi_env(home, base_url, context_window=window, max_tokens=max_tokens, settings={"cacheWarming": "off"})
    return [*command, "--mode", "rpc", "--model", pi_model(MODEL_ID)], env


def drive(
    name: str,
    agent: Callable[[Path, str, int, int], tuple[list[str], dict[str, str]] | None],
    *,
    project: Path,
    work: Path,
    prompts: list[str],
    script: ScriptServer,
    window: int,
    max_tokens: int,
    turn_pauses: dict[int, float],
    live_pauses: bool = False,
) -> AgentRun | None:
    """One agent through every prompt; None when the agent is not installed. ``live_pauses``
    (a Python agent): its wall clock is moved forward by the user's pause before each turn
    (``_sim_clock``), so it sees the idle time the simulated cache sees."""
    server, url = serve(script)
    try:
        made = agent(work / f"{name}-home", url, window, max_tokens)
        if made is None:
            return None
        command, env = made
        offset_file = work / f"{name}-clock"
        if live_pauses:
            command = clocked_command(offset_file, command)
            env = {
                **env,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")])),
            }
        cwd = work / f"{name}-project"
        shutil.copytree(project, cwd)
        started = time.monotonic()
        rpc = RpcAgent(command, cwd, env)
        error = None
        try:
            for turn, prompt in enumerate(prompts, 1):
                if live_pauses and turn > 1:  # the simulated cache's gap: one request's time and the pause
                    advance(offset_file, Clock({}).step + turn_pauses.get(turn, 0.0))
                rpc.prompt(prompt)
        except (RuntimeError, TimeoutError) as exc:
            error = str(exc)
        finally:
            rpc.close()
        seconds = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    hits = [
        float(record["detail"]["summary_request"].get("cacheHit", 0.0))
        for path in sorted((work / f"{name}-home").rglob("*.jsonl"))
        for record in _ledger(path)
        if record.get("kind") == "compaction" and "summary_request" in record.get("detail", {})
    ]
    accepted = [r for r in script.received if r.kind in ("turn", "summary", "warm")]
    sent = [(body_parts(r.body), r.kind == "summary", r.new_turn) for r in accepted]
    return AgentRun(name, list(script.received), figures(sent, turn_pauses), seconds, error, hits)


def _ledger(path: Path) -> list[dict[str, Any]]:
    """The ledger records of a heron session file (none in pi's)."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(entry, dict)
            and entry.get("customType") == "heron.ledger"
            and isinstance(entry.get("data"), dict)
        ):
            out.append(entry["data"])
    return out
