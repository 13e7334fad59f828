"""Overflow and retry classification from real provider wordings."""

from __future__ import annotations

import pytest

from heron.ai import AssistantMessage, StopReason, Usage
from heron.ai.overflow import ErrorKind, classify, is_context_overflow, parse_retry_after

OVERFLOW_WORDINGS = [
    (400, "prompt is too long: 213462 tokens > 200000 maximum"),
    (400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."),
    (400, "Your input exceeds the context window of this model. Please adjust your input and try again."),
    (400, "context_length_exceeded"),
    (400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."),
    (400, "model_context_window_exceeded"),
    (400, "Request has too many tokens"),
    (400, "the request exceeds the available context size, try increasing it"),
    (400, "requested 40000 tokens, but the model's context length is 32768"),
    (413, ""),
    (413, "Request Entity Too Large"),
    (400, ""),
    (None, "prompt is too long"),
]


@pytest.mark.parametrize(("status", "text"), OVERFLOW_WORDINGS)
def test_overflow_wordings(status: int | None, text: str) -> None:
    assert classify(status, text) == ErrorKind.OVERFLOW


@pytest.mark.parametrize(
    ("status", "text", "kind"),
    [
        (429, "Rate limit reached: too many tokens per minute", ErrorKind.RATE_LIMIT),
        (429, "prompt is too long", ErrorKind.RATE_LIMIT),
        (401, "invalid x-api-key", ErrorKind.AUTH),
        (403, "permission denied", ErrorKind.AUTH),
        (500, "internal server error", ErrorKind.TRANSIENT),
        (529, "Overloaded", ErrorKind.TRANSIENT),
        (503, "", ErrorKind.TRANSIENT),
        (None, "Connection reset by peer", ErrorKind.TRANSIENT),
        (None, "overloaded_error: Overloaded", ErrorKind.TRANSIENT),
        (400, "tools.0.name: String should match pattern", ErrorKind.INVALID_REQUEST),
        (None, "something odd", ErrorKind.UNKNOWN),
    ],
)
def test_other_kinds(status: int | None, text: str, kind: ErrorKind) -> None:
    assert classify(status, text) == kind


def failed(text: str) -> AssistantMessage:
    return AssistantMessage(api="a", provider="p", model="m", stop_reason=StopReason.ERROR, error_message=text)


def test_is_context_overflow_on_stored_messages() -> None:
    assert is_context_overflow(failed("400 invalid_request_error: prompt is too long: 1 > 0"))
    assert not is_context_overflow(failed("429 rate_limit_error: too many tokens per minute"))
    assert not is_context_overflow(failed("Rate limit: too many tokens"))
    assert not is_context_overflow(failed("500 internal"))


def test_silent_overflow_from_reported_usage() -> None:
    ok = AssistantMessage(api="a", provider="p", model="m", usage=Usage(input=30_000, cache_read=5_000))
    assert is_context_overflow(ok, context_window=32_768)
    assert not is_context_overflow(ok, context_window=128_000)
    assert not is_context_overflow(ok)


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None
