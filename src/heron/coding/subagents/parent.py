"""What the sub-agent machinery uses of the sessions it joins: the parent that delegates and
the child it runs.

The manager, the spawning of a child and the assembly's sharing of the parent's control see
these protocols rather than the whole :class:`heron.coding.runtime.CodingSession`, so what
a parent lends its children - and what running a child touches - is written down in one
place and checked by the type checker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.agent.messages import AgentMessage
    from heron.agent.tools import AgentTool
    from heron.ai.types import ImageContent, Model, ThinkingLevel
    from heron.coding.control import Control
    from heron.coding.events import SessionEvent
    from heron.coding.extensions import ExtensionHost
    from heron.coding.goal import GoalKeeper
    from heron.coding.goal_loop import GoalLoop
    from heron.coding.settings import Settings
    from heron.coding.skills import SkillSet
    from heron.coding.subagents.manager import SubagentManager
    from heron.coding.tools.env import ToolEnv
    from heron.session.store import SessionStore


class ParentSession(Protocol):
    """A session that delegates. A child inherits its place (cwd, home), settings, model and
    key, thinking level, tools and skills; a fork also its store, system prompt and date.
    The child obeys its control and extensions and is driven by its goal loop; the manager
    records the children in its store, tells its listeners, passes its goal on, caps a
    result by its window and spills it into its tool environment's folder. ``subagents``
    is set by :func:`heron.coding.subagents.attach_subagents`."""

    subagents: SubagentManager | None

    @property
    def cwd(self) -> Path: ...

    @property
    def home(self) -> Path: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def model(self) -> Model: ...

    @property
    def api_key(self) -> str | None: ...

    @property
    def thinking_level(self) -> ThinkingLevel: ...

    @property
    def tools(self) -> list[AgentTool[Any]]: ...

    @property
    def skills(self) -> SkillSet: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def date(self) -> str: ...

    @property
    def control(self) -> Control: ...

    @property
    def extensions(self) -> ExtensionHost: ...

    @property
    def goal(self) -> GoalKeeper: ...

    @property
    def goal_loop(self) -> GoalLoop: ...

    @property
    def window(self) -> int: ...

    @property
    def env(self) -> ToolEnv: ...

    def emit(self, event: SessionEvent) -> None: ...


class ChildSession(Protocol):
    """A running sub-agent as its manager drives it: its task prompt, its events forwarded
    to the parent, its abort, its messages and store (the result, the file it was saved
    in), its goal (passed on on request) and its own manager (the usage of its children)."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def messages(self) -> list[AgentMessage]: ...

    @property
    def goal(self) -> GoalKeeper: ...

    @property
    def subagents(self) -> SubagentManager | None: ...

    def subscribe(self, listener: Callable[[SessionEvent], None]) -> Callable[[], None]: ...

    def abort(self) -> None: ...

    async def prompt(
        self, text: str, images: Sequence[ImageContent] = (), *, commands: bool = True
    ) -> list[AgentMessage]: ...
