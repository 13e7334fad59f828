"""``/context``: what the window holds, by part, in estimated tokens, and the ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.messages import CompactionSummaryMessage
from heron.ai.types import ToolResultMessage
from heron.coding.goal import goal_summary
from heron.coding.model_limits import describe_window
from heron.context.records.ledger import LedgerRecord
from heron.context.window.budget import estimate_message_tokens, fixed_tokens
from heron.context.window.working_budget import WorkingBudget

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.agent.tool_meta import ToolCatalog
    from heron.coding.context_files import ContextFile
    from heron.context.policy import ContextPolicy
    from heron.context.records.ledger import Ledger
    from heron.session.store import SessionStore


class WindowSource(Protocol):
    """Where the window came from is the policy's to say."""

    @property
    def policy(self) -> ContextPolicy: ...


class BrokenDown(WindowSource, Protocol):
    """What ``/context`` reads of a session: the policy's view and counts, the agent's
    messages, system prompt and tools, the context files, the ledger, and the store the
    goal is read from."""

    @property
    def agent(self) -> Agent: ...

    @property
    def context_files(self) -> list[ContextFile]: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def tool_catalog(self) -> ToolCatalog: ...


@dataclass
class ContextBreakdown:
    """What the window holds, by part, in estimated tokens (``/context``)."""

    window: int
    threshold: int
    system_prompt: int
    tools: int
    context_files: int
    summaries: int
    messages: dict[str, int] = field(default_factory=dict)
    total: int = 0
    ledger: list[LedgerRecord] = field(default_factory=list)
    pruned_results: int = 0
    todos: list[dict[str, str]] = field(default_factory=list)
    goal: dict[str, Any] | None = None  # text, budget, spent (heron.coding.goal.goal_summary)
    # the definitions of tools that run programs calling the other tools (``script``), by name:
    # what having one costs every request, shown apart so it can be weighed against what it saves
    program_tools: dict[str, int] = field(default_factory=dict)
    window_source: str = ""  # where the window came from (configured, a flag, the server, a rejection)
    budget: WorkingBudget | None = None  # the working budget compaction triggers at (None: offline, not known)


def context_breakdown(session: BrokenDown) -> ContextBreakdown:
    policy = session.policy
    messages = policy.view(session.agent.messages)
    by_role: dict[str, int] = {}
    summaries = 0
    for message in messages:
        tokens = estimate_message_tokens(message)
        if isinstance(message, CompactionSummaryMessage):
            summaries += tokens
            continue
        by_role[message.role] = by_role.get(message.role, 0) + tokens
    files = sum(-(-f.kept_chars // 4) for f in session.context_files) if session.context_files else 0
    system = -(-len(session.agent.state.system_prompt) // 4)
    tools = policy.sizes.fixed_tokens() - system
    stubs = policy.decisions.stubs
    return ContextBreakdown(
        window=policy.sizes.window,
        threshold=policy.sizes.threshold,
        system_prompt=system,
        tools=tools,
        context_files=files,
        summaries=summaries,
        messages=by_role,
        total=policy.sizes.count(messages),
        ledger=list(session.ledger.records),
        pruned_results=sum(
            1 for m in session.agent.messages if isinstance(m, ToolResultMessage) and m.tool_call_id in stubs
        ),
        todos=[{"content": t["content"], "status": t["status"]} for t in policy.decisions.todos or []],
        goal=goal_summary(session.store),
        program_tools={
            tool.name: fixed_tokens("", [tool.definition()])
            for tool in session.agent.state.tools
            if session.tool_catalog.meta(tool.name).calls_tools
        },
        window_source=window_source(session),
        budget=policy.sizes.budget,
    )


def window_source(session: WindowSource) -> str:
    """Where the window heron plans for came from: a server's rejection when one taught
    a smaller window, else the model's source (configured, ``--context-window``, the server)."""
    policy = session.policy
    learned = policy.decisions.learned_window(policy.sizes.model_key)
    if learned is not None and learned < policy.sizes.model.context_window:
        return "learned from the server's rejection of a larger request"
    return describe_window(policy.sizes.model)
