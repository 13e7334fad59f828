"""The interactive side of permissions and checkpoints: the "ask" prompt, ``/mode`` and
Shift+Tab, and ``/rewind``. A mixin of :class:`Controller`, kept apart so each module
stays small.

Everything here that needs an answer asks through :meth:`Controller.ask_line`: the next
line the user submits answers the question instead of steering the run, and Ctrl+C or
Esc answer "no". That works while the agent runs, because the input line is live the
whole time; nothing here reads the terminal itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from heron.cli.rewind_cmd import (
    applied_changes,
    apply_rewind,
    describe_lines,
    find_turns,
    missing_reason,
    open_repo,
    turn_lines,
)
from heron.cli.tui.permission_prompt import MARK, PermissionAsker
from heron.cli.tui.pick_items import Picker, mode_items
from heron.cli.tui.render import Renderer, Totals
from heron.coding.checkpoints import Change, CheckpointError, Turn, plan_code_rewind
from heron.coding.permissions.modes import MODES, Mode, next_mode

if TYPE_CHECKING:
    from heron.cli.app_state import App
    from heron.coding.runtime import CodingSession

MODE_HELP: dict[Mode, str] = {
    "default": "reads and project edits run; sensitive paths and outside the project ask",
    "plan": "read-only: edits and writes are denied, bash only for read-only commands",
    "accept-edits": "edits and writes run outside the project too (sensitive paths still ask)",
    "bypass": "everything runs; only deny rules apply",
}
WHAT_CHOICES = {
    "1": "both",
    "2": "code",
    "3": "conversation",
    "both": "both",
    "code": "code",
    "conversation": "conversation",
}
YES = ("y", "yes")


class ControlCommands:
    """``_cmd_mode``, ``_cmd_rewind``, Shift+Tab and the permission asker (module docstring)."""

    app: App
    console: Console
    renderer: Renderer
    picker: Picker | None

    if TYPE_CHECKING:

        @property
        def busy(self) -> bool: ...
        @property
        def session(self) -> CodingSession: ...
        def _print(self, text: Text) -> None: ...
        def _changed(self) -> None: ...
        def _recap(self) -> None: ...
        def note(self, message: str, style: str = "dim") -> None: ...
        def error(self, message: str) -> None: ...
        def set_prefill(self, text: str) -> None: ...
        def start_job(self, kind: str, work: Any, abort: Callable[[], None] | None = None) -> Any: ...
        async def ask_line(self, label: str, say: str | None = None, keys: str = "") -> str | None: ...

    def install_asker(self) -> None:
        """Answer the session's "ask" decisions here (sub-agents take the parent's asker)."""
        self.session.control.asker = PermissionAsker(self)

    # --- /mode, Shift+Tab -----------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self.session.control.permissions.mode

    async def _pick_mode(self) -> None:
        """``/mode`` in a terminal, nothing running: choose one (opens on the current mode)."""
        assert self.picker is not None
        items = mode_items(MODES, MODE_HELP, self.mode)
        chosen = await self.picker(f"permission mode (now {self.mode})", items)
        if chosen is not None and chosen != self.mode:
            self._mode_changed(self.session.control.set_mode(chosen))

    def _cmd_mode(self, args: str) -> Awaitable[None] | None:
        name = args.strip()
        if not name and self.picker is not None and not self.busy:
            return self._pick_mode()  # while a run works the list is printed (the input line stays)
        if not name:
            self.renderer.reset_section()
            self._print(Text(f"mode: {self.mode}", style="bold"))
            for mode in MODES:
                mark = "*" if mode == self.mode else " "
                self._print(Text(f" {mark} {mode:<13} {MODE_HELP[mode]}"))
            self._print(Text("switch with /mode NAME; Shift+Tab cycles default → accept-edits → plan", style="dim"))
            return None
        try:
            mode = self.session.control.set_mode(name)
        except ValueError as exc:
            self.error(f"/mode: {exc}")
            return None
        self._mode_changed(mode)
        return None

    def cycle_mode(self) -> None:
        """Shift+Tab: the next mode (bypass only by name, never by accident)."""
        self._mode_changed(self.session.control.set_mode(next_mode(self.mode)))

    def _mode_changed(self, mode: Mode) -> None:
        self.note(f"mode: {mode} ({MODE_HELP[mode]})", "green")
        self._changed()

    # --- /rewind ----------------------------------------------------------------------------

    def _cmd_rewind(self, args: str) -> None:
        """``/rewind [N [code|conversation|both]]``: the questions left open are asked."""
        words = args.split()
        if len(words) > 2 or (words and not words[0].isdigit()) or (len(words) == 2 and words[1] not in WHAT_CHOICES):
            self.error("usage: /rewind [N [code|conversation|both]]")
            return
        number = int(words[0]) if words else None
        what = WHAT_CHOICES[words[1]] if len(words) == 2 else None
        self.start_job("rewind", self._rewind(number, what))

    async def _rewind(self, number: int | None, what: str | None) -> None:
        s = self.session
        repo = open_repo(s.store, self.app.cwd, self.app.home)
        found = await asyncio.to_thread(find_turns, s.store, repo)
        self.renderer.reset_section()
        if not found:
            self.note("no user turns on this branch: nothing to rewind")
            return
        if number is None:
            for line in turn_lines(found, self.app.settings.checkpoint_keep_days):
                self._print(Text(line))
            number = await self._ask_number(len(found))
            if number is None:
                return
        if not 1 <= number <= len(found):
            self.error(f"/rewind: turn {number}: this branch has {len(found)} user turn(s) (/rewind lists them)")
            return
        turn = found[number - 1]
        what = what or await self._ask_what(turn)
        if what is None:
            return
        if what != "conversation" and turn.checkpoint is None:
            self.error(
                f"/rewind: {missing_reason(turn, self.app.settings.checkpoint_keep_days)}, so its code "
                "cannot be restored (choose conversation only)"
            )
            return
        await self._rewind_to(turn, what, repo)

    async def _ask_number(self, count: int) -> int | None:
        while True:
            text = await self.ask_line("turn" + MARK, f"rewind to before which turn? (1-{count}; Enter cancels)")
            if text is None or not text.strip():
                self.note("rewind cancelled; nothing changed")
                return None
            if text.strip().isdigit() and 1 <= int(text) <= count:
                return int(text)
            self.error(f"answer a turn number from 1 to {count}, or Enter to cancel")

    async def _ask_what(self, turn: Turn) -> str | None:
        if turn.checkpoint is None:
            reason = missing_reason(turn, self.app.settings.checkpoint_keep_days)
            self.note(f"{reason}: only the conversation can go back", "yellow")
            return "conversation"
        while True:
            text = await self.ask_line(
                "restore" + MARK, "restore what? 1 code and conversation · 2 code only · 3 conversation only (Enter: 1)"
            )
            if text is None:
                self.note("rewind cancelled; nothing changed")
                return None
            choice = text.strip().lower() or "1"
            if choice in WHAT_CHOICES:
                return WHAT_CHOICES[choice]
            self.error("answer 1 (code and conversation), 2 (code only) or 3 (conversation only)")

    async def _rewind_to(self, turn: Turn, what: str, repo: Any) -> None:
        """List what would change, confirm, apply; the conversation is then shown as it is."""
        s = self.session
        changes: list[Change] = []
        if what != "conversation" and turn.checkpoint is not None:
            try:
                _, changes = await asyncio.to_thread(plan_code_rewind, repo, turn.checkpoint)
            except CheckpointError as exc:
                self.error(f"/rewind: {exc}")
                return
        include_external = False
        external = [c for c in changes if c.external and c.action != "keep"]
        for line in describe_lines(turn, what, changes, applied_changes(changes, False)):
            self._print(Text(line))
        if external:
            answer = await self.ask_line(
                "restore them too? [y/N]" + MARK,
                f"also restore the {len(external)} file(s) changed outside heron? [y/N]",
            )
            include_external = (answer or "").strip().lower() in YES
        applied = applied_changes(changes, include_external)
        answer = await self.ask_line("apply? [y/N]" + MARK, "apply these changes? [y/N]")
        if (answer or "").strip().lower() not in YES:
            self.note("rewind cancelled; nothing changed")
            return
        await asyncio.to_thread(apply_rewind, s.store, repo, turn, what, applied)
        done = f"rewound to before turn {turn.number}: {len(applied)} file(s) restored"
        if what == "code":
            self.note(done, "green")
            return
        await s.navigate(s.store.leaf_id)  # the agent's context follows the moved leaf
        self.renderer.totals = Totals.of(s.messages)
        self.note(
            done + f", conversation moved ({len(s.messages)} messages in the context); "
            "the turn's prompt is back in the input",
            "green",
        )
        self._recap()
        self.set_prefill(turn.text)
