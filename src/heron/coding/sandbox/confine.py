"""The one place a command the model asked for is put in the sandbox.

Tools that run programs (bash, hooks when configured) hand their argv here and run what
comes back. When the sandbox is off, or cannot run on this machine, the argv is returned
as it is; the second case is said once per process (:attr:`Confinement.note`), with what
protection remains, because a user who believes commands are confined must learn that they
are not.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from heron.coding.sandbox.bwrap import availability, wrap_command
from heron.coding.sandbox.policy import SandboxPolicy

_warned: set[str] = set()


@dataclass(frozen=True, slots=True)
class Confinement:
    """What to run, and a one-time note for the model and the user when the sandbox that
    the settings ask for is not there (None otherwise)."""

    argv: list[str]
    confined: bool
    note: str | None = None


class Sandbox:
    """The sandbox of one session, applied to each command.

    The policy is made again for each command (it costs microseconds): permission rules
    the user allows "always" during the session, trust given later and ``/mode`` changes
    count from the next command on."""

    def __init__(self, policy: Callable[[], SandboxPolicy]) -> None:
        self.policy = policy

    def confine(self, argv: list[str], cwd: Path) -> Confinement:
        policy = self.policy()
        if not policy.enabled:
            return Confinement(argv, confined=False)
        if not sys.platform.startswith("linux"):
            return Confinement(argv, False, self._once("the sandbox runs on Linux only"))
        binary = shutil.which("bwrap")
        state = availability(binary)
        if not state.ok or binary is None:
            return Confinement(argv, False, self._once(state.reason))
        return Confinement(wrap_command(policy, argv, cwd, binary), confined=True)

    @staticmethod
    def _once(reason: str) -> str | None:
        if reason in _warned:
            return None
        _warned.add(reason)
        return (
            f"[sandbox unavailable: {reason}. Commands run unconfined; the permission rules still "
            "check each command, but they are not a boundary (docs/permissions.md, 'Sandbox').]"
        )
