"""The embedding example of ``docs/sdk.md`` runs as printed.

The code block is taken from the document and run unchanged in a fresh interpreter: a
``models.json`` in a temporary ``HERON_HOME`` points the built-in ``anthropic`` provider
at a local Anthropic-format server, so ``ModelChoice("anthropic/claude-sonnet-4-5")`` in
the example talks to the test's server instead of api.anthropic.com.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.http_server import LocalServer
from tests.support.sse import anthropic_reply

DOC = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"


def code_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_example_is_short() -> None:
    example = code_blocks()[0]
    lines = [line for line in example.splitlines() if line.strip()]
    assert len(lines) <= 16, "docs/sdk.md promises a ~15-line example"
    assert "SessionSpec" in example and "assemble_session" in example and "StoreSpec" in example


def test_the_example_runs_against_a_local_server(tmp_path: Path, local_server: LocalServer) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / "setup.cfg").write_text("[metadata]\nname = pelican\n")
    (home / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": local_server.url}}}))
    script = tmp_path / "example.py"
    script.write_text(code_blocks()[0])
    local_server.queue(
        anthropic_reply("Reading it.", [("toolu_1", "read", {"path": "setup.cfg"})]),
        anthropic_reply("The package is pelican."),
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env.update(HERON_HOME=str(home), ANTHROPIC_API_KEY="sk-ant-example")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["[read]", "The package is pelican."]
    session_path = Path(lines[2].removeprefix("session: "))
    assert session_path.is_file() and session_path.is_relative_to(home / "sessions")
    entries = [json.loads(line) for line in session_path.read_text().splitlines()]
    assert entries[0]["type"] == "session" and entries[0]["cwd"] == str(project)
    roles = [e["message"]["role"] for e in entries if e["type"] == "message"]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    # What the server got: the model of the example, its key, the tool result.
    first, second = (request.json() for request in local_server.requests)
    assert first["model"] == "claude-sonnet-4-5"
    headers = local_server.requests[0].headers
    assert "sk-ant-example" in (headers.get("x-api-key", "") + headers.get("authorization", ""))
    results = [
        b
        for m in second["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b["type"] == "tool_result"
    ]
    assert results and "name = pelican" in json.dumps(results[0]["content"])


def test_the_local_model_snippet_builds_a_model() -> None:
    namespace: dict[str, object] = {}
    exec(code_blocks()[1], namespace)
    model = namespace["model"]
    assert getattr(model, "base_url", None) == "http://localhost:11434/v1"
    assert getattr(model, "api", None) == "openai-chat"
