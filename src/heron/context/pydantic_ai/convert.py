"""pydantic-ai's messages to heron's and back, for the adapter (:mod:`heron.context.pydantic_ai`).

The store holds heron's messages, so heron's engine reads and decides on them exactly as
it does for heron's own sessions; a request's view goes back to pydantic-ai's types just
before it is sent. Only what reaches the model is carried over: a prompt's text, an
answer's text and tool calls, a tool's result as the text pydantic-ai would send
(``model_response_str``). A system prompt part is not stored: the run supplies it again
with every request (:func:`system_parts`), so it is never summarised away.

Every conversion is a pure function of its input, so the same stored messages always
give the same pydantic-ai messages - what makes a restart send the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from heron.agent.messages import AgentMessage, convert_to_llm
from heron.ai.types import (
    AssistantBlock,
    AssistantMessage,
    ImageContent,
    Message,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

API = "pydantic-ai"  # the api stored on the answers heron records for a pydantic-ai model


def _ms(moment: datetime | None) -> int:
    return int(moment.timestamp() * 1000) if moment is not None else 0


def _moment(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _prompt_text(part: UserPromptPart) -> str:
    """A prompt's text (pydantic-ai allows a sequence of pieces; the text ones are kept)."""
    if isinstance(part.content, str):
        return part.content
    return "\n".join(piece for piece in part.content if isinstance(piece, str))


def _result(call_id: str, tool: str, text: str, is_error: bool, stamp: int) -> ToolResultMessage:
    content: list[TextContent | ImageContent] = [TextContent(text=text)]
    return ToolResultMessage(tool_call_id=call_id, tool_name=tool, content=content, is_error=is_error, timestamp=stamp)


def request_messages(request: ModelRequest) -> list[AgentMessage]:
    """The heron messages one pydantic-ai request stands for (system prompt parts left out)."""
    out: list[AgentMessage] = []
    for part in request.parts:
        stamp = _ms(getattr(part, "timestamp", None) or request.timestamp)
        if isinstance(part, UserPromptPart):
            out.append(UserMessage(content=_prompt_text(part), timestamp=stamp))
        elif isinstance(part, ToolReturnPart):
            out.append(_result(part.tool_call_id, part.tool_name, part.model_response_str(), False, stamp))
        elif isinstance(part, RetryPromptPart):
            if part.tool_name is None:
                out.append(UserMessage(content=part.model_response(), timestamp=stamp))
            else:
                out.append(_result(part.tool_call_id, part.tool_name, part.model_response(), True, stamp))
    return out


def response_message(response: ModelResponse, *, provider: str, model: str) -> AssistantMessage:
    """The heron answer for one pydantic-ai response, under the model the engine plans for
    (so the provider's usage report anchors heron's count of the next request)."""
    content: list[AssistantBlock] = []
    for part in response.parts:
        if isinstance(part, TextPart):
            content.append(TextContent(text=part.content))
        elif isinstance(part, ToolCallPart):
            content.append(ToolCall(id=part.tool_call_id, name=part.tool_name, arguments=part.args_as_dict()))
    usage = response.usage
    return AssistantMessage(
        api=API,
        provider=provider,
        model=model,
        content=content,
        usage=Usage(
            input=usage.input_tokens,
            output=usage.output_tokens,
            cache_read=usage.cache_read_tokens,
            cache_write=usage.cache_write_tokens,
            total_tokens=usage.input_tokens + usage.output_tokens,
        ),
        stop_reason=StopReason.TOOL_USE if any(isinstance(b, ToolCall) for b in content) else StopReason.STOP,
        timestamp=_ms(response.timestamp),
    )


def failed_answer(error: ModelHTTPError, *, provider: str, model: str) -> AssistantMessage:
    """A request the server refused, as the failed answer heron's recovery reads (its
    status and the provider's message: a context-length rejection is recognised by them)."""
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = str(inner.get("message", body)) if isinstance(inner, dict) else str(inner)
    else:
        text = str(body)
    return AssistantMessage(
        api=API,
        provider=provider,
        model=model,
        stop_reason=StopReason.ERROR,
        error_message=f"{error.status_code}: {text}",
        error_status=error.status_code,
    )


def _response(message: AssistantMessage) -> ModelResponse | None:
    parts: list[ModelResponsePart] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append(TextPart(block.text))
        elif isinstance(block, ToolCall):
            parts.append(ToolCallPart(block.name, dict(block.arguments), tool_call_id=block.id))
    if not parts:
        return None
    return ModelResponse(parts=parts, model_name=message.model, timestamp=_moment(message.timestamp))


def _request_part(message: Message) -> ModelRequestPart:
    stamp = _moment(message.timestamp)
    if isinstance(message, ToolResultMessage):
        return ToolReturnPart(message.tool_name, message.text(), tool_call_id=message.tool_call_id, timestamp=stamp)
    assert isinstance(message, UserMessage)
    return UserPromptPart(message.text(), timestamp=stamp)


def view_messages(view: Sequence[AgentMessage], system: Sequence[SystemPromptPart] = ()) -> list[ModelMessage]:
    """A heron view as pydantic-ai messages: the run's system prompt parts first, the
    results of one step in one request, summaries and notes as the user messages heron
    sends them as (:func:`heron.agent.messages.convert_to_llm`)."""
    out: list[ModelMessage] = []
    pending: list[ModelRequestPart] = list(system)
    for message in convert_to_llm(list(view)):
        if isinstance(message, AssistantMessage):
            response = _response(message)
            if response is None:
                continue
            if pending:
                out.append(ModelRequest(parts=pending))
                pending = []
            out.append(response)
            continue
        if pending and isinstance(message, UserMessage) and not isinstance(pending[-1], SystemPromptPart):
            out.append(ModelRequest(parts=pending))  # a prompt is a request of its own
            pending = []
        pending.append(_request_part(message))
    if pending:
        out.append(ModelRequest(parts=pending))
    return out


def system_parts(messages: Sequence[ModelMessage]) -> list[SystemPromptPart]:
    """The system prompt parts a run's history opens with."""
    if not messages or not isinstance(messages[0], ModelRequest):
        return []
    return [part for part in messages[0].parts if isinstance(part, SystemPromptPart)]


def unstored(messages: Sequence[ModelMessage]) -> list[ModelRequest]:
    """The requests after the history's last response: what the run added since the store
    last heard of it (the answers are recorded as they arrive)."""
    tail: list[ModelRequest] = []
    for message in reversed(messages):
        if not isinstance(message, ModelRequest):
            break
        tail.append(message)
    return tail[::-1]
