"""heron's context management for a pydantic-ai agent.

``Agent(model, capabilities=[HeronContext(window=N, store=DIR)])``:
a pydantic-ai capability over heron's engine (:class:`heron.context.engine.ContextEngine`),
the one heron's own sessions use. The conversation lives in heron's session file in
``store``; before every model request the capability records what the run added (tool
results budgeted on the way in: a large one cut to a preview, its whole text spilled to a
file under the store, a notice saying where) and replaces the request's messages with
the view heron plans - old results pruned to stubs, the history compacted through the
agent's own model when due, the recent turns kept verbatim - and after it records the
answer. Every decision is in the store, so a new agent over the same store (a new
process) sends the same next request. The ledger (:attr:`HeronContext.ledger`) says what
was kept out of view and how to get it back.

Needs the ``pydantic-ai`` extra (``pip install "heron[pydantic-ai]"``); importing
:mod:`heron.context` alone never loads pydantic-ai.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelHTTPError, RetryModelRequest
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model as PydanticModel
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext

from heron.agent.messages import convert_to_llm
from heron.agent.tool_meta import ToolCatalog
from heron.ai.overflow import is_context_overflow
from heron.ai.types import Context, Model, Tool, ToolResultMessage, UserMessage
from heron.context.engine import ContextEngine, RequestPlan
from heron.context.policy import PolicySettings
from heron.context.pydantic_ai.convert import (
    API,
    failed_answer,
    request_messages,
    response_message,
    system_parts,
    unstored,
    view_messages,
)
from heron.context.pydantic_ai.summary import shared_ask, summary_ask
from heron.context.records.ledger import Ledger
from heron.context.rules.check_mode import mode_from
from heron.context.tool_output.spill import SPILL_MAX_BYTES
from heron.context.window.budget import fixed_tokens

SESSION_FILE = "session.jsonl"  # the session file in the store directory
SPILL_DIR = "spill"  # where whole tool results are written, in the store directory

__all__ = ["HeronContext"]


def _request_frame(request_context: ModelRequestContext) -> Context:
    """What every request of this step carries besides the view, as heron counts it: the
    instructions and the run's system prompt parts as the system prompt, and the tool
    definitions (function and output tools)."""
    parameters = request_context.model_request_parameters
    texts = [part.content for part in system_parts(request_context.messages)]
    texts += [part.content for part in parameters.instruction_parts or ()]
    tools = [
        Tool(name=t.name, description=t.description or "", parameters=dict(t.parameters_json_schema))
        for t in [*parameters.function_tools, *parameters.output_tools]
    ]
    return Context(system_prompt="\n\n".join(texts), tools=tools)


class HeronContext(AbstractCapability[Any]):
    """heron's context management for the agent it is given to (see the module docstring).

    ``window``: the model's context window in tokens; ``max_tokens``: its output limit (a
    request's cap is planned within it); ``store``: the directory holding the session file
    and the spilled results (created if missing); ``settings``: heron's
    pruning and compaction settings (:class:`heron.context.policy.PolicySettings`);
    ``tools``: what each tool name is, for how a pruned result says to get it back;
    ``shared_summary``: a compaction's summary request repeats the conversation's request
    (its prefix read from the provider's prompt cache) rather than one of its own."""

    def __init__(
        self,
        *,
        window: int,
        store: str | Path,
        max_tokens: int = 4_096,
        settings: PolicySettings | None = None,
        tools: ToolCatalog | None = None,
        shared_summary: bool = True,
    ) -> None:
        if window <= 0:
            raise ValueError(f"window must be a positive number of tokens, not {window}")
        self.window = window
        self.max_tokens = max_tokens
        self.shared_summary = shared_summary
        self.directory = Path(store)
        if self.directory.exists() and not self.directory.is_dir():
            raise ValueError(f"store must be a directory (it holds {SESSION_FILE} and {SPILL_DIR}/): {store} is a file")
        self.directory.mkdir(parents=True, exist_ok=True)
        self._settings = settings
        self._tools = tools
        self._engine: ContextEngine | None = None
        self._frame = Context()  # the system prompt and tools of the request being planned
        self._turn_prompt: UserMessage | None = None  # the prompt of the running turn
        self.last_plan: RequestPlan | None = None  # the plan of the latest request, for a caller to inspect

    def _engine_for(self, model: PydanticModel) -> ContextEngine:
        """The engine over the store, made with the first request (when the model is known)."""
        if self._engine is None:
            described = Model(
                id=model.model_name,
                api=API,
                provider=model.system,
                context_window=self.window,
                max_tokens=self.max_tokens,
            )
            self._engine = ContextEngine.open(
                self.directory / SESSION_FILE,
                described,
                cwd=self.directory,
                settings=self._settings,
                tools=self._tools,
                fixed_tokens=lambda: fixed_tokens(self._frame.system_prompt or "", self._frame.tools or []),
            )
        return self._engine

    @property
    def ledger(self) -> Ledger:
        """What was kept out of the model's view, and how to get it back (empty before the first request)."""
        return self._engine.ledger if self._engine is not None else Ledger()

    @property
    def compactions(self) -> int:
        """How many compactions the store's current path holds."""
        if self._engine is None:
            return 0
        store = self._engine.store
        path = store.path_to(store.leaf_id) if store.leaf_id is not None else []
        return sum(1 for entry in path if entry.type == "compaction")

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Record what the run added since the last answer (once per request step)."""
        engine = self._engine_for(request_context.model)
        for request in unstored(request_context.messages):
            added = request_messages(request)
            results = [m for m in added if isinstance(m, ToolResultMessage)]
            budgeted = iter(engine.budget_results(results, self.directory / SPILL_DIR, SPILL_MAX_BYTES))
            for message in added:
                engine.append(next(budgeted) if isinstance(message, ToolResultMessage) else message)
                if isinstance(message, UserMessage):
                    self._turn_prompt = message
        return request_context

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Send heron's view instead of the whole history, with the output cap planned for
        it: planned for each attempt, so the attempt after an overflow plans with the
        window the rejection taught."""
        engine = self._engine_for(request_context.model)
        self._frame = _request_frame(request_context)
        model, system = request_context.model, system_parts(request_context.messages)
        shared = shared_ask(model, request_context.model_request_parameters, system) if self.shared_summary else None
        plan = await engine.prepare_request(summary_ask(model), shared_ask=shared, turn_prompt=self._turn_prompt)
        self.last_plan = plan
        if mode_from(False) != "off":  # HERON_CHECK_CONTEXT: the rules every request obeys
            self._check(engine, plan)
        settings: ModelSettings = {**(request_context.model_settings or {})}
        cap = settings.get("max_tokens")  # the agent's own cap, kept when it is lower
        settings["max_tokens"] = plan.max_tokens if cap is None else min(cap, plan.max_tokens)
        return replace(request_context, messages=view_messages(plan.view, system), model_settings=settings)

    def _check(self, engine: ContextEngine, plan: RequestPlan) -> None:
        """The request's rules checked (a ledger record each); under ``strict`` a broken one
        stops the request, as it does in heron's own sessions."""
        context = replace(self._frame, messages=convert_to_llm(list(plan.view)))
        violations = engine.check(plan, context, plan.turn_prompt)
        if violations and mode_from(False) == "strict":
            from heron.context.rules.invariants import STRICT_LOG, ContextInvariantError

            STRICT_LOG.add(violations)
            raise ContextInvariantError("; ".join(str(v) for v in violations))

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        """A context-length rejection teaches the session the window the server enforces
        (recorded in the store) and the request is planned and sent once more; anything
        else, or a second rejection, is the run's error."""
        engine = self._engine_for(request_context.model)
        if not isinstance(error, ModelHTTPError) or request_context.attempt > 1:
            raise error
        failed = failed_answer(error, provider=engine.model.provider, model=engine.model.id)
        if not is_context_overflow(failed, engine.policy.sizes.window):
            raise error
        plan = self.last_plan  # the plan of the attempt just rejected
        sent = (
            {"tokens": plan.tokens, "max_tokens": plan.max_tokens}
            if plan is not None
            else {"tokens": 0, "max_tokens": 0}
        )
        if engine.policy.windows.learn_from_overflow(failed, **sent) is None:
            raise error
        raise RetryModelRequest()

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        """Record the answer (its usage report anchors the next count)."""
        engine = self._engine_for(request_context.model)
        answer = response_message(response, provider=engine.model.provider, model=engine.model.id)
        engine.append(answer)
        plan = self.last_plan  # the plan of the request this answers
        engine.policy.observe(answer, plan.tokens if plan is not None else 0)
        return response

    def close(self) -> None:
        """Release the session file (another process may open the store after this)."""
        if self._engine is not None:
            self._engine.store.close()
            self._engine = None
