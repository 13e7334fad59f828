"""One bogus overflow rejection does not brick a session.

A server (a proxy that counts differently, one oversized attachment) answers a small
first request with "prompt is too long: 210000 tokens > 200000 maximum". heron's own
count of that request is a few thousand tokens: more than ten times apart, so the
rejection teaches no window; the request is retried once, the turn completes, and
``-p --continue`` sends its request as usual.
"""

from __future__ import annotations

import json

from tests.cli.test_print_json_e2e import Project, anthropic_provider, project  # noqa: F401 - the fixture
from tests.support.http_server import LocalServer, json_reply
from tests.support.sse import anthropic_reply

BOGUS = "prompt is too long: 210000 tokens > 200000 maximum"


def test_a_bogus_overflow_is_retried_once_and_learns_nothing(project: Project) -> None:  # noqa: F811
    server = LocalServer()
    try:
        server.queue(
            json_reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message": BOGUS}}),
            anthropic_reply("first answer"),
            anthropic_reply("second answer"),
        )
        project.write_models(anthropic_provider(server))
        first = project.run("-p", "say hello", "--model", "local-claude/claude-local")
        assert first.code == 0, first.err
        assert first.out.strip() == "first answer"
        assert "retrying once without lowering the window" in first.err
        assert len(server.requests) == 2
        assert server.requests[1].json()["messages"] == server.requests[0].json()["messages"]

        lines = project.session_lines()
        learned = [line for line in lines if line.get("type") == "custom" and '"window"' in json.dumps(line)]
        assert learned == []

        again = project.run("-p", "--continue", "and again", "--model", "local-claude/claude-local")
        assert again.code == 0, again.err
        assert again.out.strip() == "second answer"
        assert len(server.requests) == 3
        sent = server.requests[2].json()["messages"]
        assert sent[-1]["role"] == "user" and "and again" in json.dumps(sent[-1])
    finally:
        server.close()
