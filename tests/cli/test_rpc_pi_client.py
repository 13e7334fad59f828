"""pi's own RPC client drives ``heron --mode rpc``: ``RpcClient`` from the npm package
``@earendil-works/pi-coding-agent`` 1.6, unchanged, run by Node (tests/cli/pi_rpc/drive.mjs)
against a local OpenAI-compatible server. ``.ci/run`` installs Node and the package into
``.ci/.node`` before pytest; without them the test is skipped locally and fails in CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_chunk, openai_reply, openai_sse
from tests.support.summaries import is_summary_body

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "tests" / "cli" / "pi_rpc" / "drive.mjs"
NODE_DIR = Path(os.environ.get("HERON_CI_NODE_DIR", ROOT / ".ci" / ".node"))
PACKAGE = "@earendil-works/pi-coding-agent"


def _node_and_package() -> tuple[Path, Path] | None:
    package = Path(os.environ.get("PI_PACKAGE", NODE_DIR / "node_modules" / PACKAGE))
    candidates = [os.environ.get("HERON_NODE"), NODE_DIR / "node_modules" / ".bin" / "node"]
    node = next((Path(c) for c in candidates if c and Path(c).is_file()), None)
    if node is None or not (package / "dist" / "modes" / "rpc" / "rpc-client.js").is_file():
        return None
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=False).stdout
    major, minor = (int(x) for x in version.strip().lstrip("v").split(".")[:2])
    return (node, package) if (major, minor) >= (22, 19) else None


@pytest.fixture
def pi_client() -> tuple[Path, Path]:
    found = _node_and_package()
    if found is None:
        message = (
            f"Node >= 22.19 and {PACKAGE} 1.6 are not in {NODE_DIR} (.ci/run installs them; or set "
            "HERON_NODE and PI_PACKAGE)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)  # CI must never skip this silently
        pytest.skip(message)
    return found


def slow_stream(words: int = 600, delay: float = 0.05) -> Reply:
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": f"word{i} "}) for i in range(words)]
    chunks.append(openai_chunk({}, finish="stop"))
    body = openai_sse(chunks)
    return Reply(body=body, chunk_size=len(body) // (words + 2), chunk_delay=delay)


class Script:
    """The model's side: summary requests get a summary, the others the next reply."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        self.bodies.append(body)
        if is_summary_body(body):
            return openai_reply("## Goal\nthe summary")
        return self.replies.pop(0) if self.replies else openai_reply("no reply scripted")


def run_driver(driver: Path, pi_client: tuple[Path, Path], script: Script, home: Path, work: Path) -> dict[str, Any]:
    """Run a Node driver script against ``script`` served on 127.0.0.1; its last stdout line
    is the JSON of what it saw."""
    node, package = pi_client
    server = LocalServer(responder=script)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        HERON_HOME=str(home),
        HERON_PYTHON=sys.executable,
        PI_PACKAGE=str(package),
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]),
        PATH=os.pathsep.join([str(node.parent), env.get("PATH", "")]),
    )
    try:
        done = subprocess.run(
            [str(node), str(driver), server.url + "/v1"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    finally:
        server.close()
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in out, out.get("error", "") + done.stderr[-3000:]
    return out


def test_pis_rpc_client_drives_heron(pi_client: tuple[Path, Path], tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "notes.txt").write_text("the answer is 42\n")
    (home / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 100}}))
    script = Script(
        openai_reply("Reading it. " + "a" * 20000, [("call_1", "read", {"path": "notes.txt"})]),
        openai_reply("The notes say 42."),
        openai_reply("", [("call_2", "bash", {"command": "sleep 1.5; echo slow done"})]),
        openai_reply("Done, and I saw the steer. " + "c" * 1000),
        slow_stream(),
    )
    out = run_driver(DRIVER, pi_client, script, home, work)
    check_prompt(out)
    check_steer(out, script)
    check_compact_and_messages(out)
    check_abort_and_new_session(out)


