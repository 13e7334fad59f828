"""Bad input to ``heron --mode acp``: each gets a JSON-RPC error that says what is
wrong, and the process keeps serving (the last request of each test still works)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any

from tests.cli.test_print_json_e2e import Project, heron_command, openai_args, project
from tests.support.http_server import LocalServer

__all__ = ["project"]

TIMEOUT = 60


class Raw:
    """heron --mode acp with raw lines on stdin and the replies read from stdout."""

    def __init__(self, project: Project, *flags: str) -> None:
        self.process = subprocess.Popen(
            [*heron_command(), "--mode", "acp", *flags],
            cwd=project.cwd,
            env=project.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.log: list[dict[str, Any]] = []  # every message read from stdout, in order
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: str | dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        text = line if isinstance(line, str) else json.dumps(line)
        self.process.stdin.write(text.encode() + b"\n")
        self.process.stdin.flush()
        while True:  # notifications (e.g. the session's commands) are logged, not returned
            reply = self.next()
            if "id" in reply:
                return reply

    def next(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.lines.get(timeout=TIMEOUT))
        self.log.append(message)
        return message

    def close(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=TIMEOUT)
        return code, self.process.stderr.read().decode()


def request(ident: int, method: str, params: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        out["params"] = params
    return out


def test_malformed_lines_get_parse_and_invalid_request_errors(project: Project, local_server: LocalServer) -> None:
    raw = Raw(project, *openai_args(local_server))
    try:
        reply = raw.send("{not json")
        assert reply["id"] is None and reply["error"]["code"] == -32700
        assert "not JSON" in reply["error"]["data"]["details"]
        for line, details in (
            ("[1, 2]", "JSON object"),
            ('"hello"', "JSON object"),
            ('{"jsonrpc": "2.0", "id": 9}', "neither a request"),
            ('{"jsonrpc": "2.0", "id": 9, "method": 5}', "method must be a string"),
        ):
            reply = raw.send(line)
            assert reply["error"]["code"] == -32600, line
            assert details in reply["error"]["data"]["details"], line
        reply = raw.send(request(1, "initialize", {"protocolVersion": 1}))
        assert reply["id"] == 1 and reply["result"]["protocolVersion"] == 1
        assert reply["result"]["agentCapabilities"]["loadSession"] is True
    finally:
        code, err = raw.close()
    assert code == 0, err


def test_unknown_sessions_methods_and_bad_params(project: Project, local_server: LocalServer) -> None:
    raw = Raw(project, *openai_args(local_server))
    try:
        assert "result" in raw.send(request(1, "initialize", {"protocolVersion": 1}))
        text = [{"type": "text", "text": "hi"}]
        reply = raw.send(request(2, "session/prompt", {"sessionId": "nope", "prompt": text}))
        assert reply["error"]["code"] == -32602 and "unknown session 'nope'" in reply["error"]["data"]["message"]
        reply = raw.send(
            request(3, "session/load", {"sessionId": "0123abcd", "cwd": str(project.cwd), "mcpServers": []})
        )
        assert reply["error"]["code"] == -32602 and "no session '0123abcd'" in reply["error"]["data"]["message"]
        reply = raw.send(request(4, "session/set_mode", {"sessionId": "nope", "modeId": "plan"}))
        assert reply["error"]["code"] == -32602 and "unknown session" in reply["error"]["data"]["message"]
        reply = raw.send(request(5, "session/set_model", {"sessionId": "nope", "modelId": "x/y"}))
        assert reply["error"]["code"] == -32602 and "unknown session" in reply["error"]["data"]["message"]
        reply = raw.send(request(6, "nope/nope"))
        assert reply["error"]["code"] == -32601
        reply = raw.send(request(7, "session/new", {"cwd": "relative/dir", "mcpServers": []}))
        assert reply["error"]["code"] == -32602 and "absolute path" in reply["error"]["data"]["message"]
        reply = raw.send(request(8, "session/new", {"mcpServers": []}))
        assert reply["error"]["code"] == -32602  # cwd missing: the schema's validation error
        reply = raw.send(request(9, "session/new", {"cwd": str(project.cwd), "mcpServers": []}))
        sid = reply["result"]["sessionId"]
        reply = raw.send(request(10, "session/set_mode", {"sessionId": sid, "modeId": "yolo"}))
        assert reply["error"]["code"] == -32602 and "unknown permission mode" in reply["error"]["data"]["message"]
        reply = raw.send(request(11, "session/prompt", {"sessionId": sid, "prompt": []}))
        assert reply["error"]["code"] == -32602 and "empty" in reply["error"]["data"]["message"]
        reply = raw.send(
            request(
                12,
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/tiff"}]},
            )
        )
        assert reply["error"]["code"] == -32602 and "image/tiff" in reply["error"]["data"]["message"]
        reply = raw.send(request(13, "session/list", {"cwd": str(project.cwd)}))
        assert reply["result"]["sessions"] == []  # a session file is written with its first message
    finally:
        code, err = raw.close()
    assert code == 0, err


def test_a_session_without_a_model_is_an_error_naming_the_setup(project: Project) -> None:
    raw = Raw(project)
    try:
        assert "result" in raw.send(request(1, "initialize", {"protocolVersion": 1}))
        reply = raw.send(request(2, "session/new", {"cwd": str(project.cwd), "mcpServers": []}))
        assert reply["error"]["code"] == -32603
        assert "model" in reply["error"]["data"]["message"].lower()
        assert "result" in raw.send(request(3, "session/list", {}))
    finally:
        code, err = raw.close()
    assert code == 0, err


def test_a_task_on_the_command_line_is_a_usage_error(project: Project) -> None:
    done = subprocess.run(
        [*heron_command(), "--mode", "acp", "do", "things"],
        cwd=project.cwd,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "--mode acp takes no task" in done.stderr


def test_a_failing_model_request_is_a_prompt_error_and_the_session_goes_on(
    project: Project, local_server: LocalServer
) -> None:
    from tests.support.http_server import json_reply
    from tests.support.sse import openai_reply

    local_server.queue(
        json_reply(401, {"error": {"message": "invalid api key", "type": "auth"}}), openai_reply("Now it works.")
    )
    raw = Raw(project, *openai_args(local_server))
    try:
        assert "result" in raw.send(request(1, "initialize", {"protocolVersion": 1}))
        sid = raw.send(request(2, "session/new", {"cwd": str(project.cwd), "mcpServers": []}))["result"]["sessionId"]
        text = [{"type": "text", "text": "hi"}]
        reply = _skip_updates(raw, request(3, "session/prompt", {"sessionId": sid, "prompt": text}))
        assert reply["error"]["code"] == -32603 and "invalid api key" in reply["error"]["data"]["message"]
        reply = _skip_updates(raw, request(4, "session/prompt", {"sessionId": sid, "prompt": text}))
        assert reply["result"]["stopReason"] == "end_turn"
    finally:
        code, err = raw.close()
    assert code == 0, err


def _skip_updates(raw: Raw, message: dict[str, Any]) -> dict[str, Any]:
    """Send ``message`` and return its response, past the session/update notifications."""
    reply = raw.send(message)
    while reply.get("method") == "session/update":
        reply = json.loads(raw.lines.get(timeout=TIMEOUT))
    return reply
