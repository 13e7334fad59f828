"""ContextPolicy over a real session file: recorded prune steps, learned windows, counting,
and the refusal to send a request that cannot fit."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import AgentMessage
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider
from heron.ai.types import (
    AssistantMessage,
    Model,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    now_ms,
)
from heron.context.policy import ContextFull, ContextPolicy, PolicySettings, Settled
from heron.context.records.decisions import DECISION_CUSTOM_TYPE
from heron.context.records.ledger import Ledger
from heron.context.view.build import session_messages
from heron.context.window.budget import context_message_tokens
from heron.context.window.learned_window import MIN_LEARNED_WINDOW, stated_limit
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore
from tests.support.tools import BUILTIN

FIXED = 50  # the system prompt and tools of these tests, in tokens
# A step past 9,000 tokens (of a 16,000 window's 12,000 budget) that prunes everything older
# than the last three assistant messages: what the recording and restart tests below need.
# The marks themselves are tested in tests/context/test_prune_marks.py.
EAGER: dict[str, Any] = {"prune_high_water": 0.75, "prune_low_water": 0.01, "prune_keep_turns": 3}
OLD = now_ms() - 3_600_000  # messages written before any decision of a test


# --- builders -----------------------------------------------------------------------------------


def user(text: str, ts: int = OLD) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=ts)


def reply(
    text: str = "ok",
    *,
    usage: Usage | None = None,
    ts: int = OLD,
    model: str = "faux-1",
    calls: Sequence[ToolCall] = (),
) -> AssistantMessage:
    content: list[Any] = [TextContent(text=text)] if text else []
    content += list(calls)
    return AssistantMessage(
        api="faux",
        provider="faux",
        model=model,
        content=content,
        usage=usage or Usage(),
        stop_reason=StopReason.TOOL_USE if calls else StopReason.STOP,
        timestamp=ts,
    )


def read_turn(i: int, size: int = 5_000, ts: int = OLD) -> list[AgentMessage]:
    call = ToolCall(id=f"c{i}", name="read", arguments={"path": f"f{i}.txt"})
    result = ToolResultMessage(
        tool_call_id=f"c{i}",
        tool_name="read",
        content=[TextContent(text=f"{i}" * size)],
        details={"path": f"f{i}.txt", "mtime_ns": 1_000 + i, "size": size},
        timestamp=ts,
    )
    return [reply("", calls=[call], ts=ts), result]


def overflow(text: str) -> AssistantMessage:
    return AssistantMessage(
        api="faux",
        provider="faux",
        model="faux-1",
        stop_reason=StopReason.ERROR,
        error_message=text,
        error_kind="overflow",
        error_status=400,
    )


def wire(messages: Sequence[AgentMessage]) -> str:
    return json.dumps([m.to_json_dict() for m in messages], sort_keys=True)


def decision_entries(store: SessionStore) -> list[dict[str, Any]]:
    """The decisions on the path, budget notices aside (tests/context/test_budget_notices.py)."""
    return [
        e.data
        for e in store.path_to(store.leaf_id)
        if isinstance(e, CustomEntry) and e.custom_type == DECISION_CUSTOM_TYPE and e.data.get("op") != "budget_notice"
    ]


class Session:
    """A session file in a tmp dir and a policy over it; :meth:`restart` is a new process."""

    def __init__(self, root: Path, model: Model, settings: PolicySettings | None = None) -> None:
        self.root = root
        self.path = root / "session.jsonl"
        self.model = model
        self.settings = settings or PolicySettings()
        self.store = SessionStore.create(root, path=self.path)
        self.ledger = Ledger()
        self.policy = self._policy()
        self.settled: Settled | None = None  # what the last prepare settled

    def _policy(self) -> ContextPolicy:
        return ContextPolicy(
            self.store,
            cwd=self.root,
            settings=self.settings,
            ledger=self.ledger,
            model=lambda: self.model,
            fixed_tokens=lambda: FIXED,
            tools=BUILTIN,
        )

    def add(self, messages: Sequence[AgentMessage]) -> None:
        for message in messages:
            self.store.append_message(message)

    def messages(self) -> list[AgentMessage]:
        return session_messages(self.store, self.store.leaf_id)

    def restart(self) -> None:
        self.store.close()
        self.store = SessionStore.open(self.path)
        self.ledger = Ledger()
        self.policy = self._policy()

    def prepare(
        self, messages: list[AgentMessage] | None = None, compact: Callable[[], list[AgentMessage] | None] | None = None
    ) -> list[AgentMessage]:
        """What the context owner does around the policy, with ``compact`` standing in for
        the compaction (it returns the rebuilt conversation, or None when nothing was written)."""
        messages = messages if messages is not None else self.messages()
        pressure = self.policy.pressure(messages, AbortSignal())
        rebuilt = compact() if pressure.compact and compact is not None else None
        self.settled = self.policy.settle(messages, pressure, rebuilt)
        return self.settled.view


@pytest.fixture
def session_for(tmp_path: Path, faux: FauxProvider) -> Iterator[Callable[..., Session]]:
    made: list[Session] = []

    def make(window: int = 16_000, max_tokens: int = 2_000, **settings: Any) -> Session:
        session = Session(
            tmp_path / f"s{len(made)}",
            faux.model(context_window=window, max_tokens=max_tokens),
            PolicySettings(**settings),
        )
        session.root.mkdir(parents=True, exist_ok=True)
        made.append(session)
        return session

    yield make
    for session in made:
        session.store.close()


def eight_reads() -> list[AgentMessage]:
    """~10,000 tokens: past half of a 16,000 window, below its threshold (12,000)."""
    messages: list[AgentMessage] = [user("read them all")]
    for i in range(8):
        messages += read_turn(i)
    return [*messages, reply("done")]


# --- prune steps are recorded, and a new process derives the same view ------------------------------------


def test_a_prune_step_is_recorded_and_a_new_process_sends_the_same_bytes(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, **EAGER)
    s.add(eight_reads())
    view = s.prepare()
    recorded = decision_entries(s.store)
    assert len(recorded) == 1 and recorded[0]["op"] == "prune"
    # Results older than the last three assistant turns, with the exact stub text sent.
    assert sorted(recorded[0]["stubs"]) == ["c0", "c1", "c2", "c3", "c4", "c5"]
    sent = {m.tool_call_id: m.text() for m in view if isinstance(m, ToolResultMessage)}
    assert all(sent[cid] == text for cid, text in recorded[0]["stubs"].items())
    assert sent["c7"] == "7" * 5_000
    assert [r.kind for r in s.ledger.records] == ["prune"] * 6
    assert s.settled is not None and s.settled.tokens == s.policy.sizes.count(view) < 16_000 * 0.5

    s.restart()
    assert s.policy.decisions.stubs == recorded[0]["stubs"]
    assert wire(s.policy.view(s.messages())) == wire(view)
    entries_before = len(s.store)
    assert wire(s.prepare()) == wire(view)  # nothing new to prune: no new step
    assert len(s.store) == entries_before


def test_the_same_process_sends_the_same_stubs_on_every_request(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, **EAGER)
    s.add(eight_reads())
    first = s.prepare()
    s.add([user("and now?", ts=now_ms() + 1_000)])
    second = s.prepare()
    assert wire(second[: len(first)]) == wire(first)  # the whole previous request is the prefix
    assert len(decision_entries(s.store)) == 1


def test_a_later_prune_step_adds_stubs_and_keeps_the_earlier_ones(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, **EAGER)
    s.add(eight_reads())
    first = {m.tool_call_id: m.text() for m in s.prepare() if isinstance(m, ToolResultMessage)}
    later = now_ms() + 1_000
    more: list[AgentMessage] = [user("more", ts=later)]
    for i in range(8, 14):
        more += read_turn(i, ts=later)
    s.add(more)
    s.restart()
    second = {m.tool_call_id: m.text() for m in s.prepare() if isinstance(m, ToolResultMessage)}
    steps = decision_entries(s.store)
    assert [d["op"] for d in steps] == ["prune", "prune"]
    assert set(steps[1]["stubs"]).isdisjoint(steps[0]["stubs"])
    assert all(second[cid] == first[cid] for cid in steps[0]["stubs"])  # never re-pruned, never un-pruned


def test_small_steps_are_not_taken_below_the_threshold(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, prune_high_water=0.5)
    messages: list[AgentMessage] = [user("x" * 4 * 7_000)]  # past the high-water mark, nothing much to prune
    for i in range(4):
        messages += read_turn(i, size=700)
    s.add(messages)
    s.prepare()
    assert decision_entries(s.store) == []


def test_pruning_off_records_nothing(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, pruning=False)
    s.add(eight_reads())
    view = s.prepare()
    assert decision_entries(s.store) == [] and wire(view) == wire(s.messages())


# --- learned windows ------------------------------------------------------------------------------------------


OPENAI = (
    "This model's maximum context length is 12000 tokens. However, you requested {total} tokens "
    "(13000 in the messages, 3000 in the completion). Please reduce the length of the messages or completion."
)
LLAMA = (
    '{{"error":{{"code":400,"message":"the request exceeds the available context size, try increasing it",'
    '"type":"exceed_context_size_error","n_prompt_tokens":{counted},"n_ctx":12000}}}}'
)
ANTHROPIC = "prompt is too long: {counted} tokens > 200000 maximum"


@pytest.mark.parametrize(
    ("error", "window", "sent_tokens", "learned"),
    [
        # The server counted what heron counted: the stated limit, less a 2% margin.
        (OPENAI.format(total=16_000), 16_384, 13_000, 11_760),
        (LLAMA.format(counted=13_000), 16_384, 13_000, 11_760),
        (ANTHROPIC.format(counted=210_000), 262_144, 210_000, 196_000),
        # The server counted more than heron: the limit scaled by heron's count over the server's.
        (OPENAI.format(total=20_000), 16_384, 13_000, int(12_000 * 16_000 / 20_000 * 0.98)),
        (LLAMA.format(counted=15_000), 16_384, 13_000, int(12_000 * 13_000 / 15_000 * 0.98)),
        # A limit equal to the configured window still says how far heron's estimate is off.
        (ANTHROPIC.format(counted=210_000), 200_000, 180_000, int(200_000 * 180_000 / 210_000 * 0.98)),
    ],
    ids=["openai", "llama.cpp", "anthropic", "openai-counted-more", "llama.cpp-counted-more", "anthropic-at-window"],
)
def test_a_limit_named_in_the_error_becomes_the_window(
    session_for: Callable[..., Session], error: str, window: int, sent_tokens: int, learned: int
) -> None:
    s = session_for(window=window, max_tokens=3_000)
    s.add([user("hi"), reply("hello")])
    sent = {"tokens": sent_tokens, "max_tokens": 3_000}
    result = s.policy.windows.learn_from_overflow(overflow(error), **sent)
    assert result is not None and result.source == "error text"
    assert abs(result.window - learned) <= 1  # float rounding of the scale
    assert s.policy.sizes.window == result.window
    assert decision_entries(s.store) == [
        {
            "op": "window",
            "model": "faux/faux-1",
            "window": result.window,
            "rejectedTokens": sent_tokens + 3_000,
            "source": "error text",
        }
    ]
    assert [r.kind for r in s.ledger.records] == ["overflow"]
    s.restart()
    assert s.policy.sizes.window == result.window
    assert s.policy.sizes.threshold == s.policy.sizes.budget.limit(result.window - min(16_384, result.window // 4))


@pytest.mark.parametrize(
    "usage",
    [Usage(input=9_000, output=200), Usage(), Usage(output=300)],
    ids=["usage-reported", "zero-usage", "output-only"],
)
def test_without_a_stated_limit_the_rejected_size_counts(session_for: Callable[..., Session], usage: Usage) -> None:
    """Below what was refused, whether the server counts the output cap or not; a provider
    reporting zero or output-only usage (llama.cpp, some Ollama builds) is estimated."""
    s = session_for(window=16_384, max_tokens=2_000, pruning=False)
    s.add([user("x" * 4 * 5_000), reply("hello", usage=usage), user("y" * 4 * 5_000)])
    view = s.prepare()
    assert s.settled is not None
    tokens, cap = s.settled.tokens, s.settled.max_tokens
    if usage.input == 0:
        assert tokens == FIXED + sum(context_message_tokens(m) for m in view)
    learned = s.policy.windows.learn_from_overflow(
        overflow("413 Request Entity Too Large"), tokens=tokens, max_tokens=cap
    )
    assert learned is not None and learned.source == "rejected size"
    assert learned.window == int(max(tokens, (tokens + cap) / 2) * 0.9) < tokens
    assert learned.rejected_tokens == tokens + cap
    s.restart()
    assert s.policy.sizes.window == learned.window
    assert decision_entries(s.store)[-1]["source"] == "rejected size"


def test_a_window_learnt_for_one_model_does_not_apply_to_another(
    session_for: Callable[..., Session], faux: FauxProvider
) -> None:
    s = session_for(window=16_384)
    s.add([user("hi"), reply("hello")])
    sent = {"tokens": 13_000, "max_tokens": 2_000}
    s.policy.windows.learn_from_overflow(overflow("maximum context length is 12000 tokens"), **sent)
    assert s.policy.sizes.window == 11_760
    s.model = faux.model("faux-2", context_window=16_384, max_tokens=2_000)
    assert s.policy.sizes.window == 16_384
    s.restart()
    assert s.policy.sizes.window == 16_384
    s.model = faux.model("faux-1", context_window=16_384, max_tokens=2_000)
    assert s.policy.sizes.window == 11_760


def test_nothing_is_learnt_when_the_window_cannot_go_lower(session_for: Callable[..., Session]) -> None:
    s = session_for(window=MIN_LEARNED_WINDOW, max_tokens=1_024)
    s.add([user("hi"), reply("hello")])
    sent = {"tokens": 1_500, "max_tokens": 1_024}
    assert s.policy.windows.learn_from_overflow(overflow("too long"), **sent) is None
    assert decision_entries(s.store) == [] and s.policy.sizes.window == MIN_LEARNED_WINDOW


def test_a_second_rejection_lowers_the_window_again(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_384)
    s.add([user("hi"), reply("hello")])
    sent = {"tokens": 13_000, "max_tokens": 2_000}
    s.policy.windows.learn_from_overflow(overflow("maximum context length is 12000 tokens"), **sent)
    sent = {"tokens": 11_000, "max_tokens": 1_000}
    again = s.policy.windows.learn_from_overflow(overflow("context overflow"), **sent)
    assert again is not None and again.window == int(11_000 * 0.9) < 11_760
    s.restart()
    assert s.policy.sizes.window == again.window  # the latest one counts


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("maximum context length is 500 tokens", 16_384),  # too small to be a window
        ("maximum context length is 32768 tokens", 16_384),  # not below the configured one
        ('"n_ctx": 16384', 16_384),  # equal: nothing to learn from the number
        ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
        ("413 Request Entity Too Large", 16_384),
        ("Error 429: rate limited after 1000000 requests", 16_384),
        ("", 16_384),
    ],
)
def test_stated_limit_ignores_implausible_numbers(text: str, window: int) -> None:
    assert stated_limit(text, window) is None


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("This model's maximum context length is 8192 tokens", 8_192),
        ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
        ('{"n_prompt_tokens":13000,"n_ctx":12000}', 12_000),
        ("the request exceeds the available context size (4096 tokens)", 4_096),
        ("input exceeds the limit of 12000 tokens", 12_000),
    ],
)
def test_stated_limit_reads_the_wordings_seen_in_the_wild(text: str, limit: int) -> None:
    assert stated_limit(text, 262_144) == limit


# --- counting ---------------------------------------------------------------------------------------------------


def test_the_usage_anchor_counts_the_part_it_measured(session_for: Callable[..., Session]) -> None:
    s = session_for(window=100_000)
    messages: list[AgentMessage] = [user("hi"), reply("hello", usage=Usage(input=20_000, output=100)), user("y" * 400)]
    assert s.policy.sizes.count(messages) == 20_100 + 100
    assert s.policy.sizes.estimate(messages) == FIXED + sum(context_message_tokens(m) for m in messages)


def test_no_anchor_after_a_prune_step(session_for: Callable[..., Session]) -> None:
    s = session_for(window=100_000)
    messages: list[AgentMessage] = [user("go")]
    for i in range(5):
        messages += read_turn(i)
    messages += [reply("done", usage=Usage(input=20_000, output=100)), user("next")]
    assert s.policy.sizes.count(s.policy.view(messages)) == 20_101  # anchored
    assert s.policy.pruner.prune(messages, 0)
    view = s.policy.view(messages)
    assert s.policy.sizes.count(view) == s.policy.sizes.estimate(view)  # the reply measured a request that no longer is
    # A reply after the prune step measured the pruned view: it anchors again.
    later = [*messages, reply("again", usage=Usage(input=7_000, output=50), ts=now_ms() + 1_000), user("more")]
    assert s.policy.sizes.count(s.policy.view(later)) == 7_050 + 1
    # The same holds in a new process: the prune step's time is in the file.
    s.add(messages)
    s.restart()
    assert s.policy.decisions.last_view_change_ms > OLD
    assert s.policy.sizes.count(s.policy.view(messages)) == s.policy.sizes.estimate(s.policy.view(messages))


def test_no_anchor_from_another_model_or_from_zero_usage(session_for: Callable[..., Session]) -> None:
    s = session_for(window=100_000)
    other = [user("hi"), reply("hello", usage=Usage(input=20_000), model="faux-2"), user("next")]
    assert s.policy.sizes.count(other) == s.policy.sizes.estimate(other)
    zero = [user("hi"), reply("hello", usage=Usage()), user("next")]
    assert s.policy.sizes.count(zero) == s.policy.sizes.estimate(zero)


def test_the_output_cap_leaves_room_for_the_input(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, max_tokens=4_000)
    assert s.policy.sizes.output_cap(1_000) == 4_000
    assert s.policy.sizes.output_cap(12_000) == 16_000 - 12_000 - 480
    assert s.policy.sizes.output_cap(15_900) == 1_024  # never below the minimum


# --- prepare ----------------------------------------------------------------------------------------------------


def test_prepare_compacts_past_the_threshold_and_sends_the_rebuilt_view(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, pruning=False)
    s.add([user("x" * 4 * 13_000), reply("ok")])
    rebuilt: list[AgentMessage] = [user("short")]
    calls: list[int] = []

    def compact() -> list[AgentMessage]:
        calls.append(1)
        return rebuilt

    assert wire(s.prepare(compact=compact)) == wire(rebuilt)
    assert calls == [1] and s.settled is not None and s.settled.over_threshold is None


def test_prepare_does_not_compact_below_the_threshold(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, pruning=False)
    s.add([user("x" * 4 * 11_000), reply("ok")])

    def compact() -> list[AgentMessage]:
        raise AssertionError("no compaction below the threshold")

    assert wire(s.prepare(compact=compact)) == wire(s.messages())  # the history, sent as it is
    assert s.settled is not None and s.settled.over_threshold is None


def test_prepare_says_why_a_request_over_the_threshold_is_sent(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, pruning=False, compaction=False)
    s.add([user("x" * 4 * 13_000), reply("ok")])
    view = s.prepare()
    assert s.settled is not None and s.settled.over_threshold == "compaction is turned off"
    assert s.settled.tokens + s.settled.max_tokens <= 16_000
    assert len(view) == 2


def test_prepare_raises_context_full_when_nothing_fits(session_for: Callable[..., Session]) -> None:
    s = session_for(window=4_096, max_tokens=1_024)
    s.add([user("x" * 4 * 5_000), reply("ok")])
    calls: list[int] = []

    def compact() -> None:
        calls.append(1)
        return None  # the compaction could not shrink anything

    with pytest.raises(ContextFull, match=r"does not fit the 4,096-token window"):
        s.prepare(compact=compact)
    assert calls == [1]


def test_a_failed_compaction_is_named_as_the_reason(session_for: Callable[..., Session]) -> None:
    """The owner ran the compaction the policy asked for and it failed (a summary request
    that timed out): the request is sent when it fits, and the reason says what failed."""
    timed_out = "the summary request failed: Request timed out: no response within 1 s (timeouts.firstByteMs)"
    s = session_for(window=16_000, pruning=False)
    s.add([user("x" * 4 * 13_000), reply("ok")])
    messages = s.messages()
    pressure = s.policy.pressure(messages, AbortSignal())
    assert pressure.compact and not pressure.early
    settled = s.policy.settle(messages, pressure, None, timed_out)
    assert len(settled.view) == 2 and settled.over_threshold == f"the compaction failed: {timed_out}"
    small = session_for(window=4_096, max_tokens=1_024)
    small.add([user("x" * 4 * 5_000), reply("ok")])
    messages = small.messages()
    with pytest.raises(ContextFull, match=r"the compaction failed: the summary request failed: Request timed out"):
        small.policy.settle(messages, small.policy.pressure(messages, AbortSignal()), None, timed_out)


def test_context_full_names_why_nothing_was_reduced(session_for: Callable[..., Session]) -> None:
    s = session_for(window=4_096, max_tokens=1_024, compaction=False)
    s.add([user("x" * 4 * 5_000), reply("ok")])
    with pytest.raises(ContextFull, match="compaction is turned off"):
        s.prepare()


def test_automatic_compaction_switched_off_stays_off_after_a_restart(session_for: Callable[..., Session]) -> None:
    s = session_for(window=16_000, pruning=False)
    s.add([user("x" * 4 * 13_000), reply("ok")])
    s.policy.recorder.disable_auto_compaction("the last compaction saved less than 5%")
    s.policy.recorder.disable_auto_compaction("again")  # already off: nothing more recorded
    assert [d["op"] for d in decision_entries(s.store)] == ["auto_compaction"]
    s.restart()
    assert s.policy.auto_compaction is False

    def compact() -> list[AgentMessage]:
        raise AssertionError("automatic compaction is off")

    s.prepare(compact=compact)
    assert s.settled is not None
    assert s.settled.over_threshold == "automatic compaction is off: the last compaction saved less than 5%"
    s.policy.recorder.enable_auto_compaction("a manual compaction succeeded")
    s.restart()
    assert s.policy.auto_compaction is True


def test_prepare_indexes_the_reads_of_the_view_it_returns(session_for: Callable[..., Session]) -> None:
    s = session_for(window=100_000)
    s.add([user("go"), *read_turn(1), reply("done")])
    s.prepare()
    found = s.policy.find_read(str(s.root / "f1.txt"), None, None)
    assert found is not None and found.tool_call_id == "c1" and found.mtime_ns == 1_001
    s.restart()
    assert s.policy.find_read(str(s.root / "f1.txt"), None, None) is None  # nothing sent yet
    s.prepare()
    assert s.policy.find_read(str(s.root / "f1.txt"), None, None) is not None


def test_the_learned_window_is_below_the_rejected_size_when_the_error_names_no_count(
    session_for: Callable[..., Session],
) -> None:
    s = session_for(window=16_384)
    s.add([user("hi"), reply("hello")])
    # heron counted 11,500 (input + output cap); the server counted more than its 12,000 limit.
    sent = {"tokens": 10_000, "max_tokens": 1_500}
    learned = s.policy.windows.learn_from_overflow(
        overflow("This model's maximum context length is 12000 tokens."), **sent
    )
    assert learned is not None
    assert learned.window < learned.rejected_tokens == 11_500


def test_a_pruned_read_does_not_answer_a_re_read(session_for: Callable[..., Session]) -> None:
    """The read tool's question is answered from the view sent: a pruned read (its stub
    keeps the original details) is not content the model still has, in either process."""
    s = session_for(window=16_000, **EAGER)
    s.add(eight_reads())
    s.prepare()
    assert "c0" in s.policy.decisions.stubs and "c7" not in s.policy.decisions.stubs
    assert s.policy.find_read(str(s.root / "f0.txt"), None, None) is None
    assert s.policy.find_read(str(s.root / "f7.txt"), None, None) is not None
    s.restart()
    s.prepare()
    assert s.policy.find_read(str(s.root / "f0.txt"), None, None) is None
    assert s.policy.find_read(str(s.root / "f7.txt"), None, None) is not None
