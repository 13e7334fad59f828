"""A compaction's summary requests, sent through the pydantic-ai agent's own model.

heron's summariser decides what to ask and how large the request may be; it sends nothing
itself but calls the :data:`heron.context.compaction.summary.summariser.SummaryAsk` it is
given. Here that is the model serving the agent's request (its client, its settings of
transport), asked with the summariser's system prompt and no tools. A failed request comes
back as an answer with an error stop reason and the provider's message, so the summariser's
own handling applies (a context-length rejection: the transcript reduced once more; anything
else: the compaction ends, nothing written).

The shared form (:func:`shared_ask`) repeats the conversation's own request - the same
instructions and tool definitions, the view up to the cut as the last request carried
it - and adds the summary instruction, so a provider that caches prompts serves the
repeated prefix from its cache (heron's ``compaction.request: "shared"``).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, SystemPromptPart, UserPromptPart
from pydantic_ai.models import Model as PydanticModel
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, Context
from heron.context.compaction.summary.shared_summary import SharedAsk
from heron.context.compaction.summary.summariser import SummaryAsk
from heron.context.pydantic_ai.convert import failed_answer, response_message, view_messages


def _request(context: Context) -> list[ModelMessage]:
    parts: list[ModelRequestPart] = []
    if context.system_prompt:
        parts.append(SystemPromptPart(context.system_prompt))
    for message in context.messages:
        parts.append(UserPromptPart(message.text()))
    return [ModelRequest(parts=parts)]


def summary_ask(model: PydanticModel) -> SummaryAsk:
    """The :data:`SummaryAsk` that sends a summary request to ``model``."""

    async def ask(context: Context, max_tokens: int) -> AssistantMessage:
        settings: ModelSettings = {"max_tokens": max_tokens}
        try:
            response = await model.request(_request(context), settings, ModelRequestParameters())
        except ModelHTTPError as exc:
            return failed_answer(exc, provider=model.system, model=model.model_name)
        return response_message(response, provider=model.system, model=model.model_name)

    return ask


def shared_ask(
    model: PydanticModel, parameters: ModelRequestParameters, system: Sequence[SystemPromptPart]
) -> SharedAsk:
    """The :data:`SharedAsk` that sends the view's prefix and the instruction to ``model``
    with the conversation's own request parameters (its tools and instructions)."""

    async def ask(messages: list[AgentMessage], max_tokens: int) -> AssistantMessage:
        settings: ModelSettings = {"max_tokens": max_tokens}
        try:
            response = await model.request(view_messages(messages, system), settings, parameters)
        except ModelHTTPError as exc:
            return failed_answer(exc, provider=model.system, model=model.model_name)
        return response_message(response, provider=model.system, model=model.model_name)

    return ask
