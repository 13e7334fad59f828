"""The LLM layer: one message model, one event stream, many providers.

Knows nothing of agents, tools' behaviour, sessions or terminals. A provider's adapter
(and httpx under it) is imported only when a model of its api is first used, so this
package imports fast; no vendor SDK is used at all.
"""

from heron.ai.abort import AbortController, AbortSignal
from heron.ai.events import (
    AssistantEvent,
    DoneEvent,
    ErrorEvent,
    RetryEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    event_to_json,
)
from heron.ai.options import NO_RETRY, RetryPolicy, StreamOptions
from heron.ai.overflow import ErrorKind, ProviderError, classify, is_context_overflow
from heron.ai.registry import complete, get_provider, register_provider, stream
from heron.ai.stream import AssistantEventStream, Provider
from heron.ai.types import (
    THINKING_LEVELS,
    AssistantMessage,
    Context,
    Cost,
    ImageContent,
    Message,
    Model,
    ModelCost,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = [
    "NO_RETRY",
    "THINKING_LEVELS",
    "AbortController",
    "AbortSignal",
    "AssistantEvent",
    "AssistantEventStream",
    "AssistantMessage",
    "Context",
    "Cost",
    "DoneEvent",
    "ErrorEvent",
    "ErrorKind",
    "ImageContent",
    "Message",
    "Model",
    "ModelCost",
    "Provider",
    "ProviderError",
    "RetryEvent",
    "RetryPolicy",
    "StartEvent",
    "StopReason",
    "StreamOptions",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "Tool",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "classify",
    "complete",
    "event_to_json",
    "get_provider",
    "is_context_overflow",
    "register_provider",
    "stream",
]
