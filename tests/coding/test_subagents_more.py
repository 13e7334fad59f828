"""Sub-agents: definition files, preloaded skills, nesting depth, the registry after a
compaction, the events the parent's listeners (and json/rpc modes) see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import ExtensionMessage
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, text
from heron.ai.types import ToolCall, ToolResultMessage
from heron.cli.events_json import event_json
from heron.coding.events import SubagentEvent
from heron.coding.subagents.definitions import listing_lines, load_definitions, parse_definition
from heron.context.continuity.children import CHILDREN_MESSAGE_TYPE
from tests.coding.test_subagents import Router, calls, make_session, project, results, task_call

__all__ = ["project"]  # the fixture, shared


def write_agent(root: Path, where: str, file: str, body: str) -> Path:
    directory = root / where
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file
    path.write_text(body)
    return path


def test_definitions_from_the_three_places_with_reasons(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_agent(home, "agents", "a.md", "---\nname: shared\ndescription: from the user\n---\nUser body\n")
    write_agent(project, ".heron/agents", "b.md", "---\nname: shared\ndescription: from the project\n---\nP\n")
    write_agent(
        project,
        ".claude/agents",
        "c.md",
        "---\nname: cc\ndescription: Claude style\ntools: Read, Grep, Bash, TodoWrite\nmodel: sonnet\n---\nBody\n",
    )
    write_agent(project, ".claude/agents", "d.md", "no front matter here\n")
    write_agent(project, ".claude/agents", "e.md", "---\nname: [unclosed\n---\n")
    write_agent(project, ".claude/agents", "f.md", "---\nname: nodesc\n---\n")
    write_agent(project, ".claude/agents", "notes.txt", "ignored: not markdown")
    found = load_definitions(project, home)
    assert sorted(found.agents) == ["cc", "shared"]
    assert found.agents["shared"].description == "from the project"  # the project wins
    cc = found.agents["cc"]
    assert cc.tools == ("read", "grep", "bash", "todo") and cc.model == "sonnet" and cc.system_prompt == "Body"
    reasons = {p.path.name: p.reason for p in found.problems}
    assert "no YAML front matter" in reasons["d.md"]
    assert "invalid YAML front matter at line 2" in reasons["e.md"]
    assert "'description' is missing" in reasons["f.md"]
    assert "description" in found.why_missing("nodesc") and "f.md" in found.why_missing("nodesc")
    assert found.why_missing("zzz") == "unknown agent 'zzz' (available: cc, shared)"
    lines = listing_lines(found)
    assert lines[0] == "cc: Claude style" and "tools: read, grep, bash, todo; model: sonnet" in lines[1]
    assert sum(line.startswith("skipped ") for line in lines) == 3
    assert listing_lines(load_definitions(tmp_path / "empty", tmp_path / "nohome"))[0].startswith("No agent")


def test_definition_fields_are_checked(tmp_path: Path) -> None:
    ok = parse_definition(tmp_path / "x.md", "---\nname: x\ndescription: d\ntools: [read, task]\nskills: a, b\n---\n")
    assert ok.tools == ("read", "task") and ok.allows_task and ok.skills == ("a", "b")
    for bad, reason in [("tools: 5", "comma-separated"), ("model: 3", "'model'"), ("tools: read, warp", "warp")]:
        with pytest.raises(ValueError, match=reason):
            parse_definition(tmp_path / "x.md", f"---\nname: x\ndescription: d\n{bad}\n---\n")


async def test_skills_are_the_childs_first_user_message(project: Path, faux: FauxProvider) -> None:
    skill_dir = project / ".heron" / "skills" / "style-guide"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\nname: style-guide\ndescription: How we write\n---\nUse short words.\n")
    write_agent(
        project,
        ".heron/agents",
        "w.md",
        "---\nname: writer\ndescription: Writes prose\ntools: read\nskills: style-guide\n---\nYou write.\n",
    )
    router = Router(
        faux,
        {
            "write something": [calls(task_call("w", "write the intro", agent="writer")), text("done")],
            "write the intro": [text("An intro.")],
        },
    )
    parent = make_session(project, faux)
    await parent.prompt("write something")
    child = router.requests["write the intro"][0]
    assert [m.role for m in child.messages] == ["user", "user"]
    assert "Use short words." in child.messages[0].text()  # type: ignore[union-attr]
    assert results(parent)[0].text() == "An intro."


async def test_unknown_skill_is_a_clear_error(project: Path, faux: FauxProvider) -> None:
    write_agent(project, ".heron/agents", "w.md", "---\nname: writer\ndescription: d\nskills: nope\n---\n")
    Router(faux, {"go": [calls(task_call("w", "p", agent="writer")), text("ok")]})
    parent = make_session(project, faux)
    await parent.prompt("go")
    result = results(parent)[0]
    assert result.is_error and "unknown skill 'nope'" in result.text()


async def test_nesting_needs_the_definition_and_stops_at_the_depth(project: Path, faux: FauxProvider) -> None:
    write_agent(project, ".heron/agents", "n.md", "---\nname: nester\ndescription: d\ntools: read, task\n---\nN\n")
    router = Router(
        faux,
        {
            "top": [calls(task_call("t1", "level one", agent="nester")), text("top done")],
            "level one": [calls(task_call("t2", "level two", agent="nester")), text("one done")],
            "level two": [calls(task_call("t3", "level three", agent="nester")), text("two done")],
        },
    )
    parent = make_session(project, faux)  # subagents.maxDepth 2: parent -> child -> grandchild
    await parent.prompt("top")
    assert "task" in [t.name for t in router.requests["level one"][0].tools or []]
    refused = next(m for m in router.requests["level two"][1].messages if isinstance(m, ToolResultMessage))
    assert refused.is_error and "maximum depth" in refused.text()
    assert results(parent)[0].text() == "one done"
    # a grandchild's usage reaches the top through its parent
    assert parent.subagents is not None and parent.subagents.usage.output > 0


async def test_registry_survives_compaction(project: Path, faux: FauxProvider) -> None:
    router = Router(
        faux,
        {
            "delegate": [
                calls(task_call("c", "investigate", description="investigate the flaky test")),
                text("noted " + "y" * 3_000),
            ],
            "investigate": [text("found it " + "z" * 3_000)],
            "more": [text("more " + "w" * 3_000)],
            "after": [text("still here")],
        },
    )
    parent = make_session(project, faux, settings={"compaction": {"keepRecentTokens": 50}})
    await parent.prompt("delegate")
    await parent.prompt("more")
    end = await parent.compact()
    assert end is not None and end.entry_id is not None
    await parent.prompt("after")
    sent = router.requests["after"][0]
    block = next(
        m for m in parent.messages if isinstance(m, ExtensionMessage) and m.custom_type == CHILDREN_MESSAGE_TYPE
    )
    assert parent.subagents is not None
    (child_id,) = parent.subagents.children
    assert isinstance(block.content, str)
    assert f"- {child_id} [done] investigate the flaky test (session: " in block.content
    assert not results(parent)  # the call itself was summarised away
    assert any(block.content in m.text() for m in sent.messages if hasattr(m, "text"))


async def test_child_events_reach_the_parent_tagged(project: Path, faux: FauxProvider) -> None:
    Router(faux, {"go": [calls(task_call("c", "child work")), text("ok")], "child work": [text("child says hi")]})
    parent = make_session(project, faux)
    seen: list[SubagentEvent] = []
    parent.subscribe(lambda e: seen.append(e) if isinstance(e, SubagentEvent) else None)
    await parent.prompt("go")
    assert seen and {e.tool_call_id for e in seen} == {"c"}
    child_id = results(parent)[0].details["sessionId"]
    assert {e.session_id for e in seen} == {child_id}
    types = [e.event.type for e in seen]
    assert "agent_start" in types and "message_end" in types and "message_update" not in types
    as_json: dict[str, Any] = event_json([e for e in seen if e.event.type == "message_end"][-1])
    assert as_json["type"] == "subagent" and as_json["session_id"] == child_id
    assert as_json["event"]["message"]["content"][0]["text"] == "child says hi"


async def test_search_history_reaches_the_childs_session(project: Path, faux: FauxProvider) -> None:
    (project / "secret.txt").write_text("the code word is ZEBRAFISH-42\n")
    Router(
        faux,
        {
            "find the code word": [calls(task_call("c", "read secret.txt")), text("ok")],
            "read secret.txt": [
                calls(ToolCall(id="r1", name="read", arguments={"path": "secret.txt"})),
                text("I read it."),
            ],
        },
    )
    parent = make_session(project, faux)
    await parent.prompt("find the code word")
    assert "ZEBRAFISH" not in results(parent)[0].text()  # only the child saw it
    search = next(t for t in parent.tools if t.name == "search_history")
    found = await search.execute(
        "s1", search.parameters(query="ZEBRAFISH-42", scope="project"), AbortSignal(), lambda _: None
    )
    assert "ZEBRAFISH-42" in found.content[0].text  # type: ignore[union-attr]
    assert results(parent)[0].details["sessionId"] in found.content[0].text  # type: ignore[union-attr]


async def test_children_obey_the_parents_permissions(project: Path, faux: FauxProvider) -> None:
    router = Router(
        faux,
        {
            "delegate a write": [calls(task_call("c", "write the file")), text("ok")],
            "write the file": [
                calls(ToolCall(id="w", name="write", arguments={"path": "out.txt", "content": "x"})),
                text("tried"),
            ],
        },
    )
    parent = make_session(project, faux)
    parent.control.set_mode("plan")  # read-only
    await parent.prompt("delegate a write")
    assert not (project / "out.txt").exists()
    denied = next(m for m in router.requests["write the file"][1].messages if isinstance(m, ToolResultMessage))
    assert denied.is_error and "plan mode is read-only" in denied.text()
    assert results(parent)[0].text() == "tried"
