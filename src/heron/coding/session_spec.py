"""What a session is made of, as one frozen value: :class:`SessionSpec`.

Every way heron runs a session - the ``heron`` command's modes, the ACP server, batch
tasks, sub-agents and programs embedding heron - describes the session it wants with a
spec and hands it to :func:`heron.coding.assembly.assemble_session`, the one place that
turns a spec into a :class:`~heron.coding.runtime.CodingSession` (docs/sdk.md). The spec
holds only decisions (which directory, model, tools, trust, permissions, MCP servers,
prompt options and session file), so the drive modes cannot drift apart in how they
build a session; it lives apart from the assembly so the sub-agent modules can describe
a child without importing the assembly that gives sessions their ``task`` tool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from heron.ai.types import Model, ThinkingLevel, UserMessage
from heron.coding.model_choice import ResolvedModel

if TYPE_CHECKING:  # types only: the spec is read before the agent (pydantic) is loaded
    from heron.agent.messages import AgentMessage
    from heron.agent.tools import AgentTool
    from heron.ai.models import ModelRegistry
    from heron.coding.mcp.config import ServerConfig
    from heron.coding.runtime import CodingSession
    from heron.coding.settings import Settings
    from heron.coding.subagents.parent import ParentSession
    from heron.session.store import SessionStore

# heron.coding.assembly.assemble_session as the sub-agents receive it: they build children
# the way every session is built, without importing the assembly that gives them ``task``.
Build = Callable[["SessionSpec"], "CodingSession"]

StoreKind = Literal["memory", "new", "continue", "open", "fork", "existing"]

# No generated __repr__ for the specs (one function fewer compiled at import each): nothing
# prints them, and a printed ModelChoice or SessionSpec would show its API key.


@dataclass(frozen=True, repr=False)
class ModelChoice:
    """The model as the ``heron`` command chooses it (``--model``, ``--base-url``,
    ``--api-key``, ``--api``, then ``settings.json``, then the first provider with a key);
    resolved against the spec's settings, so a project's default model applies."""

    ref: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api: str | None = None
    context_window: int | None = None  # ``--context-window``: no need to ask the server
    max_tokens: int | None = None  # ``--max-tokens``: the output limit, sent as given


@dataclass(frozen=True, repr=False)
class StoreSpec:
    """Which session file the session writes to. Build it with the class methods."""

    kind: StoreKind = "memory"
    ref: str | Path | None = None  # open: a path or an id prefix
    path: Path | None = None  # new: the file to create (default: under $HERON_HOME/sessions)
    source: SessionStore | None = None  # fork: the session forked; existing: the store itself
    entry_id: str | None = None  # fork: the entry the copy ends at (None: the whole path)
    parent_session: str | None = None  # new: the parent's file, named in the header (sub-agents)
    fsync: bool = False
    # Messages appended before the session starts (a sub-agent's preloaded skills, a fork's
    # synthetic task call): they are part of the history the first request carries.
    seed: tuple[AgentMessage, ...] = ()

    @classmethod
    def memory(cls) -> StoreSpec:
        """Nothing written (``--no-session``)."""
        return cls("memory")

    @classmethod
    def new(cls, path: Path | None = None, *, parent_session: str | None = None, fsync: bool = False) -> StoreSpec:
        return cls("new", path=path, parent_session=parent_session, fsync=fsync)

    @classmethod
    def continue_latest(cls) -> StoreSpec:
        """The newest session of the directory, or a new one (``--continue``)."""
        return cls("continue")

    @classmethod
    def open(cls, ref: str | Path) -> StoreSpec:
        """A session file by path or id prefix (``--session``, a picked ``--resume``)."""
        return cls("open", ref=ref)

    @classmethod
    def fork(cls, source: SessionStore, entry_id: str | None = None) -> StoreSpec:
        return cls("fork", source=source, entry_id=entry_id)

    @classmethod
    def existing(cls, store: SessionStore) -> StoreSpec:
        """A store the caller opened itself (ACP opens and forks before it builds)."""
        return cls("existing", source=store)

    def seeded(self, *messages: AgentMessage) -> StoreSpec:
        return replace(self, seed=(*self.seed, *messages))


@dataclass(frozen=True, repr=False)
class ParentLink:
    """A sub-agent's parent: the child obeys its permissions, hooks and extensions, and
    may start sub-agents of its own one level deeper (docs/subagents.md)."""

    session: ParentSession
    agent_type: str  # SubagentStop's agent_type: the definition's name, "fork" or the general agent


@dataclass(frozen=True, repr=False)
class SessionSpec:
    """Everything that decides what a session is; :func:`assemble_session` builds it.

    Defaults are an SDK's: settings from ``$HERON_HOME`` and the project, the default
    tools, nothing stored, no MCP servers, no trust."""

    cwd: Path
    model: Model | ResolvedModel | ModelChoice
    api_key: str | None = None  # with a bare ``Model`` (a ``ModelChoice`` finds its own)
    home: Path | None = None  # default: $HERON_HOME
    settings: Settings | None = None  # default: settings.json of home and project
    registry: ModelRegistry | None = None  # where a ModelChoice is looked up (default: loaded)
    store: StoreSpec = field(default_factory=StoreSpec.memory)
    tools: tuple[str, ...] | None = None  # built-in tool names (default: settings, else heron's)
    extra_tools: tuple[AgentTool[Any], ...] = ()
    tool_order: tuple[str, ...] | None = None  # the tools' order by name (a fork keeps its parent's)
    thinking_level: ThinkingLevel | None = None  # default: the session's, else settings'
    system_prompt: str | None = None  # replaces heron's own (``--system-prompt``)
    append_system_prompt: str | None = None
    # SYSTEM.md / APPEND_SYSTEM.md, the skills list and project memory in the system prompt
    # (an isolated sub-agent gets none of them).
    project_prompt: bool = True
    whole_system_prompt: str | None = None  # the system prompt as is (a fork: its parent's bytes)
    date: str | None = None  # the prompt's date (default: the session's start)
    trust: bool = False  # ``--trust``: the project's hooks, rules, extensions and MCP servers
    permission_mode: str | None = None
    sandbox: str | None = None  # ``--sandbox``: off, workspace-write or read-only (default: the settings')
    allow: tuple[str, ...] = ()  # ``--allow`` rules
    mcp: bool = False  # start the configured MCP servers (user's; project's when trusted)
    mcp_servers: tuple[ServerConfig, ...] = ()  # more servers (an ACP client's), started too
    extensions: bool = True  # load the Python extensions (a sub-agent shares its parent's)
    parent: ParentLink | None = None
    # The prompt the caller will send first (``heron -p``'s task): written to the session
    # file before the server is asked anything (heron.coding.first_prompt).
    first_prompt: UserMessage | None = None

    @property
    def resolved(self) -> ResolvedModel:
        """The model and key once :func:`heron.coding.assembly.resolve_spec` settled them."""
        if isinstance(self.model, ResolvedModel):
            return self.model
        if isinstance(self.model, Model):
            return ResolvedModel(self.model, self.api_key, "given")
        raise ValueError("the spec's model is a ModelChoice: resolve_spec() resolves it first")


def tool_names(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``--tools read,grep`` (or a list) as the spec's tuple; None or "": the default."""
    if not value:
        return None
    names = value.split(",") if isinstance(value, str) else list(value)
    return tuple(n.strip() for n in names if n.strip())


def chosen_tools(tools: Sequence[str] | None, settings: Settings) -> list[str]:
    """The built-in tools a session has: the ones asked for, else ``defaultTools`` of the
    settings, else heron's default set (``task`` among them when sub-agents are wanted)."""
    from heron.coding.tools import DEFAULT_TOOLS, SCRIPT_TOOL  # the tools' package loads pydantic

    if tools is not None:
        names = list(tools)
    else:
        names = list(settings.default_tools) if settings.default_tools else list(DEFAULT_TOOLS)
    # ``script.enabled: false`` takes the script tool out of every set (docs/script.md)
    return names if settings.script.enabled else [name for name in names if name != SCRIPT_TOOL]
