"""A local server still reading a long prompt is waited for, and never asked twice (issue 37).

Against :class:`tests.support.reading_server.ReadingServer`, which reads every prompt at a
fixed speed as a CPU model does, with the first-byte and idle bounds lowered to 1 s: heron
waits while llama.cpp-style progress arrives, waits as long as a measured (or assumed)
speed says the prompt needs, gives up on a server slower than that without sending the
request again, and measures the speed of each answer. Every wait here is derived from the
server's speed with room to spare, never a tight wall-clock limit.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from heron.ai import get_provider
from heron.ai.events import AssistantEvent, RetryEvent
from heron.ai.options import RetryPolicy, StreamOptions
from heron.ai.reading import MARGIN, PromptProgress, ReadingSample, ReadingWait, is_local_server, progress_of
from heron.ai.stream import open_stream
from heron.ai.types import AssistantMessage, Context, Model, UserMessage
from tests.support.reading_server import ReadingServer

PROMPT = "word " * 2_400  # 12,000 characters: 3,000 tokens at the server's 4 a token


@pytest.fixture
def made() -> Iterator[list[ReadingServer]]:
    servers: list[ReadingServer] = []
    yield servers
    for server in servers:
        server.close()


def serve(made: list[ReadingServer], **kwargs: object) -> ReadingServer:
    server = ReadingServer(**kwargs)  # type: ignore[arg-type]
    made.append(server)
    return server


def model_of(server: ReadingServer, **compat: object) -> Model:
    return Model(
        id="cpu-model",
        api="openai-chat",
        provider="local",
        base_url=server.base_url,
        max_tokens=256,
        compat=dict(compat) or None,
    )


def context() -> Context:
    return Context(system_prompt="You read.", messages=[UserMessage(content=PROMPT)])


def options(**fields: object) -> StreamOptions:
    base: dict[str, object] = {
        "api_key": "sk-local",
        "first_byte_ms": 1_000,
        "idle_ms": 1_000,
        "retry": RetryPolicy(max_retries=3, base_delay=0.01),
    }
    return StreamOptions(**{**base, **fields})  # type: ignore[arg-type]


async def ask(model: Model, opts: StreamOptions) -> tuple[list[AssistantEvent], AssistantMessage, float]:
    started = time.monotonic()
    stream = open_stream(get_provider(model.api), model, context(), opts)
    events = [event async for event in stream]
    return events, await stream.result(), time.monotonic() - started


async def test_progress_keeps_a_reading_server_alive_past_both_bounds(made: list[ReadingServer]) -> None:
    # 3,000 tokens at 1,500 a second: 2 s of reading, a progress chunk every 0.2 s
    server = serve(made, tokens_per_second=1_500, progress=True, batch=300)
    retries: list[RetryEvent] = []
    # a speed assumed so high that only the progress explains why heron waits
    opts = options(assumed_reading_speed=1_000_000, on_retry=retries.append)
    events, message, took = await ask(model_of(server), opts)
    assert events[-1].type == "done", message.error_message
    assert message.text() == "read it all"
    assert took > 1.5  # past firstByteMs and idleMs, both 1 s
    assert len(server.bodies) == 1 and not retries
    assert server.bodies[0]["return_progress"] is True


async def test_a_measured_speed_scales_the_first_byte_wait(made: list[ReadingServer]) -> None:
    # no progress, no byte at all for 2 s (3,000 tokens at 1,500 a second)
    server = serve(made, tokens_per_second=1_500)
    opts = options(reading_speed=1_500, assumed_reading_speed=1_000_000)
    events, message, took = await ask(model_of(server), opts)
    assert events[-1].type == "done", message.error_message
    assert took > 1.5 and len(server.bodies) == 1


async def test_the_assumed_speed_is_waited_for_before_one_is_measured(made: list[ReadingServer]) -> None:
    server = serve(made, tokens_per_second=1_500)
    opts = options(assumed_reading_speed=1_000)  # 3 s for 3,000 tokens; the server needs 2 s
    events, message, _ = await ask(model_of(server), opts)
    assert events[-1].type == "done", message.error_message
    assert len(server.bodies) == 1


async def test_a_server_slower_than_the_wait_is_not_asked_again(made: list[ReadingServer]) -> None:
    server = serve(made, tokens_per_second=200)  # 15 s of reading
    retries: list[RetryEvent] = []
    opts = options(assumed_reading_speed=1_000_000, on_retry=retries.append)
    events, message, took = await ask(model_of(server), opts)
    assert events[-1].type == "error"
    text = message.error_message or ""
    assert "timeouts.firstByteMs" in text and "heron does not send it again" in text, text
    assert "about 3,0" in text  # the prompt's size, as heron estimated it
    assert not retries and len(server.bodies) == 1  # the server is still reading it: not sent again
    assert took < 10  # gave up at the bound, not after the reading


async def test_a_hosted_server_is_retried_as_before(made: list[ReadingServer]) -> None:
    server = serve(made, tokens_per_second=200, progress=True)
    retries: list[RetryEvent] = []
    opts = options(retry=RetryPolicy(max_retries=1, base_delay=0.01), on_retry=retries.append)
    events, _, _ = await ask(model_of(server, localServer=False), opts)
    assert events[-1].type == "error"
    assert len(retries) == 1 and len(server.bodies) == 2
    assert "return_progress" not in server.bodies[0]


async def test_each_answer_measures_the_speed(made: list[ReadingServer]) -> None:
    timed = serve(made, tokens_per_second=6_000)
    samples: list[ReadingSample] = []
    _, message, _ = await ask(model_of(timed), options(on_reading=samples.append))
    assert message.text() == "read it all"
    assert len(samples) == 1
    assert samples[0].tokens == timed.tokens(timed.bodies[0])  # llama.cpp's own timing
    assert samples[0].seconds == pytest.approx(timed.reading_seconds(timed.bodies[0]))

    untimed = serve(made, tokens_per_second=6_000, timings=False)
    samples.clear()
    await ask(model_of(untimed), options(on_reading=samples.append))
    (sample,) = samples  # the usage's input over the time to the first answer event
    assert sample.tokens == untimed.tokens(untimed.bodies[0])
    assert sample.seconds >= untimed.reading_seconds(untimed.bodies[0]) * 0.9


def test_what_is_local_and_what_progress_says() -> None:
    local = Model(id="m", api="openai-chat", provider="p", base_url="http://192.168.1.20:8080/v1")
    hosted = Model(id="m", api="openai-chat", provider="p", base_url="https://api.example.com/v1")
    assert is_local_server(local) and not is_local_server(hosted)
    said = Model(id="m", api="openai-chat", provider="p", base_url=hosted.base_url, compat={"localServer": True})
    assert is_local_server(said)
    assert progress_of({"total": 100, "cache": 10, "processed": 40, "time_ms": 60}) == PromptProgress(100, 10, 40, 60)
    assert progress_of({"total": 0}) is None and progress_of("50%") is None


def test_the_wait_follows_the_progress_speed() -> None:
    wait = ReadingWait(context(), measured=None, assumed=20)
    assert wait.seconds_left(None) == pytest.approx(wait.tokens / 20)  # assumed: no margin
    # 1,000 of 4,000 read in 2 s (none cached): 500 a second, 3,000 left
    progress = PromptProgress(total=4_000, cache=0, processed=1_000, time_ms=2_000)
    assert wait.seconds_left(progress) == pytest.approx(MARGIN * 3_000 / 500)
    measured = ReadingWait(context(), measured=100, assumed=20)
    assert measured.seconds_left(None) == pytest.approx(MARGIN * measured.tokens / 100)
