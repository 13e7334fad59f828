"""The one place a command the model asked for is put in the sandbox.

Tools that run programs (bash, script, hooks when configured) hand their argv here and run
what comes back. When the sandbox is off, or cannot run on this machine, the argv is returned
as it is; the second case is said once per session (:attr:`Confinement.note`), with what
protection remains, because a user who believes commands are confined must learn that they
are not. Once per session, not per process: the note is part of a tool result the model
reads, so whether it is said is derived from the session file (:func:`note_said`) - a
process per turn (``-p --continue``) sends the bytes one long process sends. The patterns
that recognise the sandbox's edges in a failed command's output are compiled with the
first such output (a start needs none of them).
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from heron.agent.tools import ToolResult
from heron.ai.types import TextContent
from heron.coding.sandbox.bwrap import Availability, availability, wrap_command
from heron.coding.sandbox.policy import SandboxPolicy

if TYPE_CHECKING:
    from heron.session.store import SessionStore

# The key in a tool result's details that records the one-time note it carries (its reason).
NOTE_DETAIL = "sandbox_unavailable"
# What a command prints when it meets the sandbox's edges.
_NO_NETWORK = (
    r"Could not resolve host|Temporary failure in name resolution|Network is unreachable|"
    r"Name or service not known|getaddrinfo|Failed to establish a new network connection|ENETUNREACH|EAI_AGAIN"
)
_READ_ONLY = r"Read-only file system|EROFS"


@dataclass(frozen=True, slots=True)
class Confinement:
    """What to run, and a one-time note for the model and the user when the sandbox that
    the settings ask for is not there (None otherwise)."""

    argv: list[str]
    confined: bool
    note: str | None = None
    network: bool = True  # whether the sandbox lets the command reach the network
    escalated: bool = False  # run outside the sandbox the settings ask for, as the user approved
    consulted: bool = True  # False: no sandbox setting applies (a tool used without heron's control)
    said: str | None = None  # the reason the sandbox cannot run, when ``note`` says it (NOTE_DETAIL)

    @classmethod
    def none(cls, argv: list[str]) -> Confinement:
        """What to run where no sandbox is configured at all: the argv as it is, the result
        left alone (not even marked ``sandboxed``)."""
        return cls(argv, confined=False, consulted=False)

    def noted(self, note: str) -> Confinement:
        """The same confinement with ``note`` in front of the result (after any other note)."""
        return replace(self, note=f"{self.note}\n\n{note}" if self.note else note)

    def exit_status(self, returncode: int | None) -> int | None:
        """The command's status as Python reports it (a negative number for a signal):
        bubblewrap passes a signal death on as 128 + the signal's number, as shells do."""
        if self.confined and returncode is not None and 128 < returncode <= 128 + 64:
            return -(returncode - 128)
        return returncode

    def apply(self, result: ToolResult) -> ToolResult:
        """The tool's result marked ``sandboxed`` in its details; the one-time note, if any,
        in front of its text (the model learns its commands are not confined, and why)."""
        if not self.consulted:
            return result
        details = {**(result.details or {}), "sandboxed": self.confined}
        if self.escalated:
            details["escalated"] = True
        if self.said is not None:
            details[NOTE_DETAIL] = self.said
        text = "".join(block.text for block in result.content if isinstance(block, TextContent))
        hint = self._hint(text) if result.is_error else None
        if not self.note and hint is None:
            return ToolResult(content=result.content, details=details, is_error=result.is_error)
        text = f"{self.note}\n\n{text}" if self.note else text
        return ToolResult.text(f"{text}\n\n{hint}" if hint else text, details=details, is_error=result.is_error)

    def _hint(self, text: str) -> str | None:
        """A failed command whose output shows the sandbox's edge: say which edge, so the
        model can tell the user what would let it through instead of guessing."""
        if not self.confined:
            return None
        if not self.network and re.search(_NO_NETWORK, text, re.IGNORECASE):
            return (
                "[The sandbox gives commands no network. The user can allow it with the setting "
                '"sandbox": {"network": true}, or run heron with --sandbox off; or call bash again with '
                '"outside_sandbox": true and a "justification", which asks the user to run this one command '
                "outside the sandbox.]"
            )
        if re.search(_READ_ONLY, text):
            return (
                "[The sandbox lets commands write only the project and the temp directory. The user can "
                'add a path with "sandbox": {"writable": [PATH]}, or run heron with --sandbox off; or call bash '
                'again with "outside_sandbox": true and a "justification", which asks the user to run this one '
                "command outside the sandbox.]"
            )
        return None


class Sandbox:
    """The sandbox of one session, applied to each command.

    The policy is made again for each command (it costs microseconds): permission rules
    the user allows "always" during the session, trust given later and ``/mode`` changes
    count from the next command on. ``said(reason)``: whether the session already carries
    the note that the sandbox cannot run for ``reason`` (:func:`note_said` on its store);
    without it, the note is said once by this object."""

    def __init__(self, policy: Callable[[], SandboxPolicy], said: Callable[[str], bool] | None = None) -> None:
        self.policy = policy
        self._said = said
        self._told: set[str] = set()  # without ``said``: the reasons this object has given

    def confine(self, argv: list[str], cwd: Path, *, outside: bool = False) -> Confinement:
        """``argv`` wrapped in the sandbox; ``outside``: a command the user approved to run
        without it (:mod:`heron.coding.sandbox.escalation`), run as it is and marked so."""
        policy = self.policy()
        if not policy.enabled:
            return Confinement(argv, confined=False)
        binary, state = _bubblewrap()
        if binary is None or not state.ok:
            if self._already_said(state.reason):
                return Confinement(argv, confined=False)
            return Confinement(argv, confined=False, note=_note(state.reason), said=state.reason)
        if outside:
            return Confinement(argv, confined=False, escalated=True)
        wrapped = wrap_command(policy, argv, cwd, binary=binary, hardening=state.hardening)
        return Confinement(wrapped, confined=True, network=policy.network)

    def active(self) -> bool:
        """Whether commands are confined now: the settings ask for the sandbox and it runs here."""
        return self.policy().enabled and _bubblewrap()[1].ok

    def _already_said(self, reason: str) -> bool:
        if self._said is not None:
            return self._said(reason)
        if reason in self._told:
            return True
        self._told.add(reason)
        return False


def _bubblewrap() -> tuple[str | None, Availability]:
    """bubblewrap's path, and whether it runs here (the reason when not)."""
    if not sys.platform.startswith("linux"):
        return None, Availability(False, "the sandbox runs on Linux only")
    binary = shutil.which("bwrap")
    return binary, availability(binary)


def _note(reason: str) -> str:
    return (
        f"[sandbox unavailable: {reason}. Commands run unconfined; the permission rules still "
        "check each command, but they are not a boundary (docs/permissions.md, 'Sandbox').]"
    )


def note_said(store: SessionStore, reason: str) -> bool:
    """Whether a tool result on the session's current branch carries the note for
    ``reason``. Tool results are read from the root on (the note comes with the first
    command, so a session that has it finds it early; entries stay decoded in the store)."""
    for index in store.path_indices():
        if store.role_at(index) != "toolResult":
            continue
        message = getattr(store.entry_at(index), "message", None)
        details = getattr(message, "details", None)
        if isinstance(details, dict) and details.get(NOTE_DETAIL) == reason:
            return True
    return False
