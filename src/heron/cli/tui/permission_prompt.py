"""The interactive answer to a permission "ask": the call is shown (tool, command or
path, and the rule or mode that asked), then one line answers it:

* ``y`` / ``1`` - allow this call once;
* ``a`` / ``2`` - allow always: the suggested rule is added to
  ``.heron/settings.local.json`` (and counts at once for the rest of the session); not
  offered when an ask rule asked, since ask beats allow and it would ask again anyway;
* ``n`` / ``3`` - deny; a reason may follow on the same line (``n use the Makefile``) or
  is asked for next. The model sees it in the tool result.

In a terminal each of those keys answers at once when pressed alone on an empty line (no
Enter); typed together with more (``yes``, ``n use make``), the line is read on Enter.

Ctrl+C or Esc at the question denies. Calls asking at the same time (tools running in
parallel, sub-agents) are asked one after the other.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from rich.text import Text

from heron.cli.terminal_text import visible
from heron.cli.tui.call_text import describe_call
from heron.coding.control import Answer, AskReply, PermissionPrompt

MARK = " › "  # noqa: RUF001 - the input marker, not a quote
LABEL = "allow? y/a/n" + MARK
KEYS = "yan123"  # each answers at once, pressed alone on an empty line
COMMAND_LINES = 20
DECLINED = "the user declined at the permission prompt (Esc)"
_CHOICES: dict[str, Answer] = {
    "1": "allow_once",
    "y": "allow_once",
    "yes": "allow_once",
    "once": "allow_once",
    "2": "allow_always",
    "a": "allow_always",
    "always": "allow_always",
    "3": "deny",
    "n": "deny",
    "no": "deny",
    "deny": "deny",
}


class Asking(Protocol):
    """What the asker needs of the controller."""

    def print_text(self, text: Text) -> None: ...
    def error(self, message: str) -> None: ...
    async def ask_line(self, label: str, say: str | None = None, keys: str = "") -> str | None: ...


def parse_answer(text: str) -> tuple[Answer | None, str]:
    """``"3 use make"`` -> ``("deny", "use make")``; an unknown first word -> ``(None, "")``."""
    first, _, rest = text.strip().partition(" ")
    return _CHOICES.get(first.lower()), rest.strip()


def always_rule(prompt: PermissionPrompt) -> str | None:
    """The rule "allow always" would save, or None when saving one would not help: no rule
    fits the call, or an ask rule asked (ask beats allow, so it would ask again)."""
    decision = prompt.decision
    return decision.suggestion if decision.suggestion and decision.rule is None else None


class PermissionAsker:
    """``Control.asker`` for the interactive mode."""

    def __init__(self, ui: Asking) -> None:
        self.ui = ui
        self._lock = asyncio.Lock()

    async def __call__(self, prompt: PermissionPrompt) -> AskReply:
        async with self._lock:
            self._show(prompt)
            while True:
                text = await self.ui.ask_line(LABEL, keys=KEYS)
                if text is None:
                    return AskReply("deny", DECLINED)
                choice, rest = parse_answer(text)
                if choice == "allow_always" and always_rule(prompt) is None and prompt.decision.rule is None:
                    self.ui.error("allow always is not offered for this call; answer y (once) or n (deny)")
                    continue
                if choice == "allow_once" or choice == "allow_always":
                    return AskReply(choice)
                if choice == "deny":
                    return AskReply("deny", rest or await self._reason())
                self.ui.error("answer y (allow once), a (allow always) or n (deny, a reason may follow); or 1/2/3")

    async def _reason(self) -> str:
        text = await self.ui.ask_line("reason" + MARK, "why? the model is told your reason (Enter: no reason)")
        return (text or "").strip() or "no reason given"

    def _show(self, prompt: PermissionPrompt) -> None:
        decision = prompt.decision
        shown = describe_call(prompt.tool, prompt.meta, prompt.args, 100)
        self.ui.print_text(Text(f"permission needed: {shown}", style="bold yellow"))
        command = prompt.meta.command_of(prompt.args)
        if command is not None and ("\n" in command or len(command) > 100):
            lines = visible(command).splitlines()
            for line in lines[:COMMAND_LINES]:
                self.ui.print_text(Text(f"  │ {line}"))
            if len(lines) > COMMAND_LINES:
                self.ui.print_text(Text(f"  │ … {len(lines) - COMMAND_LINES} more line(s)", style="dim"))
        self.ui.print_text(Text(f"  why: {visible(decision.message)}"))  # names the rule (and its file) or the mode
        rule = always_rule(prompt)
        if rule is not None:
            always = f"a allow always (adds {rule} to .heron/settings.local.json)"
        elif decision.rule is not None:  # ask beats allow: Control approves the ask rule for this process instead
            always = (
                f"a allow for the rest of this session (the ask rule stays in {decision.rule.source}; "
                "remove it there to stop the asking)"
            )
        else:
            always = "(allow always not offered: no rule fits this call)"
        self.ui.print_text(Text(f"  y allow once   {always}   n deny (a reason may follow: n REASON)"))
        self.ui.print_text(Text("  one key answers (no Enter); 1/2/3 work too; Esc denies", style="dim"))
