"""Building a child :class:`CodingSession`, isolated or forked from its parent.

*Isolated*: a new session file whose header names the parent; the system prompt is the
definition's body (or heron's default) with the project's AGENTS.md / CLAUDE.md and
nothing else of the parent's (no SYSTEM.md / APPEND_SYSTEM.md, no skills list, no
memory); the tools are the definition's (default: the parent's minus ``task``).

*Fork*: the parent's session forked just before the answer that made the call, so the
child's first request repeats the parent's last one byte for byte (system prompt, tools,
messages) and the provider's prompt cache is reused; then a synthetic call of ``task``
with a placeholder result, then the task prompt.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from heron.agent.tools import AgentTool
from heron.ai.models import ModelNotFoundError, ModelRegistry
from heron.ai.types import AssistantMessage, Model, StopReason, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.coding.prompt import PromptFiles, build_system_prompt
from heron.coding.settings import Settings
from heron.coding.skills import SkillNotFoundError, expand_skill_command
from heron.coding.subagents.definitions import TASK_TOOL, AgentDefinition
from heron.coding.tools import ALL_TOOLS
from heron.session.entries import MessageEntry
from heron.session.store import SessionStore

if TYPE_CHECKING:
    from heron.coding.runtime import CodingSession

FORK_PLACEHOLDER = (
    "You are the sub-agent this call started: a copy of the conversation so far. The task follows as the next "
    "message. Do it; your final message is returned to the parent as this call's result."
)
# Claude Code's model aliases: a .claude/agents file means "a model of that family"; the
# parent's model is the one heron knows to be usable.
GENERAL_AGENT_TYPE = "general-purpose"  # SubagentStop's agent_type without a definition (Claude Code's name)
INHERIT_ALIASES = frozenset({"inherit", "sonnet", "opus", "haiku"})


class SpawnError(ValueError):
    """The child cannot be started; the message is the tool's error result."""


def child_settings(parent: CodingSession) -> Settings:
    """The parent's settings without the project memory: a child neither shows nor flushes it."""
    memory = dataclasses.replace(parent.settings.memory, enabled=False, flush=False)
    return dataclasses.replace(parent.settings, memory=memory)


def share_control(parent: CodingSession, child: CodingSession, agent_type: str) -> None:
    """The child obeys the parent's permissions: the same engine object (so a mode the user
    switches to, ``--allow`` rules and rules allowed always apply to running children too),
    the same trust, and the parent's way of asking the user (none in print mode: denied);
    its stop runs the SubagentStop hooks; the parent's extensions see its tool calls."""
    ours, theirs = getattr(parent, "control", None), getattr(child, "control", None)
    if ours is None or theirs is None:
        return
    theirs.trusted = ours.trusted
    theirs.permissions = ours.permissions
    theirs.hooks = ours.hooks
    theirs.asker = ours.asker
    theirs.as_subagent(ours, agent_type)
    child.extensions.share(parent.extensions)


def resolve_child_model(parent: CodingSession, ref: str | None) -> tuple[Model, str | None]:
    model = parent.model
    if ref is None or ref.strip().lower() in INHERIT_ALIASES or ref.strip() in (model.id, model.ref):
        return model, parent.api_key
    try:
        registry = ModelRegistry.load()
        found = registry.find(ref)
    except ModelNotFoundError as exc:
        raise SpawnError(f"the agent definition's model: {exc}") from exc
    if found.provider == model.provider:
        return found, parent.api_key
    return found, registry.api_key(found)


def _split_tools(parent: CodingSession, names: list[str]) -> tuple[list[str], list[AgentTool[Any]]]:
    """Built-in names for the child's own instances; the parent's other tools (extensions) shared."""
    wanted = [n for n in names if n in ALL_TOOLS and n != TASK_TOOL]
    extra = [t for t in parent.tools if t.name in names and t.name not in ALL_TOOLS]
    return wanted, extra


def _new_store(parent: CodingSession) -> SessionStore:
    source = parent.store
    parent_ref = str(source.path) if source.path is not None else None
    if source.path is None:
        store = SessionStore.in_memory(parent.cwd)
        return store
    return SessionStore.create(parent.cwd, home=parent.home, parent_session=parent_ref, fsync=source.fsync)


