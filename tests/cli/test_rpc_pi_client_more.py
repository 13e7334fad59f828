"""pi's ``RpcClient`` (npm ``@earendil-works/pi-coding-agent`` 1.6) drives ``heron --mode rpc``
through the rest of what pi's RPC docs promise and editor adapters call: a prompt with an
image, follow-ups (command and ``streamingBehavior``), models, thinking levels, session
stats, names, fork / switch / clone, ``get_commands`` and error answers
(tests/cli/pi_rpc/drive_more.mjs). Skipped locally without Node and the package, failed in CI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_rpc_pi_client import ROOT, Script, pi_client, run_driver  # noqa: F401 - the fixture
from tests.support.sse import openai_reply

DRIVER = ROOT / "tests" / "cli" / "pi_rpc" / "drive_more.mjs"


def _project(work: Path) -> None:
    (work / ".heron" / "prompts").mkdir(parents=True)
    (work / ".heron" / "prompts" / "fix-tests.md").write_text(
        "---\ndescription: Fix failing tests\n---\nFix the tests in $1\n"
    )
    (work / ".heron" / "skills" / "tidy").mkdir(parents=True)
    (work / ".heron" / "skills" / "tidy" / "SKILL.md").write_text(
        "---\nname: tidy\ndescription: Tidy the imports\n---\nSort them.\n"
    )


def test_pis_rpc_client_drives_the_rest(pi_client: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    _project(work)
    script = Script(
        openai_reply("Looking.", [("call_1", "bash", {"command": "echo one; sleep 0.3; echo two"})]),
        openai_reply("A red pixel."),
        openai_reply("", [("call_2", "bash", {"command": "sleep 1; echo slow done"})]),
        openai_reply("Slow done."),
        openai_reply("Bye."),
        openai_reply("Fixed."),
    )
    out = run_driver(DRIVER, pi_client, script, home, work)
    check_event_order(out["imagePrompt"], script)
    check_follow_up(out, script)
    check_models_and_thinking(out)
    check_sessions(out)
    check_commands(out, script)
    check_errors(out)


def check_event_order(events: list[dict[str, Any]], script: Script) -> None:
    types: list[str] = []
    for event in events:
        kind = event["type"]
        if kind in ("message_update", "ledger"):
            continue
        if kind == "tool_execution_update" and types[-1] == kind:
            continue  # bash may report its partial output more than once
        types.append(kind)
    assert types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",  # the user's message
        "message_start",
        "message_end",  # the assistant's tool call
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "message_start",
        "message_end",  # the tool result
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
        "run_end",
        "agent_settled",
    ]
    assistant_starts = [
        e["message"] for e in events if e["type"] == "message_start" and e["message"]["role"] == "assistant"
    ]
    assert [m["stopReason"] for m in assistant_starts] == ["pending", "pending"]  # pi's mark of a partial message
    ends = [
        e["message"]["stopReason"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert ends == ["toolUse", "stop"]
    user = events[2]["message"]
    assert user["role"] == "user" and user["content"][1] == {
        "type": "image",
        "mimeType": "image/png",
        "data": user["content"][1]["data"],
    }
    update = next(e for e in events if e["type"] == "tool_execution_update")
    assert set(update) == {"type", "toolCallId", "toolName", "args", "partialResult"}
    assert update["partialResult"]["content"][0]["text"].startswith("one")
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert end["result"]["content"][0]["text"] == "one\ntwo" and isinstance(end["durationMs"], int)
    starts = [
        e["assistantMessageEvent"]
        for e in events
        if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "toolcall_start"
    ]
    assert starts == [{"type": "toolcall_start", "contentIndex": 1, "id": "call_1", "toolName": "bash"}]
    # this model takes text only: the image reaches it as a note, not silently dropped
    assert "image omitted" in json.dumps(script.bodies[0]["messages"][-1])


def check_follow_up(out: dict[str, Any], script: Script) -> None:
    assert out["followUpDisposition"] == "queued" and out["followUpViaPrompt"] == "queued"
    events = out["followEvents"]
    updates = [e for e in events if e["type"] == "queue_update"]
    assert updates[1]["followUp"] == ["And then say bye.", "And a third thing."] and updates[-1]["followUp"] == []
    types = [e["type"] for e in events]
    assert types.count("agent_settled") == 1 and types[-1] == "agent_settled"
    # both follow-ups went to the model after the tool run had finished, in one request
    last = script.bodies[4]["messages"]
    assert "slow done" in json.dumps(last) and "And a third thing." in json.dumps(last[-1])
    with_image = next(m for m in last if "And then say bye." in json.dumps(m))
    assert "image omitted" in json.dumps(with_image)  # the follow-up's image came with it


def check_models_and_thinking(out: dict[str, Any]) -> None:
    model = out["models"][0]
    assert {"id", "provider", "api", "contextWindow", "maxTokens", "input", "cost", "baseUrl"} <= set(model)
    assert out["setModel"]["ok"]["id"] == model["id"]
    assert out["setModelBad"]["error"].startswith("Model not found: nope/no-such-model")
    assert out["levels"] == ["off"] and out["cycle"] == {"ok": None}
    # a model without reasoning takes only "off", whatever level is asked for (pi clamps too)
    assert out["stateAfterLevel"]["thinkingLevel"] == "off"


def check_sessions(out: dict[str, Any]) -> None:
    stats = out["stats"]
    assert stats["userMessages"] == 4 and stats["toolCalls"] == 2 and stats["tokens"]["total"] > 0
    assert out["stateNamed"]["sessionName"] == "audit run"
    assert [m["text"] for m in out["forkMessages"]][:2] == ["What is in this image?", "Run the slow command."]
    fork = out["fork"]["ok"]
    assert fork["text"] == "Run the slow command." and fork["cancelled"] is False
    assert out["stateForked"]["sessionFile"] != out["firstState"]["sessionFile"]
    assert [m["role"] for m in out["messagesForked"]] == ["user", "assistant", "toolResult", "assistant"]
    assert "no-such-entry" in out["forkBad"]["error"]
    assert out["switch"]["ok"]["cancelled"] is False
    assert out["stateSwitched"]["sessionFile"] == out["firstState"]["sessionFile"]
    assert out["stateSwitched"]["messageCount"] == out["firstState"]["messageCount"]
    assert "/no/such/session.jsonl" in out["switchBad"]["error"]
    assert out["clone"]["ok"]["cancelled"] is False


def check_commands(out: dict[str, Any], script: Script) -> None:
    commands = out["commands"]["ok"]
    assert [(c["name"], c["source"], c["description"]) for c in commands] == [
        ("fix-tests", "prompt", "Fix failing tests"),
        ("skill:tidy", "skill", "Tidy the imports"),
    ]
    info = commands[0]["sourceInfo"]
    assert info["scope"] == "project" and info["path"].endswith("fix-tests.md")
    assert out["templateRun"][-1] == "agent_settled"
    assert "Fix the tests in tests/unit" in json.dumps(script.bodies[-1]["messages"][-1])


def check_errors(out: dict[str, Any]) -> None:
    unknown = out["unknown"]["ok"]
    assert unknown["success"] is False and unknown["command"] == "definitely_not_a_command"
    assert unknown["error"].startswith("Unknown command: definitely_not_a_command")
    assert out["promptNoMessage"]["ok"]["success"] is False and "message" in out["promptNoMessage"]["ok"]["error"]
    assert "nothing is running" in out["steerIdle"]["error"]
