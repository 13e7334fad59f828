"""The interactive side of permissions and checkpoints: the "ask" prompt, ``/mode`` and
Shift+Tab, and ``/rewind``. A handler object the controller holds, seeing it only as a
:class:`~heron.cli.tui.command_host.CommandHost`.

Everything here that needs an answer asks through the host's ``ask_line``: the next
line the user submits answers the question instead of steering the run, and Ctrl+C or
Esc answer "no". That works while the agent runs, because the input line is live the
whole time; nothing here reads the terminal itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

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
from heron.cli.tui.command_host import CommandHost, Handler
from heron.cli.tui.permission_prompt import MARK, PermissionAsker
from heron.cli.tui.pick_items import mode_items
from heron.cli.tui.render import Totals
from heron.coding.checkpoints import Change, CheckpointError, Turn, plan_code_rewind
from heron.coding.permissions.modes import MODES, Mode, next_mode

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
    """``/mode``, ``/rewind``, Shift+Tab and the permission asker (module docstring), for a host."""

    def __init__(self, host: CommandHost) -> None:
        self.host = host

    def commands(self) -> dict[str, Handler]:
        return {"mode": self._cmd_mode, "rewind": self._cmd_rewind}

    def install_asker(self) -> None:
        """Answer the session's "ask" decisions here (sub-agents take the parent's asker)."""
        self.host.session.control.asker = PermissionAsker(self.host)

    # --- /mode, Shift+Tab -----------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self.host.session.control.permissions.mode

    async def _pick_mode(self) -> None:
        """``/mode`` in a terminal, nothing running: choose one (opens on the current mode)."""
        assert self.host.picker is not None
        items = mode_items(MODES, MODE_HELP, self.mode)
        chosen = await self.host.picker(f"permission mode (now {self.mode})", items)
        if chosen is not None and chosen != self.mode:
            self._mode_changed(self.host.session.control.set_mode(chosen))

    def _cmd_mode(self, args: str) -> Awaitable[None] | None:
        name = args.strip()
        if not name and self.host.picker is not None and not self.host.busy:
            return self._pick_mode()  # while a run works the list is printed (the input line stays)
        if not name:
            self.host.renderer.reset_section()
            self.host.print_text(Text(f"mode: {self.mode}", style="bold"))
            for mode in MODES:
                mark = "*" if mode == self.mode else " "
                self.host.print_text(Text(f" {mark} {mode:<13} {MODE_HELP[mode]}"))
            self.host.print_text(
                Text("switch with /mode NAME; Shift+Tab cycles default → accept-edits → plan", style="dim")
            )
            return None
        try:
            mode = self.host.session.control.set_mode(name)
        except ValueError as exc:
            self.host.error(f"/mode: {exc}")
            return None
        self._mode_changed(mode)
        return None

    def cycle_mode(self) -> None:
        """Shift+Tab: the next mode (bypass only by name, never by accident)."""
        self._mode_changed(self.host.session.control.set_mode(next_mode(self.mode)))

    def _mode_changed(self, mode: Mode) -> None:
        self.host.note(f"mode: {mode} ({MODE_HELP[mode]})", "green")
        self.host.changed()

    # --- /rewind ----------------------------------------------------------------------------

    def _cmd_rewind(self, args: str) -> None:
        """``/rewind [N [code|conversation|both]]``: the questions left open are asked."""
        words = args.split()
        if len(words) > 2 or (words and not words[0].isdigit()) or (len(words) == 2 and words[1] not in WHAT_CHOICES):
            self.host.error("usage: /rewind [N [code|conversation|both]]")
            return
        number = int(words[0]) if words else None
        what = WHAT_CHOICES[words[1]] if len(words) == 2 else None
        self.host.start_job("rewind", self._rewind(number, what))

    async def _rewind(self, number: int | None, what: str | None) -> None:
        s = self.host.session
        repo = open_repo(s.store, self.host.app.cwd, self.host.app.home)
        found = await asyncio.to_thread(find_turns, s.store, repo)
        self.host.renderer.reset_section()
        if not found:
            self.host.note("no user turns on this branch: nothing to rewind")
            return
        if number is None:
            for line in turn_lines(found, self.host.app.settings.checkpoint_keep_days):
                self.host.print_text(Text(line))
            number = await self._ask_number(len(found))
            if number is None:
                return
        if not 1 <= number <= len(found):
            self.host.error(f"/rewind: turn {number}: this branch has {len(found)} user turn(s) (/rewind lists them)")
            return
        turn = found[number - 1]
        what = what or await self._ask_what(turn)
        if what is None:
            return
        if what != "conversation" and turn.checkpoint is None:
            self.host.error(
                f"/rewind: {missing_reason(turn, self.host.app.settings.checkpoint_keep_days)}, so its code "
                "cannot be restored (choose conversation only)"
            )
            return
        await self._rewind_to(turn, what, repo)

    async def _ask_number(self, count: int) -> int | None:
        while True:
            text = await self.host.ask_line("turn" + MARK, f"rewind to before which turn? (1-{count}; Enter cancels)")
            if text is None or not text.strip():
                self.host.note("rewind cancelled; nothing changed")
                return None
            if text.strip().isdigit() and 1 <= int(text) <= count:
                return int(text)
            self.host.error(f"answer a turn number from 1 to {count}, or Enter to cancel")

    async def _ask_what(self, turn: Turn) -> str | None:
        if turn.checkpoint is None:
            reason = missing_reason(turn, self.host.app.settings.checkpoint_keep_days)
            self.host.note(f"{reason}: only the conversation can go back", "yellow")
            return "conversation"
        while True:
            text = await self.host.ask_line(
                "restore" + MARK, "restore what? 1 code and conversation · 2 code only · 3 conversation only (Enter: 1)"
            )
            if text is None:
                self.host.note("rewind cancelled; nothing changed")
                return None
            choice = text.strip().lower() or "1"
            if choice in WHAT_CHOICES:
                return WHAT_CHOICES[choice]
            self.host.error("answer 1 (code and conversation), 2 (code only) or 3 (conversation only)")

    async def _rewind_to(self, turn: Turn, what: str, repo: Any) -> None:
        """List what would change, confirm, apply; the conversation is then shown as it is."""
        s = self.host.session
        changes: list[Change] = []
        if what != "conversation" and turn.checkpoint is not None:
            try:
                _, changes = await asyncio.to_thread(plan_code_rewind, repo, turn.checkpoint)
            except CheckpointError as exc:
                self.host.error(f"/rewind: {exc}")
                return
        include_external = False
        external = [c for c in changes if c.external and c.action != "keep"]
        for line in describe_lines(turn, what, changes, applied_changes(changes, False)):
            self.host.print_text(Text(line))
        if external:
            answer = await self.host.ask_line(
                "restore them too? [y/N]" + MARK,
                f"also restore the {len(external)} file(s) changed outside heron? [y/N]",
            )
            include_external = (answer or "").strip().lower() in YES
        applied = applied_changes(changes, include_external)
        answer = await self.host.ask_line("apply? [y/N]" + MARK, "apply these changes? [y/N]")
        if (answer or "").strip().lower() not in YES:
            self.host.note("rewind cancelled; nothing changed")
            return
        await asyncio.to_thread(apply_rewind, s.store, repo, turn, what, applied)
        done = f"rewound to before turn {turn.number}: {len(applied)} file(s) restored"
        if what == "code":
            self.host.note(done, "green")
            return
        await s.navigate(s.store.leaf_id)  # the agent's context follows the moved leaf
        self.host.renderer.totals = Totals.of(s.messages)
        self.host.note(
            done + f", conversation moved ({len(s.messages)} messages in the context); "
            "the turn's prompt is back in the input",
            "green",
        )
        self.host.recap()
        self.host.set_prefill(turn.text)
