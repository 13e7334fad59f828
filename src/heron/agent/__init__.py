"""The agent core: the loop, tools, hooks, queues and events. No I/O of its own."""

from typing import TYPE_CHECKING, Any

from heron.agent.agent import Agent, AgentBusyError, AgentState
from heron.agent.events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
    agent_event_to_json,
)
from heron.agent.loop import (
    SKIPPED_FOR_STEERING,
    AgentContext,
    LoopConfig,
    MessageQueues,
    iterate_loop,
    run_loop,
)
from heron.agent.messages import (
    AgentMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ExtensionMessage,
    OpaqueMessage,
    UINote,
    agent_message_from_json,
    convert_to_llm,
    register_message_type,
)
from heron.agent.tool_meta import PathUse, ToolCatalog, ToolKind, ToolMeta
from heron.agent.tools import (
    AfterToolCallResult,
    AgentTool,
    BeforeToolCallResult,
    FunctionTool,
    ToolCallContext,
    ToolError,
    ToolResult,
)

if TYPE_CHECKING:  # loads pydantic: imported on first use (heron.agent.params)
    from heron.agent.params import ToolParams


def __getattr__(name: str) -> Any:
    if name == "ToolParams":
        from heron.agent.params import ToolParams

        return ToolParams
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SKIPPED_FOR_STEERING",
    "AfterToolCallResult",
    "Agent",
    "AgentBusyError",
    "AgentContext",
    "AgentEndEvent",
    "AgentEvent",
    "AgentMessage",
    "AgentStartEvent",
    "AgentState",
    "AgentTool",
    "BashExecutionMessage",
    "BeforeToolCallResult",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "ExtensionMessage",
    "FunctionTool",
    "LoopConfig",
    "MessageEndEvent",
    "MessageQueues",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "OpaqueMessage",
    "PathUse",
    "ToolCallContext",
    "ToolCatalog",
    "ToolError",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolKind",
    "ToolMeta",
    "ToolParams",
    "ToolResult",
    "TurnEndEvent",
    "TurnStartEvent",
    "UINote",
    "agent_event_to_json",
    "agent_message_from_json",
    "convert_to_llm",
    "iterate_loop",
    "register_message_type",
    "run_loop",
]
