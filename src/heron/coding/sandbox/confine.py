"""The one place a command the model asked for is put in the sandbox.

Tools that run programs (bash, hooks when configured) hand their argv here and run what
comes back. When the sandbox is off, or cannot run on this machine, the argv is returned
as it is; the second case is said once per process (:attr:`Confinement.note`), with what
protection remains, because a user who believes commands are confined must learn that they
are not. The patterns that recognise the sandbox's edges in a failed command's output are
compiled with the first such output (a start needs none of them).
"""

from __future__ import annotations

import functools
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from heron.agent.tools import ToolResult
from heron.ai.types import TextContent
from heron.coding.sandbox.bwrap import availability, wrap_command
from heron.coding.sandbox.policy import SandboxPolicy

_warned: set[str] = set()
# What a command prints when it meets the sandbox's edges.
_NO_NETWORK = (
    r"Could not resolve host|Temporary failure in name resolution|Network is unreachable|"
    r"Name or service not known|getaddrinfo|Failed to establish a new network connection|ENETUNREACH|EAI_AGAIN"
)
_READ_ONLY = r"Read-only file system|EROFS"


@functools.cache
def _no_network() -> re.Pattern[str]:
    return re.compile(_NO_NETWORK, re.IGNORECASE)


@functools.cache
def _read_only() -> re.Pattern[str]:
    return re.compile(_READ_ONLY)


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
        if not self.network and _no_network().search(text):
            return (
                "[The sandbox gives commands no network. The user can allow it with the setting "
                '"sandbox": {"network": true}, or run heron with --sandbox off; or call bash again with '
                '"outside_sandbox": true and a "justification", which asks the user to run this one command '
                "outside the sandbox.]"
            )
        if _read_only().search(text):
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
    count from the next command on."""

    def __init__(self, policy: Callable[[], SandboxPolicy]) -> None:
        self.policy = policy

    def confine(self, argv: list[str], cwd: Path, *, outside: bool = False) -> Confinement:
        """``argv`` wrapped in the sandbox; ``outside``: a command the user approved to run
        without it (:mod:`heron.coding.sandbox.escalation`), run as it is and marked so."""
        policy = self.policy()
        if not policy.enabled:
            return Confinement(argv, confined=False)
        reason = self._unavailable()
        if reason is not None:
            return Confinement(argv, False, self._once(reason))
        if outside:
            return Confinement(argv, confined=False, escalated=True)
        binary = shutil.which("bwrap") or "bwrap"
        return Confinement(wrap_command(policy, argv, cwd, binary), confined=True, network=policy.network)

    def active(self) -> bool:
        """Whether commands are confined now: the settings ask for the sandbox and it runs here."""
        return self.policy().enabled and self._unavailable() is None

    @staticmethod
    def _unavailable() -> str | None:
        """Why the sandbox cannot run on this machine, or None."""
        if not sys.platform.startswith("linux"):
            return "the sandbox runs on Linux only"
        binary = shutil.which("bwrap")
        state = availability(binary)
        if not state.ok or binary is None:
            return state.reason
        return None

    @staticmethod
    def _once(reason: str) -> str | None:
        if reason in _warned:
            return None
        _warned.add(reason)
        return (
            f"[sandbox unavailable: {reason}. Commands run unconfined; the permission rules still "
            "check each command, but they are not a boundary (docs/permissions.md, 'Sandbox').]"
        )
