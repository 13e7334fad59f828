"""Which model-call limit a run gets: ``--max-turns``, else ``limits.maxTurns``, else
the mode's default.

Nobody watches a ``-p``, json, rpc, ACP, batch or sub-agent run, so a model that never
stops must be stopped by heron: those runs default to :data:`DEFAULT_MAX_TURNS` model
calls per prompt. Interactive mode has a person at the keyboard (Esc stops a run), so
it has no limit unless one is set. The limit itself is enforced in one place, the agent
loop (:mod:`heron.agent.turn_limit`).
"""

from __future__ import annotations

from heron.agent.agent import Agent
from heron.coding.settings import Settings

DEFAULT_MAX_TURNS = 200


def max_turns_for(settings: Settings, flag: int | None = None, *, interactive: bool = False) -> int | None:
    if flag is not None:
        if flag < 1:
            raise ValueError(f"--max-turns must be at least 1, got {flag}")
        return flag
    if settings.max_turns is not None:
        return settings.max_turns
    return None if interactive else DEFAULT_MAX_TURNS


def apply_max_turns(agent: Agent, settings: Settings, flag: int | None = None, *, interactive: bool = False) -> None:
    """Set the agent's per-prompt allowance (takes effect at its next prompt)."""
    agent.turn_limit.max_turns = max_turns_for(settings, flag, interactive=interactive)
