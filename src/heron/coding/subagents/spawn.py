"""A child session, isolated or forked from its parent, described as a
:class:`~heron.coding.session_spec.SessionSpec` and built by the assembly every session
goes through (handed to the manager as ``build``).

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
from heron.coding.session_spec import ParentLink, SessionSpec, StoreSpec
from heron.coding.settings import Settings
from heron.coding.skills import SkillNotFoundError, expand_skill_command
from heron.coding.subagents.definitions import TASK_TOOL, AgentDefinition
from heron.coding.tools import ALL_TOOLS
from heron.session.entries import MessageEntry
from heron.session.store import SessionStore

if TYPE_CHECKING:
    from heron.coding.runtime import CodingSession
    from heron.coding.session_spec import Build
    from heron.coding.subagents.parent import ParentSession

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


def child_settings(parent: ParentSession) -> Settings:
    """The parent's settings without the project memory: a child neither shows nor flushes it."""
    memory = dataclasses.replace(parent.settings.memory, enabled=False, flush=False)
    return dataclasses.replace(parent.settings, memory=memory)


def resolve_child_model(parent: ParentSession, ref: str | None) -> tuple[Model, str | None]:
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


def _split_tools(parent: ParentSession, names: list[str]) -> tuple[list[str], list[AgentTool[Any]]]:
    """Built-in names for the child's own instances; the parent's other tools (extensions) shared."""
    wanted = [n for n in names if n in ALL_TOOLS and n != TASK_TOOL]
    extra = [t for t in parent.tools if t.name in names and t.name not in ALL_TOOLS]
    return wanted, extra


def _new_store(parent: ParentSession) -> StoreSpec:
    source = parent.store
    if source.path is None:
        return StoreSpec.memory()
    return StoreSpec.new(parent_session=str(source.path), fsync=source.fsync)


def isolated_child(parent: ParentSession, definition: AgentDefinition | None, build: Build) -> CodingSession:
    """A child with its own prompt and tools; it has ``task`` when its definition lists it."""
    names = (
        list(definition.tools)
        if definition is not None and definition.tools is not None
        else [t.name for t in parent.tools if t.name != TASK_TOOL]
    )
    model, api_key = resolve_child_model(parent, definition.model if definition is not None else None)
    store = _new_store(parent)
    skills_text = _skills_message(parent, definition)
    if skills_text:
        store = store.seeded(UserMessage(content=[TextContent(text=skills_text)]))
    wanted, extra = _split_tools(parent, names)
    agent_type = definition.name if definition is not None else GENERAL_AGENT_TYPE
    return build(
        SessionSpec(
            cwd=parent.cwd,
            model=model,
            api_key=api_key,
            home=parent.home,
            settings=child_settings(parent),
            store=store,
            tools=(*wanted, *([TASK_TOOL] if TASK_TOOL in names else [])),
            extra_tools=tuple(extra),
            thinking_level=parent.thinking_level,
            system_prompt=definition.system_prompt if definition is not None and definition.system_prompt else None,
            project_prompt=False,  # AGENTS.md / CLAUDE.md only: no SYSTEM.md, skills list or memory
            extensions=False,
            parent=ParentLink(parent, agent_type),
        )
    )


def _skills_message(parent: ParentSession, definition: AgentDefinition | None) -> str:
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


def forked_child(parent: ParentSession, call_id: str, arguments: dict[str, Any], build: Build) -> CodingSession:
    """A copy of the parent's conversation up to the call, then the call and a placeholder
    result: the child's first request repeats the parent's prefix byte for byte."""
    point = fork_point(parent.store, call_id)
    store = StoreSpec.fork(parent.store, point) if point is not None else _new_store(parent)
    model = parent.model
    call = AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        content=[ToolCall(id=call_id, name=TASK_TOOL, arguments=arguments)],
        stop_reason=StopReason.TOOL_USE,
    )
    placeholder = ToolResultMessage(
        tool_call_id=call_id, tool_name=TASK_TOOL, content=[TextContent(text=FORK_PLACEHOLDER)]
    )
    names = [t.name for t in parent.tools]
    wanted, extra = _split_tools(parent, names)
    return build(
        SessionSpec(
            cwd=parent.cwd,
            model=model,
            api_key=parent.api_key,
            home=parent.home,
            settings=child_settings(parent),
            store=store.seeded(call, placeholder),
            tools=(*wanted, *([TASK_TOOL] if TASK_TOOL in names else [])),
            extra_tools=tuple(extra),
            tool_order=tuple(names),  # the parent's order and definitions: the cached prefix holds
            thinking_level=parent.thinking_level,
            whole_system_prompt=parent.agent.state.system_prompt,
            date=parent.date,
            extensions=False,
            parent=ParentLink(parent, "fork"),
        )
    )
