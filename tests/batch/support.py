"""A scripted OpenAI-compatible server for batch tests, and helpers to run ``heron batch``.

The server is stateless, so any number of sessions can talk to it at once: a request
whose last message is not a tool result gets a ``read`` call of ``task.txt``; one that
ends with the tool result gets the answer ``done: <the task's prompt>``. Every task is
thus two model requests and one tool call, through the real OpenAI SDK and HTTP.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

MODEL = "test-model"


@dataclass
class ScriptedServer:
    """The LocalServer plus when each request came (first to last: the throughput)."""

    delay: float = 0.0
    on_request: Callable[[Recorded, int], None] | None = None
    times: list[float] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.server = LocalServer(responder=self._respond)

    def _respond(self, request: Recorded) -> Reply:
        body = request.json()
        messages = body.get("messages", [])
        with self._lock:
            self.times.append(time.monotonic())
            count = len(self.times)
        if self.on_request is not None:
            self.on_request(request, count)
        if self.delay:
            time.sleep(self.delay)
        prompt = next((_text(m) for m in messages if m.get("role") == "user"), "")
        if messages and messages[-1].get("role") == "tool":
            with self._lock:
                self.prompts.append(prompt)
            return openai_reply(f"done: {prompt}", prompt_tokens=50, completion_tokens=5)
        call_id = f"call_{abs(hash(prompt)) % 10**8}"
        return openai_reply("", [(call_id, "read", {"path": "task.txt"})], prompt_tokens=40, completion_tokens=8)

    @property
    def url(self) -> str:
        return self.server.url + "/v1"

    def close(self) -> None:
        self.server.close()


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def write_tasks(path: Path, project: Path, count: int, **extra: Any) -> list[str]:
    ids = [f"t{n:03d}" for n in range(count)]
    with path.open("w") as handle:
        for task_id in ids:
            handle.write(json.dumps({"id": task_id, "prompt": f"task {task_id}", "cwd": str(project), **extra}) + "\n")
    return ids


def make_project(root: Path) -> Path:
    project = root / "project"
    project.mkdir()
    (project / "task.txt").write_text("the task file\n")
    return project


def heron_command() -> list[str]:
    script = Path(sys.executable).with_name("heron")
    return [str(script)] if script.exists() else [sys.executable, "-m", "heron.cli.main"]


def batch_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith(("HERON_", "OTEL_", "RAY_"))
    }
    env["HERON_HOME"] = str(home)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


def batch_args(tasks: Path, out: Path, server: ScriptedServer, *extra: str) -> list[str]:
    return [
        *heron_command(),
        "batch",
        str(tasks),
        "--out",
        str(out),
        "--base-url",
        server.url,
        "--model",
        MODEL,
        "--progress",
        "plain",
        *extra,
    ]


def run_batch(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
    )


def read_results(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
