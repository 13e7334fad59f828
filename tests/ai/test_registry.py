"""Users add providers without touching heron; pi's api names work as aliases."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from heron.ai import Context, Model, StopReason, UserMessage, complete
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent
from heron.ai.options import StreamOptions
from heron.ai.overflow import ProviderError
from heron.ai.registry import canonical_api, get_provider, known_apis, register_provider, unregister_provider


class ShoutProvider:
    """A complete third-party provider in a dozen lines: echoes the prompt in capitals."""

    api = "shout"

    def describe_error(self, exc: BaseException) -> ProviderError | None:
        return ProviderError(f"shout failed: {exc}", status=418) if isinstance(exc, RuntimeError) else None

    async def stream(
        self, model: Model, context: Context, options: StreamOptions, builder: MessageBuilder
    ) -> AsyncIterator[AssistantEvent]:
        prompt = context.messages[-1]
        assert isinstance(prompt, UserMessage)
        if prompt.text() == "fail":
            raise RuntimeError("no voice left")
        yield builder.start_text("answer")
        for word in prompt.text().split():
            yield builder.text_delta("answer", word.upper() + " ")
        builder.usage.input = 3
        builder.usage.output = 2


@pytest.fixture
def shout() -> Model:
    register_provider(ShoutProvider())
    yield Model(id="loud-1", api="shout", provider="me")
    unregister_provider("shout")


async def test_registered_provider_streams_through_the_contract(shout: Model) -> None:
    message = await complete(shout, Context(messages=[UserMessage(content="hello there")]))
    assert message.text() == "HELLO THERE "
    assert message.stop_reason == StopReason.STOP
    assert message.usage.total_tokens == 5
    assert "shout" in known_apis()


async def test_registered_provider_errors_are_described_by_it(shout: Model) -> None:
    message = await complete(shout, Context(messages=[UserMessage(content="fail")]))
    assert message.stop_reason == StopReason.ERROR
    assert message.error_message == "shout failed: no voice left"


def test_pi_aliases() -> None:
    assert canonical_api("openai-completions") == "openai-chat"
    assert canonical_api("google-generative-ai") == "google-gemini"
    assert type(get_provider("openai-completions")).__name__ == "OpenAIChatProvider"


def test_unknown_api() -> None:
    with pytest.raises(KeyError, match="no provider for api 'martian'"):
        get_provider("martian")
