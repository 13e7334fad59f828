"""What the rpc command handlers may use of the server.

The commands that read or change state and sessions are served by handler objects the
:class:`~heron.cli.modes.rpc_server.RpcServer` holds (:mod:`~heron.cli.modes.rpc_state`,
:mod:`~heron.cli.modes.rpc_commands`); each sees the server only as an :class:`RpcHost`:
the session, whether a run or a compaction is under way (and a refusal while one is), the
output, and the answer streaming now. How runs are started, aborted and awaited stays
the server's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from heron.cli.modes.rpc_protocol import CommandId

if TYPE_CHECKING:
    from heron.ai.types import AssistantMessage
    from heron.cli.app_state import App
    from heron.coding.runtime import CodingSession

# One command's handler: its id and fields in; the response's data, or None when the
# handler answers by itself (later, or with ``data: null``).
Handler = Callable[[CommandId, dict[str, Any]], Awaitable[dict[str, Any] | None]]


class RpcHost(Protocol):
    """The rpc server as a command handler sees it."""

    @property
    def app(self) -> App: ...
    @property
    def session(self) -> CodingSession: ...
    @property
    def is_running(self) -> bool: ...
    @property
    def is_compacting(self) -> bool: ...
    @property
    def partial(self) -> AssistantMessage | None: ...
    def require_idle(self, what: str) -> None: ...
    def warm_up(self, api: str) -> None: ...
    def write(self, out: dict[str, Any]) -> None: ...
