"""A server whose usage reports are implausibly small does not keep compaction away.

The scripted server reports 100 prompt tokens for every request while the conversation
grows by several thousand tokens a turn (a proxy that counts only the last message). If
heron believed the report it would think each request was ~100 tokens plus the newest
result, and send requests far past the window. heron's own count decides when a report
is more than ten times below it (docs/context.md, "Counting tokens"): every request the
server receives fits the window.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.test_print_json_e2e import heron_command
from tests.coding.test_small_window import call_reply, count_tokens, text_reply
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.summaries import is_summary_body

WINDOW = 24_000
TURNS = 16
REPORTED = 100  # what the server claims every request carried


def respond(request: Recorded) -> Reply:
    body = request.json()
    if is_summary_body(body):
        return text_reply("## Goal\nprint output\n## Progress\nprinted it", REPORTED)
    calls = sum(len(m.get("tool_calls") or []) for m in body["messages"] if m["role"] == "assistant")
    if calls >= TURNS:
        return text_reply("all printed", REPORTED)
    line = f"output line %05d of turn {calls:02d} {'.' * 20}\\n"
    command = f"for i in $(seq 1 240); do printf '{line}' $i; done"  # ~12 KB: ~3,000 tokens
    return call_reply(f"call_{calls}", "bash", {"command": command}, REPORTED)


def test_tiny_usage_reports_do_not_stop_compaction(tmp_path: Path) -> None:
    server = LocalServer(respond)
    try:
        cwd, home = tmp_path / "proj", tmp_path / "home"
        cwd.mkdir()
        home.mkdir()
        provider = {
            "baseUrl": server.url + "/v1",
            "api": "openai-completions",
            "apiKey": "sk-local",
            "models": [{"id": "small", "contextWindow": WINDOW, "maxTokens": 2_048}],
        }
        (home / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
        env["HERON_HOME"] = str(home)
        done = subprocess.run(
            [*heron_command(), "--model", "local/small", "-p", "print the output"],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "all printed"
        sizes = [sum(count_tokens(r.json())) for r in server.requests]
        # TURNS results of ~3,000 tokens each were produced: far more than the window holds
        assert len(server.requests) > TURNS
        assert max(sizes) <= WINDOW, sizes
    finally:
        server.close()
