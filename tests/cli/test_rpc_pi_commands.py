"""The pi 1.6 rpc commands and events beyond the ones pi's own client is driven through in
test_rpc_pi_client.py: queue and thinking commands, entries and the tree, session names,
models, auto compaction, and the fields pi's events carry (``durationMs``,
``thinking_level_changed``, ``session_info_changed``)."""

from __future__ import annotations

from pathlib import Path

from heron.ai.providers.faux import FauxProvider, text, tool_call
from tests.cli.test_rpc_mode import Harness, project

__all__ = ["project"]  # the fixture


async def test_tool_events_queue_and_thinking_commands(project: Path, faux: FauxProvider) -> None:
    faux.queue(tool_call("read", {"path": "small.py"}), text("f returns 1."))
    h = Harness(project, faux)
    await h.call({"id": 1, "type": "prompt", "message": "what does f return?"})
    await h.wait(lambda o: o["type"] == "agent_settled")
    end = next(o for o in h.out if o["type"] == "tool_execution_end")
    assert isinstance(end["durationMs"], int) and end["durationMs"] >= 0 and end["toolName"] == "read"

    levels = (await h.call({"id": 2, "type": "get_available_thinking_levels"}))["data"]["levels"]
    assert levels[0] == "off" and "high" in levels  # the faux model reasons
    before = h.app.session.thinking_level
    cycled = await h.call({"id": 3, "type": "cycle_thinking_level"})
    assert cycled["data"] == {"level": levels[(levels.index(before) + 1) % len(levels)]}
    assert h.app.session.thinking_level == cycled["data"]["level"] != before
    assert {"type": "thinking_level_changed", "level": cycled["data"]["level"]} in h.out
    await h.call({"id": 4, "type": "set_thinking_level", "level": "low"})
    assert h.out[-2] == {"type": "thinking_level_changed", "level": "low"}

    cleared = await h.call({"id": 5, "type": "clear_queue"})
    assert cleared["data"] == {"steering": [], "followUp": []}
    models = (await h.call({"id": 6, "type": "get_available_models"}))["data"]["models"]
    assert any(m["provider"] == "faux" and m["id"] == "faux-1" for m in models)
    assert all({"id", "provider", "api", "contextWindow", "maxTokens", "cost", "input"} <= set(m) for m in models)

    off = await h.call({"id": 7, "type": "set_auto_compaction", "enabled": False})
    assert off["data"] == {"autoCompactionEnabled": False}
    assert (await h.call({"id": 8, "type": "get_state"}))["data"]["autoCompactionEnabled"] is False
    on = await h.call({"id": 9, "type": "set_auto_compaction", "enabled": True})
    assert on["data"] == {"autoCompactionEnabled": True}
    bad = await h.call({"id": 10, "type": "set_auto_compaction", "enabled": "yes"})
    assert bad["success"] is False and '"enabled" must be true or false' in bad["error"]
    assert (await h.call({"id": 11, "type": "get_last_assistant_text"}))["data"] == {"text": "f returns 1."}


async def test_entries_tree_and_session_name(project: Path, faux: FauxProvider) -> None:
    faux.queue(text("one"), text("two"))
    h = Harness(project, faux)
    for number in (1, 2):
        await h.call({"id": number, "type": "prompt", "message": f"prompt {number}"})
        await h.wait(lambda o, n=number: o["type"] == "run_end" and o["id"] == n)
    entries = (await h.call({"id": 3, "type": "get_entries"}))["data"]
    ids = [e["id"] for e in entries["entries"]]
    assert entries["leafId"] == ids[-1] and all("type" in e for e in entries["entries"])
    messages = [e for e in entries["entries"] if e["type"] == "message"]
    assert [e["message"]["role"] for e in messages] == ["user", "assistant", "user", "assistant"]
    since = (await h.call({"id": 4, "type": "get_entries", "since": ids[-2]}))["data"]["entries"]
    assert [e["id"] for e in since] == ids[-1:]
    missing = await h.call({"id": 5, "type": "get_entries", "since": "nope"})
    assert missing["success"] is False and missing["error"] == "Entry not found: nope"

    tree = (await h.call({"id": 6, "type": "get_tree"}))["data"]
    assert tree["leafId"] == ids[-1] and len(tree["tree"]) == 1
    node, depth = tree["tree"][0], 1
    while node["children"]:
        (node,) = node["children"]
        depth += 1
    assert depth == len(ids) and node["entry"]["id"] == ids[-1]

    named = await h.call({"id": 7, "type": "set_session_name", "name": "  refactor  "})
    assert named["data"] == {"sessionName": "refactor"}
    assert {"type": "session_info_changed", "name": "refactor"} in h.out
    assert (await h.call({"id": 8, "type": "get_state"}))["data"]["sessionName"] == "refactor"


async def test_reset_window_forgets_a_learned_window(project: Path, faux: FauxProvider) -> None:
    from heron.context.records.decisions import LearnedWindow, window_data

    faux.queue(text("hello"))
    h = Harness(project, faux)
    await h.call({"id": 1, "type": "prompt", "message": "hi"})
    await h.wait(lambda o: o["type"] == "run_end" and o["id"] == 1)
    policy = h.app.session.policy
    configured = policy.sizes.window
    nothing = await h.call({"id": 2, "type": "reset_window"})
    assert nothing["data"] == {"dropped": None, "window": configured}
    policy.recorder.record(window_data(LearnedWindow(policy.sizes.model_key, 4_096, 9_000, "error text")))
    assert policy.sizes.window == 4_096
    dropped = await h.call({"id": 3, "type": "reset_window"})
    assert dropped["data"] == {"dropped": 4_096, "window": configured}
    assert policy.sizes.window == configured
