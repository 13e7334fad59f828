"""The one way a tool that runs a program (bash, script) asks for its sandbox.

Both tools hand their argv here and get a :class:`Confinement` back, always one: with no
sandbox configured (a tool used without heron's control) it runs the argv as it is and
leaves the result alone, so the tools read the exit status and finish the result the same
way whether or not a sandbox is there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from heron.coding.sandbox import Confinement
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.lifeline import CallMark, die_with_heron, mark_call

NOT_APPROVED = (
    "[outside_sandbox was asked for, but nothing approved this call to run outside the sandbox, so it ran inside it.]"
)


def confinement_for(env: ToolEnv, argv: list[str], cwd: Path, *, outside_call: str | None = None) -> Confinement:
    """``argv`` as the session's sandbox runs it. ``outside_call``: the id of a call that
    asked to run outside the sandbox; it does only if the session's permission check
    approved that call (docs/permissions.md, "Running one command outside the sandbox")."""
    if outside_call is not None and env.confine_outside is not None:
        return env.confine_outside(argv, cwd, outside_call)
    if env.confine is None:
        return Confinement.none(argv)
    confinement = env.confine(argv, cwd)
    if outside_call is not None and confinement.confined:
        return confinement.noted(NOT_APPROVED)
    return confinement


@dataclass(frozen=True, slots=True)
class ChildSetup:
    """What a tool's child process starts with, computed in one place so every tool that
    starts a process gets the same owner mark and lifeline. ``release`` when the call has
    returned (:meth:`heron.coding.tools.lifeline.CallMark.release`)."""

    env: dict[str, str]
    preexec_fn: Callable[[], None] | None
    mark: CallMark

    def release(self) -> None:
        self.mark.release()


def child_setup(env: ToolEnv, confinement: Confinement, child_env: dict[str, str]) -> ChildSetup:
    """The ``env`` and ``preexec_fn`` a tool child starts with: the call's owner mark in its
    environment (so what it started can be found if heron dies during the call), and,
    outside the sandbox (whose processes bubblewrap ends with heron), death with heron
    (:mod:`heron.coding.tools.lifeline`)."""
    preexec: Callable[[], None] | None = None if confinement.confined else die_with_heron
    mark = mark_call(child_env, env.home)
    return ChildSetup(mark.env, preexec, mark)
