"""A real pydantic-ai agent with heron's context management (heron.context.pydantic_ai).

The agent is pydantic-ai's own (``Agent`` with ``OpenAIChatModel``) talking the OpenAI
chat-completions wire format to a scripted server that rejects any request over its
window (tests/support/chat_window.py), with a bash-like tool that prints long logs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai.exceptions import ModelHTTPError

from heron.context.engine import ContextEngine, RequestPlan
from heron.context.pydantic_ai import HeronContext
from heron.context.rules.invariants import Violation
from tests.support.chat_window import ChatWindowServer, prompt, unanswered_calls
from tests.support.pydantic_agent import INSTRUCTIONS, LOG_CHARS, make_agent, run_turns
from tests.support.summaries import is_summary_body

WINDOW = 16_384
TURNS = 30
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[ChatWindowServer]:
    scripted = ChatWindowServer(WINDOW)
    yield scripted
    scripted.close()


def run_turn_in_process(server: ChatWindowServer, store: Path, turn: int) -> None:
    """One turn by a new agent in a process of its own, over ``store``."""
    code = (
        "import sys; from pathlib import Path; from heron.context.pydantic_ai import HeronContext; "
        "from tests.support.pydantic_agent import make_agent, run_turns; "
        "context = HeronContext(window=int(sys.argv[1]), store=Path(sys.argv[2])); "
        "run_turns(make_agent(sys.argv[3], [context]), range(int(sys.argv[4]), int(sys.argv[4]) + 1))"
    )
    args = [str(WINDOW), str(store), server.base_url, str(turn)]
    subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, check=True, timeout=300)


def test_thirty_turns_fit_the_window_with_compactions_and_every_call_answered(
    server: ChatWindowServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[RequestPlan] = []  # heron's request rules run on every plan (strict in the tests)
    check = ContextEngine.check

    def counted(engine: ContextEngine, plan: RequestPlan, *args: Any) -> list[Violation]:
        checked.append(plan)
        return check(engine, plan, *args)

    monkeypatch.setattr(ContextEngine, "check", counted)
    context = HeronContext(window=WINDOW, store=tmp_path / "store")
    history = run_turns(make_agent(server.base_url, [context]), range(1, TURNS))
    summaries = sum(1 for body in server.bodies if is_summary_body(body))
    assert len(checked) == len(server.bodies) - summaries == 2 * (TURNS - 1)

    assert server.rejected == []
    assert context.compactions >= 2
    for body in server.bodies:
        assert unanswered_calls(body) == []
    # each summary request repeats the request before it (its tools, its messages up to the
    # cut) and adds the instruction: the provider's prompt cache serves the repeated prefix
    shared = [(server.bodies[i - 1], b) for i, b in enumerate(server.bodies) if is_summary_body(b)]
    assert len(shared) == context.compactions
    for before, summary in shared:
        assert summary["tools"] == before["tools"]
        assert summary["messages"][:-1] == before["messages"][: len(summary["messages"]) - 1]
    # every request carries the output cap heron planned for it (within the model's 4,096)
    caps = [b.get("max_completion_tokens") or b.get("max_tokens") or 0 for b in server.bodies if not is_summary_body(b)]
    assert all(0 < cap <= 4_096 for cap in caps)
    kinds = {record.kind for record in context.ledger.records}
    assert {"spill", "compaction"} <= kinds
    # the large results reached the model as a preview with a notice saying where the rest is
    spilled = [m["content"] for b in server.bodies for m in b["messages"] if m["role"] == "tool"]
    assert spilled and all(len(text) < LOG_CHARS // 4 for text in spilled)
    assert any(str(tmp_path / "store" / "spill") in text for text in spilled)
    # the frontier is kept verbatim: the latest turn's prompt and result are in the last request
    last = server.bodies[-1]["messages"]
    assert any(m["role"] == "user" and m["content"] == prompt(TURNS - 1) for m in last)
    assert last[0] == {"role": "system", "content": INSTRUCTIONS}

    # A new agent over the store as it was (what a new process sees) sends the same requests.
    context.close()
    store = tmp_path / "store"
    shutil.copytree(store, tmp_path / "saved")
    sent = len(server.bodies)
    continued = HeronContext(window=WINDOW, store=store)
    run_turns(make_agent(server.base_url, [continued]), range(TURNS, TURNS + 1), history)
    continued.close()
    one_process = server.bodies[sent:]
    shutil.rmtree(store)
    shutil.copytree(tmp_path / "saved", store)
    sent = len(server.bodies)
    restarted = HeronContext(window=WINDOW, store=store)
    run_turns(make_agent(server.base_url, [restarted]), range(TURNS, TURNS + 1))
    restarted.close()
    assert len(one_process) == 2
    assert server.bodies[sent:] == one_process

    # ... and so does a new process.
    shutil.rmtree(store)
    shutil.copytree(tmp_path / "saved", store)
    sent = len(server.bodies)
    run_turn_in_process(server, store, TURNS)
    assert server.bodies[sent:] == one_process
    assert server.rejected == []


def test_a_server_enforcing_less_costs_one_rejection_and_the_store_remembers_it(tmp_path: Path) -> None:
    enforced = 11_000  # the server refuses past this, though the model was described with 16k
    scripted = ChatWindowServer(enforced)
    try:
        context = HeronContext(window=WINDOW, store=tmp_path / "store")
        run_turns(make_agent(scripted.base_url, [context]), range(1, 16))
        assert len(scripted.rejected) == 1
        assert context.last_plan is not None and context.last_plan.window < enforced
        assert any(record.kind == "overflow" for record in context.ledger.records)
        for body in scripted.bodies:
            assert unanswered_calls(body) == []
        context.close()
        restarted = HeronContext(window=WINDOW, store=tmp_path / "store")
        run_turns(make_agent(scripted.base_url, [restarted]), range(16, 18))
        assert len(scripted.rejected) == 1  # the learnt window came back from the store
        assert restarted.last_plan is not None and restarted.last_plan.window < enforced
    finally:
        scripted.close()


def test_without_the_capability_the_same_agent_overflows_at_turn_two(server: ChatWindowServer) -> None:
    agent = make_agent(server.base_url, [])
    history = run_turns(agent, range(1, 2))
    with pytest.raises(ModelHTTPError) as raised:
        run_turns(agent, range(2, 3), history)
    assert raised.value.status_code == 400
    assert len(server.rejected) == 1


def test_a_window_that_is_not_positive_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="window must be a positive number"):
        HeronContext(window=0, store=tmp_path)


def test_a_store_that_is_a_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    store = tmp_path / "notes.txt"
    store.write_text("mine")
    with pytest.raises(ValueError, match="store must be a directory"):
        HeronContext(window=WINDOW, store=store)
    assert store.read_text() == "mine"
