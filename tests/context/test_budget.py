"""Token accounting and the limits that scale with the window (docs/context.md, "Counting tokens" and
"Limits that scale with the window").

Context tokens = the usage of the last successful assistant message (input + output +
cache read + cache write) + ceil(chars/4) of every message after it; images count 1,200
tokens; usage reported before the latest compaction is never used. The runtime adds the
system prompt and tool definitions when it has no usage to go by, and caps each request's
output at ``min(model max_tokens, window - estimate)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import CompactionSummaryMessage, ExtensionMessage
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    ModelCost,
    StopReason,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from heron.coding.runtime import CodingSession
from heron.coding.settings import load_settings, settings_from_dict
from heron.context.compaction.plan import CompactionSettings, message_tokens
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.context.policy import ContextFull
from heron.context.tool_output.limits import ToolLimits
from heron.context.window.budget import (
    context_message_tokens,
    estimate_context_tokens,
    estimate_message_tokens,
    last_usage_index,
)
from heron.context.window.output_room import MIN_OUTPUT_TOKENS, OUTPUT_MARGIN_SHARE
from heron.session.store import SessionStore

IMAGE = ImageContent(data="aGk=", mime_type="image/png")


def reply(usage: Usage | None = None, ts: int = 2_000, stop: StopReason = StopReason.STOP) -> AssistantMessage:
    return AssistantMessage(
        api="faux",
        provider="faux",
        model="faux-1",
        content=[TextContent(text="abcd")],
        usage=usage or Usage(),
        stop_reason=stop,
        timestamp=ts,
    )


def user(chars: int, ts: int = 1_000) -> UserMessage:
    return UserMessage(content=[TextContent(text="q" * chars)], timestamp=ts)


# --- accounting ---------------------------------------------------------------------------


def test_last_successful_usage_plus_estimates_after_it() -> None:
    used = reply(Usage(input=700, output=50, cache_read=2_000, cache_write=250))
    messages = [
        user(4_000),
        used,
        user(41),
        ToolResultMessage(tool_call_id="c", tool_name="read", content=[TextContent(text="r" * 400)]),
    ]
    assert estimate_context_tokens(messages) == 3_000 + 11 + 100
    # a failed or aborted reply after it reports nothing usable: the earlier one counts
    for stop in (StopReason.ERROR, StopReason.ABORTED):
        broken = reply(Usage(input=99_999), stop=stop)
        assert estimate_context_tokens([*messages, broken]) == 3_000 + 11 + 100 + 1
    # a reply with no usage at all (a provider that reports none) is skipped too
    assert estimate_context_tokens([*messages, reply()]) == 3_000 + 11 + 100 + 1
    # nothing reported: everything estimated
    assert estimate_context_tokens([user(4_000), user(3)]) == 1_001


def test_images_count_1200_tokens() -> None:
    result = ToolResultMessage(tool_call_id="c", tool_name="read", content=[TextContent(text="abcd"), IMAGE, IMAGE])
    assert estimate_message_tokens(result) == 1 + 2_400
    custom = ExtensionMessage(custom_type="x", content=[IMAGE])
    assert estimate_message_tokens(custom) == 1_200
    pasted = UserMessage(content=[TextContent(text="what is this?"), IMAGE])
    # pi's cut-point estimate leaves a user's images out; the context estimate counts them
    assert message_tokens(pasted) == estimate_message_tokens(pasted) == 4
    assert context_message_tokens(pasted) == 4 + 1_200
    assert estimate_context_tokens([pasted]) == 1_204
    assert estimate_context_tokens([reply(Usage(input=100)), pasted, result]) == 100 + 1_204 + 2_401


def test_usage_from_before_the_latest_compaction_is_never_used() -> None:
    """A reply kept by a compaction still carries the usage of the uncompacted context."""
    old = reply(Usage(input=150_000), ts=1_000)
    summary = CompactionSummaryMessage(summary="s" * 400, timestamp=5_000)
    messages = [summary, user(40, ts=900), old, user(80, ts=6_000)]
    assert last_usage_index(messages) is None
    assert estimate_context_tokens(messages) == 100 + 10 + 1 + 20
    new = reply(Usage(input=300, output=20), ts=7_000)
    assert last_usage_index([*messages, new]) == 4
    assert estimate_context_tokens([*messages, new, user(40, ts=8_000)]) == 320 + 10


def test_rebuilt_context_after_a_compaction_in_a_session_file() -> None:
    store = SessionStore.in_memory("/tmp/p")
    store.append_message(user(4_000, ts=1))
    first = store.append_message(user(400, ts=2))
    store.append_message(reply(Usage(input=90_000, output=100), ts=3))
    store.append_compaction("summary " * 50, first.id, 90_100)  # timestamped now
    store.append_message(user(40, ts=4))  # a message with an old clock: still no usable usage
    messages = store.build_context().messages
    assert [m.role for m in messages] == ["compactionSummary", "user", "assistant", "user"]
    assert estimate_context_tokens(messages) == sum(estimate_message_tokens(m) for m in messages) < 1_000


# --- the runtime ---------------------------------------------------------------------------


def scripted(faux: FauxProvider, script: list[FauxReply]) -> None:
    def answer(context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nsummary")
        return script.pop(0)

    faux.set_fallback(answer)


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("".join(f"line {i} with some ordinary text\n" for i in range(600)))
    return root


def session(proj: Path, faux: FauxProvider, window: int = 128_000, **settings: Any) -> CodingSession:
    return CodingSession(
        cwd=proj,
        model=faux.model(context_window=window, max_tokens=8_192),
        store=SessionStore.create(proj),
        settings=settings_from_dict(settings),
    )


async def test_estimate_includes_system_prompt_and_tools_without_usage(proj: Path, faux: FauxProvider) -> None:
    s = session(proj, faux)
    fixed = s._fixed_tokens()
    assert fixed > len(s.system_prompt) // 4  # the tool definitions count too
    messages = [user(400)]
    assert s.estimate_request_tokens(messages) == 100 + fixed
    # with a usage report, the report already contains them
    assert s.estimate_request_tokens([*messages, reply(Usage(input=5_000), ts=10**13)]) == 5_000


async def test_after_compaction_the_estimate_does_not_use_stale_usage(proj: Path, faux: FauxProvider) -> None:
    scripted(faux, [*(tool_call("read", {"path": "a.txt"}) for _ in range(2)), text("done"), text("again")])
    s = session(proj, faux, compaction={"keepRecentTokens": 50})
    await s.prompt("read a.txt twice")
    await s.prompt("and answer")
    before = s.estimate_request_tokens(s.messages)
    end = await s.compact()
    assert end is not None and end.tokens_before == before
    # counted on the view (the second read's de-dup stub now says its content is gone)
    expected = sum(context_message_tokens(m) for m in s.policy.view(s.messages)) + s._fixed_tokens()
    assert end.tokens_after == s.estimate_request_tokens(s.messages) == expected
    assert end.tokens_after < before


async def test_output_cap_is_the_room_left_in_the_window(proj: Path, faux: FauxProvider) -> None:
    s = session(proj, faux, window=16_384, compaction={"enabled": False}, pruning={"enabled": False})

    async def cap(messages: list[Any]) -> int | None:
        await s._transform_context(messages, AbortSignal())  # what runs before every request
        return s.requests.turn_options(Context(messages=[])).max_tokens

    margin = int(16_384 * OUTPUT_MARGIN_SHARE)  # chars/4 is an estimate: keep a little room
    assert await cap([user(4_000), reply(Usage(input=10_000, output=200), ts=10**13)]) == 16_384 - 10_200 - margin
    assert await cap([user(40), reply(Usage(input=1_000), ts=10**13)]) == 8_192  # the model's own cap
    assert s.policy.sizes.output_cap(16_000) == MIN_OUTPUT_TOKENS
    with pytest.raises(ContextFull):  # no room for an answer: nothing is sent
        await cap([user(40), reply(Usage(input=16_000), ts=10**13)])


# --- limits that scale with the window --------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "reserve", "keep"),
    [
        (8_192, 2_048, 2_048),
        (16_384, 4_096, 4_096),
        (32_768, 8_192, 8_192),
        (65_536, 16_384, 16_384),
        (128_000, 16_384, 20_000),
        (1_000_000, 16_384, 20_000),
    ],
)
def test_reserve_and_keep_recent_are_capped_at_a_quarter_of_the_window(window: int, reserve: int, keep: int) -> None:
    assert CompactionSettings().for_window(window) == CompactionSettings(reserve, keep)


# Worked out by hand from docs/context.md's rule (a window of N tokens is 4N chars; one result
# gets min(50 KB, 7.5%), read/bash the same share under 50 KiB, a turn's results min(200 KB, 50%)).
@pytest.mark.parametrize(
    ("window", "result_chars", "max_bytes", "turn_chars"),
    [
        (8_192, 2_457, 2_457, 16_384),
        (16_384, 4_915, 4_915, 32_768),
        (32_768, 9_830, 9_830, 65_536),
        (64_000, 19_200, 19_200, 128_000),
        (128_000, 38_400, 38_400, 200_000),
        (200_000, 50_000, 51_200, 200_000),
        (1_000_000, 50_000, 51_200, 200_000),
    ],
)
def test_tool_limits_scale_with_the_window(window: int, result_chars: int, max_bytes: int, turn_chars: int) -> None:
    limits = ToolLimits().for_window(window)
    assert (limits.result_chars, limits.max_bytes, limits.turn_chars) == (result_chars, max_bytes, turn_chars)
    assert limits.preview_chars <= 2_000 and limits.preview_chars <= limits.result_chars
    assert ToolLimits().for_window(window).max_lines == 2_000


def test_the_window_share_is_a_setting() -> None:
    limits = settings_from_dict({"toolLimits": {"windowShare": 0.15}}).tool_limits
    assert limits.for_window(32_000).max_bytes == limits.for_window(32_000).result_chars == 19_200  # 15% of 128,000
    assert limits.for_window(1_000_000).max_bytes == 51_200  # a large window keeps the absolute caps
    assert settings_from_dict({}).tool_limits.for_window(32_000).max_bytes == 9_600  # the default share, 7.5%


def test_a_bad_window_share_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "p" / ".heron").mkdir(parents=True)
    (tmp_path / "p" / ".heron" / "settings.json").write_text(json.dumps({"toolLimits": {"windowShare": 2}}))
    loaded = load_settings(tmp_path / "p")
    assert loaded.tool_limits == ToolLimits()
    assert "'toolLimits.windowShare' must be a number greater than 0 and at most 1, not number 2" in "\n".join(
        loaded.warnings
    )


async def test_a_session_applies_the_scaled_limits(proj: Path, faux: FauxProvider) -> None:
    s = session(proj, faux, window=16_384)
    assert s.compaction_settings == CompactionSettings(4_096, 4_096)
    assert s.threshold == 16_384 - 4_096  # pi's fixed 16,384 reserve would put it at 0
    assert s.env.limits == ToolLimits().for_window(16_384)
    s.set_model(faux.model("big", context_window=200_000, max_tokens=8_192, cost=ModelCost()))  # no working budget
    assert s.threshold == 200_000 - 16_384
    assert s.env.limits.result_chars == 50_000
    s.set_model(faux.model("priced", context_window=200_000, max_tokens=8_192))  # the working budget sizes them
    assert s.threshold == s.policy.sizes.budget.tokens < 200_000 - 16_384
    assert s.env.limits == ToolLimits().for_window(s.threshold + 16_384)
