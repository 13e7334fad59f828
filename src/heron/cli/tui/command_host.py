"""What the interactive command handlers may use of the controller.

The slash commands are served by handler objects the :class:`~heron.cli.tui.controller.Controller`
holds (session commands, control commands, model commands), each given the controller as a
:class:`CommandHost`. The protocol names all a handler may touch - printing, notes, the input
line's prefill, a background job, a question to the user - so a handler cannot reach into the
controller's job bookkeeping or its event rendering, and the controller is not one object
spread over several files.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from heron.cli.app_state import App
    from heron.cli.tui.pick_items import Picker
    from heron.cli.tui.render import Renderer
    from heron.coding.runtime import CodingSession

# One command's handler: the rest of the line in; an awaitable when it has more to do
# (a picker to show, a question to ask), None when it is done.
Handler = Callable[[str], "Awaitable[None] | None"]


class CommandHost(Protocol):
    """The controller as a command handler sees it."""

    @property
    def app(self) -> App: ...
    @property
    def console(self) -> Console: ...
    @property
    def renderer(self) -> Renderer: ...
    @property
    def picker(self) -> Picker | None: ...
    @property
    def session(self) -> CodingSession: ...
    @property
    def busy(self) -> bool: ...
    def print_text(self, text: Text) -> None: ...
    def note(self, message: str, style: str = "dim") -> None: ...
    def error(self, message: str) -> None: ...
    def changed(self) -> None: ...
    def print_footer(self) -> None: ...
    def recap(self) -> None: ...
    def set_prefill(self, text: str) -> None: ...
    def start_job(self, kind: str, work: Awaitable[Any], abort: Callable[[], object] | None = None) -> Any: ...
    async def ask_line(self, label: str, say: str | None = None, keys: str = "") -> str | None: ...