def isolated_child(parent: CodingSession, definition: AgentDefinition | None, task_tool: Any) -> CodingSession:
    """``task_tool(child)`` builds the child's own task tool, or returns None."""
    from heron.coding.runtime import CodingSession

    names = (
        list(definition.tools)
        if definition is not None and definition.tools is not None
        else [t.name for t in parent.tools if t.name != TASK_TOOL]
    )
    model, api_key = resolve_child_model(parent, definition.model if definition is not None else None)
    store = _new_store(parent)
    skills_text = _skills_message(parent, definition)
    if skills_text:
        store.append_message(UserMessage(content=[TextContent(text=skills_text)]))
    wanted, extra = _split_tools(parent, names)
    child = CodingSession(
        cwd=parent.cwd,
        model=model,
        api_key=api_key,
        store=store,
        settings=child_settings(parent),
        tools=wanted,
        thinking_level=parent.thinking_level,
        home=parent.home,
        extra_tools=extra,
    )
    if TASK_TOOL in names:
        tool = task_tool(child)
        if tool is not None:
            child.tools.append(tool)
            child.agent.set_tools(child.tools)
    prompt = build_system_prompt(
        cwd=child.cwd,
        date=child.date,
        tools=[(t.name, t.description) for t in child.tools],
        context_files=child.context_files,
        prompt_files=PromptFiles(),
        system_prompt=definition.system_prompt if definition is not None and definition.system_prompt else None,
    )
    child.system_prompt = prompt
    child.agent.set_system_prompt(prompt)
    share_control(parent, child, definition.name if definition is not None else GENERAL_AGENT_TYPE)
    return child


def _skills_message(parent: CodingSession, definition: AgentDefinition | None) -> str:
    if definition is None or not definition.skills:
        return ""
    parts: list[str] = []
    for name in definition.skills:
        try:
            expanded = expand_skill_command(f"/skill:{name}", parent.skills)
        except SkillNotFoundError as exc:
            raise SpawnError(f"agent {definition.name!r} preloads a skill heron cannot give it: {exc}") from exc
        if expanded is not None:
            parts.append(expanded)
    return "\n\n".join(parts)


def fork_point(store: SessionStore, call_id: str) -> str | None:
    """The entry just before the answer that made ``call_id`` (None: the session's start)."""
    for entry in reversed(store.path_to(store.leaf_id)) if store.leaf_id is not None else []:
        message = entry.message if isinstance(entry, MessageEntry) else None
        if isinstance(message, AssistantMessage) and any(call.id == call_id for call in message.tool_calls()):
            return entry.parent_id
    raise SpawnError("cannot fork: the call that asked for the fork is not on the parent's path")


def forked_child(parent: CodingSession, call_id: str, arguments: dict[str, Any], task_tool: Any) -> CodingSession:
    from heron.coding.runtime import CodingSession

    point = fork_point(parent.store, call_id)
    store = parent.store.fork(point, home=parent.home) if point is not None else _new_store(parent)
    model = parent.model
    store.append_message(
        AssistantMessage(
            api=model.api,
            provider=model.provider,
            model=model.id,
            content=[ToolCall(id=call_id, name=TASK_TOOL, arguments=arguments)],
            stop_reason=StopReason.TOOL_USE,
        )
    )
    store.append_message(
        ToolResultMessage(tool_call_id=call_id, tool_name=TASK_TOOL, content=[TextContent(text=FORK_PLACEHOLDER)])
    )
    names = [t.name for t in parent.tools]
    wanted, _extra = _split_tools(parent, names)
    child = CodingSession(
        cwd=parent.cwd,
        model=model,
        api_key=parent.api_key,
        store=store,
        settings=child_settings(parent),
        tools=wanted,
        thinking_level=parent.thinking_level,
        home=parent.home,
        date=parent.date,
    )
    own = {t.name: t for t in child.tools}
    tools: list[AgentTool[Any]] = []
    for tool in parent.tools:  # the parent's order and definitions: the cached prefix holds
        if tool.name == TASK_TOOL:
            tools.append(task_tool(child))
        else:
            tools.append(own.get(tool.name, tool))
    child.tools[:] = tools
    child.agent.set_tools(tools)
    child.system_prompt = parent.agent.state.system_prompt
    child.agent.set_system_prompt(child.system_prompt)
    share_control(parent, child, "fork")
    return child
