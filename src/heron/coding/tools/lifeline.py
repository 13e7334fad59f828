"""Tool children that die with heron, and what a killed heron abandoned reaped at the next start (Linux).

In the sandbox a command's processes live in a PID namespace that bubblewrap ends with
heron (``--die-with-parent``). Without it (``--sandbox off``, or a machine where it cannot
run) a SIGKILLed heron would leave them running, so:

* the command's first process asks the kernel to kill it when heron dies
  (``PR_SET_PDEATHSIG`` through ``prctl``, set between fork and exec);
* that does not reach what it started, so every tool call's child carries
  ``HERON_TOOL_OWNER=<heron pid>:<its start time>:<call number>`` in its environment, which
  its descendants inherit (``setsid`` and ``nohup`` ones included), and heron keeps an empty
  file ``$HERON_HOME/processes/<pid>-<start time>-<call number>`` while that call runs,
  removed when the call returns (:meth:`CallMark.release`);
* at start, a file whose heron is gone (no such process, or another one with that pid) is
  a call that never returned: heron died during it (SIGKILL, SIGTERM, SIGHUP, a lost
  terminal). Every process still carrying that call's mark is what heron abandoned: it is
  killed and the file removed. The normal case costs one directory listing.

What a call left running on purpose and returned - ``nohup server >log 2>&1 &``, a
``setsid`` daemon, ``cmd & disown`` that let go of the call's output - has no file once
the call returned, so no later start kills it, however heron itself ended: the user's dev
server or database outlives heron as they asked. (A background child still holding the
call's output when the shell exits is killed by the call itself:
:mod:`heron.coding.tools.process`.)

A process that clears its own environment (``env -i``) escapes the mark; that is said in
docs/permissions.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from heron.session.private_files import open_private, private_dir

log = logging.getLogger(__name__)

MARK = "HERON_TOOL_OWNER"
_PR_SET_PDEATHSIG = 1
_made: set[Path] = set()  # the processes directories made (or found) by this process
_calls = itertools.count(1)
_lock = threading.Lock()


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22):
    with the pid it names one process, even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def owner() -> str:
    """This heron process as the mark names it (computed each time: a fork is another owner)."""
    pid = os.getpid()
    return f"{pid}:{start_time(pid) or 0}"


@dataclass
class CallMark:
    """One tool call's mark: the environment its child starts with, and the file that says
    the call is running (None: none could be written; its children still die with heron)."""

    env: dict[str, str]
    path: Path | None

    def release(self) -> None:
        """The call returned (its group was stopped if it did not end on its own): what it
        left running is the command's doing, never reaped. A call that did not return -
        cancelled, or heron killed during it - keeps its file, so the next start after
        heron is gone reaps it."""
        if self.path is not None:
            _forget(self.path)
            self.path = None


def mark_call(env: dict[str, str], home: Path | None) -> CallMark:
    """``env`` with a new call's mark (this heron and the call's number), and the file that
    records the call as running under ``home`` (module docstring)."""
    me = f"{owner()}:{next(_calls)}"
    marked_env = {**env, MARK: me}
    if home is None:
        return CallMark(marked_env, None)
    directory = home / "processes"
    path = directory / me.replace(":", "-")
    try:
        with _lock:
            if directory not in _made:
                private_dir(directory, narrow=True)
                _made.add(directory)
        os.close(open_private(path, os.O_WRONLY | os.O_CREAT))
    except OSError as exc:  # a read-only home: children still die with heron, not reaped later
        log.info("cannot record tool processes under %s: %s", directory, exc)
        return CallMark(marked_env, None)
    return CallMark(marked_env, path)


def _forget(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def die_with_heron() -> None:
    """``preexec_fn`` of a tool child: SIGKILL when heron dies. Runs in the child between fork
    and exec; if heron died before it was set, the child ends at once."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(137)


def _alive(name: str) -> bool:
    """Whether the heron a file names still runs (a name that is not a call's or an older
    heron's file - ``<pid>-<start>[-<call>]`` - is not ours: left alone)."""
    parts = name.split("-")
    if len(parts) not in (2, 3) or not all(part.isdigit() for part in parts):
        return True
    now = start_time(int(parts[0]))
    return now is not None and now == parts[1]


def reap_leftovers(home: Path) -> list[int]:
    """Kill what the calls a heron died during (their files are left) still have running;
    returns their pids. A file of an older heron (``<pid>-<start>``, one for the whole
    process) is read as before: everything it marked. Cheap when there is nothing to do:
    one listing of ``$HERON_HOME/processes``."""
    directory = home / "processes"
    try:
        stale = [p for p in directory.iterdir() if not _alive(p.name)]
    except OSError:
        return []
    if not stale:
        return []
    marks = {f"{MARK}={p.name.replace('-', ':')}".encode() for p in stale}
    killed = [pid for pid in _marked_processes(marks) if _kill(pid)]
    for path in stale:
        _forget(path)
    if killed:
        log.warning(
            "killed %d process(es) left running by tool calls a killed heron never finished: %s", len(killed), killed
        )
    return killed


def _marked_processes(marks: set[bytes]) -> list[int]:
    found: list[int] = []
    me = os.getpid()
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return found
    for name in entries:
        if int(name) == me:
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue  # gone, or another user's
        if any(var in marks for var in environ.split(b"\0")):
            found.append(int(name))
    return found


def _kill(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True