def check_prompt(out: dict[str, Any]) -> None:
    prompt = out["prompt"]
    types = prompt["types"]
    assert types[0] == "agent_start" and types[-1] == "agent_settled"
    assert types.index("tool_execution_start") < types.index("tool_execution_end") < types.index("agent_end")
    assert types.index("agent_end") < types.index("run_end") < types.index("agent_settled")  # heron's extra event
    assert prompt["toolStart"] == {
        "type": "tool_execution_start",
        "toolCallId": "call_1",
        "toolName": "read",
        "args": {"path": "notes.txt"},
    }
    end = prompt["toolEnd"]
    assert end["toolCallId"] == "call_1" and end["isError"] is False
    assert "the answer is 42" in end["result"]["content"][0]["text"]
    assert set(prompt["update"]) == {"type", "usage", "assistantMessageEvent"}
    assert "contentIndex" in prompt["update"]["assistantMessageEvent"]
    assert prompt["turnEnd"]["toolResults"][0]["toolCallId"] == "call_1"
    assert prompt["agentEnd"]["willRetry"] is False
    assert [m["role"] for m in prompt["agentEnd"]["messages"]] == ["user", "assistant", "toolResult", "assistant"]
    assert prompt["settled"] == {"type": "agent_settled", "aborted": False}
    assert prompt["runEnd"]["stop_reason"] == "stop" and prompt["runEnd"]["answer_chars"] == len("The notes say 42.")
    assert out["lastText"] == "The notes say 42."
    state = out["state"]
    assert state["isStreaming"] is False and state["isCompacting"] is False and state["messageCount"] == 4
    assert state["model"]["id"] == "test-model" and state["model"]["contextWindow"] > 0
    assert state["sessionId"] and state["sessionFile"].endswith(".jsonl") and state["pendingMessageCount"] == 0


def check_steer(out: dict[str, Any], script: Script) -> None:
    assert out["steerPromptDisposition"] == "started" and out["steerDisposition"] == "queued"
    assert out["stateWhileRunning"]["isStreaming"] is True
    assert out["stateWhileRunning"]["pendingMessageCount"] == 1
    assert "already running" in out["promptWhileRunning"] and "streamingBehavior" in out["promptWhileRunning"]
    updates = out["steer"]["queueUpdates"]
    assert updates[0] == {"type": "queue_update", "steering": ["Also mention the steer."], "followUp": []}
    assert updates[-1] == {"type": "queue_update", "steering": [], "followUp": []}  # delivered
    assert out["steer"]["types"][-1] == "agent_settled"
    after_tool = next(b for b in script.bodies if "slow done" in json.dumps(b))
    assert "Also mention the steer." in json.dumps(after_tool["messages"][-1])


def check_compact_and_messages(out: dict[str, Any]) -> None:
    compact = out["compact"]
    assert compact["summary"].startswith("## Goal\nthe summary")
    # tokensBefore counts what the server reported (this one says 100 prompt tokens), the other is estimated
    assert compact["tokensBefore"] > 0 and compact["estimatedTokensAfter"] > 0 and compact["firstKeptEntryId"]
    roles = [m["role"] for m in out["messages"]]
    assert roles[0] == "compactionSummary" and roles[-1] == "assistant" and len(roles) < 8


def check_abort_and_new_session(out: dict[str, Any]) -> None:
    abort = out["abort"]
    assert abort["settled"] == {"type": "agent_settled", "aborted": True}
    assert abort["types"][-1] == "agent_settled"  # abort answered after the session settled
    assert abort["end"]["message"]["stopReason"] == "aborted"
    assert out["stateAfterAbort"]["isStreaming"] is False
    assert out["newSession"]["cancelled"] is False
    assert out["stateAfterNew"]["messageCount"] == 0 and out["messagesAfterNew"] == []
    assert out["stateAfterNew"]["sessionId"] != out["state"]["sessionId"]
    assert out["stats"]["totalMessages"] == 0 and out["stats"]["tokens"]["total"] == 0
