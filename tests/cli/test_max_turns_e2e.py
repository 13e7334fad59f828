"""A model that never stops calling tools is stopped by ``--max-turns`` / ``limits.maxTurns``.

The scripted server answers every request with one more bash call, forever. heron must
send exactly the allowed number of requests, exit 1 with the documented message, and
leave a session that ``-p --continue`` resumes (the stop is never sent to the model).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import pytest

from heron.cli.modes.print_mode import LIMIT_EXIT
from heron.coding.run_limits import DEFAULT_MAX_TURNS, max_turns_for
from heron.coding.settings import Settings, settings_from_dict
from tests.cli.test_print_json_e2e import Project, openai_args, project  # noqa: F401 - the fixture
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

STOP_TEXT = "stopped after {n} model calls: the limit for one prompt (--max-turns / limits.maxTurns) was reached"


@pytest.fixture
def endless() -> Iterator[LocalServer]:
    """Every request gets another tool call; a request whose last message is a user
    message saying "answer now" gets a plain answer (the resumed prompt)."""
    ids = itertools.count()

    def respond(request: Recorded) -> Reply:
        last = request.json()["messages"][-1]
        if last["role"] == "user" and "answer now" in str(last["content"]):
            return openai_reply("Here is the answer.")
        return openai_reply("", [(f"call_{next(ids)}", "bash", {"command": "echo again"})])

    server = LocalServer(respond)
    yield server
    server.close()


def test_endless_tool_loop_stops_at_max_turns_and_resumes(project: Project, endless: LocalServer) -> None:  # noqa: F811
    result = project.run("-p", "loop forever", "--max-turns", "50", *openai_args(endless))
    assert result.code == LIMIT_EXIT  # 4: a limit stopped the run (docs/continuity.md, exit codes)
    assert result.out == ""
    assert f"heron: {STOP_TEXT.format(n=50)}" in result.err
    assert len(endless.requests) == 50  # no request after the limit

    lines = project.session_lines()
    stops = [line for line in lines if line.get("message", {}).get("errorKind") == "turn_limit"]
    assert len(stops) == 1 and stops[0]["message"]["stopReason"] == "error"

    resumed = project.run("-p", "--continue", "answer now", "--max-turns", "50", *openai_args(endless))
    assert resumed.code == 0, resumed.err
    assert resumed.out.strip() == "Here is the answer."
    assert len(endless.requests) == 51
    body = endless.requests[-1].json()["messages"]
    # The model receives the 50 calls with their results, then the new prompt: the stop
    # itself is never sent, and no call is left without its result.
    assert body[-1] == {"role": "user", "content": "answer now"}
    calls = [c["id"] for m in body if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results = [m["tool_call_id"] for m in body if m["role"] == "tool"]
    assert len(calls) == 50 and calls == results
    assert not any(m["role"] == "assistant" and not m.get("tool_calls") and not m.get("content") for m in body)


def test_settings_limit_applies_in_json_mode(project: Project, endless: LocalServer) -> None:  # noqa: F811
    project.write_settings({"limits": {"maxTurns": 3}})
    result = project.run("--mode", "json", "-p", "loop forever", *openai_args(endless))
    assert result.code == LIMIT_EXIT  # 4: a limit stopped the run (docs/continuity.md, exit codes)
    assert len(endless.requests) == 3
    ends = [e for e in result.lines() if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
    assert ends[-1]["message"]["stopReason"] == "error"
    assert ends[-1]["message"]["errorMessage"].startswith(STOP_TEXT.format(n=3))


def test_bad_max_turns_is_a_usage_error(project: Project, endless: LocalServer) -> None:  # noqa: F811
    result = project.run("-p", "x", "--max-turns", "0", *openai_args(endless))
    assert result.code == 2
    assert "--max-turns must be at least 1" in result.err
    assert endless.requests == []


def test_the_mode_decides_the_default() -> None:
    assert max_turns_for(Settings()) == DEFAULT_MAX_TURNS == 200
    assert max_turns_for(Settings(), interactive=True) is None
    configured = settings_from_dict({"limits": {"maxTurns": 7}})
    assert max_turns_for(configured, interactive=True) == 7
    assert max_turns_for(configured, 9) == 9


def test_a_bad_setting_is_reported_and_ignored(tmp_path: object) -> None:
    from pathlib import Path

    from heron.coding.settings import load_settings

    root = Path(str(tmp_path))
    (root / "settings.json").write_text(json.dumps({"limits": {"maxTurns": 0}}))
    settings = load_settings(root / "nowhere", root)
    assert settings.max_turns is None
    assert any("maxTurns" in warning for warning in settings.warnings)
